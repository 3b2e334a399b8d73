"""The planted model in the coherence study (paper 001): its declared effects and how it writes and reads them.

The generative model. Every agent holds, on the topic its prompt names, a stance pi in 1..5 and an
openness theta in (0, 1), both read from its prompt (the study's materials, data/coherence/):

- pi: its background's own leaning on the topic, a level 1..5 fixed by the persona sentence and the
  topic (a person's idiosyncratic view: a hash of the two texts, uniform over 1..5), moved by its bias
  statement (Tables 5 and 6: BIAS_SHIFT levels toward the statement's side "favor" or "against"),
  clipped to 1..5;
- theta: a trait of its background alone (the persona sentence, uniform over 0.05..0.95), the same on
  every topic and bias cell.

Asked its preference (a 1-5 integer), it answers pi, with probability PREF_NOISE one level off. Asked
openness item i of the nine (Yes / No), it answers Yes with probability 1 / (1 + exp(-ITEM_SLOPE (theta -
b_i))), the items' thresholds b_i spread over 0.1..0.9, or No with that probability on the reverse-keyed
items (2 and 9: Yes means less open), so the study's Yes count O rises with theta.

In conversation, each statement states (in a fixed graded vocabulary, five wordings so that an agent's
statements in one conversation differ and the study's Self-BLEU filter keeps them) its stance pi and its
openness, and, once its partner has stated a stance s, how much it agrees with its partner:
    a = clip(round(AGREE_BASE + g |pi - s| + o (theta - 1/2) + e), 1, 5),   e ~ Normal(0, NOISE_SD),
with g = EFFECTS["agreement_per_gap_point"] (< 0) and o = EFFECTS["agreement_per_openness"] (> 0): agreement
falls with the preference gap (Test 1) and rises with openness (Test 5). It never says Goodbye.

The null twin answers the elicitation at random (a preference uniform over 1..5, each item Yes with
probability 1/2) and writes the same statements with every level (stance, openness, agreement) drawn
uniformly, independently of its prompt and its partner's words.

As the study's judge it reads back faithfully: the agreement of the last statement of each agent that
states one, averaged (a half rounded either way at random); for a conversation in other words (the
judge's held-out calibration examples) a small lexicon of agreement cues (CUES); for text that states no
agreement at all, a score drawn at random.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from typing import Any

from socsim.planted import Ask, study_data

EFFECTS: dict[str, float] = {
    # The change of the agreement an agent states with its partner per level of difference between its own
    # stance and the stance its partner stated (1-5 scale): agreement falls with the preference gap.
    "agreement_per_gap_point": -0.4,
    # The change of the agreement an agent states per unit of its openness theta (0.05..0.95): open agents
    # agree more (over the span of theta, 3.15 levels; the judge averages two agents).
    "agreement_per_openness": 3.5,
}
# The claims the control design (params.control.yaml's coherence section: 3 topics x 5 bias cells x 6 agents, at
# most 60 conversations a topic) has power for, by finding id: 6 of 6 run seeds held both.
POWERED: dict[str, str] = {
    "coh.test1": "agreement -0.4 a gap level, ~90 agents as unit",
    "coh.test5": "agreement +3.5 over openness 0..1, ~90 agents as unit",
}
# Findings the generative model builds (in the claimed direction) that the control design has no power for, by
# finding id (why); any other finding is not planted (the scorecard marks each control cell so).
PLANTED: dict[str, str] = {
    "coh.test2": "agreement symmetric under s -> 6 - s, so gap 4 mirrors gap 0; a no-difference claim, ~20 gap-4 talks",
    "coh.test3": "(1-1) pairs at gap 0 agree more than gaps 1-3; three Bonferroni MWUs on a handful of conversations",
    "coh.test4": "by absence: nothing reads the topic (the null twin meets it too); 3 topics, smallest p 1/6",
    "coh.test6": "agreement +3.5 over openness, so low-openness pairs agree least; tiny cells under the strict rule",
}
AGREE_BASE = 3.8  # the agreement stated at gap 0 and theta = 1/2 (not an effect: every condition alike)
NOISE_SD = 0.6  # a stated agreement's noise before rounding (both variants' structure alike)
PREF_NOISE = 0.2  # the chance an elicited preference is one level off pi
ITEM_SLOPE = 8.0  # how sharply an openness item's Yes follows theta past the item's threshold
BIAS_SHIFT = {0: 0, 1: 2, 2: 4}  # levels a bias statement moves pi toward its side (B = 1 implicit, 2 explicit)
LEVELS = (1, 2, 3, 4, 5)

# What an agent writes: five wordings (its k-th statement in a conversation uses wording k mod 5), each with
# its own graded words for agreement with the partner, stance on the statement and openness (levels 1..5).
WORDINGS: tuple[dict[str, Any], ...] = (
    {
        "agree": (
            "I completely disagree with you",
            "I mostly disagree with you",
            "I half agree with you",
            "I mostly agree with you",
            "I completely agree with you",
        ),
        "stance": "Personally I am {} on this question",
        "stances": ("firmly against", "leaning against", "undecided", "leaning in favour", "firmly in favour"),
        "open": ", and I am {} to changing my mind.",
        "opens": ("not at all open", "barely open", "somewhat open", "quite open", "very open"),
    },
    {
        "agree": (
            "You have not convinced me at all",
            "You have convinced me very little",
            "You have convinced me halfway",
            "You have convinced me largely",
            "You have convinced me fully",
        ),
        "stance": "My own position stays {}",
        "stances": ("strongly opposed", "mildly opposed", "neutral", "mildly supportive", "strongly supportive"),
        "open": "; other people {} sway me.",
        "opens": ("never", "rarely", "sometimes", "often", "easily"),
    },
    {
        "agree": (
            "Our views could hardly be further apart",
            "Our views are rather far apart",
            "Our views partly overlap",
            "Our views are rather close",
            "Our views are just the same",
        ),
        "stance": "Where I come from, folks like me {} it",
        "stances": ("reject", "doubt", "wonder about", "welcome", "embrace"),
        "open": ", and new arguments {} move me.",
        "opens": ("cannot", "seldom", "occasionally", "frequently", "readily"),
    },
    {
        "agree": (
            "On this we are at odds",
            "On this we differ somewhat",
            "On this we meet in the middle",
            "On this we are largely aligned",
            "On this we are perfectly aligned",
        ),
        "stance": "Count me {}",
        "stances": ("out entirely", "as skeptical", "as unsure", "as sympathetic", "in wholeheartedly"),
        "open": " -- my mind is {} to persuasion.",
        "opens": ("closed", "hardly receptive", "half receptive", "fairly receptive", "wide open"),
    },
    {
        "agree": (
            "That sounds wrong to me",
            "That sounds doubtful to me",
            "That sounds partly right to me",
            "That sounds mostly right to me",
            "That sounds exactly right to me",
        ),
        "stance": "Deep down the idea {} me",
        "stances": ("appalls", "bothers", "puzzles", "pleases", "delights"),
        "open": ", while your reasons {} shift my thinking.",
        "opens": ("never will", "hardly", "might", "probably will", "surely will"),
    },
)


def _phrases(key: str, frame: str | None = None) -> dict[str, int]:
    """Every wording's phrase for `key` (inside its `frame`, when given) -> its level."""
    return {
        (w[frame].format(p) if frame else p).lower(): lv for w in WORDINGS for lv, p in zip(LEVELS, w[key], strict=True)
    }


def _pattern(phrases: dict[str, int]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True)), re.I)


AGREES, STANCES = _phrases("agree"), _phrases("stances", "stance")
AGREE_RE, STANCE_RE = _pattern(AGREES), _pattern(STANCES)

# A judge's reading of a conversation in other words (its calibration examples): agreement cues, the longest
# match first, each with the level it signals; a window without any is scored at random.
CUES = {
    "could not agree more": 5,
    "absolutely": 5,
    "exactly": 5,
    "definitely": 5,
    "completely agree": 5,
    "mostly agree": 4,
    "fair point": 4,
    "that is fair": 4,
    "i agree": 4,
    "it depends": 3,
    "both sides": 3,
    "pros and cons": 3,
    "neither": 3,
    "either way": 3,
    "disagree": 2,
    "differently": 2,
    "not sure about that": 2,
    "completely disagree": 1,
    "nonsense": 1,
    "simply wrong": 1,
    "wishful thinking": 1,
    "will not change my mind": 1,
}
CUE_RE = re.compile(r"\b(" + "|".join(re.escape(c) for c in sorted(CUES, key=len, reverse=True)) + r")\b", re.I)
LINE = re.compile(r"^Agent (\d+): (.*)$", re.M)  # dialogue.AGENT_LINE as the judge is shown it


@functools.lru_cache(maxsize=1)
def materials() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The study's prompts and topics (coherence/ of its declared materials: socsim.planted.study_data): what the
    model knows of the questions it is asked."""
    found = study_data("coherence", "prompts.yaml", "topics.yaml")
    return (found[0], found[1]["topics"]) if found else ({}, [])


@functools.lru_cache(maxsize=1)
def persona_pattern() -> re.Pattern[str] | None:
    """The persona sentence (prompts.yaml `persona`) with every field a wildcard."""
    prompts, _ = materials()
    if "persona" not in prompts:
        return None
    parts = re.split(r"\{\w+\}", " ".join(str(prompts["persona"]).split()))
    return re.compile(r"(?:.+?)".join(re.escape(p) for p in parts))


def _uniform(*texts: str) -> float:
    """A number in [0, 1) fixed by the texts (a person's idiosyncrasy, the same whenever it is asked)."""
    digest = hashlib.sha256("\x1f".join(texts).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


def persona(system: str) -> str | None:
    pattern = persona_pattern()
    found = pattern.search(" ".join(system.split())) if pattern else None
    return found.group(0) if found else None


def topic_of(text: str, key: str) -> dict[str, Any] | None:
    """The topic whose `key` (statement or question) the text quotes."""
    low = text.lower()
    return next((t for t in materials()[1] if str(t[key]).lower() in low), None)


def stance(system: str, topic: dict[str, Any] | None) -> int | None:
    """pi: the background's own leaning on the topic, moved by the bias statement of the system prompt."""
    who = persona(system)
    if who is None or topic is None:
        return None
    level = 1 + math.floor(5 * _uniform(who, str(topic["statement"])))
    for b, sides in (topic.get("bias") or {}).items():
        for side, text in sides.items():
            if str(text) in system:
                level += BIAS_SHIFT[int(b)] * (1 if side == "favor" else -1)
    return min(5, max(1, level))


def openness(system: str) -> float | None:
    """theta: a trait of the background (the persona sentence alone)."""
    who = persona(system)
    return None if who is None else 0.05 + 0.9 * _uniform(who, "openness")


def open_level(theta: float) -> int:
    return min(5, 1 + math.floor(5 * theta))


def agreement(own: int, partner: int, theta: float, noise: float) -> int:
    """The agreement an agent states with a partner who stated `partner` (the module's generative model)."""
    x = (
        AGREE_BASE
        + EFFECTS["agreement_per_gap_point"] * abs(own - partner)
        + EFFECTS["agreement_per_openness"] * (theta - 0.5)
        + noise
    )
    return min(5, max(1, math.floor(x + 0.5)))


def statement(k: int, stance_level: int, open_lv: int, agree_level: int | None) -> str:
    """An agent's k-th statement (0-based) in the wording k mod 5: agreement first (so that a short
    max_tokens keeps it), then its stance and its openness."""
    w = WORDINGS[k % len(WORDINGS)]
    head = f"{w['agree'][agree_level - 1]}. " if agree_level is not None else ""
    return f"{head}{w['stance'].format(w['stances'][stance_level - 1])}{w['open'].format(w['opens'][open_lv - 1])}"


def _last_level(pattern: re.Pattern[str], levels: dict[str, int], text: str) -> int | None:
    found = pattern.findall(text)
    return levels[found[-1].lower()] if found else None


def elicit(ask: Ask) -> Any:
    """The preference (1-5) or an openness item's answer (Yes / No), or None when the request is not one."""
    prompts, _ = materials()
    system = ask.system
    if ask.int_range == (1, 5) and str(prompts.get("preference_instruction", "")).strip() in system:
        pi = stance(system, topic_of(ask.last, "statement"))
        if not ask.planted or pi is None:
            return int(ask.pick(LEVELS))
        off = ask.rng.random() < PREF_NOISE
        return min(5, max(1, pi + int(ask.pick([-1, 1])))) if off else pi
    if ask.choices == ["Yes", "No"] and str(prompts.get("openness_instruction", "")).strip() in system:
        theta = openness(system)
        if not ask.planted or theta is None:
            return str(ask.pick(["Yes", "No"]))
        items = [str(i["text"]) for i in prompts.get("openness_items", [])]
        if ask.last.strip() not in items:
            return str(ask.pick(["Yes", "No"]))
        i = items.index(ask.last.strip())
        # a logistic item response: item i's threshold b_i spread evenly over 0.1..0.9, so O counts the
        # thresholds below theta (Yes: more open; on a reverse-keyed item Yes means less open)
        b = 0.1 + 0.8 * i / max(1, len(items) - 1)
        yes = 1 / (1 + math.exp(-ITEM_SLOPE * (theta - b)))
        if prompts["openness_items"][i]["reverse"]:
            yes = 1 - yes
        return "Yes" if ask.rng.random() < yes else "No"
    return None


def speak(ask: Ask) -> str | None:
    """The agent's next statement in a conversation, or None when the request is not one."""
    prompts, _ = materials()
    if ask.schema is not None or str(prompts.get("conversation_instruction", "x")).strip() not in ask.system:
        return None
    history = [m for m in ask.messages if m.get("role") != "system"]
    topic = topic_of(str(history[0].get("content") or ""), "question") if history else None
    own = sum(1 for m in history[1:] if m.get("role") == "assistant")  # the opening question is the topic's
    heard = [str(m.get("content") or "") for m in history if m.get("role") == "user"]
    partner = next((lv for t in reversed(heard) if (lv := _last_level(STANCE_RE, STANCES, t)) is not None), None)
    pi, theta = stance(ask.system, topic), openness(ask.system)
    if not ask.planted or pi is None or theta is None:
        agree = None if partner is None else int(ask.pick(LEVELS))
        return statement(own, int(ask.pick(LEVELS)), int(ask.pick(LEVELS)), agree)
    agree = None if partner is None else agreement(pi, partner, theta, float(ask.rng.normal(0, NOISE_SD)))
    return statement(own, pi, open_level(theta), agree)


def judge(ask: Ask) -> int | None:
    """The judge's agreement score (1-5), or None when the request is not the study's judge."""
    prompts, _ = materials()
    if ask.int_range != (1, 5) or str(prompts.get("judge", "x")).strip() not in ask.system:
        return None
    last: dict[str, int] = {}
    cues: list[int] = []
    for speaker, text in LINE.findall(ask.last):
        level = _last_level(AGREE_RE, AGREES, text)
        if level is not None:
            last[speaker] = level
        cues += [CUES[c.lower()] for c in CUE_RE.findall(text)]
    read = list(last.values()) or cues
    if not read:
        return int(ask.pick(LEVELS))
    mean = sum(read) / len(read)
    low = math.floor(mean)
    return min(5, max(1, low + 1 if mean - low > 0.5 or (mean - low == 0.5 and ask.rng.random() < 0.5) else low))


def answer(ask: Ask) -> Any:
    """This study's answer to `ask`, or None when the request is not this study's."""
    for part in (elicit, judge, speak):
        value = part(ask)
        if value is not None:
            return value
    return None
