"""Degeneracy of the coherence study's inputs (socsim.stats.degeneracy) and which tables and tests
rest on which input: one preference or openness value for most agents, one final judge score, a
judge that misjudges its calibration examples, too many final judgments that did not parse."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from socsim.stats import degeneracy as dg

UNPARSED_SHARE = 0.1  # final judgments that did not parse: from this share on, a flag


def input_flags(
    profiles: pd.DataFrame, conversations: pd.DataFrame, calibration: pd.DataFrame | None, model: str
) -> dict[str, list[dg.Flag]]:
    """Degeneracy of one agent model's inputs: its parsed preferences and openness scores, the
    final judge scores of its conversations (before the Self-BLEU filter) and the calibration of
    the judge(s) that scored them."""
    prof = profiles[profiles["model"] == model]
    out = {
        "preferences": dg.collect(
            dg.one_value(prof.loc[prof["preference_ok"].astype(bool), "preference"], f"coherence preferences ({model})")
        )
        if len(prof)
        else [],
        "openness": dg.collect(
            dg.one_value(prof.loc[prof["openness_ok"].astype(bool), "openness"], f"coherence openness ({model})")
        )
        if len(prof)
        else [],
        "scores": [],
        "calibration": [],
    }
    conv = conversations[conversations["model"] == model]
    if len(conv):
        out["scores"] = dg.collect(dg.one_value(conv["agreement"], f"coherence final judge scores ({model})"))
        if calibration is not None:
            for judge in sorted(conv["judge_model"].unique()):
                cal = calibration[calibration["judge_model"] == judge].sort_values("example")
                if len(cal):
                    answered = [
                        None if (not ok or pd.isna(s)) else float(s) for s, ok in zip(cal["score"], cal["parse_ok"])
                    ]
                    out["calibration"] += dg.collect(
                        dg.miscalibrated(cal["reference"].tolist(), answered, f"coherence judge calibration ({judge})")
                    )
    return out


def flags_per_test(flags: dict[str, list[dg.Flag]]) -> dict[int, list[dg.Flag]]:
    """Which inputs each test depends on (the outcome, agreement, for all of them)."""
    judged = flags["scores"] + flags["calibration"] + flags.get("judgments", [])
    pref, open_ = flags["preferences"], flags["openness"]
    return {
        1: pref + judged,
        2: pref + judged,
        3: pref + judged,
        4: pref + judged,
        5: open_ + judged,
        6: pref + open_ + judged,
    }


def unparsed_flags(counts: pd.Series, model: str) -> list[dg.Flag]:
    """A flag when at least UNPARSED_SHARE of a model's judged conversations have a final judgment
    that did not parse (`counts`: its row of descriptive.final_judgments); fewer are counted only."""
    judged, unparsed = int(counts["judged"]), int(counts["unparsed"])
    if not judged or unparsed / judged < UNPARSED_SHARE:
        return []
    reason = (
        f"{unparsed} of {judged} final judgments did not parse ({unparsed / judged:.0%}, threshold "
        f"{UNPARSED_SHARE:.0%}); their conversations take no part in any test"
    )
    return [dg.Flag(f"coherence final judgments ({model})", reason)]


def unparsed_note(counts: pd.Series) -> str:
    """What a table's notes say about a model's conversations without a usable final judgment."""
    lost = int(counts["unparsed"]) + int(counts["empty_window"]) + int(counts["unjudged"])
    if not lost:
        return ""
    return (
        f"{counts['model']}: {lost} of {int(counts['conversations'])} conversations have no usable final "
        f"judgment ({int(counts['unparsed'])} did not parse, {int(counts['empty_window'])} judged an empty "
        f"window, {int(counts['unjudged'])} not judged) and take no part in any test"
    )


# Which inputs each table rests on (keys of `input_flags`), for its `flags` column and notes.
JUDGED = ("scores", "calibration", "judgments")  # the inputs of every table of agreement scores
TABLE_INPUTS = {
    "bootstrap_by_gap": ("preferences", *JUDGED),
    "bootstrap_by_gap_b2": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair_contentiousness": ("preferences", *JUDGED),
    "bootstrap_by_pref_pair_contentiousness_b2": ("preferences", *JUDGED),
    "bootstrap_by_open_sum": ("openness", *JUDGED),
    "bootstrap_by_open_pair_1_5": ("preferences", "openness", *JUDGED),
    "openness_vs_baseline": ("preferences", "openness", *JUDGED),
    "suppression": ("preferences", *JUDGED),
    "anchors": ("preferences", *JUDGED),
    "contentiousness_vs_neutral": ("preferences", *JUDGED),
    "final_judgments": ("judgments",),
}


def flags_of(flags: dict[str, list[dg.Flag]], inputs: Iterable[str]) -> list[dg.Flag]:
    return dg.collect(*(flags.get(k, []) for k in inputs))


def with_flags(table: pd.DataFrame, flags: dict[str, dict[str, list[dg.Flag]]], inputs: Iterable[str]) -> pd.DataFrame:
    """The table with a `flags` column: per row, the degeneracy flags of its model's inputs."""
    inputs = tuple(inputs)
    shown = {m: "; ".join(f.message for f in flags_of(f, inputs)) for m, f in flags.items()}
    models = table["model"] if "model" in table.columns else pd.Series([], dtype=object)
    return table.assign(flags=[shown.get(m, "") for m in models])
