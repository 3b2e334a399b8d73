"""Personas and topics (seed opinions) of the facilitation study (paper 000, Table 1).

Two sources each: the versioned files under data/facilitation/, or generation by the LLM
with a JSON-schema constraint (as the paper generated its personas with GPT-4).

A persona's personality is split in two: `personality_characteristics` (the person's own) and
`role_traits` (the traits that come from its forum role, e.g. a troll's "quick to insult"). The
participant prompt shows both; the no-roles ablation drops the role's instructions and its
traits. Annotators (data/facilitation/annotators.jsonl) carry the same sociodemographic fields
as participants (Table 1), their special instructions being the annotation guide.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from socsim import seeds
from socsim.llm import JsonSchema, Request, Response, Sampling
from socsim.seeds import derive_seed

ROLES = ("normal_user", "troll", "community_veteran")

# Table 1 of the paper, less the role (assigned by the study design, not by the model).
PERSONA_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "username",
        "age",
        "sex",
        "education_level",
        "sexual_orientation",
        "demographic_group",
        "current_employment",
        "personality_characteristics",
        "role_traits",
    ],
    "properties": {
        "username": {"type": "string", "pattern": "^[A-Za-z][A-Za-z0-9_]{2,23}$"},
        "age": {"type": "integer", "minimum": 18, "maximum": 99},
        "sex": {"type": "string", "enum": ["female", "male", "non-binary"]},
        "education_level": {"type": "string", "minLength": 2, "maxLength": 60},
        "sexual_orientation": {
            "type": "string",
            "enum": ["heterosexual", "gay", "lesbian", "bisexual", "asexual", "queer"],
        },
        "demographic_group": {"type": "string", "minLength": 2, "maxLength": 60},
        "current_employment": {"type": "string", "minLength": 2, "maxLength": 60},
        "personality_characteristics": {
            "type": "array",
            "minItems": 2,
            "maxItems": 5,
            "items": {"type": "string", "minLength": 2, "maxLength": 30},
        },
        "role_traits": {
            "type": "array",
            "minItems": 0,
            "maxItems": 3,
            "items": {"type": "string", "minLength": 2, "maxLength": 30},
        },
    },
}

# Table 1's fields for annotators: the participants' fields less the username (annotator_id) and
# the role; their special instructions are the annotation guide.
ANNOTATOR_FIELDS = (
    "annotator_id",
    "age",
    "sex",
    "education_level",
    "sexual_orientation",
    "demographic_group",
    "current_employment",
    "personality_characteristics",
)

TOPIC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["opinion"],
    "properties": {"opinion": {"type": "string", "minLength": 10, "maxLength": 240}},
}

# Seeded hints that spread generated personas over ages and regions (a small model left
# alone writes the same person again and again).
_AGE_BANDS = ("18-25", "26-35", "36-45", "46-55", "56-65", "66-80")
_REGIONS = (
    "North America",
    "Latin America",
    "Western Europe",
    "Eastern Europe",
    "Sub-Saharan Africa",
    "the Middle East",
    "South Asia",
    "East Asia",
    "Southeast Asia",
    "Oceania",
)


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object")
            rows.append(row)
    return rows


def read_roles(path: str | Path) -> dict[str, str]:
    with open(path, encoding="utf-8") as fh:
        roles = yaml.safe_load(fh) or {}
    missing = [r for r in ROLES if not isinstance(roles.get(r), str)]
    if missing:
        raise ValueError(f"{path}: missing instructions for role(s) {missing}")
    return roles


def role_sequence(n: int, shares: dict[str, float], seed: int) -> list[str]:
    """n roles in the given proportions (largest remainder), in a seeded random order."""
    total = sum(shares.values())
    exact = {r: n * shares.get(r, 0.0) / total for r in ROLES}
    counts = {r: int(exact[r]) for r in ROLES}
    by_remainder = sorted(ROLES, key=lambda r: (-(exact[r] - counts[r]), ROLES.index(r)))
    for r in by_remainder[: n - sum(counts.values())]:
        counts[r] += 1
    seq = [r for r in ROLES for _ in range(counts[r])]
    seeds.rng(seed, "facilitation", "roles").shuffle(seq)
    return seq


def _persona_row(
    i: int, fields: dict[str, Any], role: str, roles_text: dict[str, str], source: str, ok: bool, raw: str | None
) -> dict[str, Any]:
    return {
        "persona_id": f"p{i:03d}",
        "username": fields.get("username"),
        "age": fields.get("age"),
        "sex": fields.get("sex"),
        "education_level": fields.get("education_level"),
        "sexual_orientation": fields.get("sexual_orientation"),
        "demographic_group": fields.get("demographic_group"),
        "current_employment": fields.get("current_employment"),
        "special_instructions": roles_text[role],
        "personality_characteristics": fields.get("personality_characteristics"),
        "role_traits": fields.get("role_traits") or [],
        "role": role,
        "source": source,
        "parse_ok": ok,
        "raw_answer": raw,
    }


def personas_from_file(path: str | Path, roles_text: dict[str, str], n: int) -> list[dict[str, Any]]:
    records = read_jsonl(path)
    if len(records) < n:
        raise ValueError(f"facilitation.personas.n = {n} but {path} holds only {len(records)} personas")
    rows = []
    for i, rec in enumerate(records[:n]):
        role = rec.get("role")
        if role not in ROLES:
            raise ValueError(f"{path}: persona {i + 1} has role {role!r}; expected one of {list(ROLES)}")
        fields = {k: rec.get(k) for k in PERSONA_SCHEMA["properties"]}
        fields["role_traits"] = fields["role_traits"] or []  # optional in a file: none tied to the role
        missing = [k for k, v in fields.items() if v is None]
        if missing:
            raise ValueError(f"{path}: persona {i + 1} lacks {missing}")
        rows.append(_persona_row(i, fields, role, roles_text, "file", True, None))
    _check_unique_usernames(rows, str(path))
    return rows


def _check_unique_usernames(rows: list[dict[str, Any]], where: str) -> None:
    seen: dict[str, str] = {}
    for row in rows:
        name = row["username"]
        if name in seen:
            raise ValueError(f"{where}: username {name!r} used by {seen[name]} and {row['persona_id']}")
        seen[name] = row["persona_id"]


def persona_requests(
    n: int, roles: list[str], roles_text: dict[str, str], seed: int, max_tokens: int, sampling: Sampling
) -> list[Request]:
    constraint = JsonSchema.of(PERSONA_SCHEMA, name="persona")
    requests = []
    for i in range(n):
        req_seed = derive_seed(seed, "facilitation", "personas", i)
        hint = random.Random(req_seed)
        user = (
            f"Create the profile of one participant of an online discussion forum.\n"
            f"Their role on the forum: {roles[i].replace('_', ' ')} ({roles_text[roles[i]]})\n"
            f"Make them {hint.choice(_AGE_BANDS)} years old and from {hint.choice(_REGIONS)}.\n"
            "Give a unique username, age, sex, education level, sexual orientation, demographic group, "
            "current employment, two to five personality characteristics of their own, and (role_traits) "
            "zero to three traits that come from their forum role rather than from who they are. "
            "Answer with one JSON object."
        )
        messages = [
            {
                "role": "system",
                "content": "You write realistic, diverse user profiles for a social-science "
                "simulation. You answer in JSON only.",
            },
            {"role": "user", "content": user},
        ]
        requests.append(
            Request.chat(messages, req_seed, Sampling(sampling.temperature, sampling.top_p, max_tokens), constraint)
        )
    return requests


def personas_from_responses(
    responses: Iterable[Response], roles: list[str], roles_text: dict[str, str]
) -> list[dict[str, Any]]:
    rows = []
    used: set[str] = set()
    for i, resp in enumerate(responses):
        fields = resp.value if resp.parse_ok else {}
        row = _persona_row(i, fields, roles[i], roles_text, "llm", resp.parse_ok, resp.text)
        # Usernames address people (@name) in discussions, so they must be unique.
        if row["username"] is not None:
            if row["username"] in used:
                row["username"] = f"{row['username']}_{i}"
            used.add(row["username"])
        rows.append(row)
    return rows


def read_annotators(path: str | Path, n: int) -> list[dict[str, Any]]:
    """The first n annotator personas, each with every field of ANNOTATOR_FIELDS."""
    records = read_jsonl(path)[:n]
    if len(records) < n:
        raise ValueError(f"facilitation.annotation.annotators = {n} but {path} holds {len(records)}")
    for i, rec in enumerate(records):
        missing = [k for k in ANNOTATOR_FIELDS if rec.get(k) in (None, "", [])]
        if missing:
            raise ValueError(f"{path}: annotator {i + 1} lacks {missing}")
    return records


def topics_from_file(path: str | Path, n: int) -> list[dict[str, Any]]:
    records = read_jsonl(path)
    if len(records) < n:
        raise ValueError(f"facilitation.topics.n = {n} but {path} holds only {len(records)} topics")
    rows = []
    for i, rec in enumerate(records[:n]):
        if not isinstance(rec.get("text"), str) or not rec["text"].strip():
            raise ValueError(f"{path}: topic {i + 1} lacks a text")
        rows.append(
            {
                "topic_id": rec.get("topic_id") or f"t{i + 1:02d}",
                "theme": rec.get("theme"),
                "text": rec["text"],
                "source": "file",
                "parse_ok": True,
                "raw_answer": None,
            }
        )
    return rows


def topic_requests(themes: list[str], n: int, seed: int, max_tokens: int, sampling: Sampling) -> list[Request]:
    constraint = JsonSchema.of(TOPIC_SCHEMA, name="seed_opinion")
    requests = []
    for i in range(n):
        theme = themes[i % len(themes)]
        messages = [
            {
                "role": "system",
                "content": "You write opening posts for an online discussion forum. You answer in JSON only.",
            },
            {
                "role": "user",
                "content": f"Write a one- or two-sentence opinion about {theme} that people are "
                "likely to disagree about, as the first post of a discussion thread. "
                'Answer as {"opinion": "..."}.',
            },
        ]
        requests.append(
            Request.chat(
                messages,
                derive_seed(seed, "facilitation", "topics", i),
                Sampling(sampling.temperature, sampling.top_p, max_tokens),
                constraint,
            )
        )
    return requests


def topics_from_responses(responses: Iterable[Response], themes: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "topic_id": f"g{i + 1:02d}",
            "theme": themes[i % len(themes)],
            "text": resp.value["opinion"] if resp.parse_ok else None,
            "source": "llm",
            "parse_ok": resp.parse_ok,
            "raw_answer": resp.text,
        }
        for i, resp in enumerate(responses)
    ]
