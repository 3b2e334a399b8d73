"""The LLM layer against the real embedded model (SmolLM2-135M-Instruct GGUF), short outputs."""

import asyncio
import random

import pytest

from socsim import config, models
from socsim.llm import Choice, IntRange, JsonSchema, Request, Sampling, derive_seed

pytestmark = pytest.mark.slow


def client(tmp_path, name="cache"):
    params = config.validate(
        {"llm": {"cache_path": str(tmp_path / name / "llm.sqlite")}, "models": {"smollm2-135m": {"n_ctx": 1024}}}
    )
    return models.named_client(params)


def ask(text, seed, constraint=None, max_tokens=8, temperature=0.8):
    return Request.chat([{"role": "user", "content": text}], seed, Sampling(temperature, 0.95, max_tokens), constraint)


def test_constraints_hold_on_the_real_model(tmp_path):
    c = client(tmp_path)
    person = JsonSchema.of(
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "age"],
            "properties": {
                "name": {"type": "string", "maxLength": 20},
                "age": {"type": "integer", "minimum": 0, "maximum": 120},
            },
        }
    )
    reqs = [ask("Is water wet? Answer Yes or No.", derive_seed(1, i), Choice(("Yes", "No"))) for i in range(4)]
    reqs += [ask("How toxic is 'you idiot' from 1 to 5?", derive_seed(2, i), IntRange(1, 5)) for i in range(4)]
    reqs += [ask("Invent a person. Answer as JSON.", derive_seed(3, i), person, max_tokens=60) for i in range(2)]
    out = c.run(reqs)
    assert all(r.parse_ok for r in out), [(r.text, r.parse_error) for r in out]
    assert {r.value for r in out[:4]} <= {"Yes", "No"}
    assert all(1 <= r.value <= 5 for r in out[4:8])
    assert all(set(r.value) == {"name", "age"} for r in out[8:])
    m = c.accounting.as_metrics()
    assert m["requests"] == m["calls"] == 10 and m["parse_failures"] == 0
    assert m["completion_tokens"] > 0 and m["prompt_tokens"] > 0 and m["tokens_per_s"] > 0


def test_overlong_answer_is_kept_raw_and_counted(tmp_path):
    c = client(tmp_path)
    schema = JsonSchema.of({"type": "object", "required": ["story"], "properties": {"story": {"type": "string"}}})
    [r] = c.run([ask("Tell a long story as JSON.", 5, schema, max_tokens=6)])
    assert r.finish_reason == "length" and r.completion_tokens <= 6
    assert not r.parse_ok and r.value is None and r.text and "not valid JSON" in r.parse_error
    assert c.accounting.parse_failures == 1


def test_same_request_same_answer_and_cache_hits(tmp_path):
    # A shared system prompt, so the embedded model's prefix cache is exercised across orders.
    system = {"role": "system", "content": "You are a painter who answers in one short sentence."}
    reqs = [
        Request.chat(
            [system, {"role": "user", "content": f"Name colour number {i}."}],
            derive_seed(9, i),
            Sampling(0.8, 0.95, 10),
        )
        for i in range(6)
    ]
    first = client(tmp_path, "a")
    a = first.run(reqs)
    # A fresh cache and a different order and concurrency: same answers.
    second = client(tmp_path, "b")
    order = list(range(6))
    random.Random(0).shuffle(order)
    b = second.run([reqs[i] for i in order])
    assert [a[i].text for i in order] == [r.text for r in b]
    assert second.accounting.calls == 6
    # The same client again: answered from the cache, no model call.
    again = client(tmp_path, "a")
    c = again.run(reqs)
    assert [r.text for r in c] == [r.text for r in a] and all(r.cached for r in c)
    assert again.accounting.calls == 0 and again.accounting.cache_hits == 6


def test_generate_all_is_concurrent_and_ordered(tmp_path):
    c = client(tmp_path)
    reqs = [ask(f"Say the number {i}.", i, max_tokens=4) for i in range(5)]

    async def main():
        await c.probe()
        out = await c.generate_all(reqs)
        single = [await c.generate(r) for r in reqs]
        return out, single

    out, single = asyncio.run(main())
    assert [r.text for r in out] == [r.text for r in single]
    assert all(r.cached for r in single)


def test_missing_model_path_is_a_clear_error(tmp_path):
    from socsim.llm import LLMConfigError

    params = config.validate({"models": {"smollm2-135m": {"gguf": str(tmp_path / "nope.gguf")}}})
    with pytest.raises(LLMConfigError, match="gguf: GGUF file not found"):
        models.named_client(params, cache_path=tmp_path / "c.sqlite")


def test_prefix_reuse_and_time_split_are_counted(tmp_path):
    system = "You are a careful annotator. " + "Read the comment, weigh its tone and answer briefly. " * 12
    reqs = [
        Request.chat(
            [{"role": "system", "content": system}, {"role": "user", "content": f"Comment {i}: hello there."}],
            derive_seed(11, i),
            Sampling(0.8, 0.95, 6),
            IntRange(1, 5) if i == 2 else None,
        )
        for i in range(3)
    ]
    c = client(tmp_path)
    out = c.run(reqs)
    backend = c.backend
    shared = len(backend.on_model_thread(lambda: backend.llm.tokenize(system.encode(), add_bos=False)))
    m = c.accounting.as_metrics()
    total = sum(r.prompt_tokens for r in out)
    # The first prompt answered is evaluated whole; the later ones re-use at least the system prompt.
    assert m["prompt_tokens"] == total
    assert min(r.prompt_tokens for r in out) + 2 <= m["prompt_tokens_evaluated"] <= total - 2 * shared
    assert m["prompt_tokens_reused"] == m["prompt_tokens"] - m["prompt_tokens_evaluated"]
    assert m["completion_tokens_grammar"] == out[2].completion_tokens > 0
    t = m["time_s"]
    assert t["prompt_eval"] > 0 and t["generation"] > 0 and t["generation_grammar"] > 0 and t["other"] >= 0
    assert abs(sum(t.values()) - m["wall_s"]) < 0.01
    # The calls' shapes: every call in one bin. Decoding: a call that ends on its end-of-turn token decoded
    # each of its tokens, one cut off at max_tokens all but the last; the first at the prompt's length.
    bins = m["shapes"]["prompt"]
    assert sum(b[2] for b in bins) == 3 and sum(b[3] for b in bins) == m["prompt_tokens_evaluated"]
    assert sum(b[4] for b in bins) == m["prompt_tokens_reused"]
    decoded = [(r.completion_tokens - (r.finish_reason == "length"), r.prompt_tokens) for r in out]
    assert any(r.finish_reason == "length" for r in out)
    assert m["shapes"]["decodes"] == sum(d for d, _ in decoded)
    assert m["shapes"]["decode_positions"] == sum(sum(p + k for k in range(d)) for d, p in decoded) > 0
    # Without the prefix cache every prompt token is evaluated.
    params = config.validate(
        {
            "llm": {"cache_path": str(tmp_path / "off" / "llm.sqlite"), "prefix_cache": False},
            "models": {"smollm2-135m": {"n_ctx": 1024}},
        }
    )
    off = models.named_client(params)
    off.run(reqs)
    m = off.accounting.as_metrics()
    assert m["prompt_tokens_evaluated"] == m["prompt_tokens"] and m["prefix_reuse"] == 0.0


def test_limit_rates_are_measured_on_the_model(tmp_path):
    from socsim.limits import measure_costs, measure_rates, measure_shape

    backend = client(tmp_path).backend
    rates = measure_rates(backend, prompt_len=64, decode_tokens=8, repeats=1)
    assert rates.prompt_eval > 0 and rates.decode > 0 and rates.prompt_len == 64
    at = measure_shape(backend, reused=200, evaluated=20, decode_tokens=8, repeats=1)
    assert at.prompt_eval > 0 and at.decode > 0 and at.prompt_len == 220
    assert backend.on_model_thread(lambda: backend.llm.n_tokens) == 228  # the prefix was in place, 8 decoded after it
    with pytest.raises(ValueError, match="do not fit"):
        measure_shape(backend, reused=900, evaluated=100)
    # The cost grid leaves out what does not fit the context of 1024 (600 cached + 500, decoding at 1500)
    # and keeps a second row of re-used tokens, as deep as the context allows.
    costs = measure_costs(backend, repeats=1)
    assert costs.reused == (0, 524) and len(costs.seconds) == 2 and len(costs.seconds[0]) == len(costs.evaluated)
    assert all(t > 0 for row in costs.seconds for t in row) and costs.decode_base_s > 0
    assert costs.decode_position_s >= 0
    assert costs.prompt_s(0, costs.evaluated[-1]) == pytest.approx(costs.seconds[0][-1])


def test_batched_decoding_gives_a_sequence_the_logits_it_gets_alone():
    """The ground batched decoding in the embedded backend would stand on: llama.cpp decodes a
    sequence in one batch with others to the same greedy tokens and logits as alone."""
    from socsim.limits import batched_decode
    from socsim.llm.embedded import default_model_path

    [two, three] = batched_decode(default_model_path(), sequences=(2, 3), steps=12)
    for r in (two, three):
        assert r.same_tokens and r.max_logit_diff <= 1e-4 and r.rate > 0 and r.rate_alone > 0, r
