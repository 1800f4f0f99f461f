"""AutoGen AgentChat ``TaskResult.messages`` dumps (and a Swarm's ``TeamState``) → traces.

- ``TextMessage`` from ``user`` → a user message; from an agent → an agent turn;
- ``ThoughtEvent`` + ``ToolCallRequestEvent`` → one turn (the thought as its text, the calls as
  tool calls); ``ToolCallExecutionEvent`` fills the calls' outputs;
- ``ToolCallSummaryMessage`` → a turn with the summary text;
- ``HandoffMessage`` → ``Handoff(source, target)``, its ``context`` (the messages the agent
  passes on) as ``context_passed["context"]``.

A ``TeamState`` (``team.save_state()``) is read through its group chat manager's
``message_thread``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    Reader,
    TraceBuilder,
    check_options,
    content_text,
    parse_jsonish,
    str_or_none,
    tool_call,
)

FORMAT = "autogen"
_SKIP = {"StopMessage", "UserInputRequestedEvent", "ModelClientStreamingChunkEvent",
         "CodeGenerationEvent", "CodeExecutionEvent", "SelectSpeakerEvent",
         "SelectorEvent"}


def import_autogen(data: Any, *, name: str = "task", **options: Any) -> ImportResult:
    """``TaskResult`` dump / message list / ``TeamState`` → (traces, issues)."""
    check_options(options, FORMAT)
    r = Reader(FORMAT)
    meta: dict[str, Any] = {}
    root = "messages"
    if isinstance(data, dict) and data.get("type") == "TeamState":
        states = r.obj(r.key(data, "agent_states", ""), "agent_states")
        managers = [k for k, v in states.items()
                    if isinstance(v, dict) and isinstance(v.get("message_thread"), list)]
        if not managers:
            raise r.fail("agent_states", "no group chat manager state with a message_thread")
        root = f"agent_states.{managers[0]}.message_thread"
        messages = states[managers[0]]["message_thread"]
        meta["team_state_version"] = data.get("version")
        if states[managers[0]].get("current_speaker"):
            meta["current_speaker"] = states[managers[0]]["current_speaker"]
    elif isinstance(data, dict):
        messages = r.arr(r.key(data, "messages", ""), "messages")
        if data.get("stop_reason"):
            meta["stop_reason"] = data["stop_reason"]
    else:
        messages = r.arr(data, "")
        root = ""
    issues: list[ImportIssue] = []
    b = TraceBuilder(name, FORMAT, metadata=meta)
    calls_by_id: dict[str, dict[str, Any]] = {}
    thought: dict[str, str] = {}
    unmapped: Counter[str] = Counter()
    for i, m in enumerate(messages):
        where = f"{root}[{i}]"
        m = r.obj(m, where)
        typ = r.str_(r.key(m, "type", where), f"{where}.type")
        src = r.str_(r.key(m, "source", where), f"{where}.source")
        content = m.get("content")
        if typ in ("TextMessage", "MultiModalMessage", "StructuredMessage"):
            text = content if isinstance(content, str) else content_text(content)
            if src == "user":
                b.user(text)
            else:
                pre = thought.pop(src, "")
                b.turn(src, f"{pre}\n{text}" if pre else text)
        elif typ == "ThoughtEvent":
            thought[src] = f"{thought[src]}\n{content}" if src in thought else str(content)
        elif typ == "ToolCallRequestEvent":
            calls = []
            for j, fc in enumerate(r.arr(content, f"{where}.content")):
                fc = r.obj(fc, f"{where}.content[{j}]")
                c = tool_call(str(r.key(fc, "name", f"{where}.content[{j}]")),
                              fc.get("arguments"), id=fc.get("id"))
                calls.append(c)
                if "id" in c:
                    calls_by_id[c["id"]] = c
            b.turn(src, thought.pop(src, ""), calls)
        elif typ == "ToolCallExecutionEvent":
            for j, res in enumerate(r.arr(content, f"{where}.content")):
                res = r.obj(res, f"{where}.content[{j}]")
                c = calls_by_id.get(str_or_none(res.get("call_id")) or "")
                if c is not None:
                    c["output"] = parse_jsonish(res.get("content"))
                    if res.get("is_error"):
                        c["is_error"] = True
        elif typ == "ToolCallSummaryMessage":
            b.turn(src, content_text(content))
        elif typ == "HandoffMessage":
            target = r.str_(r.key(m, "target", where), f"{where}.target")
            ctx = m.get("context") or []
            ctx = ctx if isinstance(ctx, (list, dict, str)) else [ctx]
            b.handoff(src, target, {"context": ctx} if ctx else {})
        elif typ in _SKIP:
            unmapped[typ] += 1
        else:
            unmapped[typ] += 1
    for src, t in thought.items():
        b.turn(src, t)
    if unmapped:
        issues.append(ImportIssue(FORMAT, root, "message types not mapped: " + ", ".join(
            f"{k} ×{v}" for k, v in unmapped.most_common()), name))
    return ImportResult([b.build()], issues)


def autogen_messages_in_spans(spans: list[Any]) -> list[dict[str, Any]]:
    """AgentChat messages carried as JSON in span attributes, deduplicated, in time order.

    AutoGen's runtime spans (``message``) and the OpenInference team span (``output.value``)
    hold the chat messages themselves; with them an OTLP export keeps its text.
    """
    found: dict[str, dict[str, Any]] = {}

    def visit(v: Any, depth: int = 0) -> None:
        if depth > 8:
            return
        if isinstance(v, dict):
            if (isinstance(v.get("source"), str) and isinstance(v.get("type"), str)
                    and isinstance(v.get("id"), str) and "content" in v):
                found.setdefault(v["id"], v)
            for x in v.values():
                visit(x, depth + 1)
        elif isinstance(v, list):
            for x in v:
                visit(x, depth + 1)

    for s in spans:
        for key in ("message", "output.value"):
            value = s.attrs.get(key)
            if isinstance(value, str) and '"source"' in value:
                visit(parse_jsonish(value))
    msgs = sorted(found.values(), key=lambda m: str(m.get("created_at", "")))
    return msgs if any(m["source"] != "user" for m in msgs) else []


def spans_via_messages(group: list[Any], fmt: str, conv: str, meta: dict[str, Any],
                       issues: list[ImportIssue]):
    """The trace of an OTLP group rebuilt from AutoGen message payloads, or None."""
    msgs = autogen_messages_in_spans(group)
    if not msgs:
        return None
    traces, found = import_autogen(msgs, name=conv)
    t = traces[0]
    t.metadata = {**t.metadata, **meta, "source_format": fmt,
                  "text_source": "AutoGen chat messages in span attributes"}
    issues.extend(ImportIssue(fmt, i.where, i.message, conv) for i in found)
    issues.append(ImportIssue(fmt, "", f"conversation read from the {len(msgs)} AutoGen chat "
                              "messages the spans carry as JSON (agent spans hold no text)",
                              conv))
    return t
