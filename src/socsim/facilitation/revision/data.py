"""Paper 000's revised study (arXiv 2503.16505v4): the authors' six-model release as the study's inputs.

The revision sits in the same repository as the paper-era release (dimits-ts/synthetic_moderation_experiments,
commit 4ecc4bfc, dataset licence CC-BY-SA 4.0). `read` turns a clone into setups, comments and scores rows:

- `data/discussions_output/main/<model>_<strategy>[.txt]/*.json` (720 discussions: 6 models x 4 conditions
  x 30) and `data/discussions_output/ablations/<model>_<strategy>.txt_<kind>/*.json` (1,080): the paper-era
  JSON shape (`id`, `users`, `user_prompts`, `moderator`, `moderator_prompt`, `ctx_length`, `logs`), each
  prompt a JSON object (`context`, `instructions`, `persona`). Every log entry is a row; the leading entries
  with model "hardcoded" are the seed (two comments of a human Change My View thread; none in `noseeds`).
- Folder names map to the study's names (MODELS: registry-style names of the paper's Table 1; STRATEGIES:
  the names of the paper's Table; ABLATIONS: conditions); a user is a troll when its instructions name one
  (the authors' rule: `prompt.str.contains("troll")`); a turn is silent when its text holds only quotes and
  white space (the authors' participation rule: the prompts say 'output ""' to stay silent).
- `data/eval_output/vmd.csv` and `ablation.csv` (`message_id, toxicity, error`): the released Perspective API
  scores, joined on the message id the authors' post-processing assigns (SynDisco 2.x
  `postprocessing.import_discussions`): md5 of "<discussion id>_<text>", so equal texts of one discussion
  share an id (and a score). Rows with an `error` are dropped, as the authors did (one is a repeated header
  line); every message without a score and every score without a message is counted. `score_rows` keeps how
  many released rows carry each id: the authors' inner join repeats a comment once per such row, which
  `authors_rows` rebuilds to refit their table exactly.

Anything that cannot be mapped stops the import (ReleaseError naming the file and field) before anything is
written. The scores are data, never recomputed: the Perspective API shuts down on 2026-12-31.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socsim.facilitation.release import REPOSITORY, ReleaseError, load_json, log_rows

COMMIT = "4ecc4bfc"  # the revision's commit (2026-03-03)
PAPER_ERA = "fde36171"  # the paper-era data's commit (facilitation.release): not the revision
LICENCE = "CC-BY-SA 4.0"
# The release's model prefixes -> registry-style names (the revised paper's Table 1: unsloth 4-bit builds).
MODELS = {
    "llama70b": "llama-3.1-70b",
    "llama8b": "llama-3.1-8b",
    "mistral24b": "mistral-small-24b",
    "mistral7b": "mistral-7b-v0.3",
    "qwen32b": "qwen2.5-32b",
    "qwen7b": "qwen2.5-7b",
}
# The paper's labels of the models (its tables and figures), by registry name.
MODEL_LABELS = {
    "llama-3.1-70b": "LLaMa-70B",
    "llama-3.1-8b": "LLaMa-8B",
    "mistral-small-24b": "Mistral-24B",
    "mistral-7b-v0.3": "Mistral-7B",
    "qwen2.5-32b": "Qwen-32B",
    "qwen2.5-7b": "Qwen-7B",
}
NO_FACILITATOR = "No Facilitator"
# The release's strategy folders -> the revised paper's names (its regression table's rows).
STRATEGIES = {
    "nomod": NO_FACILITATOR,
    "vanilla": "Minimal Instructions",
    "erulemaking": "Moderation Guidelines",
    "constructive_communications": "Constructive Communications",
}
MAIN = "main"
# Ablation suffixes -> (condition, turn taking, instructions, with_sdb, with_roles, seeded).
ABLATIONS = {
    "noinstructions": ("basic_instructions", "respond", "basic", True, True, True),
    "nosdbs": ("no_sdb", "respond", "full", False, True, True),
    "noseeds": ("no_seeds", "respond", "full", True, True, False),
    "notroll": ("no_trolls", "respond", "full", True, False, True),
    "random": ("tt_random", "random", "full", True, True, True),
    "roundrobin": ("tt_round_robin", "round_robin", "full", True, True, True),
}
MAIN_DESIGN = ("main", "respond", "full", True, True, True)
P_RESPOND = 0.4  # data/discussions_input/run_config.yml: respond_probability
UNSEEDED = -1  # the release's runs carry no seed
SCORE_FILES = {"main": "vmd.csv", "ablations": "ablation.csv"}
SILENT = re.compile(r'[\s"]*')
FOLDER = re.compile(r"^(?P<model>[a-z0-9]+)_(?P<strategy>[a-z_]+?)(?:\.txt)?(?:_(?P<kind>[a-z]+))?$")


def message_id(discussion_id: str, text: str) -> str:
    """The id SynDisco's post-processing gives a message (md5 of "<conversation id>_<text>")."""
    return hashlib.md5(f"{discussion_id}_{text}".encode()).hexdigest()


def is_silent(text: str) -> bool:
    return SILENT.fullmatch(text) is not None


@dataclass
class Imported:
    setups: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)


def data_folder(path: str | Path) -> Path:
    """The revision's `data` folder, from the clone's root or the folder itself."""
    p = Path(path)
    for cand in (p / "data", p):
        if (cand / "discussions_output" / "main").is_dir() and (cand / "eval_output").is_dir():
            return cand
    raise ReleaseError(
        f"{p}: not the revised SynDisco release (no data/discussions_output/main and data/eval_output): clone "
        f"https://github.com/{REPOSITORY} and check out {COMMIT}"
    )


def _folder(path: Path, part: str) -> tuple[str, str, tuple[str, str, str, bool, bool, bool]]:
    """(registry model, strategy, design) of a discussions folder, or ReleaseError naming what is unknown."""
    m = FOLDER.match(path.name)
    if m is None or m["model"] not in MODELS or m["strategy"] not in STRATEGIES:
        raise ReleaseError(
            f"{path}: not a folder of the revised release (<model>_<strategy>[.txt][_<ablation>]; models "
            f"{', '.join(MODELS)}; strategies {', '.join(STRATEGIES)}); is the clone at {COMMIT}?"
        )
    kind = m["kind"]
    if (part == "main") != (kind is None):
        raise ReleaseError(f"{path}: {'an ablation folder under main' if kind else 'no ablation named'} ({part})")
    if kind is not None and kind not in ABLATIONS:
        raise ReleaseError(f"{path}: unknown ablation {kind!r} (known: {', '.join(ABLATIONS)})")
    return MODELS[m["model"]], STRATEGIES[m["strategy"]], ABLATIONS[kind] if kind else MAIN_DESIGN


def _files(data: Path) -> Iterator[tuple[Path, str, str, str, tuple[str, str, str, bool, bool, bool]]]:
    """(file, part, model, strategy, design) of every released discussion, main then ablations, sorted."""
    for part in SCORE_FILES:
        root = data / "discussions_output" / part
        if part == "main" and not root.is_dir():
            raise ReleaseError(f"{root}: missing (the main study's discussions)")
        for folder in sorted(p for p in root.glob("*") if p.is_dir()):
            model, strategy, design = _folder(folder, part)
            for f in sorted(folder.glob("*.json")):
                yield f, part, model, strategy, design


def _prompt(path: Path, where: str, text: Any) -> dict[str, Any]:
    try:
        p = json.loads(text)
        ok = isinstance(p, dict) and isinstance(p.get("instructions"), str) and isinstance(p.get("persona"), dict)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ReleaseError(f"{path}: {where}: expected a JSON object with instructions and persona")
    return dict(p)


def _checked(path: Path, strategy: str, model: str, seeded: bool) -> tuple[dict[str, Any], dict[str, str], int]:
    """A discussion file read and checked: its JSON, each user's role (troll when its instructions name
    one: the authors' rule) and its number of seed comments. ReleaseError names the file and the field."""
    d = load_json(path, ("id", "users", "user_prompts", "moderator", "moderator_prompt", "ctx_length", "logs"))
    logs = d["logs"]
    if not isinstance(logs, list) or not logs or any(not isinstance(e, dict) for e in logs):
        raise ReleaseError(f"{path}: logs: expected a list of objects")
    if not isinstance(d["user_prompts"], list) or len(d["users"]) != len(d["user_prompts"]):
        raise ReleaseError(f"{path}: users and user_prompts differ in length")
    if not isinstance(d["ctx_length"], int):
        raise ReleaseError(f"{path}: ctx_length {d['ctx_length']!r} is not an integer")
    if (d["moderator"] is not None) == (strategy == NO_FACILITATOR):
        raise ReleaseError(f"{path}: moderator is {d['moderator']!r} in a {strategy} folder")
    if d["moderator"] is not None:
        _prompt(path, "moderator_prompt", d["moderator_prompt"])
    roles = {}
    for u, text in zip(d["users"], d["user_prompts"]):
        p = _prompt(path, f"user_prompts of {u!r}", text)
        if p["persona"].get("username") != u:  # the authors match a message's prompt by the persona's username
            raise ReleaseError(f"{path}: user_prompts: persona.username {p['persona'].get('username')!r} is not {u!r}")
        roles[u] = "troll" if "troll" in p["instructions"] else "normal_user"
    seeds = 0
    while seeds < len(logs) and logs[seeds].get("model") == "hardcoded":
        seeds += 1
    if seeded != (seeds > 0):
        raise ReleaseError(f"{path}: logs: {seeds} seed comments (model 'hardcoded') where seeded is {seeded}")
    answered = {e.get("model") for e in logs[seeds:]}
    expected = next(k for k, v in MODELS.items() if v == model)
    if answered - {expected}:
        raise ReleaseError(f"{path}: logs[].model: {sorted(map(str, answered))} in a folder of {expected}")
    return d, roles, seeds


def _discussion(
    path: Path, model: str, strategy: str, design: tuple[str, str, str, bool, bool, bool]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    condition, turn_taking, instructions, with_sdb, with_roles, seeded = design
    d, roles, seeds = _checked(path, strategy, model, seeded)
    logs, conv, moderated = d["logs"], str(d["id"]), d["moderator"] is not None
    rows = log_rows(path, d, roles, {"model": model, "strategy": strategy, "condition": condition}, seeds, is_silent)
    topic = "\n\n".join(str(e.get("text", "")) for e in logs[:seeds])
    setup = {
        "discussion_id": conv,
        "condition": condition,
        "model": model,
        "strategy": strategy,
        "turn_taking": turn_taking,
        "p_respond": P_RESPOND,
        "context_h": d["ctx_length"],
        "user_turns": sum(not r["is_facilitator"] and not r["is_seed"] for r in rows),
        "instructions": instructions,
        "with_sdb": with_sdb,
        "with_roles": with_roles,
        "topic_id": hashlib.sha256(topic.encode()).hexdigest()[:12],
        "topic": topic,
        "participants": [
            {"persona_id": u, "username": u, "role": roles[u], "system_prompt": d["user_prompts"][i]}
            for i, u in enumerate(d["users"])
        ],
        "facilitator_prompt": d["moderator_prompt"] if moderated else None,
        "seed": UNSEEDED,
    }
    return setup, rows


def read_scores(path: Path) -> tuple[dict[str, list[float]], dict[str, int]]:
    """The released scores of one file: message id -> its toxicity values (one per released row without an
    error), and the counts of the rows dropped. A value that is not a number stops, naming the line."""
    if not path.is_file():
        raise ReleaseError(f"{path}: missing (the released Perspective API scores: message_id, toxicity, error)")
    out: dict[str, list[float]] = {}
    dropped = Counter[str]()
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"message_id", "toxicity", "error"} - set(reader.fieldnames or ())
        if missing:
            raise ReleaseError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
        for line, row in enumerate(reader, start=2):
            if row["error"]:
                header = row["message_id"] == "message_id"
                dropped["repeated_header_lines" if header else "rows_with_error"] += 1
                continue
            try:
                value = float(row["toxicity"])
            except (TypeError, ValueError):
                value = math.nan
            if not 0.0 <= value <= 1.0:
                raise ReleaseError(f"{path}: line {line}: toxicity {row['toxicity']!r} is not a score in [0, 1]")
            out.setdefault(row["message_id"], []).append(value)
    return out, dict(dropped)


def _scores(comments: list[dict[str, Any]], released: dict[str, list[float]], path: Path) -> list[dict[str, Any]]:
    """One row per comment: its message id and order (SynDisco's: consecutive equal ids share an order),
    its score and how many released rows carry its id (0: no score). Equal ids must carry equal scores."""
    out, last, order = [], ("", ""), 0
    for c in comments:
        mid = message_id(c["discussion_id"], c["text"])
        if last[0] != c["discussion_id"]:
            order = 0
        if (c["discussion_id"], mid) != last:
            order += 1
        last = (c["discussion_id"], mid)
        values = released.get(mid, [])
        if len(set(values)) > 1:
            raise ReleaseError(f"{path}: message_id {mid}: {len(set(values))} different toxicity values")
        out.append(
            {
                "discussion_id": c["discussion_id"],
                "turn": c["turn"],
                "message_id": mid,
                "message_order": order,
                "toxicity": values[0] if values else None,
                "score_rows": len(values),
            }
        )
    return out


def read(path: str | Path) -> Imported:
    """Every discussion and released score of a revision clone (module docstring)."""
    data = data_folder(path)
    out = Imported()
    by_part: dict[str, list[dict[str, Any]]] = {part: [] for part in SCORE_FILES}
    ids: set[str] = set()
    for f, part, model, strategy, design in _files(data):
        setup, rows = _discussion(f, model, strategy, design)
        if setup["discussion_id"] in ids:
            raise ReleaseError(f"{f}: id {setup['discussion_id']} appears twice in the release")
        ids.add(setup["discussion_id"])
        out.setups.append(setup)
        out.comments += rows
        by_part[part] += rows
    scores: dict[str, Any] = {}
    for part, name in SCORE_FILES.items():
        if not by_part[part]:
            continue
        score_path = data / "eval_output" / name
        released, dropped = read_scores(score_path)
        rows = _scores(by_part[part], released, score_path)
        out.scores += rows
        matched = {r["message_id"] for r in rows}
        scores[name] = {
            "released_rows": sum(map(len, released.values())) + sum(dropped.values()),
            **dropped,
            "messages": len(rows),
            "messages_without_score": sum(r["score_rows"] == 0 for r in rows),
            "generated_messages_without_score": sum(
                r["score_rows"] == 0 and not c["is_seed"] for r, c in zip(rows, by_part[part])
            ),
            "scored_ids_without_message": len(set(released) - matched),
        }
    out.counts = {
        "discussions": dict(sorted(Counter(s["condition"] for s in out.setups).items())),
        "discussions_per_model_strategy_main": dict(
            sorted(Counter(f"{s['model']} / {s['strategy']}" for s in out.setups if s["condition"] == MAIN).items())
        ),
        "comments": len(out.comments),
        "silent_turns": sum(r["is_silent"] for r in out.comments),
        "seed_comments": sum(r["is_seed"] for r in out.comments),
        "scores": scores,
    }
    return out


def authors_rows(comments: list[dict[str, Any]], scores: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of the authors' regression, as their inner join on message id gives them: each generated
    user comment (seeds and facilitator turns dropped) repeated once per released score row of its id,
    with SynDisco's message order."""
    by_key = {(s["discussion_id"], s["turn"]): s for s in scores}
    rows = []
    for c in comments:
        if c["is_seed"] or c["is_facilitator"]:
            continue
        s = by_key[(c["discussion_id"], c["turn"])]
        rows += [{**c, "message_order": s["message_order"], "toxicity": s["toxicity"]}] * s["score_rows"]
    return rows
