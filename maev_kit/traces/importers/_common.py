"""Shared pieces of the importers: the result types, the error, a trace builder, JSON helpers.

Every importer is a pure function ``data -> (traces, issues)``: it reads already-parsed JSON,
never a framework package.
"""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from maev_kit.errors import InputError
from maev_kit.traces._model import AgentTurn, Handoff, HandoffReason, MultiAgentTrace, UserMessage

__all__ = [
    "ImportIssue",
    "ImportResult",
    "TraceBuilder",
    "TraceImportError",
]


@dataclass(frozen=True)
class ImportIssue:
    """Something in the source that the import could not map (or mapped by inference).

    ``where`` locates it in the source (``spans[3]``, ``messages[5]``); ``conversation_id``
    names the trace it belongs to, when there is one.

    >>> str(ImportIssue("otel", "spans[2]", "span kind 'embeddings' is not mapped"))
    "otel: spans[2]: span kind 'embeddings' is not mapped"
    """

    format: str
    where: str
    message: str
    conversation_id: str | None = None

    def __str__(self) -> str:
        conv = f" [{self.conversation_id}]" if self.conversation_id else ""
        loc = f" {self.where}:" if self.where else ""
        return f"{self.format}{conv}:{loc} {self.message}"


class ImportResult(NamedTuple):
    """What :func:`~maev_kit.traces.importers.import_traces` returns.

    Unpack it as ``traces, issues = import_traces(...)``.
    """

    traces: list[MultiAgentTrace]
    warnings: list[ImportIssue]


class TraceImportError(InputError):
    """A file could not be read as the format tried.

    ``format`` is the format tried, ``where`` the place in the file that failed
    (``spans[3].span_data.type``), ``file`` the file's display name.
    """

    def __init__(self, format: str, where: str, message: str, *, file: str | None = None):
        self.format = format
        self.where = where
        self.file = file
        self.reason = message
        loc = f" at {where}" if where else ""
        src = f" {file}" if file else ""
        super().__init__(f"cannot import{src} as {format!r}{loc}: {message}")


def type_name(value: Any) -> str:
    """JSON name of a Python value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


class Reader:
    """Typed access to parsed JSON that raises :class:`TraceImportError` with the JSON path."""

    def __init__(self, format: str):
        self.format = format

    def fail(self, where: str, message: str) -> TraceImportError:
        return TraceImportError(self.format, where, message)

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {type_name(value)}")
        return value

    def arr(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected an array, got {type_name(value)}")
        return value

    def str_(self, value: Any, where: str) -> str:
        if not isinstance(value, str):
            raise self.fail(where, f"expected a string, got {type_name(value)}")
        return value

    def key(self, mapping: dict[str, Any], key: str, where: str) -> Any:
        if key not in mapping:
            raise self.fail(f"{where}.{key}" if where else key, "required field is missing")
        return mapping[key]


def parse_jsonish(value: Any) -> Any:
    """A JSON string parsed, anything else as is; unparseable strings stay strings."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in "{[":
            try:
                return json.loads(s)
            except ValueError:
                return value
    return value


def parse_python_repr(text: str) -> Any:
    """A Python literal repr (``{'content': None, ...}``) parsed safely, or None."""
    s = text.strip()
    if not (s.startswith("{'") or s.startswith("[{'")):
        return None
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def slug(name: str) -> str:
    """``"Billing Specialist"`` → ``"billing_specialist"`` (how SDKs name transfer tools)."""
    return re.sub(r"[^0-9a-z]+", "_", str(name).lower()).strip("_")


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else ``{}`` (for optional nested objects)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]`` (for optional nested arrays)."""
    return value if isinstance(value, list) else []


def str_or_none(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None (ids, names)."""
    return value if isinstance(value, str) and value else None


_TRANSFER = re.compile(r"^(?:transfer_to_|handoff_to_|transfer_back_to_|escalate_to_)(.+)$")


def transfer_target(tool_name: str) -> str | None:
    """The target slug of a handoff tool (``transfer_to_billing`` → ``billing``), else None."""
    m = _TRANSFER.match(tool_name if isinstance(tool_name, str) else "")
    return m.group(1) if m else None


def resolve_agent(target_slug: str, known: list[str] | set[str] | dict[str, Any]) -> str:
    """Map a transfer tool's slug to a known agent name (case and separator insensitive)."""
    for name in known:
        if slug(name) == slug(target_slug):
            return name
    return target_slug


def enum_reason(value: Any) -> HandoffReason | None:
    """A :class:`HandoffReason` when ``value`` is exactly one of its values, else None."""
    if isinstance(value, str):
        try:
            return HandoffReason(value.strip().lower())
        except ValueError:
            return None
    return None


def tool_call(name: str, arguments: Any = None, *, id: str | None = None,
              output: Any = None) -> dict[str, Any]:
    """The importers' tool-call dict: ``{"name", "arguments", "id"?, "output"?}``."""
    call: dict[str, Any] = {"name": str(name), "arguments": parse_jsonish(arguments)
                            if arguments is not None else {}}
    if isinstance(id, str) and id:
        call["id"] = id
    if output is not None:
        call["output"] = output
    return call


def unwrap_tool_output(value: Any) -> tuple[Any, str | None]:
    """A tool's result out of the wrappers instrumentations record it in: ``(output, call id)``.

    LangChain/LangGraph tools return a ``ToolMessage`` (recorded as ``{"type": "tool", "data":
    {"content", "tool_call_id", ...}}`` or ``{"lc": 1, "kwargs": {...}}``), and handoff tools a
    ``Command`` whose ``update.messages`` end with that ``ToolMessage``: the output is the
    message's content (parsed when it is JSON). Anything else is returned parsed, with no id.
    Untrusted input: shapes that do not match are returned as they are.

    >>> unwrap_tool_output({"type": "tool", "data": {"content": '{"ok": 1}', "tool_call_id": "c1"}})
    ({'ok': 1}, 'c1')
    >>> unwrap_tool_output({"graph": "__parent__", "update": {"messages": [
    ...     {"type": "tool", "data": {"content": "Transferred", "tool_call_id": "c2"}}]}})
    ('Transferred', 'c2')
    >>> unwrap_tool_output("plain text")
    ('plain text', None)
    """
    v = parse_jsonish(value)

    def tool_message(m: Any) -> dict[str, Any] | None:
        if not isinstance(m, dict):
            return None
        if m.get("lc") == 1 and isinstance(m.get("kwargs"), dict):
            kw = m["kwargs"]
            ids = as_list(m.get("id"))
            if kw.get("type") == "tool" or (ids and ids[-1] == "ToolMessage"):
                return kw
            return None
        if m.get("type") == "tool" and isinstance(m.get("data"), dict):
            return m["data"]
        if m.get("type") == "tool" and "content" in m and "tool_call_id" in m:
            return m
        return None

    msg = tool_message(v)
    if msg is None and isinstance(v, dict) and isinstance(v.get("update"), dict):
        found = [tm for tm in (tool_message(x) for x in as_list(v["update"].get("messages")))
                 if tm is not None]
        msg = found[-1] if found else None
    if msg is None:
        return v, None
    content = msg.get("content")
    if isinstance(content, list):
        content = content_text(content)
    return parse_jsonish(content), str_or_none(msg.get("tool_call_id"))


def chat_tool_calls(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """Tool calls of an OpenAI chat-style message (``tool_calls[].function``), leniently:
    entries that are not objects are passed over.

    >>> chat_tool_calls({"tool_calls": [{"id": "c1", "function": {"name": "lookup",
    ...                  "arguments": '{"q": 1}'}}, "junk"]})
    [{'name': 'lookup', 'arguments': {'q': 1}, 'id': 'c1'}]
    """
    out = []
    for tc in as_list(msg.get("tool_calls")):
        if isinstance(tc, dict):
            fn = as_dict(tc.get("function"))
            out.append(tool_call(str(fn.get("name", "")), fn.get("arguments"), id=tc.get("id")))
    return out


@dataclass
class TraceBuilder:
    """Builds one :class:`MultiAgentTrace`, giving turn indices from one shared sequence.

    User messages, agent turns and handoffs take the next index in the order they are added,
    so the timeline is the order of the source.

    >>> b = TraceBuilder("c-1", "chat")
    >>> b.user("Hi")
    >>> _ = b.turn("triage", "Routing you.")
    >>> _ = b.handoff("triage", "billing")
    >>> [(type(e).__name__, e.turn_index) for e in b.build().timeline()]
    [('UserMessage', 0), ('AgentTurn', 1), ('Handoff', 2)]
    """

    conversation_id: str
    format: str
    metadata: dict[str, Any] = field(default_factory=dict)
    turns: list[AgentTurn] = field(default_factory=list)
    handoffs: list[Handoff] = field(default_factory=list)
    user_messages: list[UserMessage] = field(default_factory=list)
    roles: dict[str, str] = field(default_factory=dict)
    _seq: int = 0

    def _next(self) -> int:
        i = self._seq
        self._seq += 1
        return i

    def user(self, content: str) -> None:
        self.user_messages.append(UserMessage(content, self._next()))

    def turn(self, agent: str, message: str, tool_calls: list[dict[str, Any]] | None = None,
             *, role: str | None = None) -> AgentTurn:
        role = role if role is not None else self.roles.get(agent, "")
        t = AgentTurn(agent, role, message, list(tool_calls or []), self._next())
        self.turns.append(t)
        return t

    def handoff(self, from_agent: str, to_agent: str, context: dict[str, Any] | None = None,
                *, mode: str = "transfer", reason: HandoffReason | None = None) -> Handoff:
        context = dict(context or {})
        if reason is None:
            reason = enum_reason(context.get("reason"))
        h = Handoff(from_agent, to_agent, reason, context, self._next(),
                    mode)  # type: ignore[arg-type]
        self.handoffs.append(h)
        return h

    def build(self) -> MultiAgentTrace:
        meta = {"source_format": self.format, **self.metadata}
        return MultiAgentTrace(self.conversation_id, list(self.turns), list(self.handoffs),
                               list(self.user_messages), meta)


def content_text(content: Any) -> str:
    """Text of a message content that may be a string, a list of parts, or None."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                t = part.get("text", part.get("content"))
                if isinstance(t, str) and part.get("type", "text") in (
                        "text", "output_text", "input_text"):
                    texts.append(t)
        return "\n".join(texts)
    if isinstance(content, dict):
        t = content.get("text", content.get("content"))
        return t if isinstance(t, str) else ""
    return str(content)


def handoff_types_option(value: Any) -> tuple[str, ...]:
    """The ``handoff_type`` option as a tuple of span types."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(
            isinstance(v, str) and v.strip() for v in items):
        raise InputError(f"handoff_type must be a span type (str) or a list of them, got "
                         f"{value!r}")
    return tuple(v.strip() for v in items)


def zero_handoff_issue(fmt: str, traces: list[MultiAgentTrace], unmapped: Counter[str],
                       what: str, mapped: frozenset[str] | set[str] = frozenset()
                       ) -> ImportIssue | None:
    """The issue for an import that found several agents and no handoff: it names the
    ``what`` (span types, operation names) left unmapped, and the option that reads one as a
    handoff (``handoff_type``; ``--handoff-type`` on ``maev import``). None otherwise."""
    agents = {a for t in traces for a in t.agents_involved()}
    if len(agents) < 2 or any(t.handoffs for t in traces):
        return None
    if unmapped:
        listed = ", ".join(f"{k!r} ×{n}" for k, n in unmapped.most_common())
        first = unmapped.most_common(1)[0][0]
        return ImportIssue(fmt, "", f"{len(agents)} agents but 0 handoffs: {what}s not mapped: "
                           f"{listed}; if one of them is your handoff, map it with "
                           f"handoff_type={first!r} (maev import {fmt} FILE --handoff-type "
                           f"{first} -o traces.jsonl)")
    extra = f" (also read as handoffs: {', '.join(sorted(mapped))})" if mapped else ""
    return ImportIssue(fmt, "", f"{len(agents)} agents but 0 handoffs, and no unmapped {what} "
                       f"to read as one{extra}: the export records no handoff")


def check_options(options: dict[str, Any], fmt: str, allowed: tuple[str, ...] = ()) -> None:
    """Raise :class:`InputError` naming options the format does not take."""
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(f"unknown option(s) for format {fmt!r}: {', '.join(unknown)}"
                         + (f"; allowed: {', '.join(allowed)}" if allowed else
                            "; this format takes no options"))
