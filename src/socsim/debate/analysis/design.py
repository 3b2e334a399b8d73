"""What the DEBATE run was, beside the paper: its data source, annotator, on-topic prompt and sentence
encoder (RunDesign, read from its inputs' provenance), and what each quantity is made of (METRIC_USES,
variable_uses), which decides the design differences of its vs_paper rows."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from socsim.debate.metrics import PAPER_ENCODER
from socsim.debate.schemas import COMPARISON_ENCODER, METRICS
from socsim.io import vs_paper
from socsim.io.report import AnalysisInputs

PAPER_DATA = "DEBATE (real)"
PAPER_MODEL = "gpt-4o-mini"  # Sect. 6, the ablations (Tables 4, 10) and both annotators
DATA_SOURCES = {
    "fixture": "fixture (synthetic)",
    "hub": PAPER_DATA,
    "local": PAPER_DATA,
    "planted": "synthetic humans (planted control)",
}
PAPER_ON_TOPIC_PROMPT = "paper"  # debate.annotator.on_topic_prompt: the paper's Tables 7-8

# What each quantity is made of besides the data: "agent" (the twins' texts or opinions),
# "annotator" (stance or on-topic labels), "on_topic" (the on-topic prompt: every utterance metric, whose
# utterances its labels select), "encoder" (sentence embeddings).
METRIC_USES: dict[str, frozenset[str]] = {
    m: frozenset({"agent", "annotator", "on_topic", "encoder"} if m == "s_sem" else {"agent", "annotator", "on_topic"})
    for m in METRICS
}


@dataclass(frozen=True)
class RunDesign:
    """The run's data source, annotator and encoder, as its inputs' provenance records them."""

    data_source: str = "unknown"  # "fixture (synthetic)", "DEBATE (real)" or "unknown"
    annotator: str | None = None
    encoder: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # the data identity ingest recorded
    human_on_topic: str = "annotate"  # annotate (the paper) | dataset
    on_topic_prompt: str = PAPER_ON_TOPIC_PROMPT  # debate.annotator.on_topic_prompt (paper | short | unknown)

    @classmethod
    def from_provenance(
        cls, sessions: Mapping[str, Any], annotations: Mapping[str, Any], encoder: Mapping[str, Any]
    ) -> RunDesign:
        """From the provenance of `sessions` (ingest: its `data`), of the human annotations (the
        annotator among its params) and the compare stage's encoder.json."""
        data = dict(sessions.get("data") or {})
        ap = (annotations.get("params") or {}).get("debate.annotator") or {}
        return cls(
            DATA_SOURCES.get(str(data.get("source")), "unknown"),
            ap.get("model"),
            encoder.get("model"),
            data,
            str(encoder.get("human_on_topic") or "annotate"),
            str(ap.get("on_topic_prompt") or "unknown"),
        )

    @classmethod
    def of(cls, inputs: AnalysisInputs) -> RunDesign:
        """The run's design from the analysis inputs: the provenance of `sessions` and `human_annotations`,
        and the comparison folder's encoder.json (the compare stage writes it every run: required)."""
        encoder = json.loads((inputs.dirs["comparison"] / COMPARISON_ENCODER).read_text(encoding="utf-8"))
        prov = inputs.provenance
        return cls.from_provenance(prov.get("sessions") or {}, prov.get("human_annotations") or {}, encoder)

    def differences(self, uses: Iterable[str], model: str | None = None, paper_model: str = PAPER_MODEL) -> list[str]:
        """The design differences of a quantity made of `uses` (and always the data)."""
        uses = set(uses)
        ours: dict[str, Any] = {"data source": self.data_source}
        paper: dict[str, Any] = {"data source": PAPER_DATA}
        if "agent" in uses:
            ours["agent model"], paper["agent model"] = model or "unknown", paper_model
        if "annotator" in uses:
            ours["annotator"], paper["annotator"] = self.annotator or "unknown", PAPER_MODEL
        if "on_topic" in uses:
            ours["on-topic prompt"], paper["on-topic prompt"] = self.on_topic_prompt, PAPER_ON_TOPIC_PROMPT
        if "encoder" in uses:
            ours["encoder"], paper["encoder"] = self.encoder or "unknown", PAPER_ENCODER
        return vs_paper.differences(ours, paper)

    def encoder_note(self, metric: str) -> str:
        """ "; encoder: <name>" for a metric made of sentence embeddings, else ""."""
        return f"; encoder: {self.encoder or 'unknown'}" if "encoder" in METRIC_USES.get(metric, ()) else ""


def union(lists: Iterable[Iterable[Any]]) -> list[Any]:
    """The items of `lists`, each once, in order."""
    return list(dict.fromkeys(x for xs in lists for x in xs))


def variable_uses(source: str, var: str) -> frozenset[str]:
    """What a Sect. 6 variable of a source is made of: tweet stances are annotated; the twins'
    round-2/3 tweets and final opinion are the agent's; the round-1 tweet and o_init are the humans'."""
    uses = {"annotator"} if var.startswith("s") else set()
    if source == "llm" and var in ("s2", "s3", "o_final"):
        uses.add("agent")
    return frozenset(uses)
