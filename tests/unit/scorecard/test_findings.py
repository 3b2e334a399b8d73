"""The findings' identity (socsim.io.findings): each study declares its paper's findings once, with ids unique
across studies, counterparts that name each other, and every id a control is powered for declared."""

from __future__ import annotations

import pytest

from socsim import studies
from socsim.facilitation.analysis.report import per_model
from socsim.io.findings import PaperFinding, Scope, catalogue, study_findings
from socsim.io.report import Finding
from socsim.planted.answers import PLANTED, POWERED
from socsim.stats.verdict import Verdict


def test_every_study_declares_its_findings_with_ids_unique_across_studies():
    seen: dict[str, str] = {}
    for s in studies.all_studies():
        declared = study_findings(s.name)
        assert declared, s.name
        for fid, f in declared.items():
            assert fid not in seen, (fid, seen.get(fid), s.name)
            seen[fid] = s.name
            assert f.wording and f.version and f.where and f.paper, fid
    assert len({fid.split(".")[0] for fid in seen}) >= len(studies.all_studies())  # a prefix per study (000: two)


def test_paper_000s_two_versions_name_their_counterparts_with_what_differs():
    declared = study_findings("facilitation")
    pairs = {(f.id, f.counterpart) for f in declared.values() if f.counterpart}
    assert ("fac.intervene_almost_always", "facr.intervene_almost_always") in pairs
    assert all((b, a) in pairs for a, b in pairs)  # each names the other
    assert all(declared[a].version != declared[b].version for a, b in pairs)  # across versions


def test_every_powered_or_planted_finding_is_declared_and_none_is_both():
    for study, fid in [*POWERED, *PLANTED]:
        assert fid in study_findings(study), (study, fid)
    assert not set(POWERED) & set(PLANTED)


def test_a_finding_that_compares_the_models_is_never_judged_on_one_model_alone():
    across = [f.id for f in study_findings("facilitation").values() if f.across_models]
    assert across == ["fac.qwen_highest_diversity"]
    found = [Finding("c", "s", None, "t", "u", 3, Verdict(None), id=i) for i in ("fac.toxicity_lowered", *across)]
    assert [f.id for f in per_model(found)] == ["fac.toxicity_lowered"]  # (it stands on the models together)


def test_a_catalogue_refuses_an_id_twice_and_a_counterpart_that_does_not_name_it_back():
    a = PaperFinding("x.a", "a", "v1", "Sect. 1", "holds")
    with pytest.raises(ValueError, match="declared twice"):
        catalogue([a, a])
    one_sided = PaperFinding("x.b", "b", "v2", "Sect. 1", "holds", counterpart="x.a", differs="the test")
    with pytest.raises(ValueError, match="does not name it back"):
        catalogue([a, one_sided])
    with pytest.raises(ValueError, match="needs what differs"):
        PaperFinding("x.c", "c", "v2", "Sect. 1", "holds", counterpart="x.a")
    with pytest.raises(ValueError, match="without spaces"):
        PaperFinding("no prefix", "c", "v2", "Sect. 1", "holds")


def test_a_scope_is_a_model_all_models_or_named_humans():
    assert Scope.humans("DEBATE (real)").label == "humans (DEBATE (real))"
    assert Scope.all_models().label == "the models together" and Scope.model("m").label == "m"
    with pytest.raises(ValueError, match="a model, all models or humans"):
        Scope("crowd", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a name"):
        Scope.humans("")
