"""The label store: an append-only ``labels.jsonl`` that survives crashes and concurrent writers.

Every label is one line, written with a single ``os.write`` on a file descriptor opened with
``O_APPEND`` and ``fsync``-ed before :meth:`LabelStore.add` returns. Writers also hold an
exclusive ``flock`` on the file while they write, so two processes labeling one file never
interleave or overwrite each other's lines. A *torn* last line (a crash or power cut in the
middle of a write — never acknowledged) is tolerated on load and reported; the next write cuts
it off first so the file stays valid JSONL.

The same class keeps labels in a database when given a URL instead of a path —
``sqlite:///labels.db`` (one file, no server) or ``postgresql://user@host/db`` (a team) — with
the same semantics: append-only, latest per ``(item_id, annotator)`` wins, acknowledged means
durable (:mod:`maev_kit.labels._backends`, docs/label-stores.md).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError, LabelValidationError, Problem
from maev_kit.internal import append_lines, display_name
from maev_kit.labels._backends import (
    DEFAULT_RETRY_FOR,
    SQLITE_HEADER,
    DatabaseBackend,
    SQLiteBackend,
    copy_records,
    is_store_url,
    new_label_id,
    open_backend,
)
from maev_kit.labels._records import (
    LABEL_VALUES,
    LabelRecord,
    check_annotator,
    latest_labels,
    read_label_file,
)

__all__ = ["LabelStore", "LabelStoreWarning", "copy_labels", "open_label_store"]


class LabelStoreWarning(UserWarning):
    """The labels file had a torn last line (an interrupted write); it was ignored."""


#: Suffixes of a SQLite file not there yet, given as a plain path.
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def sqlite_url(path: Path) -> str:
    """The ``sqlite:///`` URL of a database file (``sqlite:////abs`` for an absolute path).

    >>> sqlite_url(Path("labels.db")), sqlite_url(Path("/srv/labels.db"))
    ('sqlite:///labels.db', 'sqlite:////srv/labels.db')
    """
    return "sqlite:///" + str(path)


def _refuse_other_kit_file(path: Path) -> None:
    """An :class:`InputError` for a file the kit recognises as something other than labels (a
    trace file, expectations, a judge card, a report…): labels are never appended to it."""
    from maev_kit.internal import sniff

    found = sniff(path)
    if found is not None and found.kind not in (None, "labels"):
        raise InputError(f"{display_name(path)}: this is {found.what}, not a labels file; give "
                         "the labels file (e.g. labels.jsonl) or a label store URL")


def _is_sqlite_path(path: Path) -> bool:
    """Whether a plain path names a SQLite store (by the file's first bytes, else by its
    suffix); a file that is neither SQLite nor text that could be a labels file is refused."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except FileNotFoundError:
        return path.suffix.lower() in SQLITE_SUFFIXES
    except OSError as exc:
        raise InputError(f"{display_name(path)}: cannot read it ({exc.strerror or exc})"
                         ) from None
    if head.startswith(SQLITE_HEADER):
        return True
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return not head and path.suffix.lower() in SQLITE_SUFFIXES
    if text[:1] != b"{" or b"\x00" in head:
        raise InputError(f"{display_name(path)}: neither a labels file (JSONL, one label "
                         "object per line) nor a SQLite database; it is left as it is — give "
                         "a labels .jsonl file or a label store")
    return False


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class LabelStore:
    """Human labels in an append-only ``labels.jsonl`` (docs/formats.md, "Labels JSONL").

    The latest line per ``(item_id, annotator)`` wins; several annotators (and several
    processes) can share one file.

    Parameters
    ----------
    path : str or path-like
        The labels file. It is created (with its folder) on the first write. A SQLite file
        given as a plain path (its first bytes are SQLite's header; or, not there yet, it ends
        in ``.db``, ``.sqlite`` or ``.sqlite3``) is a SQLite store, as its ``sqlite:///`` URL
        would be; a file that is neither a labels file nor SQLite is refused
        (:class:`~maev_kit.errors.InputError`), never written. Or a database URL: ``sqlite:///relative/labels.db``, ``sqlite:////absolute/labels.db``,
        ``postgresql://user:password@host:port/database`` (docs/label-stores.md); the
        password is never shown (``repr``, messages and errors show ``user:***@``).
    retry_for : float
        Database stores: seconds an append or a read retries a lost connection (a server
        restart) before it raises :class:`~maev_kit.labels.LabelStoreError`. The first
        connection is not retried. Ignored for a labels file.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
    >>> store = LabelStore(path)
    >>> store.add("c-001/h0/f1", "lost", annotator="ana").label
    'lost'
    >>> _ = store.add("c-001/h0/f1", "retained", annotator="ana", note="said it later")
    >>> _ = store.add("c-001/h0/f1", "retained", annotator="ben")
    >>> [r.label for r in store.labels(annotator="ana")]
    ['lost', 'retained']
    >>> sorted((k, r.label) for k, r in store.latest().items())
    [(('c-001/h0/f1', 'ana'), 'retained'), (('c-001/h0/f1', 'ben'), 'retained')]
    >>> store.annotators()
    ['ana', 'ben']
    """

    def __init__(self, path: str | os.PathLike[str], *,
                 retry_for: float = DEFAULT_RETRY_FOR):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a file path (str or os.PathLike) or a label store "
                            f"URL, got {type(path).__name__}")
        #: The torn last line found by the latest load, or None.
        self.torn_last_line: Problem | None = None
        self._warned_torn: tuple[int | None, str] | None = None
        #: The database behind the store, None for a labels file.
        self.database: DatabaseBackend | None = None
        if isinstance(path, str) and is_store_url(path):
            self.database = open_backend(path, retry_for=retry_for)
            #: The labels file (None when the store is a database).
            self.path: Path | None = None
            return
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"`path` {display_name(self.path)!r} is a folder; give the labels "
                             "file, e.g. 'labels.jsonl' inside it")
        if _is_sqlite_path(self.path):
            self.database = SQLiteBackend(sqlite_url(self.path), retry_for=retry_for)
            self.path = None
            return
        _refuse_other_kit_file(self.path)

    @property
    def backend(self) -> str:
        """``"jsonl"``, ``"sqlite"`` or ``"postgresql"``."""
        return "jsonl" if self.database is None else self.database.kind

    @property
    def location(self) -> str:
        """Where the labels are, as it may be shown: the file's name or the redacted URL."""
        if self.database is not None:
            return self.database.url
        assert self.path is not None
        return display_name(self.path)

    def __repr__(self) -> str:
        return f"LabelStore({self.location!r})"

    def close(self) -> None:
        """Close a database store's connection (a later use reconnects); no-op for a file."""
        if self.database is not None:
            self.database.close()

    def __enter__(self) -> LabelStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- reading
    def records(self) -> list[LabelRecord]:
        """Every label line in file order (read fresh from disk: sees other processes' writes).

        Raises
        ------
        LabelValidationError
            When a line other than a torn last line is invalid. A torn last line is ignored,
            kept in :attr:`torn_last_line` and reported once with a :class:`LabelStoreWarning`.
        """
        if self.database is not None:
            return self.database.records()
        assert self.path is not None
        if not self.path.exists():
            self.torn_last_line = None
            return []
        lf = read_label_file(self.path)
        self.torn_last_line = lf.torn_last_line
        if lf.problems:
            raise LabelValidationError(lf.problems)
        if lf.torn_last_line is not None:
            key = (lf.torn_last_line.line, str(lf.torn_last_line))
            if key != self._warned_torn:
                self._warned_torn = key
                warnings.warn(f"{lf.torn_last_line} (a write was interrupted before it was "
                              "acknowledged; the next label written cuts it off)",
                              LabelStoreWarning, stacklevel=2)
        return lf.records

    def labels(self, annotator: str | None = None, *, include_skip: bool = True
               ) -> list[LabelRecord]:
        """All label lines (every click, not just the latest), optionally for one annotator."""
        return [r for r in self.records()
                if (annotator is None or r.annotator == annotator)
                and (include_skip or r.label != "skip")]

    def latest(self, annotator: str | None = None, *, include_skip: bool = False
               ) -> dict[tuple[str, str], LabelRecord]:
        """The latest label per ``(item_id, annotator)``; ``skip`` dropped unless asked for."""
        return latest_labels(self.labels(annotator), include_skip=include_skip)

    def annotators(self) -> list[str]:
        """Annotators in the order of their first label."""
        return list(dict.fromkeys(r.annotator for r in self.records()))

    def to_frame(self, *, latest: bool = True):
        """A pandas DataFrame of the labels (latest per item and annotator, or every line)."""
        import pandas as pd

        recs = list(self.latest().values()) if latest else self.records()
        cols = ["item_id", "annotator", "label", "note", "created_at", "source"]
        return pd.DataFrame([r.model_dump() for r in recs], columns=cols)

    def __len__(self) -> int:
        return len(self.records())

    # ---------------------------------------------------------------- writing
    def add(self, item_id: str, label: str, *, annotator: str, note: str = "",
            source: str | None = None, label_id: str | None = None,
            in_sample: bool | None = None, criterion: str | None = None) -> LabelRecord:
        """Append one label; returns once the line is on disk (written and fsync-ed).

        A database store returns once the transaction committed; ``label_id`` (default: a new
        UUID) names the line there, so adding it again with the same id stores it once. A
        labels file keeps no ids. ``in_sample`` marks whether the item was in the random sample
        the labeler followed (``False``: a label kept outside it); None writes no mark.

        Raises
        ------
        ValueError
            When ``label`` is not one of ``retained``, ``lost``, ``contradicted``, ``skip``,
            ``item_id`` is blank or ``annotator`` is not a valid name
            (:func:`~maev_kit.labels.check_annotator`).

        ``criterion`` (a criterion's name) records a label of that criterion: ``label`` is
        then one of its labels or ``skip`` (the caller checks which; the Labeler does).
        """
        if criterion is None and label not in LABEL_VALUES:
            raise ValueError(f"`label` must be one of {', '.join(LABEL_VALUES)}; got {label!r}")
        if criterion is not None and (not isinstance(label, str) or not label.strip()):
            raise ValueError(f"`label` must be a non-blank string, got {label!r}")
        if not isinstance(item_id, str) or not item_id.strip():
            raise ValueError(f"`item_id` must be a non-blank string, got {item_id!r}")
        check_annotator(annotator, "`annotator`")
        record = LabelRecord(item_id=item_id, annotator=annotator,
                             label=label,
                             note=note or "", created_at=_now(), source=source,
                             in_sample=in_sample, criterion=criterion)
        self.append(record, label_id=label_id)
        return record

    def append(self, record: LabelRecord, *, label_id: str | None = None) -> None:
        """Append an existing :class:`LabelRecord` (one write, fsync-ed before returning)."""
        self.extend([record], label_ids=None if label_id is None else [label_id])

    def extend(self, records: Iterable[LabelRecord], *,
               label_ids: Iterable[str] | None = None) -> None:
        """Append several records; each is its own single-write line.

        A database store appends them in one transaction; ``label_ids`` (one per record,
        unique; default new UUIDs) make a retry idempotent. A labels file ignores them.
        """
        if self.database is not None:
            recs = list(records)
            ids = [new_label_id() for _ in recs] if label_ids is None else list(label_ids)
            if len(ids) != len(recs) or len(set(ids)) != len(ids) or not all(
                    isinstance(i, str) and i.strip() for i in ids):
                raise ValueError("`label_ids` must give one unique, non-blank id per record")
            self.database.append(recs, ids)
            return
        assert self.path is not None
        if append_lines(self.path, [self._encode(r) for r in records]):
            self.torn_last_line = None

    @staticmethod
    def _encode(record: LabelRecord) -> bytes:
        if not isinstance(record, LabelRecord):
            raise TypeError(f"expected a LabelRecord, got {type(record).__name__}")
        d: dict[str, Any] = record.model_dump(exclude_none=True)
        return (json.dumps(d, ensure_ascii=False) + "\n").encode("utf-8")


def open_label_store(path_or_url: str | os.PathLike[str] | LabelStore, *,
                     retry_for: float = DEFAULT_RETRY_FOR) -> LabelStore:
    """A :class:`LabelStore` for a labels file, a ``sqlite://`` or a ``postgresql://`` URL.

    A store passes through unchanged. Nothing is connected until the first read or write.

    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> open_label_store(os.path.join(folder, "labels.jsonl")).backend
    'jsonl'
    >>> open_label_store("postgresql://ana:s3cret@db.example/labels")
    LabelStore('postgresql://ana:***@db.example/labels')
    """
    if isinstance(path_or_url, LabelStore):
        return path_or_url
    return LabelStore(path_or_url, retry_for=retry_for)


def copy_labels(source: str | os.PathLike[str] | LabelStore,
                dest: str | os.PathLike[str] | LabelStore) -> int:
    """Copy label lines from one store to another (file ↔ database); returns how many.

    Idempotent: lines ``dest`` already holds (same content, repeats counted) are not copied
    again, so an interrupted copy can simply be run again. ``labels.jsonl`` is the
    interchange format: ``copy_labels("labels.jsonl", "postgresql://…")`` imports a file,
    ``copy_labels("postgresql://…", "export.jsonl")`` exports the whole history.
    """
    return copy_records(open_label_store(source), open_label_store(dest))
