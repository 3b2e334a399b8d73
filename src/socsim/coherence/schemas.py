"""Parquet schemas of the coherence study's artifacts."""

import pyarrow as pa

AGENTS = pa.schema(
    [
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("contentiousness", pa.int32(), nullable=False),
        pa.field("bias_level", pa.int32(), nullable=False),  # 0, 1 (implicit), 2 (explicit)
        pa.field("bias_direction", pa.string(), nullable=False),  # none | favor | against
        pa.field("background", pa.int32(), nullable=False),  # index into the 960-cell demographic grid
        pa.field("region", pa.string(), nullable=False),
        pa.field("age", pa.string(), nullable=False),
        pa.field("gender", pa.string(), nullable=False),
        pa.field("urbanicity", pa.string(), nullable=False),
        pa.field("education", pa.string(), nullable=False),
        pa.field("persona_prompt", pa.string(), nullable=False),
        pa.field("bias_prompt", pa.string()),
    ]
)

PROFILES = pa.schema(
    [
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("preference", pa.int32()),  # P, 1-5; null when the answer did not parse
        pa.field("preference_raw", pa.string(), nullable=False),
        pa.field("preference_ok", pa.bool_(), nullable=False),
        pa.field("openness", pa.int32()),  # O, 0-9; null when any item did not parse
        pa.field("openness_answers", pa.list_(pa.string()), nullable=False),  # raw answers, item order
        pa.field("openness_ok", pa.bool_(), nullable=False),
    ]
)

PAIRS = pa.schema(
    [
        pa.field("conversation_id", pa.string(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("agent1_id", pa.string(), nullable=False),
        pa.field("agent2_id", pa.string(), nullable=False),
        pa.field("profile1", pa.string(), nullable=False),  # "P-O-B" (or its bins)
        pa.field("profile2", pa.string(), nullable=False),
        pa.field("opener", pa.int32(), nullable=False),  # 1 or 2: the agent who asks the topic's question (seeded coin)
        # what the conversation needs, so that converse runs each row alone:
        pa.field("question", pa.string(), nullable=False),  # the topic's opening question, asked verbatim
        pa.field("agent1_system_prompt", pa.string(), nullable=False),  # persona, bias, consistency, conversation task
        pa.field("agent2_system_prompt", pa.string(), nullable=False),
        pa.field("seed", pa.int64(), nullable=False),  # the run seed; request seeds derive from it and the ids
    ]
)

UTTERANCES = pa.schema(
    [
        pa.field("conversation_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),
        pa.field("speaker", pa.int32(), nullable=False),  # 1 or 2
        pa.field("agent_id", pa.string(), nullable=False),
        pa.field("text", pa.string(), nullable=False),
        pa.field("says_goodbye", pa.bool_(), nullable=False),
        pa.field("model", pa.string(), nullable=False),
    ]
)

JUDGMENTS = pa.schema(
    [
        pa.field("conversation_id", pa.string(), nullable=False),
        pa.field("turn", pa.int32(), nullable=False),  # judged after this utterance
        pa.field("score", pa.int32()),  # 1-5; -1 for an empty window; null when the answer did not parse
        pa.field("raw_answer", pa.string(), nullable=False),
        pa.field("parse_ok", pa.bool_(), nullable=False),
        pa.field("judge_model", pa.string(), nullable=False),
    ]
)

JUDGE_CALIBRATION = pa.schema(
    [  # the judge scoring the held-out calibration examples (not those of its own prompt)
        pa.field("judge_model", pa.string(), nullable=False),
        pa.field("example", pa.int32(), nullable=False),  # index into prompts.yaml calibration_examples
        pa.field("reference", pa.int32(), nullable=False),  # the score the prompt states for it
        pa.field("score", pa.int32()),  # the judge's answer; null when it did not parse
        pa.field("raw_answer", pa.string(), nullable=False),
        pa.field("parse_ok", pa.bool_(), nullable=False),
    ]
)

# The study's figures (Figs. 4-8): each drawn from its plot table `plot_<figure>`, a declared table of
# the analysis folder (socsim.coherence.analysis.plots writes them, socsim.coherence.figures draws them).
FIGURES = ("fig4_agreement_by_gap", "fig5_suppression", "fig6_anchors", "fig7_contentiousness", "fig8_openness")
