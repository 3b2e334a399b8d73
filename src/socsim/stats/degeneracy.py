"""Degeneracy flags: say when an LLM's answers carry no information for a test.

A table or test that depends on a flagged input prints ``degenerate input: <why>`` in place of
pass/fail, stars or a coefficient, and the study's ``summary.json`` lists every flag. The rules:

- one value: a single value makes up >= ``DOMINANCE`` (90 %) of the answers (preferences, judge
  scores, toxicity ratings);
- near-constant: the variance of a numeric input is (numerically) zero;
- miscalibrated judge: a judge that scores its own calibration examples (whose scores the prompt
  states) with a mean absolute error above ``CALIBRATION_MAE`` or with one value for examples that
  differ.

Too few units is not degeneracy: a test on fewer units than it needs is inconclusive with its n
("inconclusive (n = 2 discussions, needs 3)", socsim.stats.verdict.too_few and MIN_UNITS).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DOMINANCE = 0.9
CALIBRATION_MAE = 1.0
VARIANCE_TOL = 1e-12


@dataclass(frozen=True)
class Flag:
    scope: str  # which input, e.g. "facilitation toxicity ratings" or "coherence preferences (smollm2)"
    reason: str  # why it carries no information, in words

    @property
    def message(self) -> str:
        return f"degenerate input: {self.scope}: {self.reason}"

    def as_dict(self) -> dict[str, str]:
        return {"scope": self.scope, "reason": self.reason, "message": self.message}


def _finite(values: Iterable[float | None]) -> npt.NDArray[np.float64]:
    a = np.asarray([v for v in values if v is not None], dtype=float)
    finite: npt.NDArray[np.float64] = a[np.isfinite(a)]
    return finite


def one_value(values: Iterable[float | None], scope: str, threshold: float = DOMINANCE) -> Flag | None:
    """Flag when one value makes up at least `threshold` of the (finite) answers, or there are none."""
    a = _finite(values)
    if a.size == 0:
        return Flag(scope, "no usable answers")
    uniq, counts = np.unique(a, return_counts=True)
    top = int(counts.argmax())
    share = counts[top] / a.size
    if share >= threshold:
        v = uniq[top]
        shown = int(v) if float(v).is_integer() else round(float(v), 4)
        return Flag(scope, f"{share:.0%} of {a.size} answers are {shown} (threshold {threshold:.0%})")
    return None


def near_constant(values: Iterable[float | None], scope: str, tol: float = VARIANCE_TOL) -> Flag | None:
    """Flag when a numeric input has zero (or numerically zero) variance."""
    a = _finite(values)
    if a.size == 0:
        return Flag(scope, "no usable values")
    if a.size < 2 or float(np.var(a)) <= tol:
        return Flag(scope, f"constant: all {a.size} values are {a[0]:.4g}")
    return None


def miscalibrated(
    reference: Iterable[float], answered: Iterable[float | None], scope: str, max_mae: float = CALIBRATION_MAE
) -> Flag | None:
    """Flag a judge that misjudges its own calibration examples (reference scores known)."""
    pairs = [(float(r), float(a)) for r, a in zip(reference, answered) if a is not None and np.isfinite(a)]
    if not pairs:
        return Flag(scope, "no calibration example answered")
    ref, ans = np.array(pairs).T
    shown = ", ".join(str(int(x)) if float(x).is_integer() else f"{x:g}" for x in ans)
    expected = ", ".join(f"{x:g}" for x in ref)
    if len(np.unique(ref)) > 1 and len(np.unique(ans)) == 1:
        return Flag(scope, f"scores its calibration examples {shown} (expected {expected})")
    mae = float(np.abs(ref - ans).mean())
    if mae > max_mae:
        return Flag(
            scope, f"scores its calibration examples {shown} (expected {expected}; mean error {mae:.2f} > {max_mae:g})"
        )
    return None


def collect(*flags: Flag | None | Iterable[Flag | None]) -> list[Flag]:
    """The flags that were raised (None dropped), in order, without duplicates."""
    out: list[Flag] = []
    for f in flags:
        items = [f] if f is None or isinstance(f, Flag) else list(f)
        for item in items:
            if item is not None and item not in out:
                out.append(item)
    return out


def verdict(flags: list[Flag], value: str) -> str:
    """What a table cell shows: the value, or the first flag's message when the input is degenerate."""
    return flags[0].message if flags else value


def as_json(flags: list[Flag]) -> list[dict[str, str]]:
    return [f.as_dict() for f in flags]
