"""The DEBATE human data (spec debate.md section 1): fetch the Hub dataset snapshot, parse its CSVs.

Layout: `<root>/<source>/{depth,breadth}/<TOPIC_DIR>/<YYYYMMDD_HHMMSS>_<TOPIC_NAME>_<ULID26>.csv`, one
four-person session per file, sources tried in order (`golden`, `raw`, `submit_data`): a session
(ULID) found under several sources is taken from the first. Eleven columns; rows are ordered by
`event_order`, not by their place in the file. Events: Initial Opinion, tweet, message_sent,
message_received (mirrors of message_sent, used only for a dyad-round without message_sent rows),
Post Opinion (alias Final Opinion), exit_survey (field = key, text = answer).

Unknown event types, unknown survey fields and unknown Breadth topic dirs are warned about, never
fatal; incomplete sessions are kept in `sessions` with `complete` False and the reason. Complete means
what Tables 3/4/9/10 need (spec 1.5: 4 participants with an Initial Opinion, 3 rounds of tweets, perfect
matchings covering all 6 pairs); whether all 4 gave a Post Opinion is the separate `post_opinion` flag,
which only Sect. 6 requires. Ingest does not guess: a malformed file (missing column, non-numeric
number, a sliderValue outside 1..6, unparseable CSV) raises ValueError naming the file and row (row 1 =
the header; with multi-line texts the physical line is given as well); so does an unknown Depth topic
dir (it decides reverse coding; `allow_unknown_topics` reads it as not reverse-coded, with a warning)
and a data set without one complete session. What each source (golden/, raw/, ...) contributes is
counted (`counts["by_source"]`, `data_counts`), and each session names the later sources whose copy
of it was not used (`shadowed_sources`).

The data's licence forbids redistribution: nothing parsed here may be committed.
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from socsim.io import DataUnavailableError

log = logging.getLogger(__name__)

COLUMNS = (
    "chat_round_order",
    "event_order",
    "event_type",
    "worker_id",
    "sender_id",
    "recipient_id",
    "field",
    "text",
    "sliderValue",
    "agreement_level",
    "validity",
)
SLOTS = (
    "age",
    "gender",
    "education",
    "ethnicity",
    "income",
    "party_id",
    "ideology",
    "children_school_status",
    "urbanicity",
    "marital_status",
    "bible_view",
    "evangelical",
    "religious_affiliation",
    "occupation",
)
SOURCES = ("golden", "raw", "submit_data")
TOPIC_SETS = ("depth", "breadth")
UNKNOWN = "unknown"
MIDPOINT = 3.5  # slider 1..6 -> o = slider - 3.5 in -2.5..2.5
SLIDER = (1.0, 6.0)  # the documented range of sliderValue (1 = Certainly disagree .. 6 = Certainly agree)

INIT, TWEET, SENT, RECEIVED, POST, SURVEY = (
    "Initial Opinion",
    "tweet",
    "message_sent",
    "message_received",
    "Post Opinion",
    "exit_survey",
)
EVENT_TYPES = {
    "initial opinion": INIT,
    "tweet": TWEET,
    "message sent": SENT,
    "message received": RECEIVED,
    "post opinion": POST,
    "final opinion": POST,
    "exit survey": SURVEY,
}
_NUMERIC_NULLS = {"", "nan", "none", "null", "na", "n/a"}
_ULID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")


class HubFetchError(DataUnavailableError):
    """The dataset snapshot could be neither downloaded nor found in the local Hub cache."""


# ----------------------------------------------------------------------------------------------- fetch


def fetch(
    repo_id: str, revision: str, allow_patterns: list[str] | None, local_dir: str | None = None
) -> tuple[Path, dict[str, Any]]:
    """The dataset snapshot (downloaded once into the Hub cache, or into `local_dir`) and its identity
    {repo, revision, commit}. HF_TOKEN comes from the environment only; HF_HUB_OFFLINE=1 reads the
    cache alone. Never `datasets.load_dataset`: its auto-config loses the path = topic/session identity."""
    from huggingface_hub import snapshot_download

    token: str | Literal[False] = os.environ.get("HF_TOKEN") or False
    try:
        folder = Path(
            snapshot_download(
                repo_id=repo_id,
                repo_type="dataset",
                revision=revision,
                allow_patterns=allow_patterns,
                local_dir=local_dir,
                token=token,
            )
        )
    except Exception as exc:  # noqa: BLE001 - Hub, HTTP-client and file errors alike: name the repository
        detail = f"{type(exc).__name__}: {exc}"
        if token:
            detail = detail.replace(token, "***")
        raise HubFetchError(
            f"debate data: cannot fetch dataset {repo_id} (revision {revision}) from the Hugging "
            f"Face Hub or find it in the local Hub cache: {detail}"
        ) from None
    commit = _commit(folder, repo_id, revision, local_dir, token)
    return folder, {"repo": repo_id, "revision": revision, "commit": commit}


def _commit(
    folder: Path, repo_id: str, revision: str | None, local_dir: str | None, token: str | Literal[False]
) -> str | None:
    """The commit the revision resolved to: the cache stores a snapshot under snapshots/<commit>/."""
    if local_dir is None and folder.parent.name == "snapshots":
        return folder.name
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    # local_dir downloads keep one metadata file per file, its first line the commit
    meta = Path(folder) / ".cache" / "huggingface" / "download"
    commits = set()
    for m in meta.rglob("*.metadata") if meta.is_dir() else ():
        try:
            commits.add(m.read_text(encoding="utf-8").splitlines()[0].strip())
        except (OSError, IndexError):
            continue
    if len(commits) == 1:
        return commits.pop()
    try:
        from huggingface_hub import HfApi

        return HfApi(token=token).dataset_info(repo_id, revision=revision).sha
    except Exception as exc:  # noqa: BLE001 - offline or unreachable: the commit stays unknown
        log.warning("debate data: commit of %s (revision %s) unknown: %s", repo_id, revision, type(exc).__name__)
        return None


# ----------------------------------------------------------------------------------------------- parse


def parse(
    root: Path,
    topics: dict[str, Any],
    aliases: dict[str, Any],
    sources: tuple[str, ...] | list[str] = SOURCES,
    allow_unknown_topics: bool = False,
) -> dict[str, Any]:
    """Sessions, participants, tweets and merged utterances of every session CSV under `root`.

    `topics` maps topic-dir slug -> {statement, set, reverse} (topics.yaml `topics:`), `aliases` maps each
    of the 14 demographic slots to its accepted exit_survey `field` keys (topics.yaml `survey_aliases:`).
    Returns {"sessions", "participants", "tweets", "utterances": [row dicts], "warnings": [str],
    "post_opinion_missing": {session: why}, "counts": {...}}; participants, tweets and utterances come
    from complete sessions only. Raises ValueError when no session is complete."""
    root = Path(root)
    topics = topics.get("topics", topics) if isinstance(topics.get("topics"), dict) else topics
    aliases = aliases.get("survey_aliases", aliases) if isinstance(aliases.get("survey_aliases"), dict) else aliases
    p = _Parser(root, topics, _alias_index(aliases), allow_unknown_topics)
    files = p.discover(list(sources))
    out: dict[str, Any] = {"sessions": [], "participants": [], "tweets": [], "utterances": []}
    post_missing: dict[str, str] = {}
    for f in files:
        why = p.session(f, out)
        if why:
            post_missing[f["session_id"]] = why
    p.finish()
    out["sessions"].sort(key=lambda r: r["session_id"])
    out["participants"].sort(key=lambda r: (r["session_id"], r["worker_id"]))
    out["tweets"].sort(key=lambda r: (r["session_id"], r["round"], r["worker_id"]))
    out["utterances"].sort(key=lambda r: (r["session_id"], r["round"], r["dyad"], r["k"]))
    dropped = [s for s in out["sessions"] if not s["complete"]]
    if len(dropped) == len(out["sessions"]):
        reasons = Counter(r for s in dropped for r in dict.fromkeys(_reason_kinds(s["drop_reason"])))
        shown = "; ".join(f"{r} ({n} session(s))" for r, n in reasons.most_common(5))
        raise ValueError(
            f"debate data: none of the {len(dropped)} session(s) under {root}/{{{','.join(sources)}}} is complete "
            f"(4 participants with Initial Opinion, 3 rounds of tweets, perfect matchings over all 6 pairs): "
            f"nothing to simulate. Most common reasons: {shown}"
        )
    counts = {
        "files": len(files),
        **p.counts,
        "sessions": len(out["sessions"]),
        "complete": len(out["sessions"]) - len(dropped),
        "dropped": len(dropped),
        "complete_without_post_opinion": sum(s["complete"] and not s["post_opinion"] for s in out["sessions"]),
        "participants": len(out["participants"]),
        "tweets": len(out["tweets"]),
        "utterances": len(out["utterances"]),
        "by_source": by_source(out["sessions"], p.found, list(sources)),
    }
    if dropped:
        log.warning("debate data: dropped %d of %d sessions as incomplete", len(dropped), len(out["sessions"]))
    out["warnings"] = p.warnings
    out["post_opinion_missing"] = post_missing
    out["counts"] = counts
    return out


def _reason_kinds(reason: str | None) -> list[str]:
    """A drop reason's parts without the worker ids (": w1, w2" cut), so that sessions can be tallied."""
    return [part.split(":")[0].strip() for part in (reason or "").split("; ") if part]


def by_source(sessions: list[dict[str, Any]], found: Counter[str], sources: list[str]) -> dict[str, dict[str, int]]:
    """What each source folder contributed: session files found there, sessions taken from it (and how
    many of those are complete), and files not used because an earlier source held the same session."""
    out = {}
    for src in sources:
        mine = [s for s in sessions if s["source"] == src]
        out[src] = {
            "files": found[src],
            "sessions": len(mine),
            "complete": sum(s["complete"] for s in mine),
            "shadowed": sum(src in s["shadowed_sources"] for s in sessions),
        }
    return out


TABLE1 = ("topics", "messages", "on_topic_messages", "participants", "groups")  # paper.yaml table1 keys


def data_counts(
    sessions: list[dict[str, Any]],
    utterances: list[dict[str, Any]],
    data: str,
    paper: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Table 1's counts of the data that was read, per topic set (and `all`) x source (and `all`):
    topics, sessions (groups) incl. incomplete ones, complete ones, those with Post Opinion for all 4,
    participants, raw messages and those the data set labels VALID, merged utterances of the complete
    sessions, and files shadowed by an earlier source. `paper` (paper.yaml `table1`) fills the paper's
    numbers beside ours on the (topic set, `all`) rows; `data` names the data that was read."""
    n_utt = Counter(u["session_id"] for u in utterances)
    sets = [ts for ts in TOPIC_SETS if any(s["topic_set"] == ts for s in sessions)]
    srcs = sorted({s["source"] for s in sessions} | {x for s in sessions for x in s["shadowed_sources"]})
    rows = []
    for ts in [*sets, "all"]:
        for src in [*srcs, "all"]:
            in_set = [s for s in sessions if ts in ("all", s["topic_set"])]
            mine = [s for s in in_set if src in ("all", s["source"])]
            shadowed = sum(len(s["shadowed_sources"]) if src == "all" else src in s["shadowed_sources"] for s in in_set)
            if not mine and not shadowed:
                continue
            ref = (paper or {}).get(ts) if src == "all" else None
            rows.append(
                {
                    "data": data,
                    "topic_set": ts,
                    "source": src,
                    "topics": len({(s["topic_set"], s["topic_dir"]) for s in mine}),
                    "sessions": len(mine),
                    "complete": sum(s["complete"] for s in mine),
                    "post_opinion": sum(s["complete"] and s["post_opinion"] for s in mine),
                    "dropped": sum(not s["complete"] for s in mine),
                    "participants": len({w for s in mine for w in s["workers"]}),  # people, not seats
                    "messages": sum(s["n_messages"] for s in mine),
                    "messages_valid": sum(s["n_messages_valid"] for s in mine),
                    "utterances": sum(n_utt[s["session_id"]] for s in mine if s["complete"]),
                    "shadowed": shadowed,
                    **{f"paper_{k}": (ref or {}).get(k) for k in TABLE1},
                }
            )
    return rows


def data_label(identity: dict[str, Any]) -> str:
    """Which data was read, in words: `fixture`, `local <path>`, `hub <repo>@<commit or revision>`."""
    if identity.get("source") == "hub":
        return f"hub {identity.get('repo')}@{identity.get('commit') or identity.get('revision')}"
    if identity.get("source") == "local":
        return f"local {identity.get('path')}"
    return str(identity.get("source"))


def slug(text: str) -> str:
    """Every run of non-alphanumeric characters as one underscore, trimmed: the topic-dir form."""
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")


def _key(text: str) -> str:
    return slug(text).lower()


def _alias_index(aliases: dict[str, Any]) -> dict[str, str]:
    index = {}
    for slot in SLOTS:
        index[_key(slot)] = slot
    for slot, keys in aliases.items():
        if slot not in SLOTS:
            raise ValueError(f"survey_aliases: unknown slot {slot!r}; the slots are {', '.join(SLOTS)}")
        for k in keys or ():
            other = index.get(_key(str(k)))
            if other not in (None, slot):
                raise ValueError(f"survey_aliases: field {k!r} is listed for both {other} and {slot}")
            index[_key(str(k))] = slot
    return index


def _event_type(value: str) -> str | None:
    return EVENT_TYPES.get(re.sub(r"[\s_\-]+", " ", value.strip().lower()))


Dyad = tuple[int, frozenset[str]]  # (round, the two workers)


@dataclass
class _Events:
    """One session's rows by kind (rows are in event order: a later one of a worker replaces an earlier)."""

    init: dict[str, dict[str, Any]] = field(default_factory=dict)  # worker -> Initial Opinion row
    post: dict[str, dict[str, Any]] = field(default_factory=dict)  # worker -> Post Opinion row
    tweets: dict[tuple[int, str], dict[str, Any]] = field(default_factory=dict)  # (round, worker) -> row
    survey: defaultdict[str, dict[str, str]] = field(
        default_factory=lambda: defaultdict(dict)
    )  # worker -> slot -> answer
    sent: defaultdict[Dyad, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    received: defaultdict[Dyad, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    people: set[str] = field(default_factory=set)
    rounds: set[int] = field(default_factory=set)


class _Parser:
    def __init__(self, root: Path, topics: dict[str, Any], aliases: dict[str, str], allow_unknown_topics: bool = False):
        self.root = root
        self.topics = topics
        self.allow_unknown_topics = allow_unknown_topics
        self.found: Counter[str] = Counter()  # source -> session files found there
        self.topic_index = {_key(k): v for k, v in topics.items()}
        self.aliases = aliases
        self.warnings: list[str] = []
        self.counts: Counter[str] = Counter(shadowed_files=0, mirrored_rows_ignored=0, received_rows_used=0)
        self._skipped: dict[str, list[Any]] = {}  # what was skipped -> [rows, first location]
        self._topic_cache: dict[tuple[str, str], tuple[str, bool]] = {}

    # -- warnings ---------------------------------------------------------------------------------
    def warn(self, message: str) -> None:
        self.warnings.append(message)
        log.warning("debate data: %s", message)

    def skip(self, what: str, where: str) -> None:
        """One warning per kind of skipped row, with the count and the first place (see finish)."""
        entry = self._skipped.setdefault(what, [0, where])
        entry[0] += 1

    def finish(self) -> None:
        for what, (n, where) in sorted(self._skipped.items()):
            self.warn(f"{what}: {n} row(s) ignored (first at {where})")

    # -- files ------------------------------------------------------------------------------------
    def discover(self, sources: list[str]) -> list[dict[str, Any]]:
        seen: dict[str, dict[str, Any]] = {}
        files = []
        for source in sources:
            base = self.root / source
            if not base.is_dir():
                continue
            for set_dir in sorted(d for d in base.iterdir() if d.is_dir()):
                if set_dir.name.lower() not in TOPIC_SETS:
                    self.warn(f"ignoring {set_dir.relative_to(self.root).as_posix()}/: not depth/ or breadth/")
                    continue
                for topic_dir in sorted(d for d in set_dir.iterdir() if d.is_dir()):
                    for path in sorted(topic_dir.glob("*.csv")):
                        rel = path.relative_to(self.root).as_posix()
                        sid = path.stem[-26:]
                        if not _ULID.fullmatch(sid):
                            self.warn(
                                f"{rel}: the file name does not end in a 26-character ULID; the whole name "
                                f"is the session id"
                            )
                            sid = path.stem
                        self.found[source] += 1
                        if sid in seen:
                            if seen[sid]["source"] == source:
                                self.warn(f"{rel}: session {sid} also in {seen[sid]['file']}; the first is used")
                            else:
                                self.counts["shadowed_files"] += 1
                                if source not in seen[sid]["shadowed_sources"]:
                                    seen[sid]["shadowed_sources"].append(source)
                            continue
                        seen[sid] = f = {
                            "session_id": sid,
                            "source": source,
                            "topic_set": set_dir.name.lower(),
                            "topic_dir": topic_dir.name,
                            "path": path,
                            "file": rel,
                            "shadowed_sources": [],
                        }
                        files.append(f)
        if not files:
            raise ValueError(
                f"debate data: no session CSVs under {self.root}/{{{','.join(sources)}}}/{{depth,breadth}}/<topic>/"
            )
        return files

    def topic(self, topic_set: str, topic_dir: str, rel: str) -> tuple[str, bool]:
        if (topic_set, topic_dir) not in self._topic_cache:
            t = self.topics.get(topic_dir) or self.topic_index.get(_key(topic_dir))
            if t is None and topic_set == "depth" and not self.allow_unknown_topics:
                known = sorted(k for k, v in self.topics.items() if v.get("set") == "depth")
                raise ValueError(
                    f"{rel}: unknown Depth topic dir {topic_dir!r}: the topics file does not list it, and a Depth "
                    f"topic decides reverse coding in Sect. 6, so ingest does not guess. Add it to "
                    f"data/debate/topics.yaml (statement, set: depth, reverse), or set "
                    f"debate.data.allow_unknown_topics: true to read it as not reverse-coded with the dir name as "
                    f"statement. Known Depth dirs: {', '.join(known)}"
                )
            if t is None:
                statement = topic_dir.replace("_", " ")
                self.warn(
                    f"unknown topic dir {topic_set}/{topic_dir}: statement {statement!r} (from the dir name), "
                    f"reverse false"
                )
                self._topic_cache[(topic_set, topic_dir)] = (statement, False)
            else:
                if t.get("set") not in (None, topic_set):
                    self.warn(f"topic dir {topic_set}/{topic_dir} is listed under set {t['set']!r} in the topics")
                self._topic_cache[(topic_set, topic_dir)] = (str(t["statement"]), bool(t.get("reverse", False)))
        return self._topic_cache[(topic_set, topic_dir)]

    def read(self, path: Path, rel: str) -> list[dict[str, Any]]:
        rows = []
        rownum, line = 1, 0
        try:
            with path.open(newline="", encoding="utf-8-sig") as fh:
                reader = csv.reader(fh, strict=True)
                try:
                    header = next(reader)
                except StopIteration:
                    raise ValueError(f"{rel}: row 1: empty file, no header") from None
                header = [h.strip() for h in header]
                missing = [c for c in COLUMNS if c not in header]
                if missing:
                    raise ValueError(f"{rel}: row 1 (header): missing column(s) {', '.join(missing)}")
                at = {c: header.index(c) for c in COLUMNS}
                while True:
                    line = reader.line_num
                    try:
                        rec = next(reader)
                    except StopIteration:
                        break
                    rownum += 1
                    if not rec or not any(c.strip() for c in rec):
                        continue
                    if len(rec) != len(header):
                        raise ValueError(
                            f"{rel}: row {rownum} (line {reader.line_num}): {len(rec)} fields, the "
                            f"header has {len(header)}"
                        )
                    rows.append(self.record({c: rec[i] for c, i in at.items()}, rel, rownum, reader.line_num))
        except csv.Error as exc:
            raise ValueError(f"{rel}: row {rownum + 1} (line {line + 1}): the CSV does not parse: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"{rel}: row {rownum + 1}: not UTF-8 text: {exc}") from None
        return rows

    @staticmethod
    def number(raw: str, column: str, rel: str, rownum: int, line: int, integral: bool = False) -> float | None:
        s = raw.strip()
        if s.lower() in _NUMERIC_NULLS:
            return None
        try:
            x = float(s)
        except ValueError:
            x = math.nan
        if not math.isfinite(x) or (integral and not x.is_integer()):
            kind = "an integer" if integral else "a number"
            raise ValueError(f"{rel}: row {rownum} (line {line}): {column} {raw!r} is not {kind}")
        return x

    def record(self, raw: dict[str, str], rel: str, rownum: int, line: int) -> dict[str, Any]:
        eo = self.number(raw["event_order"], "event_order", rel, rownum, line, integral=True)
        if eo is None:
            raise ValueError(f"{rel}: row {rownum} (line {line}): event_order is empty")
        rnd = self.number(raw["chat_round_order"], "chat_round_order", rel, rownum, line, integral=True)
        slider = self.number(raw["sliderValue"], "sliderValue", rel, rownum, line)
        if slider is not None and not SLIDER[0] <= slider <= SLIDER[1]:
            raise ValueError(
                f"{rel}: row {rownum} (line {line}): sliderValue {raw['sliderValue']!r} is outside the scale "
                f"{SLIDER[0]:g}..{SLIDER[1]:g} (1 = Certainly disagree .. 6 = Certainly agree)"
            )
        etype = _event_type(raw["event_type"])
        if etype is None:
            self.skip(f"unknown event_type {raw['event_type'].strip()!r}", f"{rel} row {rownum}")
        validity = raw["validity"].strip().upper() or None
        if validity not in (None, "VALID", "INVALID"):
            self.skip(f"unknown validity label {raw['validity'].strip()!r} (read as no label)", f"{rel} row {rownum}")
            validity = None
        return {
            "round": int(rnd) if rnd is not None else None,
            "event_order": int(eo),
            "type": etype,
            "worker": raw["worker_id"].strip() or None,
            "sender": raw["sender_id"].strip() or None,
            "recipient": raw["recipient_id"].strip() or None,
            "field": raw["field"].strip() or None,
            "text": raw["text"],
            "slider": slider,
            "validity": validity,
            "row": rownum,
            "where": f"{rel} row {rownum}",
        }

    # -- one session ------------------------------------------------------------------------------
    def session(self, f: dict[str, Any], out: dict[str, Any]) -> str | None:
        """Parse one session file into `out`; returns why it lacks Post Opinions (None: all 4 have one)."""
        rel, sid = f["file"], f["session_id"]
        statement, reverse = self.topic(f["topic_set"], f["topic_dir"], rel)
        ev = self.events(sorted(self.read(f["path"], rel), key=lambda r: (r["event_order"], r["row"])))
        reasons = self.check(ev.init, ev.post, ev.tweets, ev.sent, ev.received, ev.rounds)
        complete = not reasons
        post_reasons = self.check_post(ev.init, ev.post)
        messages = [m for key in set(ev.sent) | set(ev.received) for m in (ev.sent.get(key) or ev.received[key])]
        out["sessions"].append(
            {
                "session_id": sid,
                "topic_set": f["topic_set"],
                "topic_dir": f["topic_dir"],
                "statement": statement,
                "reverse": reverse,
                "source": f["source"],
                "file": rel,
                "complete": complete,
                "drop_reason": "; ".join(reasons) or None,
                "post_opinion": not post_reasons,
                "n_participants": len(ev.people),
                "workers": sorted(ev.people),
                "n_messages": len(messages),
                "n_messages_valid": sum(m["validity"] == "VALID" for m in messages),
                "shadowed_sources": list(f["shadowed_sources"]),
            }
        )
        if not complete:
            log.info("debate data: dropped session %s (%s): %s", sid, rel, "; ".join(reasons))
            return None  # dropped: its missing Post Opinions matter to no table
        self.rows(sid, ev, out)
        return "; ".join(post_reasons) or None

    def events(self, rows: list[dict[str, Any]]) -> _Events:
        """A session's rows (in event order) sorted by kind: opinions, survey answers, tweets, messages."""
        ev = _Events()
        for r in rows:
            ev.people.update(x for x in (r["worker"], r["sender"], r["recipient"]) if x)
            t = r["type"]
            if t in (INIT, POST, SURVEY) and not r["worker"]:
                self.skip(f"{t} rows without worker_id", r["where"])
            elif t == INIT:
                ev.init[r["worker"]] = r  # rows are in event order: the last one counts
            elif t == POST:
                ev.post[r["worker"]] = r
            elif t == SURVEY:
                slot = self.aliases.get(_key(r["field"] or ""))
                if slot is None:
                    self.skip(f"unknown exit_survey field {r['field'] or ''!r}", r["where"])
                else:
                    ev.survey[r["worker"]][slot] = r["text"].strip()
            elif t == TWEET:
                who = r["worker"] or r["sender"]
                if r["round"] is None or not who:
                    self.skip("tweet rows without chat_round_order or worker", r["where"])
                    continue
                ev.rounds.add(r["round"])
                ev.tweets[(r["round"], who)] = r
            elif t in (SENT, RECEIVED):
                snd = r["sender"] or (r["worker"] if t == SENT else None)
                rcp = r["recipient"] or (r["worker"] if t == RECEIVED else None)
                if r["round"] is None or not snd or not rcp or snd == rcp:
                    self.skip(f"{t} rows without chat_round_order, sender or recipient", r["where"])
                    continue
                ev.rounds.add(r["round"])
                key = (r["round"], frozenset((snd, rcp)))
                (ev.sent if t == SENT else ev.received)[key].append({**r, "snd": snd, "rcp": rcp})
        return ev

    def rows(self, sid: str, ev: _Events, out: dict[str, Any]) -> None:
        """A complete session's participants, tweets and merged utterances, into `out`."""
        for w, r in ev.init.items():
            po = ev.post.get(w)
            demo = {slot: ev.survey[w].get(slot) or UNKNOWN for slot in SLOTS}
            out["participants"].append(
                {
                    "session_id": sid,
                    "worker_id": w,
                    "name": w[:5],
                    "o_init": r["slider"] - MIDPOINT,
                    "j_init": r["text"],
                    "o_final": po["slider"] - MIDPOINT if po else None,
                    "j_final": po["text"] if po else None,
                    "demographics": json.dumps(demo, sort_keys=True),
                }
            )
        for (rnd, w), r in ev.tweets.items():
            out["tweets"].append(
                {
                    "session_id": sid,
                    "round": rnd,
                    "worker_id": w,
                    "partner_id": r["recipient"],
                    "text": r["text"],
                    "event_order": r["event_order"],
                }
            )
        for key in sorted(set(ev.sent) | set(ev.received), key=lambda k: (k[0], sorted(k[1]))):
            msgs = ev.sent.get(key)
            if msgs:
                self.counts["mirrored_rows_ignored"] += len(ev.received.get(key, ()))
            else:
                msgs = ev.received[key]
                self.counts["received_rows_used"] += len(msgs)
            out["utterances"] += merge(sid, key[0], msgs)

    @staticmethod
    def check(
        init: dict[str, dict[str, Any]],
        post: dict[str, dict[str, Any]],
        tweets: dict[tuple[int, str], dict[str, Any]],
        sent: dict[tuple[int, frozenset[str]], list[dict[str, Any]]],
        received: dict[tuple[int, frozenset[str]], list[dict[str, Any]]],
        rounds: set[int],
    ) -> list[str]:
        """Why a session is incomplete (spec 1.5), in a fixed order; [] when complete."""
        reasons = []
        members = set(init)
        if len(members) != 4:
            reasons.append(f"{len(members)} participants with Initial Opinion, need 4")
        for w in sorted(members):
            if init[w]["slider"] is None:
                reasons.append(f"Initial Opinion without sliderValue: {w}")
        speakers = {w for (_, w) in tweets} | {w for (_, dyad) in list(sent) + list(received) for w in dyad}
        if speakers - members:
            reasons.append(f"no Initial Opinion: {', '.join(sorted(speakers - members))}")
        if rounds != {1, 2, 3}:
            reasons.append(f"rounds {', '.join(map(str, sorted(rounds))) or 'none'}, need 1, 2, 3")
        for r in (1, 2, 3):
            for w in sorted(members):
                t = tweets.get((r, w))
                if t is None:
                    reasons.append(f"no tweet in round {r}: {w}")
                elif not t["recipient"]:
                    reasons.append(f"tweet without recipient_id in round {r}: {w}")
        pairs_all, matched = set(), True
        for r in sorted(rounds & {1, 2, 3}):
            pairs = {frozenset((w, t["recipient"])) for (rr, w), t in tweets.items() if rr == r and t["recipient"]}
            pairs |= {d for (rr, d) in list(sent) + list(received) if rr == r}
            covered = [w for p in pairs for w in p]
            if not (
                len(pairs) == 2 and all(len(p) == 2 for p in pairs) and len(covered) == 4 and set(covered) == members
            ):
                matched = False
                shown = ", ".join("|".join(sorted(p)) for p in sorted(pairs, key=sorted))
                reasons.append(f"round {r} is not a perfect matching of 2 dyads: {shown}")
            pairs_all |= pairs
        if matched and rounds == {1, 2, 3} and len(members) == 4 and len(pairs_all) != 6:
            reasons.append("the 3 rounds do not cover all 6 pairs")
        return reasons

    @staticmethod
    def check_post(init: dict[str, dict[str, Any]], post: dict[str, dict[str, Any]]) -> list[str]:
        """Why not every member has a final opinion (Sect. 6 needs it; Tables 3/4/9/10 do not); [] if all do."""
        reasons = []
        for w in sorted(init):
            if w not in post:
                reasons.append(f"no Post Opinion: {w}")
            elif post[w]["slider"] is None:
                reasons.append(f"Post Opinion without sliderValue: {w}")
        return reasons


def merge(session_id: str, rnd: int, msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive messages of one sender (in event order) joined by a single space: utterances k = 1..
    Validity: VALID if any part is VALID, else INVALID if any part is INVALID, else None."""
    groups: list[list[dict[str, Any]]] = []
    for m in msgs:
        if groups and groups[-1][-1]["snd"] == m["snd"]:
            groups[-1].append(m)
        else:
            groups.append([m])
    dyad = "|".join(sorted({msgs[0]["snd"], msgs[0]["rcp"]}))
    rows = []
    for k, g in enumerate(groups, 1):
        labels = {m["validity"] for m in g}
        rows.append(
            {
                "session_id": session_id,
                "round": rnd,
                "dyad": dyad,
                "k": k,
                "speaker": g[0]["snd"],
                "partner": g[0]["rcp"],
                "text": " ".join(t for t in (m["text"].strip() for m in g) if t),
                "first_event_order": g[0]["event_order"],
                "n_merged": len(g),
                "validity": "VALID" if "VALID" in labels else "INVALID" if "INVALID" in labels else None,
            }
        )
    return rows
