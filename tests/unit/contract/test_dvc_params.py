"""DVC's side of params (socsim.dvc): the check stage every stage waits for, a refused value set back to what
dvc.lock records, override files merged into params.yaml, dvc.lock kept out of git. The same on real DVC runs:
tests/pipeline/test_workflow.py (the replay test)."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from socsim import config, dvc
from support.project import ROOT

PARAMS = (ROOT / "params.yaml").read_text()


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "params.yaml").write_text(PARAMS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def comments(text: str) -> list[str]:
    return [line.split("#", 1)[1] for line in text.splitlines() if "#" in line]


def lock_of(params_text: str) -> str:
    """A dvc.lock whose check stage records these params (as DVC writes it after a run)."""
    return yaml.safe_dump(
        {"schema": "2.0", "stages": {dvc.CHECK_STAGE: {"params": {"params.yaml": yaml.safe_load(params_text)}}}}
    )


def test_the_check_writes_the_same_bytes_every_time(project):
    dvc.params_check("params.yaml", "out/checked.json")
    first = (project / "out/checked.json").read_bytes()
    text = PARAMS.replace("agents_per_cell: 2", "agents_per_cell: 3")
    assert text != PARAMS
    (project / "params.yaml").write_text(text)
    dvc.params_check("params.yaml", "out/checked.json")
    assert (project / "out/checked.json").read_bytes() == first == b'{"params": "params.yaml", "valid": true}\n'


def test_a_refused_value_under_dvc_is_set_back_to_the_locked_one_and_nothing_else_changes(project, monkeypatch):
    """What `dvc exp run -S coherence.agents_per_cell=-1` does to params.yaml, undone for the refused key only:
    a valid hand edit beside it and every comment stay."""
    (project / "dvc.lock").write_text(lock_of(PARAMS))
    edited = PARAMS.replace("agents_per_cell: 2", "agents_per_cell: -1").replace("seed: 20250101", "seed: 7")
    assert edited.count("agents_per_cell: -1") == 1 and "seed: 7" in edited
    (project / "params.yaml").write_text(edited)
    monkeypatch.setenv("DVC_STAGE", dvc.CHECK_STAGE)
    with pytest.raises(config.ParamsError) as err:
        dvc.params_check("params.yaml", "checked.json")
    assert "coherence.agents_per_cell" in str(err.value) and "-1 -> 2" in str(err.value)
    after = (project / "params.yaml").read_text()
    assert "agents_per_cell: 2" in after and "seed: 7" in after  # only the refused key set back
    assert comments(after) == comments(PARAMS)
    assert not (project / "checked.json").exists()
    dvc.params_check("params.yaml", "checked.json")  # valid again


def test_a_refused_value_outside_dvc_or_without_a_lock_is_only_refused(project, monkeypatch):
    edited = PARAMS.replace("agents_per_cell: 2", "agents_per_cell: -1")
    (project / "params.yaml").write_text(edited)
    monkeypatch.setenv("DVC_STAGE", dvc.CHECK_STAGE)  # under DVC, but no dvc.lock yet (a first run)
    with pytest.raises(config.ParamsError, match="agents_per_cell") as err:
        dvc.params_check("params.yaml", "checked.json")
    assert "set back" not in str(err.value)
    monkeypatch.delenv("DVC_STAGE")
    (project / "dvc.lock").write_text(lock_of(PARAMS))
    with pytest.raises(config.ParamsError):  # a socsim command, not DVC: the file is the user's, untouched
        dvc.params_check("params.yaml", "checked.json")
    assert (project / "params.yaml").read_text() == edited


def test_an_override_file_is_merged_into_params_yaml_as_snakemake_merges_it(project):
    tiny = ROOT / "tests/params.tiny.yaml"
    changed = dvc.apply([str(tiny)])
    assert changed and all(" -> " in line for line in changed)
    merged = config.load(["params.yaml"])
    assert merged == config.load([ROOT / "params.yaml", tiny])  # what `--configfile tests/params.tiny.yaml` runs on
    after = (project / "params.yaml").read_text()
    assert comments(after) == comments(PARAMS)
    assert dvc.apply([str(tiny)]) == []  # applied already: nothing changes


def test_an_invalid_override_file_changes_nothing(project):
    (project / "bad.yaml").write_text("coherence:\n  agents_per_cell: -1\n")
    with pytest.raises(config.ParamsError, match="agents_per_cell"):
        dvc.apply(["bad.yaml"])
    assert (project / "params.yaml").read_text() == PARAMS


def test_every_dvc_stage_waits_for_the_params_check():
    stages = yaml.safe_load(dvc.render(ROOT / "params.yaml"))["stages"]
    first, *rest = stages
    assert first == dvc.CHECK_STAGE and stages[first]["params"] == [{"params.yaml": None}]  # every key
    assert stages[first]["outs"] == [{dvc.CHECKED: {"cache": False, "persist": True}}]
    assert rest and all(dvc.CHECKED in stages[n].get("do", stages[n])["deps"] for n in rest)


def test_dvc_lock_is_not_in_git_and_dvc_does_not_stage_it():
    """docs/dvc.md: dvc.lock is written by your runs and not committed (a committed one is stale on every
    clone); DVC's autostage would add it to the index on every `dvc repro`."""
    tracked = subprocess.run(["git", "ls-files", "dvc.lock"], cwd=ROOT, capture_output=True, text=True, check=True)
    assert tracked.stdout == ""
    assert "autostage" not in (ROOT / ".dvc/config").read_text()
    ignored = subprocess.run(["git", "check-ignore", "-q", "dvc.lock"], cwd=ROOT, check=False)
    assert ignored.returncode == 1  # not ignored either: `dvc exp run` refuses a git-ignored dvc.lock
    assert "not committed" in (ROOT / "docs/dvc.md").read_text()


def test_the_findings_are_the_metrics_experiments_compare():
    from socsim.io.findings import Scope
    from socsim.io.report import Finding, findings_metrics
    from socsim.stats.verdict import Verdict

    m1, m2 = Scope.model("m1"), Scope.model("qwen2.5-7b")
    found = [
        Finding("A holds", "d", 0.4, "t", "u", 40, Verdict(True), id="coh.test1", scope=m1),
        Finding("B: no", "d", -0.1, "t", "u", 40, Verdict(False, "p = 0.9"), id="coh.test1", scope=m2),
        Finding(
            "C", "d", None, "t", "u", 2, Verdict(None, "n = 2 topics, needs 3"), id="od.d_rises_with_bias"
        ).judged_on(m1, "cumulative, complete"),  # fmt: skip
        Finding(
            "D", "d", float("nan"), "t", "u", 9, Verdict(None, "degenerate input: 1"), id="deb.humans_no_change"
        ).judged_on(Scope.humans("fixture (synthetic)"), "tweet mean"),  # fmt: skip
    ]
    m = findings_metrics(found)
    assert m["verdicts"] == {"holds": 1, "no": 1, "inconclusive": 1, "degenerate": 1}
    assert m["claims"] == {  # keyed by the typed identity: the same key in every run that judges it
        "coh.test1 [m1]": {"verdict": "holds", "value": 0.4},
        "coh.test1 [qwen2.5-7b]": {"verdict": "no", "value": -0.1},
        "od.d_rises_with_bias [m1] cumulative, complete": {"verdict": "inconclusive", "value": None},
        "deb.humans_no_change [humans (fixture (synthetic))] tweet mean": {"verdict": "degenerate", "value": None},
    }
    with pytest.raises(ValueError, match="judged twice on one scope and part: coh.test1 \\[m1\\]"):
        findings_metrics([*found, found[0]])
    json.dumps(m, allow_nan=False)  # strict JSON


def test_experiments_compare_on_the_params_that_differ_and_the_verdicts():
    """`socsim dvc compare` over `dvc exp show --json` (its shape as DVC 3 writes it; the real one in
    tests/pipeline/test_workflow.py)."""

    def row(rev, name, seed, verdicts=None):
        metrics = {
            "results/coherence/metrics/analyse.json": {"data": {"findings": {"verdicts": verdicts, "claims": {}}}}
        }
        return {
            "rev": rev,
            "name": name,
            "data": {
                "params": {"params.yaml": {"data": {"seed": seed, "llm": {"timeout": 5}}}},
                "metrics": metrics if verdicts else {},
            },
        }

    v = {"holds": 1, "no": 0, "inconclusive": 2, "degenerate": 0}
    shown = [
        row("workspace", None, 2, v),
        {**row("abc1234def", "main", 1), "experiments": [{"revs": [row("e1", "exp-a", 2, v)]}]},
    ]
    table = dvc.compare(shown).splitlines()
    assert table[0] == "| experiment | seed | coherence (holds/no/inconclusive/degenerate) |"
    assert table[2:] == ["| workspace | 2 | 1/0/2/0 |", "| main | 1 | not recorded |", "|   exp-a | 2 | 1/0/2/0 |"]


def test_a_refused_list_item_is_set_back_and_without_a_lock_the_committed_value_is_used(project, monkeypatch):
    """`dvc exp run -S 'coherence.topics=[taxes, nosuch]'` on a fresh clone (no run yet, so no dvc.lock): the
    schema names the item (`coherence.topics.1`), the list is set back to git's HEAD."""
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "params.yaml"], cwd=project, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "p"], cwd=project, check=True)
    edited = PARAMS.replace("topics: [taxes, remote_work, favorite_beverage]", "topics: [taxes, nosuch]")
    assert edited != PARAMS
    (project / "params.yaml").write_text(edited)
    monkeypatch.setenv("DVC_STAGE", dvc.CHECK_STAGE)
    with pytest.raises(config.ParamsError) as err:
        dvc.params_check("params.yaml", "checked.json")
    assert "git's HEAD" in str(err.value) and 'coherence.topics: ["taxes", "nosuch"] -> ' in str(err.value)
    assert config.load(["params.yaml"])["coherence"]["topics"] == ["taxes", "remote_work", "favorite_beverage"]


def test_an_override_naming_a_model_the_registry_lacks_changes_nothing(project):
    (project / "bad.yaml").write_text("coherence:\n  agent_models: [nosuch]\n")
    with pytest.raises(config.ParamsError, match="bad.yaml") as err:
        dvc.apply(["bad.yaml"])
    assert "nosuch" in str(err.value) and "was not changed" in str(err.value)
    assert (project / "params.yaml").read_text() == PARAMS
