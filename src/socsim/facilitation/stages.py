"""The facilitation study (paper 000): its artifacts and stages (the study contract, socsim.stages)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from socsim.facilitation import materials, schemas
from socsim.stages import SHARD, Artifact, Stage, StageContext, Study, shard_table

if TYPE_CHECKING:
    import pandas as pd

DATA = "data/facilitation"
RESULTS = "results/facilitation"


def run_personas(ctx: StageContext) -> None:
    p = ctx.params["facilitation"]["personas"]
    roles_text = materials.read_roles(ctx.path("roles_file"))
    if p["source"] == "file":
        rows = materials.personas_from_file(ctx.path("personas_file"), roles_text, p["n"])
    else:
        roles = materials.role_sequence(p["n"], p["roles"], ctx.seed)
        client = ctx.client()
        requests = materials.persona_requests(
            p["n"], roles, roles_text, ctx.seed, p["max_tokens"], client.default_sampling
        )
        rows = materials.personas_from_responses(client.run(requests, desc="personas"), roles, roles_text)
    ctx.write("personas", rows)
    ctx.write_metrics(rows=len(rows), rows_parse_ok=sum(r["parse_ok"] for r in rows))


def run_topics(ctx: StageContext) -> None:
    t = ctx.params["facilitation"]["topics"]
    if t["source"] == "file":
        rows = materials.topics_from_file(ctx.path("topics_file"), t["n"])
    else:
        themes = [r.get("theme") or r["text"] for r in materials.read_jsonl(ctx.path("topics_file"))]
        client = ctx.client()
        requests = materials.topic_requests(themes, t["n"], ctx.seed, t["max_tokens"], client.default_sampling)
        rows = materials.topics_from_responses(client.run(requests, desc="topics"), themes)
    ctx.write("topics", rows)
    ctx.write_metrics(rows=len(rows), rows_parse_ok=sum(r["parse_ok"] for r in rows))


# -- discussions ---------------------------------------------------------------------------


def run_setups(ctx: StageContext) -> None:
    from socsim.facilitation import setups

    rows = setups.build_setups(
        ctx.params["facilitation"],
        ctx.seed,
        ctx.rows("personas"),
        ctx.rows("topics"),
        ctx.yaml("instructions_file"),
        ctx.yaml("strategies_file"),
    )
    ctx.write("setups", rows)
    ctx.write_metrics(discussions=len(rows))


def run_simulate(ctx: StageContext) -> None:
    import asyncio

    from socsim.facilitation import simulate

    fp = ctx.params["facilitation"]
    rows_in = ctx.rows("setups", in_shard=True)
    clients = ctx.model_clients(fp["models"], "facilitation.models", present=rows_in)
    silence = simulate.SilenceRule.from_file(ctx.path("silence_file"))
    rows = asyncio.run(simulate.run_discussions(rows_in, clients, fp["comment_max_tokens"], silence))
    ctx.write("comments", rows)
    ctx.write_metrics(discussions=len(rows_in), **simulate.silence_metrics(rows))


def run_annotate(ctx: StageContext) -> None:
    from socsim.facilitation import annotate

    fa = ctx.params["facilitation"]["annotation"]
    comments = ctx.rows("comments")
    setup_rows = ctx.read("setups", in_shard=True).select(["discussion_id", "context_h"]).to_pylist()
    annotators = materials.read_annotators(ctx.path("annotators_file"), fa["annotators"])
    client = ctx.client()
    keys, requests = annotate.requests(
        comments,
        {r["discussion_id"]: r["context_h"] for r in setup_rows},
        annotators,
        ctx.yaml("guide_file"),
        ctx.seed,
        client.sampling(max_tokens=fa["max_tokens"], temperature=fa["temperature"]),
    )
    rows = annotate.rows(keys, client.run(requests, desc="annotations"))
    ctx.write("annotations", rows)
    # The parse-failure rates also live here: a failed analyse job loses its outputs under Snakemake.
    import pandas as pd

    from socsim.facilitation.analysis import parse_failures

    ctx.write_metrics(
        ratings_parse_ok=sum(r["parse_ok"] for r in rows),
        **parse_failures(pd.DataFrame(rows, columns=["annotator_id", "parse_ok"])),
    )


def run_analyse(ctx: StageContext) -> None:
    from socsim.facilitation import analysis, paper
    from socsim.io import vs_paper
    from socsim.io.parquet import atomic_write_bytes, write_json
    from socsim.stats import degeneracy as dg

    fa = ctx.params["facilitation"]["analysis"]
    setups_df = ctx.read("setups").to_pandas()
    comments = ctx.read("comments").to_pandas()
    annotations = ctx.read("annotations").to_pandas()
    human = analysis.read_human_reference(fa["human_reference"])
    out = ctx.path("analysis")

    def csv(df: pd.DataFrame, name: str) -> None:
        atomic_write_bytes(out / name, df.to_csv(index=False, float_format="%.6g").encode())

    # Parse-failure rates first: written even when no rating is usable (the error says so).
    agreement = analysis.agreement(annotations)
    write_json(out / "agreement.json", agreement)
    analysis.check_ratings(annotations)

    expected = sorted(setups_df.loc[setups_df["condition"] == analysis.MAIN, "strategy"].unique())
    rated = analysis.rated_comments(comments, annotations, setups_df, time=fa["time"])
    means = analysis.comment_means(rated)
    div = analysis.diversity_table(comments, setups_df, human)
    csv(div, "diversity.csv")
    flags = analysis.toxicity_flags(rated)
    ols = analysis.toxicity_ols(rated, expected, flags)
    table, md, tex = analysis.ols_tables(ols, fa["time"])
    csv(table, "table2_ols.csv")
    atomic_write_bytes(out / "table2_ols.md", md.encode())
    atomic_write_bytes(out / "table2_ols.tex", tex.encode())
    anova, pairwise = analysis.anova_and_pairwise(means, flags, expected)
    write_json(out / "anova.json", anova)
    csv(pairwise, "pairwise_ttests.csv")
    interv = analysis.interventions(comments)
    csv(interv, "interventions.csv")
    tt = analysis.troll_toxicity(means)
    csv(tt, "nontroll_toxicity.csv")
    csv(analysis.troll_groups(tt), "nontroll_toxicity_groups.csv")
    reply = analysis.observed_reply_rate(comments, setups_df)

    # ols.flags starts with the toxicity flags; the tests' own flags come back from their JSON form.
    all_flags = dg.collect(ols.flags, *[[dg.Flag(f["scope"], f["reason"]) for f in a["flags"]] for a in anova.values()])
    vs_paper.write(
        out,
        paper.rows(vs_paper.read_paper(ctx.path("paper_file")), ols, anova, interv, reply, div, tt, flags),
        "Facilitation (paper 000): ours vs the paper",
    )
    summary = {
        "degeneracy_flags": dg.as_json(all_flags),
        "degenerate": bool(all_flags),
        "time": fa["time"],
        "discussions": int(setups_df["discussion_id"].nunique()),
        "discussions_main": int((setups_df["condition"] == analysis.MAIN).sum()),
        "rated_user_comments_main": int(sum(anova["comment"]["n"].values())),
        "ratings": agreement["ratings"],
        "parse_failure_rate": agreement["parse_failure_rate"],
        "toxicity_distribution_main": analysis.toxicity_distribution(rated),
        "krippendorff_alpha_toxicity": agreement["krippendorff_alpha_toxicity"],
        "ols": {
            "available": ols.unavailable is None,
            "reason": ols.unavailable,
            "adj_r2": ols.adj_r2,
            "nobs": ols.nobs,
            "discussions": ols.n_clusters,
            "note": ols.note,
        },
        "anova": {level: {"F": a["F"], "p": a["p"], "verdict": a["verdict"]} for level, a in anova.items()},
        "strategies_without_ratings": anova["comment"]["no_ratings"],
        "observed_reply_rate": reply,
        "facilitator_intervention_rate_all_conditions": (
            float(interv["interventions"].sum() / interv["opportunities"].sum()) if len(interv) else None
        ),
    }
    write_json(out / "summary.json", summary)
    write_json(out / "provenance.json", ctx.provenance())
    ctx.write_metrics(
        ols_adj_r2=ols.adj_r2,
        ols_nobs=ols.nobs,
        anova_p=anova["comment"]["p"],
        anova_p_discussion=anova["discussion"]["p"],
        degeneracy_flags=len(all_flags),
        parse_failure_rate=agreement["parse_failure_rate"],
        krippendorff_alpha_toxicity=agreement["krippendorff_alpha_toxicity"],
    )
    for f in all_flags:
        print(f.message)


def run_figures(ctx: StageContext) -> None:
    import json

    import pandas as pd

    from socsim.facilitation import figures

    a = ctx.path("analysis")
    out = ctx.path("figures")
    summary = json.loads((a / "summary.json").read_text())
    figures.fig3_pairwise(
        pd.read_csv(a / "pairwise_ttests.csv", keep_default_na=False, na_values=[""]),
        out,
        summary.get("degeneracy_flags", []),
    )
    figures.fig4_interventions(pd.read_csv(a / "interventions.csv"), out)
    figures.fig5_diversity(pd.read_csv(a / "diversity.csv"), out)
    figures.fig6_troll_toxicity(pd.read_csv(a / "nontroll_toxicity_groups.csv"), out)
    ctx.write_metrics(figures=sorted(p.name for p in out.glob("*.png")))


def shards(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Simulate/annotate shards: one per (condition, model) cell of the design that has discussions,
    or coarser by `facilitation.shard_by` ([] = one shard)."""
    from socsim.facilitation.setups import conditions

    fp = params["facilitation"]
    cells = [
        {"condition": c.name, "model": m} for c, models, strats, n in conditions(fp) if n > 0 and strats for m in models
    ]
    return shard_table(cells, list(fp["shard_by"]))


DESIGN_KEYS = (
    "seed",
    "facilitation.models",
    "facilitation.strategies",
    "facilitation.discussions_per_cell",
    "facilitation.users_per_discussion",
    "facilitation.user_turns",
    "facilitation.context_h",
    "facilitation.turn_taking",
    "facilitation.p_respond",
    "facilitation.ablations",
    "facilitation.silence",
)

# What the shard function reads (the design cells that have discussions), and shard_by.
SHARD_KEYS = (
    "facilitation.models",
    "facilitation.strategies",
    "facilitation.discussions_per_cell",
    "facilitation.turn_taking",
    "facilitation.ablations",
    "facilitation.shard_by",
)

ARTIFACTS = {
    "personas_file": Artifact(f"{DATA}/personas.jsonl"),
    "roles_file": Artifact(f"{DATA}/roles.yaml"),
    "topics_file": Artifact(f"{DATA}/topics.jsonl"),
    "instructions_file": Artifact(f"{DATA}/instructions.yaml"),
    "strategies_file": Artifact(f"{DATA}/strategies.yaml"),
    "silence_file": Artifact(f"{DATA}/silence.yaml"),
    "annotators_file": Artifact(f"{DATA}/annotators.jsonl"),
    "guide_file": Artifact(f"{DATA}/annotation.yaml"),
    "paper_file": Artifact(f"{DATA}/paper.yaml"),
    "personas": Artifact(f"{RESULTS}/personas.parquet", schemas.PERSONAS, ("persona_id",)),
    "topics": Artifact(f"{RESULTS}/topics.parquet", schemas.TOPICS, ("topic_id",)),
    "setups": Artifact(f"{RESULTS}/setups.parquet", schemas.SETUPS, ("discussion_id",)),
    "comments": Artifact(f"{RESULTS}/comments/{SHARD}.parquet", schemas.COMMENTS, ("discussion_id", "turn")),
    "annotations": Artifact(
        f"{RESULTS}/annotations/{SHARD}.parquet", schemas.ANNOTATIONS, ("discussion_id", "turn", "annotator_id")
    ),
    "analysis": Artifact(f"{RESULTS}/analysis", kind="dir", report="tables", pattern="{name}.csv"),
    "figures": Artifact(f"{RESULTS}/figures", kind="dir", report="figures"),
}

STUDY = Study(
    "facilitation",
    ARTIFACTS,
    [
        Stage(
            "personas",
            "Participant personas (paper 000, Table 1): from data/ or generated by the LLM under a JSON schema.",
            run_personas,
            inputs=("personas_file", "roles_file"),
            outputs=("personas",),
            params=("seed", "facilitation.personas"),
            uses_llm=True,
        ),
        Stage(
            "topics",
            "Topics (seed opinions) that open each discussion: from data/ or generated by the LLM.",
            run_topics,
            inputs=("topics_file",),
            outputs=("topics",),
            params=("seed", "facilitation.topics"),
            uses_llm=True,
        ),
        Stage(
            "setups",
            "Discussion setups (Algorithm 1): per model x strategy x i < N_d (and per ablation), 7 sampled "
            "personas, one topic and a facilitator; one row per discussion.",
            run_setups,
            inputs=("personas", "topics", "instructions_file", "strategies_file"),
            outputs=("setups",),
            params=DESIGN_KEYS,
        ),
        Stage(
            "simulate",
            "Run the discussions of one shard concurrently: turn taking, context window of h comments, "
            "facilitator interventions or silence; one row per turn.",
            run_simulate,
            inputs=("setups", "silence_file"),
            outputs=("comments",),
            params=("facilitation.comment_max_tokens", *SHARD_KEYS),
            uses_llm=True,
            shards=shards,
        ),
        Stage(
            "annotate",
            "LLM annotators rate every non-silent comment of one shard (toxicity and argument quality, "
            "1-5) seeing the h comments before it; rows keyed by (discussion_id, turn, annotator_id).",
            run_annotate,
            inputs=("comments", "setups", "annotators_file", "guide_file"),
            outputs=("annotations",),
            params=("seed", "facilitation.annotation", *SHARD_KEYS),
            uses_llm=True,
            shards=shards,
        ),
        Stage(
            "analyse",
            "Diversity, OLS toxicity ~ strategy * time (Table 2; plain and clustered errors), ANOVA and "
            "pairwise t-tests with Holm at comment and discussion level, interventions, troll effects, Krippendorff's "
            "alpha, degeneracy flags (summary.json), ours vs the paper (vs_paper.csv/.md).",
            run_analyse,
            inputs=("setups", "comments", "annotations", "paper_file"),
            outputs=("analysis",),
            params=("facilitation.analysis",),
        ),
        Stage(
            "figures",
            "Figs. 3-6 (PNG + PDF): pairwise toxicity differences, interventions, diversity, non-troll toxicity.",
            run_figures,
            inputs=("analysis",),
            outputs=("figures",),
        ),
    ],
)
