"""The scripted backend, the one stand-in for a model in tests: in process (`Scripted`, `scripted_client`)
or served on loopback (`ScriptedServer`, an OpenAI-compatible and TGI-style server that a registry entry,
and so a stage in a subprocess, can name); and models-registry entries (`served`, `params_with`)."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Callable

from socsim.llm import canary
from socsim.llm.local import SERVED_MODEL_ID
from socsim.llm.types import Capabilities, Completion


class Scripted(Capabilities):
    """The one scripted test backend: its speakers follow a script, reply(request) -> text; it records
    every request. No model: what the fast lane's tests use in place of the LLM layer's backends."""

    retries = 0

    def __init__(self, reply, name=None):
        self.reply, self.name, self.requests, self.closed = reply, name, [], 0

    async def probe(self):
        return self.identity()

    def identity(self):
        return {"backend": "scripted"} if self.name is None else {"backend": "scripted", "model": self.name}

    async def complete(self, request):
        self.requests.append(request)
        await asyncio.sleep(0)
        return Completion(text=self.reply(request), completion_tokens=3)

    async def aclose(self):
        self.closed += 1


def scripted_client(reply, name="scripted"):
    """An LLMClient (no call cache) over the scripted backend (`client.backend.requests`: what it was asked)."""
    from socsim.llm import LLMClient

    return LLMClient(Scripted(reply, name), None)


class ScriptedServer:
    """The scripted backend served: a loopback server of `model_id`, OpenAI-compatible (GET /v1/models,
    POST /v1/chat/completions) and TGI-style (GET /info). Each chat request is answered with the next of
    `replies` ((content, HTTP status) pairs, consumed in order; an error status sends the content as the
    error's message), then with `reply(body)`; every request's
    path, headers and JSON body are kept. The constraint canary (socsim.llm.canary) is answered apart, with
    `canary_answer` (None: an allowed string), and kept in `canaries`. Started at once; `close()` (or the
    `with` block's end) stops it."""

    def __init__(
        self,
        model_id: str = SERVED_MODEL_ID,
        reply: Callable[[dict], str] = lambda body: "ok",
        replies: list[tuple[str, int]] | None = None,
        cached_tokens: int | None = 3,
        engine: tuple[str, str] | None = None,
    ):
        self.model_id, self.reply, self.replies = model_id, reply, list(replies or [])
        self.engine = engine  # (owned_by, version) it names itself by in /v1/models and /version; None: neither
        self.finish_reason = "stop"  # of every answer
        self.canaries: list[dict] = []  # the constraint canaries (socsim.llm.canary), answered apart from replies
        # what it answers them (a text, or one per body; None: an allowed string, as an engine applying it would)
        self.canary_answer: str | Callable[[dict], str | None] | None = None
        self.bodies: list[dict] = []
        self.raw: list[bytes] = []  # each body's bytes as they came
        self.paths: list[str] = []
        self.headers: list[dict] = []
        lock = threading.Lock()
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802 - http.server's name
                with lock:
                    srv.paths.append(self.path)
                if self.path == "/info":
                    self._send(200, {"model_id": srv.model_id, "model_sha": "abc", "version": "3.3.7"})
                elif self.path == "/version" and srv.engine is not None:
                    self._send(200, {"version": srv.engine[1]})
                else:
                    owner = {"owned_by": srv.engine[0]} if srv.engine is not None else {}
                    self._send(200, {"object": "list", "data": [{"id": srv.model_id, "object": "model", **owner}]})

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                with lock:
                    if canary.is_canary(body):  # answered as an engine that applies the constraint does
                        srv.canaries.append(body)
                        said = srv.canary_answer(body) if callable(srv.canary_answer) else srv.canary_answer
                        scripted = (said or json.dumps({"answer": canary.OPTIONS[0]}), 200)
                    else:
                        srv.paths.append(self.path)
                        srv.headers.append(dict(self.headers))
                        srv.bodies.append(body)
                        srv.raw.append(raw)
                        scripted = srv.replies.pop(0) if srv.replies else None
                content, status = scripted or (srv.reply(body), 200)
                if status != 200:  # the content is the error's message
                    self._send(status, {"error": {"message": content or "scripted failure"}})
                    return
                usage = {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
                if cached_tokens is not None:
                    usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
                message = {"role": "assistant", "content": content}
                self._send(
                    200,
                    {"choices": [{"index": 0, "message": message, "finish_reason": srv.finish_reason}], "usage": usage},
                )

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def entry(self, **extra) -> dict:
        """Its models-registry entry."""
        return {"backend": "openai", "model_id": self.model_id, "endpoints": [self.url], **extra}

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def served(endpoints: list, model_id: str = SERVED_MODEL_ID, **extra) -> dict:
    """A models-registry entry for loopback llama-cpp-python servers (LlamaServer) of the shipped GGUF."""
    return {"backend": "openai", "dialect": "llama_cpp", "model_id": model_id, "endpoints": list(endpoints), **extra}


def params_with(**registry) -> dict:
    """Validated params (defaults filled in) whose models registry holds these entries."""
    from socsim import config

    return config.validate({"models": registry})


def serve_spec(engine: str, **serve):
    """The resolved registry entry `m` of a model the run serves with `engine` (`serve:` fields over defaults)."""
    from socsim import config, models

    entry = {"backend": "openai", "model_id": "meta-llama/Llama-3.1-8B-Instruct", "n_ctx": 8192}
    return models.resolve(config.validate({"models": {"m": {**entry, "serve": {"engine": engine, **serve}}}}), "m")
