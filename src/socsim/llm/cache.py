"""Content-addressed call cache in SQLite (WAL), shared safely by concurrent processes.

Key: sha256 of (model identity, messages, sampling, constraint, seed). The value is the
backend's completion (text and token counts). Parsing happens after the cache, so a change
of validation rules never needs a new model call.

Writes are committed in batches (benchmarks/orchestration.py: a commit per answer cost more than the HTTP
call to a fast engine): pending answers are committed by the first answer stored FLUSH_EVERY_S seconds or more
after the last commit, at FLUSH_ROWS pending answers, when the client releases its backend (the end of a run of
calls, or its failure) and when the cache closes. At a slow model's pace every answer is committed as it comes.
A process killed outright (SIGKILL, out of memory) loses the answers pending since the last commit, which a
resumed stage asks again: while answers keep coming, those of the last FLUSH_EVERY_S seconds (at most
FLUSH_ROWS); after a burst followed by a pause, the burst's last ones until the next answer.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from socsim.canonical import canonical_json
from socsim.llm.errors import CacheFileError
from socsim.llm.types import Completion, Request

# The file's layout, stamped in its header when socsim creates it, so that a socsim that changes
# the layout later tells old caches from new ones instead of misreading them.
SCHEMA_VERSION = 1  # PRAGMA user_version
APPLICATION_ID = 0x534F4353  # PRAGMA application_id, "SOCS": a socsim call cache, not another program's database
# Version 1 as socsim wrote it before it stamped the header (both pragmas 0): (name, type, not null, key).
V1_COLUMNS = [("key", "TEXT", 0, 1), ("completion", "TEXT", 1, 0), ("model", "TEXT", 1, 0)]
CREATE_V1 = "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, completion TEXT NOT NULL, model TEXT NOT NULL)"


FLUSH_EVERY_S = 0.25  # seconds between two commits of stored answers, at most (while answers come)
FLUSH_ROWS = 512  # pending answers that are committed at once, whatever the time
# A lookup of a key the file does not hold costs an SQLite read (17 us a call in a run at a fast engine's pace,
# benchmarks/orchestration.py): the cache keeps the hashes of the keys it knows (read from the file when it opens,
# stored by this process, and those other processes committed, read again at most every KNOWN_EVERY_S seconds at a
# miss) and reads the file only for a key whose hash it knows. Up to KNOWN_MAX keys (about 70 bytes each); a
# larger file is read for every lookup.
KNOWN_EVERY_S = 0.25
KNOWN_MAX = 5_000_000


def request_key(model_identity: dict[str, Any], request: Request, identity_json: str | None = None) -> str:
    """sha256 of the canonical JSON of {"model": identity, **request.key_material()}. `identity_json`: the
    identity's canonical JSON, where the caller has it (the same key, without serialising it again)."""
    # (Not memoised per Sampling or Constraint: equal values such as 1 and 1.0 hash alike but write other JSON.)
    # The rest in one encoder pass (a pass per part cost a third more), the model's JSON put in at its place in
    # sorted key order: before "sampling", whose last occurrence is the key (only numbers follow it).
    rest = canonical_json(
        {
            "constraint": request.constraint.spec() if request.constraint is not None else None,
            "messages": request.messages,  # (pairs: written as the lists key_material gives)
            "sampling": request.sampling.as_dict(),
            "seed": request.seed,
        }
    )
    model = identity_json if identity_json is not None else canonical_json(model_identity)
    at = rest.rindex(',"sampling":')
    return hashlib.sha256(f'{rest[:at]},"model":{model}{rest[at:]}'.encode()).hexdigest()


class CallCache:
    """One cache file. Opening it checks that it is a call cache this socsim reads (intact, socsim's,
    of this schema version), so that a bad file stops the stage before its first call, with a message
    that names the file, rather than as an sqlite3 traceback mid-run. A missing or empty file is a
    fresh cache."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Created here as open() creates a file (0666 less the umask): SQLite creates it 0644 whatever
        # the umask, and gives the -wal and -shm files the cache file's mode, so a group sharing a
        # results folder could not write each other's caches.
        try:
            os.close(os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666))
        except OSError as exc:
            raise CacheFileError(f"the call cache {self.path} cannot be opened: {exc.strerror}") from None
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, str]] = {}  # key -> (completion, model): stored, not yet committed
        self._flushed_at = float("-inf")  # monotonic time of the last commit (none yet: the first goes at once)
        self._known: set[int] | None = set()  # hash() of every key the file or this process holds (None: too many)
        self._known_rowid = 0  # the file's rows read into _known: those up to this rowid
        self._known_at = float("-inf")  # monotonic time they were last read
        self._closed = False
        self._conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False, isolation_level=None)
        try:
            self._open()
            with self._lock:
                self._read_known()
        except BaseException:
            self._conn.close()
            raise

    def _fresh_start(self) -> str:
        return (
            f"move {self.path} (with any -wal and -shm file beside it) away or delete it to start a fresh cache "
            "(its cached calls are lost and paid again), or point llm.cache_path at another file"
        )

    def _open(self) -> None:
        try:
            self._conn.execute("PRAGMA busy_timeout=60000")
            # Read-only checks first: a file that is not a cache is left as it was.
            problems = [row[0] for row in self._conn.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise CacheFileError(
                    f"the call cache {self.path} is damaged ({'; '.join(problems[:3])}); {self._fresh_start()}"
                )
            with self._transaction("BEGIN"):  # one snapshot: another process may be stamping the file
                stamped = self._check_layout()
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            if not stamped:
                with self._transaction("BEGIN IMMEDIATE"):
                    if not self._check_layout():
                        self._conn.execute(CREATE_V1)
                        self._conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                        self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorname in ("SQLITE_NOTADB", "SQLITE_CORRUPT"):
                raise CacheFileError(
                    f"the call cache {self.path} is not an SQLite database, or a damaged one ({exc}); "
                    f"{self._fresh_start()}"
                ) from None
            raise CacheFileError(f"the call cache {self.path} cannot be opened: {exc}") from None

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[None]:
        self._conn.execute(begin)
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _check_layout(self) -> bool:
        """True for a cache of this schema version; False for an empty file or a version-1 cache
        written before socsim stamped its caches (both adopted: stamped); else CacheFileError."""
        app_id = self._conn.execute("PRAGMA application_id").fetchone()[0]
        version = self._conn.execute("PRAGMA user_version").fetchone()[0]
        if app_id == APPLICATION_ID:
            if version == SCHEMA_VERSION:
                return True
            newer = " (a newer socsim wrote it: upgrade socsim to reuse its calls)" if version > SCHEMA_VERSION else ""
            raise CacheFileError(
                f"the call cache {self.path} has schema version {version} and this socsim reads "
                f"version {SCHEMA_VERSION} only{newer}; or point llm.cache_path at another file to "
                "start a fresh cache"
            )
        tables = sorted(row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        columns = [(c[1], c[2], c[3], c[5]) for c in self._conn.execute("PRAGMA table_info(calls)")]
        if app_id == 0 and version == 0 and (not tables or (tables == ["calls"] and columns == V1_COLUMNS)):
            return False
        raise CacheFileError(
            f"the call cache {self.path} is another program's SQLite database, not a socsim call "
            f"cache (tables: {', '.join(tables) or 'none'}; application_id {app_id}, user_version "
            f"{version}); point llm.cache_path at another file, or move that database away"
        )

    def _read_known(self) -> None:
        """Add the keys committed to the file since the last read to _known (under the lock). A row's rowid is
        past every earlier row's: an INSERT OR REPLACE takes a new one, and socsim deletes none (a row deleted by
        hand while a stage runs can give its rowid to a later row, which that stage then does not see)."""
        self._known_at = time.monotonic()
        if self._known is None:
            return
        known, top = self._known, self._known_rowid
        for rowid, key in self._conn.execute("SELECT rowid, key FROM calls WHERE rowid > ?", (top,)):
            known.add(hash(key))
            top = max(top, rowid)
            if len(known) > KNOWN_MAX:  # (stops reading: a large file is not read into memory)
                self._known = None
                return
        self._known_rowid = top

    def _may_hold(self, key: str) -> bool:
        """False where the file surely lacks `key` (under the lock): its hash is not known, also after reading
        what other processes committed since KNOWN_EVERY_S seconds or more."""
        known = self._known
        if known is None or hash(key) in known:
            return True
        if time.monotonic() - self._known_at < KNOWN_EVERY_S:
            return False
        self._read_known()
        return self._known is None or hash(key) in self._known

    def get(self, key: str) -> Completion | None:
        with self._lock:
            pending = self._pending.get(key)
            if pending:
                row: tuple[str] | None = (pending[0],)
            elif self._closed:
                raise sqlite3.ProgrammingError(f"the call cache {self.path} is closed")
            elif self._may_hold(key):
                row = self._conn.execute("SELECT completion FROM calls WHERE key = ?", (key,)).fetchone()
            else:
                row = None
        if row is None:
            return None
        data = json.loads(row[0])
        return Completion(
            text=data["text"],
            prompt_tokens=data["prompt_tokens"],
            completion_tokens=data["completion_tokens"],
            finish_reason=data.get("finish_reason"),
        )

    def put(
        self, key: str, completion: Completion, model_identity: dict[str, Any], identity_json: str | None = None
    ) -> None:
        """Store an answer (committed in batches: the module's docstring). `identity_json`: the identity's
        canonical JSON, where the caller has it."""
        data = {
            "text": completion.text,
            "prompt_tokens": completion.prompt_tokens,
            "completion_tokens": completion.completion_tokens,
            "finish_reason": completion.finish_reason,
        }
        model = identity_json if identity_json is not None else canonical_json(model_identity)
        with self._lock:
            self._pending[key] = (json.dumps(data), model)
            if self._known is not None:
                self._known.add(hash(key))
                if len(self._known) > KNOWN_MAX:
                    self._known = None
            if len(self._pending) >= FLUSH_ROWS or time.monotonic() - self._flushed_at >= FLUSH_EVERY_S:
                self._flush()

    def _flush(self) -> None:
        """Commit the pending answers in one transaction (under the lock)."""
        if self._pending:
            rows = [(k, c, m) for k, (c, m) in self._pending.items()]
            with self._transaction("BEGIN IMMEDIATE"):
                self._conn.executemany("INSERT OR REPLACE INTO calls (key, completion, model) VALUES (?, ?, ?)", rows)
            self._pending.clear()
        self._flushed_at = time.monotonic()

    def flush(self) -> None:
        """Commit every answer stored so far."""
        with self._lock:
            self._flush()

    def __len__(self) -> int:
        with self._lock:
            self._flush()
            count: int = self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
            return count

    def close(self) -> None:
        """Commit what is pending, then close the file (a second close does nothing)."""
        with self._lock:
            try:
                self._flush()
            except sqlite3.ProgrammingError:  # closed already
                pass
            finally:
                self._closed = True
                self._conn.close()
