"""Import traces from agent frameworks: OpenAI Agents SDK, OTel GenAI, OpenInference, LangGraph,
AutoGen, CrewAI and generic chat logs.

One call reads an export into :class:`~maev_kit.traces.MultiAgentTrace` objects and says what it
could not map::

    traces, issues = import_traces("export.json")               # format detected
    traces, issues = import_traces("log.json", format="chat", speaker_change_handoffs=True)
    traces, issues = load_any("traces.jsonl")                   # a maev trace file, or any export

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

from maev_kit._jsonl import display_name
from maev_kit.errors import InputError
from maev_kit.traces._io import trace_from_dict, trace_to_dict
from maev_kit.traces.importers._autogen import import_autogen
from maev_kit.traces.importers._chat import import_chat
from maev_kit.traces.importers._common import ImportIssue, ImportResult, TraceImportError
from maev_kit.traces.importers._crewai import import_crewai
from maev_kit.traces.importers._detect import detect_format
from maev_kit.traces.importers._langgraph import import_langgraph
from maev_kit.traces.importers._openai_agents import import_openai_agents
from maev_kit.traces.importers._openinference import import_openinference
from maev_kit.traces.importers._otel import import_otel

__all__ = [
    "FORMATS",
    "ImportIssue",
    "ImportResult",
    "TraceImportError",
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

#: The format names :func:`import_traces` accepts (besides ``"auto"``).
FORMATS: tuple[str, ...] = tuple(_IMPORTERS)


#: What to say when a file the user passed as traces is another kind of maev-kit file.
_NOT_TRACES = {
    "labels": ("a labels file (lines with item_id, annotator, label)",
               "pass it as labels: `maev init-set TRACES --out SET --labels {name}` carries "
               "them into a set, `maev agree {name}` compares annotators"),
    "reviews": ("a fact-review decisions file (lines with fact_id, reviewer, decision)",
                "it belongs in a labeled set as fact_reviews.jsonl"),
    "expectations": ("an expectations file (key_facts / handoffs / routing per conversation)",
                     "pass it as --expectations (maev score) or --facts (maev init-set)"),
    "reviewed-facts": ("a facts file (proposed key facts)", "pass it as --facts"),
    "facts": ("a facts file (proposed key facts)", "pass it as --facts"),
    "card": ("a judge card", "pass it as --judge-card"),
    "scores": ("a scores table written by `maev score --out`", "give the traces it was "
               "scored from"),
    "ledger": ("a retention ledger written by `maev score --ledger`",
               "pass it as --judge-run (maev agree)"),
    "calibration": ("a calibration table", "give a trace file or a framework export"),
    "report": ("an HTML report", "give a trace file or a framework export"),
}


def not_traces_error(name: str, kind: str | None) -> InputError | None:
    """The error for a file of another kind passed where traces are expected, else None.

    >>> print(not_traces_error("labels.jsonl", "labels"))
    labels.jsonl: this looks like a labels file (lines with item_id, annotator, label), not traces; pass it as labels: `maev init-set TRACES --out SET --labels labels.jsonl` carries them into a set, `maev agree labels.jsonl` compares annotators
    """
    if kind not in _NOT_TRACES:
        return None
    what, fix = _NOT_TRACES[kind]
    return InputError(f"{name}: this looks like {what}, not traces; {fix.format(name=name)}")


def _empty_error(name: str, data: Any) -> InputError | None:
    """``no traces in FILE`` for an empty JSON list or object (or a list of empty ones)."""
    if data in ([], {}) or (isinstance(data, list) and all(v in ([], {}) for v in data)):
        shown = "an empty list" if isinstance(data, list) else "an empty object"
        return InputError(f"no traces in {name}: it holds {shown}")
    return None


def _read(path: Path, name: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark is not content
    except FileNotFoundError:
        raise InputError(f"{name}: file not found") from None
    except UnicodeDecodeError as e:
        raise InputError(f"{name}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise InputError(f"{name}: cannot read the file ({e.strerror})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        if len(lines) < 2:
            raise InputError(f"{name}: not valid JSON: {first.msg} at line {first.lineno} "
                             f"column {first.colno}") from None
        values = []
        for i, ln in enumerate(text.splitlines(), 1):
            if not ln.strip():
                continue
            try:
                values.append(json.loads(ln))
            except json.JSONDecodeError as e:
                raise InputError(f"{name}: neither JSON nor JSON Lines: line {i}: {e.msg} "
                                 f"at column {e.colno}") from None
        if all(isinstance(v, dict) and "resourceSpans" in v for v in values):
            # the OTel collector's file exporter: one export request per line
            return {"resourceSpans": [rs for v in values for rs in v["resourceSpans"]]}
        return values


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
    src = _source(path)
    empty = _empty_error(src.name, src.data)
    if empty is not None:
        raise empty
    fmt = _detected(src) if format == "auto" else format
    traces, issues = _run_importer(src, fmt, format == "auto", options)
    traces = _finish(traces, fmt, src.name)
    return ImportResult(traces, issues)


class _Source(NamedTuple):
    """What :func:`import_traces` reads: the parsed JSON, the name its messages give the
    file, and the name an importer gives a trace with no id of its own."""

    data: Any
    name: str
    stem: str


def _source(path: str | os.PathLike[str] | dict[str, Any] | list[Any]) -> _Source:
    """The file at ``path`` read (or already-parsed JSON, named ``<data>``)."""
    if isinstance(path, (dict, list)):
        return _Source(path, "<data>", "trace")
    name = display_name(path)
    stem = Path(path).stem
    return _Source(_read(Path(path), name), name, stem)


def _detected(src: _Source) -> str:
    """The format detected for ``src``; else an error naming the maev-kit file it is, or
    asking for the format."""
    fmt = detect_format(src.data)
    if fmt is not None:
        return fmt
    from maev_kit._files import _kind_of_keys

    data, name = src.data, src.name
    first = data[0] if isinstance(data, list) and data else data
    kind = _kind_of_keys(set(first)) if isinstance(first, dict) else None
    if kind == "traces":
        raise InputError(f"{name}: this is already a maev trace file (JSONL); nothing "
                         "to import: score, report and init-set read it as it is")
    other = not_traces_error(name, kind)
    if other is not None:
        raise other
    raise InputError(f"{name}: cannot detect the format; pass `format` explicitly, one "
                     f"of: {', '.join(FORMATS)}")


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


#: Top-level fields that only a maev trace line has.
_TRACE_KEYS = frozenset({"conversation_id", "turns", "handoffs", "user_messages",
                         "schema_version"})


def is_trace_jsonl(path: str | os.PathLike[str]) -> bool:
    """True when the first non-blank line of ``path`` is a maev trace object (even a broken
    one, so that its problems are reported as trace problems) and no framework's export."""
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    first = json.loads(raw)
                    break
            else:
                return False
    except RecursionError:  # a .jsonl file's first line nests too deeply: the trace reader
        return Path(path).suffix.lower() == ".jsonl"  # names the line
    except ValueError:  # not JSON Lines (or one pretty-printed document)
        return False
    return (isinstance(first, dict) and bool(_TRACE_KEYS & set(first))
            and detect_format(first) is None)


def load_any(path: str | os.PathLike[str], format: str = "auto") -> ImportResult:
    """Read a maev trace JSONL file or any framework export: ``(traces, issues)``.

    The one reader behind every command that takes traces (``maev score``, ``maev report``,
    ``maev init-set``) and behind ``evaluate`` given a file.

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
        One line for an unknown format, a folder, a missing, empty or unreadable file, an
        undetectable or unreadable export, or a file with no conversation;
        :class:`~maev_kit.errors.TraceValidationError` listing every problem of a trace file.

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
    p = Path(path)
    name = p.name
    _check_trace_format(format)
    _check_trace_path(p, name, format)
    from maev_kit.traces._parquet import is_parquet_file

    if format == "auto" and is_parquet_file(p):  # the kit's own columnar traces
        return _read_parquet_traces(p)
    if _is_trace_file(p, name, format):
        out = _read_trace_file(p, name)
    else:
        try:
            out = import_traces(p, format)
        except RecursionError:
            raise InputError(f"{name}: the JSON nests too deeply to read") from None
    if not out.traces:
        raise InputError(f"{name}: holds no conversation")
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


def _check_trace_path(p: Path, name: str, format: str) -> None:
    """Raise for a folder, a missing file, or (with ``format="auto"``) a maev-kit file of
    another kind."""
    if p.is_dir():
        raise InputError(f"{name}: is a folder; give a trace JSONL file or a framework export "
                         "(a labeled-set folder is already a set)")
    if not p.exists():
        raise InputError(f"{name}: file not found")
    if format == "auto":
        from maev_kit._files import sniff

        found = sniff(p)
        other = not_traces_error(name, found.kind if found is not None else None)
        if other is not None:
            raise other


def _is_trace_file(p: Path, name: str, format: str) -> bool:
    """Whether ``p`` is read as a maev trace JSONL file (only with ``format="auto"``); raise
    for an empty or unreadable file."""
    try:
        if p.stat().st_size < 4096 and not p.read_bytes().strip():
            raise InputError(f"{name}: the file is empty; give a trace JSONL file or a "
                             "framework export")
        return format == "auto" and is_trace_jsonl(p)
    except OSError as e:
        raise InputError(f"{name}: cannot read the file ({e.strerror})") from None


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
