"""Facilitation annotate: what is rated (no silent or seed comment, a silence-free context), one row per
comment and annotator whatever the texts, the annotators' fields in their prompt (socsim.facilitation.annotate)."""

from __future__ import annotations

import pandas as pd
import pytest

from socsim.facilitation import analysis, annotate
from support.project import ROOT
from support.studies.facilitation import ALICE, BOB, SETUP, Discussion


def _comments_with_repeats() -> list[dict]:
    t = Discussion(SETUP)
    t.record(ALICE, "seed", 0, is_seed=True)
    for _ in range(3):
        t.record(BOB, "same text", 1)
        t.record(None, "", 0)  # repeated empty facilitator texts: the original join multiplied these
        t.record(ALICE, "same text", 1)
    return t.rows


def test_annotation_targets_skip_silent_and_seed_with_silent_free_context():
    rows = _comments_with_repeats()
    todo = annotate.targets(rows, {"d1": 2})
    assert [c["turn"] for c, _ in todo] == [1, 3, 4, 6, 7, 9]
    for comment, context in todo:
        assert not comment["is_silent"] and not comment["is_seed"]
        assert len(context) <= 2 and all(not c["is_silent"] for c in context)
        assert all(c["turn"] < comment["turn"] for c in context)


def test_repeated_texts_do_not_multiply_annotation_rows():
    rows = _comments_with_repeats()
    comments = pd.DataFrame(rows)
    keys = [(c["discussion_id"], c["turn"]) for c, _ in annotate.targets(rows, {"d1": 2})]
    ann = pd.DataFrame(
        [
            {
                "discussion_id": d,
                "turn": t,
                "annotator_id": a,
                "toxicity": 2,
                "argument_quality": 3,
                "parse_ok": True,
                "raw_answer": "{}",
            }
            for d, t in keys
            for a in ("a1", "a2")
        ]
    )
    setups = pd.DataFrame([{"discussion_id": "d1", "instructions": "full", "with_roles": True}])
    rated = analysis.rated_comments(comments, ann, setups)
    assert len(rated) == len(ann) == 12  # one row per (comment, annotator), whatever the texts
    assert sorted(set(rated["turn"])) == [1, 3, 4, 6, 7, 9]


# -- annotators' fields -------------------------------------------------------------------------------------


def test_annotators_carry_the_participants_fields():
    from socsim.facilitation import materials

    guide = {"instructions": "Rate toxicity."}
    annotators = materials.read_annotators(ROOT / "data" / "facilitation" / "annotators.jsonl", 10)
    for a in annotators:
        prompt = annotate.annotator_prompt(a, guide)
        for key in ("age", "sex", "sexual_orientation", "demographic_group", "education_level", "current_employment"):
            assert str(a[key]) in prompt, key
        assert all(t in prompt for t in a["personality_characteristics"]) and prompt.endswith("Rate toxicity.")
    bad = ROOT / "data" / "facilitation" / "personas.jsonl"  # no annotator_id: rejected
    with pytest.raises(ValueError, match="lacks"):
        materials.read_annotators(bad, 1)
