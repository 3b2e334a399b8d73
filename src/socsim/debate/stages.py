"""The DEBATE study (paper 003): its artifacts and stages (the study contract, socsim.stages)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from socsim.context import StageContext
from socsim.debate import schemas
from socsim.debate.setups import settings
from socsim.models import reader_of
from socsim.stages import SHARD, Artifact, Stage, Study, analysis_folder, shard_table

if TYPE_CHECKING:
    from socsim.llm import LLMClient

DATA = "data/debate"
RESULTS = "results/debate"
DB = "debate"
HUMAN = {"model": "human", "mode": 0, "ablation": "human"}
# The data source `planted` (socsim.debate.planted_humans.write_humans): groups per Depth topic unless
# debate.data.groups_per_topic says, and the seed its humans are drawn from (fixed: they are the control's data).
PLANTED_GROUPS = 4
PLANTED_SEED = 3


def run_ingest(ctx: StageContext) -> None:
    from socsim.debate import ingest

    d = ctx.params[DB]["data"]
    identity = {"source": d["source"]}
    topics = ctx.yaml("topics_file")
    with tempfile.TemporaryDirectory() as tmp:
        if d["source"] == "hub":
            root, identity = ingest.fetch(d["repo_id"], d["revision"], d["allow_patterns"])
            identity = {"source": "hub", **identity}
        elif d["source"] == "planted":  # the planted control's humans, written where they are read
            from socsim.debate.planted_humans import write_humans

            groups = d.get("groups_per_topic") or PLANTED_GROUPS
            depth = [k for k, v in topics["topics"].items() if v.get("set") == "depth"]
            root = write_humans(Path(tmp), depth, groups, PLANTED_SEED)
            identity = {"source": "planted", "groups_per_topic": groups, "seed": PLANTED_SEED}
        else:
            root = Path(ctx.path("fixture") if d["source"] == "fixture" else d["path"])
            if not root.is_dir():
                raise FileNotFoundError(f"debate.data.path: no such directory: {root}")
        parsed = ingest.parse(
            root, topics["topics"], topics["survey_aliases"], list(d["sources"]), d["allow_unknown_topics"]
        )
    for name in ("sessions", "participants", "tweets", "utterances"):
        ctx.write(name if name != "utterances" else "human_utterances", parsed[name], data=identity)
    counts = ingest.data_counts(
        parsed["sessions"], parsed["utterances"], ingest.data_label(identity), ctx.yaml("paper_file").get("table1")
    )
    ctx.write("data_counts", counts, data=identity)
    dropped = [s for s in parsed["sessions"] if not s["complete"]]
    for s in dropped:
        print(f"dropped session {s['session_id']} ({s['file']}): {s['drop_reason']}")
    for sid, why in parsed["post_opinion_missing"].items():
        print(f"session {sid}: {why} (kept for Tables 3/4/9/10; left out of Sect. 6)")
    by_source = parsed["counts"]["by_source"]
    print(
        "sessions by source: "
        + "; ".join(
            f"{src}: {c['sessions']} used ({c['complete']} complete) of {c['files']} files, "
            f"{c['shadowed']} shadowed by an earlier source"
            for src, c in by_source.items()
            if c["files"]
        )
    )
    ctx.write_metrics(
        sessions=len(parsed["sessions"]),
        complete=len(parsed["sessions"]) - len(dropped),
        dropped={s["session_id"]: s["drop_reason"] for s in dropped},
        without_post_opinion=parsed["post_opinion_missing"],
        by_source=by_source,
        warnings=parsed["warnings"],
        utterances=len(parsed["utterances"]),
        data=identity,
    )


def selected(ctx: StageContext) -> list[dict[str, Any]]:
    """The complete sessions of the run: per topic set, the first `sessions_per_set` by id."""
    from socsim.debate import setups

    dp = ctx.params[DB]
    return setups.select(ctx.rows("sessions"), dp["topic_sets"], dp["sessions_per_set"])


def run_setups(ctx: StageContext) -> None:
    from socsim.debate import setups

    rows = setups.build(ctx.params[DB], ctx.seed, ctx.rows("sessions"), ctx.rows("participants"))
    ctx.write("setups", rows)
    ctx.write_metrics(
        setups=len(rows),
        settings=len({tuple(r[k] for k in schemas.SETTING) for r in rows}),
        sessions=len({r["session_id"] for r in rows}),
    )


def run_simulate(ctx: StageContext) -> None:
    from socsim.debate import simulate

    dp = ctx.params[DB]
    mine = ctx.rows("setups", in_shard=True)
    clients = ctx.model_clients(dp["agent_models"], "debate.agent_models", present=mine)
    keep = {s["session_id"] for s in mine}
    participants, tweets, utterances = (
        [r for r in ctx.rows(n) if r["session_id"] in keep] for n in ("participants", "tweets", "human_utterances")
    )
    rows = asyncio.run(
        simulate.run_setups(mine, participants, tweets, utterances, ctx.yaml("prompts_file"), dp, clients)
    )
    ctx.write("simulated", rows)
    ctx.write_metrics(
        setups=len(mine),
        settings=len({tuple(r[k] for k in schemas.SETTING) for r in mine}),
        sessions=len(keep),
        generated={k: sum(r["kind"] == k for r in rows) for k in ("utterance", "tweet", "opinion")},
        opinions_unparsed=sum(not r["parse_ok"] for r in rows),
    )


def _annotator_name(p: Mapping[str, Any]) -> dict[str, str]:
    return {p[DB]["annotator"]["model"]: "debate.annotator.model"}


def _reader_names(p: Mapping[str, Any]) -> dict[str, str]:
    """The models that annotate the twins' texts -> the params key that names each: the annotator for a
    language model's texts, a control's own for its texts (socsim.models.reader_of)."""
    configured = p[DB]["annotator"]["model"]
    out: dict[str, str] = {}
    for m in p[DB]["agent_models"]:
        r = reader_of(p["models"], m, configured)
        out.setdefault(r, "debate.annotator.model" if r == configured else "debate.agent_models")
    return out


def _annotator(ctx: StageContext, agent_model: str | None = None) -> tuple[dict[str, Any], tuple[str, LLMClient]]:
    """The annotation params and the (name, client) that reads `agent_model`'s texts (None: the humans')."""
    ap = ctx.params[DB]["annotator"]
    name = ap["model"] if agent_model is None else reader_of(ctx.params["models"], agent_model, ap["model"])
    where = "debate.annotator.model" if name == ap["model"] else "debate.agent_models"
    return ap, (name, ctx.model_client(name, where))


def _lookups(ctx: StageContext) -> tuple[dict[str, str], dict[str, str]]:
    names = {p["worker_id"]: p["name"] for p in ctx.rows("participants")}
    statements = {s["session_id"]: s["statement"] for s in ctx.rows("sessions")}
    return names, statements


def run_annotate(ctx: StageContext) -> None:
    from socsim.debate import annotate

    sim = [r for r in ctx.rows("simulated") if r["kind"] != "opinion"]
    human_tweets = {(t["session_id"], t["round"], t["worker_id"]): t["text"] for t in ctx.rows("tweets")}
    names, statements = _lookups(ctx)
    human_history = annotate.dyad_turns(ctx.rows("human_utterances"))
    rows = []
    for key, group in pd.DataFrame(sim, columns=[f.name for f in schemas.SIMULATED]).groupby(
        ["model", "mode", "ablation", "topic_set"], sort=True
    ):
        (ap, (name, client)) = _annotator(ctx, str(key[0]))
        items = group.to_dict("records")
        seen = dict(human_tweets)  # Mode 3 rounds 2 and 3: the dyad saw the simulated tweets
        seen.update({(t["session_id"], t["round"], t["speaker"]): t["text"] for t in items if t["kind"] == "tweet"})
        history = human_history if key[1] == 1 else None  # Mode 1 answered the human turns
        rows += asyncio.run(
            annotate.annotate(
                items, seen, names, statements, ctx.yaml("prompts_file"), ap, client, name, ctx.seed, history
            )
        )
    ctx.write("annotations", rows)
    ctx.write_metrics(annotated=len(rows))


def run_annotate_human(ctx: StageContext) -> None:
    from socsim.debate import annotate

    keep = {s["session_id"]: s["topic_set"] for s in selected(ctx)}
    tweets = [t for t in ctx.rows("tweets") if t["session_id"] in keep]
    items = [
        {
            **HUMAN,
            "topic_set": keep[u["session_id"]],
            "session_id": u["session_id"],
            "round": u["round"],
            "kind": "utterance",
            "dyad": u["dyad"],
            "k": u["k"],
            "speaker": u["speaker"],
            "text": u["text"],
        }
        for u in ctx.rows("human_utterances")
        if u["session_id"] in keep
    ]
    items += [
        {
            **HUMAN,
            "topic_set": keep[t["session_id"]],
            "session_id": t["session_id"],
            "round": t["round"],
            "kind": "tweet",
            "dyad": "",
            "k": 0,
            "speaker": t["worker_id"],
            "text": t["text"],
        }
        for t in tweets
    ]
    names, statements = _lookups(ctx)
    (ap, (name, client)) = _annotator(ctx)
    seen = {(t["session_id"], t["round"], t["worker_id"]): t["text"] for t in tweets}
    rows = asyncio.run(
        annotate.annotate(items, seen, names, statements, ctx.yaml("prompts_file"), ap, client, name, ctx.seed)
    )
    ctx.write("human_annotations", rows)
    ctx.write_metrics(annotated=len(rows))


def run_compare(ctx: StageContext) -> None:
    from socsim.debate import compare

    simulated, annotations, human_utterances, human_annotations = (ctx.read(n).to_pandas() for n in compare.INPUTS)
    out = compare.utterance_metrics(simulated, annotations, human_utterances, human_annotations, ctx.params[DB])
    compare.write(out, ctx.path("comparison"))
    ctx.write_metrics(settings=len(out["metrics"]), encoder=out["encoder"])


def run_analyse(ctx: StageContext) -> None:
    from socsim.debate import analysis

    ctx.write_report(analysis.analyse(ctx.analysis_inputs(*analysis.INPUTS)))


def run_figures(ctx: StageContext) -> None:
    from socsim.debate import figures

    names = figures.all_figures(ctx.plots(), ctx.path("figures"))
    ctx.write_metrics(figures=sorted(names))


def shards(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Simulate/annotate shards: one per (model, mode, ablation, topic set), or coarser by `debate.shard_by`."""
    dp = params[DB]
    return shard_table(settings(dp), list(dp["shard_by"]))


SHARD_KEYS = ("debate.agent_models", "debate.modes", "debate.ablations", "debate.topic_sets", "debate.shard_by")
SELECT = ("debate.topic_sets", "debate.sessions_per_set")
DESIGN = ("seed", "debate.agent_models", "debate.modes", "debate.ablations", *SELECT)
ANNOTATOR = ("seed", "debate.annotator")

ARTIFACTS = {
    "topics_file": Artifact(f"{DATA}/topics.yaml"),
    "prompts_file": Artifact(f"{DATA}/prompts.yaml"),
    "paper_file": Artifact(f"{DATA}/paper.yaml"),
    "fixture": Artifact(f"{DATA}/fixture", kind="dir"),
    "sessions": Artifact(f"{RESULTS}/sessions.parquet", schemas.SESSIONS, ("session_id",)),
    "participants": Artifact(f"{RESULTS}/participants.parquet", schemas.PARTICIPANTS, ("session_id", "worker_id")),
    "tweets": Artifact(f"{RESULTS}/tweets.parquet", schemas.TWEETS, ("session_id", "round", "worker_id")),
    "human_utterances": Artifact(
        f"{RESULTS}/human_utterances.parquet", schemas.UTTERANCES, ("session_id", "round", "dyad", "k")
    ),
    "data_counts": Artifact(f"{RESULTS}/data_counts.parquet", schemas.DATA_COUNTS, ("topic_set", "source")),
    "setups": Artifact(f"{RESULTS}/setups.parquet", schemas.SETUPS, (*schemas.SETTING, "session_id")),
    "simulated": Artifact(
        f"{RESULTS}/simulated/{SHARD}.parquet",
        schemas.SIMULATED,
        (*schemas.SETTING, "session_id", "round", "kind", "dyad", "k", "speaker"),
    ),
    "annotations": Artifact(
        f"{RESULTS}/annotations/{SHARD}.parquet",
        schemas.ANNOTATIONS,
        (*schemas.SETTING, "session_id", "round", "kind", "dyad", "k", "speaker"),
    ),
    "human_annotations": Artifact(
        f"{RESULTS}/human_annotations.parquet",
        schemas.ANNOTATIONS,
        ("session_id", "round", "kind", "dyad", "k", "speaker"),
    ),
    "comparison": Artifact(f"{RESULTS}/comparison", kind="dir", tables=schemas.COMPARISON_TABLES),
    "analysis": analysis_folder(f"{RESULTS}/analysis", schemas.FIGURES),
    "figures": Artifact(f"{RESULTS}/figures", kind="dir", report="figures"),
}

STUDY = Study(
    DB,
    ARTIFACTS,
    [
        Stage(
            "ingest",
            "The human data (the Hub snapshot at a pinned revision, a local directory in its layout, or the "
            "synthetic fixture): sessions (incomplete ones dropped with the reason; whether all 4 gave a Post "
            "Opinion, which only Sect. 6 needs), participants with opinions and demographics, tweets per round, "
            "merged utterances per dyad-round; Table 1's counts per topic set and source folder beside the paper's.",
            run_ingest,
            inputs=("topics_file", "fixture", "paper_file"),
            outputs=("sessions", "participants", "tweets", "human_utterances", "data_counts"),
            params=("debate.data",),
        ),
        Stage(
            "setups",
            "One row per simulated session and setting (model x mode x ablation x topic set x session): the "
            "complete sessions of each topic set (the first sessions_per_set by id), their topic and workers, "
            "the run seed the requests' seeds derive from.",
            run_setups,
            inputs=("sessions", "participants"),
            outputs=("setups",),
            params=DESIGN,
        ),
        Stage(
            "simulate",
            "Digital twins of one shard's setups: Mode 1 next-message prediction, Mode 2 tweet-guided "
            "conversation, Mode 3 full conversation (simulated tweets and final opinions); memory ablations; "
            "the humans' partners, turn counts and speaker order.",
            run_simulate,
            inputs=("setups", "participants", "tweets", "human_utterances", "prompts_file"),
            outputs=("simulated",),
            params=("debate.max_tokens", "debate.opinion_max_tokens", *SHARD_KEYS),
            uses_llm=True,
            models=lambda p: dict.fromkeys(p[DB]["agent_models"], "debate.agent_models"),
            shards=shards,
        ),
        Stage(
            "annotate",
            "Stance (six labels, -2.5..2.5) of every simulated utterance and tweet and on-topic "
            "(VALID/INVALID) of every simulated utterance, constrained LLM judges.",
            run_annotate,
            inputs=("simulated", "sessions", "participants", "tweets", "human_utterances", "prompts_file"),
            outputs=("annotations",),
            params=(*ANNOTATOR, *SHARD_KEYS),
            uses_llm=True,
            models=_reader_names,
            shards=shards,
        ),
        Stage(
            "annotate_human",
            "Stance and on-topic labels of the human utterances and tweets of the run's sessions.",
            run_annotate_human,
            inputs=("sessions", "participants", "tweets", "human_utterances", "prompts_file"),
            outputs=("human_annotations",),
            params=(*ANNOTATOR, *SELECT),
            uses_llm=True,
            models=_annotator_name,
        ),
        Stage(
            "compare",
            "Utterance metrics per setting, round-wise (eq. 2): semantic similarity (sentence encoder), "
            "stance difference, signed and absolute length difference, ROUGE-L, on-topic rate.",
            run_compare,
            inputs=("simulated", "annotations", "human_utterances", "human_annotations"),
            outputs=("comparison",),
            params=("debate.encoder", "debate.encoder_revision", "debate.length_unit", "debate.human_on_topic"),
        ),
        Stage(
            "analyse",
            "Tables 3/4/9/10 in the paper's layout, group-level (Fig. 2) and individual-level (Fig. 3) "
            "opinion dynamics, Appendix H, degeneracy flags, vs_paper.",
            run_analyse,
            inputs=(
                "comparison",
                "sessions",
                "participants",
                "tweets",
                "human_utterances",
                "simulated",
                "annotations",
                "human_annotations",
                "paper_file",
            ),
            outputs=("analysis",),
            params=("debate.agent_models", "debate.length_unit", "debate.group_sd_ddof"),
        ),
        Stage(
            "figures",
            "Fig. 2 (group-level tweet stance and opinion, humans vs twins, and its effect sizes d_z beside "
            "the paper's), Fig. 3 (individual change), the utterance metrics by mode (PNG + PDF); each panel "
            "notes its n and flags.",
            run_figures,
            inputs=("analysis",),
            outputs=("figures",),
        ),
    ],
)
