"""What a file of traces is: the one place that decides.

:func:`detect_file` reads a file the user gave as traces and names its shape: a maev trace JSONL
file (read line by line by the trace reader) or an export one importer reads (its parsed JSON);
a file of another kind (labels, a judge card …) or of no known shape is one
:class:`~maev_kit.errors.InputError` that says what it is, or names every shape the kit reads.
Every reader of traces goes through it — ``maev import``, ``validate``, ``score``, ``report``,
``init-set``, :func:`~maev_kit.traces.load_traces`, ``evaluate`` — so a file one accepts no
other refuses. :func:`detect_format` makes the structural checks on parsed JSON.

To teach the kit a new shape: add its check to :func:`detect_file` (a file read otherwise
than as JSON, such as Parquet, before the JSON is read) or to :func:`detect_format` (a JSON
shape an importer reads), and name it in :data:`SHAPES`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError

_LC_TYPES = {"human", "ai", "tool", "system", "HumanMessage", "AIMessage", "ToolMessage",
             "SystemMessage"}
_CREW_EVENTS = {"crew_kickoff_started", "agent_execution_started", "tool_usage_started",
                "task_started", "agent_execution_completed"}

#: The importers' names, as ``import_traces(format=...)`` takes them (a new importer: its name
#: here and its function in ``importers._IMPORTERS``).
FORMATS: tuple[str, ...] = ("openai-agents", "otel", "openinference", "langgraph", "autogen",
                            "crewai", "chat")

#: Every shape of trace file the kit reads, as the message for a file of no known shape
#: names them (see docs/importers.md and docs/formats.md).
SHAPES: tuple[str, ...] = (
    "maev trace JSONL (one conversation per line: conversation_id, turns, handoffs)",
    "chat JSONL, one conversation per line with `messages` in the OpenAI chat format (role, "
    "content, name or agent, tool_calls, tool_call_id)",
    "chat JSONL, one message per line with `conversation_id`, role and content",
    "a chat log: a JSON list of {role, name, content}, {\"messages\": [...]} or AG2's "
    "{\"chat_history\": [...]}",
    "exports of the OpenAI Agents SDK, OpenTelemetry GenAI or OpenInference spans (OTLP JSON), "
    "LangGraph, AutoGen and CrewAI",
)

#: Top-level fields that only a maev trace line has.
_TRACE_KEYS = frozenset({"conversation_id", "turns", "handoffs", "user_messages",
                         "schema_version"})

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


@dataclass(frozen=True)
class Detected:
    """What :func:`detect_file` found: ``format`` is ``"maev"`` (a trace JSONL file, read by
    the trace reader, ``data`` None) or an importer's name (``data``: the parsed export)."""

    path: Path
    name: str  #: the file's name in messages
    format: str
    data: Any = None


def not_traces_error(name: str, kind: str | None) -> InputError | None:
    """The error for a file of another kind passed where traces are expected, else None.

    >>> print(not_traces_error("labels.jsonl", "labels"))
    labels.jsonl: this looks like a labels file (lines with item_id, annotator, label), not traces; pass it as labels: `maev init-set TRACES --out SET --labels labels.jsonl` carries them into a set, `maev agree labels.jsonl` compares annotators
    """
    if kind not in _NOT_TRACES:
        return None
    what, fix = _NOT_TRACES[kind]
    return InputError(f"{name}: this looks like {what}, not traces; {fix.format(name=name)}")


def unknown_shape_error(name: str, data: Any) -> InputError:
    """The one message for a file of no shape the kit reads: what it holds, and every shape
    it knows.

    >>> print(unknown_shape_error("x.json", {"hello": "world"}))  # doctest: +ELLIPSIS
    x.json: not a trace file maev-kit can read (it holds an object with the key hello). It reads: maev trace JSONL ...; to force an importer, name it (`maev import FORMAT`, `--format`, `format=`): openai-agents, otel, openinference, langgraph, autogen, crewai, chat
    """
    first = data[0] if isinstance(data, list) and data else data
    if isinstance(first, dict):
        keys = ", ".join(sorted(str(k) for k in first)[:8]) + (", …" if len(first) > 8 else "")
        held = (f"lines whose first is an object with the key{'s' if len(first) != 1 else ''} "
                if isinstance(data, list) else
                f"an object with the key{'s' if len(first) != 1 else ''} ") + keys
    else:
        held = f"a JSON {_json_type(first)}" + (" per line" if isinstance(data, list) else "")
    return InputError(f"{name}: not a trace file maev-kit can read (it holds {held}). It "
                      f"reads: {'; '.join(SHAPES)}; to force an importer, name it (`maev "
                      f"import FORMAT`, `--format`, `format=`): {', '.join(FORMATS)}")


def _json_type(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            type(None): "null"}.get(type(value), "number")


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _otlp_flavour(data: dict[str, Any]) -> str:
    for rs in _list(data.get("resourceSpans")):
        rs = _dict(rs)
        for ss in _list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans")):
            for s in _list(_dict(ss).get("spans")):
                for kv in _list(_dict(s).get("attributes")):
                    if isinstance(kv, dict) and kv.get("key") == "openinference.span.kind":
                        return "openinference"
    return "otel"


def _message_flavour(msgs: list[Any]) -> str | None:
    for m in msgs[:20]:
        if not isinstance(m, dict):
            return None
        if "source" in m and "type" in m:
            return "autogen"
        if (m.get("lc") == 1 or ("type" in m and "data" in m)
                or m.get("type") in _LC_TYPES):
            return "langgraph"
    if msgs and all(isinstance(m, dict) and ("role" in m or "name" in m or "agent" in m)
                    for m in msgs[:20]):
        return "chat"
    return None


def _chat_message_line(data: dict[str, Any]) -> bool:
    """A chat JSONL line of one message: ``{conversation_id, role, content | tool_calls}``."""
    return ("conversation_id" in data and "role" in data and "turns" not in data
            and ("content" in data or "tool_calls" in data))


def detect_format(data: Any) -> str | None:
    """The format name for parsed JSON ``data``, or None when nothing matches.

    >>> detect_format({"resourceSpans": []})
    'otel'
    >>> detect_format([{"role": "user", "content": "hi"}, {"name": "bot", "content": "hello"}])
    'chat'
    >>> detect_format({"conversation_id": "c1", "role": "user", "content": "hi"})
    'chat'
    >>> detect_format({"conversation_id": "c1", "turns": []}) is None  # a maev trace line
    True
    """
    if isinstance(data, dict):
        return _object_format(data)
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, list) and len(first) == 2 and isinstance(first[1], dict):
            return "langgraph"  # stream updates with subgraph namespaces
        if not isinstance(first, dict):
            return None
        if isinstance(first.get("data"), list) or first.get("object") in ("trace", "trace.span"):
            return "openai-agents"
        if "raw_item" in first and str(first.get("type", "")).endswith("_item"):
            return "openai-agents"
        if "run_type" in first:
            return "langgraph"
        if first.get("type") in _CREW_EVENTS or ("emission_sequence" in first
                                                  and "event_id" in first):
            return "crewai"
        if "messages" in first or "chat_history" in first:
            inner = first.get("messages", first.get("chat_history"))
            flavour = _message_flavour(inner) if isinstance(inner, list) else None
            return flavour if flavour not in (None, "autogen", "langgraph") else "chat"
        if all(isinstance(v, dict) and "messages" in v for v in first.values()) and first:
            return "langgraph"  # stream updates without namespaces
        if "turns" in first:
            return None  # maev trace lines, whatever else they hold
        return _message_flavour(data)
    return None


def _object_format(data: dict[str, Any]) -> str | None:
    """:func:`detect_format` of one JSON object."""
    if "resourceSpans" in data:
        return _otlp_flavour(data)
    if "openinference.span.kind" in data:
        return "openinference"
    if any(isinstance(k, str) and k.startswith("gen_ai.") for k in data):
        return "otel"
    if ("spans" in data and ("trace" in data or isinstance(data.get("spans"), list))) \
            or "new_items" in data or "$schemaVersion" in data \
            or "session_items" in data or (
            isinstance(data.get("data"), list) and data["data"]
            and isinstance(data["data"][0], dict) and "object" in data["data"][0]):
        return "openai-agents"
    if data.get("type") == "TeamState":
        return "autogen"
    if "run_type" in data:
        return "langgraph"
    if isinstance(data.get("events"), list):
        if any(isinstance(e, dict) and e.get("type") in _CREW_EVENTS for e in data["events"]):
            return "crewai"
        return None
    if "chat_history" in data or _chat_message_line(data):
        return "chat"
    if isinstance(data.get("messages"), list):
        flavour = _message_flavour(data["messages"])
        if flavour is None and "conversation_id" in data and "turns" not in data:
            return "chat"  # a chat JSONL line; the importer names what is wrong in it
        return flavour
    return None


def read_json(path: Path, name: str) -> Any:
    """The JSON document at ``path``, or its JSON Lines as a list (the OTel collector's file
    exporter's lines as one export); an :class:`InputError` naming the line that is neither."""
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


_UNREADABLE = object()  #: the first line of a file is not JSON (or not UTF-8, or too deep)


def _first_line(path: Path) -> Any:
    """The first non-blank line of ``path`` as JSON; None for none, :data:`_UNREADABLE`
    when it is not JSON."""
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    return json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply
        return _UNREADABLE
    return None


def _trace_line(first: Any) -> bool:
    """Whether the first record of a file is, beyond doubt, a maev trace line: a trace field
    no other kit file has (``turns``, ``user_messages``, ``schema_version``, a handoff with
    ``from_agent`` / ``to_agent``) and no export's shape."""
    if not isinstance(first, dict) or detect_format(first) is not None:
        return False
    handoffs = first.get("handoffs")
    return bool({"turns", "user_messages", "schema_version"} & set(first)) or (
        isinstance(handoffs, list) and any(isinstance(h, dict) and {"from_agent", "to_agent"}
                                           & set(h) for h in handoffs))


def is_trace_jsonl(path: str | os.PathLike[str]) -> bool:
    """True when the first non-blank line of ``path`` is a maev trace object (even a broken
    one, so that its problems are reported as trace problems) and no export's."""
    first = _first_line(Path(path))
    return (isinstance(first, dict) and bool(_TRACE_KEYS & set(first))
            and detect_format(first) is None)


def detect_file(path: str | os.PathLike[str], format: str = "auto", *,
                name: str | None = None) -> Detected:
    """What the trace file at ``path`` is: the one function every reader of traces asks.

    - ``"maev-parquet"``: a maev trace Parquet file (by its magic bytes);
    - ``"maev"``: a maev trace JSONL file — its first record is an object with a trace field
      (``conversation_id``, ``turns``, …) and no export's shape, or a ``.jsonl`` file whose
      first line is not a JSON object (the trace reader then names every broken line);
    - an importer's name: an export :func:`detect_format` recognises (or ``format``, forced);
    - else an :class:`InputError`: a folder, a missing or empty file, another kind of
      maev-kit file (labels, a judge card … : what to do with it), or one message naming
      every shape the kit reads (:data:`SHAPES`).

    A ``RecursionError`` (JSON nested too deeply) propagates for the caller to name.

    >>> import json, os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "chat.jsonl")
    >>> with open(p, "w") as f:
    ...     for m in [{"conversation_id": "c1", "role": "user", "content": "Hi"},
    ...               {"conversation_id": "c1", "role": "assistant", "name": "triage",
    ...                "content": "Hello"}]:
    ...         _ = f.write(json.dumps(m) + "\\n")
    >>> detect_file(p).format
    'chat'
    """
    p = Path(path)
    name = name or p.name
    _check_path(p, name)
    if format == "auto":
        from maev_kit.internal import sniff
        from maev_kit.traces._parquet import is_parquet_file

        if is_parquet_file(p):  # the kit's own columnar traces (maev convert, save_traces)
            return Detected(p, name, "maev-parquet")

        first = _first_line(p)
        if _trace_line(first):
            return Detected(p, name, "maev")
        found = sniff(p)
        other = not_traces_error(name, found.kind if found is not None else None)
        if other is not None:
            raise other
        if isinstance(first, dict) and _TRACE_KEYS & set(first) and detect_format(first) is None:
            return Detected(p, name, "maev")  # a broken trace line: the reader says what is wrong
        if p.suffix.lower() == ".jsonl" and not isinstance(first, dict):
            try:
                data = read_json(p, name)
            except (InputError, RecursionError):
                return Detected(p, name, "maev")  # broken JSON Lines: the reader names the lines
            fmt = detect_format(data)
            return Detected(p, name, "maev") if fmt is None else Detected(p, name, fmt, data)
    data = read_json(p, name)
    check_not_empty(name, data)
    if format != "auto":
        return Detected(p, name, format, data)
    fmt = detect_format(data)
    if fmt is None:
        raise unknown_shape_error(name, data)
    return Detected(p, name, fmt, data)


def _check_path(p: Path, name: str) -> None:
    """Raise for a folder, a missing, unreadable or empty file."""
    if p.is_dir():
        raise InputError(f"{name}: is a folder; give a trace JSONL file or a framework export "
                         "(a labeled-set folder is already a set)")
    if not p.exists():
        raise InputError(f"{name}: file not found")
    try:
        if p.stat().st_size < 4096 and not p.read_bytes().strip():
            raise InputError(f"{name}: file is empty; give a trace JSONL file or a framework "
                             "export")
    except OSError as e:
        raise InputError(f"{name}: cannot read the file ({e.strerror})") from None


def check_not_empty(name: str, data: Any) -> None:
    """``no traces in FILE`` for an empty JSON list or object (or a list of empty ones)."""
    if data in ([], {}) or (isinstance(data, list) and all(v in ([], {}) for v in data)):
        shown = "an empty list" if isinstance(data, list) else "an empty object"
        raise InputError(f"no traces in {name}: it holds {shown}")
