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
    messages, root, meta = _messages(r, data)
    chat = _Chat(r, TraceBuilder(name, FORMAT, metadata=meta), name)
    for i, m in enumerate(messages):
        chat.message(f"{root}[{i}]", m)
    chat.finish(root)
    return ImportResult([chat.b.build()], chat.issues)


def _messages(r: Reader, data: Any) -> tuple[list[Any], str, dict[str, Any]]:
    """The messages of a dump, where they are in it, and the trace metadata it gives
    (a ``TeamState``'s version and current speaker, a ``TaskResult``'s stop reason)."""
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
    return messages, root, meta


class _Chat:
    """The messages, in order, mapped onto one trace: the tool calls by id, each agent's
    thought waiting for its turn, the transfer calls matched and the counts the issues report."""

    def __init__(self, r: Reader, b: TraceBuilder, name: str) -> None:
        self.r = r
        self.b = b
        self.name = name
        self.issues: list[ImportIssue] = []
        self.calls_by_id: dict[str, dict[str, Any]] = {}
        self.thought: dict[str, str] = {}  # agent → thought not yet in a turn
        self.unmapped: Counter[str] = Counter()
        self.handoff_calls: set[int] = set()  # ids of transfer calls already matched to a handoff
        self.folded = 0  # ToolCallSummaryMessages read as tool outputs

    def message(self, where: str, m: Any) -> None:
        """One message (at ``where``) → what its type makes of it (see the module docstring)."""
        r, b = self.r, self.b
        m = r.obj(m, where)
        typ = r.str_(r.key(m, "type", where), f"{where}.type")
        src = r.str_(r.key(m, "source", where), f"{where}.source")
        content = m.get("content")
        if typ in ("TextMessage", "MultiModalMessage", "StructuredMessage"):
            text = content if isinstance(content, str) else content_text(content)
            if src == "user":
                b.user(text)
            else:
                pre = self.thought.pop(src, "")
                b.turn(src, f"{pre}\n{text}" if pre else text)
        elif typ == "ThoughtEvent":
            self.thought[src] = (f"{self.thought[src]}\n{content}" if src in self.thought
                                 else str(content))
        elif typ == "ToolCallRequestEvent":
            calls = _calls(r, content, f"{where}.content", self.calls_by_id)
            b.turn(src, self.thought.pop(src, ""), calls)
        elif typ == "ToolCallExecutionEvent":
            self._tool_results(where, content)
        elif typ == "ToolCallSummaryMessage":
            self._summary(where, m, src, content)
        elif typ == "HandoffMessage":
            self._handoff(where, m, src)
        else:  # the types in _SKIP, and any other
            self.unmapped[typ] += 1

    def _tool_results(self, where: str, content: Any) -> None:
        """A ``ToolCallExecutionEvent``'s results → the outputs of their calls, by call id."""
        r = self.r
        for j, res in enumerate(r.arr(content, f"{where}.content")):
            res = r.obj(res, f"{where}.content[{j}]")
            c = self.calls_by_id.get(str_or_none(res.get("call_id")) or "")
            if c is not None:
                _set_result(c, res)
            else:
                self.issues.append(ImportIssue(FORMAT, f"{where}.content[{j}]", "tool result "
                                               f"for unknown call {res.get('call_id')!r} "
                                               "dropped", self.name))

    def _summary(self, where: str, m: dict[str, Any], src: str, content: Any) -> None:
        """A ``ToolCallSummaryMessage`` → its results as the outputs of their calls; a turn
        holding its calls not in the dump; kept in the metadata when it lists neither."""
        self.folded += 1
        results = [x for x in as_list(m.get("results")) if isinstance(x, dict)]
        listed = [fc for fc in as_list(m.get("tool_calls"))
                  if isinstance(fc, dict) and "name" in fc]
        unknown = [c for c in _calls(self.r, listed, f"{where}.tool_calls", {})
                   if c.get("id") not in self.calls_by_id]
        for c in unknown:
            if "id" in c:
                self.calls_by_id[c["id"]] = c
        for res in results:
            call = self.calls_by_id.get(str_or_none(res.get("call_id")) or "")
            if call is not None and "output" not in call:
                _set_result(call, res)
        if unknown:
            self.b.turn(src, self.thought.pop(src, ""), unknown)
        elif not results:
            self.b.metadata.setdefault("tool_call_summaries", []).append(
                {"source": src, "content": content})
            self.issues.append(ImportIssue(FORMAT, where, "ToolCallSummaryMessage without "
                                           "tool_calls/results (an older AutoGen): kept in "
                                           "metadata['tool_call_summaries'], not as a turn",
                                           self.name))

    def _handoff(self, where: str, m: dict[str, Any], src: str) -> None:
        """A ``HandoffMessage`` → a handoff whose context is the arguments of the transfer call
        that made it; the model context it carries goes to the metadata."""
        r, b = self.r, self.b
        target = r.str_(r.key(m, "target", where), f"{where}.target")
        call = _transfer_call(b, src, target, self.handoff_calls)
        args = call.get("arguments") if call is not None else None
        b.handoff(src, target, dict(args) if isinstance(args, dict) else (
            {"input": args} if args not in (None, "", [], {}) else {}))
        ctx = m.get("context")
        if ctx:
            b.metadata.setdefault("handoff_model_context", []).append(
                {"handoff_index": len(b.handoffs) - 1, "messages": ctx})

    def finish(self, root: str) -> None:
        """The thoughts no turn took, as turns; then the issues of the whole dump."""
        for src, t in self.thought.items():
            self.b.turn(src, t)
        if self.folded:
            self.issues.append(ImportIssue(FORMAT, root, f"{self.folded} "
                                           "ToolCallSummaryMessage(s): tool results, attached "
                                           "to their calls as outputs (not agent turns)",
                                           self.name))
        if self.unmapped:
            self.issues.append(ImportIssue(FORMAT, root, "message types not mapped: " + ", ".join(
                f"{k} ×{v}" for k, v in self.unmapped.most_common()), self.name))


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
