"""Paper 000's humans: the human discussions and the human toxicity its authors released, read and checked before
anything is written (a wrong commit, a missing sheet, a workbook of another layout, an unreadable file stop the
import with the file and what is wrong).

- The paper-era release (dimits-ts/synthetic_moderation_experiments at fde36171) holds `data/datasets/main/
  human.xlsx`: comments of the Regulation Room platform (Cornell e-Rulemaking Initiative, CeRI), a Key sheet and
  one sheet per rulemaking topic (RELEASE_SHEETS). `read_workbook` reads every topic sheet once, by its header
  names (the sheets order their columns differently; the authors' reader, by column position, reads one sheet twice
  and another never). A discussion is a post: POST ID where the sheet has it, else its TOPIC and SUBTOPIC (the
  authors' unit); COMMENT PARENT gives each comment's reply and thread (its top-level comment). Comments are in
  COMMENT ID order (the platform numbers them as they are posted); HTML tags and the workbook's `_x000D_` escapes
  are removed; empty and quote-only comments are dropped (the authors' rule), and counted.
- A workbook of the same layout whose Key sheet starts with FIXTURE_MARK is socsim's synthetic fixture
  (`data/facilitation/humans_fixture.xlsx`), named "fixture (synthetic)" wherever it is judged.
- A CSV or Parquet with discussion_id and text: a user's own human discussions, named by its file.
- The revised release (4ecc4bfc) holds `data/eval_output/cmv_awry2.csv`: Perspective toxicity of human Change My
  View comments (Conversations Gone Awry), the scorer of every model's comments; the texts and their discussions
  are not released (`read_toxicity`). Its `divergence_*.tex` print the authors' JS of each model to those humans
  (`read_printed`): inputs not released, so socsim shows them as printed.
"""

from __future__ import annotations

import csv
import html
import math
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socsim.facilitation import release

WORKBOOK = Path("data/datasets/main/human.xlsx")
TOXICITY_FILE = Path("data/eval_output/cmv_awry2.csv")
PAPER_ERA = "fde36171"
KEY = "Key"
RELEASE_SHEETS = (
    "Distracted Driving & Texting",
    "Airline Passenger Rights",
    "Electronic On-Board Recorders",
    "Air Travel Accessibility",
    "Home Mortgage",
    "Consumer Debt Collection",
    "Health IT",
    "Social Media in Rulemaking",
    "NYC Congestion",
    "Proposed Move NY Fair Plan",
)
CERI = "Any use of the comment data from CeRI"
LICENCE = (
    "CeRI (Cornell e-Rulemaking Initiative) comment data: any use must acknowledge the source and link the "
    "archived website (the workbook's Key sheet)"
)
FIXTURE_MARK = "socsim fixture"
REGULATION_ROOM = "Regulation Room, paper-era release"
FIXTURE = "fixture (synthetic)"
REQUIRED = ("COMMENT ID", "USER LOGIN", "COMMENT", "COMMENT PARENT")
POST = ("POST ID",)
TOPIC = ("TOPIC", "SUBTOPIC")
TOXICITY_HEADER = ["message_id", "toxicity", "error"]
CMV = "Change My View (Conversations Gone Awry), revised release"
_TAG = re.compile(r"<[^>]+>")
_QUOTES = re.compile(r'[\s"]*')


class HumansError(ValueError):
    """The human data cannot be read as declared (the message names the file and what is wrong)."""


@dataclass
class Humans:
    comments: list[dict[str, Any]] = field(default_factory=list)  # the HUMANS schema's rows
    source: dict[str, Any] = field(default_factory=dict)  # the artifact's data_source (name: the scorecard's label)
    counts: dict[str, Any] = field(default_factory=dict)


def clean(text: object) -> str:
    """A comment's text without HTML tags, entities, the workbook's `_x000D_` escapes and runs of whitespace."""
    s = "" if text is None else str(text)
    s = html.unescape(_TAG.sub(" ", s.replace("_x000D_", " ")))
    return " ".join(s.split())


def _id(value: object, where: str) -> int:
    try:
        f = float(str(value).strip())
    except ValueError:
        raise HumansError(f"{where}: {value!r} is not a comment id") from None
    if not math.isfinite(f) or f != int(f):
        raise HumansError(f"{where}: {value!r} is not a comment id")
    return int(f)


def _post(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split()) if value is not None else ""


def _sheet(path: Path, name: str, rows: list[tuple[Any, ...]]) -> tuple[list[dict[str, Any]], Counter[str]]:
    """One topic sheet's comments (module docstring), with what was dropped."""
    where = f"{path}: sheet {name!r}"
    if not rows:
        raise HumansError(f"{where}: empty (no header row)")
    header = [str(h).strip() if h is not None else "" for h in rows[0]]
    col = {h: i for i, h in enumerate(header) if h}
    key = POST if POST[0] in col else TOPIC if all(t in col for t in TOPIC) else None
    missing = [c for c in REQUIRED if c not in col]
    if key is None or missing:
        need = missing + ([] if key else ["POST ID (or TOPIC and SUBTOPIC)"])
        raise HumansError(f"{where}: not the release's layout: no column(s) {', '.join(need)} (header: {header})")
    seen: dict[int, dict[str, Any]] = {}
    dropped: Counter[str] = Counter()
    for r, row in enumerate(rows[1:], start=2):
        if all(v is None or str(v).strip() == "" for v in row):
            continue
        cell = {h: (row[i] if i < len(row) else None) for h, i in col.items()}
        if all(cell[c] is None or str(cell[c]).strip() == "" for c in ("COMMENT ID", "COMMENT")):
            dropped["rows without a comment id or text (a totals row)"] += 1
            continue
        cid = _id(cell["COMMENT ID"], f"{where}, row {r}, COMMENT ID")
        if cid in seen:
            raise HumansError(f"{where}, row {r}: COMMENT ID {cid} appears twice")
        parent = cell["COMMENT PARENT"]
        pid = 0 if parent is None or str(parent).strip() == "" else _id(parent, f"{where}, row {r}, COMMENT PARENT")
        post = " / ".join(_post(cell[k]) for k in key)
        if not post.strip(" /"):
            raise HumansError(f"{where}, row {r}: no {' or '.join(key)}: the comment belongs to no post")
        text = clean(cell["COMMENT"])
        if _QUOTES.fullmatch(text):
            dropped["empty or quote-only comments"] += 1
            continue
        seen[cid] = {"post": post, "parent": pid, "speaker": str(cell["USER LOGIN"] or ""), "text": text}
    out = []
    for cid in sorted(seen):
        c = seen[cid]
        root, hops = cid, 0
        while seen[root]["parent"] in seen and hops <= len(seen):
            root, hops = seen[root]["parent"], hops + 1
        if c["parent"] and c["parent"] not in seen:
            dropped["replies to a comment not in the sheet (kept, as the top of their thread)"] += 1
        out.append(
            {
                "discussion_id": f"{name} / {c['post']}",
                "comment_id": f"{name} / {cid}",
                "parent_id": f"{name} / {c['parent']}" if c["parent"] in seen else None,
                "thread_id": f"{name} / {root}",
                "speaker": c["speaker"],
                "text": c["text"],
                "sheet": name,
            }
        )
    return out, dropped


def _load(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    import openpyxl

    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise HumansError(f"{path}: not a readable Excel workbook ({type(exc).__name__}: {exc})") from None
    try:
        return {ws.title: list(ws.iter_rows(values_only=True)) for ws in wb.worksheets}
    finally:
        wb.close()


def read_workbook(path: str | Path, sheets: tuple[str, ...] | None = None) -> Humans:
    """The human discussions of a workbook of the release's layout; `sheets`: the topic sheets it must hold
    (the release's), each read once; None: every sheet but the Key."""
    path = Path(path)
    if not path.is_file():
        raise HumansError(f"{path}: no such workbook")
    book = _load(path)
    if KEY not in book:
        raise HumansError(f"{path}: not the release's layout: no {KEY!r} sheet (sheets: {list(book)})")
    topics = [s for s in book if s != KEY]
    if sheets is not None:
        missing, extra = [s for s in sheets if s not in book], [s for s in topics if s not in sheets]
        if missing or extra:
            raise HumansError(
                f"{path}: the release's workbook has the sheets {list(sheets)}; "
                + "; ".join(
                    x for x in (f"missing {missing}" if missing else "", f"unknown {extra}" if extra else "") if x
                )
            )
    key_text = " ".join(str(v) for row in book[KEY][:3] for v in row if v is not None)
    name = FIXTURE if key_text.startswith(FIXTURE_MARK) else f"Regulation Room, {path.name}" if CERI in key_text else ""
    if not name:
        raise HumansError(f"{path}: its Key sheet is neither CeRI's (the release) nor socsim's fixture")
    comments: list[dict[str, Any]] = []
    dropped: Counter[str] = Counter()
    per_sheet = {}
    for s in topics:
        rows, d = _sheet(path, s, book[s])
        comments += rows
        dropped += d
        per_sheet[s] = len(rows)
    if not comments:
        raise HumansError(f"{path}: no comment in any topic sheet")
    turn: Counter[str] = Counter()
    for c in comments:
        c["turn"] = turn[c["discussion_id"]]
        turn[c["discussion_id"]] += 1
    counts = {
        "sheets": per_sheet,
        "discussions": len(turn),
        "comments": len(comments),
        "threads": len({c["thread_id"] for c in comments}),
        "dropped": dict(dropped),
    }
    licence = LICENCE if CERI in key_text else "synthetic (socsim's fixture): no people"
    return Humans(comments, {"source": "workbook", "name": name, "path": str(path), "licence": licence}, counts)


def read_table(path: Path) -> Humans:
    """A user's human discussions: a CSV or Parquet with discussion_id and text (one row per comment, in order)."""
    import pandas as pd

    df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    missing = {"discussion_id", "text"} - set(df.columns)
    if missing:
        raise HumansError(f"{path}: human reference lacks column(s) {sorted(missing)}")
    rows = []
    turn: Counter[str] = Counter()
    df = df[df["text"].notna() & ~df["text"].astype(str).str.fullmatch(r'[\s"]*')]  # empty and quote-only: dropped
    for i, (d, t) in enumerate(zip(df["discussion_id"].astype(str), df["text"])):
        rows.append(
            {
                "discussion_id": d,
                "comment_id": str(i),
                "parent_id": None,
                "thread_id": d,
                "speaker": "",
                "text": str(t),
                "sheet": "",
                "turn": turn[d],
            }
        )
        turn[d] += 1
    source = {"source": "table", "name": path.name, "path": str(path), "licence": "the user's"}
    return Humans(rows, source, {"discussions": len(turn), "comments": len(rows)})


def _clone_data(path: str | Path) -> Path:
    p = Path(path)
    if not (p / WORKBOOK).is_file():
        raise HumansError(f"{p}: no {WORKBOOK}: not a clone of https://github.com/{release.REPOSITORY} at {PAPER_ERA}")
    return p / "data"


def read(path: str | Path | None, revision: str | None = PAPER_ERA) -> Humans | None:
    """The humans `facilitation.analysis.human_reference` names (module docstring), or None when it names none.
    A folder is a clone of the paper-era release, its commit checked against `revision`."""
    if not path:
        return None
    p = Path(path)
    if p.is_dir():
        try:
            commit = release.revision(p, revision, folder=_clone_data)
        except release.ReleaseError as exc:
            raise HumansError(str(exc)) from None
        h = read_workbook(p / WORKBOOK, RELEASE_SHEETS)
        h.source = {**h.source, "source": "syndisco_release", "name": REGULATION_ROOM, **commit}
        return h
    if not p.is_file():
        raise HumansError(f"facilitation.analysis.human_reference not found: {p}")
    if p.suffix == ".xlsx":
        return read_workbook(p)
    if p.suffix in (".csv", ".parquet"):
        return read_table(p)
    raise HumansError(f"{p}: human_reference is a release clone, an .xlsx workbook, or a .csv/.parquet table")


def read_toxicity(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The revised release's human comment toxicity (`cmv_awry2.csv`: message_id, toxicity, error): one row per
    comment, toxicity None where the scorer failed; and its counts. Neither texts nor discussions are in it."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header != TOXICITY_HEADER:
                raise HumansError(f"{path}: header {header}, expected {TOXICITY_HEADER}")
            rows: list[dict[str, Any]] = []
            for n, rec in enumerate(reader, start=2):
                if len(rec) != 3:
                    raise HumansError(f"{path}, line {n}: {len(rec)} fields, expected 3")
                mid, tox, err = rec
                try:
                    value = float(tox) if tox.strip() and not err.strip() else None
                except ValueError:
                    value = float("nan")
                if value is not None and not 0.0 <= value <= 1.0:
                    raise HumansError(f"{path}, line {n}: toxicity {tox!r} is not a score in [0, 1]")
                rows.append({"message_id": mid, "toxicity": value, "error": err or None})
    except OSError as exc:
        raise HumansError(f"{path}: not readable ({exc})") from None
    if not rows:
        raise HumansError(f"{path}: no scored comment")
    scored: list[float] = [r["toxicity"] for r in rows if r["toxicity"] is not None]
    ids = Counter(r["message_id"] for r in rows)
    counts = {
        "comments": len(rows),
        "scored": len(scored),
        "unscored": len(rows) - len(scored),
        "repeated_ids": sum(1 for v in ids.values() if v > 1),
        "mean": sum(scored) / len(scored) if scored else None,
    }
    return rows, counts


_ROW = re.compile(r"^(.*?)\s*\\\\\s*$")


def read_printed(folder: str | Path) -> list[dict[str, Any]]:
    """The authors' printed JS divergences to the humans (`divergence_<dimension>.tex` of the revised release's
    `data/eval_output`): one row per (dimension, condition, model), as printed."""
    out: list[dict[str, Any]] = []
    for f in sorted(Path(folder).glob("divergence_*.tex")):
        lines = f.read_text(encoding="utf-8").splitlines()
        try:
            head = next(i for i, s in enumerate(lines) if s.strip().startswith("Model &"))
            mid, end = (
                next(i for i, s in enumerate(lines) if s.strip() == tag) for tag in ("\\midrule", "\\bottomrule")
            )
        except StopIteration:
            raise HumansError(f"{f}: not the authors' table (no 'Model &' header, \\midrule or \\bottomrule)") from None
        models = [m.strip() for m in _ROW.sub(r"\1", lines[head]).split("&")[1:]]
        for s in lines[mid + 1 : end]:
            cells = [c.strip() for c in _ROW.sub(r"\1", s).split("&")]
            if len(cells) != len(models) + 1:
                raise HumansError(f"{f}: row {s!r} has {len(cells) - 1} values for {len(models)} models")
            for m, v in zip(models, cells[1:]):
                out.append(
                    {
                        "dimension": f.stem.removeprefix("divergence_"),
                        "condition": cells[0],
                        "model": m,
                        "js_printed": float(v),
                    }
                )
    return out
