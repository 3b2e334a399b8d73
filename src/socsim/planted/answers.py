"""The planted model's answer to a request: the first study policy that claims it, else a random value of its
constraint (socsim.planted)."""

from __future__ import annotations

from socsim.planted import Ask, Policy, coherence, debate, encode, facilitation, fill, opinion_dynamics

STUDIES = {"facilitation": facilitation, "coherence": coherence, "opinion_dynamics": opinion_dynamics, "debate": debate}
POLICIES: tuple[Policy, ...] = tuple(m.answer for m in STUDIES.values())
# (study, the claim's first words) -> why the control design (params.control.yaml) has power for it: the planted
# findings that must hold (benchmarks/planted_power.py measures how often they do).
POWERED: dict[tuple[str, str], str] = {
    (study, claim): why for study, m in STUDIES.items() for claim, why in getattr(m, "POWERED", {}).items()
}


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
