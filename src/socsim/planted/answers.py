"""The planted model's answer to a request: the first study policy that claims it, else a random value of its
constraint (socsim.planted)."""

from __future__ import annotations

from socsim.planted import Ask, Policy, coherence, debate, encode, facilitation, fill, opinion_dynamics

POLICIES: tuple[Policy, ...] = (facilitation.answer, coherence.answer, opinion_dynamics.answer, debate.answer)


def respond(ask: Ask) -> str:
    """The planted model's answer: the first study policy that claims the request, else a value drawn at
    random for its constraint (free text: a neutral sentence)."""
    for policy in POLICIES:
        value = policy(ask)
        if value is not None:
            return encode(ask, value)
    if ask.schema is not None:
        return encode(ask, fill(ask, ask.wrapped if ask.wrapped is not None else ask.schema))
    return "I see both sides of this."
