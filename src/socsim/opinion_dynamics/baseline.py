"""Numeric agent-based baselines for the opinion dynamics study (spec §7, feature 1).

They run on the same N agents, T steps, (writer, reviewer) pair schedule (`network.schedule`) and 5-point opinion
scale -2..2 as the LLM simulation, so bias B and diversity D of the LLM runs can be put side by side with classical
opinion-dynamics models driven by the very same interactions.

Only the reviewer updates. In the LLM study the writer tweets and the reviewer reads the tweet and reports its
belief; only the reviewer's report is classified (o_r^t), and every other agent, the writer included, keeps
o^{t-1}. A baseline that also moved the writer would measure a different process, so the influence here is
one-sided, writer -> reviewer.

Rules (x is each agent's continuous internal opinion, starting at the assigned integer value; mu in (0, 1]):

* ``deffuant``: bounded confidence (Deffuant, Neau, Amblard & Weisbuch 2000), one-sided. The reviewer moves
  towards the writer only if their opinions are close enough: if |x_w - x_r| <= epsilon then
  x_r <- x_r + mu * (x_w - x_r); otherwise nothing changes. Opinions further apart than epsilon do not interact,
  which is what lets clusters and polarisation persist.
* ``degroot``: DeGroot-style averaging (DeGroot 1974) with no confidence bound. The reviewer always takes the
  weighted average x_r <- (1 - mu) * x_r + mu * x_w, so on a connected schedule opinions drift to consensus.

The internal state stays continuous (small steps accumulate); what is reported, like the LLM's classified
opinion, is the state rounded to the nearest point of the scale, halves away from zero (0.5 -> 1, -0.5 -> -1,
1.5 -> 2), clipped to -2..2.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import cast

import numpy as np

KINDS = ("deffuant", "degroot")
SCALE_MIN, SCALE_MAX = -2, 2


def _int(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def report(x: float) -> int:
    """A continuous opinion as reported on the scale: nearest integer, halves away from zero, clipped to -2..2."""
    value = math.copysign(math.floor(abs(x) + 0.5), x)
    return int(min(SCALE_MAX, max(SCALE_MIN, value)))


def _validate(
    kind: str, initial: Sequence[int], pairs: Sequence[tuple[int, int]], mu: float, epsilon: float | None
) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown baseline kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not _real(mu) or not 0 < mu <= 1:
        raise ValueError(f"mu must be a number in (0, 1] (got {mu!r})")
    if kind == "deffuant":
        if epsilon is None or not _real(epsilon) or epsilon <= 0:
            raise ValueError(f"deffuant needs a confidence bound epsilon > 0 (got {epsilon!r})")
    elif epsilon is not None:
        raise ValueError(f"epsilon applies only to deffuant; degroot has no confidence bound (got {epsilon!r})")
    n = len(initial)
    if n < 2:
        raise ValueError(f"initial must hold the opinions of at least 2 agents (got {n})")
    for i, o in enumerate(initial):
        if not _int(o) or not SCALE_MIN <= o <= SCALE_MAX:
            raise ValueError(f"initial opinion of agent {i} must be an integer in {SCALE_MIN}..{SCALE_MAX} (got {o!r})")
    for t, pair in enumerate(pairs, start=1):
        try:
            w, r = pair
        except (TypeError, ValueError):
            raise ValueError(f"pair at step {t} is not (writer, reviewer): {pair!r}") from None
        if not (_int(w) and _int(r) and 0 <= w < n and 0 <= r < n):
            raise ValueError(f"pair at step {t} {pair!r} has an agent index outside 0..{n - 1}")
        if w == r:
            raise ValueError(f"pair at step {t} {pair!r} has writer == reviewer")


def run(
    kind: str, initial: list[int], pairs: list[tuple[int, int]], mu: float, epsilon: float | None = None
) -> np.ndarray:
    """The (T+1, N) matrix of reported opinions; row 0 is `initial`, row t the opinions after step t.

    At step t with pair (w, r) only reviewer r updates (see the module docstring for the rules).
    """
    _validate(kind, initial, pairs, mu, epsilon)
    x = [float(o) for o in initial]
    out = np.empty((len(pairs) + 1, len(x)), dtype=np.int64)
    out[0] = [int(o) for o in initial]
    reported = list(out[0])
    for t, (w, r) in enumerate(pairs, start=1):
        diff = x[w] - x[r]
        if kind == "degroot":
            x[r] = (1.0 - mu) * x[r] + mu * x[w]
        elif abs(diff) <= cast(float, epsilon):  # _validate: deffuant has a float epsilon
            x[r] = x[r] + mu * diff
        reported[r] = report(x[r])
        out[t] = reported
    return out
