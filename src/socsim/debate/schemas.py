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
        pa.field("complete", pa.bool_(), nullable=False),
        pa.field("drop_reason", pa.string()),
        pa.field("n_participants", pa.int64(), nullable=False),
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
