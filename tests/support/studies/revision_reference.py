"""Independent reference computation of the revised study's toxicity table, the authors' way.

Reads a revision tree (``<data>/discussions_output/main``, ``<data>/eval_output/vmd.csv``) with pandas,
hashlib and statsmodels only, no ``socsim`` import, and redoes what the authors' scripts do
(repository dimits-ts/synthetic_moderation_experiments at 4ecc4bfc: ``src/create_datasets.py`` through
SynDisco 2.x ``postprocessing.import_discussions``, then ``src/eval_toxicity.py`` and
``src/eval_moderation.py``):

- one row per log entry; ``message_id`` = md5 of ``f"{conv_id}_{message}"``; ``message_order`` counts up
  within a conversation whenever the id changes from the previous row's (equal consecutive texts share one);
- a user is a troll when its prompt's ``instructions`` contain "troll"; the strategy from the folder name;
- scores: rows with an ``error`` dropped, inner join on ``message_id`` (equal texts multiply rows);
- the moderator's and the seed's (model ``"hardcoded"``) rows dropped, the turn centred over the rows;
- ``smf.mixedlm("Toxicity ~ C(strategy, Treatment(reference='No Facilitator')) * message_order_c",
  groups=conv_id).fit()``;
- participation: 1 - the share of user messages that fully match ``[\\s"]*``, by model.

On the real release this prints the authors' table (``python revision_reference.py /path/to/clone``).
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from pathlib import Path

import pandas as pd
import statsmodels.formula.api as smf

REFERENCE = "No Facilitator"
STRATEGY = {
    "nomod": REFERENCE,
    "constructive": "Constructive Communications",
    "erulemaking": "Moderation Guidelines",
    "vanilla": "Minimal Instructions",
}


def strategy(tag: str) -> str:
    return next(v for k, v in STRATEGY.items() if k in tag)


def messages(data: Path) -> pd.DataFrame:
    rows = []
    for sub in sorted((data / "discussions_output" / "main").iterdir()):
        for f in sorted(sub.glob("*.json")):
            d = json.loads(f.read_text(encoding="utf-8"))
            instructions = {
                json.loads(p)["persona"]["username"]: json.loads(p)["instructions"] for p in d["user_prompts"]
            }
            last, order = None, 0
            for turn, e in enumerate(d["logs"]):
                mid = hashlib.md5(f"{d['id']}_{e['text']}".encode()).hexdigest()
                if mid != last:
                    order, last = order + 1, mid
                is_mod = e["name"] == d["moderator"]
                rows.append(
                    {
                        "conv_id": d["id"],
                        "turn": turn,
                        "message_id": mid,
                        "message": e["text"],
                        "model": e["model"],
                        "is_moderator": is_mod,
                        "is_troll": (not is_mod) and "troll" in instructions[e["name"]],
                        "strategy": strategy(sub.name),
                        "message_order": order,
                    }
                )
    return pd.DataFrame(rows)


def authors_rows(data: Path) -> pd.DataFrame:
    df = messages(data)
    tox = pd.read_csv(data / "eval_output" / "vmd.csv")
    tox = tox.loc[tox["error"].isna()].copy()
    tox["toxicity"] = pd.to_numeric(tox["toxicity"])
    full = df.merge(tox, how="inner", on="message_id")
    full = full[(full["model"] != "hardcoded") & ~full["is_moderator"]].copy()
    full["message_order_c"] = full["message_order"] - full["message_order"].mean()
    return full.rename(columns={"toxicity": "Toxicity"})


def toxicity_table(data: Path) -> dict:
    rows = authors_rows(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = smf.mixedlm(
            f"Toxicity ~ C(strategy, Treatment(reference='{REFERENCE}')) * message_order_c",
            data=rows,
            groups=rows["conv_id"],
        ).fit()
    return {
        "params": r.fe_params.to_dict(),
        "se": r.bse_fe.to_dict(),
        "nobs": int(r.nobs),
        "groups": int(r.model.n_groups),
        "group_var": float(r.cov_re.iloc[0, 0]),
    }


def participation(data: Path) -> dict[str, float]:
    df = messages(data)
    users = df[(df["model"] != "hardcoded") & ~df["is_moderator"]]
    empty = users["message"].fillna("").astype(str).str.fullmatch(r'[\s"]*')
    return {**(1 - empty.groupby(users["model"]).mean()).to_dict(), "Overall": float(1 - empty.mean())}


if __name__ == "__main__":
    root = Path(sys.argv[1])
    data = root / "data" if (root / "data").is_dir() else root
    print(json.dumps({"table": toxicity_table(data), "participation": participation(data)}, indent=2))
