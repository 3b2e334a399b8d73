"""Parquet schemas of the facilitation study's artifacts (defined once, used by every stage)."""

import pyarrow as pa

PERSONAS = pa.schema(
    [
        pa.field("persona_id", pa.string(), nullable=False),
        pa.field("username", pa.string()),
        pa.field("age", pa.int32()),
        pa.field("sex", pa.string()),
        pa.field("education_level", pa.string()),
        pa.field("sexual_orientation", pa.string()),
        pa.field("demographic_group", pa.string()),
        pa.field("current_employment", pa.string()),
        pa.field("special_instructions", pa.string()),
        pa.field("personality_characteristics", pa.list_(pa.string())),  # the person's own traits
        pa.field("role_traits", pa.list_(pa.string())),  # traits that come from the role (dropped without roles)
        pa.field("role", pa.string(), nullable=False),
        pa.field("source", pa.string(), nullable=False),  # "file" or "llm"
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("raw_answer", pa.string()),  # the model's raw text (llm source), kept even when it does not parse
    ]
)

TOPICS = pa.schema(
    [
        pa.field("topic_id", pa.string(), nullable=False),
        pa.field("theme", pa.string()),
        pa.field("text", pa.string()),
        pa.field("source", pa.string(), nullable=False),
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("raw_answer", pa.string()),
    ]
)

PARTICIPANT = pa.struct(
    [
        pa.field("persona_id", pa.string()),
        pa.field("username", pa.string()),
        pa.field("role", pa.string()),
        pa.field("system_prompt", pa.string()),
    ]
)

# One row per discussion (Algorithm 1), with everything needed to run it alone.
SETUPS = pa.schema(
    [
        pa.field("discussion_id", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),  # main, tt_round_robin, tt_random, no_sdb, ...
        pa.field("model", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("turn_taking", pa.string(), nullable=False),
        pa.field("p_respond", pa.float64(), nullable=False),
        pa.field("context_h", pa.int32(), nullable=False),
        pa.field("user_turns", pa.int32(), nullable=False),
        pa.field("instructions", pa.string(), nullable=False),  # full | basic
        pa.field("with_sdb", pa.bool_(), nullable=False),
        pa.field("with_roles", pa.bool_(), nullable=False),
        pa.field("topic_id", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("participants", pa.list_(PARTICIPANT), nullable=False),
        pa.field("facilitator_prompt", pa.string()),  # null: no facilitator
        pa.field("seed", pa.int64(), nullable=False),
    ]
)

# One row per turn (comment or silent turn) of a discussion.
COMMENTS = pa.schema(
    [
        pa.field("discussion_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),
        pa.field("position", pa.int32()),  # index among the discussion's non-silent comments; null if silent
        pa.field("speaker_id", pa.string(), nullable=False),  # persona id, or "facilitator"
        pa.field("speaker_name", pa.string(), nullable=False),
        pa.field("role", pa.string(), nullable=False),  # normal_user | troll | community_veteran | facilitator
        pa.field("is_facilitator", pa.bool_(), nullable=False),
        pa.field("is_silent", pa.bool_(), nullable=False),
        pa.field("is_seed", pa.bool_(), nullable=False),  # the seed opinion that opens the discussion
        pa.field("text", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("condition", pa.string(), nullable=False),
        pa.field("prompt_hash", pa.string()),
        pa.field("completion_tokens", pa.int32(), nullable=False),
    ]
)

# One row per (comment, annotator).
ANNOTATIONS = pa.schema(
    [
        pa.field("discussion_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),
        pa.field("annotator_id", pa.string(), nullable=False),
        pa.field("toxicity", pa.int32()),
        pa.field("argument_quality", pa.int32()),
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("raw_answer", pa.string(), nullable=False),
    ]
)

# The figures (Figs. 3-6), each drawn from its plot table plot_<name>: tables the analysis declares.
FIGURES = ("fig3_pairwise_toxicity", "fig4_interventions", "fig5_diversity", "fig6_nontroll_toxicity")

# The revised study's released toxicity (Perspective API), one row per comment (facilitation.revision.data).
SCORES = pa.schema(
    [
        pa.field("discussion_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),
        pa.field("message_id", pa.string(), nullable=False),  # SynDisco's: md5 of "<discussion id>_<text>"
        pa.field("message_order", pa.int32(), nullable=False),  # SynDisco's (consecutive equal ids share one)
        pa.field("toxicity", pa.float64()),  # null: no released score for this message
        pa.field("score_rows", pa.int32(), nullable=False),  # released rows (without an error) carrying its id
    ]
)

# Human comments (socsim.facilitation.humans): paper 000's Regulation Room workbook, socsim's fixture or a user's table.
HUMANS = pa.schema(
    [
        pa.field("discussion_id", pa.string(), nullable=False),  # "<sheet> / <post>" (the workbook's)
        pa.field("comment_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),  # its index in the discussion (comment id order)
        pa.field("parent_id", pa.string()),  # the comment it replies to (null: a top-level comment)
        pa.field("thread_id", pa.string(), nullable=False),  # the top-level comment of its reply thread
        pa.field("speaker", pa.string()),
        pa.field("text", pa.string(), nullable=False),
        pa.field("sheet", pa.string()),  # the workbook's topic sheet ("" for a table)
    ]
)

# The revised release's human comment toxicity (cmv_awry2.csv: Perspective, the models' scorer; no text, no discussion).
HUMAN_TOXICITY = pa.schema(
    [
        pa.field("message_id", pa.string(), nullable=False),
        pa.field("toxicity", pa.float64()),  # null: the scorer failed (`error`)
        pa.field("error", pa.string()),
    ]
)

# The authors' printed JS divergences to those humans (divergence_<dimension>.tex), as printed.
PRINTED_DIVERGENCE = pa.schema(
    [
        pa.field("dimension", pa.string(), nullable=False),  # the table: initialization, sdbs, turn_taking, ...
        pa.field("condition", pa.string(), nullable=False),  # its row, e.g. "Main", "Random"
        pa.field("model", pa.string(), nullable=False),  # its column, the paper's label ("LLaMa-70B")
        pa.field("js_printed", pa.float64(), nullable=False),
    ]
)

# The revised study's figures, each drawn from its plot table plot_<name>.
REVISION_FIGURES = ("toxicity_over_turns", "interventions", "model_effects")
