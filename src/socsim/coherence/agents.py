"""Agents, latent-profile elicitation and pairing (paper 001, sections 3.1-3.2, Appendix A)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from socsim import seeds
from socsim.llm import Choice, IntRange, Request, Response, Sampling
from socsim.seeds import derive_seed

GRID_KEYS = ("region", "age", "gender", "urbanicity", "education")
YES_NO = Choice(("Yes", "No"))
PREFERENCE = IntRange(1, 5)


def grid(prompts: dict[str, Any]) -> list[dict[str, Any]]:
    """Every demographic background of Table 2 (4 x 5 x 2 x 4 x 6 = 960), in a fixed order."""
    return [dict(zip(GRID_KEYS, values)) for values in itertools.product(*(prompts["grid"][k] for k in GRID_KEYS))]


def bias_cells(levels: list[int]) -> list[tuple[int, str]]:
    cells: list[tuple[int, str]] = []
    for b in sorted(levels):
        cells += [(0, "none")] if b == 0 else [(b, "favor"), (b, "against")]
    return cells


def build_agents(
    cp: dict[str, Any], seed: int, topics: dict[str, Any], prompts: dict[str, Any]
) -> list[dict[str, Any]]:
    """Per topic and bias cell, a seeded sample of backgrounds (the full grid is 4800 agents a topic)."""
    backgrounds = grid(prompts)
    by_id = {t["id"]: t for t in topics["topics"]}
    rows: list[dict[str, Any]] = []
    for topic_id in cp["topics"]:
        topic = by_id[topic_id]
        for level, direction in bias_cells(cp["bias_levels"]):
            rng = seeds.rng(seed, "coherence", "agents", topic_id, level, direction)
            for index in sorted(rng.sample(range(len(backgrounds)), cp["agents_per_cell"])):
                bg = backgrounds[index]
                rows.append(
                    {
                        "agent_id": f"{topic_id}.b{level}{direction[0]}.{index:03d}",
                        "topic": topic_id,
                        "contentiousness": topic["C"],
                        "bias_level": level,
                        "bias_direction": direction,
                        "background": index,
                        **bg,
                        "persona_prompt": prompts["persona"].format(**bg).strip(),
                        "bias_prompt": topic["bias"][level][direction] if level else None,
                    }
                )
    return rows


def system_prompt(agent: dict[str, Any], prompts: dict[str, Any], task: str) -> str:
    """Persona, bias, the consistency sentence, then the task instruction."""
    parts = [agent["persona_prompt"]] + ([agent["bias_prompt"]] if agent["bias_prompt"] else [])
    parts += [prompts["consistency"].strip(), prompts[task].strip()]
    return " ".join(parts)


def elicitation_requests(
    agents: list[dict[str, Any]],
    topics: dict[str, Any],
    prompts: dict[str, Any],
    seed: int,
    model: str,
    sampling: Sampling,
) -> list[Request]:
    """Per agent: the preference question, then the nine openness items (in this order)."""
    statements = {t["id"]: t["statement"] for t in topics["topics"]}
    out: list[Request] = []
    for a in agents:
        pref_system = system_prompt(a, prompts, "preference_instruction")
        q = prompts["preference_question"].format(statement=statements[a["topic"]])
        out.append(
            Request.chat(
                [{"role": "system", "content": pref_system}, {"role": "user", "content": q}],
                derive_seed(seed, "coherence", "elicit", model, a["agent_id"], "P"),
                sampling,
                PREFERENCE,
                label=f"{a['agent_id']} preference",
            )
        )
        open_system = system_prompt(a, prompts, "openness_instruction")
        for i, item in enumerate(prompts["openness_items"]):
            out.append(
                Request.chat(
                    [{"role": "system", "content": open_system}, {"role": "user", "content": item["text"]}],
                    derive_seed(seed, "coherence", "elicit", model, a["agent_id"], "O", i),
                    sampling,
                    YES_NO,
                    label=f"{a['agent_id']} openness item {i + 1}",
                )
            )
    return out


def openness_score(answers: list[str | None], items: list[dict[str, Any]], scoring: str) -> int | None:
    """Number of Yes (the paper), or with reverse keying a No on a reversed item counts. None if any
    item did not parse."""
    if any(a is None for a in answers):
        return None
    if scoring == "count":
        return sum(a == "Yes" for a in answers)
    if scoring == "reverse_keyed":
        return sum((a == "No") if item["reverse"] else (a == "Yes") for a, item in zip(answers, items))
    raise ValueError(f"unknown openness scoring {scoring!r}")


def profile_rows(
    agents: list[dict[str, Any]], responses: Sequence[Response], prompts: dict[str, Any], scoring: str, model: str
) -> list[dict[str, Any]]:
    n = 1 + len(prompts["openness_items"])
    rows: list[dict[str, Any]] = []
    for i, a in enumerate(agents):
        pref, *items = responses[i * n : (i + 1) * n]
        answers = [r.value if r.parse_ok else None for r in items]
        score = openness_score(answers, prompts["openness_items"], scoring)
        rows.append(
            {
                "agent_id": a["agent_id"],
                "model": model,
                "preference": pref.value if pref.parse_ok else None,
                "preference_raw": pref.text,
                "preference_ok": pref.parse_ok,
                "openness": score,
                "openness_answers": [r.text for r in items],
                "openness_ok": score is not None,
            }
        )
    return rows


def profile_key(p: int, o: int, b: int, unit: str) -> str:
    shown: int | str = o
    if unit == "bins":
        shown = "low" if o <= 3 else "mid" if o <= 6 else "high"
    return f"{p}-{shown}-{b}"


def opener(seed: int, conversation_id: str) -> int:
    """Which agent (1 or 2) asks the opening question: a fair coin seeded by the conversation's id
    (not a shared RNG), so that the lower-preference agent (agent 1) does not always open."""
    return 1 + derive_seed(seed, "coherence", "opener", conversation_id) % 2


def pair_agents(
    profiles: list[dict[str, Any]],
    agents: dict[str, dict[str, Any]],
    pairing: dict[str, Any],
    seed: int,
    topics: dict[str, Any],
    prompts: dict[str, Any],
) -> list[dict[str, Any]]:
    """For every unordered pair of profiles present (per model and topic), k pairs of two different
    agents. Profiles whose elicitation did not parse take no part. Agent 1 holds the first profile
    of the pair (sorted); `opener` (a seeded coin per conversation) says which agent asks the
    topic's question. Each row is a self-contained episode: it also carries the topic's question,
    both agents' conversation system prompts and the run seed."""
    questions = {t["id"]: t["question"] for t in topics["topics"]}

    def conv_prompt(agent_id: str) -> str:
        return system_prompt(agents[agent_id], prompts, "conversation_instruction")

    groups: dict[tuple[str, str], dict[str, list[str]]] = {}
    for p in profiles:
        if not (p["preference_ok"] and p["openness_ok"]):
            continue
        a = agents[p["agent_id"]]
        key = profile_key(p["preference"], p["openness"], a["bias_level"], pairing["unit"])
        groups.setdefault((p["model"], a["topic"]), {}).setdefault(key, []).append(p["agent_id"])
    rows: list[dict[str, Any]] = []
    for (model, topic), by_profile in sorted(groups.items()):
        rng = seeds.rng(seed, "coherence", "pairs", model, topic)
        keys = sorted(by_profile)
        profile_pairs = [
            (u, v) for u, v in itertools.combinations_with_replacement(keys, 2) if u != v or len(by_profile[u]) >= 2
        ]  # an agent never talks with itself
        cap = pairing["max_pairs_per_topic"]
        if cap is not None and len(profile_pairs) > cap:
            profile_pairs = sorted(rng.sample(profile_pairs, cap))
        n = 0
        for u, v in profile_pairs:
            for _ in range(pairing["k"]):
                if u == v:
                    a1, a2 = rng.sample(by_profile[u], 2)
                else:
                    a1, a2 = rng.choice(by_profile[u]), rng.choice(by_profile[v])
                cid = f"{model}.{topic}.{n:04d}"
                rows.append(
                    {
                        "conversation_id": cid,
                        "model": model,
                        "topic": topic,
                        "agent1_id": a1,
                        "agent2_id": a2,
                        "profile1": u,
                        "profile2": v,
                        "opener": opener(seed, cid),
                        "question": questions[topic],
                        "agent1_system_prompt": conv_prompt(a1),
                        "agent2_system_prompt": conv_prompt(a2),
                        "seed": seed,
                    }
                )
                n += 1
    return rows
