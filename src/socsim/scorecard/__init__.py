"""The scorecard: every paper finding beside every model that answered, from any set of finished reports.

Sources: the report folders of finished runs (an analysis folder: `findings.parquet`, `provenance.json`,
`summary.json`; or any folder above them, e.g. a run's `results/`), each under a label: `LABEL=PATH`, or by
default what its data are (`generated` for a run's own simulations, `syndisco_release` / `syndisco_revision`
for paper 000's released data). One table and one figure:

- rows: each study's findings as the paper states them (the claim with the model it was judged on taken out;
  a claim's parts, where the report also judges the whole claim, stay in the study's own findings);
- columns: the paper (it claims every row; its number where vs_paper gives one), then one per model and source:
  the registry name, the identity that answered (from the run's metrics), and whether it is a control (the
  planted model: socsim.planted), never merged across sources;
- cells: the verdict by the one rule (holds / no / inconclusive / degenerate, or "not run"), the effect with
  its interval where the claim's test gives one, its unit and n, and the reason when it is not a verdict.

A finding judged on all of a run's models together ("[all models]", or no model named) is a column of its own
(`all models`), shown only for claims that no model of that source was judged on alone.

Refused, with a message: a report of another socsim version (or without the columns of this one), a path with
no report, and two reports of one study, model and source (two runs of one model: label them apart).
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import socsim
from socsim.io import tables
from socsim.io.parquet import write_json
from socsim.io.report import FINDING_COLUMNS
from socsim.planted import MODEL_IDS, control_label, is_control_id
from socsim.stats.verdict import ALPHA

POOLED = "all models"
NOT_RUN = "not run"
VERDICTS = ("holds", "no", "inconclusive", "degenerate", NOT_RUN)
COLUMNS = [
    "study", "claim", "source", "model", "identity", "control", "verdict", "label", "value", "ci_low", "ci_high",
    "unit", "n", "statistic", "test", "reason", "report",
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
    paper: dict[str, str] = field(default_factory=dict)  # claim -> the paper's number (vs_paper)
    identities: dict[str, str] = field(default_factory=dict)  # model name -> the identity that answered, in words
    controls: set[str] = field(default_factory=set)  # model names that are planted models
    models: list[str] = field(default_factory=list)  # every model name the report may name
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
            for name, m in (data.get("models") or {}).items() if isinstance(data, dict) else ():
                if isinstance(m, dict) and isinstance(m.get("identity"), dict):
                    out.setdefault(name, m["identity"])
        break
    return out


def _source_kind(prov: Mapping[str, Any]) -> str:
    given = (prov.get("data_source") or {}).get("source")
    if given:
        return str(given)
    return "syndisco_revision" if str(prov.get("stage", "")).endswith("analyse_revision") else "generated"


def _named_models(prov: Mapping[str, Any], summary: Mapping[str, Any]) -> list[str]:
    """Model names a report's claims may carry where the run's metrics are not beside it."""
    names: list[str] = []
    for key, value in (prov.get("params") or {}).items():
        if key.endswith("models") and isinstance(value, list):
            names += [str(v) for v in value]
    if isinstance(summary.get("models"), list):
        names += [str(v) for v in summary["models"]]
    return names


def read_folder(path: Path, label: str | None = None) -> Folder:
    """A report folder, checked: written by this socsim version, with this version's findings columns."""
    try:
        prov = json.loads((path / "provenance.json").read_text(encoding="utf-8"))
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
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
    folder.models = sorted({*answered, *_named_models(prov, summary)}, key=lambda m: (-len(m), m))
    if (path / "vs_paper.parquet").is_file():
        vs = tables.read(path, "vs_paper")
        for _, row in vs[vs["finding"].astype(str) != ""].iterrows():
            if isinstance(row["paper"], float) and math.isfinite(row["paper"]):
                folder.paper.setdefault(str(row["finding"]), tables.cell(row["paper"]))
    return folder


SCOPE = re.compile(r"^(?P<claim>.*) \[(?P<scope>[^\[\]]+)\]$")
PAREN = re.compile(r"\(([^()]*)\)")


def split_model(claim: str, models: Sequence[str]) -> tuple[str, str]:
    """A finding's claim as the paper states it and the model it was judged on: "<claim> [<model>]" (the
    revised study's scopes), or a model named among the items of the claim's last parenthesis that names one
    ("(smollm2-135m, cumulative, complete)" -> "(cumulative, complete)"); else the run's models together."""
    m = SCOPE.match(claim)
    if m:
        return m["claim"], m["scope"]
    for paren in reversed(list(PAREN.finditer(claim))):
        items = [x.strip() for x in re.split(r"[,;]", paren[1])]
        named = [x for x in items if x in models]
        if named:
            rest = [x for x in items if x != named[0]]
            inner = f"({', '.join(rest)})" if rest else ""
            text = (claim[: paren.start()] + inner + claim[paren.end() :]).replace("  ", " ").strip()
            return re.sub(r"\s+([,;:.])", r"\1", text), named[0]
    return claim, POOLED


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


def long_rows(folder: Folder) -> list[dict[str, Any]]:
    """One row per finding of a report folder, the claim split from its model; parts of a claim judged whole
    in the same report (and scope) left out; a claim judged on all models left out where models were judged alone."""
    rows = []
    only = folder.models[0] if len(folder.models) == 1 else None  # a run of one model: its findings are that model's
    for _, f in folder.findings.iterrows():
        claim, model = split_model(str(f["claim"]), folder.models)
        model = only if model == POOLED and only else model
        rows.append(
            {
                "study": folder.study,
                "claim": claim,
                "source": folder.source,
                "model": model,
                "identity": folder.identities.get(model, _unrecorded(folder, model)),
                "control": model in folder.controls,
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
                "_paper": folder.paper.get(str(f["claim"])) or folder.paper.get(claim),
            }
        )
    claims = {(str(r["model"]), str(r["claim"])) for r in rows}
    per_model = {str(r["claim"]) for r in rows if r["model"] != POOLED}

    def part(model: str, claim: str) -> bool:  # "<claim>: <part>" where "<claim>" is judged whole too
        return any(m == model and claim.startswith(c + ": ") for m, c in claims)

    return [
        r
        for r in rows
        if not part(str(r["model"]), str(r["claim"])) and not (r["model"] == POOLED and r["claim"] in per_model)
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
                raise ScorecardError(
                    f"two reports of {folder.study} judge the model {model} from the source {folder.source!r}: "
                    f"{seen[key]} and {folder.path}; give them labels of their own (LABEL=PATH, e.g. "
                    f"run-a={seen[key]} run-b={folder.path}), the scorecard never merges two runs"
                )
            seen[key] = folder.path
    return folders


# -- the table ----------------------------------------------------------------------------------------


def column_name(source: str, model: str) -> str:
    return f"{model} · {source}"


def scorecard(folders: Sequence[Folder]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The long table (one row per cell: study, claim, source, model, ...; "not run" where a column's source
    ran the study but not that claim on that model, or did not run the study) and the columns' description
    (column, source, model, identity, control), language models first, controls last."""
    rows = [r for f in folders for r in long_rows(f)]
    if not rows:
        raise ScorecardError("the reports hold no findings")
    df = pd.DataFrame(rows)
    df["study"] = pd.Categorical(df["study"], [s for s in study_names() if s in set(df["study"])], ordered=True)
    cols = (
        df.groupby(["source", "model"], sort=False)
        .agg(identity=("identity", "first"), control=("control", "any"))
        .reset_index()
    )
    cols["pooled"] = cols["model"] == POOLED
    cols = cols.sort_values(["control", "pooled", "source", "model"], kind="stable").drop(columns="pooled")
    cols.insert(0, "column", [column_name(s, m) for s, m in zip(cols["source"], cols["model"], strict=True)])
    claims = df.drop_duplicates(["study", "claim"])[["study", "claim", "_paper"]].sort_values("study", kind="stable")
    full = claims.merge(cols[["source", "model", "identity", "control"]], how="cross")
    out = full.drop(columns=["_paper"]).merge(
        df.drop(columns=["identity", "control", "_paper"]), on=["study", "claim", "source", "model"], how="left"
    )
    out["verdict"] = out["verdict"].fillna(NOT_RUN)
    out["label"] = out["label"].fillna(NOT_RUN)
    out["reason"] = out["reason"].where(out["verdict"] != NOT_RUN, "no such finding in this source's report")
    out["study"] = out["study"].astype(str)
    out = out[COLUMNS].reset_index(drop=True)
    paper = claims.assign(study=claims["study"].astype(str)).rename(columns={"_paper": "paper"})
    return out.merge(paper, on=["study", "claim"], how="left"), cols.reset_index(drop=True)


def cell_text(row: Mapping[str, Any], width: int = 0) -> str:
    """A cell in words: the verdict, the effect with its interval, n and unit; the reason when it is not a verdict."""
    verdict = str(row["verdict"])
    if verdict == NOT_RUN:
        return NOT_RUN
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
    text = "; ".join(parts)
    return textwrap.shorten(text, width, placeholder=" ...") if width else text


def wide(long: pd.DataFrame, cols: pd.DataFrame) -> pd.DataFrame:
    """The table people read: one row per study and claim, the paper's column, then one column per model and source."""
    long = long.assign(column=[column_name(s, m) for s, m in zip(long["source"], long["model"], strict=True)])
    long = long.assign(cell=[cell_text(r) for r in long.to_dict("records")])
    table = long.pivot_table(index=["study", "claim"], columns="column", values="cell", aggfunc="first", sort=False)
    table = table[list(cols["column"])].reset_index()
    paper = long.drop_duplicates(["study", "claim"]).set_index(["study", "claim"])["paper"]
    claimed = ["claimed" + (f" ({p})" if isinstance(p, str) and p else "") for p in paper.to_numpy()]
    table.insert(2, "paper", claimed)
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
        "Each cell: the verdict by the one rule (holds / no / inconclusive / degenerate; not run), the effect with its "
        "95 % interval where the claim's test gives one, n and its unit, and why when it is not a verdict.",
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


NULL_RATE = ALPHA / 2  # a claim's rate of "holds" on a null: a two-sided test at alpha read in its direction
ALLOWANCE_LEVEL = 0.95


def null_allowance(n: int, rate: float = NULL_RATE, level: float = ALLOWANCE_LEVEL) -> int:
    """The most findings of `n` that may say "holds" on a null twin: the `level` quantile of Binomial(n, rate)."""
    from scipy import stats

    return int(stats.binom.ppf(level, n, rate)) if n else 0


def null_lines(long: pd.DataFrame) -> list[str]:
    """For each null twin's column: its findings that hold beside their binomial allowance."""
    lines = []
    nulls = long[long["identity"].astype(str).str.startswith(MODEL_IDS["null"]) & (long["verdict"] != NOT_RUN)]
    for (source, model), g in nulls.groupby(["source", "model"], sort=False):
        k, n = int((g["verdict"] == "holds").sum()), len(g)
        allowed = null_allowance(n)
        verdict = "within" if k <= allowed else "ABOVE"
        lines.append(
            f"  null twin {column_name(str(source), str(model))}: {k} of {n} findings hold; allowance {allowed} "
            f"(the {ALLOWANCE_LEVEL:.0%} quantile of Binomial({n}, {NULL_RATE:g})): {verdict}"
        )
    return lines


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
