"""The planted model's answer to a request: the first study policy that claims it, else a random value of its
constraint (socsim.planted)."""

from __future__ import annotations

from socsim.planted import Ask, Policy, coherence, debate, encode, facilitation, fill, opinion_dynamics

STUDIES = {"facilitation": facilitation, "coherence": coherence, "opinion_dynamics": opinion_dynamics, "debate": debate}
POLICIES: tuple[Policy, ...] = tuple(m.answer for m in STUDIES.values())
# (study, finding id: socsim.io.findings) -> why the control design (params.control.yaml) has power for it: the
# planted findings that must hold (benchmarks/planted_power.py measures how often they do).
POWERED: dict[tuple[str, str], str] = {
    (study, fid): why for study, m in STUDIES.items() for fid, why in getattr(m, "POWERED", {}).items()
}
# (study, finding id) -> why: planted, but the control design has no power for it (the scorecard's mark).
PLANTED: dict[tuple[str, str], str] = {
    (study, fid): why for study, m in STUDIES.items() for fid, why in getattr(m, "PLANTED", {}).items()
}
POWERED_MARK, PLANTED_MARK, NOT_PLANTED_MARK = "planted, powered", "planted, not powered here", "not planted"


def mark(study: str, finding_id: str, null: bool) -> str:
    """What a control's cell can speak to: a finding planted and powered by the control design, planted but not
    powered here, or not planted (the null twin plants nothing)."""
    if null:
        return NOT_PLANTED_MARK
    if (study, finding_id) in POWERED:
        return POWERED_MARK
    return PLANTED_MARK if (study, finding_id) in PLANTED else NOT_PLANTED_MARK


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
