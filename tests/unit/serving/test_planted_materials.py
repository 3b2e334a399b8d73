"""The planted control gets the studies' materials it answers from by declaration, never from where it runs: the
launcher names the run's project's data/ folder on the server's command line (`--materials`), and the control reads
only that folder (socsim.planted.study_data); without one it knows none of its questions."""

from __future__ import annotations

import shutil

from socsim import config, models, planted
from socsim.serving import engines
from support.planted import control_models
from support.project import ROOT


def test_the_launcher_declares_the_projects_materials(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the run's project
    params = config.validate({"models": control_models()})
    argv, _, _ = engines.command(models.resolve(params, "planted"), "127.0.0.1", 8123)
    assert argv[argv.index("--materials") + 1] == str(tmp_path / "data")


def test_the_control_reads_its_declared_materials_only(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "data" / "coherence", tmp_path / "data" / "coherence")
    (tmp_path / "data" / "coherence" / "topics.yaml").write_text("topics: [{name: only, text: 'a topic of ours'}]\n")
    monkeypatch.chdir(ROOT)  # where socsim's own materials are: not read unless declared
    try:
        planted.use_materials(tmp_path / "data")
        prompts, topics = planted.study_data("coherence", "prompts.yaml", "topics.yaml")
        assert topics == {"topics": [{"name": "only", "text": "a topic of ours"}]} and "persona" in prompts
        assert planted.study_data("coherence", "no such file.yaml") is None
        planted.use_materials(None)
        assert planted.study_data("coherence", "prompts.yaml") is None  # undeclared: it knows none of them
    finally:
        planted.use_materials(ROOT / "data")  # the suite's (tests/conftest.py)
