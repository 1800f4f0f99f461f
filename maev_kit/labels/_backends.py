"""Label stores in a database: SQLite (one file, no server) and PostgreSQL (a team's server).

:class:`~maev_kit.labels.LabelStore` given a URL (``sqlite:///labels.db``,
``postgresql://ana@db.example/labels``) keeps its labels here, with the semantics of
``labels.jsonl`` (docs/label-stores.md):

- **append-only**: one INSERT-only table; triggers refuse UPDATE, DELETE (and TRUNCATE);
- **latest per (item_id, annotator) wins**, by insertion order (the table's identity ``id``);
- **acknowledged means durable**: an append returns only after its transaction committed with
  a durable commit (PostgreSQL ``synchronous_commit = on``; SQLite WAL with
  ``synchronous = FULL``, which syncs the WAL at every commit);
- **idempotent**: every label line carries a client-generated ``label_id`` (unique), so a retry
  after a lost acknowledgement stores it once (``ON CONFLICT (label_id) DO NOTHING``);
- **criterion labels** (a record with ``criterion``) go to a second INSERT-only table,
  ``maev_criterion_labels``, whose ``id`` is drawn from the same counter as ``maev_labels``'s,
  so reading both in ``id`` order is the insertion order. A store made before it gains the
  table (in one transaction, nothing else changed) on its first criterion label; older kits
  read and write its retention labels as before.

The schema is versioned (:data:`SCHEMA_VERSION`) and marked as the kit's by its table
``maev_meta`` (``schema_version`` and ``created_by = maev-kit …``); it is created on the first
*write*. Reads never create anything: a store that does not exist yet reads as empty and stays
absent. A database the kit did not make is never touched — before anything is written, a file
that is not SQLite, a database holding tables but no ``maev_meta``, or a store of a newer schema
is refused with a one-line :class:`LabelStoreError` naming what was found (a SQLite file is
inspected read-only and ``immutable``, so a refused file comes out byte for byte). A URL's password is never shown: every message,
``repr`` and error names the store by :func:`redact_url`. Once a store has reached its server,
connection failures (a server restart) are retried for ``retry_for`` seconds with the same
``label_id``; the first connection fails fast, with a one-line :class:`LabelStoreError`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import sqlite3
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from maev_kit.errors import InputError
from maev_kit.internal import __version__
from maev_kit.labels._records import LabelRecord

__all__ = ["DEFAULT_RETRY_FOR", "SCHEMA_VERSION", "SQLITE_HEADER", "DatabaseBackend", "LabelStoreError",
           "PostgresBackend", "SQLiteBackend", "copy_records", "is_store_url",
           "new_label_id", "open_backend", "redact_url"]

#: The version of the database schema this kit writes (and the newest it reads).
SCHEMA_VERSION = 1
#: Seconds an append or a read keeps retrying a lost connection (after the first connection).
DEFAULT_RETRY_FOR = 30.0
#: Seconds to wait for a PostgreSQL server to accept a connection.
CONNECT_TIMEOUT = 5
#: The first 16 bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def is_sqlite_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a SQLite database, by its first bytes (False when it cannot be read):
    a label store given as a plain path rather than a ``sqlite:///`` URL."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False

_URL = re.compile(r"^(?P<scheme>sqlite|postgres|postgresql)(?:\+[a-z0-9_]+)?://", re.I)
_SECRET_KEYS = frozenset({"password", "passwd", "pass", "sslpassword"})
_COLUMNS = ("label_id", "item_id", "annotator", "label", "note", "created_at", "source",
            "in_sample")
_INSERT = ("INSERT INTO maev_labels (label_id, item_id, annotator, label, note, created_at, "
           "source, in_sample) VALUES ({p}) ON CONFLICT (label_id) DO NOTHING")
#: A label line as read from either table: the columns of ``maev_labels``, then ``criterion``.
_LINE = (*_COLUMNS, "criterion")
#: The table of criterion labels (a record with ``criterion``); retention labels stay in
#: ``maev_labels``, whose CHECK allows only retention labels.
_CRITERIA = "maev_criterion_labels"
_T = TypeVar("_T")


class LabelStoreError(InputError):
    """A database label store cannot be used: unreachable, refused, or of a newer schema.

    One line naming the store by its redacted URL. ``cause`` is ``unreachable`` (no server,
    or the connection was lost for longer than ``retry_for``), ``auth`` (refused: password,
    role, database), ``schema`` (a newer schema or a foreign table), ``conflict`` (a
    ``label_id`` reused for another label), ``driver`` (psycopg missing) or ``other``.
    """

    def __init__(self, message: str, *, cause: str = "other") -> None:
        super().__init__(message)
        self.cause = cause


def is_store_url(value: object) -> bool:
    """True for a ``sqlite://`` or ``postgresql://`` (``postgres://``) label store URL."""
    return isinstance(value, str) and _URL.match(value.strip()) is not None


def redact_url(url: str) -> str:
    """The URL as it may be shown: password (and any ``password=`` option) as ``***``.

    >>> redact_url("postgresql://ana:s3cret@db.example:5432/labels?sslmode=require")
    'postgresql://ana:***@db.example:5432/labels?sslmode=require'
    >>> redact_url("postgresql://db.example/labels?user=ana&password=s3cret")
    'postgresql://db.example/labels?user=ana&password=***'
    >>> redact_url("sqlite:///labels.db")
    'sqlite:///labels.db'
    """
    head, sep, rest = url.strip().partition("://")
    if not sep:
        return "***"
    rest = rest.split("#", 1)[0]
    rest, qsep, query = rest.partition("?")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        userinfo, host = authority.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":***"
        authority = f"{userinfo}@{host}"
    parts = []
    for item in query.split("&") if query else []:
        key = item.split("=", 1)[0]
        parts.append(f"{key}=***" if key.strip().lower() in _SECRET_KEYS else item)
    return f"{head}://{authority}{slash}{path}{qsep}{'&'.join(parts)}"


def new_label_id() -> str:
    """A fresh unique id for one label line (a UUID4 in hex)."""
    return uuid.uuid4().hex


def _one_line(exc: BaseException, secrets: Sequence[str]) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


class DatabaseBackend(ABC):
    """The database under a :class:`LabelStore`: append rows, read them back in order.

    Thread-safe (one lock per backend); after ``fork`` the child opens its own connection.
    """

    kind = ""
    _db_errors: tuple[type[BaseException], ...] = ()

    def __init__(self, url: str, *, retry_for: float = DEFAULT_RETRY_FOR):
        #: The URL as shown everywhere (password redacted).
        self.url = redact_url(url)
        self.retry_for = float(retry_for)
        self._lock = threading.RLock()
        self._conn: Any = None
        self._pid = 0
        self._reached = False  # has this store ever reached its database?
        self._orphans: list[Any] = []  # connections inherited through fork: never closed here

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(_conn=None, _pid=0, _orphans=[], _lock=None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()

    # ------------------------------------------------------------ what each database does
    @abstractmethod
    def _connect(self) -> Any:
        """A new connection, configured for durable commits."""

    @abstractmethod
    def _open(self, write: bool) -> Any | None:
        """A connection to the store, checked to be the kit's (a :class:`LabelStoreError`
        otherwise, before anything is written); None when the store does not exist yet and
        ``write`` is false. With ``write`` the schema is created when missing."""

    @abstractmethod
    def _insert(self, conn: Any, rows: list[tuple[str | bool | None, ...]]) -> int:
        """Insert rows (one transaction); the number actually inserted (not already there)."""

    @abstractmethod
    def _select(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a query."""

    @abstractmethod
    def _is_transient(self, exc: BaseException) -> bool:
        """A lost or refused connection that a retry may cure (a server restart)."""

    def _secrets(self) -> Sequence[str]:
        return ()

    def _close(self, conn: Any) -> None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a broken connection may fail to close; it is dropped
            pass

    # ------------------------------------------------------------ connection and retries
    def _connection(self, write: bool = False) -> Any | None:
        """The cached connection to the store; None (nothing opened) when a read finds no
        store yet."""
        if self._conn is not None and self._pid != os.getpid():
            self._orphans.append(self._conn)  # the parent's: closing it here would cut theirs
            self._conn = None
        if self._conn is None:
            conn = self._open(write)
            self._reached = True
            if conn is None:
                return None
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None and self._pid == os.getpid():
            self._close(self._conn)
        self._conn = None

    def close(self) -> None:
        """Close the connection (the next use opens a new one)."""
        with self._lock:
            self._drop()

    def _run(self, what: str, fn: Callable[[Any], _T], *, write: bool = False,
             absent: _T | None = None) -> _T:
        """``fn(connection)``, retried on a lost connection for up to ``retry_for`` seconds;
        ``absent`` (nothing opened, nothing created) when a read finds no store yet."""
        with self._lock:
            deadline: float | None = None
            delay = 0.05
            while True:
                try:
                    conn = self._connection(write)
                    if conn is None:
                        return absent  # type: ignore[return-value]
                    return fn(conn)
                except self._db_errors as exc:
                    transient = self._reached and self._is_transient(exc)
                    self._drop()
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + self.retry_for
                    if not transient or now >= deadline:
                        raise self._error(what, exc, retried=transient) from None
                    time.sleep(min(delay, max(deadline - now, 0.0)))
                    delay = min(delay * 2, 1.0)

    def _error(self, what: str, exc: BaseException, *, retried: bool) -> LabelStoreError:
        cause = "unreachable" if self._is_transient(exc) else self._cause(exc)
        msg = f"label store {self.url}: {what} failed: {_one_line(exc, self._secrets())}"
        if retried:
            msg += f" (retried for {self.retry_for:g} s)"
        if what == "append":
            msg += "; the label was not acknowledged (adding it again with the same label_id " \
                   "stores it once)"
        return LabelStoreError(msg, cause=cause)

    def _cause(self, exc: BaseException) -> str:
        return "other"

    def _columns(self, conn: Any) -> str:
        """The columns to read: a store made before the ``in_sample`` column reads it as
        NULL (nothing is written by a read)."""
        if self._has_in_sample(conn):
            return ", ".join(_COLUMNS)
        return ", ".join(_COLUMNS[:-1]) + ", NULL AS in_sample"

    def _has_in_sample(self, conn: Any) -> bool:
        raise NotImplementedError

    def _add_in_sample(self, conn: Any) -> None:
        raise NotImplementedError

    def _ensure_in_sample(self, conn: Any) -> None:
        """Before a write: add the ``in_sample`` column to a store made before it (older kits
        name their columns, so they read and write such a store as before). Checked once."""
        if not getattr(self, "_in_sample_ok", False):
            if not self._has_in_sample(conn):
                self._add_in_sample(conn)
            self._in_sample_ok = True

    def _has_criteria(self, conn: Any) -> bool:
        """Whether the store holds the table of criterion labels."""
        raise NotImplementedError

    def _add_criteria(self, conn: Any) -> None:
        """Create the table of criterion labels in one transaction (another process creating
        it at the same moment is waited for); nothing else in the store changes."""
        raise NotImplementedError

    def _criteria_known(self, conn: Any, rows: Sequence[tuple[Any, ...]]) -> bool:
        """Before a write: whether the table of criterion labels is there, created first when
        ``rows`` hold a criterion label (a store made before it gains it then: a retention
        label never changes an older store). Checked once per backend while absent."""
        if not getattr(self, "_criteria_ok", False):
            if self._has_criteria(conn):
                self._criteria_ok = True
            elif any(r[8] is not None for r in rows):
                self._add_criteria(conn)
                self._criteria_ok = True
        return bool(getattr(self, "_criteria_ok", False))

    def _refuse_reused_ids(self, conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """A ``label_id`` already naming a line in the *other* table (a retention label's id
        reused for a criterion label, or the reverse) is a ``conflict``: ids are unique across
        the store, as in one table."""
        if not self._criteria_known(conn, rows):
            return
        mark = "?" if self.kind == "sqlite" else "%s"
        for table, crit in (("maev_labels", True), (_CRITERIA, False)):
            ids = [r[0] for r in rows if (r[8] is not None) is crit]
            for start in range(0, len(ids), 500):
                chunk = ids[start:start + 500]
                found = self._select(conn, f"SELECT label_id FROM {table} WHERE label_id IN "
                                           f"({', '.join([mark] * len(chunk))}) LIMIT 1", chunk)
                if found:
                    raise LabelStoreError(f"label store {self.url}: label_id {found[0][0]!r} "
                                          "is already used by another label; give each label "
                                          "line its own id", cause="conflict")

    def _lines(self, conn: Any, where: str = "") -> str:
        """The query of every label line (both tables, in ``id`` order; ``criterion`` NULL
        for a retention label), filtered by ``where``."""
        sql = f"SELECT id, {self._columns(conn)}, NULL AS criterion FROM maev_labels"
        if self._has_criteria(conn):
            sql += f" UNION ALL SELECT id, {', '.join(_LINE)} FROM {_CRITERIA}"
        return f"SELECT {', '.join(_LINE)} FROM ({sql}) AS lines {where} ORDER BY id"

    # ------------------------------------------------------------ the store's operations
    def append(self, records: Sequence[LabelRecord], label_ids: Sequence[str]) -> int:
        """Append label lines in one transaction; returns once committed durably.

        A ``label_id`` already in the store with the same label (``created_at`` aside) is
        skipped (a retry); with another label it is a :class:`LabelStoreError` (``conflict``). Returns the number of
        rows inserted.
        """
        rows = [_row(i, r) for i, r in zip(label_ids, records)]
        if not rows:
            return 0
        inserted = self._run("append", lambda conn: self._insert(conn, rows), write=True)
        if inserted < len(rows):
            self._check_retries(rows)
        return inserted

    def _check_retries(self, rows: list[tuple[str | bool | None, ...]]) -> None:
        ids = [r[0] for r in rows]
        mark = "?" if self.kind == "sqlite" else "%s"
        found: dict[Any, tuple[Any, ...]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            where = f"WHERE label_id IN ({', '.join([mark] * len(chunk))})"
            for row in self._run("read", lambda conn: self._select(
                    conn, self._lines(conn, where), chunk)):
                found[row[0]] = tuple(row)
        for row in rows:  # a retry of ``add`` may carry a later created_at: same label
            old = found.get(row[0], row)
            if old[:5] + old[6:] != row[:5] + row[6:]:
                raise LabelStoreError(f"label store {self.url}: label_id {row[0]!r} is already "
                                      "used by another label; give each label line its own id",
                                      cause="conflict")

    def entries(self) -> list[tuple[str, LabelRecord]]:
        """Every label line as ``(label_id, record)``, in insertion order."""
        none: list[tuple[Any, ...]] = []
        rows = self._run("read", lambda conn: self._select(conn, self._lines(conn)),
                         absent=none)
        out = []
        for row in rows:
            try:
                rec = LabelRecord(item_id=row[1], annotator=row[2], label=row[3],
                                  note=row[4] or "", created_at=row[5] or "", source=row[6],
                                  in_sample=None if row[7] is None else bool(row[7]),
                                  criterion=row[8])
            except ValidationError as exc:
                from maev_kit.internal import pydantic_problems

                why = "; ".join(f"{p.path}: {p.message}" for p in pydantic_problems(exc, "", None))
                raise LabelStoreError(f"label store {self.url}: the row with label_id "
                                      f"{row[0]!r} is not a valid label: {why}",
                                      cause="schema") from None
            out.append((str(row[0]), rec))
        return out

    def records(self) -> list[LabelRecord]:
        """Every label line in insertion order."""
        return [rec for _, rec in self.entries()]

    def schema_version(self) -> int | None:
        """The schema version recorded in the store; None when there is no store yet (a
        read creates nothing)."""
        none: list[tuple[Any, ...]] = []
        rows = self._run("read", lambda conn: self._select(
            conn, "SELECT value FROM maev_meta WHERE key = 'schema_version'"), absent=none)
        return int(rows[0][0]) if rows else None

    def create(self) -> None:
        """Create the store's schema now if it is missing (what the first append does)."""
        self._run("create", lambda conn: None, write=True)

    def _check_tables(self, tables: Sequence[str], where: str) -> bool:
        """Whether the database holds a store (False: no table at all, so none yet); a
        :class:`LabelStoreError` for tables without the kit's ``maev_meta`` marker."""
        if "maev_meta" in tables:
            return True
        if not tables:
            return False
        if list(tables) == ["maev_labels"]:
            raise self._foreign_table()
        shown = ", ".join(sorted(tables)[:5]) + (", …" if len(tables) > 5 else "")
        n = len(tables)
        raise LabelStoreError(
            f"label store {self.url}: {where} has {n} table{'s' if n != 1 else ''} that "
            f"{'are' if n != 1 else 'is'} not a maev label store ({shown}) and no maev_meta "
            "marker; nothing was read or written — give a new database "
            f"{'file' if self.kind == 'sqlite' else 'or schema'} for the labels",
            cause="schema")

    def _check_version(self, value: Any) -> None:
        try:
            version = int(value)
        except (TypeError, ValueError):
            version = -1
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise LabelStoreError(
                f"label store {self.url} has schema version {version}; this maev-kit "
                f"({__version__}) reads versions up to {SCHEMA_VERSION}: upgrade maev-kit",
                cause="schema")
        raise LabelStoreError(f"label store {self.url}: unknown schema version {value!r} in "
                              "maev_meta", cause="schema")

    def _foreign_table(self) -> LabelStoreError:
        return LabelStoreError(f"label store {self.url}: a table maev_labels exists that no "
                               "maev-kit label store made (no maev_meta); use another database "
                               "or schema", cause="schema")


def _row(label_id: str, record: LabelRecord) -> tuple[str | bool | None, ...]:
    if not isinstance(record, LabelRecord):
        raise TypeError(f"expected a LabelRecord, got {type(record).__name__}")
    return (label_id, record.item_id, record.annotator, record.label, record.note or "",
            record.created_at or "", record.source, record.in_sample, record.criterion)


_META_ROWS = "INSERT INTO maev_meta (key, value) VALUES ('schema_version', '{v}'), " \
             "('created_by', 'maev-kit {kit}')"


_SQLITE_SCHEMA = (
    "CREATE TABLE maev_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE maev_labels (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "label_id TEXT NOT NULL UNIQUE, item_id TEXT NOT NULL, annotator TEXT NOT NULL, "
    "label TEXT NOT NULL CHECK (label IN ('retained', 'lost', 'contradicted', 'skip')), "
    "note TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL DEFAULT '', source TEXT, "
    "in_sample BOOLEAN, "
    "stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    "CREATE INDEX maev_labels_by_annotator ON maev_labels (annotator, id)",
    "CREATE TRIGGER maev_labels_no_update BEFORE UPDATE ON maev_labels "
    "BEGIN SELECT RAISE(ABORT, 'maev_labels is append-only: UPDATE refused'); END",
    "CREATE TRIGGER maev_labels_no_delete BEFORE DELETE ON maev_labels "
    "BEGIN SELECT RAISE(ABORT, 'maev_labels is append-only: DELETE refused'); END",
)
#: The table of criterion labels: ``id`` given by the insert (the next value of the counter
#: ``maev_labels`` draws from: its ``sqlite_sequence`` row, moved on by each criterion label).
_SQLITE_CRITERIA = (
    f"CREATE TABLE {_CRITERIA} (id INTEGER PRIMARY KEY, label_id TEXT NOT NULL UNIQUE, "
    "item_id TEXT NOT NULL, annotator TEXT NOT NULL, "
    "label TEXT NOT NULL CHECK (trim(label) <> ''), "
    "note TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL DEFAULT '', source TEXT, "
    "in_sample BOOLEAN, criterion TEXT NOT NULL CHECK (criterion <> ''), "
    "stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    f"CREATE INDEX {_CRITERIA}_by_annotator ON {_CRITERIA} (annotator, id)",
    f"CREATE TRIGGER {_CRITERIA}_no_update BEFORE UPDATE ON {_CRITERIA} "
    f"BEGIN SELECT RAISE(ABORT, '{_CRITERIA} is append-only: UPDATE refused'); END",
    f"CREATE TRIGGER {_CRITERIA}_no_delete BEFORE DELETE ON {_CRITERIA} "
    f"BEGIN SELECT RAISE(ABORT, '{_CRITERIA} is append-only: DELETE refused'); END",
)
_SQLITE_NEXT_ID = ("SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = "
                   "'maev_labels'), 0), coalesce((SELECT max(id) FROM maev_labels), 0), "
                   f"coalesce((SELECT max(id) FROM {_CRITERIA}), 0)) + 1")
_SQLITE_CRITERION_INSERT = (f"INSERT INTO {_CRITERIA} (id, {', '.join(_LINE)}) VALUES "
                            f"(?, {', '.join('?' * len(_LINE))}) ON CONFLICT (label_id) DO NOTHING")


class SQLiteBackend(DatabaseBackend):
    """``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``: one file, no server.

    WAL journal with ``synchronous = FULL``: every commit syncs the WAL before it returns, so
    an acknowledged label survives a power cut too (``NORMAL`` would survive a process crash
    but may lose the last commits on power loss). Writers queue on the file lock for up to
    ``retry_for`` seconds (``busy_timeout``).
    """

    kind = "sqlite"
    _db_errors = (sqlite3.Error,)

    def __init__(self, url: str, *, retry_for: float = DEFAULT_RETRY_FOR):
        super().__init__(url, retry_for=retry_for)
        rest = _URL.sub("", url.strip(), count=1)
        if not rest.startswith("/") or len(rest) < 2 or "?" in rest:
            raise LabelStoreError(f"label store {self.url}: a SQLite store is "
                                  "'sqlite:///relative/path.db' or 'sqlite:////absolute/path.db' "
                                  "(a file; no options, no in-memory store)", cause="other")
        #: The database file.
        self.path = Path(rest[1:])
        if self.path.is_dir():
            raise LabelStoreError(f"label store {self.url}: {rest[1:]!r} is a folder; name the "
                                  "database file, e.g. 'sqlite:///labels.db'", cause="other")

    def _connect(self) -> Any:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=max(self.retry_for, 1.0),
                               isolation_level=None, check_same_thread=False)
        try:
            deadline = time.monotonic() + max(self.retry_for, 1.0)
            while True:  # SQLite does not wait on a busy lock to switch to WAL: retry it
                try:
                    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            if str(mode).lower() != "wal":
                raise sqlite3.OperationalError(f"cannot switch the journal to WAL (got {mode})")
            conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self, write: bool) -> Any | None:
        if not self._probe() and not write:
            return None
        conn = self._connect()
        try:
            if not self._store_in(conn):
                self._create(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _probe(self) -> bool:
        """Whether the file holds a store: False when it is missing, empty (0 bytes) or a
        database without tables. Inspected read-only and ``immutable`` (nothing is written,
        no journal appears); a file that is not SQLite, or another application's database,
        is a :class:`LabelStoreError`."""
        try:
            with self.path.open("rb") as f:
                head = f.read(16)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise LabelStoreError(f"label store {self.url}: cannot read {self.path}: "
                                  f"{exc.strerror or exc}", cause="other") from None
        if not head:
            return False
        if head != SQLITE_HEADER:
            raise LabelStoreError(f"label store {self.url}: {self.path} is not a SQLite "
                                  "database; nothing was read or written — name a new file "
                                  "for the labels", cause="schema")
        wal = self.path.with_name(self.path.name + "-wal").exists()
        uri = self.path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=max(self.retry_for, 1.0),
                                   isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._error("read", exc, retried=False) from None
        try:
            return self._store_in(conn)
        except sqlite3.Error as exc:
            raise self._error("read", exc, retried=False) from None
        finally:
            conn.close()

    def _store_in(self, conn: Any) -> bool:
        """Whether ``conn``'s database holds the kit's store (its version checked)."""
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' "
            "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'").fetchall()]
        if not self._check_tables(tables, str(self.path)):
            return False
        row = conn.execute("SELECT value FROM maev_meta WHERE key = 'schema_version'").fetchone()
        self._check_version(row[0] if row else None)
        return True

    def _create(self, conn: Any) -> None:
        """Create the schema in one transaction (holding the write lock: another process
        creating it at the same moment is waited for and seen)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._store_in(conn):
                for sql in (*_SQLITE_SCHEMA, *_SQLITE_CRITERIA):
                    conn.execute(sql)
                conn.execute(_META_ROWS.format(v=SCHEMA_VERSION, kit=__version__))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _has_in_sample(self, conn: Any) -> bool:
        return any(r[1] == "in_sample" for r in conn.execute("PRAGMA table_info(maev_labels)"))

    def _add_in_sample(self, conn: Any) -> None:
        try:
            conn.execute("ALTER TABLE maev_labels ADD COLUMN in_sample BOOLEAN")
        except sqlite3.OperationalError as exc:  # another process added it first
            if "duplicate column" not in str(exc):
                raise

    def _has_criteria(self, conn: Any) -> bool:
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (_CRITERIA,)).fetchone() is not None

    def _add_criteria(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._has_criteria(conn):
                for sql in _SQLITE_CRITERIA:
                    conn.execute(sql)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _insert_one(self, conn: Any, row: tuple[str | bool | None, ...]) -> int:
        """Insert one line (inside the caller's write transaction). A criterion label takes
        the next id of ``maev_labels``'s counter and moves the counter on, so every later
        line — by this kit or an older one — comes after it."""
        if row[8] is None:
            return int(conn.execute(_INSERT.format(p=", ".join("?" * len(_COLUMNS))),
                                    row[:8]).rowcount)
        next_id = int(conn.execute(_SQLITE_NEXT_ID).fetchone()[0])
        if not conn.execute(_SQLITE_CRITERION_INSERT, (next_id, *row)).rowcount:
            return 0
        if not conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'maev_labels'",
                            (next_id,)).rowcount:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('maev_labels', ?)",
                         (next_id,))
        return 1

    def _insert(self, conn: Any, rows: list[tuple[str | bool | None, ...]]) -> int:
        self._ensure_in_sample(conn)
        self._refuse_reused_ids(conn, rows)
        if len(rows) == 1 and rows[0][8] is None:  # one statement is one transaction
            return self._insert_one(conn, rows[0])
        conn.execute("BEGIN IMMEDIATE")
        try:
            n = sum(self._insert_one(conn, row) for row in rows)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return int(n)

    def _select(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(conn.execute(sql, tuple(params)).fetchall())

    def _is_transient(self, exc: BaseException) -> bool:
        return False  # a busy file was already waited for (busy_timeout = retry_for)


_PG_SCHEMA = (
    "CREATE TABLE maev_meta (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE maev_labels (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
    "label_id text NOT NULL UNIQUE, item_id text NOT NULL, annotator text NOT NULL, "
    "label text NOT NULL CHECK (label IN ('retained', 'lost', 'contradicted', 'skip')), "
    "note text NOT NULL DEFAULT '', created_at text NOT NULL DEFAULT '', source text, "
    "in_sample boolean, stored_at timestamptz NOT NULL DEFAULT now())",
    "CREATE INDEX maev_labels_by_annotator ON maev_labels (annotator, id)",
    "CREATE OR REPLACE FUNCTION maev_labels_append_only() RETURNS trigger LANGUAGE plpgsql AS "
    "$$BEGIN RAISE EXCEPTION 'maev_labels is append-only: % refused', TG_OP; END$$",
    "CREATE TRIGGER maev_labels_no_change BEFORE UPDATE OR DELETE ON maev_labels "
    "FOR EACH ROW EXECUTE FUNCTION maev_labels_append_only()",
    "CREATE TRIGGER maev_labels_no_truncate BEFORE TRUNCATE ON maev_labels "
    "FOR EACH STATEMENT EXECUTE FUNCTION maev_labels_append_only()",
)


def _pg_criteria(sequence: str) -> tuple[str, ...]:
    """The table of criterion labels; ``id`` drawn from ``sequence``, the one behind
    ``maev_labels.id`` (so both tables read in ``id`` order are in insertion order)."""
    seq = sequence.replace("'", "''")
    return (
        f"CREATE TABLE {_CRITERIA} (id bigint PRIMARY KEY DEFAULT nextval('{seq}'::regclass), "
        "label_id text NOT NULL UNIQUE, item_id text NOT NULL, annotator text NOT NULL, "
        "label text NOT NULL CHECK (btrim(label) <> ''), note text NOT NULL DEFAULT '', "
        "created_at text NOT NULL DEFAULT '', source text, in_sample boolean, "
        "criterion text NOT NULL CHECK (criterion <> ''), "
        "stored_at timestamptz NOT NULL DEFAULT now())",
        f"CREATE INDEX {_CRITERIA}_by_annotator ON {_CRITERIA} (annotator, id)",
        "CREATE OR REPLACE FUNCTION maev_append_only() RETURNS trigger LANGUAGE plpgsql AS "
        "$$BEGIN RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP; END$$",
        f"CREATE TRIGGER {_CRITERIA}_no_change BEFORE UPDATE OR DELETE ON {_CRITERIA} "
        "FOR EACH ROW EXECUTE FUNCTION maev_append_only()",
        f"CREATE TRIGGER {_CRITERIA}_no_truncate BEFORE TRUNCATE ON {_CRITERIA} "
        "FOR EACH STATEMENT EXECUTE FUNCTION maev_append_only()",
    )


_PG_CRITERION_INSERT = (f"INSERT INTO {_CRITERIA} ({', '.join(_LINE)}) VALUES "
                        f"({', '.join(['%s'] * len(_LINE))}) ON CONFLICT (label_id) DO NOTHING")
#: Serialises the creation of the schema between processes (pg_advisory_xact_lock key).
_PG_SCHEMA_LOCK = 0x6D61_6576  # "maev"
#: Connection-class SQLSTATEs a retry may cure: connection exceptions (08), the server
#: shutting down or starting up (57P01-57P03).
_PG_TRANSIENT_STATES = ("57P01", "57P02", "57P03")
_PG_TRANSIENT_TEXT = ("connection refused", "could not connect", "server closed the connection",
                      "connection is closed", "connection is lost", "the database system is",
                      "terminating connection", "timeout expired", "connection timed out",
                      "consuming input failed", "sending query failed", "no route to host",
                      "connection reset", "connection not open", "is bad")
_PG_AUTH_TEXT = ("password authentication failed", "no pg_hba.conf entry", "does not exist",
                 "permission denied", "authentication failed", "no password supplied")


class PostgresBackend(DatabaseBackend):
    """``postgresql://user:password@host:port/database``: a team's PostgreSQL server.

    Uses psycopg 3 (``pip install 'maev-kit[team]'``). Every connection sets
    ``synchronous_commit = on``, so a commit returns only once its WAL record is flushed to
    the server's disk. Any libpq URL option works (``sslmode``, ``options=-csearch_path%3D…``
    to keep a store in its own schema).
    """

    kind = "postgresql"

    def __init__(self, url: str, *, retry_for: float = DEFAULT_RETRY_FOR):
        super().__init__(url, retry_for=retry_for)
        try:
            import psycopg
        except ImportError:
            raise LabelStoreError(f"label store {self.url}: PostgreSQL label stores need "
                                  "psycopg 3: pip install 'maev-kit[team]'",
                                  cause="driver") from None
        self._psycopg = psycopg
        self._db_errors = (psycopg.Error,)
        self._conninfo = _URL.sub("postgresql://", url.strip(), count=1)
        try:
            params = psycopg.conninfo.conninfo_to_dict(self._conninfo)
        except psycopg.Error:
            raise LabelStoreError(f"label store {self.url}: not a valid PostgreSQL URL",
                                  cause="other") from None
        self._password = str(params.get("password") or "")
        self._extra: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in params:
            self._extra["connect_timeout"] = CONNECT_TIMEOUT
        if "application_name" not in params:
            self._extra["application_name"] = "maev-kit labels"

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state.update(_psycopg=None, _db_errors=())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        import psycopg

        self._psycopg = psycopg
        self._db_errors = (psycopg.Error,)

    def _secrets(self) -> Sequence[str]:
        return (self._password,)

    def _connect(self) -> Any:
        conn = self._psycopg.connect(self._conninfo, **self._extra)
        try:
            conn.execute("SET synchronous_commit = on")
        except BaseException:
            conn.close()
            raise
        return conn

    def _open(self, write: bool) -> Any | None:
        conn = self._connect()
        try:
            if not self._store_in(conn):
                if not write:
                    conn.close()
                    return None
                self._create(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _store_in(self, conn: Any) -> bool:
        """Whether the connection's schema (the first of its ``search_path``) holds the kit's
        store, its version checked; other tables there without the marker are refused."""
        schema, = conn.execute("SELECT current_schema()").fetchone()
        tables = [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind IN ('r', 'p', 'v', 'm', 'f')").fetchall()]
        if not self._check_tables(tables, f"schema {schema!r}" if schema else "the database"):
            return False
        row = conn.execute("SELECT value FROM maev_meta WHERE key = 'schema_version'").fetchone()
        self._check_version(row[0] if row else None)
        return True

    def _create(self, conn: Any) -> None:
        """Create the schema. A session lock, then a new transaction: a transaction that
        started before another process created the tables would not see them in its catalog
        cache."""
        conn.execute("SELECT pg_advisory_lock(%s)", (_PG_SCHEMA_LOCK,))
        try:
            with conn.transaction():
                if not self._store_in(conn):
                    for sql in _PG_SCHEMA:
                        conn.execute(sql)
                    self._create_criteria(conn)
                    conn.execute(_META_ROWS.format(v=SCHEMA_VERSION, kit=__version__))
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SCHEMA_LOCK,))

    def _create_criteria(self, conn: Any) -> None:
        seq, = conn.execute("SELECT pg_get_serial_sequence('maev_labels', 'id')").fetchone()
        if not seq:
            raise LabelStoreError(f"label store {self.url}: maev_labels.id draws from no "
                                  "sequence; cannot add the table of criterion labels",
                                  cause="schema")
        for sql in _pg_criteria(seq):
            conn.execute(sql)

    def _has_criteria(self, conn: Any) -> bool:
        return conn.execute(
            "SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
            "ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relname = %s AND c.relkind IN ('r', 'p')", (_CRITERIA,)).fetchone() is not None

    def _add_criteria(self, conn: Any) -> None:
        """Under the schema lock, in a new transaction (see :meth:`_create`)."""
        conn.execute("SELECT pg_advisory_lock(%s)", (_PG_SCHEMA_LOCK,))
        try:
            with conn.transaction():
                if not self._has_criteria(conn):
                    self._create_criteria(conn)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_SCHEMA_LOCK,))

    def _has_in_sample(self, conn: Any) -> bool:
        return conn.execute(
            "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'maev_labels' AND column_name = 'in_sample'").fetchone() is not None

    def _add_in_sample(self, conn: Any) -> None:
        conn.execute("ALTER TABLE maev_labels ADD COLUMN IF NOT EXISTS in_sample boolean")

    def _insert(self, conn: Any, rows: list[tuple[str | bool | None, ...]]) -> int:
        self._ensure_in_sample(conn)
        self._refuse_reused_ids(conn, rows)
        retention = _INSERT.format(p=", ".join(["%s"] * len(_COLUMNS)))

        def statement(row: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
            return (retention, row[:8]) if row[8] is None else (_PG_CRITERION_INSERT, row)

        with conn.cursor() as cur:
            if len(rows) == 1:  # autocommit: one statement, one round trip, one commit
                cur.execute(*statement(rows[0]))
                return int(cur.rowcount)
            n = 0
            with conn.transaction():  # runs of one kind at a time: ids drawn in order
                for _, run in itertools.groupby(rows, key=lambda r: r[8] is None):
                    todo = [statement(r) for r in run]
                    cur.executemany(todo[0][0], [params for _, params in todo])
                    n += int(cur.rowcount)
            return n

    def _select(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with conn.cursor() as cur:
            cur.execute(sql, list(params) or None)
            return list(cur.fetchall())

    def _is_transient(self, exc: BaseException) -> bool:
        if not isinstance(exc, self._psycopg.OperationalError):
            return False
        state = getattr(exc, "sqlstate", None) or ""
        if state.startswith("08") or state in _PG_TRANSIENT_STATES:
            return True
        if state:  # any other server-side error is an answer, not a lost connection
            return False
        text = str(exc).lower()
        if any(t in text for t in _PG_AUTH_TEXT):
            return False
        return any(t in text for t in _PG_TRANSIENT_TEXT)

    def _cause(self, exc: BaseException) -> str:
        text = str(exc).lower()
        state = getattr(exc, "sqlstate", None) or ""
        if state.startswith(("28", "3D", "42501")) or any(t in text for t in _PG_AUTH_TEXT):
            return "auth"
        return "other"


def open_backend(url: str, *, retry_for: float = DEFAULT_RETRY_FOR) -> DatabaseBackend:
    """The backend for a ``sqlite://`` or ``postgresql://`` URL (nothing is connected yet)."""
    m = _URL.match(url.strip())
    if m is None:
        raise LabelStoreError(f"label store {redact_url(url)}: not a sqlite:// or "
                              "postgresql:// URL", cause="other")
    if not retry_for >= 0:
        raise ValueError(f"`retry_for` must be a number of seconds >= 0, got {retry_for!r}")
    if m.group("scheme").lower() == "sqlite":
        return SQLiteBackend(url, retry_for=retry_for)
    return PostgresBackend(url, retry_for=retry_for)


def _content_key(record: LabelRecord) -> str:
    d = record.model_dump(exclude_none=True)
    return hashlib.sha256(json.dumps(d, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def copy_records(source: Any, dest: Any) -> int:
    """Append to ``dest`` the label lines of ``source`` that it does not hold yet; idempotent.

    Both are stores (anything with ``records()`` and ``extend(records, label_ids=...)``).
    Lines are compared by content (every field), counting repeats, so copying twice adds
    nothing the second time. Order is kept; the lines go after what ``dest`` already holds.
    """
    have = Counter(_content_key(r) for r in dest.records())
    seen: Counter[str] = Counter()
    todo: list[LabelRecord] = []
    ids: list[str] = []
    for rec in source.records():
        key = _content_key(rec)
        seen[key] += 1
        if seen[key] <= have[key]:
            continue
        todo.append(rec)
        ids.append(f"copy-{key[:40]}-{seen[key]}")
    if todo:
        dest.extend(todo, label_ids=ids)
    return len(todo)
