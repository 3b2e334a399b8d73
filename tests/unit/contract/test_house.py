"""The house rules a newcomer can rely on (docs/architecture.md): short functions, one analysis signature
through the claim unit, figures that only draw."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

from socsim import studies
from socsim.io.report import AnalysisInputs, Report
from support.project import ROOT

SRC = ROOT / "src" / "socsim"
MAX_LINES = 80
REASON = "# long:"  # a function over MAX_LINES says why on the line above its def (or its decorators)


def long_functions(src: Path = SRC) -> list[str]:
    """Functions over MAX_LINES lines without a `# long: <reason>` comment right above them."""
    out = []
    for path in sorted(src.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            if n > MAX_LINES and not above.startswith(REASON):
                out.append(f"{path.relative_to(src.parent)}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_over_80_lines_without_a_reason(tmp_path):
    assert long_functions() == []
    # The check finds one, and takes a written reason.
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n", encoding="utf-8")
    assert [s.split(" ", 1)[1] for s in long_functions(tmp_path)] == [f"f ({MAX_LINES + 1} lines)"]
    (tmp_path / "m.py").write_text(f"{REASON} one table of flags\ndef f():\n{body}\n", encoding="utf-8")
    assert long_functions(tmp_path) == []


STUDIES = [s.name for s in studies.all_studies()]
# Every analysis under the house rules: (its id, its package, the folder of its report.py and figures.py, the study
# whose stages write it, its report folder). The revised facilitation study is an analysis of its own.
ANALYSES = [(name, f"socsim.{name}.analysis", SRC / name / "analysis", name, "analysis") for name in STUDIES] + [
    (
        "facilitation revision",
        "socsim.facilitation.revision",
        SRC / "facilitation" / "revision",
        "facilitation",
        "revision_analysis",
    ),
]


@pytest.mark.parametrize(("name", "package", "folder", "study", "out"), ANALYSES, ids=[a[0] for a in ANALYSES])
def test_every_study_analyses_with_one_signature_through_the_claim_unit(name, package, folder, study, out):
    # the package's `analyse` (the studies' analysis/__init__), else its report's (the revision's)
    analyse = (
        getattr(importlib.import_module(package), "analyse", None)
        or importlib.import_module(f"{package}.report").analyse
    )
    sig = inspect.signature(analyse)
    assert [p.name for p in sig.parameters.values()] == ["inputs"]
    hints = inspect.get_annotations(analyse, eval_str=True)
    assert hints == {"inputs": AnalysisInputs, "return": Report}
    claims = importlib.import_module(f"{package}.claims")
    assert claims.CLAIMS and all(c.name and callable(c.judge) for c in claims.CLAIMS)
    report = (folder / "report.py").read_text(encoding="utf-8")
    assert "assemble(" in report  # the report is assembled from the claims, by the one assembler
    assert "ctx.write_report(" in (SRC / study / "stages.py").read_text(encoding="utf-8")  # by the one writer
    assert (folder / "places.py").exists()  # where its flags are noted, declared once


@pytest.mark.parametrize(("name", "package", "folder", "study", "out"), ANALYSES, ids=[a[0] for a in ANALYSES])
def test_figures_import_nothing_from_an_analysis_and_read_declared_plot_tables(name, package, folder, study, out):
    figures = SRC / study / "figures.py" if out == "analysis" else folder / "figures.py"
    tree = ast.parse(figures.read_text(encoding="utf-8"))
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    drawn_from = [f"{package}.{m}" for m in ("claims", "measures", "report", "tests")] if out != "analysis" else []
    assert not [m for m in imported if m.startswith(f"socsim.{study}.analysis") or m in drawn_from], imported
    declared = studies.study(study).artifacts[out].tables
    assert declared and all(t.startswith("plot_") for t in declared)


def test_every_documented_snakemake_command_puts_a_target_where_snakemake_reads_one():
    """Snakemake reads every word after --configfile as a config file: a target there stops the run on
    FileNotFoundError before socsim can say anything. Every command the README, docs and params headers show
    puts its target before --configfile or after `--`."""
    import re
    import shlex

    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("params*.yaml"))]
    files.append(ROOT / "tests/params.tiny.yaml")
    seen = 0
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            m = re.search(r"snakemake [^`#|]*--configfile[^`#|]*", line)
            if not m:
                continue
            seen += 1
            words = shlex.split(m.group(0))
            after = words[words.index("--configfile") + 1 :]
            for w in after:
                if w == "--" or w.startswith("-"):
                    break
                assert w.endswith((".yaml", ".yml")), (
                    f"{f.name}: {line.strip()!r}: {w!r} would be read as a config file"
                )
    assert seen >= 10


def test_the_readme_is_a_guide_of_at_most_250_lines_and_its_links_resolve():
    """The README guides (issue 51): at most 250 lines, measurement history in docs/benchmarks.md and CHANGELOG.md;
    every relative link it holds points at a file of the repository."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250, len(text.splitlines())
    targets = {m.split("#")[0] for m in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in m}
    missing = sorted(t for t in targets if t and not (ROOT / t).exists())
    assert not missing, missing
    assert (ROOT / "CHANGELOG.md").exists() and (ROOT / "docs" / "benchmarks.md").exists()
