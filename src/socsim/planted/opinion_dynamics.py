"""The planted model in the opinion_dynamics study (paper 002): its declared effects and how it writes and reads them.

The generative model. Every agent holds an opinion o in -2..2 about the claim it is shown; it knows which
claims are true (the study's topics file, what a language model knows about the world), so the claim's
framing gives the truth's side tau (+1 true claim, -1 false claim, 0 a claim it does not know). It reads
everything else from its prompt:

- its current opinion: the last belief it stated in its context ("I now hold a <level> opinion about XYZ":
  its last report or reflective summary, in its memory), else its persona's "Initial Belief";
- its confirmation bias: the bias instruction of its prompt (none, weak, strong);
- the stranger's opinion s: the tweet quoted in a review prompt ("My honest take on XYZ: <level>").

A tweet states o. A report after reading a stranger's tweet states the new opinion
    o' = clip(round(o + w_b (s - o) + tau min(d_b, max(0, K_b - tau (o - o_0))) + e), -2, 2),   e ~ Normal(0, NOISE_SD),
with w_b the social influence, d_b the truth drift and K_b the truth budget of its bias level (`EFFECTS`), and
o_0 the agent's initial belief (its persona's): opinions drift toward the truth by d_b a report (B < 0 under
false framing, > 0 under true framing) until they stand K_b levels on the truth's side of where the agent
began, and confirmation bias makes agents move less toward others and the truth, so opinions stay diverse
(D rises with the bias). The budget keeps the paper's 100 steps (about ten reports an agent) from driving
every agent to the end of the scale: there, by a Monte-Carlo of this formula, B is about -1.7 (none) and -1.0
(strong) under false framing and D about 0.4 and 0.9 (the paper's Table 1: B -1.42, D 0.64), where an unbounded
drift gave B -1.99 and D 0 (docs/rehearsal.md). A reflective summary states o. A control (no interaction)
reports o + e rounded (no drift: no effect planted there); the bare control (no persona) a level drawn uniformly.
With probability OUTSIDE_SHARE, in every condition alike, a tweet or report ends with a sentence citing a news
story (outside information: no effect planted there either).

The null twin writes the same texts with every level drawn uniformly from -2..2, independently of its
prompt.

As the study's readers it reads the level back faithfully: the opinion classifier answers the level of the
belief the report states (for a text it does not know, a level drawn at random), the outside-information
judge answers "yes" exactly when the text cites an outside source (unknown text: drawn at random).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from socsim.planted import Ask, study_data

EFFECTS: dict[str, float] = {
    # The share of the gap to the stranger's tweeted opinion a reviewer closes per report, by its bias level.
    "social_influence.none": 0.5,
    "social_influence.weak": 0.3,
    "social_influence.strong": 0.1,
    # The shift (scale levels, before rounding) of a reviewer's opinion toward the truth per report.
    "truth_drift.none": 0.8,
    "truth_drift.weak": 0.6,
    "truth_drift.strong": 0.4,
    # How far (scale levels, on the truth's side) from its initial belief an agent's drift toward the truth takes it.
    "truth_budget.none": 1.0,
    "truth_budget.weak": 0.6,
    "truth_budget.strong": 0.25,
}
# The claims the control design (params.control.yaml: 8 topics, bias none and strong, T = 10) has power for,
# by finding id: per-topic tests over 8 topics (the verdict needs 3); with the truth budget the B claims held in 9
# of 10 replicate control runs and D in 10 of 10 (benchmarks/planted_power.py --studies opinion_dynamics, seeds
# 1000-1009), and all three at the control run's own seed.
POWERED: dict[str, str] = {
    "od.truth_false_negative": "truth drift 0.8 / 0.4 a report (budget 1.0 / 0.25), 8 topics",
    "od.truth_true_higher": "truth drift 0.8 / 0.4 a report (budget 1.0 / 0.25), 8 topics",
    "od.d_rises_with_bias": "social influence 0.5 vs 0.1 (none vs strong), 8 topics",
}
PLANTED: dict[str, str] = {}  # every planted effect is powered (any other finding: not planted)
NOISE_SD = 0.4  # a report's noise on the latent scale before rounding (not an effect: every condition alike)
OUTSIDE_SHARE = 0.1  # tweets and reports that cite an outside source (every condition and both variants alike)

LEVELS = (-2, -1, 0, 1, 2)
# The study's opinion scale (data/opinion_dynamics/prompts.yaml `scale`), as it appears in personas' lines.
LABELS = {
    -2: "strongly negative",
    -1: "slightly negative",
    0: "neutral",
    1: "slightly positive",
    2: "strongly positive",
}
_LABEL = "(" + "|".join(LABELS.values()) + ")"
_BY_LABEL = {v: k for k, v in LABELS.items()}

# What the agent writes: a tweet's and a stated belief's wording (the level early, so a short max_tokens
# keeps it), and what the readers look for.
TWEET = "My honest take on XYZ: {label}. Just thinking out loud."
REPORT = "now hold a {label} opinion about XYZ, having weighed what I read."
CONTROL_REPORT = "now hold a {label} opinion about XYZ, having thought it over."
SUMMARY = "I now hold a {label} opinion about XYZ, after my exchanges on Twitter so far."
OUTSIDE = " A news story I saw elsewhere says the same."
TWEET_LEVEL = re.compile(r"take on XYZ: " + _LABEL, re.I)
STATED_LEVEL = re.compile(r"hold a " + _LABEL + r" opinion about XYZ", re.I)
INITIAL_LEVEL = re.compile(r"Initial Belief: " + _LABEL + r" opinion about XYZ", re.I)
CITES_OUTSIDE = re.compile(re.escape(OUTSIDE.strip()), re.I)

CLAIM = "Theory XYZ claims that"  # every agent prompt of the study names its claim so (materials.claim)
BETWEEN_DASHES = re.compile(r"-{10}\n(.*?)\n-{10}", re.S)  # the text a classifier or judge is shown
OPINION_CHOICES = ["-2", "-1", "0", "1", "2"]


@functools.lru_cache(maxsize=1)
def known_claims() -> dict[str, int]:
    """The claims the model knows (each framing's clause, as a prompt quotes it) -> +1 (true) or -1 (false):
    the study's topics file of its declared materials (socsim.planted.study_data)."""
    found = study_data("opinion_dynamics", "topics.yaml")
    if not found:
        return {}
    side = {"true": 1, "false": -1}
    return {str(c).strip().rstrip("."): side[k] for t in found[0]["topics"] for k, c in t["claims"].items()}


def truth(text: str) -> int:
    """The truth's side of the claim a prompt names: +1 true, -1 false, 0 unknown (the longest known claim
    in the text, so that a claim that extends another is told apart)."""
    found = [c for c in known_claims() if c in text]
    return known_claims()[max(found, key=len)] if found else 0


def _last(pattern: re.Pattern[str], text: str) -> int | None:
    found = pattern.findall(text)
    return _BY_LABEL[found[-1].lower()] if found else None


def current(text: str) -> int | None:
    """The agent's current opinion as its context shows it: its last stated belief, else its initial one."""
    stated = _last(STATED_LEVEL, text)
    return stated if stated is not None else initial(text)


def initial(text: str) -> int | None:
    """The agent's initial belief: its persona's "Initial Belief"."""
    return _last(INITIAL_LEVEL, text)


def bias(text: str) -> str:
    """The confirmation-bias instruction of the prompt (prompts.yaml `bias`): none, weak or strong."""
    low = text.lower()
    return "strong" if "strong confirmation bias" in low else "weak" if "confirmation bias" in low else "none"


def clip_round(x: float) -> int:
    return int(min(2, max(-2, math.floor(x + 0.5))))


def update(o: int, s: int, level: str, tau: int, noise: float, o0: int | None = None) -> int:
    """The reviewer's opinion after reading a tweet of opinion `s`, for an agent whose initial belief was `o0`
    (None: `o`) (the module's generative model)."""
    social, drift = EFFECTS[f"social_influence.{level}"], EFFECTS[f"truth_drift.{level}"]
    budget = EFFECTS[f"truth_budget.{level}"]
    left = budget - tau * (o - (o if o0 is None else o0))  # what is left of its budget toward the truth
    return clip_round(o + social * (s - o) + tau * min(drift, max(0.0, left)) + noise)


def _outside(ask: Ask) -> str:
    return OUTSIDE if ask.rng.random() < OUTSIDE_SHARE else ""


def agent(ask: Ask) -> str | None:
    """The agent's tweet, report or reflective summary, or None when the request is not one."""
    text, last = ask.text, ask.last.rstrip()
    if CLAIM not in text or ask.schema is not None:
        return None

    def level(planted_level: int | None) -> int:
        if not ask.planted or planted_level is None:
            return int(ask.pick(LEVELS))
        return planted_level

    if last.endswith("Your tweet:"):  # prompts.yaml write_cue
        return TWEET.format(label=LABELS[level(current(text))]) + _outside(ask)
    if re.search(r"Reasoning: As [^\n]*, I$", last):  # review_cue: the reviewer after a stranger's tweet
        o, s = current(text), _last(TWEET_LEVEL, text)  # the stranger's tweet is the task's, the last one
        noise = ask.rng.normal(0, NOISE_SD)
        new = None if o is None or s is None else update(o, s, bias(text), truth(text), noise, initial(text))
        return REPORT.format(label=LABELS[level(new)]) + _outside(ask)
    if last.endswith("Reasoning: I"):  # control_cue: a report without interaction
        o = current(text)
        rep = None if o is None else clip_round(o + ask.rng.normal(0, NOISE_SD))
        return CONTROL_REPORT.format(label=LABELS[level(rep)])
    if "Reflect on" in last:  # a reflective memory's summary
        return SUMMARY.format(label=LABELS[level(current(text))])
    return None


def reader(ask: Ask) -> str | None:
    """The opinion classifier's and the outside-information judge's answers (faithful readers)."""
    shown = BETWEEN_DASHES.search(ask.last)
    if shown is None:
        return None
    body = shown.group(1)
    if ask.choices == OPINION_CHOICES and "5-point scale" in ask.last:
        level = _last(STATED_LEVEL, body)
        return str(level) if level is not None else str(ask.pick(LEVELS))
    if ask.choices == ["yes", "no"] and "information from outside" in ask.last:
        if TWEET_LEVEL.search(body) or STATED_LEVEL.search(body):
            return "yes" if CITES_OUTSIDE.search(body) else "no"
        return str(ask.pick(["yes", "no"]))
    return None


def answer(ask: Ask) -> Any:
    """This study's answer to `ask`, or None when the request is not this study's."""
    return reader(ask) if ask.schema is not None else agent(ask)
