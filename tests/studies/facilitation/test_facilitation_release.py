"""Paper 000's own data: `socsim facilitation import` on a synthetic fixture in the release's format
(tests/data/syndisco_release: no real rows), analysed, against an independent computation of Table 2
the authors' way (support/studies/syndisco_reference.py: pandas and statsmodels on the JSON, no socsim).
Snakemake on the fixture: tests/real/studies/facilitation/test_facilitation_release_snakemake.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from socsim.facilitation import release, schemas
from socsim.io.parquet import read_provenance, read_table
from support.metrics import read_metrics
from support.project import ROOT, git_commit_all, run_socsim
from support.studies import syndisco_reference as reference

FIXTURE = ROOT / "tests" / "data" / "syndisco_release"
MISMATCH_TARGET = "data/annotation_output/main/25-02-20-16-35.json"


def imported_paths(tmp: Path) -> list[str]:
    """The data artifacts' options of a stage that reads or writes the imported data in `tmp`."""
    return [
        "--setups",
        str(tmp / "setups.parquet"),
        "--comments",
        str(tmp / "comments" / "all.parquet"),
        "--annotations",
        str(tmp / "annotations" / "all.parquet"),
    ]


def release_stage(stage: str, *args: str) -> subprocess.CompletedProcess:
    """`socsim facilitation <stage>` on params.syndisco.yaml."""
    return run_socsim("facilitation", stage, "--params", "params.yaml", "--params", "params.syndisco.yaml", *args)


def import_cmd(tmp: Path, path: Path, *extra: str) -> subprocess.CompletedProcess:
    return release_stage(
        "import",
        "--set",
        f"facilitation.data.path={path}",
        *extra,
        *imported_paths(tmp),
        "--metrics",
        str(tmp / "import.json"),
    )


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("imported")
    proc = import_cmd(tmp, FIXTURE)
    assert proc.returncode == 0, proc.stderr
    fixture = "facilitation.analysis.human_reference=data/facilitation/humans_fixture.xlsx"  # (the release's: opt-in)
    humans = release_stage("humans", "--set", fixture, *HUMANS(tmp), "--metrics", str(tmp / "humans.json"))
    assert humans.returncode == 0, humans.stderr
    return tmp, proc.stderr


def HUMANS(tmp: Path) -> list[str]:
    return ["--humans", str(tmp / "humans.parquet")]


def fixture_copy(tmp_path: Path) -> Path:
    dest = tmp_path / "release"
    shutil.copytree(FIXTURE / "data", dest / "data")
    return dest


def test_the_import_maps_every_discussion_rating_and_seed(imported):
    tmp, stderr = imported
    m = read_metrics(tmp / "import.json")
    expected = {"main": 36, "tt_random": 2, "tt_round_robin": 2, "basic_instructions": 2, "no_roles": 2, "no_sdb": 2}
    assert m["discussions"] == expected
    setups = read_table(tmp / "setups.parquet", schemas.SETUPS).to_pandas()
    comments = read_table(tmp / "comments" / "all.parquet", schemas.COMMENTS).to_pandas()
    ann = read_table(tmp / "annotations" / "all.parquet", schemas.ANNOTATIONS).to_pandas()
    # every JSON entry is a row: 29 per moderated main discussion, 15 without a facilitator, one cut short
    raw = reference.load_messages(FIXTURE / "data")
    assert (comments["condition"] == "main").sum() == len(raw)
    main = setups[setups["condition"] == "main"]
    assert main.groupby("strategy").size().to_dict() == dict.fromkeys(reference.PAPER_ORDER[1:6] + ["No Moderator"], 6)
    assert set(main["model"]) == {"llama-3.1-70b", "mistral-nemo-12b", "qwen2.5-32b"}
    assert (setups["seed"] == release.UNSEEDED).all()
    # the seed: turn 0, a user's name, flagged; empty facilitator texts are silent turns with no position
    seeds = comments[comments["turn"] == 0]
    assert seeds["is_seed"].all() and not seeds["is_facilitator"].any() and comments["is_seed"].sum() == 46
    empty = comments["text"].str.strip() == ""
    assert (comments["is_silent"] == empty).all() and comments.loc[empty, "position"].isna().all()
    assert comments.loc[empty, "is_facilitator"].all() and empty.sum() >= 36
    cut = comments.groupby("discussion_id").size()
    assert sorted(cut.unique()) == [14, 15, 29]
    # ratings: every entry of every rated discussion, seeds too, joined on position with the same text
    assert m["seed_ratings"] == 114 and m["annotators"] == 3 and len(ann) == m["ratings"]
    joined = ann.merge(comments, on=["discussion_id", "turn"], validate="many_to_one")
    assert len(joined) == len(ann) and joined["is_seed"].sum() == 114
    # roles as the authors read them: trolls and community veterans kept
    roles = pd.Series([p["role"] for ps in main["participants"] for p in ps])
    assert set(roles) == {"normal_user", "troll", "community_veteran"}
    # what has no place is counted and said; the source and revision are in provenance
    assert sum(m["left_out_files"].values()) == 18 and "vanilla_no_sdb" in stderr and "left out 18 files" in stderr
    prov = read_provenance(tmp / "annotations" / "all.parquet")
    assert prov["data_source"]["source"] == "syndisco_release" and prov["data_source"]["verified"] is False
    assert prov["data_source"]["expected"] == "fde36171" and len(prov["annotators"]) == 3


def test_table2_of_the_imported_data_equals_the_authors_way(imported, tmp_path):
    """Table 2 from the import + analysis equals the authors' computation on the JSON (joined on position;
    on text too: the user rows do not change), seeds and facilitator rows dropped; seeds kept would change it."""
    tmp, _ = imported
    out = tmp_path / "analysis"
    proc = release_stage(
        "analyse", *imported_paths(tmp), *HUMANS(tmp), "--analysis", str(out), "--metrics",
        str(tmp_path / "analyse.json"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ours = pd.read_parquet(out / "table2_ols.parquet").set_index("variable")
    ref = reference.table2(FIXTURE / "data")
    assert ref["params"] == pytest.approx(reference.table2(FIXTURE / "data", join="text")["params"], abs=1e-12)
    assert read_metrics(tmp_path / "analyse.json")["ols_nobs"] == ref["n"]
    for term in reference.PAPER_ORDER:
        assert ours.loc[term, "coef"] == pytest.approx(ref["params"][term], abs=1e-9), term
    with_seeds = reference.table2(FIXTURE / "data", keep_seed=True)["params"]
    assert abs(with_seeds["Intercept"] - ref["params"]["Intercept"]) > 0.3  # the seeds would have moved it
    # the generator's truth is recovered within sampling error (the fixture is small)
    truth = json.loads((FIXTURE / "truth.json").read_text())
    for term, value in truth["generator"].items():
        if term in ours.index:
            assert abs(ours.loc[term, "coef"] - value) < 4 * ours.loc[term, "se"] + 0.05, term


def test_an_annotation_file_that_disagrees_with_its_discussion_stops_the_import(tmp_path):
    rel = fixture_copy(tmp_path)
    shutil.copy(FIXTURE / "mismatch.json", rel / MISMATCH_TARGET)
    proc = import_cmd(tmp_path, rel)
    assert proc.returncode != 0
    assert MISMATCH_TARGET.split("/")[-1] in proc.stderr and "logs[5] text differs" in proc.stderr
    assert not (tmp_path / "setups.parquet").exists()


@pytest.mark.parametrize(
    "edit,said",
    [
        (lambda d: d["logs"][3].update(model="gpt-5"), "logs[].model"),
        (lambda d: d.pop("ctx_length"), "missing field(s) ctx_length"),
        (lambda d: d["logs"][2].update(name="stranger"), "logs[2].name 'stranger'"),
    ],
)
def test_what_cannot_be_mapped_stops_the_import_naming_file_and_field(tmp_path, edit, said):
    rel = fixture_copy(tmp_path)
    target = sorted((rel / "data/discussions_output/main/vanilla").glob("*.json"))[0]
    data = json.loads(target.read_text())
    edit(data)
    target.write_text(json.dumps(data))
    with pytest.raises(release.ReleaseError, match="vanilla") as err:
        release.read(rel)
    assert target.name in str(err.value) and said in str(err.value)
    unknown = rel / "data/discussions_output/main/socratic"
    unknown.mkdir()
    with pytest.raises(release.ReleaseError, match="socratic: unknown strategy folder"):
        release.read(rel)


def test_the_revision_of_a_clone_is_checked(tmp_path):
    rel = fixture_copy(tmp_path)
    head = git_commit_all(rel, "release")
    assert release.revision(rel, head[:8]) == {
        "repository": release.REPOSITORY,
        "expected": head[:8],
        "commit": head,
        "verified": True,
    }
    with pytest.raises(release.ReleaseError, match=f"at commit {head[:12]}, not facilitation.data.revision fde36171"):
        release.revision(rel, "fde36171")
    with pytest.raises(release.ReleaseError, match="not a SynDisco release"):
        release.data_folder(tmp_path)
