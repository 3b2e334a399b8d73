"""The limit report's arithmetic and the accounting it reads, on metrics whose answer is known."""

import json

import pytest

from socsim.limits import CostGrid, Rates, biggest_gap, calls_limit, limit_row, run_total, shape, stage_uses
from socsim.llm.accounting import Accounting, shape_bin
from socsim.llm.types import Completion


def metrics(path, **models):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"calls": 0, "models": models}))


def test_stage_uses_reads_every_stage_and_shard(tmp_path):
    m = {"calls": 4, "cache_hits": 1, "prompt_tokens": 1000, "prompt_tokens_evaluated": 400, "completion_tokens": 50}
    metrics(tmp_path / "facilitation/metrics/annotate/smollm2-135m.json", smollm2=dict(m, wall_s=10.0))
    metrics(tmp_path / "debate/metrics/ingest.json")  # no model: not an LLM stage
    (tmp_path / "debate/metrics/figures.json").write_text(json.dumps({"figures": 3}))
    [u] = stage_uses(tmp_path)
    assert (u.study, u.stage, u.model, u.calls, u.evaluated, u.wall_s) == (
        "facilitation",
        "annotate/smollm2-135m",
        "smollm2",
        4,
        400,
        10.0,
    )


def test_limit_row_known_answer(tmp_path):
    # 400 evaluated prompt tokens at 200/s = 2 s; 50 completion tokens at 25/s = 2 s: limit 4 s of 10 s.
    split = {"prompt_eval": 2.5, "generation": 1.0, "generation_grammar": 3.0, "other": 3.5}
    m = {"calls": 4, "prompt_tokens": 1000, "prompt_tokens_evaluated": 400, "completion_tokens": 50, "wall_s": 10.0}
    metrics(tmp_path / "s/metrics/judge.json", a=dict(m, time_s=split))
    metrics(tmp_path / "s/metrics/converse.json", a=dict(m, prompt_tokens_evaluated=None, wall_s=30.0))
    metrics(tmp_path / "s/metrics/classify.json", a=dict(m, calls=0, wall_s=1.0))
    rows = {u.stage: limit_row(u, Rates(prompt_eval=200.0, decode=25.0, prompt_len=100)) for u in stage_uses(tmp_path)}
    judge = rows["judge"]
    assert judge["limit_s"] == pytest.approx(4.0) and judge["ratio"] == pytest.approx(0.4)
    assert judge["prefix_reuse"] == pytest.approx(0.6)
    # Excess: prompt 0.5 s, generation 2.0 s, everything else 3.5 s.
    assert judge["biggest_excess"] == "everything else"
    # Unknown evaluated tokens: the submitted ones count (1000 / 200 = 5 s + 2 s), and it says so.
    assert rows["converse"]["limit_s"] == pytest.approx(7.0) and "unknown" in rows["converse"]["note"]
    assert rows["classify"]["ratio"] is None and "cache" in rows["classify"]["note"]
    assert biggest_gap(list(rows.values()))["stage"] == "converse"  # 23 s lost against 6 s
    # The run: judge 10 s against 4 s, converse 30 s against 7 s; classify (all cached) has no limit.
    total = run_total(list(rows.values()))
    assert total == {"stages": 2, "actual_s": 40.0, "limit_s": pytest.approx(11.0), "ratio": pytest.approx(11 / 40)}
    assert run_total([rows["classify"]]) is None


def test_limit_at_the_stages_own_shape_known_answer(tmp_path):
    # 4 calls, 1000 prompt tokens, 400 evaluated: the mean call re-uses 150 and evaluates 100.
    m = {"calls": 4, "prompt_tokens": 1000, "prompt_tokens_evaluated": 400, "completion_tokens": 50, "wall_s": 10.0}
    metrics(tmp_path / "s/metrics/judge.json", a=m)
    [u] = stage_uses(tmp_path)
    assert shape(u) == (150, 100)
    # At the shape: 400 tokens at 100/s = 4 s, plus 50 at 10/s = 5 s: 9 s of 10 s. At the fresh rates the
    # limit is 2 s + 2 s, and decoding is half of it.
    at = Rates(prompt_eval=100.0, decode=10.0, prompt_len=250)
    row = limit_row(u, Rates(prompt_eval=200.0, decode=25.0, prompt_len=100), at)
    assert row["limit_shape_s"] == pytest.approx(9.0) and row["ratio_shape"] == pytest.approx(0.9)
    assert row["decode_share"] == pytest.approx(0.5) and (row["mean_reused"], row["mean_evaluated"]) == (150, 100)
    assert "ratio_shape" not in limit_row(u, Rates(prompt_eval=200.0, decode=25.0, prompt_len=100))


def test_accounting_adds_up():
    acc = Accounting()
    acc.call_finished(Completion("a", 100, 10, prompt_tokens_evaluated=100, prompt_eval_s=1.0, generation_s=0.5))
    acc.call_finished(
        Completion("b", 100, 4, prompt_tokens_evaluated=20, prompt_eval_s=0.2, generation_s=0.4), grammar=True
    )
    acc.call_finished(Completion("c", 50, 2))  # a backend that says nothing
    m = acc.as_metrics()
    assert m["prompt_tokens"] == 250 and m["prompt_tokens_evaluated"] == 120
    # Reuse over the calls that say: 200 submitted, 120 evaluated.
    assert m["prompt_tokens_reused"] == 80 and m["prefix_reuse"] == 0.4 and m["evaluated_known_calls"] == 2
    assert m["completion_tokens_grammar"] == 4
    t = m["time_s"]
    assert (t["prompt_eval"], t["generation"], t["generation_grammar"], t["timed_calls"]) == (1.2, 0.5, 0.4, 2)
    assert t["other"] == pytest.approx(m["wall_s"] - 2.1, abs=0.002)


def bilinear(a=0.002, b=1e-6, base=0.01, per_position=2e-6):
    """A cost grid where one evaluation takes e * (a + b * r) seconds (r cached, e evaluated): bilinear,
    so interpolating between the points is exact."""
    reused, evaluated = (0, 600, 1400), (1, 4, 16, 64, 200, 500)
    seconds = tuple(tuple(e * (a + b * r) for e in evaluated) for r in reused)
    return CostGrid(reused, evaluated, seconds, base, per_position)


@pytest.mark.parametrize(("r", "e"), [(0, 1), (300, 10), (600, 64), (1000, 350), (1400, 500), (2000, 40), (50, 900)])
def test_cost_grid_interpolates_and_extrapolates_exactly_on_a_bilinear_cost(r, e):
    assert bilinear().prompt_s(r, e) == pytest.approx(e * (0.002 + 1e-6 * r))
    assert bilinear().prompt_s(r, 0) == 0.0


def test_shape_bins():
    assert [shape_bin(e, r) for e, r in [(0, 0), (1, 255), (3, 256), (4, 1000), (500, 1024)]] == [
        (0, 0),
        (1, 0),
        (2, 256),
        (4, 768),
        (256, 1024),
    ]


def test_calls_limit_prices_every_call_at_its_own_shape(tmp_path):
    # Calls of every shape; within a bin the calls share their evaluated tokens, so the bin's mean call
    # prices them exactly under a bilinear cost. Independent answer: the sum over the calls themselves.
    calls = [(r, e, n) for r in (0, 40, 300, 700, 1300, 2100) for e in (1, 5, 12, 100, 480) for n in (0, 3, 40)]
    acc = Accounting()
    for r, e, n in calls:
        acc.call_finished(Completion("x", r + e, n, prompt_tokens_evaluated=e, prompt_eval_s=0.0, generation_s=0.0))
    m = acc.as_metrics()
    costs = bilinear()
    prompt, decode = calls_limit(m["shapes"], m["completion_tokens"], costs)
    assert prompt == pytest.approx(sum(e * (0.002 + 1e-6 * r) for r, e, _ in calls))
    assert decode == pytest.approx(sum(0.01 + 2e-6 * (r + e + k) for r, e, n in calls for k in range(n)))
    # The fresh-prompt rates price the same calls lower: short suffixes after long prefixes cost more.
    metrics(tmp_path / "s/metrics/judge.json", a=dict(m, wall_s=2 * (prompt + decode)))
    [u] = stage_uses(tmp_path)
    row = limit_row(u, Rates(prompt_eval=1 / 0.002, decode=100.0, prompt_len=100), costs=costs)
    assert row["limit_calls_s"] == pytest.approx(prompt + decode, abs=0.01) and row["ratio_calls"] == 0.5
    assert row["limit_calls_prompt_s"] == pytest.approx(prompt, abs=0.01)
    assert row["limit_s"] < row["limit_calls_s"]
    # A stage whose metrics hold no shapes (a server) gets no per-call limit.
    assert "limit_calls_s" not in limit_row(u, Rates(500.0, 100.0, 100))
    del m["shapes"]
    metrics(tmp_path / "t/metrics/judge.json", a=dict(m, wall_s=1.0))
    [_, server] = stage_uses(tmp_path)
    assert "ratio_calls" not in limit_row(server, Rates(500.0, 100.0, 100), costs=costs)


def test_decodes_the_backend_counted_are_priced_as_counted():
    # A backend that counts its decodes (the embedded one): a call cut off at max_tokens decoded 3 of its 4
    # tokens, at positions 10, 11, 12. A backend that does not: all 4, at 20..23.
    acc = Accounting()
    acc.call_finished(Completion("a", 10, 4, prompt_tokens_evaluated=10, decodes=3, decode_positions=33))
    m = acc.as_metrics()["shapes"]
    assert (m["decodes"], m["decode_positions"]) == (3, 33)
    acc.call_finished(Completion("b", 20, 4, prompt_tokens_evaluated=5))
    m = acc.as_metrics()["shapes"]
    assert (m["decodes"], m["decode_positions"]) == (7, 33 + 20 + 21 + 22 + 23)
    costs = bilinear(base=0.01, per_position=0.001)
    assert calls_limit(m, 8, costs)[1] == pytest.approx(7 * 0.01 + (33 + 86) * 0.001)
