"""Replay: a recorded run's call caches answer in place of the model, and a request they do not hold stops
the stage (ReplayMissError) instead of calling the model.

`SOCSIM_REPLAY=<a call cache file, or a folder of them (a run's .socsim-cache)>` in the environment of a run
(every stage of it, Snakemake's and DVC's jobs, SLURM jobs: they inherit it) wraps every model's backend at
construction (socsim.models.client). The answers are the recording's own, looked up by the same key the
recording run stored them under (model identity + request), so a replay of the same params on the same code
writes the recorded run's artifacts byte for byte; only metrics differ (no prompt evaluation or timing is
replayed, and `replayed_from` names the recording). What it is for: testing what runs the model (the
executor, sharding, resumption, DVC) on a run recorded once, without paying the model again; re-running a
colleague's run from their call caches with the guarantee that nothing was answered anew.

`SOCSIM_REPLAY_DELAY=<seconds>` makes each replayed answer take that long (default 0), so that an
interruption can be tested at a model's pace."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from socsim.llm.cache import CallCache, request_key
from socsim.llm.errors import LLMError, ReplayMissError
from socsim.llm.types import Capabilities, Completion, Request

ENV = "SOCSIM_REPLAY"
DELAY_ENV = "SOCSIM_REPLAY_DELAY"


def recording() -> Path | None:
    """The recording a run replays (SOCSIM_REPLAY), or None: the model answers."""
    where = os.environ.get(ENV, "").strip()
    return Path(where) if where else None


def recorded_caches(where: Path) -> list[Path]:
    """The call cache files of a recording: the file itself, or every *.sqlite under the folder."""
    if where.is_file():
        return [where]
    files = sorted(where.rglob("*.sqlite")) if where.is_dir() else []
    if not files:
        raise ReplayMissError(
            f"{ENV}={where}: no call cache there (a call cache file, or a folder of them such as a run's "
            ".socsim-cache); unset it to let the model answer"
        )
    return files


class ReplayBackend(Capabilities):
    """Answers from a recording, under the identity of the backend it stands in for (`inner`, never called:
    an embedded model is not loaded; a server model's server is only asked who it serves, as a run asks)."""

    def __init__(self, inner: Any, where: Path, delay: float | None = None) -> None:
        self.inner = inner
        self.where = Path(where)
        self.replayed_from: str | None = str(self.where)  # where the answers came from (in the stage's metrics)
        self.delay = float(os.environ.get(DELAY_ENV, 0) or 0) if delay is None else delay
        self.retries = 0
        self._caches: list[CallCache] | None = None
        self._identity: dict[str, Any] | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = self.inner.identity()  # an embedded model's: from its file, without loading it
        return self._identity

    async def probe(self) -> dict[str, Any]:
        if self._caches is None:
            self._caches = [CallCache(p) for p in recorded_caches(self.where)]
        try:
            return self.identity()
        except LLMError:  # a server model: its identity is what its server says it serves
            self._identity = await self.inner.probe()
            return self._identity

    async def complete(self, request: Request) -> Completion:
        if self._caches is None:
            await self.probe()
        assert self._caches is not None
        key = request_key(self.identity(), request)
        for cache in self._caches:
            found = cache.get(key)
            if found is not None:
                if self.delay:
                    await asyncio.sleep(self.delay)
                return found
        raise ReplayMissError(
            f"{ENV}={self.where}: the recording holds no answer of model {self.identity().get('model_id')!r} to "
            f"this request ({request.label or 'seed ' + str(request.seed)}; key {key[:16]}) in its "
            f"{len(self._caches)} call cache file(s). A replay never calls the model: record the run again on "
            f"these params and code, or unset {ENV}"
        )

    async def aclose(self) -> None:
        """Close the recording (a later call opens it again) and whatever the stood-in backend opened."""
        for cache in self._caches or []:
            cache.close()
        self._caches = None
        await self.inner.aclose()
