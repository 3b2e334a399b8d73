"""Judging and annotation over finished transcripts: a target turn, the window of history it is
judged with, an output constraint and a seed derived from the run seed and ids make one Request;
the answer becomes raw text, a parse flag and the parsed fields."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from socsim.llm import Constraint, Request, Response, Sampling
from socsim.seeds import derive_seed

T = TypeVar("T", bound=Mapping[str, Any])  # a study's row (or the engine's Turn)


def transcripts(rows: list[T], id_key: str) -> dict[str, list[T]]:
    """A study's turn rows as finished transcripts: episode id (sorted) -> its rows by `turn`."""
    out: dict[str, list[T]] = {}
    for r in sorted(rows, key=lambda r: (r[id_key], r["turn"])):
        out.setdefault(r[id_key], []).append(r)
    return out


def targets(
    turns: list[T], window: Callable[[list[T], T], list[T]], keep: Callable[[T], bool] = lambda t: True
) -> Iterator[tuple[T, list[T]]]:
    """(target, window(turns before it, target)) for every turn that `keep` selects, in order."""
    for i, t in enumerate(turns):
        if keep(t):
            yield t, window(turns[:i], t)


def request(system: str, user: str, constraint: Constraint, sampling: Sampling, run_seed: int, *ids: object) -> Request:
    return Request.chat(
        [{"role": "system", "content": system}, {"role": "user", "content": user}],
        derive_seed(run_seed, *ids),
        sampling,
        constraint,
        label=" ".join(map(str, ids)),
    )


def answer(resp: Response, **fields: str | None) -> dict[str, Any]:
    """raw_answer, parse_ok, and each field: the parsed value's key (None: the whole value); every
    field None when the answer did not parse."""
    return {
        **{
            name: (resp.value if key is None else resp.value[key]) if resp.parse_ok else None
            for name, key in fields.items()
        },
        "parse_ok": resp.parse_ok,
        "raw_answer": resp.text,
    }
