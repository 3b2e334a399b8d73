"""The planted model's OpenAI-compatible server: `python -m socsim.planted.server --effects planted|null`.

GET /v1/models lists the one model id it serves; GET /health answers 200; POST /v1/chat/completions
answers a chat completion (socsim.planted.answers.respond) with usage counted in whitespace words. A free-text answer
longer than max_tokens words is cut there (finish_reason "length"), as an engine cuts it. A request it cannot
read is answered HTTP 400 with the reason. An API key, when the environment variable API_KEY holds one, is
required as a Bearer token (as the engines socsim starts require the run's key).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from socsim.planted import MODEL_IDS, VARIANTS, Ask, tokens, use_materials
from socsim.planted.answers import respond


def completion(body: dict[str, Any], variant: str, served: str) -> dict[str, Any]:
    """The chat completion of one request body (what the server answers)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages: a non-empty list is required")
    fmt = body.get("response_format") or {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema")
    elif fmt.get("type") in ("json", "json_object"):
        schema = fmt.get("value") or fmt.get("schema")
    if fmt and schema is None:
        raise ValueError(f"response_format {fmt.get('type')!r} without a schema is not served")
    max_tokens = int(body.get("max_tokens") or 256)
    ask = Ask(messages, schema, int(body.get("seed") or 0), max_tokens, variant)
    text, finish = respond(ask), "stop"
    if schema is None and tokens(text) > max_tokens:
        text, finish = " ".join(text.split()[:max_tokens]), "length"
    prompt = sum(tokens(str(m.get("content") or "")) for m in messages)
    return {
        "id": f"planted-{ask.seed}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": tokens(text), "total_tokens": prompt + tokens(text)},
    }


def app(variant: str, served: str, key: str | None, materials: str | Path | None = None) -> web.Application:
    """The server's routes (aiohttp: one event loop answers every connection; a free-text answer is computed in
    well under a millisecond, so the planted control serves faster than socsim asks, benchmarks/orchestration.py),
    answering from the studies' `materials` (a project's data/ folder: socsim.planted.use_materials)."""
    use_materials(materials)

    def send(status: int, payload: dict[str, Any]) -> web.Response:
        return web.Response(status=status, body=json.dumps(payload).encode(), content_type="application/json")

    def refused(request: web.Request) -> web.Response | None:
        if key and request.headers.get("Authorization") != f"Bearer {key}":
            return send(401, {"error": {"message": "invalid API key"}})
        return None

    async def health(_: web.Request) -> web.Response:
        return send(200, {"status": "ok"})

    async def models(request: web.Request) -> web.Response:
        if (no := refused(request)) is not None:  # (an empty Response is falsy in older aiohttp)
            return no
        return send(200, {"object": "list", "data": [{"id": served, "object": "model", "owned_by": "socsim"}]})

    async def chat(request: web.Request) -> web.Response:
        raw = await request.read()
        if (no := refused(request)) is not None:
            return no
        try:
            return send(200, completion(json.loads(raw), variant, served))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return send(400, {"error": {"message": str(exc)}})

    async def no_route(request: web.Request) -> web.Response:
        return send(404, {"error": {"message": f"no route {request.path}"}})

    application = web.Application(client_max_size=64 * 1024**2)
    application.add_routes(
        [
            web.get("/health", health),
            web.get("/v1/models", models),
            web.post("/v1/chat/completions", chat),
            web.route("*", "/{tail:.*}", no_route),
        ]
    )
    return application


def serve(sock: socket.socket, variant: str, served: str, key: str | None, materials: str | None) -> None:
    """Serve on a bound, listening socket until SIGTERM or SIGINT."""
    web.run_app(app(variant, served, key, materials), sock=sock, print=None, access_log=None, handle_signals=True)


def listening(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m socsim.planted.server", description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--effects", choices=VARIANTS, default="planted", help="planted effects, or none (the null twin)")
    ap.add_argument("--served-model-name", default=None, help="the model id it serves (default: the variant's)")
    ap.add_argument(
        "--materials",
        default=None,
        help="the data/ folder of the project it serves (the studies' prompts, topics, strategies: what it knows of "
        "the questions it is asked); without it, it knows none of them",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="processes answering on the one port (default 1: one event loop; more where cores are free)",
    )
    a = ap.parse_args(argv)
    if a.workers < 1:
        ap.error("--workers must be at least 1")
    served = a.served_model_name or MODEL_IDS[a.effects]
    key = os.environ.get("API_KEY") or None
    sock = listening(a.host, a.port)
    print(
        f"planted model ({a.effects}) serving {served} on http://{a.host}:{a.port}"
        + (f" ({a.workers} worker processes)" if a.workers > 1 else ""),
        file=sys.stderr,
        flush=True,
    )
    children = []
    for _ in range(a.workers - 1):  # the others share the listening socket (the kernel spreads its connections)
        pid = os.fork()
        if pid == 0:
            serve(sock, a.effects, served, key, a.materials)
            os._exit(0)
        children.append(pid)
    try:
        serve(sock, a.effects, served, key, a.materials)
    finally:
        for pid in children:  # (a stop by the supervisor signals the whole process group; Ctrl-C here too)
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        sock.close()


if __name__ == "__main__":
    main()
