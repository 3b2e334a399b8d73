"""Paper 000's humans on the authors' real clones (opt-in: the release is not redistributed here, and CI cannot
reach GitHub): SOCSIM_SYNDISCO_RELEASE=<clone at fde36171> for the Regulation Room workbook,
SOCSIM_SYNDISCO_REVISED=<clone at 4ecc4bfc> for the human toxicity and the printed divergences."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from socsim.facilitation import humans
from socsim.stats.text import diversity

RELEASE = os.environ.get("SOCSIM_SYNDISCO_RELEASE")
REVISED = os.environ.get("SOCSIM_SYNDISCO_REVISED")
SHEETS = {
    "Distracted Driving & Texting": 45,
    "Airline Passenger Rights": 1127,
    "Electronic On-Board Recorders": 248,
    "Air Travel Accessibility": 163,
    "Home Mortgage": 344,
    "Consumer Debt Collection": 1205,
    "Health IT": 252,
    "Social Media in Rulemaking": 28,
    "NYC Congestion": 207,
    "Proposed Move NY Fair Plan": 163,
}


@pytest.mark.slow
@pytest.mark.skipif(not RELEASE, reason="set SOCSIM_SYNDISCO_RELEASE to a clone of the release at fde36171")
def test_the_regulation_room_workbook_reads_every_topic_sheet_once():
    """Every topic sheet once, by its header names (the authors' reader skips 'Proposed Move NY Fair Plan' and
    reads 'Social Media in Rulemaking' twice), the clone's commit checked, 147 posts as discussions."""
    assert RELEASE is not None
    h = humans.read(Path(RELEASE))
    assert h is not None and h.source["verified"] and h.source["commit"].startswith("fde36171")
    assert h.source["name"] == humans.REGULATION_ROOM and "CeRI" in h.source["licence"]
    assert h.counts["sheets"] == SHEETS and h.counts["comments"] == 3782 and h.counts["discussions"] == 147
    df = pd.DataFrame(h.comments)
    div = df.groupby("discussion_id")["text"].apply(lambda s: diversity(list(s))).dropna()
    assert len(div) == 133 and 0.88 < div.median() < 0.91  # posts of one comment have no pair


@pytest.mark.slow
@pytest.mark.skipif(not REVISED, reason="set SOCSIM_SYNDISCO_REVISED to a clone of the release at 4ecc4bfc")
def test_the_revised_releases_human_toxicity_and_printed_divergences():
    assert REVISED is not None
    rows, counts = humans.read_toxicity(Path(REVISED) / humans.TOXICITY_FILE)
    assert (counts["comments"], counts["scored"], counts["repeated_ids"]) == (41772, 41770, 0)
    assert counts["mean"] == pytest.approx(0.183, abs=5e-4)
    printed = pd.DataFrame(humans.read_printed(Path(REVISED) / "data" / "eval_output"))
    assert len(printed) == 54 and printed["model"].nunique() == 6
    qwen = printed[(printed["dimension"] == "initialization") & (printed["condition"] == "Main")]
    assert qwen.set_index("model").loc["Qwen-32B", "js_printed"] == 0.103
