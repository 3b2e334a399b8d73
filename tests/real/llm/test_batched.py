"""Batched decoding on the real embedded model: the one-at-a-time text, whatever the schedule."""

import asyncio
import functools

import pytest

from socsim.llm.constraints import Choice, IntRange
from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Request, Sampling
from socsim.seeds import derive_seed

RULES = "Read the comment, weigh its tone, its evidence and its civility, and answer with one label. " * 8


@functools.cache  # the vocabulary is loaded once per size, not once per schedule
def sized(tokens: int, seed: int) -> Request:
    """A request whose chat prompt is exactly `tokens` long on the default model (counted with its
    own chat handler): 513 leaves the one-at-a-time path a last prompt piece of a single token."""
    from llama_cpp import Llama

    from socsim.llm.batched import prepared
    from socsim.llm.embedded import default_model_path

    vocab = Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
    words = tokens
    for _ in range(50):
        chat = [("system", "You summarise."), ("user", "Summarise in a word:" + " bus" * words)]
        req = Request.chat(chat, derive_seed(7, seed), Sampling(0.7, 0.95, 6))
        n = len(prepared(vocab, messages=req.message_dicts())["prompt"])
        if n == tokens:
            return req
        words += tokens - n
    raise AssertionError(f"no prompt of {tokens} tokens")


def annotations() -> list[Request]:
    """Two annotators sharing long instructions, four comments each, constrained answers; prompts
    longer than one batch piece (513 tokens: a last piece of one token; 1100), and one in French
    asking for accents and an emoji (multibyte UTF-8 in the answer)."""
    out = [sized(513, 1), sized(1100, 2)]
    french = "Réponds en français, avec des accents et un emoji de vélo : où vas-tu à l'été ?"
    out.append(Request.chat([("user", french)], derive_seed(7, 3), Sampling(0.9, 0.95, 40)))
    for i in range(8):
        system = f"You are annotator {i % 2}. {RULES}"
        label = Choice(("civil", "uncivil")) if i % 2 else IntRange(1, 5)
        user = f"Comment {i}: I think the council {'is right' if i % 3 else 'should resign'} about the buses."
        out.append(Request.chat([("system", system), ("user", user)], derive_seed(5, i), Sampling(0.7, 0.95, 8), label))
    return out


async def discussion(b: EmbeddedBackend, d: int, turns: int = 4) -> list[tuple]:
    """A discussion whose next prompt holds every answer so far: greedy and sampled, ended by a stop
    and by length."""
    history = [("user", f"Discussion {d}: should cities ban cars downtown? Answer briefly.")]
    persona = f"You are persona {d}, a {('teacher', 'farmer', 'nurse')[d]}."
    out = []
    for t in range(turns):
        sampling = Sampling(temperature=(0.7, 0.0, 1.0)[(d + t) % 3], top_p=0.95, max_tokens=(40, 5, 24)[t % 3])
        c = await b.complete(Request.chat([("system", persona), *history], derive_seed(6, d, t), sampling))
        out.append((c.text, c.finish_reason, c.prompt_tokens, c.completion_tokens, c.prompt_tokens_evaluated))
        history += [("assistant", c.text), ("user", f"Turn {t}: reply to the others.")]
    return out


def answers(one_by_one: bool, backwards: bool = False, **backend) -> list[tuple]:
    """Every annotation and three discussions; one request at a time, or all at once (reversed: the
    annotations last and backwards, the discussions started last first)."""
    b = EmbeddedBackend(n_threads=2, flash_attn=False, **backend)
    reqs = annotations()

    async def go():
        try:
            if one_by_one:
                rows = [await b.complete(r) for r in reqs]
                return [*rows, *[row for d in range(3) for row in await discussion(b, d)]]
            order = reqs[::-1] if backwards else reqs
            ds = range(3)[::-1] if backwards else range(3)
            got = await asyncio.gather(*(b.complete(r) for r in order), *(discussion(b, d) for d in ds))
            rows, talks = list(got[: len(reqs)]), list(got[len(reqs) :])
            rows, talks = (rows[::-1], talks[::-1]) if backwards else (rows, talks)
            return [*rows, *[row for talk in talks for row in talk]]
        finally:
            await b.aclose()

    out = asyncio.run(go())
    return [
        r
        if isinstance(r, tuple)
        else (r.text, r.finish_reason, r.prompt_tokens, r.completion_tokens, r.prompt_tokens_evaluated)
        for r in out
    ]


def text(rows):
    return [r[:4] for r in rows]


@pytest.mark.slow
def test_batched_text_is_the_one_at_a_time_text_whatever_the_schedule():
    alone = answers(one_by_one=True, prefix_cache=False)  # each request on an empty KV cache
    three = answers(one_by_one=False, prefix_cache=True, parallel=3)
    backwards = answers(one_by_one=False, backwards=True, prefix_cache=True, parallel=2)
    fresh = answers(one_by_one=False, prefix_cache=False, parallel=4)
    assert text(three) == text(alone)
    assert text(backwards) == text(alone)
    assert text(fresh) == text(alone)
    assert {r[1] for r in alone} == {"stop", "length"}  # both ways of ending were exercised
    assert len({r[0] for r in alone}) > 8  # the requests differ in what they get
    submitted = sum(r[2] for r in alone)
    assert sum(r[4] for r in alone) == sum(r[4] for r in fresh) == submitted
    assert sum(r[4] for r in three) < 0.7 * submitted  # the shared prefixes were re-used
    assert [r[2] for r in alone[:2]] == [513, 1100]
    assert any(ord(ch) > 127 for ch in alone[2][0])  # the French answer has non-ASCII characters


@pytest.mark.slow
def test_a_cancelled_request_leaves_the_others_and_the_engine_working():
    reqs = annotations()[3:9]
    backend = EmbeddedBackend(n_threads=2, flash_attn=False, parallel=2)

    async def go():
        try:
            tasks = [asyncio.ensure_future(backend.complete(r)) for r in reqs]
            await asyncio.sleep(0)
            tasks[0].cancel()  # still waiting: dropped
            await asyncio.sleep(0.5)
            tasks[1].cancel()  # likely in flight: decoded to its end, its answer thrown away
            got = await asyncio.gather(*tasks, return_exceptions=True)
            again = await backend.complete(reqs[0])
            return got, again
        finally:
            await backend.aclose()

    got, again = asyncio.run(go())
    assert isinstance(got[0], asyncio.CancelledError) and isinstance(got[1], asyncio.CancelledError)
    assert all(c.completion_tokens > 0 for c in got[2:]) and again.completion_tokens > 0


@pytest.mark.slow
def test_a_model_that_does_not_load_fails_every_request_instead_of_hanging(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf" * 100)
    backend = EmbeddedBackend(str(bad), flash_attn=False, parallel=2)
    req = annotations()[3]

    async def go():
        try:
            return await asyncio.wait_for(
                asyncio.gather(backend.complete(req), backend.complete(req), return_exceptions=True), 60
            )
        finally:
            await backend.aclose()

    out = asyncio.run(go())
    assert all(isinstance(e, Exception) and not isinstance(e, asyncio.TimeoutError) for e in out), out


@pytest.mark.slow
def test_batched_accounting_and_a_bad_request_failing_alone():
    backend = EmbeddedBackend(n_threads=2, flash_attn=False, parallel=2, n_ctx=256)
    good = annotations()[3:6]
    too_long = Request.chat([("user", "word " * 400)], 1, Sampling(max_tokens=4))

    async def go():
        try:
            jobs = [good[0], too_long, *good[1:]]
            return await asyncio.gather(*(backend.complete(r) for r in jobs), return_exceptions=True)
        finally:
            await backend.aclose()

    out = asyncio.run(go())
    assert isinstance(out[1], ValueError) and "exceed context window" in str(out[1])
    done = [out[0], *out[2:]]
    assert all(c.prompt_eval_s > 0 and c.generation_s > 0 and c.completion_tokens > 0 for c in done)
