"""Parquet schemas of the opinion-dynamics study's artifacts (paper 002)."""

import pyarrow as pa

PERSONAS = pa.schema(
    [
        pa.field("persona_id", pa.string(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("initial", pa.int32(), nullable=False),  # the listed initial opinion (App. B), -2..2
        pa.field("leaning", pa.string(), nullable=False),
        pa.field("age", pa.int32(), nullable=False),
        pa.field("gender", pa.string(), nullable=False),
        pa.field("ethnicity", pa.string(), nullable=False),
        pa.field("education", pa.string(), nullable=False),
        pa.field("occupation", pa.string(), nullable=False),
    ]
)

TOPICS = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("category", pa.string(), nullable=False),  # science | history | common_sense
        pa.field("name", pa.string(), nullable=False),
        pa.field("claim_false", pa.string(), nullable=False),  # "Theory XYZ claims that ..." (false framing)
        pa.field("claim_true", pa.string(), nullable=False),
    ]
)

# One self-contained row per simulation: everything `simulate` needs besides the prompt templates.
SETUPS = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("category", pa.string(), nullable=False),
        pa.field("framing", pa.string(), nullable=False),  # false | true
        pa.field("claim", pa.string(), nullable=False),  # "Theory XYZ claims that ..." as framed
        pa.field("bias", pa.string(), nullable=False),  # none | weak | strong
        pa.field("memory", pa.string(), nullable=False),  # cumulative | reflective | none (independent reports)
        pa.field("world", pa.string(), nullable=False),  # closed | open
        pa.field("init", pa.string(), nullable=False),  # uniform | skewed_positive | ... (initial distribution)
        pa.field("condition", pa.string(), nullable=False),  # main | control_roleplay | control_bare
        pa.field("topology", pa.string(), nullable=False),  # complete | erdos_renyi | watts_strogatz
        pa.field("rep", pa.int32(), nullable=False),
        pa.field("n_agents", pa.int32(), nullable=False),
        pa.field("steps", pa.int32(), nullable=False),  # T
        pa.field("agent_names", pa.list_(pa.string()), nullable=False),
        pa.field("initial", pa.list_(pa.int32()), nullable=False),  # o^0 per agent (null: the bare control)
        pa.field("personas", pa.list_(pa.string()), nullable=False),  # persona text per agent (with its initial belief)
        pa.field("system_prompts", pa.list_(pa.string()), nullable=False),  # null: no system message (bare control)
        pa.field(
            "reminder", pa.string(), nullable=False
        ),  # closed world + bias text repeated in every prompt ("" if none)
        pa.field(
            "writers", pa.list_(pa.int32()), nullable=False
        ),  # the pair schedule, step t = index + 1 (-1: no writer)
        pa.field("reviewers", pa.list_(pa.int32()), nullable=False),
        pa.field("edges", pa.list_(pa.list_(pa.int32())), nullable=False),  # the graph's edges (u < v)
        pa.field("seed", pa.int64(), nullable=False),  # run seed; request seeds derive from it and the ids
    ]
)

# One row per step of a simulation: the writer's tweet and the reviewer's report (controls: a report).
EVENTS = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("t", pa.int32(), nullable=False),  # 1..T
        pa.field("model", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("writer", pa.int32(), nullable=False),  # -1 in the controls
        pa.field("reviewer", pa.int32(), nullable=False),  # the agent who reports (its opinion is measured)
        pa.field("writer_prev", pa.string(), nullable=False),  # none | write | review (the memory event case)
        pa.field("reviewer_prev", pa.string(), nullable=False),
        pa.field("tweet", pa.string()),  # null in the controls
        pa.field("report", pa.string(), nullable=False),  # the reviewer's step-by-step reasoning (raw)
        pa.field("writer_reflection", pa.string()),  # reflective memory: the writer's new summary
        pa.field("reviewer_reflection", pa.string()),
        pa.field("completion_tokens", pa.int32(), nullable=False),  # this step's calls, reflections included
        pa.field("truncated_events", pa.int32(), nullable=False),  # memory events left out of this step's prompts
    ]
)

RATINGS = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("t", pa.int32(), nullable=False),
        pa.field("agent", pa.int32(), nullable=False),  # the reviewer whose report was classified
        pa.field("model", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("opinion", pa.int32()),  # -2..2; null when the answer did not parse
        pa.field("raw_answer", pa.string(), nullable=False),
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("classifier_model", pa.string(), nullable=False),
    ]
)

# The outside-information judge (paper section 3.3, v4 App. L): one row per judged output (a tweet or
# a reviewer's report of a main simulation), a seeded sample per world setting.
OUTSIDE_INFO = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("t", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),  # tweet | report
        pa.field("agent", pa.int32(), nullable=False),  # its writer (tweet) or reviewer (report)
        pa.field("model", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("world", pa.string(), nullable=False),  # closed | open
        pa.field("outside", pa.bool_()),  # the judge's answer; null when it did not parse
        pa.field("raw_answer", pa.string(), nullable=False),
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("judge_model", pa.string(), nullable=False),
    ]
)

TRAJECTORIES = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("agent", pa.int32(), nullable=False),
        pa.field("t", pa.int32(), nullable=False),  # 0..T
        pa.field("opinion", pa.int32()),  # null only before the bare control's first report
        pa.field("source", pa.string(), nullable=False),  # initial | classified | carried | parse_failed | none
    ]
)

BASELINE = pa.schema(
    [
        pa.field("sim_id", pa.string(), nullable=False),
        pa.field("baseline", pa.string(), nullable=False),  # deffuant | degroot
        pa.field("agent", pa.int32(), nullable=False),
        pa.field("t", pa.int32(), nullable=False),
        pa.field("opinion", pa.int32(), nullable=False),  # reported value on the 5-point scale
    ]
)
