"""The opinion classifier f_oc (paper 002, section 2 and App. I) and its validation.

Every report (the reviewer's reasoning; in the controls, the reporting agent's) is classified by an
LLM with a constrained answer in -2..2 (temperature 0 by default), prompted with the report between
dashed lines, the framed claim and the five labelled options (option 2 correctly "Strongly
positive"; `paper_typo: true` uses the seed paper's App. I label as a sensitivity switch). `layout:
paper` is App. I's order, the report first; `shared_first`, the default, puts the options and the
answer format first and the report last, so a prefix cache re-uses what every prompt shares. The raw
answer and a parse flag are kept; a failed parse is never a crash (the trajectory carries the
previous opinion forward, flagged). Numbers in a report (4.9 %, 1.5 degrees C) are plain text to the
classifier: nothing rejects or re-samples them (the original code stopped at pdb.set_trace()).

Validation (v4 App. N): agreement, Cohen's kappa and Krippendorff's alpha (ordinal) of the
classifier against a second classifier or a CSV of human ratings (sim_id, t, opinion).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from socsim.llm import Choice, LLMClient, Request, Response
from socsim.opinion_dynamics.materials import classifier_options
from socsim.seeds import derive_seed
from socsim.sim import judge as sim_judge
from socsim.sim import runner
from socsim.stats.agreement import cohen_kappa

ANSWER = Choice(("-2", "-1", "0", "1", "2"))


def template(event: dict[str, Any], layout: str) -> str:
    """The prompts.yaml key of an event's classifier prompt: controls have no tweet; `layout`
    shared_first puts the question before the report (what a prefix cache re-uses), paper after it."""
    key = "classifier" if event.get("tweet") is not None else "classifier_control"
    return key if layout == "paper" else f"{key}_{layout}"


def request(
    prompts: dict[str, Any],
    event: dict[str, Any],
    claim: str,
    client: LLMClient,
    cl: dict[str, Any],
    seed: int,
    name: str,
) -> Request:
    text = prompts[template(event, cl["layout"])].format(
        report=event["report"].strip(), claim=claim, options=classifier_options(prompts, cl["paper_typo"])
    )
    sampling = client.sampling(max_tokens=cl["max_tokens"], temperature=cl["temperature"])
    seed = derive_seed(seed, "opinion_dynamics", "classify", name, event["sim_id"], event["t"])
    label = f"{event['sim_id']} t={event['t']}"
    return Request.chat([{"role": "user", "content": text}], seed, sampling, ANSWER, label=label)


def rating(event: dict[str, Any], resp: Response, name: str) -> dict[str, Any]:
    ans = sim_judge.answer(resp, opinion=None)
    return {
        "sim_id": event["sim_id"],
        "t": event["t"],
        "agent": event["reviewer"],
        "model": event["model"],
        "topic": event["topic"],
        "opinion": None if ans["opinion"] is None else int(ans["opinion"]),
        "raw_answer": ans["raw_answer"],
        "parse_ok": ans["parse_ok"],
        "classifier_model": name,
    }


async def classify(
    events: list[dict[str, Any]],
    claims: dict[str, str],
    prompts: dict[str, Any],
    cl: dict[str, Any],
    client: LLMClient,
    name: str,
    seed: int,
) -> list[dict[str, Any]]:
    """One rating per report, all concurrently (no report depends on another), started claim by
    claim and template by template (the prompts that share a prefix); rows in the events' order."""

    async def one(e: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            rating(e, await client.generate(request(prompts, e, claims[e["sim_id"]], client, cl, seed, name)), name)
        ]

    def group(e: dict[str, Any]) -> tuple[str, ...]:
        return (claims[e["sim_id"]], template(e, cl["layout"]))

    return await runner.run_grouped({name: client}, events, one, group, f"classify ({name})", unit="report")


def agreement(a: Sequence[int | None], b: Sequence[int | None]) -> dict[str, Any]:
    """Exact agreement, Cohen's kappa, Krippendorff's alpha (ordinal) and the confusion matrix
    (rows a = +2..-2, columns b = +2..-2, as v4 App. N prints it) of paired ratings."""
    import krippendorff

    pairs = [(int(x), int(y)) for x, y in zip(a, b) if x is not None and y is not None]
    out = {"n": len(pairs), "unpaired": len(list(a)) - len(pairs)}
    if not pairs:
        return {
            **out,
            "agreement": None,
            "cohen_kappa": None,
            "krippendorff_alpha": None,
            "confusion": None,
            "note": "no paired ratings",
        }
    x, y = map(np.array, zip(*pairs))
    order = [2, 1, 0, -1, -2]
    confusion = [[int(np.sum((x == r) & (y == c))) for c in order] for r in order]
    alpha = None
    if len(set(x) | set(y)) > 1:
        alpha = float(
            krippendorff.alpha(
                reliability_data=np.vstack([x, y]).astype(float),
                level_of_measurement="ordinal",
                value_domain=order[::-1],
            )
        )
    kappa = cohen_kappa(confusion)
    return {
        **out,
        "agreement": float(np.mean(x == y)),
        "cohen_kappa": kappa,
        "krippendorff_alpha": alpha,
        "confusion": confusion,
        "note": "" if alpha is not None else "one value only: Krippendorff's alpha undefined",
    }
