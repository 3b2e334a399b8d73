"""Writes a small SYNTHETIC fixture in the layout and format of paper 000's revised six-model release.

The release is dimits-ts/synthetic_moderation_experiments at commit 4ecc4bfc (``data/discussions_output``
and ``data/eval_output``). Nothing here is copied from it: every text, name and prompt is generated below;
only the layout, the file and field names and types, the prompts' JSON shape and the score files' format
(with the release's quirks: a repeated header line, equal texts sharing a message id) follow the release.
See README.md next to this file.

Run: ``python tests/data/syndisco_revision/make_fixture.py``. Deterministic (numpy seed); rewrites ``data/``
and ``truth.json`` next to this file. Needs numpy only.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import uuid
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "data"
SEED = 20260303

# Two models: "llama70b" carries every planted effect, "qwen7b" none (its null twin), so a test sees a
# per-model verdict that holds beside one that must not.
MODELS = ("llama70b", "qwen7b")
STRATEGIES = ("nomod", "vanilla", "erulemaking", "constructive_communications")
PER_CELL = 8  # discussions per model x strategy (the release: 30)
ABLATION_KINDS = ("noinstructions", "nosdbs", "noseeds", "notroll", "random", "roundrobin")
PER_ABLATION = 2  # discussions per ablation folder, for one model and strategy
N_USERS = 7
USER_TURNS = 15
SEEDS = 2  # the seed comments (model "hardcoded") that open a seeded discussion
P_TROLL = 0.3

# -- the known generator ---------------------------------------------------------------------------------
# toxicity of the t-th user comment (t = 1..15) = clip(B0 + B[strategy] + (C + C_S[strategy]) * (t - 8)
#   + TROLL * is_troll + PER_ACTIVE_TROLL * active trolls of the discussion + u_discussion + e, 0.001, 0.999)
# for the model with effects; for the null model B, C_S and PER_ACTIVE_TROLL are 0 (TROLL stays: trolls
# write toxic text). The analysis' turn is SynDisco's message order, which also counts facilitator turns:
# per message order, a facilitated discussion's slope is half its slope per user comment.
B0 = 0.20
C = 0.006
B = {"llama70b": {"nomod": 0.0, "vanilla": -0.10, "erulemaking": -0.12, "constructive_communications": -0.14}}
C_S = {"llama70b": {"nomod": 0.0, "vanilla": -0.006, "erulemaking": -0.006, "constructive_communications": -0.008}}
TROLL = 0.06
PER_ACTIVE_TROLL = {"llama70b": 0.02, "qwen7b": 0.0}
SD_DISCUSSION = 0.01
SD_COMMENT = 0.04
SILENT_USER = {"llama70b": 0.0, "qwen7b": 0.15}  # a user's turn is '""' with this probability
# a facilitator's turn is silent ('""') with this probability: model A always speaks unless told little.
SILENT_FACILITATOR = {
    "llama70b": {"vanilla": 0.10, "erulemaking": 0.0, "constructive_communications": 0.0},
    "qwen7b": {"vanilla": 0.4, "erulemaking": 0.4, "constructive_communications": 0.4},
}
SILENT_SCORE = 0.021  # the score Perspective gives the text '""' (one value: equal texts, one id)
ERROR_AT = 5  # the released main scores drop this row with an error (its message then has no score)
# The humans (cmv_awry2.csv: Perspective toxicity of human comments, no text, no discussion), drawn by a generator
# of their own (the discussions above stay as they were): clip(N(HUMAN_MEAN, HUMAN_SD)), one row with an error.
# Every model's No Facilitator discussions (B0 = 0.20 plus trolls) are planted less toxic than these humans.
HUMAN_SEED, HUMANS, HUMAN_MEAN, HUMAN_SD = 20260304, 300, 0.40, 0.10
PRINTED = {"Random": (0.385, 0.266), "Response-enabled": (0.353, 0.190)}  # divergence_turn_taking.tex, invented


def md5(conv: str, text: str) -> str:
    return hashlib.md5(f"{conv}_{text}".encode()).hexdigest()


def persona(rng: np.random.Generator, name: str) -> dict:
    return {
        "username": name,
        "age": int(rng.integers(18, 80)),
        "sex": str(rng.choice(["Male", "Female"])),
        "sexual_orientation": "Heterosexual",
        "demographic_group": str(rng.choice(["Group A", "Group B"])),
        "current_employment": "Employed",
        "education_level": "Bachelor's",
        "special_instructions": "",
        "personality_characteristics": [f"trait{int(rng.integers(1, 9))}"],
    }


def user_prompt(p: dict, troll: bool, minimal: bool) -> str:
    if troll:
        instructions = "- Pretend you are an online troll, with the goal of sabotaging the discussion (synthetic)."
    elif minimal:
        instructions = '- Act like a forum user (synthetic, minimal).\n- If staying silent, output "".'
    else:
        instructions = '- Act like a forum user (synthetic).\n- If staying silent, output the empty string "".'
    return json.dumps({"context": "Synthetic forum context.", "instructions": instructions, "type": "1", "persona": p})


def moderator_prompt(strategy: str) -> str:
    p = {
        "username": "moderator",
        "age": 30,
        "sex": "male",
        "special_instructions": "",
        "personality_characteristics": ["fair"],
    }
    text = f'### Synthetic rules of {strategy}\n* Respond only if absolutely necessary.\n* If not: output "".'
    return json.dumps({"context": "Synthetic moderator context.", "instructions": text, "type": "1", "persona": p})


def discussion(
    rng: np.random.Generator, model: str, strategy: str, kind: str | None, stamp: datetime
) -> tuple[dict, list[float]]:
    """One discussion's JSON and the toxicity of each of its log entries (the generator's)."""
    conv = str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | int(rng.integers(0, 2**63))))
    users = [f"user-{int(rng.integers(100, 999))}-{i}" for i in range(N_USERS)]
    trolls = [bool(rng.random() < P_TROLL) and kind != "notroll" for _ in users]
    prompts = [user_prompt(persona(rng, u), t, kind == "noinstructions") for u, t in zip(users, trolls)]
    moderated = strategy != "nomod"
    logs, tox = [], []
    seeds = 0 if kind == "noseeds" else SEEDS
    for k in range(seeds):
        logs.append(
            {"name": users[k], "text": f"Seed opinion {k + 1} of {conv[:8]}: a synthetic claim.", "model": "hardcoded"}
        )
        tox.append(float(np.round(rng.uniform(0.02, 0.1), 8)))
    u_disc = rng.normal(0, SD_DISCUSSION)
    turns = [int(rng.integers(0, N_USERS)) for _ in range(USER_TURNS)]
    if kind == "roundrobin":
        turns = [t % N_USERS for t in range(USER_TURNS)]
    active = len({turns[t] for t in range(USER_TURNS) if trolls[turns[t]]})
    b = B.get(model, {}).get(strategy, 0.0)
    c = C + C_S.get(model, {}).get(strategy, 0.0)
    for t, who in enumerate(turns):
        if rng.random() < SILENT_USER[model]:
            text, value = '""', SILENT_SCORE
        else:
            text = f"@{users[(who + 1) % N_USERS]} comment {t + 1} of {users[who]} in {conv[:8]}: synthetic text."
            mean = B0 + b + c * (t + 1 - 8) + TROLL * trolls[who] + PER_ACTIVE_TROLL[model] * active + u_disc
            value = float(np.clip(mean + rng.normal(0, SD_COMMENT), 0.001, 0.999))
        logs.append({"name": users[who], "text": text, "model": model})
        tox.append(round(value, 8))
        if moderated:
            if rng.random() < SILENT_FACILITATOR[model][strategy]:
                text, value = '""', SILENT_SCORE
            else:
                text, value = (
                    f"@{users[who]}, synthetic moderator note {t + 1} in {conv[:8]}.",
                    float(rng.uniform(0.01, 0.06)),
                )
            logs.append({"name": "moderator", "text": text, "model": model})
            tox.append(round(value, 8))
    d = {
        "id": conv,
        "timestamp": stamp.strftime("%y-%m-%d-%H-%M"),
        "users": users,
        "moderator": "moderator" if moderated else None,
        "user_prompts": prompts,
        "moderator_prompt": moderator_prompt(strategy) if moderated else None,
        "ctx_length": 3,
        "logs": logs,
    }
    return d, tox


def folder(model: str, strategy: str, kind: str | None) -> str:
    base = f"{model}_{strategy}" if strategy == "nomod" else f"{model}_{strategy}.txt"
    return f"{base}_{kind}" if kind else base


def score_rows(d: dict, tox: list[float]) -> list[tuple[str, float]]:
    """One released row per log entry, as the authors scored their messages' CSV (equal texts: equal ids)."""
    return [(md5(d["id"], e["text"]), v) for e, v in zip(d["logs"], tox)]


def main() -> None:
    rng = np.random.default_rng(SEED)
    if OUT.exists():
        shutil.rmtree(OUT)
    stamp = datetime(2026, 2, 9, 19, 0, 0)
    rows: dict[str, list[tuple[str, float]]] = {"main": [], "ablations": []}
    truth: dict = {"discussions": {"main": 0, "ablations": 0}}
    plan = [(m, s, None, PER_CELL, "main") for m in MODELS for s in STRATEGIES]
    plan += [(MODELS[0], "erulemaking", k, PER_ABLATION, "ablations") for k in ABLATION_KINDS]
    for model, strategy, kind, n, part in plan:
        out = OUT / "discussions_output" / part / folder(model, strategy, kind)
        out.mkdir(parents=True, exist_ok=True)
        for _ in range(n):
            stamp += timedelta(minutes=int(rng.integers(5, 30)), seconds=int(rng.integers(0, 60)))
            d, tox = discussion(rng, model, strategy, kind, stamp)
            (out / f"{stamp.strftime('%y-%m-%d-%H-%M-%S')}.json").write_text(json.dumps(d, indent=4), encoding="utf-8")
            rows[part] += score_rows(d, tox)
            truth["discussions"][part] += 1
    ev = OUT / "eval_output"
    ev.mkdir(parents=True)
    for part, name in (("main", "vmd.csv"), ("ablations", "ablation.csv")):
        lines = ["message_id,toxicity,error"]
        for i, (mid, v) in enumerate(rows[part]):
            if part == "main" and i == ERROR_AT:
                lines.append(f"{mid},,HttpError 429: quota exceeded")
                continue
            lines.append(f"{mid},{v:.8g},")
            if i == len(rows[part]) // 2:  # the release's concatenation left a header line in the middle
                lines.append("message_id,toxicity,error")
        lines.append(f"{md5('no-such-discussion', 'orphan')},0.5,")  # a score without a message
        (ev / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    humans(ev)
    truth.update(
        {
            "humans_toxicity": {"comments": HUMANS, "scored": HUMANS - 1, "mean": HUMAN_MEAN, "planted": "lower"},
            "models": list(MODELS),
            "per_cell": PER_CELL,
            "effects_model": MODELS[0],
            "null_model": MODELS[1],
            "error_row_main": rows["main"][ERROR_AT][0],
            # per claim and model: planted (the generator has the effect), null (it has none) or reversed
            "planted": {
                "strategies_lower_toxicity": {"llama70b": "planted", "qwen7b": "null"},
                "toxicity_rises_with_turn": {"llama70b": "planted", "qwen7b": "planted"},
                "strategy_turn_interactions": {"llama70b": "planted", "qwen7b": "null"},
                "cannot_keep_silent": {"llama70b": "planted", "qwen7b": "reversed"},
                "instructions_raise_interventions": {"llama70b": "planted", "qwen7b": "null"},
                "trolls_raise_toxicity": {"llama70b": "planted", "qwen7b": "null"},
            },
            "released_rows": {p: len(r) for p, r in rows.items()},
        }
    )
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")


def humans(ev: Path) -> None:
    """The revised release's human toxicity (cmv_awry2.csv) and one printed divergence table, in their formats."""
    rng = np.random.default_rng(HUMAN_SEED)
    lines = ["message_id,toxicity,error"]
    for i, v in enumerate(np.clip(rng.normal(HUMAN_MEAN, HUMAN_SD, HUMANS), 0.001, 0.999)):
        lines.append(f"h{i:05d},,HttpError 400: language not supported" if i == 7 else f"h{i:05d},{v:.8g},")
    (ev / "cmv_awry2.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = " & ".join(("LLaMa-70B", "Qwen-7B"))
    rows = "".join(f"{k} & {a:.3f} & {b:.3f} \\\\\n" for k, (a, b) in PRINTED.items())
    (ev / "divergence_turn_taking.tex").write_text(
        "\\begin{table}[ht]\n\\begin{tabular}{lrr}\n\\toprule\n"
        f"Model & {labels} \\\\\nAblation &  &  \\\\\n\\midrule\n{rows}"
        "\\bottomrule\n\\end{tabular}\n\\end{table}\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
