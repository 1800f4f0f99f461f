"""Trace Parquet: one row per conversation, turns and handoffs nested (``docs/formats.md``).

pyarrow is imported only here, and only when a Parquet file is read or written: install it with
``pip install "maev-kit[scale]"``.

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

import gc
import itertools
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit._jsonl import display_name
from maev_kit.errors import InputError, Problem, TraceValidationError
from maev_kit.traces._model import AgentTurn, Handoff, HandoffReason, MultiAgentTrace, UserMessage

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["load_parquet", "save_parquet", "table_to_traces", "traces_to_table",
           "trace_schema"]

SCHEMA_VERSION = 1
SUPPORTED_SCHEMA_VERSIONS = (1,)
_VERSION_KEY = b"maev_kit.schema_version"
_REASONS: dict[str | None, HandoffReason | None] = {r.value: r for r in HandoffReason}
_REASONS[None] = None
_MODES = ("transfer", "delegate")


def _pa() -> Any:
    try:
        import pyarrow as pa
        import pyarrow.parquet  # noqa: F401  (registers pa.parquet)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise InputError("Parquet traces need pyarrow: pip install \"maev-kit[scale]\"") from e
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
    """Write traces as Parquet (zstd); :func:`load_parquet` reads back equal objects.

    The file is written beside its destination and renamed into place, so a reader never sees
    half a file.
    """
    pa = _pa()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pa.parquet.write_table(traces_to_table(traces), tmp, compression="zstd",
                               row_group_size=row_group_size)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


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
    try:
        table = pa.parquet.read_table(path)
    except (OSError, pa.ArrowException) as e:
        raise TraceValidationError([Problem(name, None, "", f"not a readable Parquet file "
                                            f"({str(e).splitlines()[0]})")]) from None
    was_enabled = gc.isenabled()
    gc.disable()  # see table_to_traces
    try:
        traces, problems = table_to_traces(table, file=name)
        del table
        if problems:
            raise TraceValidationError(problems)
        _warn_findings(traces, name)
    finally:
        if was_enabled:
            gc.enable()
    return traces


def _warn_findings(traces: Sequence[MultiAgentTrace], name: str) -> None:
    """One TraceWarning with the non-fatal findings, as ``load_traces`` gives for JSONL."""
    import warnings

    from maev_kit.errors import TraceWarning
    from maev_kit.traces._io import check_trace

    warns = [Problem(w.file, None, f"row {row} › {w.path}", w.message, w.severity)
             for row, t in enumerate(traces, 1) for w in check_trace(t, file=name)]
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
    was_enabled = gc.isenabled()
    gc.disable()  # no reference cycles are built; the collector would only slow this down
    try:
        return _table_to_traces(table, file, first_row, check_version)
    finally:
        if was_enabled:
            gc.enable()


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
        if not got.equals(f.type):
            problems.append(Problem(file, None, f.name, f"column has type {got}, expected "
                                    f"{f.type}"))
    extra = [c for c in table.column_names if c not in expected.names]
    if extra:
        problems.append(Problem(file, None, extra[0], "unknown column (a trace Parquet file has "
                                "the columns " + ", ".join(expected.names) + ")"))
    return problems


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
                     ) -> tuple[list[MultiAgentTrace], list[Problem]]:
    problems = _check_schema(table, file, check_version)
    if problems:
        return [], problems
    fast = _fast_build(table)
    if fast is not None:
        return fast, []
    return _slow_build(table, file, first_row)


def _bulk_json(texts: list[Any], empty: str, kind: type) -> list[Any] | None:
    """Every JSON text parsed in one ``json.loads`` call (``empty`` needs no parsing); None
    when any is null, invalid or not of ``kind`` (the slow path then reports which)."""
    todo = [t for t in texts if t != empty]
    if any(t is None for t in todo):
        return None
    try:
        parsed = json.loads("[" + ",".join(todo) + "]") if todo else []
    except ValueError:
        return None
    if len(parsed) != len(todo) or not set(map(type, parsed)) <= {kind}:
        return None  # e.g. a text that was two values "1,2"
    it = iter(parsed)
    make = kind
    return [make() if t == empty else next(it) for t in texts]


def _pylist(arr: Any) -> list[Any]:
    """An Arrow array of strings or non-null ints as a list (via numpy: faster than
    ``to_pylist``)."""
    return arr.to_numpy(zero_copy_only=False).tolist()


def _sparse_json_lists(arr: Any) -> list[list[Any]] | None:
    """A column of JSON lists of objects, null meaning empty, parsed in one call; None when
    one is invalid."""
    out: list[list[Any]] = [[] for _ in range(len(arr))]
    if arr.null_count == len(arr):
        return out
    present = arr.drop_null().to_pylist()
    try:
        parsed = json.loads("[" + ",".join(present) + "]")
    except ValueError:
        return None
    if (len(parsed) != len(present) or set(map(type, parsed)) != {list}
            or not set(map(type, itertools.chain.from_iterable(parsed))) <= {dict}):
        return None
    import numpy as np

    for i, v in zip(np.flatnonzero(arr.is_valid().to_numpy(zero_copy_only=False)).tolist(),
                    parsed):
        out[i] = v
    return out


def _fast_build(table: pa.Table) -> list[MultiAgentTrace] | None:
    """Traces from a well-formed table, built column by column; None at the first thing that
    is off (a null, an unknown reason or mode, bad JSON, a duplicate id)."""
    n = table.num_rows
    ids = _pylist(table.column("conversation_id"))
    if n == 0 or None in ids or len(set(ids)) != n:
        return None
    metas = (_pylist(table.column("metadata")) if "metadata" in table.column_names
             else ["{}"] * n)
    metas = _bulk_json(metas, "{}", dict)
    parts: dict[str, tuple[list[int], list[Any]]] = {}
    for column, cls, fields in (
            ("turns", AgentTurn, ("agent_id", "agent_role", "message", "tool_calls",
                                  "turn_index")),
            ("handoffs", Handoff, ("from_agent", "to_agent", "reason", "context_passed",
                                   "turn_index", "mode")),
            ("user_messages", UserMessage, ("content", "turn_index"))):
        if column not in table.column_names:
            parts[column] = ([0] * (n + 1), [])
            continue
        values = table.column(column).combine_chunks()
        flat = values.values.slice(values.offsets[0].as_py(),
                                   values.offsets[-1].as_py() - values.offsets[0].as_py())
        if any(flat.field(f).null_count for f in fields if f not in ("reason", "tool_calls",
                                                                     "context_passed", "mode")):
            return None
        cols = {f: _pylist(flat.field(f)) for f in fields if f != "tool_calls"}
        if column == "turns":
            cols["tool_calls"] = _sparse_json_lists(flat.field("tool_calls"))
            if cols["tool_calls"] is None:
                return None
        elif column == "handoffs":
            if not set(cols["reason"]) <= _REASONS.keys() or not set(cols["mode"]) <= set(_MODES):
                return None
            cols["reason"] = [_REASONS[r] for r in cols["reason"]]
            cols["context_passed"] = _bulk_json(cols["context_passed"], "{}", dict)
            if cols["context_passed"] is None:
                return None
        base = values.offsets[0].as_py()
        offsets = [o - base for o in values.offsets.to_pylist()]
        parts[column] = (offsets, list(map(cls, *(cols[f] for f in fields))))
    if metas is None:
        return None
    (to, turns), (ho, handoffs), (uo, users) = (parts["turns"], parts["handoffs"],
                                                parts["user_messages"])
    return [MultiAgentTrace(ids[r], turns[to[r]:to[r + 1]], handoffs[ho[r]:ho[r + 1]],
                            users[uo[r]:uo[r + 1]], metas[r]) for r in range(n)]


def _slow_build(table: pa.Table, file: str, first_row: int
                ) -> tuple[list[MultiAgentTrace], list[Problem]]:
    """Row by row, collecting every problem with its row and field."""
    problems: list[Problem] = []
    n = table.num_rows
    ids = table.column("conversation_id").to_pylist()
    metas = (table.column("metadata").to_pylist() if "metadata" in table.column_names
             else ["{}"] * n)
    tl = _lists(table, "turns", ("agent_id", "agent_role", "message", "tool_calls",
                                 "turn_index"))
    hl = _lists(table, "handoffs", ("from_agent", "to_agent", "reason", "context_passed",
                                    "turn_index", "mode"))
    ul = _lists(table, "user_messages", ("content", "turn_index"))
    traces: list[MultiAgentTrace] = []
    seen: dict[str, int] = {}
    loads = json.loads
    for r in range(n):
        row = first_row + r
        bad: list[Problem] = []
        cid = ids[r]
        if cid is None:
            bad.append(_problem(file, row, "conversation_id", "missing (null)"))
        turns = []
        if tl is not None:
            off, f = tl
            ai, ar, msg, tc, ti = (f["agent_id"], f["agent_role"], f["message"],
                                   f["tool_calls"], f["turn_index"])
            for k in range(off[r], off[r + 1]):
                j = k - off[r]
                if ai[k] is None or ar[k] is None or msg[k] is None or ti[k] is None:
                    missing = next(name for name, col in (("agent_id", ai), ("agent_role", ar),
                                                          ("message", msg), ("turn_index", ti))
                                   if col[k] is None)
                    bad.append(_problem(file, row, f"turns[{j}] › {missing}", "missing (null)"))
                    continue
                calls: Any = []
                if tc[k] not in (None, "[]"):
                    calls = _json(tc[k], list, file, row, f"turns[{j}] › tool_calls", bad)
                    if calls is None:
                        continue
                    if not all(isinstance(c, dict) for c in calls):
                        bad.append(_problem(file, row, f"turns[{j}] › tool_calls",
                                            "expected a JSON list of objects"))
                        continue
                turns.append(AgentTurn(ai[k], ar[k], msg[k], calls, ti[k]))
        handoffs = []
        if hl is not None:
            off, f = hl
            fa, ta, rs, cp, ti, md = (f["from_agent"], f["to_agent"], f["reason"],
                                      f["context_passed"], f["turn_index"], f["mode"])
            for k in range(off[r], off[r + 1]):
                j = k - off[r]
                where = f"handoffs[{j}]"
                if fa[k] is None or ta[k] is None or ti[k] is None:
                    missing = "from_agent" if fa[k] is None else (
                        "to_agent" if ta[k] is None else "turn_index")
                    bad.append(_problem(file, row, f"{where} › {missing}", "missing (null)"))
                    continue
                if rs[k] not in _REASONS:
                    bad.append(_problem(file, row, f"{where} › reason",
                                        f"unknown reason {rs[k]!r}; expected one of "
                                        + ", ".join(r.value for r in HandoffReason)
                                        + " (or null when unknown)"))
                    continue
                mode = md[k] if md[k] is not None else "transfer"
                if mode not in _MODES:
                    bad.append(_problem(file, row, f"{where} › mode", f"unknown mode {mode!r}; "
                                        "expected 'transfer' or 'delegate'"))
                    continue
                ctx = {} if cp[k] in (None, "{}") else _json(cp[k], dict, file, row,
                                                             f"{where} › context_passed", bad)
                if ctx is None:
                    continue
                handoffs.append(Handoff(fa[k], ta[k], _REASONS[rs[k]], ctx, ti[k], mode))
        users = []
        if ul is not None:
            off, f = ul
            ct, ti = f["content"], f["turn_index"]
            for k in range(off[r], off[r + 1]):
                if ct[k] is None or ti[k] is None:
                    bad.append(_problem(file, row, f"user_messages[{k - off[r]}]",
                                        "missing content or turn_index (null)"))
                    continue
                users.append(UserMessage(ct[k], ti[k]))
        meta = {} if metas[r] in (None, "{}") else _json(metas[r], dict, file, row, "metadata",
                                                         bad)
        if cid is not None and cid in seen:
            bad.append(_problem(file, row, "conversation_id", f"duplicate conversation_id "
                                f"{cid!r} (first on row {seen[cid]})"))
        if bad:
            problems.extend(bad)
            continue
        seen[cid] = row
        traces.append(MultiAgentTrace(cid, turns, handoffs, users, meta))
    if n == 0:
        problems.append(Problem(file, None, "", "file has no rows: expected one trace per row"))
    return traces, problems


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
