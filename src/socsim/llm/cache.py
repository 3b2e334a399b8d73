"""Content-addressed call cache in SQLite (WAL), shared safely by concurrent processes.

Key: sha256 of (model identity, messages, sampling, constraint, seed). The value is the
backend's completion (text and token counts). Parsing happens after the cache, so a change
of validation rules never needs a new model call.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from socsim.config import canonical_json
from socsim.llm.types import Completion, Request




def request_key(model_identity: dict, request: Request) -> str:
    material = {"model": model_identity, **request.key_material()}
    return hashlib.sha256(canonical_json(material).encode("utf-8")).hexdigest()


class CallCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL, "
            "model TEXT NOT NULL)"
        )

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._conn.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return Completion(text=data["text"], prompt_tokens=data["prompt_tokens"],
                          completion_tokens=data["completion_tokens"], finish_reason=data.get("finish_reason"))

    def put(self, key: str, completion: Completion, model_identity: dict) -> None:
        data = {"text": completion.text, "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens, "finish_reason": completion.finish_reason}
        with self._lock:
            self._conn.execute("INSERT OR REPLACE INTO calls (key, completion, model) VALUES (?, ?, ?)",
                               (key, json.dumps(data), canonical_json(model_identity)))

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
