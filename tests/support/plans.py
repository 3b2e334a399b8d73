"""A shipped params file planned as a user plans it (`socsim plan --params ... --json`): every study, every
model call of every stage, no error."""

from __future__ import annotations

import json
from pathlib import Path

from socsim import cli, plan, studies


def check_plan(files: list[str], overrides: list[str], tmp_path: Path, capsys) -> None:
    """`socsim plan` of these params files (run from the repository) with `--set` overrides: it succeeds,
    plans every study and every (study, stage, model) that calls a model."""
    out = tmp_path / "plan.json"
    args = ["plan", *[a for f in files for a in ("--params", f)], "--json", str(out)]
    rc = cli.main(args + [a for o in overrides for a in ("--set", o)])
    text = capsys.readouterr().out
    assert rc == 0, text
    written = json.loads(out.read_text())
    assert written["not_planned"] == [] and written["stages"]
    assert {r["study"] for r in written["stages"]} == {s.name for s in studies.all_studies()}
    assert "| study | stage | model | calls |" in text
    params = plan.plan_params(files, overrides)
    calling = {(s.name, st.name, m) for s, st in studies.all_stages() for m in st.model_names(params)}
    assert {(r["study"], r["stage"], r["model"]) for r in written["stages"]} == calling  # every model call planned
