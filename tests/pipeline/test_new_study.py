"""Adding a study touches only what the README's "Adding a study" list names: a toy study written into a
temporary copy of the project (its package, its data folder, its params section and schema fragment,
one registry line) gets its CLI, its Snakemake rules and target rule, its dvc.yaml stages and a report
caption without any other file of the house changing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import copy_project, tool_env

TOY_STAGES = '''"""A toy study: numbers from a words file, then their sum."""

from __future__ import annotations

import pyarrow as pa

from socsim.io import tables
from socsim.stages import Artifact, Stage, StageContext, Study


def run_make(ctx: StageContext) -> None:
    words = ctx.yaml("words_file")["words"][: ctx.params["toy"]["n"]]
    ctx.write("numbers", [{"i": i, "word": w, "length": len(w)} for i, w in enumerate(words)])
    ctx.write_metrics(rows=len(words))


def run_analyse(ctx: StageContext) -> None:
    df = ctx.read("numbers").to_pandas()
    out = ctx.path("analysis")
    out.mkdir(parents=True, exist_ok=True)
    tables.write(df.agg({"length": ["sum"]}).reset_index(), out, "sum", "The sum of the lengths")
    ctx.write_metrics(total=int(df["length"].sum()))


NUMBERS = pa.schema([("i", pa.int64()), ("word", pa.string()), ("length", pa.int64())])
STUDY = Study(
    "toy",
    {
        "words_file": Artifact("data/toy/words.yaml"),
        "numbers": Artifact("results/toy/numbers.parquet", NUMBERS, ("i",)),
        "analysis": Artifact("results/toy/analysis", kind="dir", report="tables", pattern="{name}.csv"),
    },
    [
        Stage("make", "The first n words and their lengths.", run_make, ("words_file",), ("numbers",), ("toy.n",)),
        Stage("analyse", "The sum of the lengths.", run_analyse, ("numbers",), ("analysis",)),
    ],
)
'''

TOY_SCHEMA = """type: object
description: a toy study
additionalProperties: false
default: {}
properties:
  n: {type: integer, minimum: 1, default: 2, description: words taken}
"""


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A tool in the copy, importing the copy's package (where the toy study lives)."""
    env = tool_env()
    env["PYTHONPATH"] = str(cwd / "src") + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.mark.slow
def test_a_new_study_needs_only_its_own_files_and_one_registry_line(tmp_path):
    project = copy_project(tmp_path / "proj")
    # 1. its package, 2. its data folder, 3. its params section and schema fragment, 5. one registry line
    (project / "src/socsim/toy").mkdir()
    (project / "src/socsim/toy/__init__.py").write_text('"""A toy study."""\n')
    (project / "src/socsim/toy/stages.py").write_text(TOY_STAGES)
    (project / "data/toy").mkdir()
    (project / "data/toy/words.yaml").write_text("words: [alpha, be, gamma]\n")
    (project / "workflow/schemas/toy.schema.yaml").write_text(TOY_SCHEMA)
    params = yaml.safe_load((project / "params.yaml").read_text())
    (project / "params.yaml").write_text(yaml.safe_dump({**params, "toy": {"n": 2}}, sort_keys=False))
    registry = project / "src/socsim/studies.py"
    text = registry.read_text()
    assert text.count('"socsim.debate.stages",') == 1
    registry.write_text(text.replace('"socsim.debate.stages",', '"socsim.debate.stages",\n    "socsim.toy.stages",'))
    run(["socsim", "dvc", "export"], project)

    # The CLI, the rules (with the target rule `toy`), dvc.yaml and a caption follow from the declaration.
    assert "toy.n" in run(["socsim", "toy", "make", "--help"], project).stdout
    dry = run(["snakemake", "--dry-run", "--cores", "1", "toy"], project).stdout
    assert "toy make: The first n words and their lengths." in dry and "facilitation " not in dry
    run(["snakemake", "--cores", "1", "toy"], project)
    assert (project / "results/toy/analysis/sum.csv").read_text().splitlines()[1].endswith(",7")  # alpha + be
    assert not (project / "results/facilitation").exists()  # the target rule ran one study
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    assert stages["toy_make"]["desc"] == "The first n words and their lengths." and stages["toy_make"]["params"] == [
        "toy.n"
    ]
    run(["snakemake", "--cores", "1", "--report", "report.zip", "toy"], project)
    caption = project / ".snakemake/socsim-captions/toy/tables.rst"
    assert "The sum of the lengths." in caption.read_text()
    run(["dvc", "commit", "--force", "--quiet", "toy_make", "toy_analyse"], project)
    assert "up to date" in run(["dvc", "status", "toy_analyse"], project).stdout

    # Nothing else in the house changed.
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], project).stdout.split("\n")
    changed = {
        line[3:] for line in status if line.strip() and not line[3:].startswith(("results/", "report.zip", "dvc.lock"))
    }
    assert changed == {
        "src/socsim/toy/__init__.py",
        "src/socsim/toy/stages.py",
        "data/toy/words.yaml",
        "workflow/schemas/toy.schema.yaml",
        "params.yaml",
        "src/socsim/studies.py",
        "dvc.yaml",
    }, changed
