"""Format details: detection, OTLP ids and files, handoff modes and reasons, options."""

from __future__ import annotations

import base64
import copy
import json

import pytest

from maev_kit.traces import HandoffReason
from maev_kit.traces.importers import FORMATS, detect_format, import_traces


# ---- detection ------------------------------------------------------------------------------

@pytest.mark.parametrize("data, fmt", [
    ({"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": [
        {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}]}]}]}]},
     "openinference"),
    ({"resourceSpans": []}, "otel"),
    ({"gen_ai.operation.name": "chat"}, "otel"),
    ({"openinference.span.kind": "LLM"}, "openinference"),
    ({"trace": {}, "spans": []}, "openai-agents"),
    ({"data": [{"object": "trace"}]}, "openai-agents"),
    ([{"data": [{"object": "trace"}]}], "openai-agents"),
    ([{"object": "trace.span"}], "openai-agents"),
    ({"new_items": []}, "openai-agents"),
    ([{"type": "message_output_item", "raw_item": {}}], "openai-agents"),
    ({"$schemaVersion": "1.21"}, "openai-agents"),
    ({"messages": [{"type": "human", "data": {"content": "hi"}}]}, "langgraph"),
    ([{"type": "ai", "content": "hi", "name": "a"}], "langgraph"),
    ([[["a:1"], {"model": {"messages": []}}]], "langgraph"),
    ([{"agent": {"messages": []}}], "langgraph"),
    ({"run_type": "chain", "outputs": {}}, "langgraph"),
    ({"messages": [{"source": "user", "type": "TextMessage", "content": "hi"}]}, "autogen"),
    ({"type": "TeamState", "agent_states": {}}, "autogen"),
    ({"events": [{"type": "crew_kickoff_started"}]}, "crewai"),
    ([{"type": "task_started", "event_id": "e"}], "crewai"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "name": "a", "content": "x"}],
     "chat"),
    ({"chat_history": [{"role": "user", "content": "hi"}]}, "chat"),
    ([{"messages": [{"role": "user", "content": "hi"}]}], "chat"),
])
def test_detect_format(data, fmt):
    assert fmt in FORMATS
    assert detect_format(data) == fmt


@pytest.mark.parametrize("data", [{}, [], {"events": [{"type": "x"}]}, [1, 2], "text", None])
def test_detect_format_gives_up(data):
    assert detect_format(data) is None


# ---- OTLP -----------------------------------------------------------------------------------

def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def test_otlp_base64_ids_read_like_hex(load_sample):
    data = load_sample("otel_genai_spans.json")
    b64 = copy.deepcopy(data)
    for span in b64["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = _b64(span["traceId"])
        span["spanId"] = _b64(span["spanId"])
        if span.get("parentSpanId"):
            span["parentSpanId"] = _b64(span["parentSpanId"])
    hex_traces, _ = import_traces(data)
    b64_traces, _ = import_traces(b64)
    assert [(h.from_agent, h.to_agent, h.context_passed) for h in b64_traces[0].handoffs] == \
        [(h.from_agent, h.to_agent, h.context_passed) for h in hex_traces[0].handoffs]
    assert [t.message for t in b64_traces[0].turns] == [t.message for t in hex_traces[0].turns]


def test_otlp_json_lines_file(load_sample, tmp_path):
    data = load_sample("otel_genai_spans.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    lines = []
    for half in (spans[:6], spans[6:]):  # a collector file exporter writes one request per line
        req = copy.deepcopy(data)
        req["resourceSpans"][0]["scopeSpans"][0]["spans"] = half
        lines.append(json.dumps(req))
    p = tmp_path / "spans.jsonl"
    p.write_text("\n".join(lines) + "\n")
    traces, _ = import_traces(p)
    assert [(h.from_agent, h.to_agent) for h in traces[0].handoffs] == [
        ("Triage Agent", "Billing Specialist"), ("Billing Specialist", "Technical Support")]


def test_otel_return_to_caller_is_a_delegation(load_sample):
    data = load_sample("otel_genai_spans.json")
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for kv in span.get("attributes", []):
            if kv["key"] == "gen_ai.transfer.mode":
                kv["value"] = {"stringValue": "return_to_caller"}
    traces, _ = import_traces(data)
    assert [h.mode for h in traces[0].handoffs] == ["delegate", "delegate"]


def test_otlp_two_conversations_in_one_file(load_sample):
    data = load_sample("otel_genai_spans.json")
    second = copy.deepcopy(data["resourceSpans"][0])
    for span in second["scopeSpans"][0]["spans"]:
        span["traceId"] = "f" * 32
        for kv in span.get("attributes", []):
            if kv["key"] == "gen_ai.conversation.id":
                kv["value"] = {"stringValue": "conv_other"}
    data["resourceSpans"].append(second)
    traces, _ = import_traces(data)
    assert sorted(t.conversation_id for t in traces) == ["conv_7f3a21", "conv_other"]
    assert all(len(t.handoffs) == 2 for t in traces)


def test_otlp_dangling_parents_become_roots(load_sample):
    # AutoGen's OpenInference agent spans point at parents in another provider
    data = load_sample("autogen_real/otlp_openinference_autogen_swarm.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    ids = {s["spanId"] for s in spans}
    assert any(s.get("parentSpanId") and s["parentSpanId"] not in ids for s in spans)
    traces, _ = import_traces(data)
    assert traces[0].agents_involved() == ["triage_agent", "billing_specialist",
                                           "technical_support"]


def test_flat_attribute_map_is_one_span(load_sample):
    rel = "third_party/openinference_genai_fixtures/openinference_client_span_tool_calls.json"
    traces, issues = import_traces(load_sample(rel))
    t = traces[0]
    assert [m.content for m in t.user_messages] == ["Weather in Paris?"]
    assert t.turns[0].tool_calls[0]["name"] == "get_weather"
    assert t.turns[0].tool_calls[0]["output"] == "rainy, 57°F"
    assert t.turns[-1].message.startswith("The weather in Paris is currently rainy")
    assert t.metadata["flat_attributes"] is True
    assert any("flat attribute map" in i.message for i in issues)


# ---- OpenAI Agents SDK ----------------------------------------------------------------------

def test_responses_api_text_is_marked_unavailable(load_sample):
    data = load_sample("openai_agents_real/openai_agents_responses_nofilter_spans.json")
    traces, issues = import_traces(data)
    t = traces[0]
    assert t.metadata["text_unavailable"] is True
    assert all(turn.message == "" for turn in t.turns)
    assert any("Responses-API" in i.message for i in issues)
    # the tool calls (function spans) are still there
    assert [c["name"] for turn in t.turns for c in turn.tool_calls] == [
        "lookup_invoices", "lift_api_suspension"]


def test_input_filter_handoff_is_inferred_and_reported(load_sample):
    data = load_sample("openai_agents_real/openai_agents_chat_run_items.json")
    traces, issues = import_traces(data)
    t = traces[0]
    assert t.metadata["inferred_handoffs"] == [1]
    assert t.handoffs[1].context_passed == {}
    assert any("inferred from a change of agent" in i.message for i in issues)


def test_trace_metadata_keeps_source_ids(load_sample):
    traces, _ = import_traces(load_sample("openai_agents_trace.json"))
    md = traces[0].metadata
    assert md["trace_id"].startswith("trace_") and md["group_id"] == "conv_7f3a21"
    assert md["workflow_name"] == "Customer support"
    assert traces[0].conversation_id == "conv_7f3a21"


def test_handoff_reason_enum_value_is_mapped_free_text_is_not():
    msgs = [{"type": "human", "content": "help"},
            {"type": "ai", "name": "a", "content": "", "tool_calls": [
                {"name": "transfer_to_b", "args": {"reason": "escalation"}, "id": "1"}]},
            {"type": "ai", "name": "b", "content": "", "tool_calls": [
                {"name": "transfer_to_c", "args": {"reason": "it is complicated"}, "id": "2"}]},
            {"type": "ai", "name": "c", "content": "done"}]
    traces, _ = import_traces(msgs, format="langgraph")
    h = traces[0].handoffs
    assert h[0].reason is HandoffReason.ESCALATION
    assert h[1].reason is None and h[1].context_passed == {"reason": "it is complicated"}


# ---- LangGraph supervisor -------------------------------------------------------------------

def test_langgraph_supervisor_delegates():
    msgs = [
        {"type": "human", "content": "refund please"},
        {"type": "ai", "name": "supervisor", "content": "",
         "tool_calls": [{"name": "transfer_to_billing", "args": {}, "id": "t1"}]},
        {"type": "tool", "name": "transfer_to_billing", "content": "ok", "tool_call_id": "t1"},
        {"type": "ai", "name": "billing", "content": "Refunded."},
        {"type": "ai", "name": "billing", "content": "Transferring back to supervisor",
         "tool_calls": [{"name": "transfer_back_to_supervisor", "args": {}, "id": "t2"}]},
        {"type": "tool", "name": "transfer_back_to_supervisor", "content": "ok",
         "tool_call_id": "t2"},
        {"type": "ai", "name": "supervisor", "content": "All done."},
    ]
    traces, issues = import_traces({"messages": msgs}, format="langgraph")
    t = traces[0]
    assert [(h.from_agent, h.to_agent, h.mode) for h in t.handoffs] == [
        ("supervisor", "billing", "delegate")]
    assert any("return of a delegation" in i.message for i in issues)
    assert t.agents_involved() == ["supervisor", "billing"]


# ---- chat ----------------------------------------------------------------------------------

CHAT = [{"role": "user", "content": "My invoice is wrong and my API fails"},
        {"role": "assistant", "name": "triage", "content": "Passing you to billing."},
        {"role": "assistant", "name": "billing", "content": "Refunded. Technical next."},
        {"role": "assistant", "name": "technical", "content": "API restored."}]


def test_chat_without_speaker_handoffs_reports_it():
    traces, issues = import_traces(CHAT, format="chat", speaker_change_handoffs=False)
    assert traces[0].handoffs == []
    assert any("speaker_change_handoffs=True" in i.message for i in issues)


def test_chat_speaker_changes_become_handoffs():
    traces, _ = import_traces(CHAT, format="chat")  # the default
    assert traces == import_traces(CHAT, format="chat", speaker_change_handoffs=True).traces
    t = traces[0]
    assert [(h.from_agent, h.to_agent, h.mode, h.turn_index) for h in t.handoffs] == [
        ("triage", "billing", "transfer", 2), ("billing", "technical", "transfer", 4)]
    assert [e.turn_index for e in t.timeline()] == list(range(6))


def test_chat_ag2_history_and_transfer_tools():
    ag2 = {"chat_history": [
        {"role": "user", "name": "customer", "content": "hi"},
        {"role": "user", "name": "triage", "content": "", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "transfer_to_billing", "arguments": '{"account": "A-1"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "transferred"},
        {"role": "user", "name": "billing", "content": "Done."}]}
    traces, _ = import_traces(ag2, format="chat", user_name="customer")
    t = traces[0]
    assert [m.content for m in t.user_messages] == ["hi"]
    assert [(h.from_agent, h.to_agent, h.context_passed) for h in t.handoffs] == [
        ("triage", "billing", {"account": "A-1"})]
    assert t.turns[0].tool_calls[0]["output"] == "transferred"


def test_chat_option_type_is_checked():
    from maev_kit.errors import InputError

    with pytest.raises(InputError, match="speaker_change_handoffs"):
        import_traces(CHAT, format="chat", speaker_change_handoffs="yes")


def test_json_lines_of_events(load_sample, tmp_path):
    events = load_sample("crewai_events.json")["events"]
    p = tmp_path / "events.jsonl"
    p.write_text("".join(json.dumps(e) + "\n" for e in events))
    traces, _ = import_traces(p)
    assert traces[0].metadata["source_format"] == "crewai"
    assert [h.mode for h in traces[0].handoffs] == ["delegate", "delegate"]


def test_importers_stay_light():
    import subprocess
    import sys

    code = ("import sys, maev_kit.traces.importers as m; "
            "print(sorted(x for x in ('litellm', 'ipywidgets', 'matplotlib', 'sklearn', "
            "'pandas') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("rel, fmt", [
    ("autogen_real/otlp_autogen_native_genai.json", "otel"),
    ("autogen_real/otlp_openinference_autogen_swarm.json", "openinference"),
])
def test_autogen_spans_without_message_payloads_give_structure(load_sample, rel, fmt):
    data = load_sample(rel)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                span["attributes"] = [kv for kv in span.get("attributes", [])
                                      if kv["key"] not in ("message", "output.value")]
    traces, issues = import_traces(data, format=fmt)
    t = traces[0]
    assert "text_source" not in t.metadata
    assert t.metadata["text_unavailable"] is True
    assert t.agents_involved() == ["triage_agent", "billing_specialist", "technical_support"]
    assert [(h.from_agent, h.to_agent) for h in t.handoffs] == [
        ("triage_agent", "billing_specialist"), ("billing_specialist", "technical_support")]
    assert any("no text" in i.message for i in issues)


def test_autogen_spans_with_message_payloads_give_text(load_sample):
    traces, issues = import_traces(load_sample("autogen_real/otlp_autogen_native_genai.json"))
    t = traces[0]
    assert t.metadata["text_source"] == "AutoGen chat messages in span attributes"
    assert t.turns[-1].message.startswith("Your API access is restored")
    assert any("12 AutoGen chat messages" in i.message for i in issues)


def test_public_names_are_pinned():
    import maev_kit.traces.importers as importers

    assert sorted(importers.__all__) == ["Detected", "FORMATS", "ImportIssue", "ImportResult",
                                         "TraceImportError", "detect_file", "detect_format",
                                         "import_traces", "load_any"]
    assert importers.FORMATS == ("openai-agents", "otel", "openinference", "langgraph",
                                 "autogen", "crewai", "chat")


def test_cli_chat_options(tmp_path):
    from click.testing import CliRunner

    from maev_kit.cli._import import import_command
    from maev_kit.traces import load_traces

    src = tmp_path / "chat.json"
    src.write_text(json.dumps(CHAT))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(import_command, ["chat", str(src), "-o", str(out),
                                                 "--speaker-change-handoffs"])
    assert result.exit_code == 0, result.output
    assert "2 handoffs" in result.output.splitlines()[0]
    assert [(h.from_agent, h.to_agent) for h in load_traces(out)[0].handoffs] == [
        ("triage", "billing"), ("billing", "technical")]
    # with --no-speaker-change-handoffs the log names no handoff, and the CLI says how to get
    # them
    result = CliRunner().invoke(import_command, ["chat", str(src), "-o", str(out),
                                                 "--no-speaker-change-handoffs"])
    assert "0 handoffs" in result.output and "speaker_change_handoffs=True" in result.output
