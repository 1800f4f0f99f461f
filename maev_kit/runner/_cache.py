"""A persistent, content-addressed cache of judge replies in SQLite.

The key is a SHA-256 of everything that changes the answer — the backend's identity (kind,
model, answer-changing parameters, endpoint), the judge's name and version and the exact
messages — and of nothing that does not (concurrency, retries, timeouts, api keys). The value
is the raw reply text with its usage, cost and latency; verdicts are parsed from it on every
read, so a parser fix needs no new request.

Two processes may write at once: the database runs in WAL mode with a busy timeout, and each
reply is committed as soon as it arrives, so an interrupted run keeps everything finished.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.backends import Completion

__all__ = ["DEFAULT_CACHE_DIR", "JudgeCache", "cache_key"]

#: Where the cache lives when ``cache=None``: relative to the current directory.
DEFAULT_CACHE_DIR = ".maev_cache"
CACHE_FILENAME = "judge_cache.sqlite3"
_KEY_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost REAL,
    latency REAL NOT NULL,
    model TEXT,
    judge TEXT NOT NULL,
    request TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(backend_identity: Mapping[str, Any], judge_name: str, judge_version: str,
              messages: Sequence[Mapping[str, Any]]) -> str:
    """SHA-256 (hex) of the canonical JSON of what determines a reply.

    >>> ident = {"kind": "litellm", "model": "gpt-4o-mini", "params": {"temperature": 0}}
    >>> msgs = [{"role": "user", "content": "Facts: ..."}]
    >>> k = cache_key(ident, "retention-v1", "1", msgs)
    >>> len(k), k == cache_key(dict(ident), "retention-v1", "1", list(msgs))
    (64, True)
    >>> k == cache_key(ident, "retention-v1", "2", msgs)
    False
    """
    return hashlib.sha256(_canonical(_request(backend_identity, judge_name, judge_version,
                                              messages)).encode("utf-8")).hexdigest()


def _request(backend_identity: Mapping[str, Any], judge_name: str, judge_version: str,
             messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"v": _KEY_VERSION, "backend": dict(backend_identity),
            "judge": {"name": judge_name, "version": str(judge_version)},
            "messages": [dict(m) for m in messages]}


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


@dataclass(frozen=True)
class CachedReply:
    """One stored reply."""

    key: str
    completion: Completion
    judge: str
    created_at: float


def connect_wal(path: str | os.PathLike[str], timeout: float = 60.0) -> sqlite3.Connection:
    """A connection to a SQLite file shared by processes: autocommit, waiting up to
    ``timeout`` seconds for a lock, in WAL mode (readers never wait for the writer).

    Switching a file to WAL takes it alone, and SQLite does not wait for that: while another
    process holds a write lock, ``PRAGMA journal_mode = WAL`` fails at once with "database is
    locked" whatever the busy timeout (two processes opening a new cache together, seen in
    CI). That one step is retried here until ``timeout``. A file already in WAL needs no lock.
    """
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
    deadline, pause = time.monotonic() + timeout, 0.005
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return db
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() >= deadline:
                db.close()
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.1)


class JudgeCache:
    """The reply store of one cache directory (file ``judge_cache.sqlite3`` inside it).

    >>> import tempfile
    >>> with JudgeCache(tempfile.mkdtemp()) as cache:
    ...     cache.put("k1", Completion("{}", 10, 2, None, 0.3), judge="retention-v1@1", request={})
    ...     len(cache), cache.get_many(["k1", "k2"])["k1"].completion.text
    (1, '{}')
    """

    def __init__(self, directory: str | os.PathLike[str] = DEFAULT_CACHE_DIR) -> None:
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(f"`cache` must be a directory, but {str(self.directory)!r} is a file; "
                             "pass a directory path, None for the default or False to turn it off")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / CACHE_FILENAME
        self._db = connect_wal(self.path)
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r})"

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def get_many(self, keys: Iterable[str]) -> dict[str, CachedReply]:
        """The stored replies among ``keys`` (missing keys are simply absent)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, CachedReply] = {}
        for start in range(0, len(keys), 500):  # stay under SQLite's variable limit
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                "SELECT key, text, prompt_tokens, completion_tokens, cost, latency, model, judge, "
                f"created_at FROM replies WHERE key IN ({marks})", chunk)
            for key, text, pt, ct, cost, latency, model, judge, created in rows:
                found[key] = CachedReply(key, Completion(text, pt, ct, cost, latency, model),
                                         judge, created)
        return found

    def put(self, key: str, completion: Completion, *, judge: str,
            request: Mapping[str, Any]) -> None:
        """Store one reply, committed at once (safe against a concurrent writer)."""
        self._db.execute(
            "INSERT OR REPLACE INTO replies (key, text, prompt_tokens, completion_tokens, cost, "
            "latency, model, judge, request, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (key, completion.text, completion.prompt_tokens, completion.completion_tokens,
             completion.cost, completion.latency, completion.model, judge, _canonical(request),
             time.time()))

    def clear(self) -> None:
        """Delete every stored reply."""
        self._db.execute("DELETE FROM replies")
