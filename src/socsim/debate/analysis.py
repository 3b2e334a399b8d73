"""Analysis of the DEBATE study (paper 003): utterance metrics per setting (Tables 3, 4, 9, 10),
group- and individual-level opinion dynamics (Sect. 6, Figs. 2 and 3), Appendix H, vs_paper.

`analyse` returns a report (socsim.io.report): the tables, the findings judged by the one verdict
rule (socsim.stats.verdict), the degeneracy flags with the tables, rows and figure panels they
concern, and the vs_paper rows. It runs on any Parquet files of the documented schemas, so released
simulations can be re-analysed.

Tables: Depth -> Table 3 (models x modes, original memory) and Table 4 (ablations of the first
model); Breadth -> Tables 9 and 10. Sect. 6 uses the Depth groups of Mode 3 (original memory, the
first model): tweet stance per round and opinions, topic-level reverse coding (x -1) of
truth-framed topics; the twins' round-1 tweet and initial opinion are the humans'.

Flags travel with their numbers: each quantity carries the flags of its own inputs only.

- stance annotator (utterances): one value for >= 90 % of the utterance stances -> Delta_stance;
- on-topic annotator: one value for >= 90 % of the on-topic labels that filter the utterances ->
  every metric of the paper's (on-topic) tables (the filter decides which utterances they compare);
- a setting where no simulated on-topic utterance has an on-topic human comparator -> that
  setting's pairwise metrics (not its on-topic rate);
- stance annotator (human tweets / twins' tweets, Sect. 6) -> the tweet quantities of Figs. 2 and 3
  whose tweets they are (the twins' round-1 tweet is the human's);
- the twins' final opinions (Sect. 6), one value for >= 90 % -> the twins' opinion quantities.

Design differences (vs_paper's `comparable`): the data source the run read (the provenance that
ingest wrote into its outputs: the synthetic fixture or the DEBATE data), and per quantity the agent
model, the annotator and the sentence encoder when it depends on them. A row with a design
difference gives no verdict of agreement with the paper.

Findings, each judged at the unit of its claim (issue 34):

- the debates (Tables 3, 9, the ablation) and Sect. 6's groups nest in the topics of their set (the 7
  Depth topics): a claim about the set is judged by a sign-flip test over the topic means of the
  per-debate or per-group values (socsim.stats.signflip), with at least MIN_TOPICS topics, the test
  over debates or groups beside it: Mode 1 > Mode 2 > Mode 3 in S_sem (each consecutive pair), LLM
  utterances longer than the humans', the Sect. 5 ablation, Sect. 6's drift and convergence, Fig. 3's
  partner influence;
- a change of the twins is measured between two points the model wrote: their round-2 and round-3
  tweets (stats.MODEL_WRITTEN_TESTS). The twins' round-1 tweet and initial opinion are the humans', so the
  paper's twin tests (round 3 vs 1, final vs initial opinion) compare a model-written end with a
  human-written start: a model that only writes more moderately than the humans "converges" and
  "drifts". They are shown as the paper's comparison (PAPERS_COMPARISON), without a verdict; so are the
  opinion parts of convergence and public vs private, which have no model-written start;
- Fig. 3's partner influence is the partner coefficient of a regression of the end value on own and
  partner start (twins minus humans), not the r of the change score with "partner minus own", which
  shares -own start with the change; the paper's r comparison is shown without a verdict;
- the humans' "no change" (Fig. 2, both points theirs) holds only by an exact equivalence test that
  |d_z| < NO_CHANGE_DZ (the paper's smallest significant change, d_z 0.40) at EQUIVALENCE_ALPHA; a
  paired t that finds a change says "no". Fig. 2 compares effect sizes d_z = t / sqrt(G) (the paper's t
  with its G = 31 groups), not t, which grows with G.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from socsim.debate import stats
from socsim.debate.metrics import PAPER_ENCODER
from socsim.io import vs_paper
from socsim.io.report import Finding, Report, Table
from socsim.stats import degeneracy as dg
from socsim.stats import signflip
from socsim.stats import verdict as vd

KEYS = ["session_id", "round", "kind", "dyad", "k", "speaker"]
SETTING = ["model", "mode", "ablation", "topic_set"]
METRICS = ["s_sem", "d_stance", "d_signed_len", "d_abs_len", "rouge_l", "r_on_topic"]
TABLES = {"depth": ("table3", "table4"), "breadth": ("table9", "table10")}
TITLE = "DEBATE (paper 003): our run beside the paper's Tables 3, 4, 9, 10 and Figs. 2, 3"

PAPER_DATA = "DEBATE (real)"
PAPER_MODEL = "gpt-4o-mini"  # Sect. 6, the ablations (Tables 4, 10) and both annotators
PAPER_GROUPS = 31  # Sect. 6: paired t-tests with df = 30
DATA_SOURCES = {"fixture": "fixture (synthetic)", "hub": PAPER_DATA, "local": PAPER_DATA}

MIN_SESSIONS = 3  # debates a per-debate test needs before it gives a verdict
MIN_GROUPS = 3  # groups a paired t over groups (Fig. 2) needs
MIN_BOOT_GROUPS = 10  # groups a cluster bootstrap over groups (Fig. 3 correlations) needs

# What each quantity is made of besides the data: "agent" (the twins' texts or opinions),
# "annotator" (stance or on-topic labels), "on_topic" (the on-topic prompt: every utterance metric, whose
# utterances its labels select), "encoder" (sentence embeddings).
METRIC_USES: dict[str, frozenset[str]] = {
    m: frozenset({"agent", "annotator", "on_topic", "encoder"} if m == "s_sem" else {"agent", "annotator", "on_topic"})
    for m in METRICS
}
PAPER_ON_TOPIC_PROMPT = "paper"  # debate.annotator.on_topic_prompt: the paper's Tables 7-8
STEP = {"tweet": "round 3 vs round 1", "opinion": "final vs initial"}


# ---------------------------------------------------------------------------------------------------
# The compare stage: utterance metrics


def _utterances_with_labels(texts: pd.DataFrame, ann: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    u = texts[texts.kind == "utterance"]
    a = ann[ann.kind == "utterance"][keys + ["stance", "on_topic"]]
    return u.merge(a, on=keys, how="left")


def _memo(embed: Callable[[list[str]], np.ndarray]) -> Callable[[list[str]], np.ndarray]:
    """`embed` that computes each distinct text once across calls."""
    cache: dict[str, np.ndarray] = {}

    def run(texts: list[str]) -> np.ndarray:
        new = [t for t in dict.fromkeys(texts) if t not in cache]
        if new:
            cache.update(zip(new, np.asarray(embed(new))))
        return np.array([cache[t] for t in texts]) if texts else np.asarray(embed([]))

    return run


def utterance_metrics(
    simulated: pd.DataFrame,
    annotations: pd.DataFrame,
    human_utterances: pd.DataFrame,
    human_annotations: pd.DataFrame,
    dp: dict[str, Any],
) -> dict[str, Any]:
    """`metrics`: per setting (eq. 2) with the on-topic filter (the paper's) and without (an extra:
    an annotator that calls everything off-topic leaves the paper's metrics empty); `by_session`:
    the paper's metrics per setting and debate (the unit of the findings' tests); `encoder`."""
    from socsim.debate import metrics

    sim = _utterances_with_labels(simulated, annotations, SETTING + KEYS)
    human = human_utterances.assign(kind="utterance")
    human = _utterances_with_labels(human, human_annotations.drop(columns=["topic_set"]), KEYS)
    if dp["human_on_topic"] == "dataset":
        human = human.assign(on_topic=human.validity.map({"VALID": True, "INVALID": False}))
    encoder = metrics.Encoder(dp["encoder"], revision=dp["encoder_revision"])
    embed = _memo(encoder.encode)
    unit = dp["length_unit"]
    out = pd.concat(
        [
            metrics.round_wise(sim, human, SETTING, unit, embed).assign(on_topic_filter="annotated"),
            metrics.round_wise(sim.assign(on_topic=True), human.assign(on_topic=True), SETTING, unit, embed).assign(
                on_topic_filter="none"
            ),
        ],
        ignore_index=True,
    )
    out = out.sort_values(["on_topic_filter", *SETTING]).reset_index(drop=True)
    by_session = metrics.round_wise(sim, human, [*SETTING, "session_id"], unit, embed)
    by_session = by_session.sort_values([*SETTING, "session_id"]).reset_index(drop=True)
    labelled = human[human.session_id.isin(set(human_annotations.session_id))]  # the run's sessions only
    human_rate = float(labelled.on_topic.fillna(False).astype(bool).mean()) if len(labelled) else None
    dataset_rate = float(labelled.validity.eq("VALID").mean()) if len(labelled) else None
    return {
        "metrics": out,
        "by_session": by_session,
        "encoder": {
            **encoder.identity(),
            "human_on_topic_rate": human_rate,
            "human_on_topic_rate_dataset_validity": dataset_rate,
            "human_on_topic": dp["human_on_topic"],
        },
    }


# ---------------------------------------------------------------------------------------------------
# What the run was (its design differences from the paper) and its inputs' flags


@dataclass(frozen=True)
class RunDesign:
    """The run's data source, annotator and encoder, as its inputs' provenance records them."""

    data_source: str = "unknown"  # "fixture (synthetic)", "DEBATE (real)" or "unknown"
    annotator: str | None = None
    encoder: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)  # the data identity ingest recorded
    human_on_topic: str = "annotate"  # annotate (the paper) | dataset
    on_topic_prompt: str = PAPER_ON_TOPIC_PROMPT  # debate.annotator.on_topic_prompt (paper | short | unknown)

    @classmethod
    def from_provenance(
        cls, sessions: Mapping[str, Any], annotations: Mapping[str, Any], encoder: Mapping[str, Any]
    ) -> RunDesign:
        """From the provenance of `sessions` (ingest: its `data`), of the human annotations (the
        annotator among its params) and the compare stage's encoder.json."""
        data = dict(sessions.get("data") or {})
        ap = (annotations.get("params") or {}).get("debate.annotator") or {}
        return cls(
            DATA_SOURCES.get(str(data.get("source")), "unknown"),
            ap.get("model"),
            encoder.get("model"),
            data,
            str(encoder.get("human_on_topic") or "annotate"),
            str(ap.get("on_topic_prompt") or "unknown"),
        )

    def differences(self, uses: Iterable[str], model: str | None = None, paper_model: str = PAPER_MODEL) -> list[str]:
        """The design differences of a quantity made of `uses` (and always the data)."""
        uses = set(uses)
        ours: dict[str, Any] = {"data source": self.data_source}
        paper: dict[str, Any] = {"data source": PAPER_DATA}
        if "agent" in uses:
            ours["agent model"], paper["agent model"] = model or "unknown", paper_model
        if "annotator" in uses:
            ours["annotator"], paper["annotator"] = self.annotator or "unknown", PAPER_MODEL
        if "on_topic" in uses:
            ours["on-topic prompt"], paper["on-topic prompt"] = self.on_topic_prompt, PAPER_ON_TOPIC_PROMPT
        if "encoder" in uses:
            ours["encoder"], paper["encoder"] = self.encoder or "unknown", PAPER_ENCODER
        return vs_paper.differences(ours, paper)


def variable_uses(source: str, var: str) -> frozenset[str]:
    """What a Sect. 6 variable of a source is made of: tweet stances are annotated; the twins'
    round-2/3 tweets and final opinion are the agent's; the round-1 tweet and o_init are the humans'."""
    uses = {"annotator"} if var.startswith("s") else set()
    if source == "llm" and var in ("s2", "s3", "o_final"):
        uses.add("agent")
    return frozenset(uses)


@dataclass
class InputFlags:
    """The degeneracy flags of each input, and which quantities they concern."""

    stance_utterances: dg.Flag | None = None
    on_topic: dg.Flag | None = None
    no_comparator: dict[tuple[Any, ...], dg.Flag] = field(default_factory=dict)  # setting -> flag
    stance_tweets_human: dg.Flag | None = None
    stance_tweets_llm: dg.Flag | None = None
    opinions_llm: dg.Flag | None = None

    def metric(self, metric: str, setting: tuple[Any, ...], on_topic_filter: bool = True) -> list[dg.Flag]:
        """An utterance metric of one setting (model, mode, ablation, topic set)."""
        stance = self.stance_utterances if metric == "d_stance" else None
        if not on_topic_filter:
            return dg.collect(stance)
        if metric == "r_on_topic":
            return dg.collect(self.on_topic)
        return dg.collect(stance, self.on_topic, self.no_comparator.get(setting))

    def variable(self, source: str, var: str) -> list[dg.Flag]:
        """A Sect. 6 variable (s1..s3, o_init, o_final) of one source (human, llm)."""
        if var.startswith("s"):
            return dg.collect(self.stance_tweets_human if source == "human" or var == "s1" else self.stance_tweets_llm)
        return dg.collect(self.opinions_llm if source == "llm" and var == "o_final" else None)

    @property
    def all(self) -> list[dg.Flag]:
        return dg.collect(
            self.stance_utterances,
            self.on_topic,
            list(self.no_comparator.values()),
            self.stance_tweets_human,
            self.stance_tweets_llm,
            self.opinions_llm,
        )


def utterance_flags(
    annotations: pd.DataFrame, human_annotations: pd.DataFrame, metrics: pd.DataFrame, human_on_topic: str
) -> InputFlags:
    """The utterance-level flags: the stance and on-topic labels of the utterances the metrics
    compare (the humans' on-topic labels only when annotated), and settings without a comparator."""
    sim_u = annotations[annotations.kind == "utterance"]
    hum_u = human_annotations[human_annotations.kind == "utterance"]
    on_topic = [sim_u.on_topic] + ([hum_u.on_topic] if human_on_topic == "annotate" else [])
    flags = InputFlags(
        stance_utterances=dg.one_value(
            pd.concat([sim_u.stance, hum_u.stance]).dropna().tolist(), "stance annotator (utterances)"
        ),
        on_topic=dg.one_value(pd.concat(on_topic).dropna().astype(int).tolist(), "on-topic annotator"),
    )
    none_used = metrics[(metrics.n_used == 0) & (metrics.on_topic_filter == "annotated")]
    for r in none_used.itertuples(index=False):
        flags.no_comparator[(r.model, r.mode, r.ablation, r.topic_set)] = dg.Flag(
            f"{r.model} mode {r.mode} {r.ablation} {r.topic_set}",
            "no simulated on-topic utterance has an on-topic human comparator",
        )
    return flags


# ---------------------------------------------------------------------------------------------------
# Sect. 6 inputs


@dataclass
class Sect6:
    sessions: pd.DataFrame  # indexed by session_id
    ran: set[str]  # the Depth sessions Mode 3 (original, the model) ran on
    human_tweets: pd.DataFrame  # the humans' tweet annotations of those sessions
    llm_tweets: pd.DataFrame  # the twins' tweet annotations (Mode 3, original, the model)
    opinions: pd.DataFrame  # the twins' final opinions


def _sect6(tables: Mapping[str, Any], model: str) -> Sect6:
    sessions = tables["sessions"].set_index("session_id")
    sim, ann, hann = tables["simulated"], tables["annotations"], tables["human_annotations"]
    post = sessions["post_opinion"] if "post_opinion" in sessions else True  # Sect. 6 needs all 4 Post Opinions
    depth = set(sessions.index[(sessions.topic_set == "depth") & post])
    m3 = sim[(sim.model == model) & (sim["mode"] == 3) & (sim.ablation == "original")]
    ran = set(m3.session_id) & depth
    a3 = ann[(ann.model == model) & (ann["mode"] == 3) & (ann.ablation == "original") & (ann.kind == "tweet")]
    return Sect6(
        sessions,
        ran,
        hann[(hann.kind == "tweet") & hann.session_id.isin(ran)],
        a3[a3.session_id.isin(ran) & a3["round"].isin([2, 3])],
        m3[(m3.kind == "opinion") & m3.session_id.isin(ran)],
    )


def sect6_flags(tables: Mapping[str, Any], model: str, flags: InputFlags) -> None:
    """The Sect. 6 flags (set on `flags`): the tweet stances of each source and the twins' final
    opinions that enter Figs. 2 and 3 (raw values, before reverse coding); none when Sect. 6 has no
    group."""
    s6 = _sect6(tables, model)
    if not s6.ran:
        return
    flags.stance_tweets_human = dg.one_value(s6.human_tweets.stance, "stance annotator (human tweets, Sect. 6)")
    flags.stance_tweets_llm = dg.one_value(s6.llm_tweets.stance, "stance annotator (twins' tweets, Sect. 6)")
    flags.opinions_llm = dg.one_value(s6.opinions.opinion, "twins' final opinions (Sect. 6)")


def members(tables: Mapping[str, Any], model: str) -> pd.DataFrame:
    """Sect. 6 inputs: one row per Depth member and source (human, llm): tweet stances s1..s3,
    opinions, the round-1 partner; reverse-coded on truth-framed topics."""
    s6 = _sect6(tables, model)
    sessions, part = s6.sessions, tables["participants"]
    h_st = {(r.session_id, r.round, r.speaker): r.stance for r in s6.human_tweets.itertuples()}
    l_st = {(r.session_id, r.round, r.speaker): r.stance for r in s6.llm_tweets.itertuples()}
    op = {(r.session_id, r.speaker): r.opinion for r in s6.opinions.itertuples()}
    first = {
        (t.session_id, t.worker_id): t.partner_id for t in tables["tweets"][tables["tweets"]["round"] == 1].itertuples()
    }
    rows = []
    for p in part[part.session_id.isin(s6.ran)].itertuples():
        sign = -1.0 if sessions.loc[p.session_id, "reverse"] else 1.0

        def f(v: Any, sign: float = sign) -> float | None:
            return None if v is None or pd.isna(v) else sign * float(v)

        h = [h_st.get((p.session_id, r, p.worker_id)) for r in (1, 2, 3)]
        base = {
            "session_id": p.session_id,
            "worker_id": p.worker_id,
            "partner1": first.get((p.session_id, p.worker_id)),
            "o_init": f(p.o_init),
        }
        rows.append({**base, "source": "human", "s1": f(h[0]), "s2": f(h[1]), "s3": f(h[2]), "o_final": f(p.o_final)})
        rows.append(
            {
                **base,
                "source": "llm",
                "s1": f(h[0]),
                "s2": f(l_st.get((p.session_id, 2, p.worker_id))),
                "s3": f(l_st.get((p.session_id, 3, p.worker_id))),
                "o_final": f(op.get((p.session_id, p.worker_id))),
            }
        )
    return pd.DataFrame(
        rows, columns=["session_id", "worker_id", "source", "partner1", "s1", "s2", "s3", "o_init", "o_final"]
    )


def session_topics(sessions: pd.DataFrame) -> dict[Any, Any]:
    """session_id -> topic (`topic_dir`): the debates and groups of a topic set nest in its topics."""
    if "topic_dir" not in sessions.columns:
        raise ValueError("sessions: no topic_dir column; the findings' unit is the topic (ingest writes it)")
    return dict(zip(sessions["session_id"], sessions["topic_dir"]))


# ---------------------------------------------------------------------------------------------------
# Findings: each judged at the unit of its claim

MIN_TOPICS = signflip.min_clusters(vd.ALPHA)  # an exact two-sided sign-flip test rejects at .05 from 6 topics
NO_CHANGE_DZ = 0.4  # "no change": the paper's smallest significant Fig. 2 change (d_z 0.40-0.48) is excluded
EQUIVALENCE_ALPHA = vd.ALPHA / 2  # a "no change" says yes at most this often when the change is NO_CHANGE_DZ
PAPERS_COMPARISON = (
    "the paper's comparison, no verdict: the twins' end is model-written, their start (the round-1 tweet, the "
    "initial opinion) the humans', so a model that only writes more moderately than the humans shows a change"
)


@dataclass(frozen=True)
class Nested:
    """A per-unit effect (debates or groups) whose units nest in topics, judged at the topic level."""

    verdict: vd.Verdict
    mean: float | None  # the mean over the units
    p_units: float | None  # the one-sample t over the units: reported beside, no verdict of its own
    n_units: int
    topic_mean: float | None  # the mean of the topic values
    p_topics: float | None  # the sign-flip test over the topic values: the verdict's test
    n_topics: int


def _at_topics(
    base: vd.Verdict, why: str | None, n: int, unit: str, sf: signflip.SignFlip, direction: int, beside: str
) -> vd.Verdict:
    """The verdict of a claim whose `unit`s nest in topics: `base` (the verdict over units, which says
    why when the data are too few, degenerate or without variance) unless it has a result, then the
    sign-flip test over the topics (`sf`), with at least MIN_TOPICS topics; `beside` (the test over
    units) is added to the reason."""
    if base.degenerate or base.reason.startswith("n = ") or base.reason.startswith("the test could not"):
        return undefined_why(base, why, n, unit)
    if sf.n < MIN_TOPICS:
        return vd.Verdict(
            None,
            f"n = {sf.n} topics, needs {MIN_TOPICS}: the {unit} nest in topics, and a sign-flip test over "
            f"fewer cannot reject at {vd.ALPHA:g}{beside}",
        )
    v = vd.effect(sf.p, sf.mean, sf.n, MIN_TOPICS, "topics", direction)
    return replace(v, reason=f"sign-flip over topics: {v.reason}{beside}")  # keeps what it was judged on


def topic_effect(
    values: pd.Series,
    topics: Mapping[Any, Any],
    direction: int,
    flags: Sequence[dg.Flag],
    unit: str,
    need: int,
) -> Nested:
    """A claim that the per-unit `values` (index: session; debates or groups) are > 0 (`direction` +1)
    or < 0 (-1) over a topic set whose topics the units nest in (`topics`: session -> topic). The claim
    is about the topics, so its test is the sign-flip test over the topic means of the values
    (socsim.stats.signflip; topic-specific effects that average zero do not pass it); the one-sample t
    over units is reported beside it. Fewer than `need` units, a degenerate input or no variance:
    inconclusive with the reason, as for a test over units."""
    x = values.astype(float)
    x = x[np.isfinite(x.to_numpy())]
    mean, p, n, why = stats.one_sample_t(x.to_numpy())
    sf = signflip.sign_flip(signflip.cluster_means(x, topics).to_numpy() if n else [])
    beside = "" if p is None else f"; per {unit[:-1]}: t-test p = {p:.3g}, n = {n} {unit}"
    base = vd.effect(p, mean, n, need, unit, direction, flags)
    return Nested(_at_topics(base, why, n, unit, sf, direction, beside), mean, p, n, sf.mean, sf.p, sf.n)


TOPIC_TEST = "sign-flip test over topics (exact over the 2^k sign assignments) of the topic means of"


def mode_order(
    by_session: pd.DataFrame,
    topics: Mapping[Any, Any],
    flags: list[dg.Flag],
    label: str = "",
    modes: Iterable[int] | None = None,
) -> Finding | None:
    """The claim "Mode 1 > Mode 2 > Mode 3 in semantic similarity" for one model and topic set: each pair of
    consecutive modes, the per-debate S_sem difference (paired over debates), judged over the topics the
    debates nest in (topic_effect; `topics`: session -> topic); holds when every pair holds.
    `by_session`: session_id, mode, s_sem (original memory). None with fewer than 2 modes. `modes`: the
    modes that ran (default: those of `by_session`)."""
    wide = by_session.pivot_table(index="session_id", columns="mode", values="s_sem", dropna=False)
    modes = sorted(set(wide.columns) if modes is None else set(modes))
    wide = wide.reindex(columns=modes)
    if len(modes) < 2:
        return None
    parts = [
        topic_effect(wide[a] - wide[b], topics, +1, flags, "debates", MIN_SESSIONS) for a, b in zip(modes, modes[1:])
    ]
    first_last = (wide[modes[0]] - wide[modes[-1]]).to_numpy(dtype=float)
    first_last = first_last[np.isfinite(first_last)]
    return Finding(
        claim=" > ".join(f"Mode {m}" for m in modes) + " in semantic similarity" + (f" ({label})" if label else ""),
        statistic=f"mean per-debate S_sem of Mode {modes[0]} minus Mode {modes[-1]}",
        value=float(first_last.mean()) if first_last.size else None,
        test=f"{TOPIC_TEST} the per-debate S_sem difference of each pair of consecutive modes (paired over "
        "debates), two-sided; every pair must hold; the one-sample t over debates beside it",
        unit="topics",
        n=min(r.n_topics for r in parts),
        verdict=vd.all_of(r.verdict for r in parts),
    )


def llm_longer(by_session: pd.DataFrame, topics: Mapping[Any, Any], flags: list[dg.Flag], label: str = "") -> Finding:
    """The claim "LLM utterances are longer than the humans'" for one model and topic set: the
    per-debate mean (over modes) of the signed length difference (human - LLM) < 0, judged over the
    topics the debates nest in (topic_effect)."""
    per = by_session.groupby("session_id").d_signed_len.mean()
    r = topic_effect(per, topics, -1, flags, "debates", MIN_SESSIONS)
    return Finding(
        claim="LLM utterances are longer than the humans' (signed difference < 0)" + (f" ({label})" if label else ""),
        statistic="mean per-debate signed length difference (human - LLM)",
        value=r.mean,
        test=f"{TOPIC_TEST} the per-debate signed length difference (each debate's mean over modes), two-sided; "
        "the one-sample t over debates beside it",
        unit="topics",
        n=r.n_topics,
        verdict=r.verdict,
    )


def undefined_why(verdict: vd.Verdict, why: str | None, n: int, unit: str) -> vd.Verdict:
    """An inconclusive verdict whose test could not be computed, with the reason (`why`, e.g. "no
    variance in the changes ...") instead of the bare "the test could not be computed"."""
    if why and verdict.holds is None and verdict.reason.startswith("the test could not be computed"):
        return vd.Verdict(None, f"{why}; n = {n} {unit}")
    return verdict


def model_written(test: str) -> bool:
    """Whether a Fig. 2 test of the paper's (round 3 vs 1, final vs initial) compares points written by
    the same hand: only the humans' own change does (the twins' start is the humans')."""
    return test == "human change"


def no_change(p: float | None, t: float | None, n: int, flags: Sequence[dg.Flag], why: str | None) -> vd.Verdict:
    """A claim of no change over groups: holds when the exact equivalence test (stats.equivalence_p)
    shows |d_z| < NO_CHANGE_DZ at EQUIVALENCE_ALPHA; "no" when the paired t finds a change (p < ALPHA);
    otherwise inconclusive, with both p."""
    base = vd.effect(p, 0.0 if p is not None else None, n, MIN_GROUPS, "groups", 0, flags)
    if base.degenerate or base.reason.startswith("n = ") or base.reason.startswith("the test could not"):
        return undefined_why(base, why, n, "groups")
    assert p is not None
    if p < vd.ALPHA:
        return vd.Verdict(False, f"a change was found, p = {p:.3g}, n = {n} groups")
    p_eq = stats.equivalence_p(t, n, NO_CHANGE_DZ)
    if p_eq is None:
        return vd.Verdict(None, f"the equivalence test could not be computed (n = {n} groups)")
    within = f"|d_z| < {NO_CHANGE_DZ:g}: equivalence p = {p_eq:.3g}"
    if p_eq < EQUIVALENCE_ALPHA:
        return vd.Verdict(True, f"{within} < {EQUIVALENCE_ALPHA:g} (t-test p = {p:.3g}), n = {n} groups")
    return vd.Verdict(None, f"not shown: {within} >= {EQUIVALENCE_ALPHA:g} (t-test p = {p:.3g}), n = {n} groups")


def group_finding(
    row: Any,
    ref: Mapping[str, Any],
    flags: list[dg.Flag],
    changes: pd.Series | None = None,
    topics: Mapping[Any, Any] | None = None,
) -> Finding | None:
    """A Fig. 2 test of the humans' own change as a finding (None for the twins' tests of the paper's, which
    compare a model-written end with the humans' start: PAPERS_COMPARISON). The paper's direction where its
    p < .05: an effect over the topics the groups nest in (topic_effect on the groups' `changes`, with
    `topics`; without them inconclusive); else "no change": an equivalence test over groups (no_change:
    |d_z| < NO_CHANGE_DZ)."""
    quantity, test = row.quantity, row.test
    if not model_written(test):
        return None
    what = quantity.split()[0]
    direction = int(np.sign(ref["t"])) if float(ref["p"]) < vd.ALPHA else 0
    n = int(row.n_groups)
    p = None if pd.isna(row.p) else float(row.p)
    dz = None if pd.isna(row.d_z) else float(row.d_z)
    why = row.note if isinstance(row.note, str) else None
    how = {1: "rises", -1: "falls", 0: "does not change"}[direction]
    claim = f"Fig. 2: the humans' group {quantity} {how} ({STEP[what]})"
    if direction:
        test_text = f"{TOPIC_TEST} the groups' changes, two-sided; the paired t over groups beside it"
        if changes is None or topics is None:
            verdict = vd.Verdict(None, "the groups' topics are not given: the claim's unit is the topic")
            unit, n_out = "topics", 0
        else:
            r = topic_effect(changes, topics, direction, flags, "groups", MIN_GROUPS)
            verdict, unit, n_out = r.verdict, "topics", r.n_topics
    else:
        t = None if pd.isna(row.t) else float(row.t)
        verdict = no_change(p, t, n, flags, why)
        test_text = (
            f"paired t over groups, two-sided (a change: no), and the exact equivalence t test of |d_z| < "
            f"{NO_CHANGE_DZ:g} at {EQUIVALENCE_ALPHA:g} (Wellek; no change: yes)"
        )
        unit, n_out = "groups", n
    return Finding(
        claim=claim,
        statistic="d_z = mean change / SD of the changes over groups (t / sqrt(G))",
        value=dz,
        test=test_text,
        unit=unit,
        n=n_out,
        verdict=verdict,
    )


def _named(part: str, v: vd.Verdict) -> vd.Verdict:
    """A part's verdict with its name in the reason, keeping what it was judged on (a degenerate input
    keeps its own message)."""
    return v if v.degenerate or not v.reason else replace(v, reason=f"{part}: {v.reason}")


MODEL_WRITTEN = "the twins' round-2 and round-3 tweets, both model-written"
# Sect. 6's group-level claims on points the model wrote (stats.MODEL_WRITTEN_TESTS); the opinion parts of
# the paper's claims have no model-written start (the twins' initial opinion is the humans')
SECT6_GROUP_CLAIMS = {
    "convergence": (
        "Sect. 6: the twins' groups converge more than the humans' in their tweets (the group SD of tweet "
        f"stance falls from round 2 to 3, and falls more than the humans'; {MODEL_WRITTEN})",
        [("tweet SD, rounds 2-3", "llm change", -1), ("tweet SD, rounds 2-3", "llm change vs human change", -1)],
    ),
    "drift": (
        "Sect. 6: the twins' public tweet stance drifts upwards (group mean, round 2 to 3), more than the "
        f"humans' ({MODEL_WRITTEN})",
        [("tweet mean, rounds 2-3", "llm change", +1), ("tweet mean, rounds 2-3", "llm change vs human change", +1)],
    ),
}
# The paper's claims as it tests them (round 3 vs 1, final vs initial): shown, no verdict (PAPERS_COMPARISON)
SECT6_PAPER_CLAIMS = {
    "convergence": (
        "Sect. 6 (the paper's comparison): the twins' groups converge more than the humans' (the group SD of "
        "tweet stance and of opinion falls, and falls more than the humans')",
        [
            ("tweet SD", "llm change"),
            ("opinion SD", "llm change"),
            ("tweet SD", "llm change vs human change"),
            ("opinion SD", "llm change vs human change"),
        ],
    ),
    "drift": (
        "Sect. 6 (the paper's comparison): the twins' public tweet stance drifts upwards (group mean, round 3 "
        "vs 1), more than the humans'",
        [("tweet mean", "llm change"), ("tweet mean", "llm change vs human change")],
    ),
    "public vs private": (
        "Sect. 6 (the paper's comparison): the twins' public tweet stance rises more than their private "
        "opinion, which does not change",
        [("tweet mean", "llm change"), ("opinion mean", "llm change")],
    ),
}
# Fig. 3, as the paper tests it (r of the change score; r_llm - r_human): shown, no verdict
SECT6_CORRELATIONS = [
    ("tweet", "own initial", -1),
    ("tweet", "partner minus own", +1),
    ("opinion", "own initial", -1),
    ("opinion", "partner minus own", +1),
]
PART_COLUMNS = ["n_topics", "topic_mean", "p_topics", "verdict"]


def group_claims(
    per_group: pd.DataFrame,
    topics: Mapping[Any, Any],
    flags: Mapping[tuple[str, str], list[dg.Flag]],
) -> tuple[list[Finding], pd.DataFrame]:
    """Sect. 6's group-level claims on model-written points (SECT6_GROUP_CLAIMS: convergence and drift of
    the twins' tweets from round 2 to 3), each the all_of of its parts; a part is a change test of
    stats.MODEL_WRITTEN_TESTS judged over the topics the groups nest in (topic_effect). `per_group`:
    group_level's first frame; `topics`: session -> topic; `flags`: (quantity, test) -> the flags of
    that test's inputs. Also returns the model-written tests (change_tests' columns) with the topic-level
    columns PART_COLUMNS (verdict: the part's, empty for a test no claim uses)."""
    tests = stats.change_tests(per_group, stats.MODEL_WRITTEN_TESTS)
    changes = stats.group_changes(per_group, stats.MODEL_WRITTEN_TESTS)
    judged: dict[tuple[str, str], Nested] = {}
    for r in tests.itertuples(index=False):
        claimed = [d for _, parts in SECT6_GROUP_CLAIMS.values() for q, t, d in parts if (q, t) == (r.quantity, r.test)]
        fl = list(flags.get((r.quantity, r.test), []))
        judged[(r.quantity, r.test)] = topic_effect(
            changes[(r.quantity, r.test)], topics, claimed[0] if claimed else 0, fl, "groups", MIN_GROUPS
        )
    out = []
    for claim, parts in SECT6_GROUP_CLAIMS.values():
        verdicts = [_named(f"{q}, {t}", judged[(q, t)].verdict) for q, t, _ in parts]
        named = "; ".join(f"{q} {t} {'>' if d > 0 else '<'} 0" for q, t, d in parts)
        out.append(
            Finding(
                claim=claim,
                statistic="every part's d_z (sect6_model_written)",
                value=None,
                test=f"per part ({named}): {TOPIC_TEST} the groups' changes, two-sided; every part must hold; "
                "the paired t over groups beside it",
                unit="topics",
                n=min(judged[(q, t)].n_topics for q, t, _ in parts),
                verdict=vd.all_of(verdicts),
            )
        )
    claimed_parts = {(q, t) for _, parts in SECT6_GROUP_CLAIMS.values() for q, t, _ in parts}
    tests = tests.assign(
        n_topics=[judged[(r.quantity, r.test)].n_topics for r in tests.itertuples(index=False)],
        topic_mean=[judged[(r.quantity, r.test)].topic_mean for r in tests.itertuples(index=False)],
        p_topics=[judged[(r.quantity, r.test)].p_topics for r in tests.itertuples(index=False)],
        verdict=[
            judged[(r.quantity, r.test)].verdict.label if (r.quantity, r.test) in claimed_parts else ""
            for r in tests.itertuples(index=False)
        ],
    )
    return out, tests.astype({"topic_mean": "float64", "p_topics": "float64"})


PARTNER_CLAIM = (
    "Sect. 6 / Fig. 3: the twins follow their round-1 partner more than the humans do (the partner "
    "coefficient of the end value on own and partner start, tweets and opinions)"
)


def partner_claim(
    members: pd.DataFrame, topics: Mapping[Any, Any], flags: Mapping[str, list[dg.Flag]]
) -> tuple[Finding, pd.DataFrame]:
    """Fig. 3's partner influence, twins against humans: per outcome (tweet, opinion), the twins' partner
    coefficient minus the humans' (stats.partner_difference: OLS end ~ 1 + own start + partner start; a
    cluster bootstrap over groups beside it), judged over the topics the groups nest in: the sign-flip
    test of the per-topic coefficient differences (stats.partner_difference_by_cluster), with at least
    MIN_BOOT_GROUPS groups. `flags`: outcome -> the flags of its variables. Also returns the parts."""
    rows, verdicts = [], []
    for outcome in stats.OUTCOMES:
        r = stats.partner_difference(members, outcome)
        by_topic = stats.partner_difference_by_cluster(members, outcome, topics)
        sf = signflip.sign_flip(by_topic.to_numpy())
        n = int(r["n_groups"])
        base = vd.effect(r["p"], r["diff"], n, MIN_BOOT_GROUPS, "groups", +1, flags.get(outcome, []))
        beside = "" if r["p"] is None else f"; bootstrap over groups: p = {r['p']:.3g}, n = {n} groups"
        v = _named(outcome, _at_topics(base, r["note"], n, "groups", sf, +1, beside))
        verdicts.append(v)
        rows.append({**r, "n_topics": sf.n, "topic_mean": sf.mean, "p_topics": sf.p, "verdict": v.label})
    parts = pd.DataFrame(rows)
    return (
        Finding(
            claim=PARTNER_CLAIM,
            statistic="every part's b_llm - b_human (table fig3_partner_coefficients)",
            value=None,
            test=f"per outcome: {TOPIC_TEST.replace('topic means of', 'per-topic')} partner-coefficient "
            f"difference (twins minus humans, OLS end ~ own start + partner start), two-sided, > 0; both must hold; "
            f"a cluster bootstrap over groups ({stats.BOOTSTRAP_REPEATS} resamples) beside it",
            unit="topics",
            n=int(parts.n_topics.min()) if len(parts) else 0,
            verdict=vd.all_of(verdicts),
        ),
        parts,
    )


def correlation_parts(members: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3 as the paper compares it: r_llm - r_human of the change score with the own start and with
    "partner minus own" (stats.correlation_difference, cluster bootstrap over groups), each row with
    PAPERS_COMPARISON instead of a verdict (the change score's "partner minus own" also shares -own
    start with it)."""
    rows = [
        {
            **stats.correlation_difference(members, outcome, predictor),
            "direction": direction,
            "verdict": PAPERS_COMPARISON,
        }
        for outcome, predictor, direction in SECT6_CORRELATIONS
    ]
    return pd.DataFrame(rows)


def ablation_claim(
    by_session: pd.DataFrame,
    model: str,
    topic_set: str,
    ran: set[tuple[int, str]],
    flags: Mapping[tuple[int, str, str], list[dg.Flag]],
    topics: Mapping[Any, Any],
) -> Finding:
    """Sect. 5 (Tables 4, 10): in Modes 2 and 3, removing the private profile lowers semantic similarity
    and raises the stance difference. Parts, per mode of 2 and 3 that ran with both `original` and
    `no_private_profile`: the per-debate difference (no_private_profile - original) of s_sem < 0 and of
    d_stance > 0, judged over the topics the debates nest in (topic_effect); every part must hold.
    `ran`: (mode, ablation) pairs of `model` and `topic_set`; `flags`: (mode, ablation, metric) -> flags;
    `topics`: session -> topic."""
    claim = (
        "Sect. 5: in Modes 2 and 3 removing the private profile lowers S_sem and raises Delta_stance "
        f"({topic_set}, {model})"
    )
    test = (
        f"{TOPIC_TEST} the per-debate difference (no_private_profile - original), two-sided, per mode and "
        "metric; every part must hold; the one-sample t over debates beside it"
    )
    modes = [m for m in (2, 3) if (m, "original") in ran and (m, "no_private_profile") in ran]
    if not modes:
        return Finding(
            claim,
            "per-debate differences",
            None,
            test,
            "topics",
            0,
            vd.Verdict(None, "not run: needs ablations original and no_private_profile in mode 2 or 3"),
        )
    s = by_session[(by_session.model == model) & (by_session.topic_set == topic_set)]
    verdicts, ns = [], []
    for mode in modes:
        sm = s[s["mode"] == mode].pivot_table(
            index="session_id", columns="ablation", values=["s_sem", "d_stance"], dropna=False
        )
        for metric, direction in (("s_sem", -1), ("d_stance", +1)):
            cols = [(metric, a) for a in ("no_private_profile", "original")]
            d = sm[cols[0]] - sm[cols[1]] if all(c in sm.columns for c in cols) else pd.Series(dtype=float)
            fl = _union(flags.get((mode, a, metric), []) for a in ("original", "no_private_profile"))
            r = topic_effect(d, topics, direction, fl, "debates", MIN_SESSIONS)
            verdicts.append(_named(f"mode {mode} {metric}", r.verdict))
            ns.append(r.n_topics)
    return Finding(
        claim,
        "per-debate differences (no_private_profile - original)",
        None,
        test,
        "topics",
        min(ns),
        vd.all_of(verdicts),
    )


# ---------------------------------------------------------------------------------------------------
# The report


def _messages(flags: Iterable[dg.Flag]) -> str:
    return "; ".join(f.message for f in flags)


def _cell_flags(by_metric: Mapping[str, list[dg.Flag]]) -> str:
    """A row's flags, each with the metrics it concerns: "d_stance: degenerate input: ..."."""
    where: dict[dg.Flag, list[str]] = {}
    for metric, flags in by_metric.items():
        for f in flags:
            where.setdefault(f, []).append(metric)
    return "; ".join(f"{', '.join(ms)}: {f.message}" for f, ms in where.items())


def _union(lists: Iterable[Iterable[Any]]) -> list[Any]:
    return list(dict.fromkeys(x for xs in lists for x in xs))


def _paper_row(
    paper: Mapping[str, Any], table: str, model: str, mode: int, ablation: str
) -> tuple[dict[str, Any] | None, str]:
    t = paper.get(table, {})
    if table in ("table3", "table9"):
        if model in t:
            return t[model].get(f"mode{mode}"), model
        return t.get(PAPER_MODEL, {}).get(f"mode{mode}"), PAPER_MODEL
    return t.get(f"mode{mode}", {}).get(ablation), PAPER_MODEL


class _Builder:
    """Collects a report's tables, rows, findings and where each flag applies."""

    def __init__(self, rep: Report, run: RunDesign) -> None:
        self.rep, self.run = rep, run

    def table(
        self, name: str, df: pd.DataFrame, title: str, notes: Iterable[str] = (), flags: Iterable[dg.Flag] = ()
    ) -> None:
        self.rep.tables[name] = Table(df.reset_index(drop=True), title, list(notes), flags=dg.collect(list(flags)))

    def flagged(self, flags: Iterable[dg.Flag], *where: str) -> list[dg.Flag]:
        """The flags (each once), recorded as applying at `where`."""
        out = dg.collect(list(flags))
        for f in out:
            self.rep.flag(f, *where)
        return out

    def row(self, row: vs_paper.Row) -> None:
        self.flagged(row.flags, f"vs_paper: {row.quantity}")
        self.rep.vs_paper.append(row)


def _utterance_table(
    b: _Builder, df: pd.DataFrame, flags: InputFlags, name: str, ts: str, filtered: bool
) -> tuple[pd.DataFrame, list[dg.Flag]]:
    """`df` with a flags column (each row's flags, with the metrics they concern); where they apply."""
    cells, all_flags = [], []
    for r in df.itertuples(index=False):
        setting = (r.model, r.mode, r.ablation, ts)
        by_metric = {m: flags.metric(m, setting, filtered) for m in METRICS}
        for m, fl in by_metric.items():
            all_flags += b.flagged(fl, f"{name}.{m}[{r.model} mode {r.mode} {r.ablation}]")
        cells.append(_cell_flags(by_metric))
    return df.assign(flags=cells), dg.collect(all_flags)


def analyse(
    metrics: pd.DataFrame,
    tables: Mapping[str, Any],
    dp: Mapping[str, Any],
    paper: Mapping[str, Any],
    run: RunDesign | None = None,
    by_session: pd.DataFrame | None = None,
) -> Report:
    """The DEBATE report. `metrics`: the compare stage's utterance metrics (both on-topic filters);
    `by_session`: its per-debate metrics (the findings' unit; None: the findings are inconclusive);
    `tables`: sessions, participants, tweets, simulated, annotations, human_annotations; `run`: what
    the run was (data source, annotator, encoder; default unknown: every row differs in design)."""
    run = run or RunDesign()
    rep = Report(TITLE)
    b = _Builder(rep, run)
    models = list(dp["agent_models"])
    flags = utterance_flags(tables["annotations"], tables["human_annotations"], metrics, run.human_on_topic)
    sect6_flags(tables, models[0], flags)
    if by_session is None:
        by_session = pd.DataFrame(columns=[*SETTING, "session_id", *METRICS])
    topics = session_topics(tables["sessions"])
    every = metrics[metrics.on_topic_filter == "none"]
    metrics = metrics[metrics.on_topic_filter == "annotated"]
    unit = "round-wise aggregation (eq. 2); length in " + str(dp["length_unit"])

    for ts, (main_t, abl_t) in TABLES.items():
        e = every[every.topic_set == ts]
        if len(e):
            df, fl = _utterance_table(
                b, e[["model", "mode", "ablation", *METRICS, "n_used"]], flags, f"{main_t}_all_utterances", ts, False
            )
            b.table(
                f"{main_t}_all_utterances",
                df,
                f"{main_t.capitalize()} ({ts}), every utterance compared (no on-topic filter; not the paper's)",
                ["r_on_topic is 1 by construction here (every utterance counts as on-topic)"],
                fl,
            )
        m = metrics[metrics.topic_set == ts]
        if m.empty:
            continue
        t_main = m[m.ablation == "original"][["model", "mode", "ablation", *METRICS, "n_used", "n_excluded"]]
        df, fl = _utterance_table(b, t_main, flags, main_t, ts, True)
        b.table(
            main_t,
            df.drop(columns="ablation"),
            f"{main_t.capitalize()} ({ts}): utterance metrics by model and mode",
            [unit],
            fl,
        )
        t_abl = m[m.model == models[0]][["model", "mode", "ablation", *METRICS, "n_used", "n_excluded"]]
        df, fl = _utterance_table(b, t_abl, flags, abl_t, ts, True)
        b.table(abl_t, df.drop(columns="model"), f"{abl_t.capitalize()} ({ts}): memory ablations ({models[0]})", [], fl)
        for r in m.itertuples(index=False):
            setting = (r.model, r.mode, r.ablation, ts)
            for table in ([main_t] if r.ablation == "original" else []) + ([abl_t] if r.model == models[0] else []):
                ref, who = _paper_row(paper, table, r.model, r.mode, r.ablation)
                if ref is None:
                    continue
                for metric in METRICS:
                    b.row(
                        vs_paper.Row(
                            f"{table.capitalize()} {ts}, {r.model}, mode {r.mode}, {r.ablation}: {metric}",
                            getattr(r, metric),
                            ref.get(metric),
                            flags=flags.metric(metric, setting),
                            design=run.differences(METRIC_USES[metric], r.model, who),
                            note=f"paper: {who}; {r.n_used} utterances compared, {r.n_excluded} "
                            "without an on-topic human comparator" + _encoder_note(run, metric),
                        )
                    )
        orig = m[m.ablation == "original"]
        for model, g in orig.groupby("model"):
            settings = [(model, mode, "original", ts) for mode in g["mode"]]
            sess = by_session[
                (by_session.model == model) & (by_session.topic_set == ts) & (by_session.ablation == "original")
            ]
            by_mode = g.set_index("mode").s_sem
            s_flags = _union(flags.metric("s_sem", s) for s in settings)
            order = mode_order(sess, topics, s_flags, f"{ts}, {model}", g["mode"])
            if order is not None:
                rep.findings.append(order)
                b.row(
                    vs_paper.Row(
                        f"{ts}, {model}: S_sem of the first mode minus the last",
                        by_mode.iloc[0] - by_mode.iloc[-1],
                        None,
                        finding=order.claim,
                        verdict=order.verdict,
                        flags=s_flags,
                        design=run.differences(METRIC_USES["s_sem"], model),
                        note=f"finding tested over topics: {order.test}" + _encoder_note(run, "s_sem"),
                    )
                )
            l_flags = _union(flags.metric("d_signed_len", s) for s in settings)
            longer = llm_longer(sess, topics, l_flags, f"{ts}, {model}")
            rep.findings.append(longer)
            b.row(
                vs_paper.Row(
                    f"{ts}, {model}: mean signed length difference (human - LLM)",
                    g.d_signed_len.mean(),
                    None,
                    finding=longer.claim,
                    verdict=longer.verdict,
                    flags=l_flags,
                    design=run.differences(METRIC_USES["d_signed_len"], model),
                    note=f"finding tested over topics: {longer.test}",
                )
            )
        _ablation_report(b, m, by_session, flags, models[0], ts, paper, topics)

    _human_on_topic_report(b, tables, paper)
    _sect6_report(b, tables, dp, paper, flags, models[0])
    _appendix_h(b, metrics, flags, paper)
    rep.design = _union(r.design or [] for r in rep.vs_paper) or run.differences({"agent", "annotator", "encoder"})
    rep.summary.update(
        settings=int(len(metrics)),
        data_source=run.data_source,
        data=dict(run.data),
        annotator=run.annotator,
        on_topic_prompt=run.on_topic_prompt,
        encoder=run.encoder,
    )
    rep.tables["flags"] = Table(
        pd.DataFrame(
            [{**f.flag.as_dict(), "where": w} for f in rep.flags for w in f.where],
            columns=["scope", "reason", "message", "where"],
        ),
        "DEBATE: degeneracy flags and the tables, rows and figure panels they concern",
    )
    return rep


def _test_vars(quantity: str, test: str) -> list[tuple[str, str]]:
    """The (source, variable) pairs a change test of group_level / the model-written tests reads."""
    before, after, _ = {**stats.GROUP_TESTS, **stats.MODEL_WRITTEN_TESTS}[quantity]
    sources = {"llm change": ["llm"], "human change": ["human"]}.get(test, ["llm", "human"])
    return [(s, v) for s in sources for v in (before, after)]


PAPER_KEY = {"llm change": "llm_change", "human change": "human_change", "llm change vs human change": "llm_vs_human"}


def _paper_groups(paper: Mapping[str, Any]) -> int:
    gl = paper.get("group_level") or {}
    return int(gl["df"]) + 1 if gl.get("df") is not None else PAPER_GROUPS


def _paper_test(paper: Mapping[str, Any], quantity: str, test: str) -> Mapping[str, Any]:
    """The paper's Fig. 2 test (t, p) of `quantity` ("tweet mean", ...) and `test`, or {}."""
    gl = paper.get("group_level") or {}
    return (gl.get(quantity.replace(" ", "_").lower()) or {}).get(PAPER_KEY[test]) or {}


def _paper_dz(paper: Mapping[str, Any], quantity: str, test: str) -> float | None:
    t = _paper_test(paper, quantity, test).get("t")
    return None if t is None else float(t) / math.sqrt(_paper_groups(paper))


def _sect6_report(
    b: _Builder,
    tables: Mapping[str, Any],
    dp: Mapping[str, Any],
    paper: Mapping[str, Any],
    flags: InputFlags,
    model: str,
) -> None:
    """Sect. 6 on the Depth groups of Mode 3: members, group level (Fig. 2), individual level (Fig. 3), and
    the claims. The paper's twin tests compare the twins' model-written end with the humans' start: they are
    shown as the paper's comparison, without a verdict; the claims are judged on model-written points (the
    twins' round-2 and round-3 tweets) or on the end value (Fig. 3's partner coefficient), over the topics
    the groups nest in, and the humans' own "no change" by an equivalence test."""
    rep, run = b.rep, b.run
    mem = members(tables, model)
    topics = session_topics(tables["sessions"])
    sect6 = dg.collect(flags.stance_tweets_human, flags.stance_tweets_llm, flags.opinions_llm)
    b.table("members", mem, f"Sect. 6 members (Depth, Mode 3, {model}): tweet stances and opinions", [], sect6)
    per_group, group_tests = stats.group_level(mem, dp["group_sd_ddof"])
    per_group = per_group.assign(
        flags=[
            _messages(b.flagged(flags.variable(r.source, r.quantity), f"group_level.{r.source}.{r.quantity}"))
            for r in per_group.itertuples(index=False)
        ]
    )
    b.table(
        "group_level",
        per_group,
        "Fig. 2: per-group mean and SD of each quantity",
        ["each group's statistics of an outcome are over its members with every step of it (paired)"],
        sect6,
    )

    g_paper = _paper_groups(paper)
    human_changes = stats.group_changes(per_group, stats.GROUP_TESTS)
    cells, es_rows = [], []
    for r in group_tests.itertuples(index=False):
        vars_ = _test_vars(r.quantity, r.test)
        fl = b.flagged(_union(flags.variable(s, v) for s, v in vars_), f"group_tests.{r.quantity}.{r.test}")
        cells.append(_messages(fl))
        design = run.differences(_union(variable_uses(s, v) for s, v in vars_), model)
        ref = _paper_test(paper, r.quantity, r.test)
        paper_t = ref.get("t")
        paper_dz = _paper_dz(paper, r.quantity, r.test)
        finding = (
            group_finding(r, ref, fl, human_changes.get((r.quantity, r.test)), topics)
            if paper_t is not None and ref.get("p") is not None
            else None
        )
        if finding is not None:
            rep.findings.append(finding)
        theirs = not model_written(r.test)
        t_shown = "n/a" if pd.isna(r.t) else f"{r.t:.3g}"
        b.row(
            vs_paper.Row(
                f"Fig. 2 {r.quantity}: {r.test} (d_z = t / sqrt(G))",
                None if pd.isna(r.d_z) else r.d_z,
                paper_dz,
                finding=finding.claim if finding else "",
                verdict=finding.verdict if finding else None,
                flags=fl,
                design=design,
                note=(f"{PAPERS_COMPARISON}; " if theirs else "")
                + f"ours: t = {t_shown}, {r.n_groups} groups"
                + (f"; {r.missing}" if isinstance(r.missing, str) and r.missing else "")
                + (f"; {r.note}" if isinstance(r.note, str) and r.note else "")
                + (f"; paper: t({g_paper - 1}) = {paper_t:g}, {g_paper} groups" if paper_t is not None else ""),
            )
        )
        es_rows.append(
            {
                "quantity": r.quantity,
                "test": r.test,
                "d_z": r.d_z,
                "t": r.t,
                "n_groups": r.n_groups,
                "paper_d_z": paper_dz,
                "paper_t": paper_t,
                "paper_groups": g_paper if paper_t is not None else None,
                "verdict": finding.verdict.label if finding else PAPERS_COMPARISON if theirs else "",
                "missing": r.missing,
                "flags": _messages(fl),
            }
        )
    b.table(
        "group_tests",
        group_tests.assign(flags=cells),
        "Fig. 2: group-level changes (paired t over groups; d_z = t / sqrt(groups))",
        [f"the twins' tests (llm change, llm change vs human change) are {PAPERS_COMPARISON}"],
        sect6,
    )
    b.table(
        "fig2_effect_sizes",
        pd.DataFrame(es_rows).astype(
            {"d_z": "float64", "t": "float64", "paper_d_z": "float64", "paper_t": "float64", "paper_groups": "Int64"}
        ),
        f"Fig. 2 effect sizes: d_z = t / sqrt(G), ours beside the paper's (G = {g_paper})",
        [
            "the paper's t grows with its number of groups; d_z does not",
            f"the twins' tests are {PAPERS_COMPARISON}",
        ],
        sect6,
    )

    indiv = stats.individual_level(mem)
    il = paper.get("individual_level") or {}
    cells = []
    for r in indiv.itertuples(index=False):
        start, end = stats.OUTCOMES[r.outcome]
        fl = b.flagged(
            _union(flags.variable(r.source, v) for v in (start, end)),
            f"individual_level.{r.source}.{r.outcome}.{r.predictor}",
        )
        cells.append(_messages(fl))
        ref = ((il.get(r.outcome) or {}).get(r.predictor.replace(" ", "_")) or {}).get(r.source) or {}
        b.row(
            vs_paper.Row(
                f"Fig. 3 {r.outcome} change ~ {r.predictor} ({r.source}): Pearson r",
                r.r,
                ref.get("r"),
                flags=fl,
                design=run.differences(_union(variable_uses(r.source, v) for v in (start, end)), model),
                note=f"{r.n} members" + (f"; {r.note}" if isinstance(r.note, str) and r.note else ""),
            )
        )
    b.table(
        "individual_level",
        indiv.assign(flags=cells),
        "Fig. 3: individual change vs initial stance and partner",
        [],
        sect6,
    )
    rep.summary.update(
        groups_sect6=int(mem.session_id.nunique()),
        members_sect6=int(len(mem) // 2),
        topics_sect6=len({topics[s] for s in mem.session_id.unique()}),
    )
    _sect6_claims(b, mem, per_group, group_tests, flags, model, paper, topics)


def _encoder_note(run: RunDesign, metric: str) -> str:
    return f"; encoder: {run.encoder or 'unknown'}" if "encoder" in METRIC_USES.get(metric, ()) else ""


def _appendix_h(b: _Builder, metrics: pd.DataFrame, flags: InputFlags, paper: Mapping[str, Any]) -> None:
    """Appendix H on the models that ran (Friedman + Wilcoxon across settings), and its vs_paper rows."""
    run = b.run
    orig = metrics[metrics.ablation == "original"].assign(
        setting=lambda d: d.topic_set + "-mode" + d["mode"].astype(str)
    )
    ph = paper.get("appendix_h") or {}
    models = sorted(orig.model.unique())
    paper_models = list((paper.get("models") or {}).keys())
    app_h: dict[str, Any] = {}
    for metric, alt in (("s_sem", "greater"), ("rouge_l", "greater"), ("d_stance", "less")):
        values = orig.pivot_table(index="model", columns="setting", values=metric)
        best = (
            (values.mean(axis=1).idxmax() if alt == "greater" else values.mean(axis=1).idxmin())
            if len(values)
            else None
        )
        app_h[metric] = (
            {"best": best, **stats.appendix_h(values, best, alt)} if best is not None else {"note": "no metrics"}
        )
        fl = b.flagged(
            _union(
                flags.metric(metric, (r.model, r.mode, r.ablation, r.topic_set)) for r in orig.itertuples(index=False)
            ),
            f"appendix_h.{metric}",
        )
        if fl:
            app_h[metric]["flags"] = [f.message for f in fl]
        ours, ref = app_h[metric], ph.get(metric) or {}
        if not ref:
            continue
        design = run.differences(METRIC_USES[metric], ", ".join(models), ", ".join(sorted(paper_models)))
        why = ours.get("note") or ""
        base = f"ours: {ours.get('n_models', len(models))} model(s) x {ours.get('n_settings', 0)} setting(s)"
        base += ", the paper: 6 x 6"
        base += f"; {why}" if why else ""
        base += _encoder_note(run, metric)
        op = "< " if ref.get("p_op") == "<" else ""
        for what, key in (("Friedman chi2", "chi2"), ("Friedman p", "p")):
            b.row(
                vs_paper.Row(
                    f"Appendix H {metric}: {what}",
                    ours.get(key),
                    ref.get(key),
                    flags=fl,
                    design=design,
                    note=base + (f"; paper: p {op}{ref.get('p')}" if key == "p" and op else ""),
                )
            )
        same_best = ours.get("best") == ref.get("best")
        for other, p_ref in (ref.get("wilcoxon") or {}).items():
            mine = (ours.get("wilcoxon") or {}).get(other) if same_best else None
            note = base if same_best else f"{base}; our best model is {ours.get('best')}, the paper's {ref.get('best')}"
            b.row(
                vs_paper.Row(
                    f"Appendix H {metric}: one-sided Wilcoxon p, {ref.get('best')} vs {other}",
                    mine,
                    p_ref,
                    flags=fl,
                    design=design,
                    note=note,
                )
            )
    b.rep.documents["appendix_h.json"] = app_h


# ---------------------------------------------------------------------------------------------------
# Human on-topic labels: the annotator's and the data set's


ON_TOPIC_KEYS = ["session_id", "round", "dyad", "k"]


def on_topic_validity(tables: Mapping[str, Any]) -> pd.DataFrame:
    """Per topic set of the run (and "all"): the human utterances' on-topic rate by the annotator
    (unparsed = off-topic, as in the metrics) and by the data set's `validity` labels (no label = not
    VALID), and the annotator's agreement with `validity` over the utterances with both labels (n,
    agreement rate, Cohen's kappa, the 2x2 counts). Without `human_utterances` among `tables` the
    validity columns are empty."""
    ha = tables["human_annotations"]
    ha = ha[ha.kind == "utterance"]
    topic = tables["sessions"].set_index("session_id").topic_set
    hu = tables.get("human_utterances")
    has_validity = hu is not None and "validity" in hu.columns
    if hu is not None and has_validity:
        ha = ha.merge(hu[ON_TOPIC_KEYS + ["validity"]], on=ON_TOPIC_KEYS, how="left")
    else:
        ha = ha.assign(validity=None)
    ha = ha.assign(topic_set=ha.session_id.map(topic))
    annot = [None if pd.isna(v) else bool(v) for v in ha.on_topic]
    valid = [None if not isinstance(v, str) else v == "VALID" for v in ha.validity]
    ha = ha.assign(_a=annot, _v=valid)
    rows = []
    sets = [ts for ts in TABLES if ts in set(ha.topic_set)]
    for ts in [*sets, "all"]:
        g = ha if ts == "all" else ha[ha.topic_set == ts]
        agr = stats.agreement(g._a, g._v)
        rows.append(
            {
                "topic_set": ts,
                "n_utterances": len(g),
                "annotator_rate": float(np.mean([a is True for a in g._a])) if len(g) else None,
                "n_unparsed": int(sum(a is None for a in g._a)),
                "validity_rate": float(np.mean([v is True for v in g._v])) if len(g) and has_validity else None,
                "n_no_validity": int(sum(v is None for v in g._v)),
                "n": agr["n"],
                "agreement": agr["agreement"],
                "kappa": agr["kappa"],
                "both_valid": agr["both_1"],
                "annotator_only": agr["a_only"],
                "validity_only": agr["b_only"],
                "both_invalid": agr["both_0"],
                "note": agr["note"] if has_validity else "no validity labels (human_utterances not given)",
            }
        )
    return pd.DataFrame(rows).astype(
        {"annotator_rate": "float64", "validity_rate": "float64", "agreement": "float64", "kappa": "float64"}
    )


def _human_on_topic_report(b: _Builder, tables: Mapping[str, Any], paper: Mapping[str, Any]) -> None:
    """The table `human_on_topic` and the vs_paper rows of the humans' on-topic rates: the annotator's
    (the paper's 58 % / 66 %, Sect. 4.3) and the data set's labels (Table 1), with the annotator's
    agreement with those labels in the notes."""
    run = b.run
    df = on_topic_validity(tables)
    ha = tables["human_annotations"]
    ha = ha[ha.kind == "utterance"]
    topic = tables["sessions"].set_index("session_id").topic_set
    fl_by_ts = {
        ts: dg.collect(
            dg.one_value(
                ha[ha.session_id.map(topic) == ts].on_topic.dropna().astype(int),
                "on-topic annotator (human utterances)",
            )
        )
        for ts in df.topic_set
        if ts != "all"
    }
    b.table(
        "human_on_topic",
        df,
        "Human utterances: on-topic rate by the annotator and by the data set's validity labels, and their "
        "agreement (Cohen's kappa)",
        [
            f"annotator prompt: {run.on_topic_prompt}; the annotator's labels decide which utterances every "
            "metric compares",
            "validity: the data set's own label, VALID for a merged utterance if any merged message is",
        ],
        _union(fl_by_ts.values()),
    )
    ref = paper.get("human_on_topic") or {}
    for r in df[df.topic_set != "all"].itertuples(index=False):
        fl = b.flagged(fl_by_ts.get(r.topic_set, []), f"human_on_topic[{r.topic_set}]")
        agree = (
            f"annotator vs validity: agreement {r.agreement:.3f}, Cohen's kappa "
            + ("n/a" if pd.isna(r.kappa) else f"{r.kappa:.3f}")
            + f", n = {r.n}"
            if r.n
            else "annotator vs validity: no utterance with both labels"
        )
        b.row(
            vs_paper.Row(
                f"Sect. 4.3 human on-topic rate (annotator), {r.topic_set}",
                r.annotator_rate,
                (ref.get("annotator") or {}).get(r.topic_set),
                flags=fl,
                design=run.differences({"annotator", "on_topic"}),
                note=f"{r.n_utterances} merged utterances, {r.n_unparsed} unparsed (off-topic); prompt "
                f"{run.on_topic_prompt}; {agree}",
            )
        )
        d = (ref.get("dataset") or {}).get(r.topic_set) or {}
        b.row(
            vs_paper.Row(
                f"Table 1 human on-topic rate (data set's validity labels), {r.topic_set}",
                None if pd.isna(r.validity_rate) else r.validity_rate,
                d["on_topic"] / d["messages"] if d.get("messages") else None,
                # the paper counts raw messages of every group (our data_counts table has that count)
                design=run.differences(())
                + vs_paper.differences(
                    {"unit": "merged utterances of the run's groups"}, {"unit": "raw messages of all groups"}
                ),
                note=f"ours: {r.n_utterances} merged utterances of the run's groups ({r.n_no_validity} without a "
                "label); the paper: raw messages of all groups; " + agree,
            )
        )


def _ablation_report(
    b: _Builder,
    m: pd.DataFrame,
    by_session: pd.DataFrame,
    flags: InputFlags,
    model: str,
    ts: str,
    paper: Mapping[str, Any],
    topics: Mapping[Any, Any],
) -> None:
    """The Sect. 5 ablation claim for one topic set (the first model), as a finding and a vs_paper row."""
    mine = m[m.model == model]
    ran = {(int(r.mode), str(r.ablation)) for r in mine.itertuples(index=False)}
    fl = {
        (mode, abl, metric): flags.metric(metric, (model, mode, abl, ts))
        for mode, abl in ran
        for metric in ("s_sem", "d_stance")
    }
    finding = ablation_claim(by_session, model, ts, ran, fl, topics)
    b.rep.findings.append(finding)
    table = TABLES[ts][1]
    ref = paper.get(table) or {}
    deltas = [
        f"mode {mode} {metric} {_delta(ref[f'mode{mode}'], metric):+.2f}"
        for mode in (2, 3)
        for metric in ("s_sem", "d_stance")
        if f"mode{mode}" in ref
    ]
    b.row(
        vs_paper.Row(
            f"{table.capitalize()} {ts}, {model}: removing the private profile (modes 2, 3)",
            None,
            None,
            finding=finding.claim,
            verdict=finding.verdict,
            flags=_union(fl.values()),
            design=run_design_union(b.run, [METRIC_USES["s_sem"], METRIC_USES["d_stance"]], model),
            note=f"finding tested over topics: {finding.test}"
            + (f"; the paper's deltas: {', '.join(deltas)}" if deltas else "")
            + _encoder_note(b.run, "s_sem"),
        )
    )


def _delta(ref: Mapping[str, Any], metric: str) -> float:
    """The paper's no_private_profile minus original of one metric (Tables 4, 10)."""
    return float(ref["no_private_profile"][metric]) - float(ref["original"][metric])


def run_design_union(run: RunDesign, uses: Iterable[Iterable[str]], model: str | None = None) -> list[str]:
    return run.differences(_union(uses), model)


def _sect6_claims(
    b: _Builder,
    mem: pd.DataFrame,
    per_group: pd.DataFrame,
    group_tests: pd.DataFrame,
    flags: InputFlags,
    model: str,
    paper: Mapping[str, Any],
    topics: Mapping[Any, Any],
) -> None:
    """Sect. 6's claims: convergence and drift on the twins' model-written tweets (rounds 2 to 3) and Fig. 3's
    partner influence as a regression coefficient, as findings and vs_paper rows judged over topics; the
    paper's own comparisons (convergence with opinions, drift and public vs private from the humans' start,
    Fig. 3's r of the change score) as vs_paper rows and tables without a verdict."""
    run = b.run

    def d_z_of(frame: pd.DataFrame, q: str, t: str) -> str:
        row = frame[(frame["quantity"] == q) & (frame["test"] == t)]
        ours = row.d_z.iloc[0] if len(row) else None
        return "n/a" if ours is None or pd.isna(ours) else f"{ours:.2f}"

    def paper_note(parts: Iterable[tuple[str, str]]) -> str:
        out = []
        for q, t in parts:
            theirs = _paper_dz(paper, q, t)
            out.append(
                f"{q} {t}: d_z {d_z_of(group_tests, q, t)}" + ("" if theirs is None else f" (paper {theirs:.2f})")
            )
        return "; ".join(out)

    # the claims on model-written points
    mw_tests = stats.change_tests(per_group, stats.MODEL_WRITTEN_TESTS)
    mw_flags = {
        (r.quantity, r.test): b.flagged(
            _union(flags.variable(s, v) for s, v in _test_vars(r.quantity, r.test)),
            f"sect6_model_written.{r.quantity}.{r.test}",
        )
        for r in mw_tests.itertuples(index=False)
    }
    findings, mw = group_claims(per_group, topics, mw_flags)
    b.table(
        "sect6_model_written",
        mw.assign(flags=[_messages(mw_flags[(r.quantity, r.test)]) for r in mw.itertuples(index=False)]),
        "Sect. 6 on model-written points: the group mean and SD of tweet stance from round 2 to 3 (both the "
        "twins' own tweets), paired t over groups and the sign-flip test over topics",
        [
            "the paper's tests (round 3 vs 1) start from the humans' round-1 tweet: see group_tests",
            f"verdict: the part's, judged over topics (at least {MIN_TOPICS}); empty for a test no claim uses",
        ],
        _union(mw_flags.values()),
    )
    for f, (_, parts) in zip(findings, SECT6_GROUP_CLAIMS.values()):
        b.rep.findings.append(f)
        vars_ = _union(_test_vars(q, t) for q, t, _ in parts)
        note = []
        for q, t, _ in parts:
            row = mw[(mw["quantity"] == q) & (mw["test"] == t)].iloc[0]
            p_top = "n/a" if pd.isna(row.p_topics) else f"{row.p_topics:.3g}"
            theirs = _paper_dz(paper, q.split(",")[0], t)
            note.append(
                f"{q} {t}: d_z {d_z_of(mw, q, t)}, {row.n_groups} groups, sign-flip p = {p_top} over "
                f"{row.n_topics} topics"
                + ("" if theirs is None else f" (the paper, round 3 vs 1 from the humans' start: d_z {theirs:.2f})")
            )
        b.row(
            vs_paper.Row(
                f.claim,
                None,
                None,
                finding=f.claim,
                verdict=f.verdict,
                flags=_union(mw_flags[(q, t)] for q, t, _ in parts),
                design=run.differences(_union(variable_uses(s, v) for s, v in vars_), model),
                note="; ".join(note),
            )
        )

    # the paper's claims as it tests them: no verdict
    every = [(s, v) for s in ("llm", "human") for v in stats.QUANTITIES]
    design = run.differences(_union(variable_uses(s, v) for s, v in every), model)
    for name, (claim, tests_of) in SECT6_PAPER_CLAIMS.items():
        value, extra = None, ""
        if name == "public vs private":
            value, p, n, _ = stats.dissociation(per_group, "llm")
            shown = "n/a" if p is None else f"{p:.3g}"
            extra = f"; tweet-mean change minus opinion-mean change: one-sample t p = {shown}, {n} groups"
        b.row(
            vs_paper.Row(
                claim,
                value,
                None,
                flags=_union(flags.variable(s, v) for q, t in tests_of for s, v in _test_vars(q, t)),
                design=design,
                note=f"{PAPERS_COMPARISON}; " + paper_note(tests_of) + extra,
            )
        )

    # Fig. 3: partner influence as the partner coefficient of the end value
    out_flags = {
        o: _union(flags.variable(s, v) for s in ("llm", "human") for v in stats.OUTCOMES[o]) for o in stats.OUTCOMES
    }
    partner, pparts = partner_claim(mem, topics, out_flags)
    b.rep.findings.append(partner)
    b.table(
        "fig3_partner_coefficients",
        pparts.astype(
            {
                "b_llm": "float64",
                "b_human": "float64",
                "diff": "float64",
                "p": "float64",
                "topic_mean": "float64",
                "p_topics": "float64",
            }
        ),
        "Fig. 3's partner influence: the partner coefficient of OLS end ~ own start + round-1 partner's start, "
        "twins minus humans (p: cluster bootstrap over groups; p_topics: sign-flip over the per-topic differences)",
        [
            "the end value, not the change score: 'partner minus own' shares -own start with the change",
            f"claimed: twins minus humans > 0; judged over topics (at least {MIN_TOPICS}), at least "
            f"{MIN_BOOT_GROUPS} groups",
        ],
        _union(out_flags.values()),
    )
    for r in pparts.itertuples(index=False):
        b_shown = ", ".join(
            f"{who} {'n/a' if v is None or pd.isna(v) else format(v, '.3f')}"
            for who, v in (("b_llm", r.b_llm), ("b_human", r.b_human))
        )
        b.row(
            vs_paper.Row(
                f"Fig. 3 {r.outcome}: partner coefficient, twins minus humans (end ~ own start + partner start)",
                r.diff,
                None,
                finding=partner.claim,
                verdict=partner.verdict,
                flags=out_flags[r.outcome],
                design=design,
                note=f"{b_shown}; {r.n_groups} groups, {r.n_topics} topics; this part: {r.verdict}; the paper "
                "reports r of the change score, not this coefficient",
            )
        )

    # Fig. 3 as the paper compares it: no verdict
    il = paper.get("individual_level") or {}
    paper_diff = {
        (o, pr): (il[o][pr.replace(" ", "_")]["llm"]["r"] - il[o][pr.replace(" ", "_")]["human"]["r"])
        for o, pr, _ in SECT6_CORRELATIONS
        if ((il.get(o) or {}).get(pr.replace(" ", "_")) or {}).get("llm")
    }
    corr = correlation_parts(mem)
    corr = corr.assign(paper_diff=[paper_diff.get((r.outcome, r.predictor)) for r in corr.itertuples(index=False)])
    b.table(
        "fig3_llm_vs_human",
        corr.astype(
            {"r_llm": "float64", "r_human": "float64", "diff": "float64", "p": "float64", "paper_diff": "float64"}
        ),
        "Fig. 3 as the paper compares it: the twins' correlation minus the humans' (cluster bootstrap over "
        "groups); no verdict",
        [PAPERS_COMPARISON, "the partner influence is judged in fig3_partner_coefficients"],
        _union(out_flags.values()),
    )
    for r in corr.itertuples(index=False):
        shown = "n/a" if r.p is None or pd.isna(r.p) else f"{r.p:.3g}"
        b.row(
            vs_paper.Row(
                f"Fig. 3 {r.outcome} change ~ {r.predictor}: r_llm - r_human",
                r.diff,
                paper_diff.get((r.outcome, r.predictor)),
                flags=out_flags[r.outcome],
                design=design,
                note=f"{PAPERS_COMPARISON}; {r.n_groups} groups, bootstrap p = {shown}",
            )
        )
