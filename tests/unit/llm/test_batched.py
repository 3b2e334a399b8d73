"""Batched decoding on the real embedded model: the one-at-a-time text, whatever the schedule."""

import asyncio

import pytest

from socsim.llm import LLMConfigError
from socsim.llm.constraints import Choice, IntRange
from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Request, Sampling
from socsim.seeds import derive_seed

RULES = "Read the comment, weigh its tone, its evidence and its civility, and answer with one label. " * 8


def annotations() -> list[Request]:
    """Two annotators sharing long instructions, four comments each, constrained answers."""
    out = []
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


@pytest.mark.slow
def test_batched_accounting_and_a_bad_request_failing_alone():
    backend = EmbeddedBackend(n_threads=2, flash_attn=False, parallel=2, n_ctx=256)
    good = annotations()[:3]
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


def test_parallel_needs_flash_attention_off():
    with pytest.raises(LLMConfigError, match="flash_attn: false"):
        EmbeddedBackend(parallel=2)
    with pytest.raises(LLMConfigError, match="at least 1"):
        EmbeddedBackend(parallel=0, flash_attn=False)
