"""Agents as tools in OTLP span trees: an agent span *inside* a tool span is a delegation.

Triage calls the tool ``ask_billing``; the billing agent runs inside that tool call (OTel GenAI:
``invoke_agent`` under ``execute_tool``; OpenInference: ``AGENT`` under ``TOOL``) and its answer
is the tool's result. The import must give ``Handoff(triage, billing, mode="delegate")`` with
the tool's arguments as ``context_passed``, keep billing's turn, not turn the tool argument
(billing's ``role: user`` input) into a user message, and return to triage afterwards without
recording a transfer back. The real OpenAI Agents SDK case is in ``test_real_openai_agents.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from maev_kit.traces import Handoff, UserMessage
from maev_kit.traces.importers import import_traces

USER = "I was charged twice in March. Account ACCT-4471-9920."
ASK = {"input": "Duplicate March charge on ACCT-4471-9920."}
REFUND = "Refund RF-5521 issued."
FINAL = "Billing has refunded the charge."
TRACE = "ab" * 16


def attr(key: str, value: Any) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value if isinstance(value, str)
                                  else json.dumps(value)}}


def otlp(spans: list[tuple[str, str | None, str, dict[str, Any]]]) -> dict[str, Any]:
    """(span id digit, parent digit, name, attributes) in start order → an OTLP JSON export."""
    out = []
    for i, (sid, parent, name, attrs) in enumerate(spans):
        span = {"traceId": TRACE, "spanId": sid * 16, "name": name,
                "startTimeUnixNano": str(1_000 + i), "endTimeUnixNano": str(9_000 - i),
                "attributes": [attr(k, v) for k, v in attrs.items()]}
        if parent:
            span["parentSpanId"] = parent * 16
        out.append(span)
    return {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "test"}, "spans": out}]}]}


# ---- OTel GenAI -----------------------------------------------------------------------------

def g_agent(name: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def g_chat(user: str | None, text: str | None = None, call: tuple[str, dict] | None = None):
    inputs = [{"role": "user", "parts": [{"type": "text", "content": user}]}] if user else []
    parts = [{"type": "text", "content": text}] if text else []
    if call:
        parts.append({"type": "tool_call", "id": "call_1", "name": call[0],
                      "arguments": call[1]})
    return {"gen_ai.operation.name": "chat", "gen_ai.input.messages": inputs,
            "gen_ai.output.messages": [{"role": "assistant", "parts": parts}]}


def g_tool(name: str, args: dict[str, Any], result: str, **extra: str) -> dict[str, Any]:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": args,
            "gen_ai.tool.call.result": result, **extra}


def otel_story(inside: list[tuple[str, str | None, str, dict[str, Any]]] | None = None,
               **tool_extra: str) -> dict[str, Any]:
    inside = inside or [("4", "3", "invoke_agent Billing", g_agent("Billing")),
                        ("5", "4", "chat", g_chat(ASK["input"], REFUND))]
    return otlp([
        ("1", None, "invoke_agent Triage", g_agent("Triage")),
        ("2", "1", "chat", g_chat(USER, call=("ask_billing", ASK))),
        ("3", "1", "execute_tool ask_billing", g_tool("ask_billing", ASK, REFUND, **tool_extra)),
        *inside,
        ("6", "1", "chat", g_chat(USER, FINAL)),
    ])


# ---- OpenInference --------------------------------------------------------------------------

def i_agent(name: str) -> dict[str, Any]:
    return {"openinference.span.kind": "AGENT", "agent.name": name}


def i_llm(user: str, text: str | None = None, call: tuple[str, dict] | None = None):
    a = {"openinference.span.kind": "LLM",
         "llm.input_messages.0.message.role": "user",
         "llm.input_messages.0.message.content": user,
         "llm.output_messages.0.message.role": "assistant"}
    if text:
        a["llm.output_messages.0.message.content"] = text
    if call:
        a["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = call[0]
        a["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = \
            json.dumps(call[1])
    return a


def openinference_story() -> dict[str, Any]:
    return otlp([
        ("1", None, "Triage", i_agent("Triage")),
        ("2", "1", "response", i_llm(USER, call=("ask_billing", ASK))),
        ("3", "1", "ask_billing", {"openinference.span.kind": "TOOL", "tool.name": "ask_billing",
                                   "input.value": json.dumps(ASK), "output.value": REFUND}),
        ("7", "3", "Agent workflow", {"openinference.span.kind": "CHAIN"}),
        ("4", "7", "Billing", i_agent("Billing")),
        ("5", "4", "response", i_llm(ASK["input"], REFUND)),
        ("6", "1", "response", i_llm(USER, FINAL)),
    ])


def shape(event: Any) -> str:
    if isinstance(event, Handoff):
        return f"{event.from_agent}->{event.to_agent}"
    if isinstance(event, UserMessage):
        return "user"
    return event.agent_id


DELEGATION = ["user", "Triage", "Triage->Billing", "Billing", "Triage"]


@pytest.mark.parametrize("make, fmt", [(otel_story, "otel"),
                                       (openinference_story, "openinference")])
def test_agent_inside_a_tool_span_is_a_delegation(make, fmt):
    traces, issues = import_traces(make())
    t = traces[0]
    assert t.metadata["source_format"] == fmt
    assert [u.content for u in t.user_messages] == [USER]
    assert [(h.from_agent, h.to_agent, h.mode, h.reason, h.context_passed)
            for h in t.handoffs] == [("Triage", "Billing", "delegate", None, ASK)]
    assert [shape(e) for e in t.timeline()] == DELEGATION
    assert [m.content for m in t.messages(tools=False) if not m.is_user][1:] == [REFUND, FINAL]
    assert t.turns[0].tool_calls[0]["name"] == "ask_billing"
    assert t.turns[0].tool_calls[0]["output"] == REFUND
    said = [i.message for i in issues if "agents as tools" in i.message]
    assert len(said) == 1 and "Triage → Billing via tool 'ask_billing'" in said[0]
    assert not any("not mapped" in i.message for i in issues)  # the wrapper is part of it


def test_agents_side_by_side_are_not_delegations():
    # the same spans with billing's agent span beside the tool span, not inside it
    data = otel_story([("4", "1", "invoke_agent Billing", g_agent("Billing")),
                       ("5", "4", "chat", g_chat(ASK["input"], REFUND))])
    traces, issues = import_traces(data)
    assert traces[0].handoffs == []
    assert len(traces[0].user_messages) == 2  # billing's input is then a user message
    assert not any("agents as tools" in i.message for i in issues)


def test_handoff_inside_the_tool_call_is_a_transfer_of_the_nested_run():
    data = otel_story([
        ("4", "3", "invoke_agent Billing", g_agent("Billing")),
        ("5", "4", "chat", g_chat(ASK["input"], None, ("transfer_to_technical", {}))),
        ("7", "4", "agent_handoff", {"gen_ai.operation.name": "agent_handoff",
                                     "gen_ai.handoff.from_agent": "Billing",
                                     "gen_ai.handoff.to_agent": "Technical"}),
        ("8", "3", "invoke_agent Technical", g_agent("Technical")),
        ("9", "8", "chat", g_chat(ASK["input"], "Access restored.")),
    ])
    t = import_traces(data)[0][0]
    assert [(h.from_agent, h.to_agent, h.mode) for h in t.handoffs] == [
        ("Triage", "Billing", "delegate"), ("Billing", "Technical", "transfer")]
    assert [shape(e) for e in t.timeline()] == [
        "user", "Triage", "Triage->Billing", "Billing", "Billing->Technical", "Technical",
        "Triage"]
    assert [u.content for u in t.user_messages] == [USER]


def test_return_to_caller_tool_span_around_the_agent_is_the_one_handoff():
    # an execute_tool span that names its target is already the handoff: no second one
    data = otel_story(**{"gen_ai.transfer.target.name": "Billing",
                         "gen_ai.transfer.mode": "return_to_caller"})
    traces, issues = import_traces(data)
    t = traces[0]
    assert [(h.from_agent, h.to_agent, h.mode, h.context_passed) for h in t.handoffs] == [
        ("Triage", "Billing", "delegate", ASK)]
    assert [shape(e) for e in t.timeline()] == DELEGATION
    assert [u.content for u in t.user_messages] == [USER]
    assert not any("agents as tools" in i.message for i in issues)


def test_tool_call_with_plain_text_arguments_keeps_them_as_input():
    data = otel_story()
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for kv in spans[2]["attributes"]:
        if kv["key"] == "gen_ai.tool.call.arguments":
            kv["value"] = {"stringValue": "refund the duplicate charge"}
    t = import_traces(data)[0][0]
    assert t.handoffs[0].context_passed == {"input": "refund the duplicate charge"}


@pytest.mark.parametrize("who", ["caller", "called"])
def test_agent_spans_without_llm_spans(who):
    # OpenInference AGENT spans with only output.value (no LLM span below) still make turns:
    # the caller's (its output and the tool call) and the called agent's
    def out(text: str) -> dict[str, Any]:
        return {"output.value": text}

    caller = [("1", None, "Triage", {**i_agent("Triage"), **out(FINAL),
                                     "input.value": json.dumps({"messages": [
                                         {"role": "user", "content": USER}]})})]
    if who == "called":
        caller = [("1", None, "Triage", i_agent("Triage")),
                  ("2", "1", "response", i_llm(USER, call=("ask_billing", ASK)))]
    called = [("4", "3", "Billing", {**i_agent("Billing"), **out(REFUND)})]
    if who == "caller":
        called = [("4", "3", "Billing", i_agent("Billing")),
                  ("5", "4", "response", i_llm(ASK["input"], REFUND))]
    data = otlp([*caller,
                 ("3", "1", "ask_billing", {"openinference.span.kind": "TOOL",
                                            "tool.name": "ask_billing",
                                            "input.value": json.dumps(ASK),
                                            "output.value": REFUND}),
                 *called])
    t = import_traces(data)[0][0]
    assert [(h.from_agent, h.to_agent, h.mode, h.context_passed) for h in t.handoffs] == [
        ("Triage", "Billing", "delegate", ASK)]
    assert [shape(e) for e in t.timeline() if not isinstance(e, UserMessage)] == [
        "Triage", "Triage->Billing", "Billing"]
    assert t.turns[0].tool_calls[0]["name"] == "ask_billing"
    assert t.turns[0].tool_calls[0]["output"] == REFUND
    assert t.turns[1].message == REFUND
    assert [u.content for u in t.user_messages] == [USER]
