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

TITLE = "DEBATE (paper 003): our run beside the paper's Tables 3, 4, 9, 10 and Figs. 2, 3"


def base(ev: Evidence) -> Report:
    """The measured part of the report: Sect. 6's members (per agent model, the first model's table
    `members`), Appendix H (appendix_h.json), the summary (Sect. 6's counts: the first model's groups)."""
    rep = Report(TITLE)
    run = ev.run
    for tw in ev.sect6.values():
        rep.tables[tw.table("members")] = table(
            tw.mem,
            f"Sect. 6 members (Depth, Mode 3, {tw.model}): tweet stances and opinions",
            [],
            tw.sect6_flags,
        )
    mem = ev.first.mem
    rep.summary.update(
        groups_sect6=int(mem.session_id.nunique()),
        members_sect6=int(len(mem) // 2),
        topics_sect6=len({ev.topics[s] for s in mem.session_id.unique()}),
        settings=int(len(ev.metrics)),
        data_source=run.data_source,
        data=dict(run.data),
        annotator=run.annotator,
        on_topic_prompt=run.on_topic_prompt,
        encoder=run.encoder,
    )
    if len(ev.sect6) > 1:  # the counts above are the first model's groups
        rep.summary["groups_sect6_by_model"] = {m: int(tw.mem.session_id.nunique()) for m, tw in ev.sect6.items()}
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
