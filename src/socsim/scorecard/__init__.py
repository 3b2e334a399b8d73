"""The scorecard: every paper finding beside every model that answered, from any set of finished reports.

Sources: the report folders of finished runs (an analysis folder: `findings.parquet`, `provenance.json`,
`summary.json`; or any folder above them, e.g. a run's `results/`), each under a label: `LABEL=PATH`, or by
default what its data are (`generated` for a run's own simulations, `syndisco_release` / `syndisco_revision`
for paper 000's released data). One table and one figure:

- rows: each study's findings (socsim.io.findings: the ids a study declares, each finding of a report names
  one, with its scope and part), one per finding id and part, in the study's order, with the paper version
  that states it; a finding's counterpart in the other version of the paper (paper 000) right after it, with
  what differs (a part of a finding that the report also judges whole stays in the study's own findings);
- columns: the paper's own result first, then one per source and whom it judged: each registry model (the
  identity that answered, from the run's metrics; a control, the planted model, last), all models together
  (only for findings that no model of that source was judged on alone), and the humans of a named data set
  (DEBATE's humans: the release, the fixture, the planted control's synthetic humans), never merged across
  sources;
- cells: the verdict by the one rule (holds / no / inconclusive / degenerate), "not claimed in this version"
  where the source judged the study on the paper's other version, or "not run"; the effect with its interval
  where the claim's test gives one, its unit and n, and the reason when it is not a verdict.

Refused, with a message: a report of another socsim version (or without the columns of this one), a report
with findings of ids its study does not declare (named), a path with no report, and two reports of one study,
model and source (two runs of one model: label them apart). A report folder inside an RO-Crate below the
given folder is the run's own report linked (`make run`'s results/rocrate), not read twice.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import socsim
from socsim.io import tables
from socsim.io.findings import ALL_MODELS, study_findings, undeclared
from socsim.io.model_record import records
from socsim.io.parquet import write_json
from socsim.io.report import FINDING_COLUMNS
from socsim.planted import MODEL_IDS, control_label, is_control_id
from socsim.planted.answers import mark as planted_mark
from socsim.stats.verdict import ALPHA

POOLED = ALL_MODELS  # the column of findings judged on a source's models together
NOT_RUN = "not run"
NOT_CLAIMED = "not claimed in this version"
VERDICTS = ("holds", "no", "inconclusive", "degenerate", NOT_CLAIMED, NOT_RUN)
COLUMNS = [
    "study", "finding_id", "part", "claim", "version", "where", "paper", "counterpart", "differs", "source", "model",
    "identity", "control", "mark", "verdict", "label", "value", "ci_low", "ci_high", "unit", "n", "statistic", "test",
    "reason", "report",
]  # fmt: skip
TABLE = "scorecard"


class ScorecardError(ValueError):
    """Input the scorecard refuses (the CLI prints it as an error)."""


@dataclass
class Folder:
    """One report folder read: its study, the source it is labelled with, its findings and what answered."""

    path: Path
    study: str
    stage: str
    source: str
    findings: pd.DataFrame
    identities: dict[str, str] = field(default_factory=dict)  # model name -> the identity that answered, in words
    controls: set[str] = field(default_factory=set)  # model names that are planted models
    provenance: dict[str, Any] = field(default_factory=dict)


def study_names() -> list[str]:
    """The registered studies, in the registry's order (the scorecard's row groups)."""
    from socsim import studies

    return [s.name for s in studies.all_studies()]


# -- reading ---------------------------------------------------------------------------------------------


def report_folders(path: Path) -> list[Path]:
    """The report folders at or under `path` (a folder with findings.parquet and provenance.json)."""
    if not path.exists():
        raise ScorecardError(f"{path}: no such file or folder")
    if (path / "findings.parquet").is_file():
        return [path]
    found = sorted(
        f.parent
        for f in path.rglob("findings.parquet")
        if (f.parent / "provenance.json").is_file() and not _in_crate(f.parent, path)
    )
    if not found:
        raise ScorecardError(
            f"{path}: no report folder under it (an analysis folder with findings.parquet and provenance.json, "
            "written by a study's analyse stage)"
        )
    return found


def _in_crate(folder: Path, root: Path) -> bool:
    """Whether `folder` lies inside an RO-Crate below `root` (a folder with ro-crate-metadata.json): `make run`'s
    results/rocrate holds a link of every report of the run, which is the same report, not a second run's. A crate
    given as `root` itself is read."""
    return any(
        (root / d / "ro-crate-metadata.json").is_file() for d in folder.relative_to(root).parents if d != Path(".")
    )


def _identity(identity: Mapping[str, Any]) -> str:
    model = identity.get("model_id") or identity.get("model") or "?"
    sha = identity.get("model_sha")
    runtime = identity.get("runtime") or identity.get("backend") or ""
    return f"{model}{'@' + str(sha)[:8] if sha else ''} ({runtime})" if runtime else str(model)


def _answered(folder: Path) -> dict[str, dict[str, Any]]:
    """The identities that answered in the run of a report folder: its study's metrics (every LLM stage
    records each model's identity there), model name -> identity."""
    out: dict[str, dict[str, Any]] = {}
    for metrics in (folder.parent / "metrics", folder.parent.parent / "metrics"):
        if not metrics.is_dir():
            continue
        for f in sorted(metrics.rglob("*.json")):
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            for name, m in records(data).items():
                if m.identity:
                    out.setdefault(name, dict(m.identity))
        break
    return out


def _source_kind(prov: Mapping[str, Any]) -> str:
    given = (prov.get("data_source") or {}).get("source")
    if given:
        return str(given)
    return "syndisco_revision" if str(prov.get("stage", "")).endswith("analyse_revision") else "generated"


def read_folder(path: Path, label: str | None = None) -> Folder:
    """A report folder, checked: written by this socsim version, with this version's findings columns."""
    try:
        prov = json.loads((path / "provenance.json").read_text(encoding="utf-8"))
        json.loads((path / "summary.json").read_text(encoding="utf-8"))  # (a report folder's: read to check it)
    except (OSError, ValueError) as exc:
        raise ScorecardError(f"{path}: not a readable report folder ({exc})") from None
    stage = str(prov.get("stage") or "")
    study = stage.split(".")[0]
    if study not in study_names():
        raise ScorecardError(
            f"{path}: its provenance names the stage {stage!r}, of no study ({', '.join(study_names())})"
        )
    version = prov.get("socsim_version")
    findings = tables.read(path, "findings")
    missing = [c for c in FINDING_COLUMNS if c not in findings.columns]
    if version != socsim.__version__ or missing:
        why = f"its findings lack {', '.join(missing)}" if missing else f"written by socsim {version}"
        raise ScorecardError(
            f"{path}: a report of another socsim version ({why}; this is socsim {socsim.__version__}): re-run its "
            f"analysis with this version (`socsim {study} {stage.split('.')[-1]} --help`, or the run's analyse stage)"
        )
    answered = _answered(path)
    folder = Folder(path, study, stage, label or _source_kind(prov), findings, provenance=prov)
    folder.identities = {n: _identity(i) for n, i in answered.items()}
    folder.controls = {n for n, i in answered.items() if is_control_id(i.get("model_id"))}
    return folder


def _word(row: Mapping[str, Any]) -> str:
    verdict = str(row["verdict"])
    if verdict.startswith("degenerate input"):
        return "degenerate"
    holds = row["holds"]
    if holds is True or verdict == "yes":
        return "holds"
    return "no" if holds is False else "inconclusive"


def _num(v: Any) -> float | None:
    return None if v is None or pd.isna(v) or not math.isfinite(float(v)) else float(v)


def _unrecorded(folder: Folder, model: str) -> str:
    """The identity of a model the report names but the run's metrics do not (a released data set's models)."""
    pooled = model == POOLED
    if folder.source.startswith("syndisco"):
        return "the authors' released data (every model pooled)" if pooled else "the authors' released data"
    return "all the run's models" if pooled else "not recorded"


def _column_of(folder: Folder, kind: str, name: str) -> tuple[str, str, bool]:
    """A finding's column within its source: (the column's subject, the identity that answered, control)."""
    if kind == "humans":
        return f"humans ({name})", f"the humans of {name}", False
    if kind == "all":
        return POOLED, _unrecorded(folder, POOLED), False
    return name, folder.identities.get(name, _unrecorded(folder, name)), name in folder.controls


def long_rows(folder: Folder) -> list[dict[str, Any]]:
    """One row per finding of a report folder, on its typed identity (finding id, scope, part): a part of a
    finding judged whole in the same report and scope left out, a finding judged on all models together left
    out where models were judged alone. Findings of ids the study does not declare are refused, named."""
    declared = study_findings(folder.study)
    ids = [str(i) for i in folder.findings["finding_id"]]
    unknown = undeclared(ids, declared)
    if unknown:
        raise ScorecardError(
            f"{folder.path}: findings of ids {folder.study} does not declare ({', '.join(unknown)}): declare them "
            f"in socsim.{folder.study}.findings, or re-run the analysis with this socsim"
        )
    rows = []
    for _, f in folder.findings.iterrows():
        kind, fid, part = str(f["scope_kind"]), str(f["finding_id"]), str(f["part"] or "")
        model, identity, control = _column_of(folder, kind, str(f["scope"]))
        rows.append(
            {
                "study": folder.study,
                "finding_id": fid,
                "part": part,
                "source": folder.source,
                "model": model,
                "scope_kind": kind,
                "identity": identity,
                "control": control,
                "verdict": _word(f),
                "label": str(f["verdict"]),
                "value": _num(f["value"]),
                "ci_low": _num(f["ci_low"]),
                "ci_high": _num(f["ci_high"]),
                "unit": str(f["unit"]),
                "n": None if pd.isna(f["n"]) else int(f["n"]),
                "statistic": str(f["statistic"]),
                "test": str(f["test"]),
                "reason": str(f["reason"] or ""),
                "report": str(folder.path),
            }
        )
    whole = {(r["model"], r["finding_id"]) for r in rows if not r["part"]}
    per_model = {(r["finding_id"], r["part"]) for r in rows if r["scope_kind"] == "model"}
    return [
        r
        for r in rows
        if not (r["part"] and (r["model"], r["finding_id"]) in whole)
        and not (r["scope_kind"] == "all" and (r["finding_id"], r["part"]) in per_model)
    ]


def _parse_source(arg: str) -> tuple[str | None, Path]:
    label, sep, path = arg.partition("=")
    return (label, Path(path)) if sep and label and "/" not in label else (None, Path(arg))


def read_sources(args: Iterable[str]) -> list[Folder]:
    """Every report folder of the given `[LABEL=]PATH`s; two reports of one study, model and source refused."""
    folders = [read_folder(p, label) for label, path in map(_parse_source, args) for p in report_folders(path)]
    seen: dict[tuple[str, str, str], Path] = {}
    for folder in folders:
        for model in sorted({r["model"] for r in long_rows(folder)}):
            key = (folder.study, model, folder.source)
            if key in seen and seen[key] != folder.path:
                whom = model if model.startswith("humans (") else f"the model {model}"  # (two runs on one data set)
                raise ScorecardError(
                    f"two reports of {folder.study} judge {whom} from the source {folder.source!r}: "
                    f"{seen[key]} and {folder.path}; give them labels of their own (LABEL=PATH, e.g. "
                    f"run-a={seen[key]} run-b={folder.path}), the scorecard never merges two runs"
                )
            seen[key] = folder.path
    return folders


# -- the table ----------------------------------------------------------------------------------------


def column_name(source: str, model: str) -> str:
    return f"{model} · {source}"


KIND_ORDER = {"model": 0, "all": 1, "humans": 2}  # language models, all models together, humans; controls last


def row_order(study: str, present: Iterable[str]) -> list[str]:
    """The finding ids of `study` in `present`, in the order the study declares them, each counterpart right
    after the first of the two (the two versions' related findings side by side)."""
    declared, present = study_findings(study), set(present)
    out: list[str] = []
    for fid, f in declared.items():
        for i in (fid, f.counterpart):
            if i and i in present and i not in out:
                out.append(i)
    return out


def _findings_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The table's rows: one per (study, finding id, part), with the paper's side (wording, version, place,
    result, counterpart and what differs)."""
    rows = []
    for study in [s for s in study_names() if s in set(df["study"])]:
        declared = study_findings(study)
        mine = df[df["study"] == study]
        for fid in row_order(study, mine["finding_id"]):
            f = declared[fid]
            for part in sorted(set(mine.loc[mine["finding_id"] == fid, "part"])):
                counterpart = declared.get(f.counterpart)
                rows.append(
                    {
                        "study": study,
                        "finding_id": fid,
                        "part": part,
                        "claim": f.wording + (f" ({part})" if part else ""),
                        "version": f.version,
                        "where": f.where,
                        "paper": f.paper,
                        "counterpart": f.counterpart,
                        "differs": f"counterpart of {f.counterpart} ({counterpart.version}): {f.differs}"
                        if counterpart
                        else "",
                    }
                )
    return pd.DataFrame(rows)


def scorecard(folders: Sequence[Folder]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The long table (one row per cell: a finding of a study, by id and part, on one column: a source and
    whom it judged; "not claimed in this version" where the source judged the study on another version of the
    paper, "not run" where it did not judge that finding on that column or did not run the study) and the
    columns' description (column, source, model, identity, control): language models first, then all models
    together, then the humans, controls last."""
    rows = [r for f in folders for r in long_rows(f)]
    if not rows:
        raise ScorecardError("the reports hold no findings")
    df = pd.DataFrame(rows)
    cols = (
        df.groupby(["source", "model"], sort=False)
        .agg(identity=("identity", "first"), control=("control", "any"), kind=("scope_kind", "first"))
        .reset_index()
    )
    cols["order"] = [KIND_ORDER[k] for k in cols["kind"]]
    cols = cols.sort_values(["control", "order", "source", "model"], kind="stable").drop(columns=["order"])
    cols.insert(0, "column", [column_name(s, m) for s, m in zip(cols["source"], cols["model"], strict=True)])
    findings = _findings_rows(df)
    full = findings.merge(cols[["source", "model", "identity", "control"]], how="cross")
    out = full.merge(
        df.drop(columns=["identity", "control", "scope_kind"]),
        on=["study", "finding_id", "part", "source", "model"],
        how="left",
    )
    versions = {  # (source, study) -> the paper versions its findings speak to
        key: {study_findings(key[1])[i].version for i in g["finding_id"]}
        for key, g in df.groupby(["source", "study"], sort=False)
    }
    judged = out["verdict"].notna()
    ran = [(s, st) in versions for s, st in zip(out["source"], out["study"], strict=True)]
    other = [
        r and v not in versions[(s, st)]
        for r, s, st, v in zip(ran, out["source"], out["study"], out["version"], strict=True)
    ]
    out["verdict"] = out["verdict"].where(judged, [NOT_CLAIMED if o else NOT_RUN for o in other])
    out["label"] = out["label"].fillna(out["verdict"])

    def not_judged(ran: bool, study: str, fid: str) -> str:
        if not ran:
            return f"this source did not run {study}"
        if study_findings(study)[fid].across_models:
            return "it compares the models: judged on the models together, not on one model alone"
        if study_findings(study)[fid].against_humans:
            return "it compares the generated discussions with people's: judged in the humans' column"
        return "no such finding in this source's report"

    reasons = [
        f"this source judged {st} on the paper's {', '.join(sorted(versions[(s, st)]))} version"
        if o
        else not_judged(r, st, fid)
        for o, r, s, st, fid in zip(other, ran, out["source"], out["study"], out["finding_id"], strict=True)
    ]
    out["reason"] = out["reason"].where(judged, reasons)
    out["mark"] = [  # what a control's cell can speak to (socsim.planted.answers.mark)
        planted_mark(st, fid, str(i).startswith(MODEL_IDS["null"])) if c and j else ""
        for st, fid, i, c, j in zip(
            out["study"], out["finding_id"], out["identity"], out["control"], judged, strict=True
        )
    ]
    return out[COLUMNS].reset_index(drop=True), cols.reset_index(drop=True)


def cell_text(row: Mapping[str, Any], width: int = 0) -> str:
    """A cell in words: the verdict, the effect with its interval, n and unit; the reason when it is not a verdict."""
    verdict = str(row["verdict"])
    if verdict in (NOT_RUN, NOT_CLAIMED):
        return verdict
    parts = [verdict]
    if row.get("value") is not None and not pd.isna(row["value"]):
        effect = tables.cell(float(row["value"]), ".3g")
        if row.get("ci_low") is not None and not pd.isna(row["ci_low"]):
            effect += f" [{tables.cell(float(row['ci_low']), '.3g')}, {tables.cell(float(row['ci_high']), '.3g')}]"
        parts.append(effect)
    if row.get("n") is not None and not pd.isna(row["n"]):
        parts.append(f"n = {int(row['n'])} {row['unit']}")
    if verdict in ("inconclusive", "degenerate", "no") and row.get("reason"):
        parts.append(f"({row['reason']})")
    if row.get("mark"):
        parts.append(f"[{row['mark']}]")
    text = "; ".join(parts)
    return textwrap.shorten(text, width, placeholder=" ...") if width else text


def wide(long: pd.DataFrame, cols: pd.DataFrame) -> pd.DataFrame:
    """The table people read: one row per finding (study, its wording with its part, the paper version that
    states it), the paper's own result first, then one column per model and source, and what differs from the
    finding's counterpart in the other version."""
    long = long.assign(column=[column_name(s, m) for s, m in zip(long["source"], long["model"], strict=True)])
    long = long.assign(cell=[cell_text(r) for r in long.to_dict("records")])
    key = ["study", "finding_id", "part"]
    table = long.pivot_table(index=key, columns="column", values="cell", aggfunc="first", sort=False)
    table = table[list(cols["column"])]
    side = long.drop_duplicates(key).set_index(key)[["claim", "version", "paper", "differs"]]
    table = side[["claim", "version", "paper"]].join(table).join(side[["differs"]]).reset_index()
    table = table.drop(columns=["finding_id", "part"]).rename(columns={"paper": "the paper"})
    table.columns.name = None
    return table


def counts(long: pd.DataFrame) -> pd.DataFrame:
    """Each column's findings counted by verdict."""
    c = long.groupby(["source", "model"], sort=False)["verdict"].value_counts().unstack(fill_value=0)
    return c.reindex(columns=list(VERDICTS), fill_value=0).reset_index()


# -- writing --------------------------------------------------------------------------------------------


def write(folders: Sequence[Folder], out: Path, figure: bool = True) -> pd.DataFrame:
    """The scorecard of `folders` into `out`: scorecard.parquet (one row per cell: what code and the figure
    read), scorecard.csv / .md (the wide table people read), columns.csv, scorecard.png / .pdf, provenance.json
    naming every report it read. Returns the long table."""
    long, cols = scorecard(folders)
    out.mkdir(parents=True, exist_ok=True)
    tables.write_parquet(long, out / f"{TABLE}.parquet")
    shown = wide(long, cols)
    notes = [
        "Each cell: the verdict by the one rule (holds / no / inconclusive / degenerate; not claimed in this version, "
        "where the source judged the paper's other version; not run), the effect with its 95 % interval where the "
        "claim's test gives one, n and its unit, and why when it is not a verdict; a control's cell with a verdict "
        "ends with what it can speak to ([planted, powered], [planted, not powered here] or [not planted]).",
        *(
            f"{r.column}: {control_label(str(r.identity).split(' ')[0].split('@')[0])}"
            for r in cols[cols["control"]].itertuples()
        ),
        *(f"{r.column}: {r.identity}" for r in cols.itertuples()),
    ]
    tables.write(shown, out, "scorecard_table", "Scorecard: every paper finding beside every model", notes)
    tables.write(cols, out, "columns", "Scorecard columns: model, source, identity that answered", text=False)
    tables.write(counts(long), out, "counts", "Findings by verdict, per column")
    write_json(
        out / "provenance.json",
        {
            "socsim_version": socsim.__version__,
            "reports": [
                {
                    "path": str(f.path),
                    "study": f.study,
                    "stage": f.stage,
                    "source": f.source,
                    "git_commit": f.provenance.get("git_commit"),
                    "params_hash": f.provenance.get("params_hash"),
                    "identities": f.identities,
                }
                for f in folders
            ],
        },
    )
    if figure:
        from socsim.scorecard.figure import draw

        draw(long, cols, out, TABLE)
    return long


# A directional claim's rate of "holds" on a null: its one-sided level (docs/honest-results.md, "Sidedness"), 0.025,
# or less (coherence's one-sided 0.01).
NULL_RATE = ALPHA / 2
ALLOWANCE_LEVEL = 0.95


def null_allowance(n: int, rate: float = NULL_RATE, level: float = ALLOWANCE_LEVEL) -> int:
    """The most findings of `n` that may say "holds" on a null twin: the `level` quantile of Binomial(n, rate)."""
    from scipy import stats

    return int(stats.binom.ppf(level, n, rate)) if n else 0


def judged(long: pd.DataFrame) -> pd.Series:
    """The cells of the long table that hold a verdict (not "not run", not "not claimed in this version")."""
    return ~long["verdict"].isin([NOT_RUN, NOT_CLAIMED])


def null_lines(long: pd.DataFrame) -> list[str]:
    """For each null twin's column: its directional findings that hold beside their binomial allowance (each at its
    one-sided level, NULL_RATE), its claims of any difference beside theirs (at ALPHA), and beside them its claims
    of no difference (which hold on a null at the rate of their power, not at alpha), each with its verdict's words
    (their power)."""
    lines = []
    nulls = long[long["identity"].astype(str).str.startswith(MODEL_IDS["null"]) & judged(long)]
    for (source, model), g in nulls.groupby(["source", "model"], sort=False):
        same, anyd = no_difference(g), any_difference(g)
        effects, differ, alike = g[~same & ~anyd], g[anyd], g[same]
        k, n = int((effects["verdict"] == "holds").sum()), len(effects)
        allowed = null_allowance(n)
        verdict = "within" if k <= allowed else "ABOVE"
        lines.append(
            f"  null twin {column_name(str(source), str(model))}: {k} of {n} directional findings hold; allowance "
            f"{allowed} (the {ALLOWANCE_LEVEL:.0%} quantile of Binomial({n}, {NULL_RATE:g})): {verdict}"
        )
        if len(differ):
            k, n = int((differ["verdict"] == "holds").sum()), len(differ)
            allowed = null_allowance(n, ALPHA)
            lines.append(
                f"    and {k} of {n} claims of any difference hold; allowance {allowed} (Binomial({n}, {ALPHA:g})): "
                + ("within" if k <= allowed else "ABOVE")
            )
        if len(alike):
            held = int((alike["verdict"] == "holds").sum())
            each = "; ".join(f"{r.finding_id}: {r.verdict} ({r.reason})" for r in alike.itertuples())
            lines.append(
                f"    and {held} of {len(alike)} claims of no difference hold (on a null at the rate of their power, "
                f"not counted above): {each}"
            )
    return lines


def no_difference(long: pd.DataFrame) -> pd.Series:
    """The cells of the long table whose finding is a claim of no difference (PaperFinding.no_difference)."""
    return _declared(long, "no_difference")


def any_difference(long: pd.DataFrame) -> pd.Series:
    """The cells of the long table whose finding is a claim of any difference (PaperFinding.any_difference)."""
    return _declared(long, "any_difference")


def _declared(long: pd.DataFrame, kind: str) -> pd.Series:
    found = [getattr(study_findings(st)[f], kind) for st, f in zip(long["study"], long["finding_id"], strict=True)]
    return pd.Series(found, index=long.index, dtype=bool)


def main(sources: Sequence[str], out: str | Path, figure: bool = True) -> str:
    """`socsim scorecard`: the scorecard of the sources into `out`; returns the per-column counts in words."""
    if not sources:
        raise ScorecardError("name at least one report folder or results folder ([LABEL=]PATH)")
    long = write(read_sources(sources), Path(out), figure)
    c = counts(long)
    lines = [f"scorecard of {long['study'].nunique()} studies, {len(c)} columns -> {out}"]
    for r in c.to_dict("records"):
        lines.append(f"  {column_name(r['source'], r['model'])}: " + ", ".join(f"{r[v]} {v}" for v in VERDICTS if r[v]))
    return "\n".join(lines + null_lines(long))
