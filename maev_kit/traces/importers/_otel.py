"""OTLP JSON with the OpenTelemetry GenAI semantic conventions → traces.

- ``invoke_agent`` spans (``gen_ai.agent.name``) own the spans below them;
- ``chat`` / ``text_completion`` / ``generate_content`` spans become agent turns
  (``gen_ai.output.messages``; the deprecated ``gen_ai.completion`` too);
- handoffs: ``execute_tool`` spans with ``gen_ai.transfer.target.name`` (``gen_ai.transfer.mode``
  ``pass_control`` → ``transfer``, ``return_to_caller`` → ``delegate``), the openai-agents-v2
  instrumentation's ``agent_handoff`` spans (``gen_ai.handoff.from_agent`` / ``to_agent``) and
  ``execute_tool`` spans of a ``transfer_to_<agent>`` tool;
- other ``execute_tool`` spans fill the output of the matching tool call; an ``invoke_agent``
  span inside one (an agent used as a tool) is a ``delegate`` handoff from the tool's caller.
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
    chat_tool_calls,
    check_options,
    content_text,
    handoff_types_option,
    parse_jsonish,
    parse_python_repr,
    tool_call,
    transfer_target,
    zero_handoff_issue,
)
from maev_kit.traces.importers._otlp import Span, parse_otlp
from maev_kit.traces.importers._spantree import import_flat_span, import_span_groups

FORMAT = "otel"
_LLM_OPS = {"chat", "text_completion", "generate_content", "completion"}
_MODES = {"pass_control": "transfer", "return_to_caller": "delegate",
          "transfer": "transfer", "delegate": "delegate"}


def _messages(value: Any) -> list[dict[str, Any]]:
    """GenAI messages (``[{"role", "parts": [...]}]``) from an attribute (JSON string or list)."""
    v = parse_jsonish(value)
    if isinstance(v, dict):
        if "messages" in v:
            v = v["messages"]
        elif "text" in v:  # {"text": ..., "finish_reason": ...}
            v = [{"role": "assistant", "parts": [{"type": "text", "content": v["text"]}]}]
        else:
            v = [v]
    return [m for m in v if isinstance(m, dict)] if isinstance(v, list) else []


def _parts(msg: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """(text, tool calls) of one GenAI message; also reads OpenAI-style messages."""
    parts = msg.get("parts")
    if parts is None:  # OpenAI chat-style message
        return content_text(msg.get("content")), chat_tool_calls(msg)
    texts, calls = [], []
    for p in parts if isinstance(parts, list) else []:
        if not isinstance(p, dict):
            continue
        if p.get("type") == "text":
            text = p.get("content")
            if isinstance(text, str):
                rep = parse_python_repr(text)  # openai-agents-v2 writes a Python repr here
                if isinstance(rep, dict) and rep.get("role") == "assistant":
                    t, c = _parts(rep)
                    texts.append(t)
                    calls.extend(c)
                else:
                    texts.append(text)
        elif p.get("type") == "tool_call":
            calls.append(tool_call(p.get("name", ""), p.get("arguments"), id=p.get("id")))
    return "\n".join(t for t in texts if t), calls


class OtelDialect:
    format = FORMAT
    reader = Reader(FORMAT)

    def __init__(self, handoff_types: tuple[str, ...] = ()) -> None:
        #: ``gen_ai.operation.name`` values read as handoffs besides ``agent_handoff``
        self.handoff_types = frozenset(handoff_types)

    def op(self, s: Span) -> str:
        op = s.attrs.get("gen_ai.operation.name")
        if isinstance(op, str):
            return op
        if "gen_ai.prompt" in s.attrs or "gen_ai.completion" in s.attrs:
            return "chat"
        return ""

    def agent_name(self, s: Span) -> str | None:
        if self.op(s) == "invoke_agent":
            n = s.attrs.get("gen_ai.agent.name")
            return n if isinstance(n, str) and n else None
        return None

    def own_agent(self, s: Span) -> str | None:
        if self.op(s) in ("create_agent", "invoke_workflow"):
            return None
        n = s.attrs.get("gen_ai.agent.name")
        return n if isinstance(n, str) and n else None

    def kind(self, s: Span) -> str | None:
        op = self.op(s)
        if op == "invoke_agent":
            return "agent" if self.agent_name(s) else None
        if op in _LLM_OPS:
            return "llm"
        if op == "agent_handoff" or op in self.handoff_types:
            return "handoff"
        if op == "execute_tool":
            if s.attrs.get("gen_ai.transfer.target.name") or transfer_target(
                    str(s.attrs.get("gen_ai.tool.name", ""))):
                return "handoff"
            return "tool"
        return None

    def llm_io(self, s: Span) -> tuple[list[str], str | None, list[dict[str, Any]]]:
        inputs = _messages(s.attrs.get("gen_ai.input.messages", s.attrs.get("gen_ai.prompt")))
        users = [_parts(m)[0] for m in inputs if m.get("role") == "user"]
        out_raw = s.attrs.get("gen_ai.output.messages", s.attrs.get("gen_ai.completion"))
        if out_raw is None:
            return users, None, []
        texts, calls = [], []
        for m in _messages(out_raw):
            t, c = _parts(m)
            texts.append(t)
            calls.extend(c)
        return users, "\n".join(t for t in texts if t), calls

    def tool_info(self, s: Span) -> dict[str, Any]:
        a = s.attrs
        out = a.get("gen_ai.tool.call.result", a.get("output"))
        return tool_call(str(a.get("gen_ai.tool.name", s.name)),
                         a.get("gen_ai.tool.call.arguments", a.get("input")),
                         id=a.get("gen_ai.tool.call.id"), output=parse_jsonish(out))

    def handoff_info(self, s: Span) -> tuple[str | None, str | None, dict[str, Any], str]:
        a = s.attrs
        if self.op(s) == "agent_handoff":
            return a.get("gen_ai.handoff.from_agent"), a.get("gen_ai.handoff.to_agent"), {}, \
                "transfer"
        target = a.get("gen_ai.transfer.target.name") or transfer_target(
            str(a.get("gen_ai.tool.name", "")))
        args = parse_jsonish(a.get("gen_ai.tool.call.arguments"))
        mode = _MODES.get(str(a.get("gen_ai.transfer.mode", "")), "transfer")
        return None, target, args if isinstance(args, dict) else {}, mode

    def agent_output(self, s: Span) -> str | None:
        if "gen_ai.output.messages" not in s.attrs:
            return None
        return "\n".join(_parts(m)[0] for m in _messages(s.attrs["gen_ai.output.messages"]))

    def root_users(self, s: Span) -> list[str]:
        return [_parts(m)[0] for m in _messages(s.attrs.get("gen_ai.input.messages"))
                if m.get("role") == "user"]

    def extra(self, s: Span, b: TraceBuilder, owner: str | None,
              issues: list[ImportIssue]) -> None:
        return None

    def handoff_call(self, s: Span) -> dict[str, Any] | None:
        """The transfer tool call an ``execute_tool`` handoff span records; None for the
        openai-agents-v2 ``agent_handoff`` spans (they name the agents, not the call)."""
        if self.op(s) != "execute_tool":
            return None
        return self.tool_info(s)

    def input_results(self, s: Span) -> dict[str, Any]:
        """Tool results in an LLM call's input history, by call id (``tool_call_response``
        parts; OpenAI-style ``role: tool`` messages with ``tool_call_id``)."""
        out: dict[str, Any] = {}
        for m in _messages(s.attrs.get("gen_ai.input.messages", s.attrs.get("gen_ai.prompt"))):
            if m.get("role") != "tool":
                continue
            cid = m.get("tool_call_id")
            if isinstance(cid, str) and cid and "parts" not in m:
                out.setdefault(cid, parse_jsonish(content_text(m.get("content"))))
            for p in as_list(m.get("parts")):
                if isinstance(p, dict) and p.get("type") == "tool_call_response" \
                        and isinstance(p.get("id"), str) and p["id"]:
                    out.setdefault(p["id"], parse_jsonish(p.get("response", p.get("result"))))
        return out

    def input_calls(self, s: Span) -> list[dict[str, Any]]:
        return [c for m in _messages(s.attrs.get("gen_ai.input.messages"))
                for c in _parts(m)[1]]

    def history(self, s: Span) -> list[tuple[str, str, list[dict[str, Any]]]]:
        out = []
        for m in _messages(s.attrs.get("gen_ai.input.messages", s.attrs.get("gen_ai.prompt"))):
            text, calls = _parts(m)
            if m.get("role") == "tool":
                for p in as_list(m.get("parts")):
                    if isinstance(p, dict) and p.get("type") == "tool_call_response":
                        text = str(p.get("response", p.get("result", "")))
            out.append((str(m.get("role")), text, calls))
        return out


def import_otel(data: Any, *, name: str = "trace", handoff_type: Any = None,
                **options: Any) -> ImportResult:
    """OTLP JSON (or one span's flat attribute map) with GenAI conventions → (traces, issues).

    ``handoff_type``: a ``gen_ai.operation.name`` (or a list of them) to read as a handoff
    besides ``agent_handoff``.
    """
    check_options(options, FORMAT, ("handoff_type",))
    r = Reader(FORMAT)
    dialect = OtelDialect(handoff_types_option(handoff_type))
    if isinstance(data, dict) and "resourceSpans" not in data:
        if not any(str(k).startswith("gen_ai.") for k in data):
            raise r.fail("", "expected an OTLP JSON export ({\"resourceSpans\": [...]}) or a "
                             "span's flat attribute map with gen_ai.* keys")
        return import_flat_span(data, dialect, name)
    spans = parse_otlp(data, r)
    if not any(k.startswith("gen_ai.") for s in spans for k in s.attrs):
        raise r.fail("resourceSpans", "no span has gen_ai.* attributes"
                     + ("; it is an OpenInference export (format 'openinference')"
                        if any("openinference.span.kind" in s.attrs for s in spans) else ""))
    result = import_span_groups(spans, dialect)
    unmapped = Counter(dialect.op(s) for s in spans if dialect.kind(s) is None and dialect.op(s))
    hint = zero_handoff_issue(FORMAT, result.traces, unmapped, "gen_ai.operation.name",
                              dialect.handoff_types)
    return result if hint is None else ImportResult(result.traces, [*result.warnings, hint])
