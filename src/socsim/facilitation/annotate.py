"""LLM annotation: every annotator rates every non-silent, generated comment (toxicity and
argument quality, 1-5) seeing the h comments before it. Rows are keyed by
(discussion_id, turn, annotator_id); joins back to comments are on those ids, never on text."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from socsim.llm import JsonSchema, Request, Response, Sampling
from socsim.sim import judge, views

SCALE = list(range(1, 6))
ANSWER = JsonSchema.of(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["toxicity", "argument_quality"],
        "properties": {
            "toxicity": {"type": "integer", "enum": SCALE},
            "argument_quality": {"type": "integer", "enum": SCALE},
        },
    },
    name="annotation",
)


def annotator_prompt(annotator: dict[str, Any], guide: dict[str, Any]) -> str:
    """An annotator's system prompt: the same sociodemographic fields as a participant's (Table 1),
    then the annotation guide as its special instructions."""
    traits = ", ".join(annotator.get("personality_characteristics") or [])
    return (
        f"You are an annotator. About you: you are {annotator['age']} years old, {annotator['sex']}, "
        f"{annotator['sexual_orientation']}, {annotator['demographic_group']}. "
        f"Education: {annotator['education_level']}. Work: {annotator['current_employment']}. "
        f"Personality: {traits}.\n"
        f"{guide['instructions'].strip()}"
    )


def targets(comments: list[dict[str, Any]], h: dict[str, int]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(comment, context) for every comment to annotate; context = the h previous non-silent comments."""
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for did, rows in judge.transcripts(comments, "discussion_id").items():
        h_ = h[did]

        def window(before: list[dict[str, Any]], c: dict[str, Any], h_: int = h_) -> list[dict[str, Any]]:
            return views.window(before, h_)

        out += judge.targets(rows, window, lambda c: not c["is_silent"] and not c["is_seed"])
    return out


def requests(
    comments: list[dict[str, Any]],
    h: dict[str, int],
    annotators: list[dict[str, Any]],
    guide: dict[str, Any],
    seed: int,
    sampling: Sampling,
) -> tuple[list[tuple[dict[str, Any], dict[str, Any]]], list[Request]]:
    """Requests grouped by annotator (so a shared system prompt stays in the model's prefix cache)."""
    keys: list[tuple[dict[str, Any], dict[str, Any]]] = []
    reqs: list[Request] = []
    todo = targets(comments, h)
    for a in annotators:
        system = annotator_prompt(a, guide)
        for comment, context in todo:
            user = (
                f"Preceding comments:\n{views.render(context) or '(none)'}\n\n"
                f"Comment to rate:\n{views.render([comment])}\n\n{guide['answer_format'].strip()}"
            )
            reqs.append(
                judge.request(
                    system,
                    user,
                    ANSWER,
                    sampling,
                    seed,
                    "facilitation",
                    "annotate",
                    comment["discussion_id"],
                    comment["turn"],
                    a["annotator_id"],
                )
            )
            keys.append((comment, a))
    return keys, reqs


def rows(keys: list[tuple[dict[str, Any], dict[str, Any]]], responses: Iterable[Response]) -> list[dict[str, Any]]:
    return [
        {
            "discussion_id": c["discussion_id"],
            "turn": c["turn"],
            "annotator_id": a["annotator_id"],
            **judge.answer(r, toxicity="toxicity", argument_quality="argument_quality"),
        }
        for (c, a), r in zip(keys, responses)
    ]
