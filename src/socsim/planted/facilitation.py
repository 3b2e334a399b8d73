"""The planted model in the facilitation study (paper 000): its declared effects and how it writes and reads them.

The generative model. A user's comment has a latent toxicity level on the annotators' scale 1-5. The user
reads everything from its prompt (socsim.facilitation.simulate.messages):

- its role: the role's special instructions in its system prompt (data/facilitation/roles.yaml; none,
  as in the no-roles ablation: a normal user);
- the turn: the users carry a counter in what they write ("Post k:"); a user reads the highest post
  number in the comments it sees and writes the next (none seen: the seed opinion is user comment 1, so
  it writes post 2): k is the analysis' time (user_index) exactly;
- the facilitation: a facilitator's intervention among the comments it sees, worded by its strategy
  (INTERVENTIONS), so the user can tell which strategy moderates it (no intervention in view: none).

It writes the level
    round(BASE + ROLE[role] + EFFECTS["rise_per_user_turn"] (k - 2) - EFFECTS["calm.<strategy>"] + e),
clipped to 1..5, e ~ Normal(0, NOISE_SD), the calm counted only while an intervention is in view: toxicity
rises with the turn and is lower under every strategy with a facilitator than under No Moderator. No
interaction is planted (the rise is the same under every strategy); the facilitator does not follow the
seed opinion, so a discussion's first user comment is never calmed. A comment also states an
argument-quality level drawn uniformly from 1..5 (no effect planted).

The facilitator reads its strategy from its system prompt (the strategy's text of
data/facilitation/strategies.yaml) and, as its prompt allows, intervenes when it is needed: with
probability P_INTERVENE["toxic"] after a user comment of level 2 or more, P_INTERVENE["civil"] after a
civil one (level 1), else it answers an empty message (silence). An intervention addresses the last user
by name and adds a sentence of a bank, so that it is not an echo of an earlier one (what the study counts
as no intervention).

The null twin writes the same texts (the counter too) with every level drawn from Normal(NULL_MEAN,
NOISE_NULL_SD) rounded and clipped, independently of its prompt, and its facilitator intervenes with
probability NULL_INTERVENE whatever it read.

As the study's annotator it reads back faithfully: the toxicity and argument quality a comment's words
state (for a text that states none, e.g. a facilitator's intervention: levels drawn at random).
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

from socsim.planted import Ask, study_data

EFFECTS: dict[str, float] = {
    # Toxicity levels a user's comment gains per user comment of its discussion (every condition alike).
    "rise_per_user_turn": 0.25,
    # Toxicity levels a user's comment loses while an intervention of the strategy's facilitator is in view.
    "calm.No Instructions": 1.2,
    "calm.Rules Only": 1.2,
    "calm.Moderation Game": 1.2,
    "calm.Regulation Room": 1.0,
    "calm.Constructive Communications": 1.0,
}
# The claims the control design (params.control.yaml: 8 discussions per strategy and model, 6 user turns)
# has power for, by finding id (socsim.facilitation.findings; the pooled finding and the planted model's own).
POWERED: dict[str, str] = {
    "fac.toxicity_lowered": "calm 1.0-1.2 levels under each strategy, 8 discussions a side",
    "fac.toxicity_differs": "calm 1.0-1.2 levels vs none, 8 discussions per strategy",
}
PLANTED: dict[str, str] = {}  # every planted effect is powered (any other finding: not planted)
BASE = 2.2  # a normal user's toxicity at its discussion's first generated comment (post 2)
ROLE = {"normal_user": 0.0, "troll": 1.0, "community_veteran": -0.5}  # the role's offset (not a claim)
NOISE_SD = 0.6  # a comment's noise before rounding (not an effect)
P_INTERVENE = {"toxic": 0.9, "civil": 0.2}  # the facilitator's chance to intervene, by the last comment
NULL_MEAN, NOISE_NULL_SD, NULL_INTERVENE = 2.5, 1.0, 0.7  # the null twin's levels and interventions

LEVELS = (1, 2, 3, 4, 5)
# What a user writes: its post number, then its toxicity, then its argument (each level's words unique).
TOXICITY = {
    1: "I see your point, and I respectfully disagree.",
    2: "Honestly, that sounds a bit naive.",
    3: "That is a pretty dumb take.",
    4: "You clearly have no clue what you are talking about.",
    5: "Shut up, you pathetic idiot.",
}
ARGUMENT = {
    1: "Whatever.",
    2: "It just feels wrong to me.",
    3: "The costs look higher than the benefits.",
    4: "The numbers on costs and benefits point the other way, as the housing data show.",
    5: "Weighing the evidence on both sides, the data point the other way; what would change your mind?",
}
POST = re.compile(r"\bPost (\d+):")
COMMENT = "Post {k}: {toxicity} {argument}"
# What a facilitator writes: the last user's name, its strategy's words (a strategy of strategies.yaml not
# named here: GENERIC, no calm), then a sentence of a bank (so that its interventions are not echoes of each other).
INTERVENTION = "@{name}, {words} {follow_up}"
INTERVENTIONS = {
    "No Instructions": "Please keep the discussion civil, everyone.",
    "Rules Only": "A reminder of the rules: no personal attacks and no hate speech.",
    "Regulation Room": "Thank you for taking part. Could you explain the reasons behind your view?",
    "Constructive Communications": "I hear real concerns on both sides; where is your common ground?",
    "Moderation Game": "Let us stay on topic and look for common ground instead of trading insults.",
}
GENERIC = "Let us get back to the topic, please."
FOLLOW_UPS = (
    "Everyone is welcome here.",
    "Take a breath before you reply.",
    "Others may read this thread later.",
    "We can disagree and still learn something.",
    "Stick to the arguments, not the people.",
    "Short replies are fine too.",
)
FACILITATOR = "moderator"  # socsim.facilitation.simulate.FACILITATOR_NAME: its comments' '@moderator:' label

USER_CUE = re.compile(r"Write your next comment as @\S+\.\s*$")
FACILITATOR_CUE = re.compile(r"Write your intervention as @\S+, or an empty message to stay silent\.\s*$")
SEEN = re.compile(r"Latest comments:\n(.*?)\n\n(?=Write your )", re.S)  # the comments a speaker sees
RATED = re.compile(r"Comment to rate:\n(.*?)\n\n", re.S)  # the comment an annotator rates
RATED_KEYS = {"toxicity", "argument_quality"}  # socsim.facilitation.annotate.ANSWER


def _data(name: str) -> dict[str, Any]:
    """facilitation/<name> of its declared materials (socsim.planted.study_data); {} where they do not hold it."""
    found = study_data("facilitation", name)
    return (found[0] or {}) if found else {}


@functools.lru_cache(maxsize=1)
def strategy_texts() -> dict[str, str]:
    """Each facilitated strategy's instructions as a facilitator's prompt quotes them -> its name."""
    return {" ".join(str(t).split()): s for s, t in (_data("strategies.yaml").get("strategies") or {}).items() if t}


@functools.lru_cache(maxsize=1)
def role_texts() -> dict[str, str]:
    """Each role's special instructions as a user's prompt quotes them -> the role."""
    return {" ".join(str(t).split()): r for r, t in _data("roles.yaml").items() if isinstance(t, str)}


def _found(table: dict[str, str], text: str) -> str | None:
    flat = " ".join(text.split())
    hits = [k for k in table if k in flat]
    return table[max(hits, key=len)] if hits else None


def strategy(system: str) -> str | None:
    """The facilitator's strategy its system prompt names (None: not one it knows)."""
    return _found(strategy_texts(), system)


def role(system: str) -> str:
    """The user's role its system prompt gives (no role's instructions: a normal user)."""
    return _found(role_texts(), system) or "normal_user"


def _level(table: dict[int, str], text: str) -> int | None:
    found = [lv for lv, words in table.items() if words in text]
    return found[-1] if found else None


def toxicity(text: str) -> int | None:
    """The toxicity level a comment's words state (None: it states none)."""
    return _level(TOXICITY, text)


def seen(ask: Ask) -> list[tuple[str, str]]:
    """(speaker, text) of each comment the speaker sees, in order."""
    m = SEEN.search(ask.last)
    lines = m.group(1).splitlines() if m else []
    return [(s.strip(), t.strip()) for s, _, t in (ln.removeprefix("@").partition(":") for ln in lines)]


def moderated_by(comments: list[tuple[str, str]]) -> str | None:
    """The strategy whose facilitator's intervention is in view (the latest one; None: none in view)."""
    for speaker, text in reversed(comments):
        if speaker == FACILITATOR:
            return next((s for s, words in INTERVENTIONS.items() if words in text), "")
    return None


def next_post(comments: list[tuple[str, str]]) -> int:
    """The post number a user writes: one past the highest it sees (none: 2, the seed being post 1)."""
    posts = [int(n) for _, text in comments for n in POST.findall(text)]
    return max(posts, default=1) + 1


def clip_round(x: float) -> int:
    return int(min(5, max(1, math.floor(x + 0.5))))


def user(ask: Ask) -> str:
    """A user's comment: its post number, its toxicity (the module's generative model) and its argument."""
    comments = seen(ask)
    k = next_post(comments)
    if ask.planted:
        by = moderated_by(comments)
        calm = EFFECTS.get(f"calm.{by}", 0.0) if by else 0.0
        latent = BASE + ROLE[role(ask.system)] + EFFECTS["rise_per_user_turn"] * (k - 2) - calm
        level = clip_round(latent + ask.rng.normal(0, NOISE_SD))
    else:
        level = clip_round(ask.rng.normal(NULL_MEAN, NOISE_NULL_SD))
    return COMMENT.format(k=k, toxicity=TOXICITY[level], argument=ARGUMENT[int(ask.pick(LEVELS))])


def facilitator(ask: Ask) -> str:
    """The facilitator's intervention in its strategy's words, or an empty message (silence)."""
    name, text = next(((s, t) for s, t in reversed(seen(ask)) if s != FACILITATOR), ("everyone", ""))
    p = P_INTERVENE["civil" if toxicity(text) == 1 else "toxic"] if ask.planted else NULL_INTERVENE
    if ask.rng.random() >= p:
        return ""
    words = INTERVENTIONS.get(strategy(ask.system) or "", GENERIC)
    return INTERVENTION.format(name=name, words=words, follow_up=ask.pick(FOLLOW_UPS))


def annotator(ask: Ask) -> dict[str, int] | None:
    """The annotator's ratings of the comment it is shown, or None when the request is not an annotation."""
    props = (ask.schema or {}).get("properties") or {}
    shown = RATED.search(ask.last)
    if set(props) != RATED_KEYS or shown is None:
        return None
    body = shown.group(1)
    tox, arg = toxicity(body), _level(ARGUMENT, body)
    return {
        "toxicity": tox if tox is not None else int(ask.pick(LEVELS)),
        "argument_quality": arg if arg is not None else int(ask.pick(LEVELS)),
    }


def answer(ask: Ask) -> Any:
    """This study's answer to `ask`, or None when the request is not this study's."""
    if ask.schema is not None:
        return annotator(ask)
    if FACILITATOR_CUE.search(ask.last):
        return facilitator(ask)
    if USER_CUE.search(ask.last) and "Discussion topic:" in ask.last:
        return user(ask)
    return None
