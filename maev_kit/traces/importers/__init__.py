"""Import traces from agent frameworks: OpenAI Agents SDK, OTel GenAI, OpenInference, LangGraph,
AutoGen, CrewAI and generic chat logs.

One call reads an export into :class:`~maev_kit.traces.MultiAgentTrace` objects and says what it
could not map::

    traces, issues = import_traces("export.json")               # format detected
    traces, issues = import_traces("log.json", format="chat", speaker_change_handoffs=True)
    traces, issues = load_any("traces.jsonl")                   # a maev trace file, or any export
    detect_file("log.jsonl").format                             # what a file is: 'maev', 'chat', …

Importers are pure functions over the JSON: no framework package is needed. See
``docs/importers.md`` for what each format maps and loses.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from maev_kit.errors import InputError
from maev_kit.internal import display_name
from maev_kit.traces._io import trace_from_dict, trace_to_dict
from maev_kit.traces.importers._autogen import import_autogen
from maev_kit.traces.importers._chat import import_chat
from maev_kit.traces.importers._common import ImportIssue, ImportResult, TraceImportError
from maev_kit.traces.importers._crewai import import_crewai
from maev_kit.traces.importers._detect import (
    FORMATS,
    Detected,
    check_not_empty,
    detect_file,
    detect_format,
    is_trace_jsonl,
    not_traces_error,
    unknown_shape_error,
)
from maev_kit.traces.importers._langgraph import import_langgraph
from maev_kit.traces.importers._openai_agents import import_openai_agents
from maev_kit.traces.importers._openinference import import_openinference
from maev_kit.traces.importers._otel import import_otel
from maev_kit.traces.importers._who_and_when import (  # noqa: F401
    who_and_when_run,  # not user API: the seam of maev_kit.datasets.load_who_and_when
)

__all__ = [
    "FORMATS",
    "Detected",
    "ImportIssue",
    "ImportResult",
    "TraceImportError",
    "detect_file",
    "detect_format",
    "import_traces",
    "load_any",
]

_IMPORTERS: dict[str, Callable[..., ImportResult]] = {
    "openai-agents": import_openai_agents,
    "otel": import_otel,
    "openinference": import_openinference,
    "langgraph": import_langgraph,
    "autogen": import_autogen,
    "crewai": import_crewai,
    "chat": import_chat,
}

assert tuple(_IMPORTERS) == FORMATS  # :data:`FORMATS`: the names import_traces accepts


def import_traces(path: str | os.PathLike[str] | dict[str, Any] | list[Any],
                  format: str = "auto", **options: Any) -> ImportResult:
    """Read a framework export into traces; return ``(traces, issues)``.

    Parameters
    ----------
    path : path to a JSON (or JSON Lines) file, or already-parsed JSON.
    format : ``"auto"`` (detect) or one of :data:`FORMATS`: ``openai-agents``, ``otel``,
        ``openinference``, ``langgraph``, ``autogen``, ``crewai``, ``chat``.
    **options : format options; ``chat`` takes ``speaker_change_handoffs`` (bool) and
        ``user_name`` (str). Unknown options raise :class:`~maev_kit.errors.InputError`.

    Returns
    -------
    ImportResult
        ``traces`` (list of :class:`~maev_kit.traces.MultiAgentTrace`, each with
        ``metadata["source_format"]`` and the source's ids) and ``warnings`` (list of
        :class:`ImportIssue`: everything the import could not map or had to infer).

    Raises
    ------
    TraceImportError
        The content does not fit the format tried; the message names the format and the
        place (``spans[3].span_data.type``).
    InputError
        Unreadable file, unknown format or option, undetectable format.

    Examples
    --------
    >>> log = [{"role": "user", "content": "My invoice is wrong"},
    ...        {"name": "triage", "content": "Passing you to billing."},
    ...        {"name": "billing", "content": "Fixed."}]
    >>> traces, issues = import_traces(log, format="chat", speaker_change_handoffs=True)
    >>> [(h.from_agent, h.to_agent) for h in traces[0].handoffs]
    [('triage', 'billing')]
    >>> traces[0].metadata["source_format"]
    'chat'
    """
    if not isinstance(format, str) or (format != "auto" and format not in _IMPORTERS):
        raise InputError(f"unknown `format` {format!r}; use 'auto' or one of: "
                         f"{', '.join(FORMATS)}")
    if isinstance(path, (dict, list)):
        check_not_empty("<data>", path)
        src = _Source(path, "<data>", "trace")
        fmt = _data_format(src) if format == "auto" else format
    else:
        found = detect_file(path, format, name=display_name(path))
        if found.format == "maev":
            raise InputError(f"{found.name}: this is already a maev trace file (JSONL); "
                             "nothing to import: score, report and init-set read it as it is")
        src = _Source(found.data, found.name, Path(path).stem)
        fmt = found.format
    traces, issues = _run_importer(src, fmt, format == "auto", options)
    traces = _finish(traces, fmt, src.name)
    return ImportResult(traces, issues)


class _Source(NamedTuple):
    """What :func:`import_traces` reads: the parsed JSON, the name its messages give the
    file, and the name an importer gives a trace with no id of its own."""

    data: Any
    name: str
    stem: str


def _data_format(src: _Source) -> str:
    """The format detected for already-parsed JSON; else an error saying what it is."""
    fmt = detect_format(src.data)
    if fmt is not None:
        return fmt
    from maev_kit.internal import kind_of_keys

    first = src.data[0] if isinstance(src.data, list) and src.data else src.data
    kind = kind_of_keys(set(first)) if isinstance(first, dict) else None
    if kind == "traces":
        raise InputError(f"{src.name}: these are already maev traces; nothing to import "
                         "(trace_from_dict reads one)")
    other = not_traces_error(src.name, kind)
    if other is not None:
        raise other
    raise unknown_shape_error(src.name, src.data)


def _run_importer(src: _Source, fmt: str, detected: bool,
                  options: dict[str, Any]) -> ImportResult:
    """The importer of ``fmt`` over ``src``; what it raises becomes one
    :class:`TraceImportError` naming the file (``detected``: the format was auto-detected)."""
    name = src.name
    try:
        traces, issues = _IMPORTERS[fmt](src.data, name=src.stem, **options)
    except TraceImportError as e:
        why = e.reason + (" (format auto-detected; pass `format` to force another)"
                          if detected and e.where != "$schemaVersion" else "")
        raise TraceImportError(e.format, e.where, why, file=name) from None
    except RecursionError:
        raise TraceImportError(fmt, "", "the JSON nests too deeply", file=name) from None
    except InputError:
        raise
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as e:
        # a structure no check above anticipated: still an input error, never a traceback
        raise TraceImportError(fmt, "", f"unexpected content ({type(e).__name__}: {e}); the "
                               f"file does not fit the {fmt!r} format", file=name) from e
    return ImportResult(traces, issues)


def _finish(traces: list[Any], fmt: str, name: str) -> list[Any]:
    """Unique conversation ids, clean metadata, and a check against the JSONL contract."""
    counts: Counter[str] = Counter()
    out = []
    for t in traces:
        counts[t.conversation_id] += 1
        if counts[t.conversation_id] > 1:
            t.conversation_id = f"{t.conversation_id}#{counts[t.conversation_id]}"
        t.metadata = {k: v for k, v in t.metadata.items() if v is not None}
        if name != "<data>":
            t.metadata.setdefault("source_file", name)
        try:  # the imported trace must satisfy the file contract (JSON-able, valid)
            trace_from_dict(json.loads(json.dumps(trace_to_dict(t))))
        except (InputError, TypeError, ValueError) as e:  # pragma: no cover - importer bug
            raise InputError(f"{name}: the {fmt!r} import produced an invalid trace "
                             f"{t.conversation_id!r}: {e}") from None
        out.append(t)
    return out


def load_any(path: str | os.PathLike[str], format: str = "auto") -> ImportResult:
    """Read a maev trace JSONL file or any framework export: ``(traces, issues)``.

    The one reader behind every command that takes traces (``maev validate``, ``score``,
    ``report``, ``init-set``), :func:`~maev_kit.traces.load_traces` and ``evaluate`` given a
    file; what the file is, :func:`detect_file` decides.

    Parameters
    ----------
    path : a trace JSONL file (see ``docs/formats.md``), a trace Parquet file (``maev
        convert``, ``save_traces``; recognised by its content) or a framework export.
    format : ``"auto"`` (a maev trace file, else the export's format is detected) or one of
        :data:`FORMATS` to force an importer.

    Returns
    -------
    ImportResult
        The traces, and ``warnings``: for an export, the :class:`ImportIssue` of everything the
        import could not map; for a trace file, its non-fatal
        :class:`~maev_kit.errors.Problem` findings. Each reads as one line with ``str()``.

    Raises
    ------
    InputError
        One line for an unknown format, a folder, a missing, empty or unreadable file, a file
        of no known shape (naming the shapes the kit reads), an unreadable export, or a file
        with no conversation; :class:`~maev_kit.errors.TraceValidationError` listing every
        problem of a trace file.

    Examples
    --------
    >>> import json, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "log.json")
    >>> with open(p, "w") as f:
    ...     json.dump([{"role": "user", "content": "Hi"}, {"name": "triage", "content": "Hello"}],
    ...               f)
    >>> traces, issues = load_any(p)
    >>> traces[0].metadata["source_format"]
    'chat'
    >>> load_any(p, format="otell")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: unknown trace format 'otell'; did you mean 'otel'? use 'auto' or one of: openai-agents, otel, openinference, langgraph, autogen, crewai, chat
    """
    _check_trace_format(format)
    try:
        return read_detected(detect_file(path, format))
    except RecursionError:
        raise InputError(f"{Path(path).name}: the JSON nests too deeply to read") from None


def read_detected(found: Detected) -> ImportResult:
    """The traces of a file :func:`detect_file` has named: a maev trace file by the trace
    reader (JSONL or Parquet), an export by its importer. An :class:`InputError` when it
    holds no conversation."""
    if found.format == "maev-parquet":
        out = _read_parquet_traces(found.path)
    elif found.format == "maev":
        out = _read_trace_file(found.path, found.name)
    else:
        src = _Source(found.data, found.name, found.path.stem)
        traces, issues = _run_importer(src, found.format, True, {})
        out = ImportResult(_finish(traces, found.format, found.name), issues)
    if not out.traces:
        raise InputError(f"{found.name}: holds no conversation")
    return out


def _check_trace_format(format: str) -> None:
    """Raise for a ``format`` that is neither ``"auto"`` nor in :data:`FORMATS`, naming the
    closest one."""
    if format != "auto" and format not in FORMATS:
        import difflib

        close = difflib.get_close_matches(str(format), ("auto", *FORMATS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"unknown trace format {format!r}; {hint}use 'auto' or one of: "
                         f"{', '.join(FORMATS)}")


def _read_parquet_traces(p: Path) -> ImportResult:
    """A trace Parquet file's traces (``maev convert``, ``save_traces``) and its non-fatal
    findings; every problem raised in one :class:`~maev_kit.errors.TraceValidationError`."""
    import warnings

    from maev_kit.traces._parquet import load_parquet

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traces = load_parquet(p)
    return ImportResult(traces, [str(w.message) for w in caught])  # type: ignore[misc]


def _read_trace_file(p: Path, name: str) -> ImportResult:
    """A maev trace JSONL file's traces and its non-fatal findings; every problem raised in
    one :class:`~maev_kit.errors.TraceValidationError`."""
    from maev_kit.errors import TraceValidationError
    from maev_kit.traces._io import validate_trace_file

    traces, errors, warns = validate_trace_file(p, name=name)
    if errors:
        raise TraceValidationError(errors, warns)
    return ImportResult(traces, list(warns))  # type: ignore[arg-type]
