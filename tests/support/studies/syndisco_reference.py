"""Independent reference computation of paper 000's Table 2 from SynDisco's released JSON.

Reads a release tree (``<data>/discussions_output``, ``<data>/annotation_output``) with pandas only,
no ``socsim`` import, and redoes what the authors' ``notebooks/timeseries.ipynb`` (repository
dimits-ts/synthetic_moderation_experiments, commit fde36171) does on their exported CSV:

- one row per (message, annotator) rating; the authors joined messages to annotations on
  (conversation, message TEXT), which multiplies the rows of repeated texts (the empty facilitator
  turns); ``join="position"`` joins on (conversation, position in the log) instead, one row per rating;
- ``message_order`` is the 1-based position in the discussion's log (the seed is 1);
- the seed (model ``"hardcoded"``) and the facilitator rows are dropped;
- time = ``message_order // 2 + 1`` in moderated discussions and ``message_order`` in the unmoderated
  ones, i.e. the user comment's index in both: the seed would be 1, the generated comments 2, 3, ...;
- OLS ``toxicity ~ C(strategy, Treatment('No Moderator')) * time``.

On the real release at commit fde36171 this gives the paper's Table 2 exactly (N = 21,494, adjusted
R2 0.054; see ``python syndisco_reference.py /path/to/data``). The authors' regex for the ratings is
kept: lower-cased ``(\\w+)=([-\\d.]+)`` pairs.

Also the roles (the authors' ``_get_user_intent``): ``"community"`` anywhere in the lower-cased user
prompt -> Community-oriented (checked first), else ``"troll"`` -> Troll, else
``"special_instructions: ,"`` -> Neutral, else Unknown.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import statsmodels.formula.api as smf

STRATEGY_NAMES = {
    "no_moderator": "No Moderator",
    "vanilla": "No Instructions",
    "collective_constitution": "Rules Only",
    "erulemaking": "Regulation Room",
    "constructive_communications": "Constructive Communications",
    "moderation_game": "Moderation Game",
}
REFERENCE = "No Moderator"
SEED_MODEL = "hardcoded"
_PAIR = re.compile(r"(\w+)=([-\d\.]+)")


def user_intent(prompt: str) -> str:
    """The authors' role rule, on a user prompt."""
    prompt = prompt.lower()
    if "community" in prompt:
        return "Community-oriented"
    if "troll" in prompt:
        return "Troll"
    if "special_instructions: ," in prompt:
        return "Neutral"
    return "Unknown"


def parse_rating(label: str) -> dict:
    """``"Toxicity=3\\nArgumentQuality=2"`` -> ``{"toxicity": 3, "argumentquality": 2}``."""
    out = {}
    for key, value in _PAIR.findall(str(label).lower()):
        out[key] = float(value) if "." in value else int(value)
    return out


def load_messages(data_dir: str | Path, study: str = "main") -> pd.DataFrame:
    """One row per log entry of every discussion under ``discussions_output/<study>``."""
    root = Path(data_dir) / "discussions_output" / study
    rows = []
    for path in sorted(root.rglob("*.json")):
        disc = json.loads(path.read_text(encoding="utf8"))
        prompts = dict(zip(disc["users"], disc["user_prompts"]))
        folder = path.parent.name
        for position, entry in enumerate(disc["logs"]):
            is_mod = disc["moderator"] is not None and entry["name"] == disc["moderator"]
            rows.append(
                {
                    "conv_id": disc["id"],
                    "folder": folder,
                    "strategy": STRATEGY_NAMES.get(folder, folder),
                    "moderated": disc["moderator"] is not None,
                    "position": position,
                    "message_order": position + 1,
                    "user": entry["name"],
                    "text": entry["text"],
                    "model": entry["model"],
                    "is_moderator": is_mod,
                    "is_seed": entry["model"] == SEED_MODEL,
                    "intent": "Moderator" if is_mod else user_intent(prompts.get(entry["name"], "")),
                }
            )
    return pd.DataFrame(rows)


def load_annotations(data_dir: str | Path, study: str = "main") -> pd.DataFrame:
    """One row per rating in ``annotation_output/<study>``: conv_id, annotator, position, text, ratings."""
    root = Path(data_dir) / "annotation_output" / study
    rows = []
    for path in sorted(root.glob("*.json")):
        ann = json.loads(path.read_text(encoding="utf8"))
        for position, (text, label) in enumerate(ann["logs"]):
            rating = parse_rating(label)
            rows.append(
                {
                    "conv_id": ann["conv_id"],
                    "annotation_file": path.name,
                    "annotator_prompt": ann["annotator_prompt"],
                    "position": position,
                    "text": text,
                    "toxicity": rating.get("toxicity"),
                    "argument_quality": rating.get("argumentquality"),
                }
            )
    return pd.DataFrame(rows)


def rating_rows(data_dir: str | Path, join: str = "position", study: str = "main") -> pd.DataFrame:
    """Messages x ratings, joined on (conv_id, position) or, as the authors did, (conv_id, text)."""
    messages = load_messages(data_dir, study)
    ratings = load_annotations(data_dir, study)
    if join == "position":
        merged = messages.merge(ratings.drop(columns="text"), on=["conv_id", "position"], how="inner")
    elif join == "text":
        merged = messages.merge(ratings.drop(columns="position"), on=["conv_id", "text"], how="inner")
    else:
        raise ValueError(f"join must be 'position' or 'text', not {join!r}")
    merged["time"] = merged["message_order"].where(~merged["moderated"], merged["message_order"] // 2 + 1)
    return merged


def _name(term: str) -> str:
    """statsmodels' term -> the paper's row name (``Intercept``, ``Rules Only``, ``Rules Only×time``)."""
    m = re.fullmatch(r"C\(strategy, Treatment\('No Moderator'\)\)\[T\.(.+?)\](:time)?", term)
    if m:
        return m.group(1) + ("×time" if m.group(2) else "")
    return term


def table2(data_dir: str | Path, join: str = "position", keep_seed: bool = False, study: str = "main") -> dict:
    """Table 2's OLS: params (the paper's names), N, adj_r2, and the statsmodels result."""
    df = rating_rows(data_dir, join=join, study=study)
    df = df[~df["is_moderator"]]
    if not keep_seed:
        df = df[~df["is_seed"]]
    df = df.dropna(subset=["toxicity"])
    result = smf.ols(f"toxicity ~ C(strategy, Treatment('{REFERENCE}')) * time", data=df).fit()
    params = {_name(k): float(v) for k, v in result.params.items()}
    return {
        "params": params,
        "pvalues": {_name(k): float(v) for k, v in result.pvalues.items()},
        "n": int(result.nobs),
        "adj_r2": float(result.rsquared_adj),
        "result": result,
    }


PAPER_ORDER = [
    "Intercept",
    "No Instructions",
    "Moderation Game",
    "Rules Only",
    "Regulation Room",
    "Constructive Communications",
    "time",
    "No Instructions×time",
    "Moderation Game×time",
    "Rules Only×time",
    "Regulation Room×time",
    "Constructive Communications×time",
]


def main(argv: list[str]) -> None:
    data_dir = Path(argv[1]) if len(argv) > 1 else Path(__file__).parents[2] / "data/syndisco_release/data"
    for join in ("position", "text"):
        rows = rating_rows(data_dir, join=join)
        users = int((~rows.is_moderator & ~rows.is_seed).sum())
        print(f"join={join}: {len(rows)} rating rows in all, {users} of generated user comments")
    for keep_seed in (False, True):
        out = table2(data_dir, keep_seed=keep_seed)
        print(f"\nkeep_seed={keep_seed}: N={out['n']}, adj R2={out['adj_r2']:.4f}")
        for name in PAPER_ORDER:
            print(f"  {name:34s} {out['params'][name]: .4f}")


if __name__ == "__main__":
    main(sys.argv)
