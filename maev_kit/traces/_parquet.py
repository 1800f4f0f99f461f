"""Trace Parquet: one row per conversation, turns and handoffs nested (``docs/formats.md``).

pyarrow (a dependency of maev-kit) is imported only here, and only when a Parquet file is read
or written.

Columns (schema version 1, stored in the file's key-value metadata as
``maev_kit.schema_version``):

- ``conversation_id``: string
- ``turns``: list of struct ``agent_id``, ``agent_role``, ``message`` (strings),
  ``tool_calls`` (a JSON string: the list of tool calls; null when there is none),
  ``turn_index`` (int64)
- ``handoffs``: list of struct ``from_agent``, ``to_agent``, ``reason`` (string or null),
  ``context_passed`` (a JSON string: the object), ``turn_index`` (int64), ``mode`` (string)
- ``user_messages``: list of struct ``content`` (string), ``turn_index`` (int64)
- ``metadata``: a JSON string (the object)

Free-form objects (``tool_calls``, ``context_passed``, ``metadata``) are JSON strings so the
schema does not change with their contents.
"""

from __future__ import annotations

import collections
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast, overload

from maev_kit.errors import InputError, Problem, TraceValidationError
from maev_kit.internal import display_name, paused_gc
from maev_kit.traces._model import (
    AgentTurn,
    Handoff,
    HandoffMode,
    HandoffReason,
    MultiAgentTrace,
    UserMessage,
    _agent_turns,
    _handoffs,
    _traces,
    _user_messages,
)

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["PARQUET_MAGIC", "is_parquet_file", "load_parquet", "save_parquet", "table_to_traces", "traces_to_table",
           "trace_schema"]

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)
_VERSION_KEY = b"maev_kit.schema_version"
_REASONS: dict[str | None, HandoffReason | None] = {r.value: r for r in HandoffReason}
_REASONS[None] = None
_MODES: dict[str | None, str] = {"transfer": "transfer", "delegate": "delegate"}


def _pa() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (registers pa.parquet)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise InputError("Parquet traces need pyarrow: pip install pyarrow") from e
    return pa


def trace_schema() -> pa.Schema:
    """The Arrow schema of a trace table (schema version 1, in the schema's metadata)."""
    pa = _pa()
    s, i64 = pa.string(), pa.int64()
    turn = pa.struct([("agent_id", s), ("agent_role", s), ("message", s), ("tool_calls", s),
                      ("turn_index", i64)])
    handoff = pa.struct([("from_agent", s), ("to_agent", s), ("reason", s),
                         ("context_passed", s), ("turn_index", i64), ("mode", s)])
    user = pa.struct([("content", s), ("turn_index", i64)])
    return pa.schema([("conversation_id", s), ("turns", pa.list_(turn)),
                      ("handoffs", pa.list_(handoff)), ("user_messages", pa.list_(user)),
                      ("metadata", s)],
                     metadata={_VERSION_KEY: str(SCHEMA_VERSION).encode()})


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def traces_to_table(traces: Iterable[MultiAgentTrace]) -> pa.Table:
    """Traces as an Arrow table, one row per conversation (see the module docstring)."""
    pa = _pa()
    ids, turns, handoffs, users, metas = [], [], [], [], []
    for t in traces:
        ids.append(t.conversation_id)
        turns.append([{"agent_id": a.agent_id, "agent_role": a.agent_role, "message": a.message,
                       "tool_calls": _dumps(a.tool_calls) if a.tool_calls else None,
                       "turn_index": a.turn_index} for a in t.turns])
        handoffs.append([{"from_agent": h.from_agent, "to_agent": h.to_agent,
                          "reason": None if h.reason is None else h.reason.value,
                          "context_passed": _dumps(h.context_passed), "turn_index": h.turn_index,
                          "mode": h.mode} for h in t.handoffs])
        users.append([{"content": m.content, "turn_index": m.turn_index}
                      for m in t.user_messages])
        metas.append(_dumps(t.metadata) if t.metadata else "{}")
    return pa.Table.from_pydict({"conversation_id": ids, "turns": turns, "handoffs": handoffs,
                                 "user_messages": users, "metadata": metas},
                                schema=trace_schema())


def save_parquet(traces: Iterable[MultiAgentTrace], path: str | os.PathLike[str], *,
                 row_group_size: int = 10_000) -> None:
    """Write traces as Parquet (LZ4-compressed); :func:`load_parquet` reads back equal objects.

    LZ4 rather than zstd: on the benchmark's 10,000 traces the file is ~1.6x bigger (14 vs
    8.8 MB; the JSONL is 60 MB) and Arrow decodes it in half the time, which makes loading
    ~12 % faster. Files written with any codec are read.

    The file is written beside its destination and renamed into place, so a reader never sees
    half a file.
    """
    pa = _pa()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pa.parquet.write_table(traces_to_table(traces), tmp, compression="lz4",
                               row_group_size=row_group_size)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


#: The first (and last) four bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"


def is_parquet_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a file that starts with Parquet's magic bytes (whatever its name).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "traces.data")
    >>> save_parquet([MultiAgentTrace("c-1")], p)
    >>> is_parquet_file(p), is_parquet_file(os.path.dirname(p))
    (True, False)
    """
    try:
        with open(path, "rb") as f:
            return f.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def load_parquet(path: str | os.PathLike[str]) -> list[MultiAgentTrace]:
    """Load a trace Parquet file; every problem is raised in one
    :class:`~maev_kit.errors.TraceValidationError` naming the file, the row (1-based) and
    the field.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> t = MultiAgentTrace("c-1", turns=[AgentTurn("a", "router", "Over to b.")],
    ...                     handoffs=[Handoff("a", "b", "escalation")])
    >>> save_parquet([t], p)
    >>> [(t.conversation_id, t.handoffs[0].reason.value) for t in load_parquet(p)]
    [('c-1', 'escalation')]
    """
    pa = _pa()
    name = display_name(path)
    if not Path(path).exists():
        raise TraceValidationError([Problem(name, None, "", "file not found")])
    with paused_gc():  # see table_to_traces
        try:
            with pa.parquet.ParquetFile(path) as file:
                metadata = file.metadata
                problems = _check_schema(file.schema_arrow.empty_table(), name, True)
            if problems:
                raise TraceValidationError(problems)
            # the schema is right: these columns can be read dictionary-encoded
            with pa.parquet.ParquetFile(path, metadata=metadata,
                                        read_dictionary=_READ_AS_DICTIONARY) as file:
                fast = _fast_batches(file)
            if fast is None:  # something is off: every problem, row by row
                traces, problems, to_check = _table_to_traces(pa.parquet.read_table(path),
                                                              name, 1, True)
                if problems:
                    raise TraceValidationError(problems)
            else:
                traces, to_check = fast
        except (OSError, pa.ArrowException) as e:
            raise TraceValidationError([Problem(name, None, "", f"not a readable Parquet file "
                                                f"({str(e).splitlines()[0]})")]) from None
        _warn_findings(traces, name, to_check)
    return traces


# Rows per batch of a file read by load_parquet: a batch's Arrow data and the lists made on the
# way are freed before the next batch, whose allocations reuse that memory. On the benchmark's
# 10,000 traces this takes about a tenth less CPU time than building from the whole table
# (fewer fresh memory pages to fault in); 500 to 10,000 rows measured, 2,000-4,000 best.
_BATCH_ROWS = 4096


def _batches(file: Any, row_groups: Iterable[int] | None = None,
             columns: list[str] | None = None) -> Iterator[pa.Table]:
    """A ParquetFile's row groups (all, or ``row_groups``) as tables of about ``_BATCH_ROWS``
    rows: small row groups read one by one and put together, a large one read in batches
    (with dictionary-encoded columns, Arrow reads no nested column across row groups)."""
    pa = _pa()
    group: list[Any] = []  # pyarrow Tables (`pa` here is the module _pa() gave)
    rows = 0
    groups = range(file.metadata.num_row_groups) if row_groups is None else row_groups
    for i in groups:
        size = file.metadata.row_group(i).num_rows
        if size > _BATCH_ROWS:
            if group:
                yield pa.concat_tables(group)
                group, rows = [], 0
            for batch in file.iter_batches(batch_size=_BATCH_ROWS, row_groups=[i],
                                           columns=columns):
                yield pa.Table.from_batches([batch])
            continue
        group.append(file.read_row_group(i, columns=columns))
        rows += size
        if rows >= _BATCH_ROWS:
            yield pa.concat_tables(group)
            group, rows = [], 0
    if group:
        yield pa.concat_tables(group)


def _fast_batches(file: Any, row_groups: Iterable[int] | None = None,
                  columns: list[str] | None = None, turns: bool = True
                  ) -> tuple[list[MultiAgentTrace], list[int]] | None:
    """:func:`_fast_build` over a ParquetFile's batches (see :func:`_batches`); None when a
    batch has anything off, Arrow cannot read it so, or a conversation_id repeats across
    batches (or no rows)."""
    pa = _pa()
    traces: list[MultiAgentTrace] = []
    to_check: list[int] = []
    try:
        for table in _batches(file, row_groups, columns):
            fast = _fast_build(table, turns=turns)
            if fast is None:
                return None
            to_check.extend(len(traces) + r for r in fast[1])
            traces.extend(fast[0])
    except pa.ArrowException:  # e.g. a batch too big for one array: read the whole table
        return None
    if not traces or len({t.conversation_id for t in traces}) != len(traces):
        return None
    return traces, to_check


def _warn_findings(traces: Sequence[MultiAgentTrace], name: str,
                   rows: Sequence[int] | None = None) -> None:
    """One TraceWarning with the non-fatal findings, as ``load_traces`` gives for JSONL;
    ``rows`` (0-based) limits the search to the rows that may have one (None: every row)."""
    import warnings

    from maev_kit.errors import TraceWarning
    from maev_kit.traces._check import check_trace

    rows = range(len(traces)) if rows is None else rows
    warns = [Problem(w.file, None, f"row {r + 1} › {w.path}", w.message, w.severity)
             for r in rows for w in check_trace(traces[r], file=name)]
    if warns:
        shown = "\n".join(f"  {w}" for w in warns[:10])
        more = f"\n  … and {len(warns) - 10} more" if len(warns) > 10 else ""
        warnings.warn(f"{len(warns)} warning(s) in {name}:\n{shown}{more}", TraceWarning,
                      stacklevel=3)


def table_to_traces(table: pa.Table, *, file: str = "<table>", first_row: int = 1,
                    check_version: bool = True) -> tuple[list[MultiAgentTrace], list[Problem]]:
    """Traces from an Arrow table of the trace schema, and the problems found.

    Rows with a problem are left out; each problem names ``file``, ``row N`` (``first_row`` is
    the number of the table's first row) and the field. Never raises on content.
    """
    with paused_gc():  # no reference cycles are built; the collector would only slow this down
        traces, problems, _ = _table_to_traces(table, file, first_row, check_version)
        return traces, problems


class _UnreadTurn:
    """What a trace read with ``turns=False`` holds in place of each turn: its count is
    right (``len(trace.turns)``), reading anything of it is an error."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"this turn was not read (the traces were read with turns=False, "
                             f"for the deterministic metrics): no {name!r}")

    def __repr__(self) -> str:
        return "<turn not read>"


#: The placeholder of every turn of a trace read with ``turns=False``.
UNREAD_TURN = _UnreadTurn()
# the columns a read with turns=False reads: the ids, the handoffs and each turn's turn_index
# (the number of turns)
_SCORING_COLUMNS = ["conversation_id", "handoffs", "turns.list.element.turn_index"]


def read_row_groups(path: str | os.PathLike[str], row_groups: Sequence[int], *,
                    first_row: int = 1, turns: bool = True, filesystem: Any = None
                    ) -> tuple[list[MultiAgentTrace], list[Problem]]:
    """The traces of some row groups of a trace Parquet file, and the problems found (as
    :func:`table_to_traces`, rows numbered from ``first_row``).

    ``turns=False`` reads only what the deterministic metrics read (handoff accuracy, routing,
    loops, contracts): the conversation ids, the handoffs and the number of turns. Each turn is
    then :data:`UNREAD_TURN`, ``user_messages`` is empty and ``metadata`` is ``{}``; the turns'
    contents are neither read nor checked. When anything read is off, the row groups are read
    whole, so that the problems name every field as :func:`table_to_traces` does.

    ``filesystem``: a :mod:`pyarrow.fs` filesystem ``path`` is on (None: the local one);
    problems name the file by its name alone.
    """
    pa = _pa()
    name = display_name(path) if filesystem is None else str(path).rsplit("/", 1)[-1]
    groups = [int(g) for g in row_groups]
    with paused_gc():
        with pa.parquet.ParquetFile(path, filesystem=filesystem) as file:
            metadata = file.metadata
            schema_ok = not _check_schema(file.schema_arrow.empty_table(), name, True)
        if schema_ok and not turns:
            # the schema is right: these columns can be read dictionary-encoded
            with pa.parquet.ParquetFile(path, metadata=metadata, filesystem=filesystem,
                                        read_dictionary=_READ_AS_DICTIONARY) as file:
                fast = _fast_batches(file, groups, _SCORING_COLUMNS, turns=False)
            if fast is not None:
                return fast[0], []
        with pa.parquet.ParquetFile(path, metadata=metadata, filesystem=filesystem) as file:
            table = file.read_row_groups(groups)
        traces, problems, _ = _table_to_traces(table, name, first_row, True)
        return traces, problems


def _problem(file: str, row: int, field: str, message: str) -> Problem:
    return Problem(file, None, f"row {row}" + (f" › {field}" if field else ""), message)


def _check_schema(table: pa.Table, file: str, check_version: bool) -> list[Problem]:
    expected = trace_schema()
    problems = []
    meta = table.schema.metadata or {}
    if check_version and _VERSION_KEY in meta:
        raw = meta[_VERSION_KEY].decode(errors="replace")
        if not raw.isdigit() or int(raw) not in SUPPORTED_SCHEMA_VERSIONS:
            supported = ", ".join(map(str, SUPPORTED_SCHEMA_VERSIONS))
            problems.append(Problem(file, None, "schema_version",
                                    f"unsupported schema_version {raw!r}; this version of "
                                    f"maev-kit reads schema_version {supported}"))
    for f in expected:
        if f.name not in table.column_names:
            if f.name == "conversation_id":
                problems.append(Problem(file, None, f.name, "column missing: a trace Parquet "
                                        "file has the columns " + ", ".join(expected.names)))
            continue
        got = table.schema.field(f.name).type
        if not _decoded(got).equals(f.type):
            problems.append(Problem(file, None, f.name, f"column has type {got}, expected "
                                    f"{f.type}"))
    extra = [c for c in table.column_names if c not in expected.names]
    if extra:
        problems.append(Problem(file, None, extra[0], "unknown column (a trace Parquet file has "
                                "the columns " + ", ".join(expected.names) + ")"))
    return problems


def _decoded(t: pa.DataType) -> pa.DataType:
    """``t`` with every dictionary-encoded part replaced by its value type (a table read with
    ``read_dictionary``, or built by hand, holds the same values as one without)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        return t.value_type
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_decoded(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_decoded(f.type)) for f in t])
    return t


def _lists(table: pa.Table, column: str, fields: Sequence[str]
           ) -> tuple[list[int], dict[str, list[Any]]] | None:
    """Offsets into the flattened list column and each struct field as a Python list (a null
    list reads as empty: Arrow gives it no values)."""
    if column not in table.column_names:
        return None
    arr = table.column(column).combine_chunks()
    offsets = arr.offsets.to_pylist()
    values = arr.values
    base = offsets[0]
    offsets = [o - base for o in offsets]
    values = values.slice(base, offsets[-1])
    return offsets, {f: values.field(f).to_pylist() for f in fields}


def _table_to_traces(table: pa.Table, file: str, first_row: int, check_version: bool
                     ) -> tuple[list[MultiAgentTrace], list[Problem], list[int] | None]:
    """Traces, problems, and the rows that may have a warning (None: any row may)."""
    problems = _check_schema(table, file, check_version)
    if problems:
        return [], problems, None
    fast = _fast_build(table)
    if fast is not None:
        return fast[0], [], fast[1]
    return (*_slow_build(table, file, first_row), None)


def _pylist(arr: Any) -> list[Any]:
    """An Arrow array of strings (``to_pylist``) or of non-null ints (via numpy: faster)."""
    import pyarrow as pa

    if pa.types.is_integer(arr.type):
        return arr.to_numpy(zero_copy_only=False).tolist()
    return arr.to_pylist()


@overload
def _shared_strings(arr: Any, allowed: None = None) -> Iterator[Any]: ...


@overload
def _shared_strings(arr: Any, allowed: dict[Any, Any]) -> Iterator[Any] | None: ...


def _shared_strings(arr: Any, allowed: dict[Any, Any] | None = None) -> Iterator[Any] | None:
    """A column of few distinct strings (agent ids, roles, reasons) as an iterator in which
    equal values are one object: as fast as ``to_pylist`` and a fraction of its memory.

    With ``allowed``, each value (None for a null) is replaced by ``allowed[value]``, and the
    result is None when a value is not in ``allowed``.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    # read_dictionary gives these columns encoded; a null gets a null index: point it at None
    encoded = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    values = encoded.dictionary.to_pylist()
    if arr.null_count:
        values.append(None)
    if allowed is not None:
        if not set(values) <= allowed.keys():
            return None
        values = [allowed[v] for v in values]
    indices = encoded.indices.fill_null(len(values) - 1) if arr.null_count else encoded.indices
    return map(values.__getitem__, indices.to_numpy(zero_copy_only=False).tolist())


# What stands between two texts of a column joined for one parse (see _json_texts): a JSON
# string of one control character, spelled with digits only (a hex letter has two spellings,
# \u001f and \u001F), as the escape, the character and the separator: \u0000 to \u0019.
_MARKS = [(f"\\u{code:04d}", chr(int(str(code), 16)), f',"\\u{code:04d}",')
          for code in range(20)]


def _json_texts(arr: Any, kind: type) -> list[Any] | None:
    """Every JSON text of a string column parsed in one ``json.loads`` call, a null read as an
    empty ``kind`` (as the row-by-row reader does); None unless each text is one JSON value of
    ``kind`` (the row-by-row reader then names the bad one).

    The texts are joined by Arrow (no Python string per text) with a separator such as
    ``,"\\u0000",`` between them, and the parse must give text, ``"\\u0000"``, text, … A
    set of texts that is not one value each cannot pass. The escape ``\\u0000`` occurs only
    in the separators (counted; else the next of twenty escapes is tried) and is the only way
    to write that string (a string holding a raw control character does not parse), so every
    separator's string is an element of the list of its own, and every text is exactly one
    element. Joined by "," alone, the texts ``{}, {"x": "`` and ``"}`` would pass as two
    objects.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(arr)
    texts = arr.drop_null() if arr.null_count else arr
    m = len(texts)
    values: list[Any] = []
    if m:
        as_list = pa.ListArray.from_arrays(pa.array([0, m], pa.int32()), texts)
        for mark, char, separator in _MARKS:
            try:
                joined = pc.binary_join(as_list, separator)[0].as_py()
            except pa.ArrowException:  # e.g. more than 2 GiB of text: join in Python
                joined = separator.join(texts.to_pylist())
            if joined.count(mark) == m - 1:  # only in the separators
                break
        else:
            return None
        try:
            parsed = json.loads("[" + joined + "]")
        except ValueError:
            return None
        if len(parsed) != 2 * m - 1 or parsed[1::2].count(char) != m - 1:
            return None
        values = parsed[::2]
        if not set(map(type, values)) <= {kind}:
            return None
    if m == n:
        return values
    # a null is a new empty object (each its own: the traces may be edited); [] and {} are
    # made by one opcode, list() and dict() by a call that takes twice as long
    out: list[Any] = [[] for _ in range(n)] if kind is list else [{} for _ in range(n)]
    rows = arr.is_valid().to_numpy(zero_copy_only=False).nonzero()[0].tolist()
    collections.deque(map(out.__setitem__, rows, values), maxlen=0)
    return out


_FIELDS = {"turns": ("agent_id", "agent_role", "message", "tool_calls", "turn_index"),
           "handoffs": ("from_agent", "to_agent", "reason", "context_passed", "turn_index",
                        "mode"),
           "user_messages": ("content", "turn_index")}
# Columns of few distinct values, read dictionary-encoded (the reader then makes one Python
# string per distinct value, not one per row).
_READ_AS_DICTIONARY = [f"{column}.list.element.{name}" for column, names in
                       (("turns", ("agent_id", "agent_role")),
                        ("handoffs", ("from_agent", "to_agent", "reason", "mode")))
                       for name in names]
_NULLABLE = frozenset({"reason", "tool_calls", "context_passed", "mode"})


def _flat(table: pa.Table, column: str) -> tuple[list[int], Any] | None:
    """Row offsets (from 0) into a list column's flattened struct values; None when absent."""
    if column not in table.column_names:
        return None
    chunked = table.column(column)  # combine_chunks copies even a lone chunk
    values = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
    offsets = values.offsets.to_numpy(zero_copy_only=False)
    base = int(offsets[0])
    flat = values.values.slice(base, int(offsets[-1]) - base)
    return (offsets - base).tolist(), flat


def _fast_build(table: pa.Table, *, turns: bool = True
                ) -> tuple[list[MultiAgentTrace], list[int]] | None:
    """Traces from a well-formed table, built column by column, and the rows that may deserve
    a :func:`~maev_kit.traces._io.check_trace` warning; None at the first thing that is off (a
    null, an unknown reason or mode, bad JSON, a duplicate id). ``turns=False``: the table's
    turns hold only ``turn_index`` (see :func:`read_row_groups`); each turn is
    :data:`UNREAD_TURN` and no row is to check.

    The objects are made by the private builders of :mod:`maev_kit.traces._model`, which skip
    ``__init__``: the schema check and the checks here guarantee the final types.
    """
    n = table.num_rows
    ids = _pylist(table.column("conversation_id"))
    if n == 0 or None in ids or len(set(ids)) != n:
        return None
    if "metadata" in table.column_names:
        chunked = table.column("metadata")
        metas = _json_texts(chunked.chunk(0) if chunked.num_chunks == 1
                            else chunked.combine_chunks(), dict)
        if metas is None:
            return None
    else:
        metas = [{} for _ in range(n)]
    rows: dict[str, list[list[Any]]] = {}
    flats: dict[str, tuple[list[int], Any]] = {}
    for column in ("turns", "handoffs", "user_messages"):
        got = _flat(table, column)
        if got is None:
            rows[column] = [[] for _ in range(n)]
            continue
        offsets, flat = got
        if column == "turns" and not turns:  # counted, not read
            rows[column] = [[UNREAD_TURN] * (b - a) for a, b in zip(offsets, offsets[1:])]
            continue
        flats[column] = got
        if any(flat.field(f).null_count for f in _FIELDS[column] if f not in _NULLABLE):
            return None
        col, m = flat.field, len(flat)
        objs: list[Any]
        if column == "turns":
            calls = _json_texts(col("tool_calls"), list)
            if calls is None or not set(map(type, itertools.chain.from_iterable(calls))
                                        ) <= {dict}:
                return None
            objs = _agent_turns(_shared_strings(col("agent_id")),
                                _shared_strings(col("agent_role")), _pylist(col("message")),
                                calls, _pylist(col("turn_index")), m)
        elif column == "handoffs":
            reasons = _shared_strings(col("reason"), _REASONS)
            modes = _shared_strings(col("mode"), _MODES)
            if reasons is None or modes is None:
                return None
            contexts = _json_texts(col("context_passed"), dict)
            if contexts is None:
                return None
            objs = _handoffs(_shared_strings(col("from_agent")),
                             _shared_strings(col("to_agent")), reasons, contexts,
                             _pylist(col("turn_index")), modes, m)
        else:
            objs = _user_messages(_pylist(col("content")), _pylist(col("turn_index")), m)
        rows[column] = [objs[a:b] for a, b in zip(offsets, offsets[1:])]
        del objs
    traces = _traces(ids, rows["turns"], rows["handoffs"], rows["user_messages"], metas, n)
    return traces, (_rows_to_check(n, flats) if turns else [])


def _rows_to_check(n: int, flats: dict[str, tuple[list[int], Any]]) -> list[int]:
    """The rows (0-based) where ``check_trace`` may find something, found on the columns: a
    ``turn_index`` that decreases within a row's turns or handoffs, or a handoff whose
    ``from_agent`` has no turn in its row. Every other row has nothing to report."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    flagged = np.zeros(n, dtype=bool)
    row_of: dict[str, Any] = {}
    for column in ("turns", "handoffs"):
        if column not in flats:
            continue
        offsets, flat = flats[column]
        lengths = cast("np.ndarray[Any, np.dtype[np.int64]]",  # numpy's stubs: timedelta64
                       np.diff(np.asarray(offsets, dtype=np.int64)))
        rows = np.repeat(np.arange(n), lengths)
        row_of[column] = rows
        ti = flat.field("turn_index").to_numpy(zero_copy_only=False)
        down = (ti[1:] < ti[:-1]) & (rows[1:] == rows[:-1])
        flagged[rows[1:][down]] = True
    if "handoffs" in flats and len(row_of["handoffs"]):
        number: dict[str, int] = {}  # agent name -> its number, over both columns
        spoke = (_codes(flats["turns"][1].field("agent_id"), number) if "turns" in flats
                 else np.array([], np.int64))
        sent = _codes(flats["handoffs"][1].field("from_agent"), number)
        width = len(number)
        spoke = (row_of["turns"] * width + spoke) if "turns" in flats else spoke
        sent = row_of["handoffs"] * width + sent
        flagged[row_of["handoffs"][~np.isin(sent, spoke)]] = True
    return np.flatnonzero(flagged).tolist()


def _codes(arr: Any, number: dict[str, int]) -> Any:
    """A numpy array: each (non-null) string's number in ``number``, new strings numbered as
    they come; worked out on the distinct values only."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = arr if pa.types.is_dictionary(arr.type) else pc.dictionary_encode(arr)
    lookup = np.array([number.setdefault(v, len(number))
                       for v in encoded.dictionary.to_pylist()], dtype=np.int64)
    return lookup[encoded.indices.to_numpy(zero_copy_only=False)]


def _slow_build(table: pa.Table, file: str, first_row: int
                ) -> tuple[list[MultiAgentTrace], list[Problem]]:
    """Row by row, collecting every problem with its row and field."""
    problems: list[Problem] = []
    n = table.num_rows
    ids = table.column("conversation_id").to_pylist()
    metas = (table.column("metadata").to_pylist() if "metadata" in table.column_names
             else ["{}"] * n)
    tl = _lists(table, "turns", _FIELDS["turns"])
    hl = _lists(table, "handoffs", _FIELDS["handoffs"])
    ul = _lists(table, "user_messages", _FIELDS["user_messages"])
    traces: list[MultiAgentTrace] = []
    seen: dict[str, int] = {}
    for r in range(n):
        at = _RowProblems(file, first_row + r, [])
        cid = ids[r]
        if cid is None:
            at.add("conversation_id", "missing (null)")
        turns = [] if tl is None else _row_turns(tl, r, at)
        handoffs = [] if hl is None else _row_handoffs(hl, r, at)
        users = [] if ul is None else _row_users(ul, r, at)
        meta = {} if metas[r] in (None, "{}") else at.parse(metas[r], dict, "metadata")
        if cid is not None and cid in seen:
            at.add("conversation_id", f"duplicate conversation_id {cid!r} (first on row "
                   f"{seen[cid]})")
        if at.bad:
            problems.extend(at.bad)
            continue
        seen[cid] = at.row
        traces.append(MultiAgentTrace(cid, turns, handoffs, users, meta))
    if n == 0:
        problems.append(Problem(file, None, "", "file has no rows: expected one trace per row"))
    return traces, problems


#: A list column read by :func:`_lists`: offsets into its flattened values, and each field.
_Lists = tuple[list[int], dict[str, list[Any]]]


@dataclass(frozen=True)
class _RowProblems:
    """Where a row read by :func:`_slow_build` is (the file, the row's number) and the
    problems found in it so far."""

    file: str
    row: int
    bad: list[Problem]

    def add(self, field: str, message: str) -> None:
        """Note a problem of ``field`` in this row."""
        self.bad.append(_problem(self.file, self.row, field, message))

    def parse(self, text: str, kind: type, field: str) -> Any:
        """``text`` parsed as JSON of type ``kind``; None (and a problem) when it is not."""
        return _json(text, kind, self.file, self.row, field, self.bad)


def _row_turns(lists: _Lists, r: int, at: _RowProblems) -> list[AgentTurn]:
    """The turns of row ``r`` (0-based); a turn with a problem is left out, its problem noted
    in ``at``."""
    off, f = lists
    ai, ar, msg, tc, ti = (f["agent_id"], f["agent_role"], f["message"], f["tool_calls"],
                           f["turn_index"])
    turns = []
    for k in range(off[r], off[r + 1]):
        j = k - off[r]
        if ai[k] is None or ar[k] is None or msg[k] is None or ti[k] is None:
            missing = next(name for name, col in (("agent_id", ai), ("agent_role", ar),
                                                  ("message", msg), ("turn_index", ti))
                           if col[k] is None)
            at.add(f"turns[{j}] › {missing}", "missing (null)")
            continue
        calls: Any = []
        if tc[k] not in (None, "[]"):
            calls = at.parse(tc[k], list, f"turns[{j}] › tool_calls")
            if calls is None:
                continue
            if not all(isinstance(c, dict) for c in calls):
                at.add(f"turns[{j}] › tool_calls", "expected a JSON list of objects")
                continue
        turns.append(AgentTurn(ai[k], ar[k], msg[k], calls, ti[k]))
    return turns


def _row_handoffs(lists: _Lists, r: int, at: _RowProblems) -> list[Handoff]:
    """The handoffs of row ``r`` (0-based); a handoff with a problem is left out, its problem
    noted in ``at``."""
    off, f = lists
    fa, ta, rs, cp, ti, md = (f["from_agent"], f["to_agent"], f["reason"],
                              f["context_passed"], f["turn_index"], f["mode"])
    handoffs = []
    for k in range(off[r], off[r + 1]):
        where = f"handoffs[{k - off[r]}]"
        if fa[k] is None or ta[k] is None or ti[k] is None:
            missing = "from_agent" if fa[k] is None else (
                "to_agent" if ta[k] is None else "turn_index")
            at.add(f"{where} › {missing}", "missing (null)")
            continue
        if rs[k] not in _REASONS:
            at.add(f"{where} › reason", f"unknown reason {rs[k]!r}; expected one of "
                   + ", ".join(r.value for r in HandoffReason) + " (or null when unknown)")
            continue
        mode = md[k] if md[k] is not None else "transfer"
        if mode not in _MODES:
            at.add(f"{where} › mode", f"unknown mode {mode!r}; expected 'transfer' or "
                   "'delegate'")
            continue
        ctx = {} if cp[k] in (None, "{}") else at.parse(cp[k], dict,
                                                        f"{where} › context_passed")
        if ctx is None:
            continue
        handoffs.append(Handoff(fa[k], ta[k], _REASONS[rs[k]], ctx, ti[k],
                                cast(HandoffMode, mode)))  # checked in _MODES
    return handoffs


def _row_users(lists: _Lists, r: int, at: _RowProblems) -> list[UserMessage]:
    """The user messages of row ``r`` (0-based); one with a problem is left out, its problem
    noted in ``at``."""
    off, f = lists
    ct, ti = f["content"], f["turn_index"]
    users = []
    for k in range(off[r], off[r + 1]):
        if ct[k] is None or ti[k] is None:
            at.add(f"user_messages[{k - off[r]}]", "missing content or turn_index (null)")
            continue
        users.append(UserMessage(ct[k], ti[k]))
    return users


def _json(text: str, kind: type, file: str, row: int, field: str, bad: list[Problem]) -> Any:
    """``text`` parsed as JSON of type ``kind``; None (and a problem) when it is not."""
    try:
        value = json.loads(text)
    except ValueError as e:
        bad.append(_problem(file, row, field, f"not valid JSON ({e})"))
        return None
    if not isinstance(value, kind):
        want = "an object" if kind is dict else "a list"
        bad.append(_problem(file, row, field, f"expected a JSON string of {want}, got "
                            f"{type(value).__name__}"))
        return None
    return value
