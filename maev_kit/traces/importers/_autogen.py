"""AutoGen AgentChat ``TaskResult.messages`` dumps (and a Swarm's ``TeamState``) → traces.

- ``TextMessage`` from ``user`` → a user message; from an agent → an agent turn;
- ``ThoughtEvent`` + ``ToolCallRequestEvent`` → one turn (the thought as its text, the calls as
  tool calls); ``ToolCallExecutionEvent`` fills the calls' outputs (by ``call_id``);
- ``ToolCallSummaryMessage`` (the tool results rendered as the agent's reply when it does not
  reflect on tool use) → no turn: its ``results`` fill the outputs of their calls; a summary
  whose calls are not in the dump becomes a turn with message ``""`` holding those calls;
- ``HandoffMessage`` → ``Handoff(source, target)``; ``context_passed`` is the arguments of the
  transfer tool call that made it (``{}`` for the Swarm's default handoff tools, which take
  none). Its ``context`` — the model context (LLM messages) carried to the target, not
  arguments — goes to ``metadata["handoff_model_context"]``.

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
    as_list,
    check_options,
    content_text,
    parse_jsonish,
    slug,
    str_or_none,
    tool_call,
    transfer_target,
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
    handoff_calls: set[int] = set()  # ids of transfer calls already matched to a handoff
    folded = 0
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
            calls = _calls(r, content, f"{where}.content", calls_by_id)
            b.turn(src, thought.pop(src, ""), calls)
        elif typ == "ToolCallExecutionEvent":
            for j, res in enumerate(r.arr(content, f"{where}.content")):
                res = r.obj(res, f"{where}.content[{j}]")
                c = calls_by_id.get(str_or_none(res.get("call_id")) or "")
                if c is not None:
                    _set_result(c, res)
                else:
                    issues.append(ImportIssue(FORMAT, f"{where}.content[{j}]", "tool result "
                                              f"for unknown call {res.get('call_id')!r} "
                                              "dropped", name))
        elif typ == "ToolCallSummaryMessage":
            folded += 1
            results = [x for x in as_list(m.get("results")) if isinstance(x, dict)]
            listed = [fc for fc in as_list(m.get("tool_calls"))
                      if isinstance(fc, dict) and "name" in fc]
            unknown = [c for c in _calls(r, listed, f"{where}.tool_calls", {})
                       if c.get("id") not in calls_by_id]
            for c in unknown:
                if "id" in c:
                    calls_by_id[c["id"]] = c
            for res in results:
                c = calls_by_id.get(str_or_none(res.get("call_id")) or "")
                if c is not None and "output" not in c:
                    _set_result(c, res)
            if unknown:
                b.turn(src, thought.pop(src, ""), unknown)
            elif not results:
                b.metadata.setdefault("tool_call_summaries", []).append(
                    {"source": src, "content": content})
                issues.append(ImportIssue(FORMAT, where, "ToolCallSummaryMessage without "
                                          "tool_calls/results (an older AutoGen): kept in "
                                          "metadata['tool_call_summaries'], not as a turn",
                                          name))
        elif typ == "HandoffMessage":
            target = r.str_(r.key(m, "target", where), f"{where}.target")
            call = _transfer_call(b, src, target, handoff_calls)
            args = call.get("arguments") if call is not None else None
            b.handoff(src, target, dict(args) if isinstance(args, dict) else (
                {"input": args} if args not in (None, "", [], {}) else {}))
            ctx = m.get("context")
            if ctx:
                b.metadata.setdefault("handoff_model_context", []).append(
                    {"handoff_index": len(b.handoffs) - 1, "messages": ctx})
        elif typ in _SKIP:
            unmapped[typ] += 1
        else:
            unmapped[typ] += 1
    for src, t in thought.items():
        b.turn(src, t)
    if folded:
        issues.append(ImportIssue(FORMAT, root, f"{folded} ToolCallSummaryMessage(s): tool "
                                  "results, attached to their calls as outputs (not agent "
                                  "turns)", name))
    if unmapped:
        issues.append(ImportIssue(FORMAT, root, "message types not mapped: " + ", ".join(
            f"{k} ×{v}" for k, v in unmapped.most_common()), name))
    return ImportResult([b.build()], issues)


def _calls(r: Reader, content: Any, where: str,
           calls_by_id: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """AutoGen ``FunctionCall`` objects → tool-call dicts, registered by id in ``calls_by_id``."""
    calls = []
    for j, fc in enumerate(r.arr(content, where)):
        fc = r.obj(fc, f"{where}[{j}]")
        c = tool_call(str(r.key(fc, "name", f"{where}[{j}]")), fc.get("arguments"),
                      id=fc.get("id"))
        calls.append(c)
        if "id" in c:
            calls_by_id[c["id"]] = c
    return calls


def _set_result(call: dict[str, Any], res: dict[str, Any]) -> None:
    """A ``FunctionExecutionResult`` as the call's ``output`` (``is_error`` kept)."""
    call["output"] = parse_jsonish(res.get("content"))
    if res.get("is_error"):
        call["is_error"] = True


def _transfer_call(b: TraceBuilder, src: str, target: str,
                   used: set[int]) -> dict[str, Any] | None:
    """The transfer tool call of ``src`` that made its handoff to ``target``: in ``src``'s
    latest turn with tool calls, a ``transfer_to_<target>`` call not yet matched."""
    for t in reversed(b.turns):
        if t.agent_id != src or not t.tool_calls:
            continue
        for c in t.tool_calls:
            tgt = transfer_target(c.get("name", ""))
            if id(c) not in used and tgt and slug(tgt) == slug(target):
                used.add(id(c))
                return c
        return None
    return None


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
