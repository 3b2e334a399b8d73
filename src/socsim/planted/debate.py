"""The planted model in the debate study (paper 003): its declared effects, how it writes and reads them,
and the synthetic humans its runs replay.

The generative model. Every twin holds a stance L on the six-point scale (-2.5..2.5, the study's labels).
It reads everything from its prompt (socsim.debate.simulate's memory):

- its start: the initial opinion it "chose" (the initial-opinion message), else the level its round-1
  tweet states, else a level drawn at random;
- its partners: each finished round's block ("Below was your conversation with <partner>:") holds the
  partner's responses, each stating the partner's level; P_q is their mean (none: the partner's tweet).

After each finished round q it closes a share w (`EFFECTS["partner_influence"]`) of the gap to that
round's partner, L_q = L_{q-1} + w (P_q - L_{q-1}) (DeGroot averaging over the study's rotating pairs),
and a share c (`EFFECTS["convergence"]`) of the gap to the mean of every level it has heard in the
finished rounds (its partners' and its own start), so a group's spread shrinks round by round beyond
what the pairwise pull gives. Every text it writes in round r (a tweet, each response) states the level
of L_{r-1} plus noise, rounded to the scale (NOISE_SD: the same in both variants); the Mode 3 final
opinion (JSON) states L_3. Both effects are symmetric, so the group mean does not drift (no effect planted
there), and the humans move toward nobody: the twins converge more than the humans and follow their
round-1 partner more. With probability OFF_TOPIC_SHARE a response is off-topic chat that states no level
(both variants and the humans alike: the on-topic annotator has two labels to give).

The null twin writes the same texts with every level drawn uniformly from the scale, independently of its
prompt.

As the study's annotator it reads back faithfully: the stance of a text that states a level is that level
(a text that states none: a label drawn at random); on-topic is VALID for a text that states a level,
INVALID for the off-topic chat (unknown text: drawn at random).

The encoder-based and length measures (semantic similarity, ROUGE-L, length difference) read the raw text:
nothing is planted there. Twins and humans draw their sentences from the same bank (SENTENCES), so the
lengths match (LLM utterances are not longer) and the text is not constant; a twin's similarity to its
human follows only whether their stated levels agree.

The humans its runs replay are synthetic (socsim.debate.planted_humans, the data source `planted`): no
convergence, no partner influence, no drift, written in this module's vocabulary (`say`, OFF_TOPIC), so the
same faithful reader reads them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from socsim.planted import Ask

EFFECTS: dict[str, float] = {
    # The share of the gap to a round's partner (the mean level its responses state) a twin closes after
    # the round: the twins follow their partners, the round-1 partner included.
    "partner_influence": 0.3,
    # The share of the gap to the mean of every level a twin has heard (its start and its partners') it
    # closes after each round: the twins' groups converge.
    "convergence": 0.3,
}
# The claims the control design (params.control.yaml: 7 Depth topics x 4 synthetic groups, Mode 3) has power
# for, by finding id: sign-flip tests over the 7 topics (exact p = 1/64 when every topic agrees; the
# test needs 6).
POWERED: dict[str, str] = {
    "deb.twins_converge": "convergence 0.3 a round, 7 topics x 4 groups",
    "deb.twins_follow_partner": "partner influence 0.3 a round, 7 topics x 4 groups",
}
# Findings the generative model builds (in the claimed direction) that the control design has no power for, by
# finding id (why); any other finding is not planted (the scorecard marks each control cell so).
# (The planted humans write their drawn level plus noise in every round, so no change is built into the data, not
# the model; a test over 28 groups can still find one by chance. Their findings are the humans' column's, which no
# control mark concerns.)
PLANTED: dict[str, str] = {
    "deb.private_profile_ablation": "a side effect: without a profile a twin writes uniform levels; Mode 3 only here",
}
NOISE_SD = 0.25  # a written level's noise before rounding to the scale (both variants alike; not an effect)
OFF_TOPIC_SHARE = 0.2  # responses that are off-topic chat (twins of both variants and humans alike)

# The study's six-point scale (data/debate/prompts.yaml `labels`).
LABELS = {
    "Certainly disagree": -2.5,
    "Probably disagree": -1.5,
    "Lean disagree": -0.5,
    "Lean agree": 0.5,
    "Probably agree": 1.5,
    "Certainly agree": 2.5,
}
_BY_WORDS = {k.lower(): v for k, v in LABELS.items()}
GRID = np.array(sorted(LABELS.values()))

# What a twin or a human writes: the level first (so a short max_tokens keeps it), then a sentence of the bank.
STATES = "I {label} with this."
STATED = re.compile(r"\bI (" + "|".join(k.lower() for k in LABELS) + r") with this\.", re.I)
SENTENCES = (
    "That is where I stand after thinking it over.",
    "My own experience points that way.",
    "I have read a little about it and it shaped my view.",
    "People I trust see it the same way.",
    "I keep coming back to the evidence I know.",
    "It is how I was raised, but I have thought about it.",
    "I could be wrong, but that is my honest take.",
    "The arguments I have heard so far lead me there.",
)
OFF_TOPIC = (
    "did you see the game last night?",
    "my coffee went cold again lol",
    "how is your weekend going so far?",
)

TASK = "You have been talking with strangers on Twitter"  # prompts.yaml `task`: every twin's system message
CHOSE = re.compile(r'You chose "([^"]+)"')  # prompts.yaml `initial_opinion`
ROUND = "Below was your conversation with "  # prompts.yaml `previous_round`: a finished round's block
TWEET_CUE = "Write the tweet you would post now"  # prompts.yaml `tweet`
UTTERANCE_CUE = "Write your next response to"  # prompts.yaml `utterance`
STANCE_CUE = "How much does the author of the text agree with the statement?"  # prompts.yaml `stance`
STANCE_TEXT = re.compile(r'\nText: "(.*)"\n' + re.escape(STANCE_CUE), re.S)
LATEST = (  # the on-topic prompt's latest message ("name: text"): paper (Tables 7-8), short (ours)
    re.compile(r"The latest message is:\n(.*)\nBased on the provided conversation history", re.S),
    re.compile(r'Latest message: "(.*)"\nAnswer VALID or INVALID only\.', re.S),
)


def label_of(value: float) -> str:
    """The scale's label nearest to `value` (clipped to the scale)."""
    v = float(GRID[int(np.argmin(np.abs(GRID - value)))])
    return next(k for k, x in LABELS.items() if x == v)


def say(level: float, rng: np.random.Generator) -> str:
    """A text stating the level nearest `level`, then a sentence of the bank."""
    return f"{STATES.format(label=label_of(level).lower())} {SENTENCES[int(rng.integers(len(SENTENCES)))]}"


def stated(text: str) -> float | None:
    """The level a text states (its first), or None."""
    m = STATED.search(text)
    return _BY_WORDS[m.group(1).lower()] if m else None


def _mean_stated(lines: Iterable[str]) -> float | None:
    levels = [v for v in (stated(x) for x in lines) if v is not None]
    return float(np.mean(levels)) if levels else None


def _block(content: str) -> tuple[str, list[str]]:
    """A finished round's partner and its lines (prompts.yaml `previous_round`, `my_tweet`, ...)."""
    head, *lines = content.split("\n")
    return head[len(ROUND) :].rstrip(":"), lines


def level(messages: Sequence[Mapping[str, Any]]) -> float | None:
    """The twin's current latent level from its memory (the module's generative model), or None when the
    memory states no start."""
    contents = [str(m.get("content") or "") for m in messages]
    start: float | None = None
    for content in contents:
        m = CHOSE.search(content)
        if m and m.group(1).lower() in _BY_WORDS:
            start = _BY_WORDS[m.group(1).lower()]
    blocks = [_block(content) for content in contents if content.startswith(ROUND)]
    if start is None:  # no initial opinion (its ablations): the round-1 tweet's level
        mine = [line for _, lines in blocks[:1] for line in lines if line.startswith("My tweet: ")]
        start = _mean_stated(mine)
    if start is None:
        return None
    w, conv = EFFECTS["partner_influence"], EFFECTS["convergence"]
    x, heard = start, [start]
    for partner, lines in blocks:
        said = _mean_stated(line for line in lines if line.startswith(f"{partner}'s response: "))
        if said is None:  # a round without its responses: the partner's tweet
            said = _mean_stated(line for line in lines if line.startswith(f"{partner}'s tweet: "))
        if said is None:
            continue
        heard.append(said)
        x = x + w * (said - x)
        x = x + conv * (float(np.mean(heard)) - x)
    return x


def _written(ask: Ask) -> float:
    """The level of a text the twin writes now: its latent level plus noise, or (null twin, or a memory
    without a start) a level drawn uniformly from the scale."""
    x = level(ask.messages) if ask.planted else None
    if x is None:
        return float(ask.pick(list(GRID)))
    return x + float(ask.rng.normal(0.0, NOISE_SD))


def agent(ask: Ask) -> Any:
    """A twin's tweet, response or final opinion, or None when the request is not one."""
    if TASK not in ask.system:
        return None
    if ask.schema is not None:
        props = ask.schema.get("properties") or {}
        if set(props) != {"opinion", "justification"}:
            return None
        x = _written(ask)
        return {"opinion": label_of(x), "justification": say(x, ask.rng)}
    if TWEET_CUE in ask.last:
        return say(_written(ask), ask.rng)
    if UTTERANCE_CUE in ask.last:
        if ask.rng.random() < OFF_TOPIC_SHARE:
            return str(ask.pick(OFF_TOPIC))
        return say(_written(ask), ask.rng)
    return None


def reader(ask: Ask) -> Any:
    """The stance and on-topic annotators' answers (faithful readers), or None when the request is not one."""
    choices = ask.choices
    if choices == list(LABELS) and STANCE_CUE in ask.last:
        m = STANCE_TEXT.search(ask.last)
        v = stated(m.group(1)) if m else None
        return label_of(v) if v is not None else ask.pick(choices)
    if choices == ["VALID", "INVALID"]:
        m = next((m for p in LATEST if (m := p.search(ask.last))), None)
        if m is None:
            return None
        text = m.group(1)
        if stated(text) is not None:
            return "VALID"
        if any(o in text for o in OFF_TOPIC):
            return "INVALID"
        return ask.pick(choices)
    return None


def answer(ask: Ask) -> Any:
    """This study's answer to `ask`, or None when the request is not this study's."""
    return reader(ask) if ask.wrapped is not None else agent(ask)
