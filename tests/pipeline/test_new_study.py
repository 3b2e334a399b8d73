"""Adding a study touches only what the README's "Adding a study" list names: a toy study written into a
temporary copy of the project (its package, its data folder, its params section and schema fragment,
one registry line) gets its CLI, its Snakemake rules and target rule, its dvc.yaml stages and a report
caption without any other file of the house changing. Its study has the three kinds of stage: one that
makes data, an LLM stage sharded into one job per group (its model the scripted backend served on
loopback, named in the models registry like any server), and an analysis whose one claim goes through
the claim unit (socsim.io.claims) into the `Report` that `ctx.write_report` writes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from support.llm import ScriptedServer
from support.project import copy_project, tool_env

TOY_STAGES = '''"""A toy study: words and their lengths, a model asked to count their letters (one job per group of
words), then its report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from socsim.llm import IntRange, Request
from socsim.seeds import derive_seed
from socsim.context import StageContext
from socsim.stages import Artifact, Stage, Study, shard_table
from socsim.toy import analysis


def run_make(ctx: StageContext) -> None:
    words = ctx.yaml("words_file")["words"][: ctx.params["toy"]["n"]]
    groups = ctx.params["toy"]["groups"]
    rows = [{"i": i, "group": groups[i % len(groups)], "word": w, "length": len(w)} for i, w in enumerate(words)]
    ctx.write("numbers", rows)
    ctx.write_metrics(rows=len(rows))


def run_ask(ctx: StageContext) -> None:
    words = ctx.rows("numbers", in_shard=True)  # this job's group
    name = ctx.params["toy"]["model"]
    client = ctx.model_client(name, "toy.model")
    requests = [
        Request.chat(
            [{"role": "user", "content": f"How many letters has the word {w['word']}?"}],
            derive_seed(ctx.seed, "toy", w["i"]),
            client.sampling(max_tokens=8),
            IntRange(0, 50),
            label=w["word"],
        )
        for w in words
    ]
    answers = client.run(requests, desc="letters")
    rows = [{"i": w["i"], "group": w["group"], "model": name, "answer": a.value} for w, a in zip(words, answers)]
    ctx.write("answers", rows)
    ctx.write_metrics(rows=len(words))


def run_analyse(ctx: StageContext) -> None:
    ctx.write_report(analysis.analyse(ctx.analysis_inputs()))


def shards(p: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return shard_table([{"group": g} for g in p["toy"]["groups"]], ["group"])


NUMBERS = pa.schema([("i", pa.int64()), ("group", pa.string()), ("word", pa.string()), ("length", pa.int64())])
ANSWERS = pa.schema([("i", pa.int64()), ("group", pa.string()), ("model", pa.string()), ("answer", pa.int64())])
STUDY = Study(
    "toy",
    {
        "words_file": Artifact("data/toy/words.yaml"),
        "numbers": Artifact("results/toy/numbers.parquet", NUMBERS, ("i",)),
        "answers": Artifact("results/toy/answers/{shard}.parquet", ANSWERS, ("i",)),
        "analysis": Artifact(
            "results/toy/analysis", kind="dir", report="tables", pattern="{name}.csv", tables=("sum",)
        ),
    },
    [
        Stage(
            "make",
            "The first n words and their lengths.",
            run_make,
            ("words_file",),
            ("numbers",),
            ("toy.n", "toy.groups"),
        ),
        Stage(
            "ask",
            "A model counts the letters of each word.",
            run_ask,
            ("numbers",),
            ("answers",),
            ("toy.model", "toy.groups", "seed"),
            uses_llm=True,
            shards=shards,
            models=lambda p: {p["toy"]["model"]: "toy.model"},
        ),
        Stage(
            "analyse",
            "The sum of the lengths, and whether the model counts letters.",
            run_analyse,
            ("numbers", "answers"),
            ("analysis",),
            ("toy.n", "toy.model", "seed"),  # (toy.model: whom its finding was judged on)
        ),
    ],
)
'''

TOY_ANALYSIS = '''"""The toy study's analysis: what it measures, its one claim, its report (through the claim unit,
socsim.io.claims)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from socsim.io import vs_paper
from socsim.io.claims import Claim, Judgement, assemble
from socsim.io.findings import Scope
from socsim.io.report import AnalysisInputs, Finding, Report, Table
from socsim.stats import verdict as vd


@dataclass
class Evidence:
    words: pd.DataFrame  # one row per word: its length and the model's answer
    model: str  # the registry name of the model that counted


def counts_letters(ev: Evidence) -> Judgement:
    """The claim: the model counts the letters of a word."""
    n = len(ev.words)
    right = float((ev.words["answer"] == ev.words["length"]).mean()) if n else None
    verdict = vd.inconclusive_too_few(n, vd.MIN_UNITS, "words") or vd.Verdict(right == 1.0)
    finding = Finding(
        "the model counts letters", "share counted right", right, "every word", "words", n, verdict,
        id="toy.counts_letters", scope=Scope.model(ev.model),
    )
    return Judgement([finding], [vs_paper.Row("share of words counted right", right, 1.0, verdict=verdict)])


CLAIMS = [Claim("counts_letters", counts_letters, "the toy paper")]


def analyse(inputs: AnalysisInputs) -> Report:
    words = inputs["numbers"].merge(inputs["answers"][["i", "answer"]], on="i")
    total = words.agg({"length": ["sum"]}).reset_index()
    base = Report("Toy: ours vs the paper", tables={"sum": Table(total, "The sum of the lengths")})
    base.metrics = {"total": int(words["length"].sum())}
    return assemble(base, CLAIMS, Evidence(words, str(inputs.params["model"])))
'''

TOY_FINDINGS = '''"""The toy paper's one finding (socsim.io.findings)."""

from socsim.io.findings import PaperFinding

FINDINGS = (PaperFinding("toy.counts_letters", "the model counts letters", "the toy paper", "Sect. 1", "holds"),)
'''

TOY_SCHEMA = """type: object
description: a toy study
additionalProperties: false
default: {}
properties:
  n: {type: integer, minimum: 1, default: 2, description: words taken}
  groups: {type: array, items: {type: string}, default: [a], description: groups of words (one job each)}
  model: {type: string, default: smollm2-135m, description: the registry name of the model that counts}
"""


def letters(body: dict) -> str:
    """The scripted model: counts the letters of the word its question ends with."""
    word = body["messages"][-1]["content"].rstrip("?").split()[-1]
    return json.dumps({"answer": len(word)})


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
    (project / "src/socsim/toy/analysis.py").write_text(TOY_ANALYSIS)
    (project / "src/socsim/toy/findings.py").write_text(TOY_FINDINGS)  # the paper's findings, declared once
    (project / "data/toy").mkdir()
    (project / "data/toy/words.yaml").write_text("words: [alpha, be, gamma, delta]\n")
    (project / "workflow/schemas/toy.schema.yaml").write_text(TOY_SCHEMA)
    # The model: the scripted backend served on loopback, a models-registry entry like any served model's.
    with ScriptedServer("toy/letter-counter", letters) as model:
        params = yaml.safe_load((project / "params.yaml").read_text())
        params["models"]["toy-scripted"] = model.entry()
        params["toy"] = {"n": 3, "groups": ["a", "b"], "model": "toy-scripted"}
        (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        registry = project / "src/socsim/studies.py"
        text = registry.read_text()
        assert text.count('"socsim.debate.stages",') == 1
        registry.write_text(
            text.replace('"socsim.debate.stages",', '"socsim.debate.stages",\n    "socsim.toy.stages",')
        )
        run(["socsim", "dvc", "export"], project)

        # The CLI, the rules (with the target rule `toy`), dvc.yaml and a caption follow from the declaration.
        assert "toy.n" in run(["socsim", "toy", "make", "--help"], project).stdout
        dry = run(["snakemake", "--dry-run", "--cores", "1", "toy"], project).stdout
        assert "toy make: The first n words and their lengths." in dry and "facilitation " not in dry
        run(["snakemake", "--cores", "1", "toy"], project)
        # One job per group (shard), each asking the model about its own words, once.
        assert sorted(p.name for p in (project / "results/toy/answers").iterdir()) == ["a.parquet", "b.parquet"]
        assert sorted(b["messages"][-1]["content"] for b in model.bodies) == [
            f"How many letters has the word {w}?" for w in ("alpha", "be", "gamma")
        ]
        run(["snakemake", "--cores", "1", "--report", "report.zip", "toy"], project)
        assert len(model.bodies) == 3  # nothing re-ran

    # The stage's metrics count its model's calls; the analysis is a Report assembled from the toy's claim.
    ask = json.loads((project / "results/toy/metrics/ask/a.json").read_text())
    assert ask["calls"] == 2 and ask["models"]["toy-scripted"]["identity"]["model_id"] == "toy/letter-counter"
    out = project / "results/toy/analysis"
    assert (out / "sum.csv").read_text().splitlines()[1].endswith(",12")  # alpha + be + gamma
    summary = json.loads((out / "summary.json").read_text())
    [finding] = summary["findings"]
    assert (finding["claim"], finding["value"], finding["n"]) == ("the model counts letters", 1.0, 3)
    assert finding["holds"] is True
    assert (finding["finding_id"], finding["scope"]) == ("toy.counts_letters", "toy-scripted")
    assert (out / "vs_paper.csv").exists()
    assert json.loads((project / "results/toy/metrics/analyse.json").read_text())["total"] == 12
    assert not (project / "results/facilitation").exists()  # the target rule ran one study
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    assert stages["toy_make"]["desc"] == "The first n words and their lengths."
    assert stages["toy_make"]["params"] == ["toy.groups", "toy.n"]
    assert sorted(stages["toy_ask"]["foreach"]) == ["a", "b"]
    caption = project / ".snakemake/socsim-captions/toy/tables.rst"
    assert "``toy analyse``: The sum of the lengths, and whether the model counts letters." in caption.read_text()
    run(["socsim", "params", "check", "--out", "results/params.checked.json"], project)  # DVC's first stage
    run(["dvc", "commit", "--force", "--quiet", "params_check", "toy_make", "toy_ask", "toy_analyse"], project)
    assert "up to date" in run(["dvc", "status", "toy_analyse"], project).stdout

    # Nothing else in the house changed.
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], project).stdout.split("\n")
    changed = {
        line[3:] for line in status if line.strip() and not line[3:].startswith(("results/", "report.zip", "dvc.lock"))
    }
    assert changed == {
        "src/socsim/toy/__init__.py",
        "src/socsim/toy/stages.py",
        "src/socsim/toy/analysis.py",
        "src/socsim/toy/findings.py",
        "data/toy/words.yaml",
        "workflow/schemas/toy.schema.yaml",
        "params.yaml",
        "src/socsim/studies.py",
        "dvc.yaml",
    }, changed
