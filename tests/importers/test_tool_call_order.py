"""Tool calls and tool results: kind and order in the imported timeline.

The kit's convention: a tool result is the ``output`` of its call in the calling agent's turn —
never an ``AgentTurn`` whose message is the tool's output; a hand-off tool call stays a tool
call of the turn that made it, placed before the ``Handoff`` it caused; ``context_passed`` is
the hand-off tool's arguments.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from maev_kit.traces import AgentTurn, Handoff
from maev_kit.traces.importers import import_traces
from maev_kit.traces.importers._common import parse_jsonish

ACCT = "ACCT-4471-9920"


def calls_named(trace, name: str) -> list[tuple[AgentTurn, dict[str, Any]]]:
    """(turn, call) for every tool call named ``name``, in timeline order."""
    return [(t, c) for t in sorted(trace.turns, key=lambda t: t.turn_index)
            for c in t.tool_calls if c["name"] == name]


def no_turn_is_a_tool_output(trace) -> None:
    for t in trace.turns:
        assert not isinstance(parse_jsonish(t.message), (dict, list)), (
            f"turn {t.turn_index} of {t.agent_id} says a tool's JSON output: {t.message[:80]}")


# ---- 1. CrewAI: tool calls where the events put them -----------------------------------------

def test_crewai_delegation_calls_precede_their_handoffs(load_sample):
    traces, _ = import_traces(load_sample("crewai_real/crewai_events.json"), format="crewai")
    t = traces[0]
    h1, h2 = sorted(t.handoffs, key=lambda h: h.turn_index)
    delegations = calls_named(t, "Delegate work to coworker")
    assert [turn.agent_id for turn, _ in delegations] == ["Support Triage Lead"] * 2
    (d1_turn, d1), (d2_turn, d2) = delegations
    # each delegation call is in the triage turn just before its handoff, with the answer back
    assert d1_turn.turn_index == h1.turn_index - 1 and d2_turn.turn_index == h2.turn_index - 1
    assert d1_turn.message == "Thought: The duplicate charge is a billing matter."
    assert d1["arguments"]["coworker"] == "Billing Specialist"
    assert d1["output"].startswith("Duplicate charge on INV-88213 confirmed")
    assert d2["output"] == "Payment-failure hold removed; API access is active again."
    # billing's tool call happened between the two delegations; technical's after the second
    [(lookup_turn, lookup)] = calls_named(t, "lookup_invoices")
    [(lift_turn, lift)] = calls_named(t, "lift_api_suspension")
    assert lookup_turn.agent_id == "Billing Specialist"
    assert h1.turn_index < lookup_turn.turn_index < d2_turn.turn_index < h2.turn_index
    assert h2.turn_index < lift_turn.turn_index
    assert lookup["output"]["refund_issued"] == "RF-5521" and lift["output"]["status"] == "active"
    # the tool-calling turn is the step's thought; the answer after it is a turn of its own
    assert lookup_turn.message == "Thought: Check the March invoices."
    after = [x for x in t.turns if x.turn_index == lookup_turn.turn_index + 1]
    assert after and after[0].tool_calls == [] and "refund RF-5521" in after[0].message
    no_turn_is_a_tool_output(t)


def _crew(events: list[dict[str, Any]]) -> dict[str, Any]:
    for i, ev in enumerate(events, 1):
        ev.setdefault("emission_sequence", i)
        ev.setdefault("event_id", f"e{i}")
    return {"events": events}


def _lead_calls_a_tool_then_delegates() -> dict[str, Any]:
    lead, billing = "Lead", "Billing"
    return _crew([
        {"type": "crew_kickoff_started"},
        {"type": "task_started", "task_name": f"Customer says: refund {ACCT}"},
        {"type": "agent_execution_started", "agent_role": lead},
        {"type": "tool_usage_started", "agent_role": lead, "tool_name": "lookup_customer",
         "tool_args": json.dumps({"account_number": ACCT}), "event_id": "s1"},
        {"type": "tool_usage_finished", "agent_role": lead, "tool_name": "lookup_customer",
         "started_event_id": "s1", "output": json.dumps({"tier": "gold"})},
        {"type": "tool_usage_started", "agent_role": lead, "tool_name": "Delegate work to coworker",
         "tool_args": json.dumps({"task": "Refund", "context": ACCT, "coworker": billing}),
         "event_id": "s2"},
        {"type": "agent_execution_started", "agent_role": billing},
        {"type": "agent_execution_completed", "agent_role": billing, "output": "Refunded."},
        {"type": "tool_usage_finished", "agent_role": lead,
         "tool_name": "delegate_work_to_coworker", "started_event_id": "s2",
         "output": "Refunded."},
        {"type": "agent_execution_completed", "agent_role": lead, "output": "All done."},
    ])


def test_crewai_tool_call_made_before_a_delegation_stays_before_it():
    traces, _ = import_traces(_lead_calls_a_tool_then_delegates(), format="crewai")
    t = traces[0]
    [h] = t.handoffs
    [(turn, call)] = calls_named(t, "lookup_customer")
    assert turn.agent_id == "Lead" and turn.turn_index < h.turn_index
    assert call["output"] == {"tier": "gold"} and call["arguments"] == {"account_number": ACCT}
    [(dturn, dcall)] = calls_named(t, "Delegate work to coworker")
    assert turn.turn_index < dturn.turn_index == h.turn_index - 1
    assert dcall["output"] == "Refunded."
    assert (h.from_agent, h.to_agent, h.mode, h.context_passed) == (
        "Lead", "Billing", "delegate", {"task": "Refund", "context": ACCT})
    final = max(t.turns, key=lambda x: x.turn_index)
    assert (final.agent_id, final.message, final.tool_calls) == ("Lead", "All done.", [])


def test_crewai_events_follow_emission_sequence_not_file_order():
    data = _lead_calls_a_tool_then_delegates()
    shuffled = copy.deepcopy(data)
    random.Random(7).shuffle(shuffled["events"])
    assert shuffled["events"] != data["events"]
    want, _ = import_traces(data, format="crewai")
    got, issues = import_traces(shuffled, format="crewai")

    def shape(tr):
        return [(type(e).__name__, getattr(e, "agent_id", None),
                 [c["name"] for c in getattr(e, "tool_calls", [])]) for e in tr.timeline()]

    assert shape(got[0]) == shape(want[0])
    assert any("emission_sequence" in i.message for i in issues)


def test_crewai_tool_error_is_the_calls_output():
    data = _crew([
        {"type": "task_started", "task_name": "Do it"},
        {"type": "agent_execution_started", "agent_role": "A"},
        {"type": "tool_usage_started", "agent_role": "A", "tool_name": "lookup",
         "tool_args": "{}", "event_id": "s1"},
        {"type": "tool_usage_error", "agent_role": "A", "tool_name": "lookup",
         "started_event_id": "s1", "error": "timeout"},
        {"type": "agent_execution_completed", "agent_role": "A", "output": "Sorry."},
    ])
    traces, issues = import_traces(data, format="crewai")
    [(turn, call)] = calls_named(traces[0], "lookup")
    assert call["output"] == "timeout" and call["is_error"] is True
    assert not any("tool_usage_error" in i.message for i in issues)  # mapped, not unmapped


# ---- 2. OTLP exports of the Agents SDK: hand-off tool calls kept -----------------------------

def test_otel_openai_agents_keeps_the_handoff_call_the_instrumentation_dropped(load_sample):
    traces, issues = import_traces(
        load_sample("openai_agents_real/otlp_otel_openai_agents.json"), format="otel")
    t = traces[0]
    h1, h2 = sorted(t.handoffs, key=lambda h: h.turn_index)
    [(turn, call)] = calls_named(t, "transfer_to_technical_support")
    assert turn.agent_id == "Billing Specialist" and turn.turn_index < h2.turn_index
    assert "I found the duplicate charge" in turn.message  # the response that made the call
    assert call["id"] == "call_0005" and call["arguments"]["account_number"] == ACCT
    assert call["output"] == {"assistant": "Technical Support"}
    assert h2.context_passed == call["arguments"]
    assert any("restored" in i.message and "transfer_to_technical_support" in i.message
               for i in issues)


def test_handoff_calls_of_otlp_exports_have_their_outputs(load_sample):
    for rel, fmt in [("openinference_spans.json", "openinference"),
                     ("openai_agents_real/otlp_openinference_openai_agents.json",
                      "openinference"),
                     ("otel_genai_spans.json", "otel")]:
        t = import_traces(load_sample(rel), format=fmt)[0][0]
        for name, target in [("transfer_to_billing_specialist", "Billing Specialist"),
                             ("transfer_to_technical_support", "Technical Support")]:
            [(turn, call)] = calls_named(t, name)
            [h] = [h for h in t.handoffs if h.to_agent == target]
            assert turn.turn_index < h.turn_index, rel
            assert call["output"] == {"assistant": target}, rel


def test_run_state_restores_the_transfer_call_an_input_filter_hid(load_sample):
    t = import_traces(load_sample("openai_agents_real/openai_agents_chat_run_state.json"),
                      format="openai-agents")[0][0]
    h2 = max(t.handoffs, key=lambda h: h.turn_index)
    [(turn, call)] = calls_named(t, "transfer_to_technical_support")
    assert turn.agent_id == "Billing Specialist" and turn.turn_index == h2.turn_index - 1
    assert call["id"] == "call_0005" and h2.context_passed == call["arguments"]


# ---- 3. tool results are outputs, never turns ------------------------------------------------

AUTOGEN = ["autogen_swarm_messages.json", "autogen_real/autogen_swarm_messages.json",
           "autogen_real/autogen_swarm_team_state.json",
           "autogen_real/otlp_autogen_native_genai.json",
           "autogen_real/otlp_openinference_autogen_swarm.json"]


def test_autogen_tool_results_are_outputs_not_turns(load_sample):
    for rel in AUTOGEN:
        t = import_traces(load_sample(rel))[0][0]
        no_turn_is_a_tool_output(t)
        [(turn, call)] = calls_named(t, "lift_api_suspension")
        assert call["id"] == "call_x1" and call["output"]["status"] == "active", rel
        tech = [x for x in t.turns if x.agent_id == "technical_support"]
        # the call, then the final answer: the ToolCallSummaryMessage is no turn of its own
        assert [(x.message[:20], [c["name"] for c in x.tool_calls]) for x in tech] == [
            ("", ["lift_api_suspension"]), ("Your API access is r", [])], rel
        [(bturn, lookup)] = calls_named(t, "lookup_invoices")
        assert lookup["output"]["refund_issued"] == "RF-5521", rel


def test_autogen_summary_of_unrequested_calls_is_a_turn_holding_them():
    msgs = [
        {"source": "user", "type": "TextMessage", "content": "Lift the hold"},
        {"source": "tech", "type": "ToolCallSummaryMessage", "content": '{"status": "active"}',
         "tool_calls": [{"id": "c9", "name": "lift", "arguments": '{"a": 1}'}],
         "results": [{"call_id": "c9", "name": "lift", "content": '{"status": "active"}',
                      "is_error": False}]},
        {"source": "tech", "type": "TextMessage", "content": "Done."},
    ]
    t = import_traces(msgs, format="autogen")[0][0]
    assert [(x.agent_id, x.message, x.tool_calls) for x in t.turns] == [
        ("tech", "", [{"name": "lift", "arguments": {"a": 1}, "id": "c9",
                      "output": {"status": "active"}}]),
        ("tech", "Done.", [])]


def test_openinference_langgraph_tool_outputs_are_unwrapped(load_sample):
    t = import_traces(load_sample("langgraph_real/otlp_openinference_langgraph_swarm.json"),
                      format="openinference")[0][0]
    [(_, lookup)] = calls_named(t, "lookup_invoices")
    [(_, lift)] = calls_named(t, "lift_api_suspension")
    assert lookup["output"]["duplicate_charge"] == "INV-88213 x2 ($49.00)"
    assert lift["output"] == {"account_number": ACCT, "status": "active",
                              "hold_removed": "payment_failure_hold"}
    [(_, t1)] = calls_named(t, "transfer_to_billing_specialist")
    [(_, t2)] = calls_named(t, "transfer_to_technical_support")
    assert t1["output"] == "Successfully transferred to billing_specialist"
    assert t2["output"] == "Successfully transferred to technical_support"
    no_turn_is_a_tool_output(t)


# ---- 4. Responses-API exports of the Agents SDK ----------------------------------------------

def _response_spans(response_data: dict[str, Any]) -> dict[str, Any]:
    span = {"object": "trace.span", "trace_id": "trace_1", "parent_id": "span_a",
            "started_at": "2026-01-01T00:00:01+00:00", "ended_at": "2026-01-01T00:00:02+00:00"}
    return {"trace": {"object": "trace", "id": "trace_1", "workflow_name": "w"},
            "spans": [
                {**span, "id": "span_a", "parent_id": None,
                 "started_at": "2026-01-01T00:00:00+00:00",
                 "span_data": {"type": "agent", "name": "Triage"}},
                {**span, "id": "span_r", "span_data": {"type": "response",
                                                       "response_id": "resp_1",
                                                       **response_data}},
                {**span, "id": "span_f", "started_at": "2026-01-01T00:00:03+00:00",
                 "span_data": {"type": "function", "name": "lookup",
                               "input": '{"account_number": "A-1"}',
                               "output": '{"found": true}'}}]}


def test_response_span_carrying_items_imports_text_and_calls():
    data = _response_spans({
        "input": [{"type": "message", "role": "user",
                   "content": [{"type": "input_text", "text": "Look up A-1"}]}],
        "response": {"id": "resp_1", "output": [
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "call_1", "name": "lookup",
             "arguments": '{"account_number": "A-1"}'}]}})
    traces, issues = import_traces(data, format="openai-agents")
    t = traces[0]
    assert [u.content for u in t.user_messages] == ["Look up A-1"]
    assert [(x.agent_id, x.message, x.tool_calls) for x in t.turns] == [
        ("Triage", "Checking.", [{"name": "lookup", "arguments": {"account_number": "A-1"},
                                  "id": "call_1", "output": {"found": True}}])]
    assert "text_unavailable" not in t.metadata
    assert not any("content absent" in i.message for i in issues)


def test_response_span_with_only_an_id_says_why_content_is_absent(load_sample):
    for rel in ["openai_agents_real/openai_agents_responses_nofilter_spans.json",
                "openai_agents_real/openai_agents_responses_nofilter_ingest_payload.json"]:
        traces, issues = import_traces(load_sample(rel), format="openai-agents")
        t = traces[0]
        assert t.metadata["text_unavailable"] is True
        [msg] = [i.message for i in issues if "content absent" in i.message]
        assert "ResponseSpanData.export()" in msg and "response id" in msg, rel
        assert "RunResult.new_items" in msg  # where the text is
        # structure kept: both handoffs, the function tools with their outputs
        assert len(t.handoffs) == 2
        assert calls_named(t, "lookup_invoices")[0][1]["output"]["refund_issued"] == "RF-5521"
    # ... and the advice holds: the same run's items and state carry messages and tool calls
    for rel in ["openai_agents_real/openai_agents_responses_nofilter_run_items.json",
                "openai_agents_real/openai_agents_responses_nofilter_run_state.json"]:
        t = import_traces(load_sample(rel), format="openai-agents")[0][0]
        assert ACCT in t.user_messages[0].content
        assert any("I found the duplicate charge" in x.message for x in t.turns)
        [(turn, call)] = calls_named(t, "lookup_invoices")
        assert call["id"] == "call_0003" and call["output"]["refund_issued"] == "RF-5521"
        assert "text_unavailable" not in t.metadata


# ---- 5. context_passed = the hand-off tool's arguments ---------------------------------------

def test_autogen_context_passed_is_the_transfer_arguments_not_the_model_context():
    model_context = [{"type": "AssistantMessage", "source": "billing",
                      "content": [{"id": "c1", "name": "lookup", "arguments": "{}"}]}]
    args = {"reason": "API suspended", "account_number": ACCT}
    msgs = [
        {"source": "user", "type": "TextMessage", "content": f"Help {ACCT}"},
        {"source": "billing", "type": "ToolCallRequestEvent", "content": [
            {"id": "c2", "name": "transfer_to_technical", "arguments": json.dumps(args)}]},
        {"source": "billing", "type": "ToolCallExecutionEvent", "content": [
            {"call_id": "c2", "name": "transfer_to_technical", "content": "Transferred",
             "is_error": False}]},
        {"source": "billing", "type": "HandoffMessage", "target": "technical",
         "content": "Transferred", "context": model_context},
        {"source": "technical", "type": "TextMessage", "content": "Fixed."},
    ]
    t = import_traces(msgs, format="autogen")[0][0]
    [h] = t.handoffs
    assert h.context_passed == args
    [(turn, call)] = calls_named(t, "transfer_to_technical")
    assert turn.turn_index < h.turn_index and call["output"] == "Transferred"
    assert t.metadata["handoff_model_context"] == [{"handoff_index": 0,
                                                    "messages": model_context}]


def test_autogen_sample_handoffs_pass_the_default_tools_empty_arguments(load_sample):
    t = import_traces(load_sample("autogen_real/autogen_swarm_messages.json"))[0][0]
    assert [h.context_passed for h in t.handoffs] == [{}, {}]
    [ctx] = t.metadata["handoff_model_context"]
    assert ctx["handoff_index"] == 1 and ACCT in json.dumps(ctx["messages"])
    assert all(isinstance(h, Handoff) and h.mode == "transfer" for h in t.handoffs)


# ---- untrusted input: odd shapes are reported, not fatal -------------------------------------

def test_odd_tool_events_are_reported_not_fatal():
    crew = _crew([
        {"type": "task_started", "task_name": "Do it"},
        {"type": "agent_execution_started", "agent_role": "A"},
        {"type": "tool_usage_started", "agent_role": "A", "tool_name": ""},
        {"type": "tool_usage_finished", "tool_name": "lookup", "output": "x"},
        {"type": "tool_usage_started", "agent_role": "A",
         "tool_name": "Delegate work to coworker", "tool_args": "not json"},
        {"type": "agent_execution_completed", "agent_role": "A", "output": "Done."},
    ])
    traces, issues = import_traces(crew, format="crewai")
    text = " | ".join(i.message for i in issues)
    assert "names no agent or tool" in text and "no handoff made" in text
    [(turn, call)] = calls_named(traces[0], "Delegate work to coworker")
    assert call["arguments"] == "not json" and traces[0].handoffs == []

    auto = [{"source": "a", "type": "ToolCallSummaryMessage", "content": "x",
             "tool_calls": "junk", "results": None},
            {"source": "a", "type": "ToolCallExecutionEvent",
             "content": [{"call_id": "nope", "content": "y"}]}]
    t, issues = import_traces(auto, format="autogen")
    assert t[0].turns == [] and t[0].metadata["tool_call_summaries"] == [
        {"source": "a", "content": "x"}]
    assert any("unknown call 'nope'" in i.message for i in issues)
