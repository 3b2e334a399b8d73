"""DEBATE ingest does not guess (issue 21, item 4) and the setups stage (item 6).

Scripted data dirs in tmp_path (copies of fixture sessions, edited): an unknown Depth topic dir, a
sliderValue outside 1..6 and a data set without a complete session stop ingest with a clear message;
a session without Post Opinions stays in Tables 3/4/9/10 (complete, simulated) and leaves Sect. 6;
golden/ and raw/ are counted per source; Table 1's counts of the fixture, known by hand. Setups: one
row per session and setting, and the simulate stage's request seeds are those of the ids alone."""

from __future__ import annotations

import asyncio
import csv
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml

from socsim.debate import analysis, ingest, setups, simulate
from socsim.llm import LLMClient
from socsim.seeds import derive_seed
from support.llm import Scripted
from support.project import ROOT

FIXTURE = ROOT / "data" / "debate" / "fixture"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
MATERIALS = yaml.safe_load((ROOT / "data" / "debate" / "topics.yaml").read_text(encoding="utf-8"))
TOPICS, ALIASES = MATERIALS["topics"], MATERIALS["survey_aliases"]
PAPER = yaml.safe_load((ROOT / "data" / "debate" / "paper.yaml").read_text(encoding="utf-8"))
SCIENCE = "Everything_that_happens_can_eventually_be_explained_by_science"
COMPLETE = "01JPAQWNW0HB2T6YJ0MR9XP4KD"  # a complete Depth session (science)
INCOMPLETE = "01JR2SW2082KTB9FQ4HZ6MA8XC"  # the fixture's incomplete one (angels)


def copy_session(root: Path, sid: str, topic_set: str = "depth", topic_dir: str | None = None) -> Path:
    src = next(FIXTURE.glob(f"raw/*/*/*_{sid}.csv"))
    dest = root / "raw" / topic_set / (topic_dir or src.parent.name) / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return dest


def edit_rows(path: Path, fn) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(fn(rows))


def col(name: str) -> int:
    return ingest.COLUMNS.index(name)


# ------------------------------------------------------------------------------------------ unknown topics


def test_unknown_depth_topic_dir_stops_ingest(tmp_path):
    path = copy_session(tmp_path, COMPLETE, topic_dir="Ghosts_exist")
    rel = path.relative_to(tmp_path).as_posix()
    with pytest.raises(ValueError) as info:
        ingest.parse(tmp_path, TOPICS, ALIASES)
    msg = str(info.value)
    assert msg.startswith(f"{rel}: unknown Depth topic dir 'Ghosts_exist'")
    assert "reverse coding" in msg and "debate.data.allow_unknown_topics: true" in msg and SCIENCE in msg


def test_unknown_depth_topic_dir_allowed_explicitly_is_not_reverse_coded(tmp_path):
    copy_session(tmp_path, COMPLETE, topic_dir="Ghosts_exist")
    out = ingest.parse(tmp_path, TOPICS, ALIASES, allow_unknown_topics=True)
    (s,) = out["sessions"]
    assert (s["statement"], s["reverse"], s["complete"]) == ("Ghosts exist", False, True)
    assert out["warnings"][0].startswith("unknown topic dir depth/Ghosts_exist")


def test_unknown_breadth_topic_dir_is_a_warning_only(tmp_path):
    # Breadth has 100 topics, 43 printed: an unlisted dir is expected, and Breadth is never reverse-coded
    copy_session(tmp_path, COMPLETE, topic_set="breadth", topic_dir="Ghosts_exist")
    out = ingest.parse(tmp_path, TOPICS, ALIASES)
    assert [s["topic_set"] for s in out["sessions"]] == ["breadth"] and not out["sessions"][0]["reverse"]
    assert len(out["warnings"]) == 1 and "unknown topic dir breadth/Ghosts_exist" in out["warnings"][0]


# ------------------------------------------------------------------------------------------ slider range


@pytest.mark.parametrize(
    "event, value", [("Initial Opinion", "7.0"), ("Post Opinion", "0.0"), ("Initial Opinion", "6.5")]
)
def test_slider_outside_1_to_6_stops_ingest(tmp_path, event, value):
    path = copy_session(tmp_path, COMPLETE)
    hit = {}

    def fn(rows):
        i = next(i for i, r in enumerate(rows) if r[col("event_type")] == event)
        rows[i][col("sliderValue")] = value
        hit["row"] = i + 1  # 1-based; row 1 = the header
        return rows

    edit_rows(path, fn)
    rel = path.relative_to(tmp_path).as_posix()
    row = hit["row"]
    with pytest.raises(ValueError, match=re.escape(f"{rel}: row {row} (line {row}): sliderValue '{value}'") + ".*1..6"):
        ingest.parse(tmp_path, TOPICS, ALIASES)


def test_slider_ends_of_the_scale_are_read():
    parsed = ingest.parse(FIXTURE, TOPICS, ALIASES)  # the fixture has sliders 1.0 and 6.0
    values = [p["o_init"] for p in parsed["participants"]]
    assert min(values) == 1 - 3.5 and max(values) == 6 - 3.5


# ------------------------------------------------------------------------------------------ no complete session


def test_no_complete_session_stops_ingest(tmp_path):
    copy_session(tmp_path, INCOMPLETE)
    path = copy_session(tmp_path, COMPLETE)
    edit_rows(path, lambda rows: [r for r in rows if not (r[col("event_type")] == "tweet" and r[0] == "3.0")])
    with pytest.raises(ValueError) as info:
        ingest.parse(tmp_path, TOPICS, ALIASES)
    msg = str(info.value)
    assert msg.startswith("debate data: none of the 2 session(s) under ") and "is complete" in msg
    assert "no tweet in round 3 (2 session(s))" in msg  # reasons tallied without the worker ids


# ------------------------------------------------------------------------------------------ Post Opinion: Sect. 6 only


def test_session_without_post_opinion_stays_complete_and_leaves_sect6_only(tmp_path):
    path = copy_session(tmp_path, COMPLETE)
    gone = "68a0bXP4KD"
    edit_rows(path, lambda rows: [r for r in rows if not (r[col("event_type")] == "Post Opinion" and r[3] == gone)])
    copy_session(tmp_path, "01JP2RY5KGQX7KM2R8TB4WN9FH")  # a complete session with all Post Opinions
    out = ingest.parse(tmp_path, TOPICS, ALIASES)
    s = {r["session_id"]: r for r in out["sessions"]}
    assert s[COMPLETE]["complete"] and s[COMPLETE]["drop_reason"] is None and not s[COMPLETE]["post_opinion"]
    assert s["01JP2RY5KGQX7KM2R8TB4WN9FH"]["post_opinion"]
    assert out["post_opinion_missing"] == {COMPLETE: f"no Post Opinion: {gone}"}
    assert out["counts"]["complete_without_post_opinion"] == 1
    parts = {p["worker_id"]: p for p in out["participants"] if p["session_id"] == COMPLETE}
    assert len(parts) == 4 and parts[gone]["o_final"] is None and parts["62b4cXP4KD"]["o_final"] == 1.5
    assert any(u["session_id"] == COMPLETE for u in out["utterances"])
    # Tables 3/4/9/10: the session is simulated
    assert [r["session_id"] for r in setups.select(out["sessions"], ["depth"], None)] == sorted(s)

    # Sect. 6: only the session whose 4 members all gave a Post Opinion
    sessions = pd.DataFrame(out["sessions"])
    tweets = pd.DataFrame(out["tweets"])
    base = {"model": "m", "mode": 3, "ablation": "original", "topic_set": "depth", "dyad": "", "k": 0}
    sim = pd.DataFrame(
        [
            {
                **base,
                "session_id": p["session_id"],
                "round": 4,
                "kind": "opinion",
                "speaker": p["worker_id"],
                "opinion": 0.5,
            }
            for p in out["participants"]
        ]
    )
    ann = pd.DataFrame(
        [
            {
                **base,
                "session_id": t.session_id,
                "round": t.round,
                "kind": "tweet",
                "speaker": t.worker_id,
                "stance": 0.5,
            }
            for t in tweets.itertuples()
            if t.round > 1
        ]
    )
    hann = pd.DataFrame(
        [
            {"session_id": t.session_id, "round": t.round, "kind": "tweet", "speaker": t.worker_id, "stance": 0.5}
            for t in tweets.itertuples()
        ]
    )
    tables = {
        "sessions": sessions,
        "participants": pd.DataFrame(out["participants"]),
        "tweets": tweets,
        "simulated": sim,
        "annotations": ann,
        "human_annotations": hann,
    }
    mem = analysis.members(tables, "m")
    assert set(mem.session_id) == {"01JP2RY5KGQX7KM2R8TB4WN9FH"} and len(mem) == 8
    # without the column (a sessions table of the older schema), no filter
    older = analysis.members({**tables, "sessions": sessions.drop(columns="post_opinion")}, "m")
    assert set(older.session_id) == set(s)


# ------------------------------------------------------------------------------------------ sources, Table 1 counts


def test_each_source_is_counted():
    out = ingest.parse(FIXTURE, TOPICS, ALIASES)
    # by hand: golden/ holds the Breadth session; raw/ the 6 Depth sessions and a cut-off copy of the Breadth one
    assert out["counts"]["by_source"] == {
        "golden": {"files": 1, "sessions": 1, "complete": 1, "shadowed": 0},
        "raw": {"files": 7, "sessions": 6, "complete": 5, "shadowed": 1},
        "submit_data": {"files": 0, "sessions": 0, "complete": 0, "shadowed": 0},
    }
    golden = [s for s in out["sessions"] if s["source"] == "golden"]
    assert [(s["topic_set"], s["shadowed_sources"]) for s in golden] == [("breadth", ["raw"])]
    assert all(s["shadowed_sources"] == [] for s in out["sessions"] if s["source"] == "raw")
    # raw first: the raw copy is used (and incomplete), golden's is the shadowed one
    rev = ingest.parse(FIXTURE, TOPICS, ALIASES, sources=["raw", "golden"])
    assert rev["counts"]["by_source"]["golden"] == {"files": 1, "sessions": 0, "complete": 0, "shadowed": 1}
    assert rev["counts"]["by_source"]["raw"] == {"files": 7, "sessions": 7, "complete": 5, "shadowed": 0}


def raw_messages(files: list[str]) -> tuple[int, int]:
    """message_sent rows of the used files, and those labelled VALID (an independent count)."""
    n = valid = 0
    for f in files:
        with (FIXTURE / f).open(newline="", encoding="utf-8") as fh:
            for r in csv.DictReader(fh):
                if r["event_type"] == "message_sent":
                    n += 1
                    valid += r["validity"] == "VALID"
    return n, valid


def test_table1_counts_of_the_fixture_beside_the_papers():
    out = ingest.parse(FIXTURE, TOPICS, ALIASES)
    rows = ingest.data_counts(out["sessions"], out["utterances"], "fixture", PAPER["table1"])
    got = {(r["topic_set"], r["source"]): r for r in rows}
    assert set(got) == {
        ("depth", "raw"),
        ("depth", "all"),
        ("breadth", "golden"),
        ("breadth", "raw"),
        ("breadth", "all"),
        ("all", "golden"),
        ("all", "raw"),
        ("all", "all"),
    }
    files = {s["session_id"]: s["file"] for s in out["sessions"]}
    sets = {s: e["topic_set"] for s, e in EXPECTED["sessions"].items()}
    utt = Counter(sets[k.split("|")[0]] for k, v in EXPECTED["utterances"].items() for _ in v)
    received_used = EXPECTED["counts"]["received_rows_used"]  # a Depth dyad-round with only received rows
    d_msgs, d_valid = raw_messages([f for s, f in files.items() if sets[s] == "depth"])
    b_msgs, b_valid = raw_messages([f for s, f in files.items() if sets[s] == "breadth"])
    keys = ("topics", "sessions", "complete", "post_opinion", "dropped", "participants", "utterances", "shadowed")
    # by hand: Depth = 3 science + 3 angels sessions (one incomplete), 4 people each; Breadth = 1 golden session
    assert {k: got[("depth", "all")][k] for k in keys} == dict(zip(keys, (2, 6, 5, 5, 1, 24, utt["depth"], 0)))
    assert {k: got[("breadth", "all")][k] for k in keys} == dict(zip(keys, (1, 1, 1, 1, 0, 4, utt["breadth"], 1)))
    assert {k: got[("all", "all")][k] for k in keys} == dict(zip(keys, (3, 7, 6, 6, 1, 28, 109, 1)))
    assert (got[("depth", "all")]["messages"], got[("depth", "all")]["messages_valid"]) == (
        d_msgs + received_used,
        d_valid,
    )
    assert (got[("breadth", "all")]["messages"], got[("breadth", "all")]["messages_valid"]) == (b_msgs, b_valid)
    assert got[("breadth", "raw")]["sessions"] == 0 and got[("breadth", "raw")]["shadowed"] == 1
    assert got[("depth", "raw")]["sessions"] == got[("depth", "all")]["sessions"]
    # the paper's Table 1 on the pooled-source rows only
    assert (got[("depth", "all")]["paper_groups"], got[("depth", "all")]["paper_participants"]) == (185, 501)
    assert got[("all", "all")]["paper_messages"] == 29417 and got[("breadth", "all")]["paper_topics"] == 100
    assert got[("depth", "raw")]["paper_groups"] is None
    assert {r["data"] for r in rows} == {"fixture"}
    assert ingest.data_label({"source": "hub", "repo": "o/d", "revision": "main", "commit": "abc"}) == "hub o/d@abc"


def test_table1_counts_people_not_seats():
    # A person in two groups is one of the paper's "# subjects": the same worker in two Depth sessions.
    out = ingest.parse(FIXTURE, TOPICS, ALIASES)
    depth = [s for s in out["sessions"] if s["topic_set"] == "depth"]
    seats = sum(len(s["workers"]) for s in depth)
    depth[1]["workers"] = sorted({*depth[1]["workers"][1:], depth[0]["workers"][0]})
    rows = ingest.data_counts(out["sessions"], out["utterances"], "fixture")
    got = {(r["topic_set"], r["source"]): r["participants"] for r in rows}
    assert got[("depth", "all")] == len({w for s in depth for w in s["workers"]}) == seats - 1


# ------------------------------------------------------------------------------------------ setups


def fixture_tables():
    out = ingest.parse(FIXTURE, TOPICS, ALIASES)
    return out


def test_setups_one_row_per_session_and_setting():
    out = fixture_tables()
    dp = {
        "agent_models": ["a", "b"],
        "modes": [1, 3],
        "ablations": ["original", "no_prior_chats"],
        "topic_sets": ["depth", "breadth"],
        "sessions_per_set": 2,
    }
    rows = setups.build(dp, 11, out["sessions"], out["participants"])
    # settings: a x {1,3} x {original, no_prior_chats} + b x {1,3} x original = 6, per topic set;
    # sessions: 2 complete Depth (the first by id), 1 Breadth
    depth2 = sorted(s for s, e in EXPECTED["sessions"].items() if e["topic_set"] == "depth" and e["complete"])[:2]
    assert len(rows) == 6 * 2 + 6 * 1
    assert {r["session_id"] for r in rows if r["topic_set"] == "depth"} == set(depth2)
    assert all(r["seed"] == 11 for r in rows)
    assert all(r["model"] == "a" for r in rows if r["ablation"] != "original")
    ids = [r["setup_id"] for r in rows]
    assert len(set(ids)) == len(ids) and "b.m3.original.breadth.01JVQ57VG0Y8PC5VG2NE7WD1RM" in ids
    r = next(r for r in rows if r["session_id"] == depth2[0])
    assert r["statement"] == TOPICS[r["topic_dir"]]["statement"]
    assert r["workers"] == sorted(w for w in EXPECTED["opinions"] if w.endswith(depth2[0][-5:]))
    assert INCOMPLETE not in {r["session_id"] for r in rows}
    every = setups.build({**dp, "sessions_per_set": None}, 11, out["sessions"], out["participants"])
    assert len({r["session_id"] for r in every}) == 6


def test_setups_refuse_a_topic_set_without_complete_sessions():
    out = fixture_tables()
    depth_only = [s for s in out["sessions"] if s["topic_set"] == "depth"]
    with pytest.raises(ValueError, match="debate.topic_sets lists 'breadth', but the data holds no complete breadth"):
        setups.select(depth_only, ["depth", "breadth"], None)


W = ["aaaaa111", "bbbbb222", "ccccc333", "ddddd444"]


def tiny_group(sid: str):
    """One four-person session: partners (0,1)(2,3) / (0,2)(1,3) / (0,3)(1,2), two utterances per dyad-round."""
    ws = [w + sid for w in W]
    people = [
        {
            "session_id": sid,
            "worker_id": w,
            "name": w[:5],
            "o_init": 0.5,
            "j_init": "j",
            "o_final": None,
            "j_final": None,
            "demographics": json.dumps(dict.fromkeys(ingest.SLOTS, "x"), sort_keys=True),
        }
        for w in ws
    ]
    tweets, utts = [], []
    for r, pairs in {1: [(0, 1), (2, 3)], 2: [(0, 2), (1, 3)], 3: [(0, 3), (1, 2)]}.items():
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                tweets.append(
                    {
                        "session_id": sid,
                        "round": r,
                        "worker_id": ws[x],
                        "partner_id": ws[y],
                        "text": "t",
                        "event_order": 1,
                    }
                )
            dyad = "|".join(sorted((ws[a], ws[b])))
            for k, (s, p) in enumerate([(a, b), (b, a)], 1):
                utts.append(
                    {
                        "session_id": sid,
                        "round": r,
                        "dyad": dyad,
                        "k": k,
                        "speaker": ws[s],
                        "partner": ws[p],
                        "text": "u",
                        "first_event_order": k,
                        "n_merged": 1,
                        "validity": "VALID",
                    }
                )
    session = {
        "session_id": sid,
        "topic_set": "depth",
        "topic_dir": "Angels_are_real",
        "statement": "Angels are real.",
        "complete": True,
    }
    return session, people, tweets, utts


def simulate_setups(rows, groups):
    backend = Scripted(lambda req: f"seed {req.seed}")
    people, tweets, utts = ([x for g in groups for x in g[i]] for i in (1, 2, 3))
    prompts = yaml.safe_load((ROOT / "data/debate/prompts.yaml").read_text())
    out = asyncio.run(
        simulate.run_setups(
            rows,
            people,
            tweets,
            utts,
            prompts,
            {"max_tokens": 8, "opinion_max_tokens": 32},
            {"m": LLMClient(backend, None)},
        )
    )
    return out, backend.requests


def test_simulate_runs_the_setups_on_seeds_of_their_ids_alone():
    groups = [tiny_group("S1"), tiny_group("S2")]
    dp = {
        "agent_models": ["m"],
        "modes": [2, 3],
        "ablations": ["original", "no_demographics"],
        "topic_sets": ["depth"],
        "sessions_per_set": None,
    }
    rows = setups.build(dp, 5, [g[0] for g in groups], [p for g in groups for p in g[1]])
    assert len(rows) == 2 * 2 * 2
    out, reqs = simulate_setups(rows, groups)
    # the request seeds, from the ids as the simulation has always derived them (run seed 5)
    expected = Counter()
    for r in rows:
        ids = ("debate", "m", r["mode"], r["ablation"], r["session_id"])
        ws = r["workers"]
        for rnd, pairs in {1: [(0, 1), (2, 3)], 2: [(0, 2), (1, 3)], 3: [(0, 3), (1, 2)]}.items():
            if r["mode"] == 3 and rnd >= 2:
                expected.update(derive_seed(5, *ids, rnd, w, "tweet") for w in ws)
            for a, b in pairs:
                dyad = "|".join(sorted((ws[a], ws[b])))
                expected.update(derive_seed(5, *ids, rnd, dyad, t) for t in range(2))
        if r["mode"] == 3:
            expected.update(derive_seed(5, *ids, w, "final") for w in ws)
    assert Counter(q.seed for q in reqs) == expected
    # a setup plays alike alone or beside others (another shard, another order)
    one = [r for r in rows if r["session_id"] == "S2" and r["mode"] == 3 and r["ablation"] == "original"]
    alone, _ = simulate_setups(one, groups[1:])
    key = lambda x: (x["session_id"], x["mode"], x["ablation"], x["round"], x["kind"], x["dyad"], x["k"], x["speaker"])  # noqa: E731
    together = sorted((x for x in out if (x["session_id"], x["mode"], x["ablation"]) == ("S2", 3, "original")), key=key)
    assert sorted(alone, key=key) == together and together


# ------------------------------------------------------------------------------------------ the stages, by the CLI


def ingest_cmd(out: Path, *extra: str) -> list[str]:
    names = ("sessions", "participants", "tweets", "human_utterances", "data_counts")
    paths = [a for n in names for a in (f"--{n.replace('_', '-')}", str(out / f"{n}.parquet"))]
    return ["debate", "ingest", "--params", "params.yaml", *paths, "--metrics", str(out / "ingest.json"), *extra]


def test_ingest_and_setups_stages_write_counts_and_setups(tmp_path):
    from socsim.io.parquet import read_provenance
    from support.metrics import read_metrics
    from support.project import run_socsim

    out = tmp_path / "r"
    proc = run_socsim(*ingest_cmd(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "golden: 1 used (1 complete) of 1 files, 0 shadowed" in proc.stdout
    assert "raw: 6 used (5 complete) of 7 files, 1 shadowed by an earlier source" in proc.stdout
    m = read_metrics(out / "ingest.json")
    assert m["by_source"]["raw"] == {"files": 7, "sessions": 6, "complete": 5, "shadowed": 1}
    assert m["complete"] == 6 and m["dropped"] == {INCOMPLETE: "no tweet in round 3: 67f3bMA8XC"}
    # The dropped session lacks a Post Opinion too, but is not "kept": only complete sessions are listed.
    assert m["without_post_opinion"] == {} and "kept for Tables" not in proc.stdout
    counts = pd.read_parquet(out / "data_counts.parquet").set_index(["topic_set", "source"])
    assert counts.loc[("depth", "all"), "paper_groups"] == 185 and counts.loc[("all", "all"), "sessions"] == 7
    assert read_provenance(out / "data_counts.parquet")["data"] == {"source": "fixture"}

    args = ["--sessions", str(out / "sessions.parquet"), "--participants", str(out / "participants.parquet")]
    proc = run_socsim(
        "debate",
        "setups",
        "--params",
        "params.yaml",
        *args,
        "--setups",
        str(out / "setups.parquet"),
        "--metrics",
        str(out / "setups.json"),
        "--set",
        "debate.sessions_per_set=2",
        "--set",
        "debate.agent_models=[smollm2-135m]",  # one model (the default's controls left out)
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = pd.read_parquet(out / "setups.parquet")
    # params.yaml: one model, modes 1-3, original, Depth; 2 sessions -> 6 rows, the run seed on each
    seed = yaml.safe_load((ROOT / "params.yaml").read_text())["seed"]
    assert len(rows) == 6 and set(rows["mode"]) == {1, 2, 3} and set(rows.seed) == {seed}
    assert read_metrics(out / "setups.json") == {"setups": 6, "settings": 3, "sessions": 2}


def test_ingest_stage_stops_on_an_unknown_depth_dir_unless_allowed(tmp_path):
    from support.project import run_socsim

    copy_session(tmp_path / "data", COMPLETE, topic_dir="Ghosts_exist")
    local = ["--set", "debate.data.source=local", "--set", f"debate.data.path={tmp_path / 'data'}"]
    proc = run_socsim(*ingest_cmd(tmp_path / "r", *local))
    assert proc.returncode != 0 and "unknown Depth topic dir 'Ghosts_exist'" in proc.stderr
    assert not (tmp_path / "r" / "sessions.parquet").exists()
    proc = run_socsim(*ingest_cmd(tmp_path / "r", *local, "--set", "debate.data.allow_unknown_topics=true"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = pd.read_parquet(tmp_path / "r" / "sessions.parquet")
    assert list(s.statement) == ["Ghosts exist"] and not s.reverse.any()
