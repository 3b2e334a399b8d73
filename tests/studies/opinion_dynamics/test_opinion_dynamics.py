"""The opinion-dynamics study (paper 002): B and D, setups and the shared schedule, memory event
cases, call counts per memory kind, the classifier's parsing, trajectories from a scripted classifier,
and the statistics against independent computations. The stages on the real embedded model (determinism,
resume after SIGKILL) are in tests/real/studies/opinion_dynamics/test_od_stages_on_the_model.py."""

from __future__ import annotations

import asyncio
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from socsim import config
from socsim.io import vs_paper
from socsim.io.claims import judge_all
from socsim.llm import LLMClient
from socsim.opinion_dynamics import analysis, classify, materials, setups, simulate
from support.llm import Scripted
from support.project import ROOT
from support.studies.od_synthetic import per_sim_rows

DATA = ROOT / "data" / "opinion_dynamics"


def load(name):
    return yaml.safe_load((DATA / f"{name}.yaml").read_text())


PROMPTS = load("prompts")
PERSONAS = materials.persona_rows(load("personas"))
TOPICS = materials.topic_rows(load("topics"))


def od_params(**over) -> dict:
    """params.yaml's opinion_dynamics section at the paper's N = 10 (T = 6, the tests' design), with `over`."""
    over = {"n_agents": 10, "steps": 6, "agent_models": ["smollm2-135m"], **over}  # one model (no controls)
    params = config.validate(
        config.deep_merge(yaml.safe_load((ROOT / "params.yaml").read_text()), {"opinion_dynamics": over})
    )
    return params["opinion_dynamics"]


# -- B and D -----------------------------------------------------------------------------------


def test_known_starts_give_the_known_b_and_d():
    uniform = setups.multiset("uniform", 10)
    assert uniform == [-2, -2, -1, -1, 0, 0, 1, 1, 2, 2]
    bd = analysis.bias_diversity(uniform)
    assert bd["B"] == 0 and math.isclose(bd["D_pop"], math.sqrt(2)) and math.isclose(bd["D_sample"], math.sqrt(20 / 9))
    assert round(bd["D_sample"], 2) == 1.49  # the paper's text: the sample SD
    skew = analysis.bias_diversity(setups.multiset("skewed_positive", 10))
    assert math.isclose(skew["B"], 1.2) and math.isclose(skew["D_pop"], 1.6) and round(skew["D_sample"], 4) == 1.6865
    neg = analysis.bias_diversity(setups.multiset("skewed_negative", 10))
    assert math.isclose(neg["B"], -1.2) and math.isclose(neg["D_pop"], 1.6)
    for init, b in (("positive", 2), ("negative", -2)):
        bd = analysis.bias_diversity(setups.multiset(init, 10))
        assert bd["B"] == b and bd["D_pop"] == 0 == bd["D_sample"]
    # N = 10 lattices: 100 D_pop^2 and 90 D_sample^2 are integers for every final distribution
    rng = np.random.default_rng(0)
    for _ in range(200):
        bd = analysis.bias_diversity(rng.integers(-2, 3, 10).tolist())
        assert abs(100 * bd["D_pop"] ** 2 - round(100 * bd["D_pop"] ** 2)) < 1e-9
        assert abs(90 * bd["D_sample"] ** 2 - round(90 * bd["D_sample"] ** 2)) < 1e-9
    with pytest.raises(ValueError, match="divisible by 5"):
        setups.multiset("uniform", 7)


# -- setups ----------------------------------------------------------------------------------------


def test_setups_share_the_schedule_across_conditions_and_rerun_identically():
    od = od_params(
        confirmation_bias=["none", "weak", "strong"], memory=["cumulative", "reflective"], steps=30, n_agents=10
    )
    rows = setups.build(od, 7, PERSONAS, TOPICS, PROMPTS)
    assert rows == setups.build(od, 7, PERSONAS, TOPICS, PROMPTS)
    main = [r for r in rows if r["condition"] == "main"]
    assert len(main) == 2 * 2 * 3 * 2  # topics x framings x bias x memory
    for topic in od["topics"]:
        scheds = {(tuple(r["writers"]), tuple(r["reviewers"])) for r in main if r["topic"] == topic}
        assert len(scheds) == 1  # one pair sequence for every condition of a (topic, rep)
    assert len({tuple(r["writers"]) for r in main}) == 2  # but another one per topic
    # the uniform start keeps the listed opinions of App. B; the claims are framed
    r0 = main[0]
    assert r0["initial"] == [p["initial"] for p in PERSONAS]
    assert "Initial Belief: Slightly negative opinion about XYZ" in r0["personas"][0]
    assert r0["claim"].startswith("Theory XYZ claims that ")
    strong = next(r for r in main if r["bias"] == "strong")
    assert PROMPTS["bias"]["strong"].split(":")[0] in strong["system_prompts"][0]
    assert PROMPTS["closed_world"].split(":")[0] in strong["reminder"]  # injected in every prompt (the code)
    independent = setups.build({**od, "schedule": "independent"}, 7, PERSONAS, TOPICS, PROMPTS)
    assert len({tuple(r["reviewers"]) for r in independent if r["condition"] == "main"}) == len(main)
    # controls: 10 agents x `reports` independent reports, and one bare agent
    ctrl = [r for r in rows if r["condition"] != "main"]
    assert {r["condition"] for r in ctrl} == {"control_roleplay", "control_bare"}
    rp = next(r for r in ctrl if r["condition"] == "control_roleplay")
    assert rp["reviewers"] == list(range(10)) * od["controls"]["reports"] and set(rp["writers"]) == {-1}
    bare = next(r for r in ctrl if r["condition"] == "control_bare")
    assert bare["system_prompts"] == [None] and bare["initial"] == [None]


def test_skewed_starts_and_graph_topologies():
    od = od_params(
        initial_distributions=["skewed_positive"],
        confirmation_bias=["none"],
        steps=200,
        topologies=[{"kind": "erdos_renyi", "p": 0.3}, {"kind": "watts_strogatz", "k": 4, "beta": 0.2}],
        controls={"enabled": False},
    )
    rows = setups.build(od, 3, PERSONAS, TOPICS, PROMPTS)
    assert {r["topology"] for r in rows} == {"erdos_renyi-p0.3", "watts_strogatz-beta0.2-k4"}
    for r in rows:
        assert sorted(r["initial"]) == [-2, -2] + [2] * 8
        edges = {tuple(e) for e in r["edges"]}
        assert all((min(w, v), max(w, v)) in edges for w, v in zip(r["writers"], r["reviewers"]))
        assert len(edges) < 45  # not the complete graph
    ws = [r for r in rows if r["topology"].startswith("watts")]
    assert all(len(r["edges"]) == 20 for r in ws)  # N k / 2


# -- the simulation with scripted speakers ------------------------------------------------------


def _setup(writers, reviewers, memory="cumulative", n=3, condition="main"):
    od = od_params()
    base = setups.build({**od, "controls": {**od["controls"], "enabled": False}}, 1, PERSONAS, TOPICS, PROMPTS)[0]
    return {
        **base,
        "sim_id": "s1",
        "memory": memory,
        "condition": condition,
        "n_agents": n,
        "steps": len(writers),
        "agent_names": base["agent_names"][:n],
        "initial": base["initial"][:n],
        "personas": base["personas"][:n],
        "system_prompts": base["system_prompts"][:n],
        "writers": writers,
        "reviewers": reviewers,
    }


def _run(setup, od=None, reply=None):
    n = {"i": 0}

    def answer(req):
        n["i"] += 1
        return reply(req) if reply else f"text {n['i']}"

    backend = Scripted(answer)
    client = LLMClient(backend, None)
    rows = asyncio.run(simulate.run_simulations([setup], PROMPTS, od or od_params(), {setup["model"]: client}))
    return rows, backend.requests


def test_memory_event_cases_and_ordinals():
    assert [materials.ordinal(k) for k in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 24, 101, 111, 112)] == [
        "1st",
        "2nd",
        "3rd",
        "4th",
        "11th",
        "12th",
        "13th",
        "21st",
        "22nd",
        "23rd",
        "24th",
        "101st",
        "111th",
        "112th",
    ]
    # agent 0: write, write, review, review, write; agent 1 first reviews (none -> review)
    rows, reqs = _run(_setup([0, 0, 1, 2, 0], [1, 2, 0, 0, 1]))
    assert PROMPTS["events"]["none_review"].format(
        tweet=rows[0]["tweet"], reasoning=f"Reasoning: {rows[0]['report']}"
    ) in [m["content"] for m in reqs[4].message_dicts()]  # agent 1 writes at step 3 and remembers its review
    prev0 = [r["writer_prev"] if r["writer"] == 0 else r["reviewer_prev"] for r in rows]
    assert prev0 == ["none", "write", "write", "review", "review"]
    last_write = reqs[8].message_dicts()  # step 5's write: agent 0's fifth event
    events = [m["content"] for m in last_write[2:-1]]  # after system and the persona, before the task
    tweets = [r["tweet"] for r in rows]
    reports = [r["report"] for r in rows]
    assert events == [
        PROMPTS["events"]["none_write"].format(k="1st", claim=_setup([0], [1])["claim"], tweet=tweets[0]),
        PROMPTS["events"]["write_write"].format(k="2nd", k_prev="1st", tweet=tweets[1]),
        PROMPTS["events"]["write_review"].format(k="2nd", tweet=tweets[2], reasoning=f"Reasoning: {reports[2]}"),
        PROMPTS["events"]["review_review"].format(tweet=tweets[3], reasoning=f"Reasoning: {reports[3]}"),
    ]
    # the prompts name the ordinals: step 2's write follows the 1st tweet, step 3's review the 2nd
    assert (
        PROMPTS["write"]["write"].format(name="Benjamin Lee", claim=_setup([0], [1])["claim"], k_prev="1st")
        in reqs[2].message_dicts()[-1]["content"]
    )
    assert "after writing your 2nd tweet" in reqs[5].message_dicts()[-1]["content"]
    # after step 5's write the memory holds the review -> write event of the 3rd tweet
    rows6, reqs6 = _run(_setup([0, 0, 1, 2, 0, 1], [1, 2, 0, 0, 1, 0]))
    assert PROMPTS["events"]["review_write"].format(k="3rd", tweet=rows6[4]["tweet"]) in [
        m["content"] for m in reqs6[11].message_dicts()
    ]
    task = last_write[-1]["content"]
    assert task.startswith(PROMPTS["write"]["review"].format(name="Benjamin Lee", claim=_setup([0], [1])["claim"]))
    assert task.endswith(PROMPTS["write_cue"])
    # the model's answers are never assistant turns; the persona is repeated as the first user message
    assert all(m["role"] in ("system", "user") for r in reqs for m in r.message_dicts())
    assert last_write[1]["content"] == _setup([0], [1])["personas"][0]
    # the review prompt quotes the tweet it reviews
    assert tweets[0] in reqs[1].message_dicts()[-1]["content"]


@pytest.mark.parametrize("memory,calls_per_step", [("cumulative", 2), ("reflective", 4)])
def test_call_counts_per_memory_kind(memory, calls_per_step):
    T = 6
    rng = np.random.default_rng(1)
    w = rng.integers(0, 3, T).tolist()
    r = [(x + 1 + int(rng.integers(0, 2))) % 3 for x in w]
    rows, reqs = _run(_setup(w, r, memory))
    assert len(reqs) == calls_per_step * T and len(rows) == T
    if memory == "reflective":  # the paper's semantics: memory = the latest summary only
        for req in reqs:
            memory_msgs = [m for m in req.message_dicts()[2:-1]]
            assert len(memory_msgs) <= 1
            assert all(m["content"].startswith(PROMPTS["reflection_head"]) for m in memory_msgs)
        assert all(row["writer_reflection"] and row["reviewer_reflection"] for row in rows)
        # a later reflection is given the previous summary
        second = [q for q in reqs if "updated summary" in q.message_dicts()[-1]["content"]]
        assert second and any(
            row["writer_reflection"] in second[-1].message_dicts()[-1]["content"]
            or row["reviewer_reflection"] in second[-1].message_dicts()[-1]["content"]
            for row in rows
        )


def test_code_variant_of_reflection_shares_one_counter():
    rows, reqs = _run(_setup([0, 1, 2], [1, 2, 0], "reflective"), od_params(reflective_variant="code"))
    reflections = [q.message_dicts()[-1]["content"] for q in reqs if "summar" in q.message_dicts()[-1]["content"]]
    firsts = [x for x in reflections if "updated summary" not in x]
    assert len(reflections) == 6 and len(firsts) == 1  # only the simulation's first reflection
    assert any("HumanMessage(content=" in x for x in reflections)


def test_controls_independent_reports_and_truncation():
    od = od_params(controls={"enabled": True, "independent": True, "reports": 3})
    ctrl = [r for r in setups.build(od, 1, PERSONAS, TOPICS, PROMPTS) if r["condition"] == "control_roleplay"][0]
    rows, reqs = _run(ctrl, od)
    assert len(reqs) == 10 * 3 and len(rows) == 30
    assert all(len(q.message_dicts()) == 3 for q in reqs)  # system, persona, the question: no memory
    bare = [r for r in setups.build(od, 1, PERSONAS, TOPICS, PROMPTS) if r["condition"] == "control_bare"][0]
    rows, reqs = _run(bare, od)
    assert len(reqs) == 3 and all(len(q.message_dicts()) == 1 and q.message_dicts()[0]["role"] == "user" for q in reqs)
    # context growth: a small memory budget leaves old events out, counted per step
    long = "word " * 200
    rows, reqs = _run(_setup([0, 1] * 4, [1, 0] * 4), od_params(memory_max_tokens=100), reply=lambda q: long)
    assert sum(r["truncated_events"] for r in rows) > 0
    assert all(sum(len(m["content"]) for m in q.message_dicts()[2:-1]) <= 100 * simulate.CHARS_PER_TOKEN for q in reqs)


def test_layouts_injection_world_and_the_codes_controls():
    od = od_params(confirmation_bias=["strong"])
    merged_rows, reqs = _run(_setup([0, 1], [1, 0]), od_params(history_layout="merged"))
    assert all(len(q.messages) == 2 and q.message_dicts()[1]["role"] == "user" for q in reqs)  # system + one user
    assert merged_rows[0]["tweet"] in reqs[2].message_dicts()[1]["content"]  # memory merged into the one message
    strong = next(r for r in setups.build(od, 1, PERSONAS, TOPICS, PROMPTS) if r["condition"] == "main")
    quiet = next(
        r
        for r in setups.build({**od, "injection": "system_only"}, 1, PERSONAS, TOPICS, PROMPTS)
        if r["condition"] == "main"
    )
    assert strong["reminder"] and quiet["reminder"] == "" and quiet["system_prompts"] == strong["system_prompts"]
    open_world = next(
        r for r in setups.build({**od, "world": "open"}, 1, PERSONAS, TOPICS, PROMPTS) if r["condition"] == "main"
    )
    closed = PROMPTS["closed_world"].strip()
    assert closed in strong["system_prompts"][0] and closed not in open_world["system_prompts"][0]
    assert closed not in open_world["reminder"] and PROMPTS["bias"]["strong"].strip() in open_world["reminder"]
    code = od_params(steps=8, controls={"enabled": True, "independent": False})
    ctrl = next(r for r in setups.build(code, 1, PERSONAS, TOPICS, PROMPTS) if r["condition"] == "control_roleplay")
    assert len(ctrl["reviewers"]) == 8 and ctrl["memory"] == "cumulative"
    rows, reqs = _run(ctrl, code)
    again = [i for i, a in enumerate(ctrl["reviewers"]) if a in ctrl["reviewers"][:i]]
    assert again  # some agent reports twice: its second prompt remembers the first report
    i = again[0]
    assert any(
        rows[ctrl["reviewers"].index(ctrl["reviewers"][i])]["report"] in m["content"]
        for m in reqs[i].message_dicts()[2:-1]
    )


# -- the classifier --------------------------------------------------------------------------------


def _classify(events, answer, claims=None):
    backend = Scripted(answer)
    cl = od_params()["classifier"]
    rows = asyncio.run(
        classify.classify(
            events,
            claims or {e["sim_id"]: "Theory XYZ claims that x" for e in events},
            PROMPTS,
            cl,
            LLMClient(backend, None),
            "judge",
            5,
        )
    )
    return rows, backend.requests


def _event(t, report, sim="s1", reviewer=0):
    return {"sim_id": sim, "t": t, "reviewer": reviewer, "model": "m", "topic": "fire", "report": report}


def test_classifier_parsing_never_crashes():
    answers = {"valid": "1", "invalid": "7", "empty": "", "word": "positive", "neg": "-2"}
    events = [_event(i + 1, f"{name}: the 2016 rate was 4.9% and warming 1.5 °C") for i, name in enumerate(answers)]
    rows, reqs = _classify(
        events, lambda q: answers[q.message_dicts()[0]["content"].split("----------\n")[1].split(":")[0]]
    )
    got = {r["t"]: (r["opinion"], r["parse_ok"], r["raw_answer"]) for r in rows}
    assert got == {
        1: (1, True, "1"),
        2: (None, False, "7"),
        3: (None, False, ""),
        4: (None, False, "positive"),
        5: (-2, True, "-2"),
    }
    prompt = reqs[0].message_dicts()[0]["content"]
    assert "4.9%" in prompt and "2: (Strongly positive opinion about XYZ)" in prompt  # the typo corrected
    assert reqs[0].sampling.temperature == 0.0 and reqs[0].constraint is classify.ANSWER
    typo = classify.request(
        PROMPTS,
        events[0],
        "c",
        LLMClient(Scripted(str), None),
        {**od_params()["classifier"], "paper_typo": True},
        5,
        "judge",
    )
    assert "2: (Strongly negative opinion about XYZ)" in typo.message_dicts()[0]["content"]


def test_scripted_classifier_gives_trajectories_b_and_d():
    """Reports carry the value the scripted classifier answers; the trajectory and B, D are computed
    here independently, step by step."""
    rng = np.random.default_rng(4)
    T, n = 12, 5
    writers = rng.integers(0, n, T).tolist()
    reviewers = [(w + 1 + int(rng.integers(0, n - 1))) % n for w in writers]
    initial = [-2, -1, 0, 1, 2]
    values = rng.integers(-2, 3, T).tolist()
    fail = {4, 9}  # these steps' answers do not parse
    setup = {"sim_id": "s1", "steps": T, "n_agents": n, "initial": initial, "reviewers": reviewers}
    events = [_event(t, f"t={t}; v={values[t - 1]}", reviewer=reviewers[t - 1]) for t in range(1, T + 1)]
    ratings, _ = _classify(
        events,
        lambda q: (
            "x"
            if re.search(r"t=(\d+);", q.message_dicts()[0]["content"]).group(1) in {str(t) for t in fail}
            else re.search(r"v=(-?\d)", q.message_dicts()[0]["content"]).group(1)
        ),
    )
    assert [r["parse_ok"] for r in ratings] == [t not in fail for t in range(1, T + 1)]
    traj = pd.DataFrame(analysis.trajectories([setup], ratings))
    expect = np.array(initial, dtype=float)
    for t in range(1, T + 1):
        if t not in fail:
            expect[reviewers[t - 1]] = values[t - 1]
        got = traj[traj.t == t].sort_values("agent").opinion.to_numpy(dtype=float)
        assert np.array_equal(got, expect), t
    src = traj.set_index(["t", "agent"]).source
    assert src[(4, reviewers[3])] == "parse_failed" and src[(0, 0)] == "initial"
    assert (traj.source == "classified").sum() == T - len(fail)
    full = pd.DataFrame(
        [
            {
                **setup,
                "model": "m",
                "topic": "fire",
                "category": "science",
                "framing": "false",
                "bias": "none",
                "memory": "cumulative",
                "world": "closed",
                "init": "uniform",
                "topology": "complete",
                "condition": "main",
                "rep": 0,
            }
        ]
    )
    ps = analysis.per_sim(full, traj, 0).iloc[0]
    assert math.isclose(ps.B, expect.mean()) and math.isclose(ps.D_pop, expect.std())
    assert math.isclose(ps.D_sample, expect.std(ddof=1)) and ps.parse_failed == 2
    assert math.isclose(ps.B_truth, -expect.mean())


# -- statistics against independent computations -----------------------------------------------


def test_anova_and_contrasts_match_statsmodels():
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(2)
    groups = {"none": rng.normal(0.6, 0.2, 8), "weak": rng.normal(0.9, 0.2, 8), "strong": rng.normal(1.3, 0.2, 8)}
    res = analysis.anova(groups)
    df = pd.DataFrame([{"bias": b, "D": v} for b, vs in groups.items() for v in vs])
    fit = smf.ols("D ~ C(bias)", df).fit()
    assert math.isclose(res["F"], fit.fvalue) and math.isclose(res["p"], fit.f_pvalue)
    names = fit.params.index  # Intercept, C(bias)[T.strong], C(bias)[T.weak]; reference: none
    for key, c in (("1", {"strong": 1, "weak": 1}), ("2", {"strong": 1, "weak": -1})):
        L = np.array([0.0, c.get("strong", 0), c.get("weak", 0)])
        t = fit.t_test(L)  # (-2, 1, 1) = (strong - none) + (weak - none); (0, -1, 1) = strong - weak
        assert list(names) == ["Intercept", "C(bias)[T.strong]", "C(bias)[T.weak]"]
        assert math.isclose(res[f"c{key}"], float(np.ravel(t.tvalue)[0])) and math.isclose(
            res[f"p{key}"], float(np.ravel(t.pvalue)[0])
        )


def test_tables_and_tests_on_known_data():
    """15 topics: B = -1 + topic noise under false framing, +0.5 under true; D rises with bias."""
    rng = np.random.default_rng(3)
    ps = per_sim_rows(rng, 15, {"none": 0.5, "weak": 0.8, "strong": 1.2}, {"false": -1.0, "true": 0.5}, 0.1, 0.3)
    t1 = analysis.aggregate(ps, analysis.CELL)
    cell = ps[(ps.framing == "false") & (ps.bias == "none")]
    r = t1[(t1.framing == "false") & (t1.bias == "none")].iloc[0]
    assert math.isclose(r.B, cell.B.mean()) and math.isclose(r.B_se, cell.B.std(ddof=1) / math.sqrt(15))
    assert list(t1.bias[:3]) == ["none", "weak", "strong"] and r.n_topics == 15
    tst = analysis.tests(ps, {}, 0.05)
    one = tst[(tst.test == "one-sample t: B vs 0") & (tst.framing == "false") & (tst.bias == "none")].iloc[0]
    x = cell.B.to_numpy()
    t_hand = x.mean() / (x.std(ddof=1) / math.sqrt(len(x)))
    assert math.isclose(one.statistic, t_hand) and one.result == "significant"
    paired = tst[tst.test == "paired t: B true vs false"]
    assert len(paired) == 3 and (paired.result == "significant").all()
    d = (
        ps[ps.framing == "true"].sort_values(["bias", "topic"]).B.to_numpy()
        - ps[ps.framing == "false"].sort_values(["bias", "topic"]).B.to_numpy()
    )[:15]  # bias none (sorted first)
    assert math.isclose(paired[paired.bias == "none"].iloc[0].statistic, d.mean() / (d.std(ddof=1) / math.sqrt(15)))
    an = tst[tst.test == "one-way ANOVA: D by bias"].iloc[0]
    assert an.result == "significant" and an.statistic > 10
    # a classifier that answers one value on the main runs' reports: every test says so instead of a verdict
    flags = analysis.classifier_flags(
        pd.DataFrame({"model": ["m"] * 20, "condition": ["main"] * 20, "opinion": [0] * 19 + [1]})
    )
    deg = analysis.tests(ps, flags, 0.05)
    assert deg.result.str.startswith(
        "degenerate input: opinion classifier on m's reports (main simulations): 95%"
    ).all()
    assert (deg["flags"] == deg.result).all()  # each row carries its inputs' flags
    # too few topics: inconclusive with the n and what the test needs (issue 20: never "degenerate input")
    few = analysis.tests(ps[ps.topic.isin(["t0", "t1"])], {}, 0.05)
    assert (few[few.test != "one-way ANOVA: D by bias"].result == "inconclusive (n = 2 topics, needs 3)").all()


def test_vs_paper_verdicts_follow_the_tests():
    """The truth finding holds only when every false-framing B is significantly negative and B is
    higher under true framing; a degenerate test makes the row degenerate, never a verdict."""
    rng = np.random.default_rng(5)
    ps = per_sim_rows(rng, 6, {"none": 0.5, "weak": 0.8, "strong": 1.2}, {"false": -1.2, "true": 0.4}, 0.05, 0.2)
    setups_df = pd.DataFrame([{"condition": "main", "init": "uniform", "initial": [-2, -2, -1, -1, 0, 0, 1, 1, 2, 2]}])
    paper = load("paper")

    def vs_of(ps: pd.DataFrame, flags: dict) -> pd.DataFrame:
        ev = analysis.Evidence(ps, paper, 0.05, flags, setups=setups_df, classifier={"m": "judge"})
        return vs_paper.table([r for _, j in judge_all(analysis.CLAIMS, ev) for r in j.rows])

    vs = vs_of(ps, {})
    row = lambda q: vs[vs.quantity.str.contains(q, regex=False)].iloc[0]  # noqa: E731
    assert row("mean B under false framing").finding_holds == "yes"
    assert math.isclose(row("mean B under false framing").paper, np.mean([-1.42, -1.13, -1.09]))
    assert row("B(true) - B(false)").finding_holds == "yes"
    assert row("ANOVA F of D by bias").finding_holds == "yes" and row("ANOVA F of D by bias").paper == 25.43
    t1 = row("Table 1 (m, complete): cumulative, false framing, none bias: B")
    assert math.isclose(t1.ours, ps[(ps.framing == "false") & (ps.bias == "none")].B.mean()) and t1.paper == -1.42
    # the design differences are named per row: model and classifier, and 6 topics against the paper's 15
    assert t1.comparable == "no: agent model, classifier, topics"
    uniform = row("uniform start: D (sample SD")
    assert uniform.ours == pytest.approx(1.4907, abs=1e-4)
    flipped = ps.assign(B=-ps.B)  # B positive under false framing: the finding does not hold
    vs = vs_of(flipped, {})
    assert row("mean B under false framing").finding_holds.startswith(
        "no (none bias, B(false) < 0: significant in the opposite direction"
    )
    assert row("B(true) - B(false)").finding_holds.startswith("no (none bias, B(true) > B(false): significant")
    flags = analysis.classifier_flags(
        pd.DataFrame({"model": ["m"] * 10, "condition": ["main"] * 10, "opinion": [1] * 10})
    )
    vs = vs_of(ps, flags)
    assert row("mean B under false framing").finding_holds.startswith("degenerate input: opinion classifier")
    assert row("Table 1 (m, complete): cumulative, false framing, none bias: B")["flags"].startswith("degenerate input")
    assert row("uniform start: D (sample SD")["flags"] == ""  # an input of the run: no classifier involved


def test_classifier_agreement_against_known_ratings():
    a = [2, 2, 1, 0, -1, -2, -2, 0, 1, 1]
    b = [2, 1, 1, 0, -1, -2, -1, 0, 1, 2]
    res = classify.agreement(a, b)
    assert res["n"] == 10 and res["agreement"] == 0.7
    # Cohen's kappa by hand: po = 0.7; pe = sum over labels of p_a * p_b
    pa = {v: a.count(v) / 10 for v in range(-2, 3)}
    pb = {v: b.count(v) / 10 for v in range(-2, 3)}
    pe = sum(pa[v] * pb[v] for v in pa)
    assert res["cohen_kappa"] == pytest.approx((0.7 - pe) / (1 - pe))
    assert res["confusion"][0] == [1, 1, 0, 0, 0]  # rater a's +2 row: one +2, one +1 from rater b
    assert 0.5 < res["krippendorff_alpha"] <= 1
    same = classify.agreement([0] * 5, [0] * 5)
    assert same["krippendorff_alpha"] is None and "undefined" in same["note"]


def test_classifier_layouts_ask_the_same_and_group_by_claim():
    """layout: paper is App. I's order (the report first); shared_first asks the same question with the
    report last, so two reports on one claim share everything before the report. Requests start claim
    by claim; the rows keep the events' order."""
    claims = {"s1": "Theory XYZ claims that fire is cold", "s2": "Theory XYZ claims that ice is hot"}
    events = [_event(t, f"report {sim} {t}", sim=sim) for t in (1, 2) for sim in ("s1", "s2")]  # claims interleaved
    rows, reqs = _classify(events, lambda q: "1", claims)
    assert [(r["sim_id"], r["t"]) for r in rows] == [(e["sim_id"], e["t"]) for e in events]
    texts = [q.message_dicts()[0]["content"] for q in reqs]
    assert [t.split("----------\n")[1].strip() for t in texts] == [f"report s{s} {t}" for s in (1, 2) for t in (1, 2)]
    assert texts[0].split("----------")[0] == texts[1].split("----------")[0]  # what precedes the report is shared
    assert texts[0].index("Answer with one opinion value") < texts[0].index("report s1 1")
    cl = {**od_params()["classifier"], "layout": "paper"}
    paper = classify.request(PROMPTS, events[0], claims["s1"], LLMClient(Scripted(str), None), cl, 5, "judge")
    text = paper.message_dicts()[0]["content"]  # a control's
    assert text.startswith("Here is a statement a person made about their belief.\n----------\nreport s1 1\n")
    main = classify.request(
        PROMPTS, {**events[0], "tweet": "x"}, claims["s1"], LLMClient(Scripted(str), None), cl, 5, "j"
    )
    assert main.message_dicts()[0]["content"].startswith("Here is a statement a person made after reading a tweet.\n")
    shared = {**od_params()["classifier"], "layout": "shared_first"}
    main_shared = classify.request(
        PROMPTS, {**events[0], "tweet": "x"}, claims["s1"], LLMClient(Scripted(str), None), shared, 5, "j"
    )
    for prompt in (text, texts[0], main_shared.message_dicts()[0]["content"]):  # the same content either way
        assert claims["s1"] in prompt and materials.classifier_options(PROMPTS) in prompt
    assert main_shared.message_dicts()[0]["content"].rstrip().endswith("right after they read this tweet?")
    assert od_params()["classifier"]["layout"] == "shared_first"
    # every layout the schema allows has its words and both templates
    schema = yaml.safe_load((ROOT / "workflow/schemas/opinion_dynamics.schema.yaml").read_text())
    layouts = schema["properties"]["classifier"]["properties"]["layout"]["enum"]
    assert set(layouts) == set(materials.LAYOUTS)
    for layout in layouts:
        for e in events[0], {**events[0], "tweet": "x"}:
            assert classify.template(e, layout) in PROMPTS
