"""Discussion setups (paper 000, Algorithm 1) and the prompts of every participant."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from socsim import seeds
from socsim.seeds import derive_seed

NO_MODERATOR = "No Moderator"


@dataclass(frozen=True)
class Condition:
    """A cell of the design besides model x strategy: the main study or one ablation."""

    name: str
    turn_taking: str
    instructions: str = "full"
    with_sdb: bool = True
    with_roles: bool = True


def conditions(fp: dict[str, Any]) -> list[tuple[Condition, list[str], list[str], int]]:
    """(condition, models, strategies, discussions per cell) for the main study and each ablation."""
    models = list(fp["models"])
    out = [(Condition("main", fp["turn_taking"]), models, list(fp["strategies"]), fp["discussions_per_cell"])]
    ab = fp["ablations"]
    if ab["discussions"] > 0:
        first = [ablation_model(fp)]
        for tt in ab["turn_taking"]:
            out.append((Condition(f"tt_{tt}", tt), first, [ab["strategy"]], ab["discussions"]))
        variants: dict[str, dict[str, Any]] = {
            "no_sdb": {"with_sdb": False},
            "no_roles": {"with_roles": False},
            "basic_instructions": {"instructions": "basic"},
        }
        for name in ab["prompts"]:
            out.append(
                (Condition(name, fp["turn_taking"], **variants[name]), first, [ab["strategy"]], ab["discussions"])
            )
    return out


def ablation_model(fp: dict[str, Any]) -> str:
    """The one model the ablations run on (the paper: Qwen 2.5): facilitation.ablations.model, or the
    first of facilitation.models when that is null."""
    models = list(fp["models"])
    name: str = fp["ablations"].get("model") or models[0]
    if name not in models:
        raise ValueError(f"facilitation.ablations.model = {name!r} is not one of facilitation.models {models}")
    return name


def user_instructions(instructions: dict[str, Any], variant: str, users_told_silence: bool) -> str:
    """The participants' instruction prompt. By default (as the paper) only the facilitator is told
    it may stay silent; facilitation.silence.users_told adds the same permission for users."""
    text: str = instructions[variant].strip()
    if users_told_silence:
        text += "\n" + instructions["user_silence"].strip()
    return text


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def prompt_hash(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] if text is not None else None


def participant_prompt(persona: dict[str, Any], instructions: str, with_sdb: bool, with_roles: bool) -> str:
    """A user's system prompt. Without SDBs: no sociodemographic fields and no personality. Without
    roles: neither the role's special instructions nor the personality traits tied to the role."""
    parts = [instructions.strip(), f"Your username is @{persona['username']}."]
    if with_sdb:
        own = list(persona["personality_characteristics"] or [])
        role_traits = list(persona.get("role_traits") or []) if with_roles else []
        traits = ", ".join(own + [t for t in role_traits if t not in own])
        parts.append(
            f"About you: you are {persona['age']} years old, {persona['sex']}, {persona['sexual_orientation']}, "
            f"{persona['demographic_group']}. Education: {persona['education_level']}. "
            f"Work: {persona['current_employment']}. Personality: {traits}."
        )
    if with_roles:
        parts.append(persona["special_instructions"].strip())
    return "\n".join(parts)


def facilitator_prompt(strategies: dict[str, Any], strategy: str) -> str | None:
    text = strategies["strategies"][strategy]
    if text is None:
        return None
    return "\n".join([strategies["moderator_persona"].strip(), text.strip(), strategies["silence_rule"].strip()])


def build_setups(
    fp: dict[str, Any],
    seed: int,
    personas: list[dict[str, Any]],
    topics: list[dict[str, Any]],
    instructions: dict[str, Any],
    strategies: dict[str, Any],
) -> list[dict[str, Any]]:
    personas = [p for p in personas if p["parse_ok"]]
    topics = [t for t in topics if t["parse_ok"] and t["text"]]
    k = fp["users_per_discussion"]
    if len(personas) < k:
        raise ValueError(f"facilitation.users_per_discussion = {k} but only {len(personas)} usable personas")
    if not topics:
        raise ValueError("no usable topics")
    missing = [s for s in fp["strategies"] + [fp["ablations"]["strategy"]] if s not in strategies["strategies"]]
    if missing:
        raise ValueError(f"data/facilitation/strategies.yaml lacks strategies {missing}")
    rows = []
    for cond, models, strats, n in conditions(fp):
        for model in models:
            for strategy in strats:
                for i in range(n):
                    did = f"{cond.name}.{model}.{slug(strategy)}.{i:02d}"
                    rng = seeds.rng(seed, "facilitation", "setup", did)
                    chosen = rng.sample(personas, k)  # RANDOMSAMPLE(Theta, 7)
                    topic = rng.choice(topics)  # RANDOMSAMPLE(O, 1)
                    text = user_instructions(instructions, cond.instructions, fp["silence"]["users_told"])
                    rows.append(
                        {
                            "discussion_id": did,
                            "condition": cond.name,
                            "model": model,
                            "strategy": strategy,
                            "turn_taking": cond.turn_taking,
                            "p_respond": float(fp["p_respond"]),
                            "context_h": fp["context_h"],
                            "user_turns": fp["user_turns"],
                            "instructions": cond.instructions,
                            "with_sdb": cond.with_sdb,
                            "with_roles": cond.with_roles,
                            "topic_id": topic["topic_id"],
                            "topic": topic["text"],
                            "participants": [
                                {
                                    "persona_id": p["persona_id"],
                                    "username": p["username"],
                                    "role": p["role"] if cond.with_roles else "normal_user",
                                    "system_prompt": participant_prompt(p, text, cond.with_sdb, cond.with_roles),
                                }
                                for p in chosen
                            ],
                            "facilitator_prompt": facilitator_prompt(strategies, strategy),
                            "seed": derive_seed(seed, "facilitation", "discussion", did),
                        }
                    )
    return rows
