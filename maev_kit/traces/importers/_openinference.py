"""OTLP JSON with OpenInference attributes → traces.

- agents: ``AGENT`` spans with ``agent.name`` or ``graph.node.id``; LangChain/LangGraph spans name
  their agent in ``metadata.lc_agent_name``;
- ``LLM`` spans become agent turns (``llm.output_messages.*``, else ``output.value``);
- handoffs: ``TOOL`` spans named ``handoff to <agent>`` (OpenAI Agents SDK: ``input.value`` is the
  source agent, ``output.value`` the target) and ``TOOL`` spans of a ``transfer_to_<agent>`` tool
  (langgraph-swarm, AutoGen Swarm); their ``input.value`` arguments become ``context_passed``;
- other ``TOOL`` spans fill the output of the matching tool call (LangChain's ``ToolMessage`` /
  ``Command`` wrappers unwrapped to the content); an ``AGENT`` span inside one (an agent used as
  a tool) is a ``delegate`` handoff from the tool's caller;
- CrewAI: each ReAct ``Action: Delegate work to coworker`` step recorded in an agent's output
  becomes a turn holding that tool call, then a ``delegate`` handoff.

Spans whose parent is not in the file (AutoGen's agent spans) are treated as roots.
"""

from __future__ import annotations

import re
from collections import defaultdict
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
    parse_jsonish,
    slug,
    tool_call,
    transfer_target,
    unwrap_tool_output,
)
from maev_kit.traces.importers._otlp import Span, parse_otlp
from maev_kit.traces.importers._spantree import import_flat_span, import_span_groups

FORMAT = "openinference"
_IDX = re.compile(r"^(llm\.(?:input|output)_messages)\.(\d+)\.message\.(.+)$")


def _indexed_messages(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``llm.output_messages.0.message.content`` style attributes → list of message dicts."""
    msgs: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        m = _IDX.match(key)
        if m and m.group(1) == prefix:
            msgs[int(m.group(2))][m.group(3)] = value
    out = []
    for i in sorted(msgs):
        flat = msgs[i]
        texts = [flat["content"]] if isinstance(flat.get("content"), str) else []
        parts: dict[int, str] = {}
        calls: dict[int, dict[str, Any]] = defaultdict(dict)
        for k, v in flat.items():
            mc = re.match(r"^contents\.(\d+)\.message_content\.text$", k)
            if mc and isinstance(v, str):
                parts[int(mc.group(1))] = v
            mt = re.match(r"^tool_calls\.(\d+)\.tool_call\.(.+)$", k)
            if mt:
                calls[int(mt.group(1))][mt.group(2)] = v
        texts += [parts[j] for j in sorted(parts)]
        out.append({
            "role": flat.get("role"),
            "text": "\n".join(texts),
            "tool_call_id": flat.get("tool_call_id"),
            "tool_calls": [tool_call(str(c.get("function.name", "")), c.get("function.arguments"),
                                     id=c.get("id")) for _, c in sorted(calls.items())],
        })
    return out


def _value_messages(value: Any) -> list[dict[str, Any]]:
    """Messages out of an ``input.value`` / ``output.value`` JSON (several shapes)."""
    v = parse_jsonish(value)
    if isinstance(v, dict):
        if isinstance(v.get("messages"), list):
            v = v["messages"]
        elif isinstance(v.get("text"), str):
            return [{"role": "assistant", "text": v["text"], "tool_calls": []}]
        elif "generations" in v:
            gens = [g for row in as_list(v["generations"]) for g in as_list(row)]
            return [{"role": "assistant", "text": str(g.get("text", "")), "tool_calls": []}
                    for g in gens if isinstance(g, dict)]
        else:
            return []
    if not isinstance(v, list):
        return []
    out = []
    for m in v:
        if isinstance(m, list):  # LangChain: [[messages]]
            out.extend(_value_messages(m))
            continue
        if not isinstance(m, dict):
            continue
        if m.get("lc") == 1:  # LangChain constructor form
            kw = m.get("kwargs") or {}
            roles: dict[Any, str] = {"human": "user", "ai": "assistant"}  # any key: .get misses
            role = roles.get(kw.get("type"), kw.get("type"))
            m = {"role": role, "content": kw.get("content")}
        elif "type" in m and "data" in m:  # messages_to_dict form
            d = m["data"] if isinstance(m["data"], dict) else {}
            role = {"human": "user", "ai": "assistant"}.get(m["type"], m["type"])
            m = {"role": role, "content": d.get("content"), "tool_call_id": d.get("tool_call_id")}
        role = m.get("role")
        parts = m.get("parts")
        if isinstance(parts, list):  # GenAI parts
            text = "\n".join(str(p.get("content")) for p in parts
                             if isinstance(p, dict) and p.get("type") == "text")
            calls = [tool_call(p.get("name", ""), p.get("arguments"), id=p.get("id"))
                     for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]
        else:
            text = content_text(m.get("content"))
            calls = chat_tool_calls(m)
        out.append({"role": role, "text": text, "tool_calls": calls,
                    "tool_call_id": m.get("tool_call_id")})
    return out


def _meta(s: Span) -> dict[str, Any]:
    m = parse_jsonish(s.attrs.get("metadata"))
    return m if isinstance(m, dict) else {}


class OpenInferenceDialect:
    format = FORMAT
    reader = Reader(FORMAT)

    def span_kind(self, s: Span) -> str:
        return str(s.attrs.get("openinference.span.kind", "")).upper()

    def agent_name(self, s: Span) -> str | None:
        if self.span_kind(s) == "AGENT":
            for key in ("agent.name", "graph.node.id"):
                n = s.attrs.get(key)
                if isinstance(n, str) and n:
                    return n
        md = _meta(s)
        lc = md.get("lc_agent_name")
        if isinstance(lc, str) and lc and md.get("langgraph_node") == lc and s.name == lc:
            return lc
        return None

    def own_agent(self, s: Span) -> str | None:
        lc = _meta(s).get("lc_agent_name")
        return lc if isinstance(lc, str) and lc else None

    def is_handoff(self, s: Span) -> bool:
        if self.span_kind(s) != "TOOL":
            return False
        name = str(s.attrs.get("tool.name") or s.name)
        return s.name.startswith("handoff to ") or transfer_target(name) is not None

    def kind(self, s: Span) -> str | None:
        k = self.span_kind(s)
        if k == "AGENT":
            return "agent" if self.agent_name(s) else None
        if k == "LLM":
            return "llm"
        if k == "TOOL":
            return "handoff" if self.is_handoff(s) else "tool"
        if self.agent_name(s):
            return "agent"
        return None

    def _inputs(self, s: Span) -> list[dict[str, Any]]:
        return (_indexed_messages(s.attrs, "llm.input_messages")
                or _value_messages(s.attrs.get("input.value")))

    def llm_io(self, s: Span) -> tuple[list[str], str | None, list[dict[str, Any]]]:
        users = [m["text"] for m in self._inputs(s) if m["role"] == "user"]
        outs = _indexed_messages(s.attrs, "llm.output_messages")
        if not outs:
            if "output.value" not in s.attrs:
                return users, None, []
            outs = _value_messages(s.attrs["output.value"])
        text = "\n".join(m["text"] for m in outs if m["text"])
        calls = [c for m in outs for c in m["tool_calls"]]
        return users, text, calls

    def input_calls(self, s: Span) -> list[dict[str, Any]]:
        return [c for m in self._inputs(s) for c in m["tool_calls"]]

    def input_results(self, s: Span) -> dict[str, Any]:
        """Tool results in an LLM call's input history, by call id (``role: tool`` messages)."""
        out: dict[str, Any] = {}
        for m in self._inputs(s):
            cid = m.get("tool_call_id")
            if m["role"] == "tool" and isinstance(cid, str) and cid:
                out.setdefault(cid, parse_jsonish(m["text"]))
        return out

    def history(self, s: Span) -> list[tuple[str, str, list[dict[str, Any]]]]:
        return [(str(m["role"]), m["text"], m["tool_calls"]) for m in self._inputs(s)]

    def tool_info(self, s: Span) -> dict[str, Any]:
        """The tool call of a TOOL span; its output unwrapped from LangChain's ``ToolMessage`` /
        ``Command`` (``{"type": "tool", "data": {"content": ...}}``) to the content."""
        out = s.attrs.get("output.value")
        output, call_id = unwrap_tool_output(out) if out is not None else (None, None)
        cid = s.attrs.get("tool_call.id") or call_id
        return tool_call(str(s.attrs.get("tool.name") or s.name), s.attrs.get("input.value"),
                         id=cid if isinstance(cid, str) else None, output=output)

    def handoff_call(self, s: Span) -> dict[str, Any] | None:
        """The transfer tool call a handoff span records, or None for the Agents SDK's
        ``handoff to <agent>`` spans (they record the agents, not the model's tool call)."""
        if s.name.startswith("handoff to "):
            return None
        return self.tool_info(s)

    def handoff_info(self, s: Span) -> tuple[str | None, str | None, dict[str, Any], str]:
        if s.name.startswith("handoff to "):
            frm = s.attrs.get("input.value")
            to = s.attrs.get("output.value") or s.name[len("handoff to "):]
            return (frm if isinstance(frm, str) and frm else None), str(to), {}, "transfer"
        target = transfer_target(str(s.attrs.get("tool.name") or s.name))
        args = parse_jsonish(s.attrs.get("input.value"))
        return None, target, args if isinstance(args, dict) else {}, "transfer"

    def agent_output(self, s: Span) -> str | None:
        out = s.attrs.get("output.value")
        if out is None:
            return None
        v = parse_jsonish(out)
        if isinstance(v, str):
            return v
        if isinstance(v, dict):
            for key in ("raw", "output", "content", "text"):
                if isinstance(v.get(key), str):
                    return v[key]
        return None

    def root_users(self, s: Span) -> list[str]:
        users = [m["text"] for m in _value_messages(s.attrs.get("input.value"))
                 if m["role"] == "user"]
        v = parse_jsonish(s.attrs.get("input.value"))
        if not users and isinstance(v, dict) and isinstance(v.get("task"), str):
            users = [v["task"]]
        tasks = parse_jsonish(s.attrs.get("crew_tasks"))
        if not users and isinstance(tasks, list):
            users = [t["description"] for t in tasks
                     if isinstance(t, dict) and isinstance(t.get("description"), str)]
        return users

    def extra(self, s: Span, b: TraceBuilder, owner: str | None,
              issues: list[ImportIssue]) -> None:
        """CrewAI: each ``Delegate work to coworker`` step of the agent's recorded ReAct log
        → a turn of the agent (its thought) holding that tool call (output: the observation),
        then the ``delegate`` handoff it caused."""
        from maev_kit.traces.importers._crewai import _DELEGATE, _ctx, react_steps

        v = parse_jsonish(s.attrs.get("output.value"))
        if not (isinstance(v, dict) and isinstance(v.get("messages"), list) and owner):
            return
        found = False
        for m in v["messages"]:
            if not (isinstance(m, dict) and m.get("role") == "assistant"):
                continue
            for step in react_steps(content_text(m.get("content"))):
                if slug(step["tool"]) not in _DELEGATE:
                    continue
                coworker, ctx = _ctx(step["arguments"], step["tool"])
                if not coworker:
                    continue
                b.turn(owner, step["thought"] or "",
                       [tool_call(step["tool"], step["arguments"], output=step["observation"])])
                b.handoff(owner, coworker, ctx, mode="delegate")
                found = True
        if found:
            issues.append(ImportIssue(FORMAT, s.where, "delegations read from the agent's "
                                      "ReAct log; the delegated agents' own spans are not in "
                                      "the export, so they have no turns", b.conversation_id))


def import_openinference(data: Any, *, name: str = "trace", **options: Any) -> ImportResult:
    """OTLP JSON (or one span's flat attribute map) with OpenInference attributes."""
    check_options(options, FORMAT)
    r = Reader(FORMAT)
    if isinstance(data, dict) and "resourceSpans" not in data:
        if "openinference.span.kind" not in data:
            raise r.fail("", "expected an OTLP JSON export ({\"resourceSpans\": [...]}) or a "
                             "span's flat attribute map with openinference.span.kind")
        return import_flat_span(data, OpenInferenceDialect(), name)
    spans = parse_otlp(data, r)
    if not any("openinference.span.kind" in s.attrs for s in spans):
        raise r.fail("resourceSpans", "no span has an openinference.span.kind attribute; "
                                      "is this an OTel GenAI export (format 'otel')?")
    return import_span_groups(spans, OpenInferenceDialect())
