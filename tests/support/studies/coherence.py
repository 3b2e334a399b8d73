"""The coherence tests' shared helpers: the prompts and a one-topic topic file, conversation tables built
by hand (`_table`), the paper's numbers and its suppression (`PAPER`, `ALT`), a synthetic run's Parquet
inputs (`synthetic_run`) with the analyse and figures stages run on them (`run_stages`) or its analysis'
inputs (`analysis_inputs`), and final scores per gap with their suppression verdicts (`_gaps`, `_suppressed`).

Then the null designs of test_coherence_nulls and its paper-shaped twins (tests/long/studies/coherence): their
level (`ALPHA`), agents paired by the project's own pairing (`_agent_design`) with their own agreeableness
(`_agreeable`, `_conversations`), and topics without a contentiousness effect (`_topics`)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from socsim.coherence import agents as ag
from socsim.coherence import analysis as an
from socsim.config import read_yaml
from socsim.io.vs_paper import read_paper
from support.analysis import inputs
from support.project import ROOT

PROMPTS = read_yaml(ROOT / "data/coherence/prompts.yaml")
T_TOPICS = {"topics": [{"id": "t", "question": "Do you like taxes?"}]}


def _table(rows, topics_per_level=3) -> pd.DataFrame:
    """A conversation table: each conversation its own two agents, `topics_per_level` topics per
    contentiousness level (conversations spread over them in turn)."""
    df = pd.DataFrame(rows, columns=["P1", "P2", "O1", "O2", "contentiousness", "agreement"])
    df["B1"] = df["B2"] = 0
    df["conversation_id"] = [f"c{i}" for i in range(len(df))]
    df["agent1_id"] = [f"a{i}" for i in range(len(df))]
    df["agent2_id"] = [f"b{i}" for i in range(len(df))]
    df["topic"] = [f"t{c}.{i % topics_per_level}" for i, c in enumerate(df["contentiousness"])]
    return an.finish_table(df)


PAPER = read_paper(ROOT / "data/coherence/paper.yaml")
ALT = an.paper_suppression(PAPER)  # the paper's gap-0 distribution and its suppressed gap 4


def coherent_score(p1, p2, o1, o2, c):
    """Agreement falls with the gap and rises with openness; contentiousness plays no part."""
    return int(np.clip(5 - abs(p1 - p2) + (o1 + o2 >= 9), 1, 5))


def synthetic_run(
    tmp_path,
    models=("m",),
    topics=(("neutral", 1), ("medium", 2), ("hot", 3)),
    score=coherent_score,
    null_profile=False,
    calibration=(1, 2, 3, 4, 5),
    prefs=range(1, 6),
    texts=None,
):
    """agents, profiles, pairs, judgments, utterances and calibration Parquet files of the documented
    schemas (written and read back like the stages do), two agents per (topic, P, O) profile."""
    from socsim.coherence import schemas
    from socsim.io.parquet import write_table

    agents, profiles, pairs, judgments, utterances = [], [], [], [], []
    for topic, c in topics:
        for p in prefs:
            for o in (0, 3, 6, 9):
                for k in range(2):
                    aid = f"{topic}.{p}.{o}.{k}"
                    agents.append(
                        {
                            "agent_id": aid,
                            "topic": topic,
                            "contentiousness": c,
                            "bias_level": 2 * k,
                            "bias_direction": "favor" if k else "none",
                            "background": 0,
                            "region": "r",
                            "age": "a",
                            "gender": "g",
                            "urbanicity": "u",
                            "education": "e",
                            "persona_prompt": "You are someone.",
                            "bias_prompt": None,
                        }
                    )
                    for m in models:
                        profiles.append(
                            {
                                "agent_id": aid,
                                "model": m,
                                "preference": p,
                                "preference_raw": str(p),
                                "preference_ok": True,
                                "openness": o,
                                "openness_answers": ["Yes"] * 9,
                                "openness_ok": True,
                            }
                        )
    if null_profile:  # one agent whose preference did not parse
        profiles[0].update(preference=None, preference_raw="maybe", preference_ok=False)
    prof = {(r["model"], r["agent_id"]): r for r in profiles}
    for m in models:
        for topic, c in topics:
            ids = [a["agent_id"] for a in agents if a["topic"] == topic]
            for i, (a1, a2) in enumerate(itertools.combinations(ids, 2)):
                cid = f"{m}.{topic}.{i:05d}"
                pairs.append(
                    {
                        "conversation_id": cid,
                        "model": m,
                        "topic": topic,
                        "agent1_id": a1,
                        "agent2_id": a2,
                        "profile1": "",
                        "profile2": "",
                        "opener": 1 + i % 2,
                        "question": "Q?",
                        "agent1_system_prompt": "s1",
                        "agent2_system_prompt": "s2",
                        "seed": 1,
                    }
                )
                p1, p2 = prof[(m, a1)], prof[(m, a2)]
                if p1["preference"] is None or p2["preference"] is None:
                    continue
                s = score(p1["preference"], p2["preference"], p1["openness"], p2["openness"], c)
                for t in range(5):  # each agent speaks twice after the question (Self-BLEU needs two)
                    judgments.append(
                        {
                            "conversation_id": cid,
                            "turn": t,
                            "score": s if t == 4 else 3,
                            "raw_answer": str(s),
                            "parse_ok": True,
                            "judge_model": "j",
                        }
                    )
                    utterances.append(
                        {
                            "conversation_id": cid,
                            "turn": t,
                            "speaker": 1 + t % 2,
                            "agent_id": (a1, a2)[t % 2],
                            "model": m,
                            "says_goodbye": False,
                            "text": texts(t)
                            if texts
                            else " ".join(f"w{(len(utterances) * 7919 + j * 104729) % 1000003}" for j in range(10)),
                        }
                    )
    cal = [
        {"judge_model": "j", "example": i, "reference": i + 1, "score": s, "raw_answer": str(s), "parse_ok": True}
        for i, s in enumerate(calibration)
    ]
    paths = {}
    for name, rows, schema, key in (
        ("agents", agents, schemas.AGENTS, ["agent_id"]),
        ("profiles", profiles, schemas.PROFILES, ["model", "agent_id"]),
        ("pairs", pairs, schemas.PAIRS, ["conversation_id"]),
        ("judgments", judgments, schemas.JUDGMENTS, ["conversation_id", "turn"]),
        ("utterances", utterances, schemas.UTTERANCES, ["conversation_id", "turn"]),
        ("calibration", cal, schemas.JUDGE_CALIBRATION, ["judge_model", "example"]),
    ):
        paths[name] = tmp_path / f"{name}.parquet"
        write_table(paths[name], rows, schema, key, {})
    paths.update(
        paper_file=ROOT / "data/coherence/paper.yaml",
        analysis=tmp_path / "analysis",
        figures=tmp_path / "figures",
        metrics=tmp_path / "metrics.json",
    )
    return paths


def analysis_inputs(paths, paper):
    """The analysis's inputs (socsim.io.report.AnalysisInputs) of a synthetic run, with `paper`'s numbers
    (support.analysis.inputs: seed 1, 50 bootstrap repeats, the other params the schema's defaults)."""
    names = ("agents", "profiles", "pairs", "judgments", "utterances", "calibration")
    tables = {k: pd.read_parquet(paths[k]) for k in names}
    return inputs("coherence", tables, paper=paper, seed=1, bootstrap={"repeats": 50})


def run_stages(paths, captured=None, monkeypatch=None, **coherence):
    """socsim coherence analyse + figures; with `captured`, the figures are kept (not only saved)."""
    import json

    from socsim.coherence import figures, stages

    if captured is not None:
        real = figures.save
        monkeypatch.setattr(
            figures, "save", lambda fig, out, name: captured.setdefault(name, fig) and real(fig, out, name)
        )
    from socsim import config
    from socsim.context import StageContext

    params = config.validate({"seed": 1, "coherence": {"bootstrap": {"repeats": 50}, **coherence}})
    for name in ("analyse", "figures"):  # the real stages with the real context, without the CLI
        ctx = StageContext(
            stages.STUDY,
            stages.STUDY.stage(name),
            params,
            {**paths, "metrics": paths["metrics"].with_name(f"{name}.json")},
        )
        ctx.stage.run(ctx)
    a = paths["analysis"]
    strict = lambda text: json.loads(text, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))  # noqa: E731
    from socsim.io.report import read

    return {
        "summary": strict((a / "summary.json").read_text()),
        "tests": read(a, "six_tests"),
        "table4_md": (a / "table4_tests.md").read_text(),
        "table4_csv": read(a, "table4_tests"),
        "table4_tex": (a / "table4_tests.tex").read_text(),
        "vs_paper": read(a, "vs_paper"),
        "suppression": read(a, "suppression"),
        "findings": read(a, "findings"),
        "metrics": json.loads(paths["metrics"].with_name("analyse.json").read_text()),
        "figures": sorted(p.name for p in paths["figures"].glob("*.png")),
    }


BOOT = {"draw": 100, "repeats": 50, "level": 0.95}


def _gaps(rng, n, dist_of_gap):
    """Final scores per gap drawn from dist_of_gap(gap) (a distribution over 1-5), n at each gap."""
    return pd.DataFrame(
        [{"gap": g, "agreement": int(s)} for g in range(5) for s in rng.choice(an.SCORES, n, p=dist_of_gap(g))]
    )


def _suppressed(df, alpha=0.05):
    part = an.suppression(df, "linear", BOOT, seed=0)
    _, verdicts = an.with_verdicts(part, alpha, [])
    from socsim.stats.verdict import all_of

    return verdicts, all_of(verdicts[g] for g in (1, 2, 3, 4))


ALPHA = 0.01  # the null designs' level


def _conversations(sides, p, o, y, topic_of=None):
    """A conversation table: agents' (P, O) by index, one row per pair of agent indices in `sides`."""
    sides = np.asarray(sides)
    rows = {
        "P1": p[sides[:, 0]],
        "P2": p[sides[:, 1]],
        "O1": o[sides[:, 0]],
        "O2": o[sides[:, 1]],
        "contentiousness": 1,
        "agreement": y,
        "B1": 0,
        "B2": 0,
        "conversation_id": [f"c{i}" for i in range(len(sides))],
        "agent1_id": [f"a{i}" for i in sides[:, 0]],
        "agent2_id": [f"a{i}" for i in sides[:, 1]],
        "topic": [topic_of(i) if topic_of else "t" for i in sides[:, 0]],
    }
    return an.finish_table(pd.DataFrame(rows))


LLM_LIKE_OPENNESS = [0.02, 0.03, 0.05, 0.4, 0.3, 0.1, 0.05, 0.03, 0.01, 0.01]  # most agents answer alike


def _agent_design(n_agents=60, seed=0, preference=(0.3, 0.1, 0.1, 0.2, 0.3), openness=None):
    """One topic, agents with skewed profiles paired by the project's own pairing (ag.pair_agents, one
    conversation per profile pair): agents of rare profiles sit in many conversations. `openness`:
    its distribution over 0-9 (None: binomial(9, 0.35))."""
    rng = np.random.default_rng(seed)
    agents, profiles = {}, []
    for i in range(n_agents):
        aid = f"t.{i}"
        agents[aid] = {
            "agent_id": aid,
            "topic": "t",
            "bias_level": int(rng.integers(0, 3)),
            "persona_prompt": "p",
            "bias_prompt": None,
        }
        profiles.append(
            {
                "agent_id": aid,
                "model": "m",
                "preference": int(rng.choice(5, p=preference)) + 1,
                "openness": int(rng.binomial(9, 0.35) if openness is None else rng.choice(10, p=openness)),
                "preference_ok": True,
                "openness_ok": True,
            }
        )
    pairing = {"unit": "profile", "k": 1, "max_pairs_per_topic": None}
    pairs = ag.pair_agents(profiles, agents, pairing, seed, T_TOPICS, PROMPTS)
    index = {p["agent_id"]: i for i, p in enumerate(profiles)}
    sides = np.array([(index[p["agent1_id"]], index[p["agent2_id"]]) for p in pairs])
    pref = np.array([p["preference"] for p in profiles])
    open_ = np.array([p["openness"] for p in profiles])
    return sides, pref, open_


def _agreeable(sides, pref, open_, rng, beta_open=0.0, beta_gap=0.0):
    """Final scores from each agent's own agreeableness (SD 1) plus noise, and the given effects."""
    u = rng.normal(0, 1, len(pref))
    gap, total = np.abs(pref[sides[:, 0]] - pref[sides[:, 1]]), open_[sides[:, 0]] + open_[sides[:, 1]]
    latent = 3 + u[sides[:, 0]] + u[sides[:, 1]] + rng.normal(0, 1, len(sides))
    latent += beta_open * (total - total.mean()) - beta_gap * (gap - gap.mean())
    return _conversations(sides, pref, open_, np.clip(np.rint(latent), 1, 5).astype(int))


def _topics(rng, n, topic_sd, effect=0.0):
    """9 topics (3 a contentiousness level) x 5 preference pairs, n conversations a cell: each topic its
    own shift (SD topic_sd of the residual's), contentiousness moving agreement by `effect` a level."""
    shift = rng.normal(0, topic_sd, 9)
    rows = []
    for t in range(9):
        c = 1 + t // 3
        for p1, p2 in ((1, 1), (1, 5), (3, 3), (2, 4), (5, 5)):
            latent = 4.5 - 0.8 * abs(p1 - p2) + shift[t] + effect * (c - 2) + rng.normal(0, 1, n)
            rows += [(p1, p2, 3, 3, c, int(s), f"t{t}") for s in np.clip(np.rint(latent), 1, 5)]
    df = pd.DataFrame(rows, columns=["P1", "P2", "O1", "O2", "contentiousness", "agreement", "topic"])
    n_rows = len(df)
    return an.finish_table(
        df.assign(B1=0, B2=0, conversation_id=range(n_rows), agent1_id=[f"a{i}" for i in range(n_rows)]).assign(
            agent2_id=[f"b{i}" for i in range(n_rows)]
        )
    )
