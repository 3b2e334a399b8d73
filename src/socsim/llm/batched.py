"""Batched decoding on the embedded model: several chat completions decoded in one llama.cpp batch.

llama.cpp decodes a token for each of several sequences in one `llama_decode` faster than one at a
time (benchmarks/batched_decode.py, benchmarks/batched_engine.py). BatchedEngine runs up to `slots`
requests at once on one context with a KV stream per sequence: a request's prompt is read alone, in
pieces after its re-used prefix (`read_plan`), then each step decodes one token for every request in
flight. Each request is what `Llama.create_chat_completion` would do: the prompt from the model's own
chat handler, the sampler chain of `Llama._init_sampler` seeded with the request's seed, and the
stop, length, UTF-8 and stopping-criteria rules of `Llama._create_completion`.

Its text is then the text the request gets alone on an empty KV cache, whatever it shared a batch
with or followed, on one condition: no flash attention. llama.cpp's CPU flash attention takes a tiled
kernel for many query rows and a row-by-row one for a few, and sizes its work by the longest stream,
so a sequence's logits would depend on how its prompt was split and on its neighbours' lengths
(measured: the same text for 2 of 16 requests with ~700-token prompts). Without it the logits of a
prompt do not depend on where it is cut into pieces of two or more tokens; a piece of one token is
computed with other kernels (benchmarks/prefix_split.py measures both). So the pieces follow
`read_plan`, and only prompt cells read in such pieces are re-used, never an answer's (decoded a token
at a time): from the stream a slot still holds, or from a RAM cache of prompts' KV states. A request
whose prefix another one is reading waits until it is read and takes it from there (prompts are read
one at a time anyway). tests/real/llm/test_batched.py checks it on the default model (SmolLM2-135M,
Q4_1); another GGUF may switch kernels elsewhere: check it with benchmarks/batched_engine.py --gguf.

What it costs and gains on this 2-core CPU (2026-11-24, benchmarks/batched_engine.py): without flash
attention, 16 decoding-heavy requests took 25.2 s one at a time, 19.4 s at 4 slots and 17.5 s at 8;
with flash attention, one at a time, 19.4 s. Without the prefix cache, 16 ~700-token prompts took
47.2 s without flash attention and 37.4 s with it. A fresh default run with `flash_attn: false,
parallel: 8` spent 986 s in LLM stages against 902 s with the defaults (prompt evaluation slower,
answers' cells no longer re-used). What it buys is answers that do not depend on the order of calls
(a resumed, sharded or SLURM run gets the text an uninterrupted one gets). So it is an option, not
the default.
"""

from __future__ import annotations

import contextlib
import ctypes
import queue
import random
import threading
import time
from collections.abc import Callable, Sequence
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

    llm.create_completion = capture  # type: ignore[method-assign,assignment]  # an instance attribute shadows the method
    try:
        llm.create_chat_completion(**chat)
    except _Captured:
        pass
    finally:
        delattr(llm, "create_completion")
    for key in _UNSUPPORTED:
        if kwargs.get(key) is not None:
            raise NotImplementedError(f"batched embedded completions do not support {key}")
    if kwargs.get("stream"):
        raise NotImplementedError("batched embedded completions do not stream")
    return kwargs


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


@dataclass
class Finished:
    """One request's outcome, with the parts of create_chat_completion's answer that socsim reads."""

    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_evaluated: int
    prompt_s: float
    generation_s: float


@dataclass
class _Waiting:
    chat: dict[str, Any]
    future: Future[Finished]
    kw: dict[str, Any] | None = None  # what the chat handler makes of it (once)


@dataclass
class _Seq:
    slot: int
    prompt: list[int]
    todo: list[list[int]]  # the pieces of prompt still to read, one llama_decode each
    sampler: Any
    stop: list[bytes]
    max_tokens: int
    criteria: Any
    future: Future[Finished]
    completion: list[int] = field(default_factory=list)
    pending: int | None = None  # a sampled token to evaluate next step
    multibyte: int = 0
    evaluated: int = 0  # prompt tokens read for it (after the re-used prefix)
    prompt_s: float = 0.0
    generation_s: float = 0.0
    awaited: bool = False  # a waiting request shares its prompt: keep the prompt's state once read
    lone: bool = False  # its last prompt token is read alone, as the one-at-a-time path reads it
    reusable: int = 0  # how many of its stream's cells a later prompt may re-use (prompt cells read in pieces)


def _fail(fut: Future[Finished], exc: BaseException) -> None:
    """Fail a request's future unless it is settled or cancelled."""
    if not fut.done() and (fut.running() or fut.set_running_or_notify_cancel()):
        fut.set_exception(exc)


def read_plan(n: int, cached: int, size: int) -> tuple[int, list[int]]:
    """How to read a prompt of n tokens whose first `cached` are in the stream: how many to keep, and
    the lengths of the pieces to read after them, one llama_decode each (at most `size` long).

    It computes what the one-at-a-time path computes. That path reads a prompt from an empty cache in
    pieces of `size`, and llama.cpp computes a one-token piece with other kernels than a longer one
    (other logits, other cells), while pieces of two or more tokens agree wherever they are cut. So
    the prompt's end is read at least two tokens long, unless n leaves that path a last piece of a
    single token: then that token is read alone here too."""
    lone = n > 1 and n % size == 1
    body = n - 1 if lone else n
    keep = max(0, min(cached, body - 2))
    if lone and body - keep == 1:
        keep -= 1
    sizes = [min(size, body - i) for i in range(keep, body, size)]
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes[-2:] = [sizes[-2] - 1, 2]
    return keep, sizes + ([1] if lone else [])


class BatchedEngine:
    """Up to `slots` chat completions decoded together on `llm`'s model (one dedicated thread)."""

    def __init__(self, load: Callable[[], Llama], slots: int, cache_bytes: int = 0):
        self.slots, self.cache_bytes = slots, cache_bytes
        self._load = load
        self._queue: queue.Queue[_Waiting | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.error: BaseException | None = None

    def submit(self, chat: dict[str, Any]) -> Future[Finished]:
        """Queue one request (create_chat_completion's keyword arguments); its future holds the outcome."""
        fut: Future[Finished] = Future()
        with self._lock:
            if self.error is not None:
                fut.set_exception(self.error)
                return fut
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="socsim-llama-batch", daemon=True)
                self._thread.start()
            self._queue.put(_Waiting(chat, fut))
        return fut

    def close(self) -> None:
        """Stop the engine: requests still waiting are cancelled, those in flight fail."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        loop: _Loop | None = None
        try:
            import llama_cpp as lc

            llm = self._load()
            if llm.context_params.flash_attn_type == lc.LLAMA_FLASH_ATTN_TYPE_ENABLED:
                raise RuntimeError("batched decoding needs the model loaded without flash attention")
            params = llm.context_params  # the one-at-a-time context's settings, for more sequences
            cp = lc.llama_context_default_params()
            ctypes.memmove(ctypes.byref(cp), ctypes.byref(params), ctypes.sizeof(cp))
            cp.n_ctx, cp.n_seq_max, cp.kv_unified = params.n_ctx * self.slots, self.slots, False
            with contextlib.ExitStack() as stack:
                ctx = lc.llama_init_from_model(llm._model.model, cp)
                if not ctx:
                    raise RuntimeError(f"llama.cpp could not create a context of {self.slots} sequences")
                stack.callback(lc.llama_free, ctx)
                batch = lc.llama_batch_init(max(cp.n_batch, self.slots), 0, 1)
                stack.callback(lc.llama_batch_free, batch)
                from llama_cpp.llama_cache import LlamaRAMCache

                cache = LlamaRAMCache(self.cache_bytes) if self.cache_bytes > 0 else None
                loop = _Loop(llm, ctx, batch, min(cp.n_batch, cp.n_ubatch), self.slots, cache, self._queue)
                loop.run()
        except BaseException as exc:  # nothing waits forever: every request in hand fails with it
            with self._lock:
                self.error = exc
                held = [q.future for q in loop.active] + [w.future for w in loop.waiting] if loop else []
                while True:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        held.append(item.future)
            for fut in held:
                _fail(fut, exc)


class _Loop:
    """The engine thread's state: slots (a KV stream each), requests in flight and waiting."""

    def __init__(self, llm: Llama, ctx: Any, batch: Any, n_batch: int, slots: int, cache: Any, q: Any):
        import llama_cpp as lc

        self.lc, self.llm, self.ctx, self.batch, self.n_batch = lc, llm, ctx, batch, n_batch
        self.mem = lc.llama_get_memory(ctx)
        self.cache = cache  # prompts' KV states (a LlamaRAMCache of per-stream states); None: no re-use
        self.queue: queue.Queue[_Waiting | None] = q
        self.content: list[list[int]] = [[] for _ in range(slots)]  # the tokens in each slot's KV stream
        self.used = [0] * slots  # when each slot last started a request (least recently used goes first)
        self.active: list[_Seq] = []
        self.waiting: list[_Waiting] = []
        self.n_ctx = llm.n_ctx()
        self.closing = False
        self.clock = 0
        self.zero_row: Any = None

    def run(self) -> None:
        while True:
            self._take(block=not self.active and not self.waiting)
            if self.closing:
                return self._abort()
            self._admit()
            if self.active:
                self._step()

    def _take(self, block: bool) -> None:
        while True:
            try:
                item = self.queue.get(block=block)
            except queue.Empty:
                return
            if item is None:
                self.closing = True
                return
            self.waiting.append(item)
            block = False

    def _abort(self) -> None:
        for w in self.waiting:
            w.future.cancel()
        for q in list(self.active):
            q.future.set_exception(RuntimeError("the embedded model was closed while this request ran"))
            q.sampler.close()
        self.waiting, self.active = [], []

    def _admit(self) -> None:
        """Start waiting requests in order on free slots; one whose prefix is being read waits for it."""
        busy = {q.slot for q in self.active}
        free = [s for s in range(len(self.content)) if s not in busy]
        still: list[_Waiting] = []
        deferred = 0
        for w in self.waiting:
            if w.future.cancelled():
                continue
            if not free or deferred >= 2 * len(self.content):  # enough looked at for this step
                still.append(w)
                continue
            try:
                if w.kw is None:
                    w.kw = prepared(self.llm, **w.chat)
                prompt = list(w.kw["prompt"])
                slot, have = self._best_slot(free, prompt)
                reader = self._reader(prompt, have)
                if reader is not None:
                    reader.awaited = True
                    still.append(w)
                    deferred += 1
                    continue
                if not w.future.set_running_or_notify_cancel():
                    continue  # cancelled meanwhile
                free.remove(slot)
                self.active.append(self._start(slot, prompt, w.kw, w.future))
            except Exception as exc:  # a bad request fails alone
                _fail(w.future, exc)
        self.waiting = still

    def _best_slot(self, free: list[int], prompt: list[int]) -> tuple[int, int]:
        """The free slot to use (the longest prefix in its stream, else the least recently used) and
        the longest prefix it can start from (its stream or the RAM cache)."""
        if self.cache is None:
            return min(free, key=lambda s: self.used[s]), 0
        slot = max(free, key=lambda s: (common_prefix(self.content[s], prompt), -self.used[s]))
        return slot, max(common_prefix(self.content[slot], prompt), self._cached(prompt)[1])

    def _reader(self, prompt: list[int], have: int) -> _Seq | None:
        """A request in flight still reading a longer prefix of this prompt than is available now."""
        if self.cache is None:
            return None
        for q in self.active:
            if q.todo and common_prefix(q.prompt, prompt) > have:
                return q
        return None

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
            temp=kw.get("temperature", 0.8), grammar=kw.get("grammar"), **{k: kw[k] for k in _SAMPLER_ARGS if k in kw}
        )
        stop = kw.get("stop") or []
        stop = stop if isinstance(stop, list) else [stop]
        self.clock += 1
        self.used[slot] = self.clock
        self._reuse(slot, prompt)
        keep, sizes = read_plan(len(prompt), common_prefix(self.content[slot], prompt), self.n_batch)
        lc.llama_memory_seq_rm(self.mem, slot, keep, -1)
        del self.content[slot][keep:]
        todo, at = [], keep
        for n in sizes:
            todo.append(prompt[at : at + n])
            at += n
        lone = sizes[-1] == 1 and len(prompt) > 1
        body = len(prompt) - 1 if lone else len(prompt)
        return _Seq(
            slot=slot,
            prompt=prompt,
            todo=todo,
            sampler=sampler,
            stop=[s.encode("utf-8") for s in stop],
            max_tokens=max_tokens,
            criteria=kw.get("stopping_criteria"),
            future=fut,
            lone=lone,
            reusable=body,
        )

    def _reuse(self, slot: int, prompt: list[int]) -> None:
        """Put the longest available prefix of prompt in the slot's stream (it may hold one already)."""
        lc = self.lc
        own = common_prefix(self.content[slot], prompt) if self.cache is not None else 0
        state, saved = self._cached(prompt)
        if own >= saved:
            if own == 0:
                lc.llama_memory_seq_rm(self.mem, slot, -1, -1)
                self.content[slot] = []
            return
        assert state is not None
        lc.llama_memory_seq_rm(self.mem, slot, -1, -1)
        buf = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
        if lc.llama_state_seq_set_data(self.ctx, buf, state.llama_state_size, slot) == state.llama_state_size:
            self.content[slot] = state.input_ids.tolist()
        else:  # could not restore: read the prompt whole
            lc.llama_memory_seq_rm(self.mem, slot, -1, -1)
            self.content[slot] = []

    def _cached(self, prompt: list[int]) -> tuple[Any, int]:
        """The RAM cache's state sharing the longest prefix with prompt, and that length."""
        if self.cache is None:
            return None, 0
        try:
            state = self.cache[prompt]
        except KeyError:
            return None, 0
        return state, common_prefix(state.input_ids.tolist(), prompt)

    def _save(self, q: _Seq) -> None:
        """Keep the KV state of q's stream in the RAM cache."""
        import numpy as np
        from llama_cpp import LlamaState

        lc, tokens = self.lc, self.content[q.slot]
        if self.cache is None or not tokens:
            return
        size = lc.llama_state_seq_get_size(self.ctx, q.slot)
        buf = (ctypes.c_uint8 * size)()
        n = lc.llama_state_seq_get_data(self.ctx, buf, size, q.slot)
        self.cache[tokens] = LlamaState(
            input_ids=np.asarray(tokens, dtype=np.intc),
            scores=np.empty((0, 0), dtype=np.single),
            n_tokens=len(tokens),
            llama_state=ctypes.string_at(buf, n),
            llama_state_size=n,
            seed=0,
        )

    def _step(self) -> None:
        """One llama_decode: a prompt piece of the first request still reading (alone), else one
        token for every request generating."""
        lc, batch = self.lc, self.batch
        reading = [q for q in self.active if q.todo]
        if reading:
            q = reading[0]
            chunk = q.todo.pop(0)
            items = [(q, t, not q.todo and i == len(chunk) - 1) for i, t in enumerate(chunk)]
        else:
            items = [(q, q.pending, True) for q in self.active if q.pending is not None]
        batch.n_tokens = len(items)
        for i, (q, tok, want) in enumerate(items):
            pos = len(self.content[q.slot]) + (i if reading else 0)
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = tok, pos, 1, want
            batch.seq_id[i][0] = q.slot
        t0 = time.perf_counter()
        rc = lc.llama_decode(self.ctx, batch)
        dt = (time.perf_counter() - t0) / len(items)
        if rc != 0:
            raise RuntimeError(f"llama_decode failed ({rc})")
        for i, (q, tok, want) in enumerate(items):
            self.content[q.slot].append(tok)
            if reading:
                q.evaluated += 1
                q.prompt_s += dt
            else:
                q.generation_s += dt
            if want:
                if reading and q.awaited and not q.lone:
                    self._save(q)  # the prompt's state, for the request waiting on it
                q.pending = None
                t1 = time.perf_counter()
                self._sample(q, i)
                q.generation_s += time.perf_counter() - t1
        for q in [q for q in self.active if q.future.done()]:
            self._end(q)

    def _end(self, q: _Seq) -> None:
        """Free q's slot, its stream cut back to the prompt (and kept in the RAM cache): the answer's
        cells were computed a token at a time, which a later prompt reading them would not do."""
        self.lc.llama_memory_seq_rm(self.mem, q.slot, q.reusable, -1)
        del self.content[q.slot][q.reusable :]
        if not q.awaited or q.lone:  # (an awaited prompt's state was kept when it was read)
            self._save(q)
        q.sampler.close()
        self.active.remove(q)

    def _sample(self, q: _Seq, i: int) -> None:
        """One token for q from the batch's logits at i, then Llama._create_completion's rules."""
        llm = self.llm
        if self._criteria_met(q):  # generate's check: the generator ends, no text set
            return self._done(q, b"", "length")
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

    def _criteria_met(self, q: _Seq) -> bool:
        """The chat handler's stopping criteria on the tokens evaluated so far (the logits they are
        given are a zero row: the one-at-a-time path keeps no logits either)."""
        if q.criteria is None:
            return False
        import numpy as np

        tokens = np.asarray(self.content[q.slot], dtype=np.intc)
        if self.zero_row is None:
            self.zero_row = np.zeros(self.llm.n_vocab(), dtype=np.single)
        return bool(q.criteria(tokens, self.zero_row))

    def _done(self, q: _Seq, text: bytes, reason: str) -> None:
        if self._criteria_met(q):  # _create_completion's check after its loop, whatever ended it
            text, reason = self.llm.detokenize(q.completion, prev_tokens=q.prompt), "stop"
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
