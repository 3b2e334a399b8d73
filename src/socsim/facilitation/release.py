"""Paper 000's own data: SynDisco's released discussions and annotations as the study's inputs.

The authors released what their models wrote (repository dimits-ts/synthetic_moderation_experiments;
the paper's version at commit fde36171): one JSON per discussion under
`data/discussions_output/{main/<strategy>,ablation/<kind>/<variant>}/` (id, users, user_prompts,
moderator, moderator_prompt, ctx_length, logs [{name, text, model}], the seed opinion as logs[0] with
model "hardcoded") and one JSON per discussion x annotator under `data/annotation_output/<part>/`
(conv_id, annotator_prompt, logs [[text, "Toxicity=k\\nArgumentQuality=m"], ...] in the discussion's log
order). `read` turns a release folder into the study's setups, comments and annotations rows:

- a discussion's turn is its log index (the seed is turn 0, `is_seed`); ratings join their comment on
  (discussion id, turn), never on text, and the text must agree at every position;
- strategies, models, roles (from each user prompt's special instructions) and conditions map to the
  study's names (FOLDERS, MODELS, ROLES, ABLATIONS); an empty text is a silent turn (the release's rule:
  its prompts say "write an empty string" to stay silent);
- annotators are kept as personas (id: a hash of the persona's traits);
- what the study has no place for (the annotator ablation without sociodemographics) is counted and left
  out; anything else that cannot be mapped stops the import, naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from socsim.facilitation.setups import prompt_hash
from socsim.facilitation.simulate import FACILITATOR

REPOSITORY = "dimits-ts/synthetic_moderation_experiments"

# The authors' strategy folders -> the paper's (and the study's) strategy names.
FOLDERS = {
    "no_moderator": "No Moderator",
    "vanilla": "No Instructions",
    "collective_constitution": "Rules Only",
    "erulemaking": "Regulation Room",
    "constructive_communications": "Constructive Communications",
    "moderation_game": "Moderation Game",
}
# The release's model strings -> the registry names params.paper.yaml gives the paper's models.
MODELS = {
    "llama-3.1-70b-4bit": "llama-3.1-70b",
    "mistral-nemo-4bit": "mistral-nemo-12b",
    "qwen2.5-32b-4bit": "qwen2.5-32b",
}
# A user prompt's special instructions -> role, by the words they hold, checked in this order as the
# authors' own analysis does ("community" first); empty: a normal user.
ROLES = {"community": "community_veteran", "troll": "troll"}
# Ablation folders -> (condition, turn taking, instructions, with_sdb, with_roles), as setups.conditions.
ABLATIONS = {
    "turn_taking/random": ("tt_random", "random", "full", True, True),
    "turn_taking/round_robin": ("tt_round_robin", "round_robin", "full", True, True),
    "prompts/basic_instructions": ("basic_instructions", "respond", "basic", True, True),
    "prompts/no_roles": ("no_roles", "respond", "full", True, False),
    "prompts/no_sdb": ("no_sdb", "respond", "full", False, True),
}
# Rated parts: main -> the main discussions; no_instructions_toxicity -> the basic-prompt ablation.
RATED = ("main", "no_instructions_toxicity")
# Annotation parts the study has no place for, and why.
LEFT_OUT = {"vanilla_no_sdb": "the annotator ablation (annotators without sociodemographics)"}
# The paper's turn taking as it describes it (the released main study ran a rule that never let the
# previous user reply: the analysis shows the data's own rate beside this one).
PAPER_TURN_TAKING = ("respond", 0.4)
UNSEEDED = -1  # the release's runs carry no seed
# An answer's labels, wherever they stand in it (one answer adds an explanation after them).
TOXICITY = re.compile(r"Toxicity\s*=\s*(\d+)")
QUALITY = re.compile(r"ArgumentQuality\s*=\s*(\d+)")
TRAITS = re.compile(r"Your traits:(.*?)Your instructions:", re.S)
SPECIAL = re.compile(r"special_instructions:(.*?), personality_characteristics:", re.S)


class ReleaseError(ValueError):
    """The release folder holds something the import cannot map (the message names the file and field)."""


@dataclass
class Imported:
    setups: list[dict[str, Any]] = field(default_factory=list)
    comments: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    annotators: dict[str, str] = field(default_factory=dict)  # annotator id -> the persona's traits
    annotator_models: list[str] = field(default_factory=list)
    left_out: dict[str, int] = field(default_factory=dict)  # what the study has no place for -> files
    counts: dict[str, Any] = field(default_factory=dict)


def data_folder(path: str | Path) -> Path:
    """The release's `data` folder, from the repository's root or the folder itself."""
    p = Path(path)
    for cand in (p / "data", p):
        if (cand / "discussions_output").is_dir() and (cand / "annotation_output").is_dir():
            return cand
    raise ReleaseError(
        f"{p}: not a SynDisco release (no data/discussions_output and data/annotation_output): clone "
        f"https://github.com/{REPOSITORY} and check out the paper's commit"
    )


def revision(
    path: str | Path, expected: str | None, folder: Callable[[str | Path], Path] = data_folder
) -> dict[str, Any]:
    """The release's revision: its clone's commit, checked against `expected` (a prefix); a folder that
    is not the root of a git clone is taken as the expected revision, unverified. `folder` finds the
    release's data folder (the paper-era release's by default)."""
    root = folder(path).parent.resolve()  # the clone's root holds data/
    git = ["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"]
    out = subprocess.run(git, capture_output=True, text=True).stdout.split()
    # a folder inside another repository (e.g. a copy in a project) is no clone of the release
    commit = out[1] if len(out) == 2 and Path(out[0]).resolve() == root else None
    if commit is None:
        return {"repository": REPOSITORY, "expected": expected, "commit": None, "verified": False}
    if expected and not commit.startswith(expected):
        raise ReleaseError(
            f"{path} is at commit {commit[:12]}, not facilitation.data.revision {expected}: the repository's later "
            f"revisions hold other discussions; run `git -C {path} checkout {expected}` (or change the revision)"
        )
    return {"repository": REPOSITORY, "expected": expected, "commit": commit, "verified": bool(expected)}


def load_json(path: Path, fields: tuple[str, ...]) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReleaseError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ReleaseError(f"{path}: expected a JSON object")
    missing = [f for f in fields if f not in data]
    if missing:
        raise ReleaseError(f"{path}: missing field(s) {', '.join(missing)}")
    return data


def _role(path: Path, prompt: str, user: str) -> str:
    m = SPECIAL.search(prompt)
    if m is None:
        raise ReleaseError(f"{path}: user_prompts of {user!r}: no special_instructions to read the role from")
    text = m.group(1).strip()
    if not text:
        return "normal_user"
    role = next((r for word, r in ROLES.items() if word in text.lower()), None)
    if role is None:
        raise ReleaseError(f"{path}: user_prompts of {user!r}: special_instructions {text[:60]!r} name no known role")
    return role


def _discussion_files(data: Path) -> Iterator[tuple[Path, str, tuple[str, str, str, bool, bool]]]:
    """(file, strategy folder or None, condition) of every released discussion, main then ablations."""
    main = data / "discussions_output" / "main"
    if not main.is_dir():
        raise ReleaseError(f"{main}: missing (the main study's discussions)")
    for folder in sorted(p for p in main.iterdir() if p.is_dir()):
        if folder.name not in FOLDERS:
            raise ReleaseError(f"{folder}: unknown strategy folder (known: {', '.join(FOLDERS)})")
        for f in sorted(folder.glob("*.json")):
            yield f, folder.name, ("main", PAPER_TURN_TAKING[0], "full", True, True)
    ablation = data / "discussions_output" / "ablation"
    for kind in sorted(p for p in ablation.glob("*/*") if p.is_dir()):
        key = f"{kind.parent.name}/{kind.name}"
        if key not in ABLATIONS:
            raise ReleaseError(f"{kind}: unknown ablation folder (known: {', '.join(ABLATIONS)})")
        for f in sorted(kind.glob("*.json")):
            yield f, "", ABLATIONS[key]


def _model(path: Path, logs: list[dict[str, Any]]) -> str:
    models = {entry.get("model") for entry in logs[1:]}
    if len(models) != 1:
        raise ReleaseError(f"{path}: logs[].model: expected one model after the seed, found {sorted(map(str, models))}")
    (model,) = models
    if model not in MODELS:
        raise ReleaseError(f"{path}: logs[].model {model!r} is not a known model (known: {', '.join(MODELS)})")
    return MODELS[model]


def _discussion(
    path: Path, folder: str, condition: tuple[str, str, str, bool, bool], prompts: dict[str, str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    d = load_json(path, ("id", "users", "user_prompts", "moderator", "moderator_prompt", "ctx_length", "logs"))
    logs = d["logs"]
    if not isinstance(logs, list) or len(logs) < 2 or any(not isinstance(e, dict) for e in logs):
        raise ReleaseError(f"{path}: logs: expected the seed and at least one comment, as objects")
    if logs[0].get("model") != "hardcoded":
        raise ReleaseError(f"{path}: logs[0].model is {logs[0].get('model')!r}, not the seed's 'hardcoded'")
    if len(d["users"]) != len(d["user_prompts"]):
        raise ReleaseError(f"{path}: users and user_prompts differ in length")
    name, turn_taking, instructions, with_sdb, with_roles = condition
    moderated = d["moderator"] is not None
    if folder:
        strategy = FOLDERS[folder]
        if moderated:
            prompts.setdefault(d["moderator_prompt"], strategy)
    else:  # an ablation: its facilitator's prompt is one of the main study's strategies
        found = prompts.get(d["moderator_prompt"]) if moderated else FOLDERS["no_moderator"]
        if found is None:
            raise ReleaseError(f"{path}: moderator_prompt is no main-study strategy's prompt")
        strategy = found
    model = _model(path, logs)
    roles = {u: _role(path, p, u) for u, p in zip(d["users"], d["user_prompts"])}
    system = dict(zip(d["users"], d["user_prompts"]))
    participants = [{"persona_id": u, "username": u, "role": roles[u], "system_prompt": system[u]} for u in d["users"]]
    setup = {
        "discussion_id": d["id"],
        "condition": name,
        "model": model,
        "strategy": strategy,
        "turn_taking": turn_taking,
        "p_respond": PAPER_TURN_TAKING[1],
        "context_h": int(d["ctx_length"]),
        "user_turns": 0,
        "instructions": instructions,
        "with_sdb": with_sdb,
        "with_roles": with_roles,
        "topic_id": hashlib.sha256(str(logs[0].get("text", "")).encode()).hexdigest()[:12],
        "topic": str(logs[0].get("text", "")),
        "participants": participants,
        "facilitator_prompt": d["moderator_prompt"] if moderated else None,
        "seed": UNSEEDED,
    }
    rows = log_rows(path, d, roles, {"model": model, "strategy": strategy, "condition": name})
    setup["user_turns"] = sum(not r["is_facilitator"] and not r["is_seed"] for r in rows)
    return setup, rows


def log_rows(
    path: Path,
    d: dict[str, Any],
    roles: dict[str, str],
    labels: dict[str, str],
    seeds: int = 1,
    silent: Callable[[str], bool] = lambda text: not text.strip(),
) -> list[dict[str, Any]]:
    """A released discussion's log as comments rows: one per entry, its turn the log index; the first `seeds`
    entries are the seed; `silent` says which texts are silent turns (no position); `labels` holds the rows'
    model, strategy and condition. A speaker who is neither a user (`roles`) nor the moderator stops it."""
    moderated = d["moderator"] is not None
    system = dict(zip(d["users"], d["user_prompts"]))
    rows, position = [], 0
    for turn, entry in enumerate(d["logs"]):
        speaker, text = entry.get("name"), entry.get("text")
        if not isinstance(text, str) or not isinstance(speaker, str):
            raise ReleaseError(f"{path}: logs[{turn}]: name and text must be strings")
        is_fac = moderated and speaker == d["moderator"]
        if not is_fac and speaker not in roles:
            raise ReleaseError(f"{path}: logs[{turn}].name {speaker!r} is neither a user nor the moderator")
        quiet = silent(text)
        rows.append(
            {
                "discussion_id": str(d["id"]),
                "turn": turn,
                "position": None if quiet else position,
                "speaker_id": FACILITATOR if is_fac else speaker,
                "speaker_name": speaker,
                "role": FACILITATOR if is_fac else roles[speaker],
                "is_facilitator": is_fac,
                "is_silent": quiet,
                "is_seed": turn < seeds,
                "text": text,
                **{k: labels[k] for k in ("model", "strategy", "condition")},
                "prompt_hash": prompt_hash(d["moderator_prompt"] if is_fac else system[speaker]),
                "completion_tokens": 0,  # not in the release
            }
        )
        position += not quiet
    return rows


def annotator_id(prompt: str) -> tuple[str, str]:
    """(id, traits) of an annotator persona: its traits' hash, so one persona has one id in every file."""
    m = TRAITS.search(prompt)
    traits = (m.group(1) if m else prompt).strip()
    return "syndisco-" + hashlib.sha256(traits.encode("utf-8")).hexdigest()[:10], traits


def _ratings(path: Path, texts: dict[str, list[str]], out: Imported) -> None:
    a = load_json(path, ("conv_id", "annotator_prompt", "logs"))
    conv = a["conv_id"]
    if conv not in texts:
        raise ReleaseError(f"{path}: conv_id {conv!r} is no imported discussion")
    logs, expected = a["logs"], texts[conv]
    if not isinstance(logs, list) or len(logs) != len(expected):
        n = len(logs) if isinstance(logs, list) else "no list of"
        raise ReleaseError(f"{path}: logs: {n} entries, the discussion {conv} has {len(expected)}")
    aid, traits = annotator_id(str(a["annotator_prompt"]))
    out.annotators.setdefault(aid, traits)
    if a.get("annotator_model") and a["annotator_model"] not in out.annotator_models:
        out.annotator_models.append(str(a["annotator_model"]))
    for turn, entry in enumerate(logs):
        if not (isinstance(entry, list) and len(entry) == 2 and all(isinstance(x, str) for x in entry)):
            raise ReleaseError(f"{path}: logs[{turn}]: expected [text, answer]")
        text, answer = entry
        if text != expected[turn]:
            raise ReleaseError(
                f"{path}: logs[{turn}] text differs from discussion {conv}'s logs[{turn}].text "
                f"({text[:40]!r} vs {expected[turn][:40]!r}): ratings join on position, and these disagree"
            )
        tox, quality = TOXICITY.search(answer), QUALITY.search(answer)
        out.annotations.append(
            {
                "discussion_id": conv,
                "turn": turn,
                "annotator_id": aid,
                "toxicity": int(tox.group(1)) if tox else None,
                "argument_quality": int(quality.group(1)) if quality else None,
                "parse_ok": tox is not None,
                "raw_answer": answer,
            }
        )


def read(path: str | Path) -> Imported:
    """Every discussion and rating of a release folder (module docstring)."""
    data = data_folder(path)
    out = Imported()
    prompts: dict[str, str] = {}  # main facilitator prompt -> strategy (ablations name theirs by it)
    ids: set[str] = set()
    for f, folder, condition in _discussion_files(data):
        setup, rows = _discussion(f, folder, condition, prompts)
        if setup["discussion_id"] in ids:
            raise ReleaseError(f"{f}: id {setup['discussion_id']} appears twice in the release")
        ids.add(setup["discussion_id"])
        out.setups.append(setup)
        out.comments += rows
    texts: dict[str, list[str]] = {}
    for r in out.comments:
        texts.setdefault(r["discussion_id"], []).append(r["text"])
    root = data / "annotation_output"
    parts = [root / "main", *sorted(p for p in (root / "ablation").glob("*") if p.is_dir())]
    files = 0
    for part in parts:
        if part.name in LEFT_OUT:
            out.left_out[f"{part.relative_to(data)}: {LEFT_OUT[part.name]}"] = len(list(part.glob("*.json")))
            continue
        if part.name not in RATED:
            raise ReleaseError(f"{part}: unknown annotation folder (known: {', '.join((*RATED, *LEFT_OUT))})")
        for f in sorted(part.glob("*.json")):
            _ratings(f, texts, out)
            files += 1
    seeds = {(r["discussion_id"], r["turn"]) for r in out.comments if r["is_seed"]}
    out.counts = {
        "discussions": dict(sorted(Counter(s["condition"] for s in out.setups).items())),
        "comments": len(out.comments),
        "silent_turns": sum(r["is_silent"] for r in out.comments),
        "annotation_files": files,
        "ratings": len(out.annotations),
        "ratings_unparsed": sum(not r["parse_ok"] for r in out.annotations),
        "seed_ratings": sum((r["discussion_id"], r["turn"]) in seeds for r in out.annotations),
        "annotators": len(out.annotators),
        "discussions_without_ratings": len(ids - {r["discussion_id"] for r in out.annotations}),
        "left_out_files": out.left_out,
    }
    return out
