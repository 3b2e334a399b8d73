"""Parquet schemas of the facilitation study's artifacts (defined once, used by every stage)."""

import pyarrow as pa

PERSONAS = pa.schema([
    pa.field("persona_id", pa.string(), nullable=False),
    pa.field("username", pa.string()),
    pa.field("age", pa.int32()),
    pa.field("sex", pa.string()),
    pa.field("education_level", pa.string()),
    pa.field("sexual_orientation", pa.string()),
    pa.field("demographic_group", pa.string()),
    pa.field("current_employment", pa.string()),
    pa.field("special_instructions", pa.string()),
    pa.field("personality_characteristics", pa.list_(pa.string())),
    pa.field("role", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),  # "file" or "llm"
    pa.field("parse_ok", pa.bool_(), nullable=False),
    pa.field("raw_answer", pa.string()),  # the model's raw text (llm source), kept even when it does not parse
])

TOPICS = pa.schema([
    pa.field("topic_id", pa.string(), nullable=False),
    pa.field("theme", pa.string()),
    pa.field("text", pa.string()),
    pa.field("source", pa.string(), nullable=False),
    pa.field("parse_ok", pa.bool_(), nullable=False),
    pa.field("raw_answer", pa.string()),
])
