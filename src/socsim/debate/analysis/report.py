"""The DEBATE report (paper 003): `analyse(inputs) -> Report`, the one analysis signature.

The base report holds what is measured without a claim (Sect. 6's members, Appendix H's tests as a
document, the run's summary); `socsim.io.claims.assemble` adds each claim of claims.CLAIMS (its
findings, vs_paper rows, flags and the tables it is judged with), then the report gets its design
differences, the table of flags with where they apply, and the plot table of every figure (plots)."""

from __future__ import annotations

import pandas as pd

from socsim.debate.analysis.claims import CLAIMS, table
from socsim.debate.analysis.design import union
from socsim.debate.analysis.measures import Evidence, evidence
from socsim.debate.analysis.plots import plots
from socsim.io.claims import assemble
from socsim.io.report import AnalysisInputs, Report, Table
from socsim.stats import degeneracy as dg

TITLE = "DEBATE (paper 003): our run beside the paper's Tables 3, 4, 9, 10 and Figs. 2, 3"


def base(ev: Evidence) -> Report:
    """The measured part of the report: Sect. 6's members, Appendix H (appendix_h.json), the summary."""
    rep = Report(TITLE)
    f, run = ev.flags, ev.run
    rep.tables["members"] = table(
        ev.mem,
        f"Sect. 6 members (Depth, Mode 3, {ev.model}): tweet stances and opinions",
        [],
        dg.collect(f.stance_tweets_human, f.stance_tweets_llm, f.opinions_llm),
    )
    rep.summary.update(
        groups_sect6=int(ev.mem.session_id.nunique()),
        members_sect6=int(len(ev.mem) // 2),
        topics_sect6=len({ev.topics[s] for s in ev.mem.session_id.unique()}),
        settings=int(len(ev.metrics)),
        data_source=run.data_source,
        data=dict(run.data),
        annotator=run.annotator,
        on_topic_prompt=run.on_topic_prompt,
        encoder=run.encoder,
    )
    rep.documents["appendix_h.json"] = ev.appendix_h
    return rep


def analyse(inputs: AnalysisInputs) -> Report:
    """The DEBATE report from `inputs`: the tables measures.INPUTS, the comparison folder
    (`inputs.dirs["comparison"]`: the compare stage's utterance metrics and encoder.json), the debate
    params, the paper's numbers, and the provenance of `sessions` and `human_annotations` (the run's
    design: data source, annotator; unknown: every row differs in design)."""
    ev = evidence(inputs)
    rep = assemble(base(ev), CLAIMS, ev)
    rep.design = union(r.design or [] for r in rep.vs_paper) or ev.run.differences({"agent", "annotator", "encoder"})
    rep.tables["flags"] = Table(
        pd.DataFrame(
            [{**f.flag.as_dict(), "where": w} for f in rep.flags for w in f.where],
            columns=["scope", "reason", "message", "where"],
        ),
        "DEBATE: degeneracy flags and the tables, rows and figure panels they concern",
    )
    rep.plots = plots(rep, ev)
    rep.printed = [f.flag.message for f in rep.flags]
    rep.metrics = {
        "degeneracy_flags": len(rep.flags),
        "design_differences": rep.design,
    }
    return rep
