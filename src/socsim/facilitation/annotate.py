"""LLM annotation: every annotator rates every non-silent, generated comment (toxicity and
argument quality, 1-5) seeing the h comments before it. Rows are keyed by
(discussion_id, turn, annotator_id); joins back to comments are on those ids, never on text."""

from __future__ import annotations

from socsim.facilitation.simulate import format_context
from socsim.llm import JsonSchema, Request, Sampling, derive_seed

SCALE = list(range(1, 6))
ANSWER = JsonSchema.of({
    "type": "object", "additionalProperties": False, "required": ["toxicity", "argument_quality"],
    "properties": {"toxicity": {"type": "integer", "enum": SCALE},
                   "argument_quality": {"type": "integer", "enum": SCALE}},
}, name="annotation")


def annotator_prompt(annotator: dict, guide: dict) -> str:
    """An annotator's system prompt: the same sociodemographic fields as a participant's (Table 1),
    then the annotation guide as its special instructions."""
    traits = ", ".join(annotator.get("personality_characteristics") or [])
    return (f"You are an annotator. About you: you are {annotator['age']} years old, {annotator['sex']}, "
            f"{annotator['sexual_orientation']}, {annotator['demographic_group']}. "
            f"Education: {annotator['education_level']}. Work: {annotator['current_employment']}. "
            f"Personality: {traits}.\n"
            f"{guide['instructions'].strip()}")


def targets(comments: list[dict], h: dict[str, int]) -> list[tuple[dict, list[dict]]]:
    """(comment, context) for every comment to annotate; context = the h previous non-silent comments."""
    by_discussion: dict[str, list[dict]] = {}
    for c in sorted(comments, key=lambda c: (c["discussion_id"], c["turn"])):
        by_discussion.setdefault(c["discussion_id"], []).append(c)
    out = []
    for did, rows in by_discussion.items():
        spoken = [c for c in rows if not c["is_silent"]]
        for i, c in enumerate(spoken):
            if not c["is_seed"]:
                out.append((c, spoken[max(0, i - h[did]):i]))
    return out


def requests(comments: list[dict], h: dict[str, int], annotators: list[dict], guide: dict, seed: int,
             sampling: Sampling) -> tuple[list[tuple[dict, dict]], list[Request]]:
    """Requests grouped by annotator (so a shared system prompt stays in the model's prefix cache)."""
    keys, reqs = [], []
    todo = targets(comments, h)
    for a in annotators:
        system = annotator_prompt(a, guide)
        for comment, context in todo:
            user = (f"Preceding comments:\n{format_context(context) or '(none)'}\n\n"
                    f"Comment to rate:\n@{comment['speaker_name']}: {comment['text']}\n\n"
                    f"{guide['answer_format'].strip()}")
            seed_ = derive_seed(seed, "facilitation", "annotate", comment["discussion_id"], comment["turn"],
                                a["annotator_id"])
            reqs.append(Request.chat([{"role": "system", "content": system}, {"role": "user", "content": user}],
                                     seed_, sampling, ANSWER))
            keys.append((comment, a))
    return keys, reqs


def rows(keys: list[tuple[dict, dict]], responses) -> list[dict]:
    return [{"discussion_id": c["discussion_id"], "turn": c["turn"], "annotator_id": a["annotator_id"],
             "toxicity": r.value["toxicity"] if r.parse_ok else None,
             "argument_quality": r.value["argument_quality"] if r.parse_ok else None,
             "parse_ok": r.parse_ok, "raw_answer": r.text} for (c, a), r in zip(keys, responses)]
