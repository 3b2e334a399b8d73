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
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from socsim.planted import MODEL_IDS, VARIANTS, Ask, tokens
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


def handler(variant: str, served: str, key: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorised(self) -> bool:
            if key and self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, {"error": {"message": "invalid API key"}})
                return False
            return True

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path == "/health":
                self._send(200, {"status": "ok"})
            elif self.path == "/v1/models":
                if self._authorised():
                    self._send(
                        200, {"object": "list", "data": [{"id": served, "object": "model", "owned_by": "socsim"}]}
                    )
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            if not self._authorised():
                return
            try:
                body = json.loads(raw)
                self._send(200, completion(body, variant, served))
            except (ValueError, TypeError, KeyError) as exc:
                self._send(400, {"error": {"message": str(exc)}})

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # one line per request would drown the server's log

    return Handler


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m socsim.planted.server", description=__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--effects", choices=VARIANTS, default="planted", help="planted effects, or none (the null twin)")
    ap.add_argument("--served-model-name", default=None, help="the model id it serves (default: the variant's)")
    a = ap.parse_args(argv)
    served = a.served_model_name or MODEL_IDS[a.effects]
    server = ThreadingHTTPServer((a.host, a.port), handler(a.effects, served, os.environ.get("API_KEY") or None))
    print(f"planted model ({a.effects}) serving {served} on http://{a.host}:{a.port}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
