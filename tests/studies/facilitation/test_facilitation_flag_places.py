"""Every flag the facilitation analysis raises lands where it applies (issue 44): each place a flag names is a
place of the report (a table, a test level's rows, a document, a vs_paper row carrying it, or a figure panel
that asks for it), each figure panel it names shows it in its note, and every place a panel asks for is
written by some flag. A place spelt one way where a flag is recorded and another where a panel reads it
fails here, on data raising every kind of flag the study raises."""

from __future__ import annotations

import copy
import re

import numpy as np
import pandas as pd
import pytest

from socsim.facilitation import analysis as an
from socsim.facilitation.analysis.plots import plots
from socsim.io.report import Report
from socsim.stats import degeneracy as dg
from support.analysis import inputs
from support.studies.facilitation import PAPER_STRATEGIES as STRATEGIES

LEVEL = {s: 1.0 + i / 2 for i, s in enumerate(STRATEGIES)}  # a toxicity of its own per strategy
CELL = ("m", "No Instructions")  # the basic-prompt ablation's model and strategy (Fig. 6)


def _discussions(toxicity, per_cell=3, users=4, user_turns=5, annotators=2, seed=0):
    """Setups, comments and annotations of the main study and a basic-prompt ablation of CELL; every
    odd discussion has a troll (Fig. 6's groups); each user comment rated `toxicity[strategy]` by every
    annotator, each facilitator comment 1.5."""
    rng = np.random.default_rng(seed)
    cells = [("main", "m", s, "full") for s in STRATEGIES] + [("basic_instructions", *CELL, "basic")]
    setups, comments, ann = [], [], []
    for condition, model, strategy, instructions in cells:
        for d in range(per_cell):
            did = f"{condition}.{model}.{strategy}.{d}"
            setups.append(
                {
                    "discussion_id": did,
                    "condition": condition,
                    "model": model,
                    "strategy": strategy,
                    "turn_taking": "respond",
                    "instructions": instructions,
                    "with_sdb": True,
                    "with_roles": True,
                    "participants": [{"persona_id": f"u{k}"} for k in range(users)],
                }
            )
            turns = [f"u{k % users}" for k in range(user_turns + 1)]  # the seed, then each user in turn
            turns = [x for u in turns for x in ([u] if strategy == "No Moderator" else [u, "facilitator"])]
            for t, speaker in enumerate(turns):
                fac = speaker == "facilitator"
                comments.append(
                    {
                        "discussion_id": did,
                        "turn": t,
                        "position": t,
                        "speaker_id": speaker,
                        "role": "facilitator" if fac else "troll" if speaker == "u0" and d % 2 else "normal_user",
                        "is_facilitator": fac,
                        "is_silent": False,
                        "is_seed": t == 0,
                        "text": " ".join(rng.choice(["a", "tax", "vote", "city", "rule", "road"], 5)),
                        "model": model,
                        "strategy": strategy,
                        "condition": condition,
                    }
                )
                if t == 0:
                    continue
                ann += [
                    {
                        "discussion_id": did,
                        "turn": t,
                        "annotator_id": f"a{a}",
                        "toxicity": 1.5 if fac else toxicity[strategy],
                        "argument_quality": 3.0,
                        "parse_ok": True,
                        "raw_answer": "{}",
                    }
                    for a in range(annotators)
                ]
    return pd.DataFrame(setups), pd.DataFrame(comments), pd.DataFrame(ann)


def _report(toxicity) -> Report:
    setups, comments, ann = _discussions(toxicity)
    agreement = {**an.parse_failures(ann), "krippendorff_alpha_toxicity": None}
    return an.report(inputs("facilitation", {"setups": setups, "comments": comments, "annotations": ann}), agreement)


def _panels_asking(rep: Report) -> dict[str, set[tuple[str, str]]]:
    """Each place a figure panel asks for (Report.flags_on, called while the plots are built) -> the panels
    (figure, panel) that show a flag recorded there alone (a probe flag on a copy of the report)."""
    asked: set[str] = set()

    def spy(*places: str) -> list[str]:
        asked.update(places)
        return Report.flags_on(rep, *places)

    rep.flags_on = spy  # type: ignore[method-assign]
    try:
        plots(rep)
    finally:
        del rep.flags_on
    out = {}
    for place in asked:
        probe, flag = copy.deepcopy(rep), dg.Flag("probe", place)
        probe.flag(flag, place)
        out[place] = {(fig, p.name) for fig, ps in plots(probe).items() for p in ps if _shown(p.note, flag.message)}
    return out


def _shown(panel_note, message: str) -> bool:
    """A panel's note shows a flag: as one of its lines, or as the reason a Fig. 3 panel has no stars."""
    return any(message in line for line in panel_note)


def _in_table(rep: Report, message: str) -> bool:
    return any(
        message in str(cell) for t in rep.tables.values() for cell in t.df.astype(str).to_numpy().ravel()
    ) or any(message == f.message for t in rep.tables.values() for f in t.flags)


# Each flag kind the analysis raises: the data raising it, and the scope (and reason) of the flags expected.
KINDS = {
    # every rating the same: the ratings' flags (one value, constant) and every level's ANOVA on constant units
    "constant ratings": (
        dict.fromkeys(STRATEGIES, 1.0),
        [
            ("facilitation toxicity ratings", "100%"),
            ("facilitation toxicity ratings", "constant"),
            ("toxicity per rating row", "constant"),
            ("toxicity per comment", "constant"),
            ("toxicity per discussion", "constant"),
        ],
    ),
    # a toxicity of its own per strategy: Table 2 fits perfectly, no ANOVA has variance within a strategy
    "one toxicity per strategy": (
        LEVEL,
        [
            ("Table 2 OLS", "perfect fit"),
            ("toxicity per rating row within strategies", "no variance"),
            ("toxicity per comment within strategies", "no variance"),
            ("toxicity per discussion within strategies", "no variance"),
        ],
    ),
}


@pytest.fixture(scope="module")
def reports() -> dict[str, Report]:
    return {kind: _report(toxicity) for kind, (toxicity, _) in KINDS.items()}


def test_every_place_a_panel_asks_for_is_written_by_some_flag(reports):
    named = {w for rep in reports.values() for f in [*rep.flags, *rep.local_flags] for w in f.where}
    for rep in reports.values():
        asking = _panels_asking(rep)
        assert asking and all(asking.values()), asking  # every place a panel asks for reaches that panel
        assert set(asking) <= named, set(asking) - named


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_flag_lands_on_the_panels_tables_and_vs_paper_rows_it_concerns(reports, kind):
    rep, expected = copy.deepcopy(reports[kind]), KINDS[kind][1]
    got = [(f.flag.scope, f.flag.reason) for f in [*rep.flags, *rep.local_flags]]
    assert len(got) == len(expected) and all(
        scope == s and word in reason for (scope, reason), (s, word) in zip(got, expected, strict=True)
    ), got
    asking = _panels_asking(rep)
    shown = {(fig, p.name): p.note for fig, ps in rep.plots.items() for p in ps}
    for f in [*rep.flags, *rep.local_flags]:
        msg = f.flag.message
        rows = [r for r in rep.vs_paper if f.flag in r.flags]
        for place in f.where:
            m = re.fullmatch(r"(?P<table>\S+?)(?: \((?P<level>\w+)\))?", place)
            if place in asking:  # a figure panel's place: each panel asking for it shows the flag
                assert all(_shown(shown[p], msg) for p in asking[place]), (place, msg)
            elif place.startswith("vs_paper: "):  # vs_paper rows: some carry the flag
                assert rows, (place, msg)
            elif place in rep.documents:
                assert msg in str(rep.documents[place]), (place, msg)
            else:  # a table, or a test level's rows of it
                assert m and m["table"] in rep.tables, f"{place!r} ({msg}): no table, document, row or panel"
                if m["level"]:
                    assert m["level"] in set(rep.tables[m["table"]].df["level"]), (place, msg)
        # and it lands somewhere a reader sees it: a panel's note, a table's cell, a vs_paper row
        assert any(_shown(n, msg) for n in shown.values()) or _in_table(rep, msg) or rows, msg


def test_the_ratings_flags_reach_every_fig3_panel_and_fig6(reports):
    rep = reports["constant ratings"]
    ratings = [f.flag.message for f in rep.flags if f.flag.scope == "facilitation toxicity ratings"]
    assert len(ratings) == 2
    notes = {(fig, p.name): p.note for fig, ps in rep.plots.items() for p in ps}
    for panel in [("fig3_pairwise_toxicity", lv) for lv in an.LEVELS] + [
        ("fig6_nontroll_toxicity", "non-troll toxicity")
    ]:
        assert all(_shown(notes[panel], m) for m in ratings), (panel, notes[panel])
    # no other panel notes them
    others = [k for k in notes if k[0] not in ("fig3_pairwise_toxicity", "fig6_nontroll_toxicity")]
    assert not [k for k in others if any(_shown(notes[k], m) for m in ratings)]
