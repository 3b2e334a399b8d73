"""Parquet schemas of the DEBATE study's artifacts (paper 003). The human tables hold rows of the
research-only DEBATE data set (or the synthetic fixture): never commit them."""

import pyarrow as pa

SESSIONS = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("topic_set", pa.string(), nullable=False),  # depth | breadth
        pa.field("topic_dir", pa.string(), nullable=False),
        pa.field("statement", pa.string(), nullable=False),
        pa.field("reverse", pa.bool_(), nullable=False),  # truth-framed Depth topic: reverse-coded in Sect. 6
        pa.field("source", pa.string(), nullable=False),  # golden | raw | submit_data
        pa.field("file", pa.string(), nullable=False),
        pa.field("complete", pa.bool_(), nullable=False),  # what Tables 3/4/9/10 need (simulated when selected)
        pa.field("drop_reason", pa.string()),
        pa.field("post_opinion", pa.bool_(), nullable=False),  # all 4 gave a Post Opinion: Sect. 6 needs it
        pa.field("n_participants", pa.int64(), nullable=False),
        pa.field("workers", pa.list_(pa.string()), nullable=False),  # their worker ids (people sit in several groups)
        pa.field("n_messages", pa.int64(), nullable=False),  # raw message rows (message_received only as fallback)
        pa.field("n_messages_valid", pa.int64(), nullable=False),  # of those, validity VALID
        pa.field("shadowed_sources", pa.list_(pa.string()), nullable=False),  # later sources' unused copies
    ]
)

DATA_COUNTS = pa.schema(
    [  # Table 1's counts of the data read, per topic set x source ("all": pooled), the paper's beside
        pa.field("data", pa.string(), nullable=False),  # fixture | local <path> | hub <repo>@<commit>
        pa.field("topic_set", pa.string(), nullable=False),  # depth | breadth | all
        pa.field("source", pa.string(), nullable=False),  # golden | raw | submit_data | all
        pa.field("topics", pa.int64(), nullable=False),
        pa.field("sessions", pa.int64(), nullable=False),  # groups, incomplete ones included
        pa.field("complete", pa.int64(), nullable=False),
        pa.field("post_opinion", pa.int64(), nullable=False),  # complete, with Post Opinion for all 4
        pa.field("dropped", pa.int64(), nullable=False),
        pa.field("participants", pa.int64(), nullable=False),
        pa.field("messages", pa.int64(), nullable=False),
        pa.field("messages_valid", pa.int64(), nullable=False),
        pa.field("utterances", pa.int64(), nullable=False),  # merged, of the complete sessions
        pa.field("shadowed", pa.int64(), nullable=False),  # this source's files unused: an earlier source had them
        pa.field("paper_topics", pa.int64()),  # Table 1 (v1 of the data), on the (topic set, all) rows
        pa.field("paper_messages", pa.int64()),
        pa.field("paper_on_topic_messages", pa.int64()),
        pa.field("paper_participants", pa.int64()),
        pa.field("paper_groups", pa.int64()),
    ]
)

PARTICIPANTS = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("worker_id", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),  # first 5 characters of the worker id
        pa.field("o_init", pa.float64(), nullable=False),  # slider - 3.5, -2.5..2.5
        pa.field("j_init", pa.string(), nullable=False),
        pa.field("o_final", pa.float64()),
        pa.field("j_final", pa.string()),
        pa.field("demographics", pa.string(), nullable=False),  # JSON: the 14 prompt slots ("unknown" if missing)
    ]
)

TWEETS = pa.schema(
    [
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("round", pa.int64(), nullable=False),
        pa.field("worker_id", pa.string(), nullable=False),
        pa.field("partner_id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("event_order", pa.int64(), nullable=False),
    ]
)

UTTERANCES = pa.schema(
    [  # merged human utterances
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("round", pa.int64(), nullable=False),
        pa.field("dyad", pa.string(), nullable=False),  # the two worker ids, sorted, joined by "|"
        pa.field("k", pa.int64(), nullable=False),  # 1.. after merging
        pa.field("speaker", pa.string(), nullable=False),
        pa.field("partner", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("first_event_order", pa.int64(), nullable=False),
        pa.field("n_merged", pa.int64(), nullable=False),
        pa.field("validity", pa.string()),  # the data set's label, if any
    ]
)

SETTING = ["model", "mode", "ablation", "topic_set"]

# The study's vocabulary, one copy for the statistics, the analysis and the figures:
# the utterance metrics of Tables 3, 4, 9, 10 (eq. 2), in the tables' order
METRICS = ("s_sem", "d_stance", "d_signed_len", "d_abs_len", "rouge_l", "r_on_topic")
SOURCES = ("human", "llm")  # Sect. 6: the humans and their twins
# Sect. 6's outcomes and their steps (tweet stance per round, opinion before and after): a group's
# statistics at every step of an outcome are over the same members
STEPS = {"tweet": ("s1", "s2", "s3"), "opinion": ("o_init", "o_final")}
QUANTITIES = tuple(q for steps in STEPS.values() for q in steps)
OUTCOMES = {outcome: (steps[0], steps[-1]) for outcome, steps in STEPS.items()}  # Fig. 3: (start, end)
CHANGE_TESTS = ("llm change", "human change", "llm change vs human change")  # Fig. 2's tests of each quantity
PREDICTORS = ("own initial", "partner minus own", "abs partner minus own")  # Fig. 3's predictors of a change

SETUPS = pa.schema(
    [  # one row per simulated session and setting: what the simulate stage runs
        pa.field("setup_id", pa.string(), nullable=False),  # model.m<mode>.<ablation>.<topic_set>.<session_id>
        pa.field("model", pa.string(), nullable=False),
        pa.field("mode", pa.int64(), nullable=False),
        pa.field("ablation", pa.string(), nullable=False),
        pa.field("topic_set", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("topic_dir", pa.string(), nullable=False),
        pa.field("statement", pa.string(), nullable=False),
        pa.field("workers", pa.list_(pa.string()), nullable=False),  # the group's 4 worker ids, sorted
        pa.field("seed", pa.int64(), nullable=False),  # run seed; request seeds derive from it and the ids
    ]
)

SIMULATED = pa.schema(
    [  # what the twins generated: utterances, tweets (mode 3), final opinions (mode 3)
        pa.field("model", pa.string(), nullable=False),
        pa.field("mode", pa.int64(), nullable=False),  # 1 next message, 2 tweet-guided, 3 full conversation
        pa.field("ablation", pa.string(), nullable=False),
        pa.field("topic_set", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("round", pa.int64(), nullable=False),  # final opinion: 4
        pa.field("kind", pa.string(), nullable=False),  # utterance | tweet | opinion
        pa.field("dyad", pa.string(), nullable=False),  # "" for tweets and opinions
        pa.field("k", pa.int64(), nullable=False),  # utterance position; 0 for tweets and opinions
        pa.field("speaker", pa.string(), nullable=False),  # the human twin's worker id
        pa.field("partner", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("opinion", pa.float64()),  # final opinion (-2.5..2.5); null otherwise or unparsed
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("raw", pa.string(), nullable=False),
    ]
)

ANNOTATIONS = pa.schema(
    [  # stance and on-topic labels of simulated (or human) texts
        pa.field("model", pa.string(), nullable=False),  # "human" for the human texts
        pa.field("mode", pa.int64(), nullable=False),  # 0 for the human texts
        pa.field("ablation", pa.string(), nullable=False),
        pa.field("topic_set", pa.string(), nullable=False),
        pa.field("session_id", pa.string(), nullable=False),
        pa.field("round", pa.int64(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("dyad", pa.string(), nullable=False),
        pa.field("k", pa.int64(), nullable=False),
        pa.field("speaker", pa.string(), nullable=False),
        pa.field("stance", pa.float64()),  # -2.5..2.5; null when unparsed
        pa.field("stance_raw", pa.string(), nullable=False),
        pa.field("on_topic", pa.bool_()),  # utterances only; null for tweets or when unparsed
        pa.field("on_topic_raw", pa.string(), nullable=False),
        pa.field("annotator", pa.string(), nullable=False),
    ]
)

# The report folders' declared tables (socsim.stages.Artifact.tables): the compare stage's utterance metrics,
# and the plot table of every figure the analysis writes (plot_<figure>; socsim.debate.analysis.plots).
COMPARISON_TABLES = ("utterance_metrics", "utterance_metrics_by_session")
COMPARISON_ENCODER = "encoder.json"  # the comparison folder's sentence encoder identity (JSON)
FIGURES = ("fig2_group_level", "fig2_effect_sizes", "fig3_individual", "table3_metrics", "table9_metrics")
