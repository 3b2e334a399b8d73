"""Facilitation's analyse and figures stages (`socsim facilitation analyse`, `figures`) on Parquet files of
the documented schemas: degenerate input said plainly, informative ratings compared with the paper, all
ratings unparsed stopping the stage after writing the agreement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from socsim.facilitation import schemas
from support.project import run_socsim, write_params
from support.studies.facilitation import _known_discussions, _strict

# -- the analyse and figures stages on Parquet files of the documented schemas ----------------------


def _write_study(d, comments, ann, setups_small):
    from socsim.io.parquet import write_table

    d.mkdir(parents=True, exist_ok=True)
    setups = []
    for _, s in setups_small.iterrows():
        setups.append(
            {
                "discussion_id": s.discussion_id,
                "condition": "main",
                "model": "m",
                "strategy": comments.loc[comments.discussion_id == s.discussion_id, "strategy"].iloc[0],
                "turn_taking": "respond",
                "p_respond": 0.4,
                "context_h": 2,
                "user_turns": 6,
                "instructions": "full",
                "with_sdb": True,
                "with_roles": True,
                "topic_id": "t1",
                "topic": "seed opinion",
                "participants": [],
                "facilitator_prompt": None,
                "seed": 1,
            }
        )
    write_table(d / "setups.parquet", setups, schemas.SETUPS, ["discussion_id"], {})

    def records(df, int_cols):
        out = df.to_dict("records")
        for r in out:
            for k in int_cols:
                r[k] = None if pd.isna(r[k]) else int(round(r[k]))
        return out

    c = comments.assign(model="m", condition="main", prompt_hash=None, completion_tokens=1)
    write_table(
        d / "comments.parquet", records(c, ["position", "turn"]), schemas.COMMENTS, ["discussion_id", "turn"], {}
    )
    write_table(
        d / "annotations.parquet",
        records(ann, ["toxicity", "argument_quality", "turn"]),
        schemas.ANNOTATIONS,
        ["discussion_id", "turn", "annotator_id"],
        {},
    )


def _analyse(d, params):
    """The humans stage (the params' human reference: socsim's fixture), then analyse."""
    humans = run_socsim(
        "facilitation", "humans", "--params", str(params), "--humans", str(d / "humans.parquet"),
        "--metrics", str(d / "humans.json"),
    )  # fmt: skip
    assert humans.returncode == 0, humans.stderr
    return run_socsim(
        "facilitation",
        "analyse",
        "--humans",
        str(d / "humans.parquet"),
        "--params",
        str(params),
        "--setups",
        str(d / "setups.parquet"),
        "--comments",
        str(d / "comments.parquet"),
        "--annotations",
        str(d / "annotations.parquet"),
        "--analysis",
        str(d / "analysis"),
        "--metrics",
        str(d / "analyse.json"),
    )


def test_analyse_and_figures_stages_say_degenerate_input_plainly(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=3, turns=6)
    ann["toxicity"] = 1.0  # the embedded model's typical answer
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode == 0, proc.stderr
    assert "degenerate input: facilitation toxicity ratings" in proc.stdout
    out = tmp_path / "analysis"
    summary = _strict((out / "summary.json").read_text())
    assert summary["degenerate"] and summary["degeneracy_flags"][0]["message"].startswith("degenerate input")
    assert {"scope", "reason", "message"} <= set(summary["degeneracy_flags"][0])
    for name in ("anova.json", "agreement.json", "provenance.json", "summary.json"):
        _strict((out / name).read_text())
    _strict((tmp_path / "analyse.json").read_text())
    vs = pd.read_csv(out / "vs_paper.csv")
    row = vs[vs.quantity == "Table 2: Moderation Game×time"].iloc[0]
    assert row["paper"] == pytest.approx(-0.011) and np.isnan(row["ours"])
    assert vs.loc[vs.quantity.str.startswith("Finding 2"), "finding_holds"].iloc[0].startswith("degenerate input")
    assert "degenerate input" in (out / "vs_paper.md").read_text()
    assert "***" not in (out / "table2_ols.md").read_text()
    proc = run_socsim(
        "facilitation",
        "figures",
        "--params",
        str(params),
        "--analysis",
        str(out),
        "--figures",
        str(tmp_path / "figures"),
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list((tmp_path / "figures").glob("fig*.png"))) == 4


def test_analyse_on_informative_ratings_compares_with_the_paper(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=4, turns=10)
    rng = np.random.default_rng(1)
    ann["toxicity"] = (ann["toxicity"] + rng.normal(0, 0.8, len(ann))).clip(1, 5)
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "analysis"
    summary = _strict((out / "summary.json").read_text())
    assert summary["ols"]["available"] and summary["time"] == "user_index"
    vs = pd.read_csv(out / "vs_paper.csv")
    ours = vs.set_index("quantity")
    table = pd.read_csv(out / "table2_ols.csv").set_index("variable")
    assert ours.loc["Table 2: Moderation Game×time", "ours"] == pytest.approx(
        table.loc["Moderation Game×time", "coef"], rel=1e-4
    )
    assert ours.loc["Table 2: Moderation Game×time", "difference"] == pytest.approx(
        table.loc["Moderation Game×time", "coef"] + 0.011, rel=1e-3
    )
    assert set(pd.read_csv(out / "pairwise_ttests.csv")["level"]) == {"rating", "comment", "discussion"}
    # Finding 2 holds only for significant negative x time terms (the sign alone is no finding).
    elaborate = ["Regulation Room×time", "Constructive Communications×time", "Moderation Game×time"]
    # This data has one elaborate strategy of three: Finding 2 cannot be judged (the rule is tested
    # on its own in tests/unit/stats/test_verdict.py and on null data below).
    assert [t for t in elaborate if t in table.index] == ["Moderation Game×time"]
    vs_text = pd.read_csv(out / "vs_paper.csv", keep_default_na=False)
    row = vs_text[vs_text.quantity.str.startswith("Finding 2")].iloc[0]
    assert row["finding_holds"] == "inconclusive (n = 0 discussions, needs 3)"  # no Regulation Room here
    # the Parquet form is the canonical table, equal to the CSV's values
    canon = pd.read_parquet(out / "table2_ols.parquet").set_index("variable")
    assert canon["coef"].to_numpy() == pytest.approx(table["coef"].to_numpy(), rel=1e-5)


def test_all_ratings_unparsed_fails_naming_it_after_writing_agreement(tmp_path):
    params = write_params(tmp_path / "params.yaml")
    comments, ann, setups = _known_discussions(per_cell=2, turns=4)
    ann["parse_ok"] = False
    ann["toxicity"] = np.nan
    _write_study(tmp_path, comments, ann, setups)
    proc = _analyse(tmp_path, params)
    assert proc.returncode != 0
    assert "every rating failed to parse" in proc.stderr
    agreement = _strict((tmp_path / "analysis" / "agreement.json").read_text())
    assert agreement["parse_failure_rate"] == 1.0 and set(agreement["parse_failure_rate_by_annotator"].values()) == {
        1.0
    }
