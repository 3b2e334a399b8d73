"""Our run beside the paper's Tables 3 and 4 and the numbers of its Figs. 6, 7 and 9a
(`data/coherence/paper.yaml`), as socsim.io.vs_paper rows: each row with the flags of its own inputs,
the verdict its claim's judge gives it (socsim.coherence.analysis.claims, by the one rule in
socsim.stats.verdict) and the design differences between what we ran and what the paper ran (agent
model, judge, statements per agent, topics, a test's unit or rule).

Like with like (issue 20, item 4): a row with any design difference gives no verdict of agreement
with the paper. Its Table 4 rows claim "<our model> passes Test t (our run)" and give our run's
verdict by the rule, with the paper's "Qwen2.5-7B fails Test 2" in the note; its suppression and
Finding 3 rows give our run's verdict on the claim, and their note says it is ours only. Only a row
whose design matches the paper's says whether the paper's result holds in our run (`_paper_says`).

Issue 34: Tests 1 and 5 are judged with the agent as unit and Test 4 with the topic as unit, the paper's
with the conversation (`table4.test_units`): their rows name the unit as a design difference, the
paper's conversation-level p in the note. Test 6's rule is ours in every setting (the paper does not
say whether every or any corrected comparison must be significant; `table4.test6_rule` is null): its
rows always name "Test 6 rule" as a design difference, the "any" reading in the note.

Each claim's judge builds its rows here from the run's evidence (socsim.coherence.analysis.evidence.
Evidence) and the verdicts it gave, per agent model (`model_rows`: the flags and design differences
its rows share): `table3_rows`, `suppression_rows`, `table4_row`, `anchor_rows`, `contentiousness_row`
and `self_bleu_row`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from socsim.coherence.analysis import descriptive
from socsim.coherence.analysis.evidence import Evidence
from socsim.coherence.analysis.flags import TABLE_INPUTS, flags_of
from socsim.io.vs_paper import Row, differences
from socsim.stats import degeneracy as dg
from socsim.stats.verdict import Verdict

OUR_UNITS = {1: "agents", 4: "topics", 5: "agents"}  # where our test's unit is not the conversation
RULE_NAMES = {"strict": "our reading of the paper's text", "pooled": "ours, not a reading of the paper's text"}


def design_of_test6_rule(rule: str, paper_rule: str | None = None) -> list[str]:
    """The design difference of a Test 6 row run under `rule`: every rule of ours is one, unless the
    paper states a rule and it is ours (paper.yaml's table4.test6_rule)."""
    if paper_rule is not None and rule == paper_rule:
        return []
    theirs = paper_rule or "not stated (every or any Bonferroni-corrected comparison significant)"
    return [f"Test 6 rule: ours {rule} ({RULE_NAMES.get(rule, 'ours')}), paper {theirs}"]


def design_of_unit(test: int, paper: dict[str, Any]) -> list[str]:
    """The design difference of a Table 4 row whose test has another unit than the paper's."""
    theirs = (paper.get("table4", {}).get("test_units") or {}).get(test)
    ours = OUR_UNITS.get(test, "conversations")
    if theirs is None or theirs == ours:
        return []
    return [f"Test {test} unit: ours {ours}, paper {theirs}"]


def _paper_model(paper: dict[str, Any], model: str) -> tuple[str, dict[str, Any]] | tuple[None, None]:
    for name, entry in (paper.get("table4", {}).get("models") or {}).items():
        if model.lower() in [a.lower() for a in entry.get("aliases", [])] + [name.lower()]:
            return name, entry
    return None, None


def _paper_name(paper: dict[str, Any], model: str) -> str:
    """Our registry name as the paper writes it (qwen2.5-7b -> Qwen2.5-7B), else as it is."""
    name, _ = _paper_model(paper, model)
    return name or model


def design_differences(ours: dict[str, Any], paper: dict[str, Any], paper_design: dict[str, Any]) -> list[str]:
    """How one model's run differs from the paper's design (model names mapped to the paper's)."""
    shown = dict(ours)
    for key in ("agent model", "judge model"):
        if key in shown:
            v = shown[key]
            shown[key] = [_paper_name(paper, x) for x in v] if isinstance(v, list) else _paper_name(paper, v)
    return differences(shown, paper_design)


def _paper_design(paper: dict[str, Any]) -> dict[str, Any]:
    d = paper.get("design") or {}
    return {
        "agent model": d.get("agent_model"),
        "judge model": d.get("judge_model"),
        "statements per agent": d.get("statements_per_agent"),
        "topics": d.get("topics"),
    }


def _paper_says(entry_passes: bool, ours: Verdict) -> Verdict:
    """Whether the paper's "passes" / "fails" for a model holds in our run: a pass needs our test
    to pass, a fail our test to fail (reject the other way); a non-rejection is inconclusive. Only
    for a row without a design difference (issue 20, item 4): `table4_claim` gives any other row our
    run's verdict alone."""
    if ours.holds is None:
        return ours
    if ours.holds == entry_passes:
        return Verdict(True, ours.reason)
    return Verdict(False, f"ours {'passes' if ours.holds else 'fails'}: {ours.reason}")


ACROSS_DESIGN = "design differs from the paper: our run's verdict only, no verdict of agreement with the paper's"


def table4_claim(
    model: str, test: int, paper_text: str, paper_passes: bool | None, ours: Verdict | None, design: Sequence[str]
) -> tuple[str, Verdict | None, str]:
    """(finding, verdict, note) of a Table 4 row. Like with like (no design difference): the paper's
    claim (`paper_text`, "Qwen2.5-7B fails Test 2") and whether it holds in our run (`_paper_says`).
    With any design difference (model, judge, statements, topics): no verdict of agreement; the
    finding is our model passing the test and the verdict our run's own by the rule (yes: it passes,
    no: it fails, inconclusive), the paper's claim only in the note."""
    if not paper_text or paper_passes is None:
        return "", None, ""  # the paper makes no claim here: nothing to judge
    if not design:
        return paper_text, None if ours is None else _paper_says(paper_passes, ours), ""
    return f"{model} passes Test {test} (our run)", ours, f"{ACROSS_DESIGN}; paper: {paper_text}"


def _val(table: pd.DataFrame, gap: int, col: str) -> float | None:
    if gap not in table.index or col not in table.columns:
        return None
    v = table.loc[gap, col]
    return None if pd.isna(v) else float(v)


def _note(table: pd.DataFrame, gap: int, flagged: bool) -> str:
    """A suppression row's note: its n (and gap 0's), and the table's note unless its inputs are flagged."""
    n = _val(table, gap, "n")
    text = table.loc[gap, "note"] if gap in table.index else "n/a: no suppression table"
    text = text if isinstance(text, str) else ""
    n0 = _val(table, gap, "n_gap0") if gap > 0 else None
    shown = (f"n = {int(n)}" if n is not None else "") + (f" (gap 0: {int(n0)})" if n0 is not None else "")
    return shown + (f"; {text}" if text and not flagged else "")


@dataclass(frozen=True)
class ModelRows:
    """What every vs_paper row of one agent model shares: Table 3's input flags and its design
    differences from the paper (model names mapped to the paper's)."""

    model: str
    flags: list[dg.Flag]
    design: list[str]


def model_rows(ev: Evidence, model: str) -> ModelRows:
    ours = ev.design.get(model, {"agent model": model})
    flags = flags_of(ev.flags.get(model, {}), TABLE_INPUTS["suppression"])  # Table 3's inputs
    return ModelRows(model, flags, design_differences(ours, dict(ev.paper), _paper_design(dict(ev.paper))))


def _panel(ev: Evidence, model: str, panel: str) -> pd.DataFrame:
    supp = ev.tables["suppression"]
    return supp[(supp["model"] == model) & (supp["panel"] == panel)].set_index("gap")


def _supp_row(m: ModelRows, quantity: str, ours: float | None, theirs: Any, table: pd.DataFrame, gap: int) -> Row:
    return Row(quantity, ours, theirs, flags=m.flags, design=m.design, note=_note(table, gap, bool(m.flags)))


def table3_rows(ev: Evidence, m: ModelRows) -> list[Row]:
    """Table 3's distributions at gap 0 (observed) and 4 (expected), and the gap-4 means of sect. 4.1."""
    t3, sp = ev.paper.get("table3", {}), ev.paper.get("suppression", {})
    lin, model = _panel(ev, m.model, "linear shift"), m.model
    rows = [
        _supp_row(
            m,
            f"Table 3: P(score {k}) at gap 0, observed ({model})",
            _val(lin, 0, f"observed_p{k}"),
            t3.get("observed_gap0", {}).get(k),
            lin,
            0,
        )
        for k in range(1, 6)
    ]
    rows += [
        _supp_row(
            m,
            f"Table 3: P(score {k}) at gap 4, expected ({model})",
            _val(lin, 4, f"expected_p{k}"),
            t3.get("expected_gap4", {}).get(k),
            lin,
            4,
        )
        for k in range(1, 6)
    ]
    for what in ("observed", "expected"):
        rows.append(
            _supp_row(
                m, f"Mean agreement at gap 4, {what} ({model})", _val(lin, 4, what), sp.get(f"{what}_mean_gap4"), lin, 4
            )
        )
    return rows


def suppression_rows(ev: Evidence, m: ModelRows, verdicts: Mapping[str, Mapping[int, Verdict]]) -> list[Row]:
    """Observed minus expected mean per gap under either shift, each with our run's verdict on
    "disagreement suppressed" at that gap (`verdicts`: shift -> gap -> verdict), and the linear shift's
    ratios (sect. 4.1)."""
    sp, model = ev.paper.get("suppression", {}), m.model
    lin, sig = _panel(ev, model, "linear shift"), _panel(ev, model, "sigmoid shift")
    finding = sp.get("finding", "disagreement suppressed")
    rows = []
    for label, table, key in (("linear", lin, "linear_difference"), ("sigmoid", sig, None)):
        for gap in (4, 3, 2, 1):
            r = _supp_row(
                m,
                f"Observed - expected mean at gap {gap}, {label} shift ({model})",
                _val(table, gap, "difference"),
                sp.get(key, {}).get(gap) if key else None,
                table,
                gap,
            )
            r.finding = f"{finding} (here: at gap {gap})"
            # a model without a usable conversation: n/a (the note says why)
            r.verdict = None if model in ev.summary["no_data"] else verdicts[label][gap]
            if m.design and r.verdict is not None:  # our run's verdict on the claim, not agreement
                r.note = "; ".join(x for x in (r.note, ACROSS_DESIGN) if x)
            rows.append(r)
    for gap in (4, 3, 2, 1):
        rows.append(
            _supp_row(
                m,
                f"Suppression (observed / expected) at gap {gap}, linear shift ({model})",
                _val(lin, gap, "suppression"),
                sp.get("linear_suppression", {}).get(gap),
                lin,
                gap,
            )
        )
    return rows


def _table4_design(ev: Evidence, m: ModelRows) -> list[str]:
    """The design differences of a model's Table 4 rows: its paper row's model and judge where the paper
    has one (Table 4's models are judged by the paper's judge unless the row names its own)."""
    paper = dict(ev.paper)
    name, entry = _paper_model(paper, m.model)
    if entry is None:
        return m.design
    base = _paper_design(paper)
    theirs = {**base, "agent model": name, "judge model": entry.get("judge") or base["judge model"]}
    return design_differences(ev.design.get(m.model, {"agent model": m.model}), paper, theirs)


def _paper_claim(ev: Evidence, model: str, t: int) -> tuple[str, bool | None]:
    """The paper's claim about Test t for a model (its Table 4 row, else its findings), and whether
    the paper says it passes."""
    name, entry = _paper_model(dict(ev.paper), model)
    findings = ev.paper.get("table4", {}).get("findings", {})
    if entry is not None:
        passes = bool(entry["tests"][t - 1])
        return f"{name} {'passes' if passes else 'fails'} Test {t}", passes
    if t in findings:
        return findings[t]["text"], findings[t]["expect"] == "pass"
    return "", None


def table4_row(ev: Evidence, m: ModelRows, t: int, ours: Verdict) -> Row:
    """Table 4's cell of Test t for a model, ours beside the paper's (`ours`: our run's verdict), with
    the test's own flags, its unit and rule as design differences and what stands beside the verdict
    in the note."""
    paper, model = dict(ev.paper), m.model
    tests = ev.tables["six_tests"]
    r = tests[(tests["model"] == model) & (tests["test"] == t)].iloc[0]
    rule = ev.summary.get("test6_rule", "strict")
    row_design = [*_table4_design(ev, m), *design_of_unit(t, paper)]
    row_design += design_of_test6_rule(rule, paper.get("table4", {}).get("test6_rule")) if t == 6 else []
    name, entry = _paper_model(paper, model)
    theirs = None if entry is None else float(entry["tests"][t - 1])
    na = r["raw_result"] == "n/a"
    text, paper_passes = _paper_claim(ev, model, t)
    finding, verdict, across = table4_claim(model, t, text, paper_passes, None if na else ours, row_design)
    own_flags = ev.test_flags.get(model, {}).get(t, [])
    why = f"n/a: {r['detail']}" if na and not own_flags else ""
    where = "paper has no row for this model" if entry is None else f"paper row: {name}"
    rule_note = f"Test 6 rule: {r['rule']}" if t == 6 and isinstance(r.get("rule"), str) and r["rule"] else ""
    beside = r.get("beside") if isinstance(r.get("beside"), str) and not na else ""
    return Row(
        f"Table 4: Test {t} passed (1) or failed (0) ({model})",
        {"pass": 1.0, "fail": 0.0}.get(r["result"]),
        theirs,
        finding,
        verdict=verdict,
        flags=own_flags,
        design=row_design,
        note="; ".join(x for x in (why or where, rule_note, beside, across) if x),
    )


def anchor_rows(ev: Evidence, m: ModelRows, finding3: Verdict) -> list[Row]:
    """Fig. 6's anchor differences at gaps 0 and 3; gap 0 with Finding 3's claim, (1-1) below (5-5),
    and its verdict (`finding3`)."""
    anchors, model, paper = ev.tables["anchors"], m.model, ev.paper
    paper_anchor = (paper.get("anchors") or {}).get("difference") or {}
    rows = []
    for gap in (0, 3):
        part = anchors[(anchors["model"] == model) & (anchors["gap"] == gap)]
        r = part.iloc[0] if len(part) else None
        at1, at5 = descriptive.anchor_pairs(gap)
        value = None if r is None or pd.isna(r["difference"]) else float(r["difference"])
        note = "" if r is None else f"n = {int(r['n_at_5'])} ({at5}), {int(r['n_at_1'])} ({at1})"
        row = Row(f"Fig. 6: mean agreement ({at5}) minus ({at1}), gap {gap} ({model})", value, paper_anchor.get(gap))
        row.flags, row.design, row.note = m.flags, m.design, note
        if gap == 0:
            row.finding = (paper.get("anchors") or {}).get("finding", "(1-1) pairs agree less than (5-5) pairs")
            row.verdict = None if model in ev.summary["no_data"] else finding3
            if m.design and row.verdict is not None:
                row.note = "; ".join(x for x in (row.note, ACROSS_DESIGN) if x)
        rows.append(row)
    return rows


def contentiousness_row(ev: Evidence, m: ModelRows) -> Row:
    """Fig. 7a's count of preference pairs at C = 3 outside the neutral (C = 1) interval."""
    c = ev.paper.get("contentiousness") or {}
    k, n = descriptive.outside_count(ev.tables["contentiousness_vs_neutral"], m.model, "all", 3)
    return Row(
        f"Fig. 7a: preference pairs at C = 3 outside the neutral (C = 1) interval ({m.model})",
        float(k) if n else None,
        c.get("outside_neutral_at_c3"),
        note=f"ours {k} of {n} pairs with data at C = 1 and 3; paper {c.get('outside_neutral_at_c3')} of "
        f"{c.get('pairs')}",
        flags=m.flags,
        design=m.design,
    )


def self_bleu_row(ev: Evidence, m: ModelRows) -> Row:
    """Fig. 9a's share of conversations removed by the Self-BLEU filter."""
    sb, summary, model = ev.paper.get("self_bleu") or {}, ev.summary, m.model
    share = summary.get("removed_by_self_bleu_share_by_model", {}).get(model)
    judged = summary.get("judged_by_model", {}).get(model)
    removed = summary.get("removed_by_self_bleu_by_model", {}).get(model)
    return Row(
        f"Fig. 9a: conversations removed by the Self-BLEU filter, % ({model})",
        None if share is None else 100 * float(share),
        sb.get("removed_percent"),
        note=f"{removed} of {judged} judged conversations with usable profiles; threshold ours "
        f"{summary.get('self_bleu_threshold')}, paper {sb.get('threshold')}",
        design=m.design,
    )
