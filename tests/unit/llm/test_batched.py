"""Batched decoding on the real embedded model: the same text as one request at a time, whatever the schedule."""

import asyncio

import pytest

from socsim.llm import LLMConfigError
from socsim.llm.constraints import Choice, IntRange
from socsim.llm.embedded import EmbeddedBackend
from socsim.llm.types import Request, Sampling
from socsim.seeds import derive_seed


def requests() -> list[Request]:
    """Chats of several shapes: personas, turns, greedy and sampled, stopped by length, constrained."""
    out = []
    for i in range(12):
        history = [("user", f"Topic {i % 3}: should cities ban cars downtown? Answer briefly.")]
        for t in range(i % 3):
            history += [("assistant", f"Point {t} matters to me."), ("user", f"Turn {t}: reply to the others.")]
        constraint = Choice(("agree", "disagree", "neutral")) if i % 5 == 3 else IntRange(1, 7) if i % 7 == 4 else None
        sampling = Sampling(temperature=(0.7, 0.0, 1.0)[i % 3], top_p=0.95, max_tokens=(40, 5, 24)[i % 3])
        persona = f"You are persona {i % 4}, a {('teacher', 'farmer', 'nurse', 'student')[i % 4]}."
        out.append(Request.chat([("system", persona), *history], derive_seed(5, i), sampling, constraint))
    return out


def answers(backend: EmbeddedBackend, reqs: list[Request], one_by_one: bool) -> list[tuple]:
    async def go():
        try:
            if one_by_one:
                return [await backend.complete(r) for r in reqs]
            return await asyncio.gather(*(backend.complete(r) for r in reqs))
        finally:
            await backend.aclose()

    return [
        (c.text, c.finish_reason, c.prompt_tokens, c.completion_tokens, c.prompt_tokens_evaluated)
        for c in asyncio.run(go())
    ]


@pytest.mark.slow
def test_batched_text_is_the_one_at_a_time_text_whatever_the_schedule():
    reqs = requests()
    alone = answers(EmbeddedBackend(n_threads=2, prefix_cache=False), reqs, one_by_one=True)
    three = answers(EmbeddedBackend(n_threads=2, prefix_cache=False, parallel=3), reqs, one_by_one=False)
    backwards = answers(EmbeddedBackend(n_threads=2, prefix_cache=False, parallel=2), reqs[::-1], one_by_one=False)
    assert three == alone
    assert backwards[::-1] == alone
    reasons = {a[1] for a in alone}
    assert reasons == {"stop", "length"}  # both ways of ending were exercised
    assert all(a[4] == a[2] for a in three)  # every prompt token evaluated (no prefix re-used)
    assert len({a[0] for a in alone}) > 6  # the requests differ in what they get


@pytest.mark.slow
def test_batched_accounting_and_a_bad_request_failing_alone():
    backend = EmbeddedBackend(n_threads=2, prefix_cache=False, parallel=2, n_ctx=256)
    good = requests()[:3]
    too_long = Request.chat([("user", "word " * 400)], 1, Sampling(max_tokens=4))

    async def go():
        try:
            return await asyncio.gather(*(backend.complete(r) for r in [good[0], too_long, *good[1:]]), return_exceptions=True)
        finally:
            await backend.aclose()

    out = asyncio.run(go())
    assert isinstance(out[1], ValueError) and "exceed context window" in str(out[1])
    done = [out[0], *out[2:]]
    assert all(c.prompt_eval_s > 0 and c.generation_s > 0 and c.completion_tokens > 0 for c in done)


def test_parallel_needs_the_prefix_cache_off():
    with pytest.raises(LLMConfigError, match="prefix_cache: false"):
        EmbeddedBackend(parallel=2)
    with pytest.raises(LLMConfigError, match="at least 1"):
        EmbeddedBackend(parallel=0, prefix_cache=False)
