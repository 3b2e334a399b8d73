"""Materials of the opinion-dynamics study: personas (App. B), topics with both framings (App. H),
the opinion scale (App. C) and the prompt templates (data/opinion_dynamics/prompts.yaml)."""

from __future__ import annotations

from typing import Any

VALUES = (-2, -1, 0, 1, 2)
FRAMINGS = ("false", "true")
BIASES = ("none", "weak", "strong")


def ordinal(k: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 101st, 111th, ... (the original code's
    helper returned None from 24 on)."""
    if k < 0:
        raise ValueError(f"no ordinal for {k}")
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def persona_rows(personas: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for p in personas["personas"]:
        if int(p["initial"]) not in VALUES:
            raise ValueError(f"persona {p['id']}: initial opinion {p['initial']} is not in -2..2")
        rows.append(
            {
                "persona_id": p["id"],
                "name": p["name"],
                "initial": int(p["initial"]),
                "leaning": p["leaning"],
                "age": int(p["age"]),
                "gender": p["gender"],
                "ethnicity": p["ethnicity"],
                "education": p["education"],
                "occupation": p["occupation"],
            }
        )
    return rows


def topic_rows(topics: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "topic": t["id"],
            "category": t["category"],
            "name": t["name"],
            "claim_false": claim(t["claims"]["false"]),
            "claim_true": claim(t["claims"]["true"]),
        }
        for t in topics["topics"]
    ]


def claim(text: str) -> str:
    """Every prompt names the claim as "Theory XYZ claims that ..." (paper section 2.2)."""
    return f"Theory XYZ claims that {text.strip().rstrip('.')}"


def belief_label(prompts: dict[str, Any], value: int) -> str:
    label: str = prompts["scale"][int(value)]
    return label


def persona_text(prompts: dict[str, Any], persona: dict[str, Any], initial: int) -> str:
    """The persona with its initial belief line for this simulation."""
    text: str = prompts["persona"].format(belief=belief_label(prompts, initial), **persona).strip()
    return text


# classifier.layout: the classifier's prompt order, in the words of the run's design differences
LAYOUTS = {"paper": "App. I's order (the report first)", "shared_first": "the report last (layout shared_first)"}


def classifier_options(prompts: dict[str, Any], paper_typo: bool = False) -> str:
    """'-2: (Strongly negative opinion about XYZ), ..., 2: (Strongly positive opinion about XYZ)';
    `paper_typo` labels option 2 as the seed paper's App. I does ("Strongly negative")."""
    labels = {v: prompts["scale"][v] for v in VALUES}
    if paper_typo:
        labels[2] = prompts["classifier_typo_label"]
    return ", ".join(f"{v}: ({labels[v]} opinion about XYZ)" for v in VALUES)
