"""DEBATE ingest: the synthetic fixture against its hand-written expectations, warnings and malformed
files, and the Hub loader offline against a cache laid out as huggingface_hub lays out a dataset."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from socsim.debate import ingest
from support.project import ROOT

FIXTURE = ROOT / "data" / "debate" / "fixture"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))
MATERIALS = yaml.safe_load((ROOT / "data" / "debate" / "topics.yaml").read_text(encoding="utf-8"))
TOPICS, ALIASES = MATERIALS["topics"], MATERIALS["survey_aliases"]
SCIENCE = "Everything_that_happens_can_eventually_be_explained_by_science"


@pytest.fixture(scope="module")
def parsed():
    return ingest.parse(FIXTURE, TOPICS, ALIASES)


def by(rows, *keys):
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in rows}


# ------------------------------------------------------------------------------------------ materials


def test_topics_yaml():
    assert sum(t["set"] == "depth" for t in TOPICS.values()) == 7
    assert sum(t["set"] == "breadth" for t in TOPICS.values()) == 43
    assert [k for k, t in TOPICS.items() if t["reverse"]] == [SCIENCE]
    for k, t in TOPICS.items():
        assert k == ingest.slug(t["statement"]) == re.sub(r"[^A-Za-z0-9]+", "_", t["statement"]).strip("_")
    assert TOPICS["Angels_are_real"]["statement"] == "Angels are real."
    assert TOPICS["Euthanasia_can_be_justified"]["set"] == "breadth"
    assert list(ALIASES) == list(ingest.SLOTS)


def test_fixture_is_in_the_raw_layout():
    files = sorted(FIXTURE.rglob("*.csv"))
    assert len(files) == 8 and sum(f.stat().st_size for f in files) < 60_000
    for f in files:
        rel = f.relative_to(FIXTURE).parts
        assert rel[0] in ("raw", "golden") and rel[1] in ("depth", "breadth") and len(rel) == 4
        assert re.fullmatch(rf"\d{{8}}_\d{{6}}_{re.escape(rel[2])}_[0-9A-HJKMNP-TV-Z]{{26}}\.csv", rel[3]), rel
        with f.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        assert tuple(rows[0]) == ingest.COLUMNS
        for r in rows[1:]:
            assert len(r) == 11
            for v in (r[0], r[8]):  # chat_round_order, sliderValue: floats as "1.0", nulls empty
                assert v == "" or re.fullmatch(r"\d\.0", v)
    golden = {f.name for f in FIXTURE.glob("golden/*/*/*.csv")}
    assert golden and golden <= {f.name for f in FIXTURE.glob("raw/*/*/*.csv")}


# ------------------------------------------------------------------------------------------ the fixture


def test_sessions_and_counts(parsed):
    assert parsed["warnings"] == []
    assert {k: parsed["counts"][k] for k in EXPECTED["counts"]} == EXPECTED["counts"]
    sessions = by(parsed["sessions"], "session_id")
    assert list(sessions) == sorted(EXPECTED["sessions"])
    for sid, exp in EXPECTED["sessions"].items():
        got = sessions[sid]
        assert {k: got[k] for k in exp} == exp, sid
        assert got["statement"] == TOPICS[got["topic_dir"]]["statement"]
        assert got["file"].startswith(f"{got['source']}/{got['topic_set']}/{got['topic_dir']}/")
        assert got["file"].endswith(f"_{sid}.csv") and (FIXTURE / got["file"]).is_file()


def test_incomplete_session_dropped_with_reason(parsed):
    drop = EXPECTED["dropped"]
    dropped = [s for s in parsed["sessions"] if not s["complete"]]
    assert [(s["session_id"], s["drop_reason"]) for s in dropped] == [(drop["session_id"], drop["reason"])]
    for table in ("participants", "tweets", "utterances"):
        assert drop["session_id"] not in {r["session_id"] for r in parsed[table]}


def test_opinions_are_slider_minus_midpoint(parsed):
    parts = by(parsed["participants"], "worker_id")
    assert {w: [p["o_init"], p["o_final"]] for w, p in parts.items()} == EXPECTED["opinions"]
    for w, text in EXPECTED["j_init"].items():  # two Initial Opinion rows: the later one counts
        assert parts[w]["j_init"] == text
    for p in parts.values():
        assert p["name"] == p["worker_id"][:5] and isinstance(p["j_final"], str)
    # reverse coding is the analysis' business: the raw o is kept here, the session says `reverse`
    reverse = {s["session_id"]: s["reverse"] for s in parsed["sessions"]}
    assert {p["session_id"] for p in parts.values() if reverse[p["session_id"]]} == {
        s for s, e in EXPECTED["sessions"].items() if e["reverse"] and e["complete"]
    }


def test_partner_schedule(parsed):
    tweets = parsed["tweets"]
    assert len(tweets) == EXPECTED["counts"]["tweets"]
    assert Counter((t["session_id"], t["worker_id"]) for t in tweets) == Counter(
        {(p["session_id"], p["worker_id"]): 3 for p in parsed["participants"]}
    )
    got = {}
    for t in tweets:
        got.setdefault(t["worker_id"], [None] * 3)[t["round"] - 1] = t["partner_id"][:5]
    assert got == EXPECTED["partners"]
    # the dyads of the utterances are the tweet pairs
    pairs = {(t["session_id"], t["round"], "|".join(sorted((t["worker_id"], t["partner_id"])))) for t in tweets}
    assert {(u["session_id"], u["round"], u["dyad"]) for u in parsed["utterances"]} == pairs


def test_merged_utterances(parsed):
    got = {}
    for u in parsed["utterances"]:
        got.setdefault(f"{u['session_id']}|{u['round']}|{u['dyad']}", []).append(u)
    assert set(got) == set(EXPECTED["utterances"])
    for key, exp in EXPECTED["utterances"].items():
        rows = got[key]
        assert [[u["speaker"][:5], u["text"], u["n_merged"], u["validity"]] for u in rows] == exp, key
        assert [u["k"] for u in rows] == list(range(1, len(rows) + 1))
        a, b = key.split("|")[2:]
        for u, nxt in zip(rows, rows[1:]):
            assert u["speaker"] != nxt["speaker"]  # speakers alternate after merging
            assert u["first_event_order"] < nxt["first_event_order"]
        for u in rows:
            assert {u["speaker"], u["partner"]} == {a, b}


def test_merge_branches(parsed):
    utt = parsed["utterances"]
    merged3 = [u for u in utt if u["n_merged"] == 3]
    assert len(merged3) == 1 and merged3[0]["validity"] == "VALID"  # INVALID "hi!" + 2 VALID parts
    assert any(u["text"] == "u watch football?" and u["validity"] == "INVALID" for u in utt)
    # an agent-round whose human utterances are all off-topic
    rounds = {}
    for u in utt:
        rounds.setdefault((u["session_id"], u["round"], u["speaker"]), set()).add(u["validity"])
    assert {"INVALID"} in rounds.values()
    # a dyad-round of exactly one message
    sizes = Counter((u["session_id"], u["round"], u["dyad"]) for u in utt)
    assert 1 in sizes.values()
    special = [u["text"] for u in utt if "\u2019" in u["text"]]
    assert len(special) == 1 and "\n" in special[0] and '"angels keep watch"' in special[0] and "," in special[0]


def test_mirrored_received_rows_not_double_counted(parsed):
    m = EXPECTED["mirrored"]
    assert parsed["counts"]["mirrored_rows_ignored"] == m["rows_ignored"] == EXPECTED["counts"]["mirrored_rows_ignored"]
    rows = [u for u in parsed["utterances"] if u["session_id"] == m["session_id"]]
    assert all(u["n_merged"] == 1 for u in rows) and len(rows) == 18
    rnd, dyad = m["received_only_dyad_round"]  # no message_sent rows: the received rows are the messages
    fallback = [u for u in rows if (u["round"], u["dyad"]) == (rnd, dyad)]
    assert len(fallback) == 3 and all(u["validity"] is None for u in fallback)
    assert parsed["counts"]["received_rows_used"] == 3


def test_shuffled_rows_are_ordered_by_event_order(parsed):
    sid = EXPECTED["shuffled_session"]
    path = FIXTURE / by(parsed["sessions"], "session_id")[sid]["file"]
    with path.open(newline="", encoding="utf-8") as fh:
        orders = [int(r["event_order"]) for r in csv.DictReader(fh)]
    assert orders != sorted(orders) and len(set(orders)) == len(orders)
    assert sorted(orders) != list(range(1, len(orders) + 1))  # gaps


def test_duplicated_tweet_takes_the_last_and_golden_wins(parsed):
    tweets = by(parsed["tweets"], "session_id", "round", "worker_id")
    for key, text in EXPECTED["tweets"].items():
        sid, rnd, w = key.split("|")
        assert tweets[(sid, int(rnd), w)]["text"] == text
    # the golden copy wins over the raw one (a cut-off export that alone would be incomplete)
    sid = next(s for s, e in EXPECTED["sessions"].items() if e["source"] == "golden")
    raw_only = ingest.parse(FIXTURE, TOPICS, ALIASES, sources=["raw"])
    s = by(raw_only["sessions"], "session_id")[sid]
    assert s["source"] == "raw" and not s["complete"] and s["drop_reason"].startswith("rounds 1, need 1, 2, 3")
    assert raw_only["counts"]["shadowed_files"] == 0
    both = ingest.parse(FIXTURE, TOPICS, ALIASES, sources=["raw", "golden"])
    assert by(both["sessions"], "session_id")[sid]["source"] == "raw"


def test_demographics(parsed):
    parts = by(parsed["participants"], "worker_id")
    for w, exp in EXPECTED["demographics"].items():
        assert json.loads(parts[w]["demographics"]) == exp
        assert parts[w]["demographics"] == json.dumps(exp, sort_keys=True)
    for p in parts.values():
        assert sorted(json.loads(p["demographics"])) == sorted(ingest.SLOTS)


# ------------------------------------------------------------------------------------------ warnings, errors


def session_copy(tmp_path: Path, topic_dir: str = SCIENCE, src: str = "01JPAQWNW0HB2T6YJ0MR9XP4KD") -> Path:
    """A fixture session copied into tmp_path/raw/depth/<topic_dir>/ (same file name)."""
    path = next(FIXTURE.glob(f"raw/depth/*/*_{src}.csv"))
    dest = tmp_path / "raw" / "depth" / topic_dir / path.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, dest)
    return dest


def rewrite(path: Path, fn) -> None:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    rows = fn(rows)
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)


def test_unknown_event_type_field_and_topic_warn(tmp_path, caplog):
    path = session_copy(tmp_path, "Unknown_topic_dir")
    worker = "5d7a9XP4KD"

    def edit(rows):
        posts = [r for r in rows if r[2] == "Post Opinion"]
        posts[0][2], posts[1][2], posts[2][2] = "Final Opinion", "post_opinion", "POST OPINION"
        for r in rows:
            if r[2] == "tweet" and r[0] == "1.0":
                r[2] = "Tweet"
        return rows + [
            ["", "900", "reaction", worker, "", "", "", "thumbs up", "", "", ""],
            ["", "901", "exit_survey", worker, "", "", "Country of origin", "usa", "", "", ""],
            ["", "902", "exit_survey", worker, "", "", "Race/Ethnicity", "asian", "", "", ""],
        ]

    rewrite(path, edit)
    with caplog.at_level("WARNING", logger="socsim.debate.ingest"):
        out = ingest.parse(tmp_path, TOPICS, ALIASES, allow_unknown_topics=True)  # test_debate_data.py: else stops
    rel = path.relative_to(tmp_path).as_posix()
    n = len(path.read_text(encoding="utf-8").splitlines())  # one row per line in this file
    assert out["warnings"] == [
        "unknown topic dir depth/Unknown_topic_dir: statement 'Unknown topic dir' (from the dir name), reverse false",
        f"unknown event_type 'reaction': 1 row(s) ignored (first at {rel} row {n - 2})",
        f"unknown exit_survey field 'Country of origin': 1 row(s) ignored (first at {rel} row {n - 1})",
    ]
    for w in out["warnings"]:
        assert w in caplog.text
    (s,) = out["sessions"]
    assert s["complete"] and s["statement"] == "Unknown topic dir" and s["reverse"] is False
    parts = by(out["participants"], "worker_id")
    assert [parts[w]["o_final"] for w in sorted(parts)] == [-1.5, 1.5, 2.5, -2.5]  # the aliases are Post Opinion
    assert json.loads(parts[worker]["demographics"])["ethnicity"] == "asian"  # a later answer wins; alias matched
    assert len(out["tweets"]) == 12


def set_cell(row_index: int, col: str, value: str):
    def fn(rows):
        rows[row_index][ingest.COLUMNS.index(col)] = value
        return rows

    return fn


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda rows: [r[:10] for r in rows], r"row 1 \(header\): missing column\(s\) validity"),
        (set_cell(5, "event_order", "seven"), r"row 6 \(line 6\): event_order 'seven' is not an integer"),
        (set_cell(3, "sliderValue", "strongly"), r"row 4 \(line 4\): sliderValue 'strongly' is not a number"),
        (set_cell(7, "event_order", ""), r"row 8 \(line 8\): event_order is empty"),
        (set_cell(9, "chat_round_order", "one"), r"row 10 \(line 10\): chat_round_order 'one' is not an integer"),
        (
            lambda rows: rows[:12] + [rows[12] + ["extra"]] + rows[13:],
            r"row 13 \(line 13\): 12 fields, the header has 11",
        ),
    ],
)
def test_malformed_file_names_file_and_row(tmp_path, edit, message):
    path = session_copy(tmp_path)
    rewrite(path, edit)
    rel = path.relative_to(tmp_path).as_posix()
    with pytest.raises(ValueError, match=re.escape(rel) + ": " + message):
        ingest.parse(tmp_path, TOPICS, ALIASES)


def test_unparseable_csv_names_file_and_row(tmp_path):
    path = session_copy(tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[4] = lines[4].replace(",,,,", ',,,,"unclosed ', 1)
    path.write_text("".join(lines), encoding="utf-8")
    rel = path.relative_to(tmp_path).as_posix()
    with pytest.raises(ValueError, match=re.escape(rel) + r": row 5 \(line 5\): the CSV does not parse"):
        ingest.parse(tmp_path, TOPICS, ALIASES)


def test_empty_root_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no session CSVs"):
        ingest.parse(tmp_path, TOPICS, ALIASES)


# ------------------------------------------------------------------------------------------ the Hub loader

REPO = "socsim-test/DEBATE_LLM"
COMMIT = "d736855" + "0" * 33


def hub_cache(root: Path) -> Path:
    """A Hub cache holding the fixture as a dataset snapshot at one commit (files = links to blobs)."""
    repo = root / ("datasets--" + REPO.replace("/", "--"))
    (repo / "blobs").mkdir(parents=True)
    for i, f in enumerate(sorted(FIXTURE.rglob("*.csv"))):
        blob = repo / "blobs" / f"{i:064x}"
        shutil.copyfile(f, blob)
        snap = repo / "snapshots" / COMMIT / f.relative_to(FIXTURE)
        snap.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, snap.parent), snap)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return root


FETCH = """
import json, sys, yaml
from socsim.debate import ingest
m = yaml.safe_load(open(sys.argv[4], encoding="utf-8"))
root, ident = ingest.fetch(sys.argv[1], None if sys.argv[2] == "-" else sys.argv[2], json.loads(sys.argv[3]))
out = ingest.parse(root, m["topics"], m["survey_aliases"])
print(json.dumps({"identity": ident, "root": str(root), "counts": out["counts"],
                  "sessions": [[s["session_id"], s["source"], s["complete"]] for s in out["sessions"]]}))
"""


def fetch_offline(cache: Path, repo: str, revision: str | None, **env) -> subprocess.CompletedProcess:
    e = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", **env}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            FETCH,
            repo,
            revision or "-",
            json.dumps(["raw/**", "golden/**"]),
            str(ROOT / "data" / "debate" / "topics.yaml"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=e,
    )


@pytest.mark.parametrize("revision", ["main", COMMIT, None])
def test_hub_dataset_loads_offline_from_the_hub_cache(tmp_path, revision):
    cache = hub_cache(tmp_path / "hub")
    out = fetch_offline(cache, REPO, revision, HF_TOKEN="hf_secret_never_written")
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["identity"] == {"repo": REPO, "revision": revision, "commit": COMMIT}
    assert Path(result["root"]).name == COMMIT
    assert {k: result["counts"][k] for k in EXPECTED["counts"]} == EXPECTED["counts"]
    assert {s: (src, c) for s, src, c in result["sessions"]} == {
        s: (e["source"], e["complete"]) for s, e in EXPECTED["sessions"].items()
    }
    assert "hf_secret_never_written" not in out.stdout + out.stderr


def test_hub_dataset_missing_is_a_clear_error(tmp_path):
    cache = hub_cache(tmp_path / "hub")
    out = fetch_offline(cache, "socsim-test/not-there", "main", HF_TOKEN="hf_secret_never_written")
    assert out.returncode != 0
    assert "HubFetchError: debate data: cannot fetch dataset socsim-test/not-there (revision main)" in out.stderr
    assert "hf_secret_never_written" not in out.stdout + out.stderr
