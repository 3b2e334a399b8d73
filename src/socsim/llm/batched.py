"""NOT IN MAIN (wip/batched-engine): exact for short prompts only. benchmarks/batched_engine.py on
2026-11-24: 16 decoding-heavy requests (~40-token prompts) gave the same text 16/16 at parallel 2, 4
and 8 (1.04x, 1.33x, 1.60x); 16 prompt-heavy requests (~700-token prompts) gave the same text only
2/16 (0.82-0.97x). Likely cause: llama.cpp sizes the attention over the longest stream (n_kv), so a
sequence's kernels depend on its neighbours' lengths once contexts pass 256 cells. With one unified
KV cache instead of a stream per sequence, 17 of 40 short requests already differed.

Batched decoding on the embedded model: several chat completions decoded in one llama.cpp batch.

llama.cpp decodes a token for each of several sequences in one `llama_decode` faster than one at a
time (socsim.llm.limits.batched_decode and benchmarks/batched_decode.py measure it). BatchedEngine
runs up to `slots` requests at once on one context with a KV stream per sequence: a request's prompt
is read alone and whole (in n_batch pieces, as `Llama.create_chat_completion` reads it), then every
step decodes one token for each request in flight. Each request is what create_chat_completion would
do: the prompt from the model's own chat handler, the sampler chain of `Llama._init_sampler` seeded
with the request's seed, and the stop, length and UTF-8 rules of `Llama._create_completion`. So its
text is the one-at-a-time text, whatever it shared a batch with (tests/unit/llm/test_batched.py checks
it on the real model).

No prompt prefix is re-used. On llama.cpp's CPU kernels a prompt's logits depend on how it is split
between re-used cells and fresh evaluation (flash attention takes a tiled kernel for a batch of many
query rows and a row-by-row one for a few), so with a prefix cache a completion's text would depend on which
requests ran before it, that is on the schedule. EmbeddedBackend therefore refuses `parallel` > 1
together with its prefix cache.
"""

from __future__ import annotations

import contextlib
import ctypes
import queue
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp import Llama

# The keyword arguments of Llama.create_completion this engine implements with their meaning there;
# a chat handler that passes anything else set (logprobs, logit_bias, streaming...) is refused.
_SAMPLER_ARGS = (
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "repeat_penalty",
    "frequency_penalty",
    "presence_penalty",
    "tfs_z",
    "mirostat_mode",
    "mirostat_tau",
    "mirostat_eta",
)
_UNSUPPORTED = ("logprobs", "logits_processor", "logit_bias", "suffix")


class _Captured(Exception):
    pass


def prepared(llm: Llama, **chat: Any) -> dict[str, Any]:
    """The keyword arguments the model's chat handler passes to create_completion for this chat
    request (prompt tokens, stop strings, stopping criteria, grammar, sampling), without running it."""
    kwargs: dict[str, Any] = {}

    def capture(**kw: Any) -> Any:
        kwargs.update(kw)
        raise _Captured

    llm.create_completion = capture  # type: ignore[method-assign]  # an instance attribute shadows the method
    try:
        llm.create_chat_completion(**chat)
    except _Captured:
        pass
    finally:
        del llm.create_completion
    for key in _UNSUPPORTED:
        if kwargs.get(key) is not None:
            raise NotImplementedError(f"batched embedded completions do not support {key}")
    if kwargs.get("stream"):
        raise NotImplementedError("batched embedded completions do not stream")
    return kwargs


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class Finished:
    """One request's outcome, with the shape of create_chat_completion's answer that socsim reads."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_evaluated: int
    prompt_s: float
    generation_s: float


@dataclass
class _Seq:
    slot: int
    prompt: list[int]
    todo: list[int]  # prompt tokens still to evaluate
    sampler: Any
    stop: list[bytes]
    max_tokens: int
    criteria: Any
    future: Future[Finished]
    completion: list[int] = field(default_factory=list)
    pending: int | None = None  # a sampled token to evaluate next step
    multibyte: int = 0
    evaluated: int = 0  # prompt tokens evaluated for it (after the re-used prefix)
    prompt_s: float = 0.0
    generation_s: float = 0.0


class BatchedEngine:
    """Up to `slots` chat completions decoded together on `llm`'s model (one dedicated thread)."""

    def __init__(self, load: Callable[[], Llama], slots: int):
        self.slots = slots
        self._load = load
        self._queue: queue.Queue[tuple[dict[str, Any], Future[Finished]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    def submit(self, chat: dict[str, Any]) -> Future[Finished]:
        """Queue one request (create_chat_completion's keyword arguments); its future holds the outcome."""
        fut: Future[Finished] = Future()
        if self.error is not None:
            fut.set_exception(self.error)
            return fut
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="socsim-llama-batch", daemon=True)
                self._thread.start()
        self._queue.put((chat, fut))
        return fut

    def close(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    # ---- the loop (engine thread only) -------------------------------------------------------

    def _run(self) -> None:
        import llama_cpp as lc

        llm = self._load()
        params = llm.context_params  # the one-at-a-time context's settings, for more sequences
        cp = lc.llama_context_default_params()
        ctypes.memmove(ctypes.byref(cp), ctypes.byref(params), ctypes.sizeof(cp))
        cp.n_ctx, cp.n_seq_max, cp.kv_unified = params.n_ctx * self.slots, self.slots, False
        with contextlib.ExitStack() as stack:
            ctx = lc.llama_init_from_model(llm._model.model, cp)
            if not ctx:
                raise RuntimeError(f"llama.cpp could not create a context of {self.slots} sequences")
            stack.callback(lc.llama_free, ctx)
            batch = lc.llama_batch_init(cp.n_batch, 0, 1)
            stack.callback(lc.llama_batch_free, batch)
            loop = _Loop(llm, ctx, batch, cp.n_batch, self.slots, self._queue)
            try:
                loop.run()
            except BaseException as exc:  # nothing waits forever: every request in hand fails with it
                self.error = exc
                for fut in [q.future for q in loop.active] + [f for _, f in loop.waiting]:
                    if not fut.done():
                        fut.set_exception(exc)
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        item[1].set_exception(exc)
                raise


class _Loop:
    def __init__(self, llm: Llama, ctx: Any, batch: Any, n_batch: int, slots: int, q: Any):
        import llama_cpp as lc

        self.lc, self.llm, self.ctx, self.batch, self.n_batch = lc, llm, ctx, batch, n_batch
        self.mem = lc.llama_get_memory(ctx)
        self.queue: queue.Queue[Any] = q
        self.content: list[list[int]] = [[] for _ in range(slots)]  # the tokens in each slot's KV stream
        self.active: list[_Seq] = []
        self.waiting: list[tuple[dict[str, Any], Future[Finished]]] = []
        self.n_ctx = llm.n_ctx()
        self.closing = False

    def run(self) -> None:
        while not (self.closing and not self.active and not self.waiting):
            self._take(block=not self.active and not self.waiting)
            self._admit()
            if self.active:
                self._step()

    def _take(self, block: bool) -> None:
        while True:
            try:
                item = self.queue.get(block=block and not self.closing, timeout=None)
            except queue.Empty:
                return
            if item is None:
                self.closing = True
            else:
                self.waiting.append(item)
            block = False

    def _admit(self) -> None:
        free = [s for s in range(len(self.content)) if s not in {q.slot for q in self.active}]
        still: list[tuple[dict[str, Any], Future[Finished]]] = []
        for chat, fut in self.waiting:
            if not free:
                still.append((chat, fut))
                continue
            try:
                kw = prepared(self.llm, **chat)
                self.active.append(self._start(free.pop(0), list(kw["prompt"]), kw, fut))
            except Exception as exc:  # a bad request fails alone
                fut.set_exception(exc)
        self.waiting = still

    def _start(self, slot: int, prompt: list[int], kw: dict[str, Any], fut: Future[Finished]) -> _Seq:
        lc, llm = self.lc, self.llm
        if len(prompt) >= self.n_ctx:
            raise ValueError(f"Requested tokens ({len(prompt)}) exceed context window of {self.n_ctx}")
        max_tokens = kw.get("max_tokens")
        if max_tokens is None or max_tokens <= 0:
            max_tokens = self.n_ctx - len(prompt)
        max_tokens = max_tokens if max_tokens + len(prompt) < self.n_ctx else self.n_ctx - len(prompt)
        seed = kw.get("seed")
        llm.set_seed(seed if seed is not None else random.Random(llm._seed).randint(0, 2**32))
        sampler = llm._init_sampler(
            temp=kw.get("temperature", 0.8),
            grammar=kw.get("grammar"),
            **{k: kw[k] for k in _SAMPLER_ARGS if k in kw},
        )
        stop = kw.get("stop") or []
        stop = stop if isinstance(stop, list) else [stop]
        lc.llama_memory_seq_rm(self.mem, slot, -1, -1)
        self.content[slot] = []
        return _Seq(
            slot=slot,
            prompt=prompt,
            todo=list(prompt),
            sampler=sampler,
            stop=[s.encode("utf-8") for s in stop],
            max_tokens=max_tokens,
            criteria=kw.get("stopping_criteria"),
            future=fut,
        )

    def _step(self) -> None:
        lc, batch = self.lc, self.batch
        items: list[tuple[_Seq, int, bool]] = []  # (sequence, token, logits wanted)
        reading = [q for q in self.active if q.todo]
        if reading:  # a prompt is read alone, in one piece, as the one-at-a-time path reads it
            q = reading[0]
            chunk, q.todo = q.todo[: self.n_batch], q.todo[self.n_batch :]
            items = [(q, t, not q.todo and i == len(chunk) - 1) for i, t in enumerate(chunk)]
        else:
            items = [(q, q.pending, True) for q in self.active if q.pending is not None]
        start: dict[int, int] = {}
        batch.n_tokens = len(items)
        for i, (q, tok, want) in enumerate(items):
            pos = len(self.content[q.slot]) + start.get(q.slot, 0)
            start[q.slot] = start.get(q.slot, 0) + 1
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, pos, 1, want
            batch.seq_id[i][0] = q.slot
        t0 = time.perf_counter()
        rc = lc.llama_decode(self.ctx, batch)
        dt = (time.perf_counter() - t0) / len(items)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed ({rc})")
        for i, (q, tok, want) in enumerate(items):
            self.content[q.slot].append(tok)
            if q.pending is None:
                q.evaluated += 1
                q.prompt_s += dt
            else:
                q.generation_s += dt
            if want:
                q.pending = None
                t1 = time.perf_counter()
                self._sample(q, i)
                q.generation_s += time.perf_counter() - t1
        for q in [q for q in self.active if q.future.done()]:
            self._finish(q)

    def _sample(self, q: _Seq, i: int) -> None:
        """One token for q from the batch's logits at i, then Llama._create_completion's rules."""
        llm = self.llm
        if q.criteria is not None:
            import numpy as np

            if q.criteria(np.asarray(self.content[q.slot], dtype=np.intc), np.empty(0, dtype=np.single)):
                return self._done(q, llm.detokenize(q.completion, prev_tokens=q.prompt), "stop")
        token = self.lc.llama_sampler_sample(q.sampler.sampler, self.ctx, i)
        if self.lc.llama_vocab_is_eog(llm._model.vocab, token):
            return self._done(q, llm.detokenize(q.completion, prev_tokens=q.prompt), "stop")
        q.completion.append(token)
        all_text = llm.detokenize(q.completion, prev_tokens=q.prompt)
        for k, char in enumerate(all_text[-3:]):  # an incomplete UTF-8 character: read on
            k = 3 - k
            for num, pattern in [(2, 192), (3, 224), (4, 240)]:
                if num > k and pattern & char == pattern:
                    q.multibyte = num - k
        if q.multibyte > 0:
            q.multibyte -= 1
            q.pending = token
            return None
        stops = [s for s in q.stop if s in all_text]
        if stops:
            return self._done(q, all_text[: all_text.index(stops[0])], "stop")
        if len(q.completion) >= q.max_tokens:
            return self._done(q, llm.detokenize(q.completion, prev_tokens=q.prompt), "length")
        q.pending = token
        return None

    def _done(self, q: _Seq, text: bytes, reason: str) -> None:
        q.future.set_result(
            Finished(
                text=text.decode("utf-8", errors="ignore"),
                finish_reason=reason,
                prompt_tokens=len(q.prompt),
                completion_tokens=len(q.completion),
                prompt_tokens_evaluated=q.evaluated,
                prompt_s=q.prompt_s,
                generation_s=q.generation_s,
            )
        )

    def _finish(self, q: _Seq) -> None:
        q.sampler.close()
        self.active.remove(q)
