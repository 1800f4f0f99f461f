"""A real OpenAI Agents SDK run, offline, imported from its fresh exports.

The SDK (``pip install openai-agents``) runs triage → billing → technical support with a
scripted model: no network, no API key. The model is a :class:`agents.models.interface.Model`
that records its generation span the way the SDK's Chat Completions model does (the SDK's own
converter builds the span's chat messages), so the spans have the shape a user's export has.
A collecting :class:`~agents.tracing.TracingProcessor` replaces the default exporter.

Each export the importer reads — span export ``{"trace", "spans"}``, ingest payload
``{"data": [...]}``, ``RunResult.new_items`` and ``RunResult.to_state().to_json()`` — must
import to the same story and survive ``save_traces`` → ``load_traces``. The run is repeated
with ``input_filter=remove_all_tools`` on the billing → technical handoff: that handoff then
exists only in the spans; the run-items and run-state imports infer it from the change of agent
and say so (only the run state keeps its arguments, in ``model_responses``). Last, billing is
called as a tool (``Agent.as_tool``): its run nests under the tool's span and must import as a
``delegate`` handoff, the tool's argument not becoming a user message.

Skipped when the SDK is not installed.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    ModelResponse,
    RunConfig,
    Runner,
    Usage,
    function_tool,
    handoff,
)
from agents.extensions.handoff_filters import remove_all_tools  # noqa: E402
from agents.models.chatcmpl_converter import Converter  # noqa: E402
from agents.models.interface import Model  # noqa: E402
from agents.tracing import (  # noqa: E402
    TracingProcessor,
    generation_span,
    set_trace_processors,
    set_tracing_disabled,
)
from openai.types.chat import ChatCompletionMessage  # noqa: E402
from openai.types.chat.chat_completion_message_function_tool_call import (  # noqa: E402
    ChatCompletionMessageFunctionToolCall,
    Function,
)
from pydantic import BaseModel  # noqa: E402

from maev_kit.traces import (  # noqa: E402
    Handoff,
    UserMessage,
    load_traces,
    save_traces,
    trace_to_dict,
)
from maev_kit.traces.importers import detect_format, import_traces  # noqa: E402

ACCT = "ACCT-4471-9920"
USER = f"I was charged twice in March and now my API access is locked. Account {ACCT}."
FINAL = (f"Your API access is restored: the payment-failure hold on {ACCT} is lifted and "
         "your keys work again.")
STORY = [("triage", "billing", "transfer"), ("billing", "technical", "transfer")]


def role(agent: str) -> str:
    low = agent.lower()
    return next((r for r in ("triage", "billing", "technical") if r in low), agent)


def shape(event: Any) -> str:
    if isinstance(event, Handoff):
        return f"{role(event.from_agent)}->{role(event.to_agent)}"
    if isinstance(event, UserMessage):
        return "user"
    return role(event.agent_id)


TIMELINE = ["user", "triage", "triage->billing", "billing", "billing", "billing->technical",
            "technical"]


# ---- no network ------------------------------------------------------------------------

def _is_loopback(address: Any) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX paths (the event loop's self-pipe)
        return True
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def network_attempts(monkeypatch) -> list[str]:
    """Refuse (and record) every non-loopback connection or DNS lookup."""
    attempts: list[str] = []
    connect, connect_ex, getaddrinfo = (socket.socket.connect, socket.socket.connect_ex,
                                        socket.getaddrinfo)

    def guard(address: Any) -> None:
        if not _is_loopback(address):
            attempts.append(repr(address))
            raise OSError(f"test is offline: connection to {address!r} refused")

    def guarded_connect(self, address):
        guard(address)
        return connect(self, address)

    def guarded_connect_ex(self, address):
        guard(address)
        return connect_ex(self, address)

    def guarded_getaddrinfo(host, *args, **kwargs):
        if host is not None:
            h = host.decode() if isinstance(host, bytes) else str(host)
            guard((h, 0))
        return getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_AGENTS_DISABLE_TRACING", raising=False)
    return attempts


# ---- tracing: collect exports instead of posting them ----------------------------------

class Collector(TracingProcessor):
    """Keeps ``Trace.export()`` / ``Span.export()`` of everything that ends."""

    def __init__(self) -> None:
        self.traces: list[dict[str, Any]] = []
        self.spans: list[dict[str, Any]] = []

    def on_trace_start(self, trace) -> None:
        pass

    def on_trace_end(self, trace) -> None:
        exported = trace.export()
        if exported is not None:
            self.traces.append(exported)

    def on_span_start(self, span) -> None:
        pass

    def on_span_end(self, span) -> None:
        exported = span.export()
        if exported is not None:
            self.spans.append(exported)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


@pytest.fixture
def collector(network_attempts):
    c = Collector()
    # replaces the default processor (the batch exporter that posts to the OpenAI backend)
    set_trace_processors([c])
    set_tracing_disabled(False)
    yield c
    set_trace_processors([])  # never fall back to the network exporter in this process


# ---- a scripted, offline model ----------------------------------------------------------

def call(call_id: str, name: str, **arguments: Any) -> ChatCompletionMessageFunctionToolCall:
    return ChatCompletionMessageFunctionToolCall(
        id=call_id, type="function", function=Function(name=name, arguments=json.dumps(arguments)))


class ScriptedChatModel(Model):
    """Replies from a script of chat messages; traced like the SDK's Chat Completions model."""

    def __init__(self, script: list[ChatCompletionMessage]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions, input, model_settings, tools,
                           output_schema, handoffs, tracing, *, previous_response_id,
                           conversation_id, prompt) -> ModelResponse:
        if not self.script:
            raise AssertionError("the agents called the model more often than scripted")
        self.inputs.append(input)
        n = len(self.inputs)
        message = self.script.pop(0)
        with generation_span(model="scripted-chat", model_config={},
                             disabled=tracing.is_disabled()) as span:
            if tracing.include_data():
                messages = Converter.items_to_messages(input)
                if system_instructions:
                    messages.insert(0, {"role": "system", "content": system_instructions})
                span.span_data.input = json.loads(json.dumps(messages, default=str))
                span.span_data.output = [message.model_dump()]
            span.span_data.usage = {"input_tokens": 10 * n, "output_tokens": 20}
        output = Converter.message_to_output_items(
            message, provider_data={"model": "scripted-chat",
                                    "response_id": f"chatcmpl-offline{n:04d}"})
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    async def stream_response(self, *args, **kwargs):
        raise NotImplementedError("the test runs Runner.run, not streamed")
        yield  # pragma: no cover - makes this an async generator


# ---- the run -------------------------------------------------------------------------------

class HandoffData(BaseModel):
    reason: str
    account_number: str


@function_tool
def lookup_invoices(account_number: str, month: str) -> dict[str, Any]:
    """Charges on an account in one month (YYYY-MM)."""
    charge = {"invoice": "INV-88213", "amount": 49.0, "status": "paid"}
    return {"account_number": account_number, "month": month, "charges": [charge, charge],
            "refund_issued": "RF-5521"}


def run_support_story(filtered: bool):
    """Run the story; return (RunResult, model, run context)."""
    model = ScriptedChatModel([
        ChatCompletionMessage(role="assistant", content="Passing you to billing.", tool_calls=[
            call("call_0001", "transfer_to_billing_specialist",
                 reason="Customer reports a duplicate charge on the March invoice.",
                 account_number=ACCT)]),
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            call("call_0002", "lookup_invoices", account_number=ACCT, month="2025-03")]),
        ChatCompletionMessage(
            role="assistant",
            content="Refund RF-5521 issued for the duplicate charge; escalating the API lock.",
            tool_calls=[call("call_0003", "transfer_to_technical_support",
                             reason="API access suspended by the payment-failure hold.",
                             account_number=ACCT)]),
        ChatCompletionMessage(role="assistant", content=FINAL),
    ])
    context: dict[str, Any] = {"handoff_log": []}

    def log(ctx, data: HandoffData) -> None:
        ctx.context["handoff_log"].append(data.model_dump())

    technical = Agent(name="Technical Support", model=model,
                      instructions="Fix account access problems.")
    billing = Agent(name="Billing Specialist", model=model, tools=[lookup_invoices],
                    instructions="Resolve billing issues; escalate access problems.",
                    handoffs=[handoff(technical, input_type=HandoffData, on_handoff=log,
                                      input_filter=remove_all_tools if filtered else None)])
    triage = Agent(name="Triage Agent", model=model, instructions="Route the customer.",
                   handoffs=[handoff(billing, input_type=HandoffData, on_handoff=log)])
    config = RunConfig(workflow_name="support", group_id="conv-acct-4471",
                       tracing_disabled=False, trace_include_sensitive_data=True)
    result = asyncio.run(Runner.run(triage, USER, context=context, run_config=config))
    assert model.script == [], "the run ended before the script did"
    return result, model, context


def run_items_export(result) -> dict[str, Any]:
    """``RunResult.new_items`` as JSON: each item's type, agent name and raw item."""

    def dump(value: Any) -> Any:
        return value.model_dump(exclude_unset=True) if isinstance(value, BaseModel) else value

    items = []
    for item in result.new_items:
        row = {"type": item.type, "agent": item.agent.name, "raw_item": dump(item.raw_item)}
        if item.type == "handoff_output_item":
            row["source_agent"] = item.source_agent.name
            row["target_agent"] = item.target_agent.name
        if item.type == "tool_call_output_item":
            row["output"] = item.output if isinstance(item.output, str) else json.dumps(
                item.output, default=str)
        items.append(row)
    return json.loads(json.dumps({
        "last_agent": result.last_agent.name, "final_output": result.final_output,
        "new_items": items, "to_input_list": result.to_input_list()}, default=str))


def exports(filtered: bool, collector: Collector, tmp_path) -> dict[str, Any]:
    result, model, context = run_support_story(filtered)
    assert result.final_output == FINAL
    assert result.last_agent.name == "Technical Support"
    assert [h["account_number"] for h in context["handoff_log"]] == [ACCT, ACCT]
    assert len(collector.traces) == 1, "one Runner.run, one trace"
    spans = collector.spans
    assert {s["span_data"]["type"] for s in spans} >= {"agent", "handoff", "function",
                                                       "generation"}
    files = {
        "spans": {"trace": collector.traces[0], "spans": spans},
        "ingest": {"data": [collector.traces[0], *spans]},
        "run_items": run_items_export(result),
        "run_state": result.to_state().to_json(),
    }
    out = {}
    for kind, data in files.items():
        path = tmp_path / f"openai_agents_fresh_{kind}.json"
        path.write_text(json.dumps(data, indent=1), encoding="utf-8")
        out[kind] = path
    return out


@pytest.mark.parametrize("filtered", [False, True], ids=["nofilter", "input_filter"])
def test_fresh_openai_agents_exports_import_to_the_story(filtered, collector, network_attempts,
                                                         tmp_path):
    paths = exports(filtered, collector, tmp_path)
    assert network_attempts == [], "the offline run tried to reach the network"
    # run items lose the arguments of a handoff hidden by an input_filter (it is inferred)
    acct = {kind: [True, True] for kind in paths}
    if filtered:
        acct["run_items"] = [True, False]
    imported = {}
    for kind, path in paths.items():
        assert detect_format(json.loads(path.read_text())) == "openai-agents", kind
        traces, issues = import_traces(path, format="auto")
        assert len(traces) == 1, kind
        t = traces[0]
        imported[kind] = t
        assert t.metadata["source_format"] == "openai-agents"
        assert {role(a) for a in t.agents_involved()} == {"triage", "billing", "technical"}
        assert [(role(h.from_agent), role(h.to_agent), h.mode) for h in t.handoffs] == STORY, kind
        assert [ACCT in json.dumps(h.context_passed) for h in t.handoffs] == acct[kind], kind
        assert [u.content for u in t.user_messages] == [USER], kind
        assert "text_unavailable" not in t.metadata
        speakers = [role(m.speaker) for m in t.messages() if not m.is_user]
        assert speakers[0] == "triage" and speakers[-1] == "technical", kind
        assert t.messages()[-1].content == FINAL, kind
        tools = [c for turn in t.turns if role(turn.agent_id) == "billing"
                 for c in turn.tool_calls if c.get("name") == "lookup_invoices"]
        assert len(tools) == 1 and "RF-5521" in json.dumps(tools[0].get("output")), kind
        inferred = [i for i in issues if "inferred" in i.message]
        hidden = filtered and kind in ("run_items", "run_state")
        assert len(inferred) == (1 if hidden else 0), (kind, issues)
        idx = [e.turn_index for e in t.timeline()]
        assert idx == sorted(set(idx)), kind
        # each handoff sits between the last turn of its source and the first of its target
        assert [shape(e) for e in t.timeline()] == TIMELINE, kind
        # import → save → load
        out = tmp_path / f"{kind}.jsonl"
        save_traces(traces, out)
        assert [trace_to_dict(x) for x in load_traces(out)] == [trace_to_dict(x) for x in traces]
    # the span export and the ingest payload are the same records: the same trace
    same = {k: v for k, v in trace_to_dict(imported["spans"]).items() if k != "metadata"}
    assert same == {k: v for k, v in trace_to_dict(imported["ingest"]).items()
                    if k != "metadata"}
    assert imported["spans"].conversation_id == "conv-acct-4471"


def test_network_guard_refuses_outside_connections(network_attempts):
    # the guard above is what makes "offline" checkable: it must refuse and record
    with pytest.raises(OSError, match="offline"):
        socket.create_connection(("203.0.113.7", 443), timeout=1)
    with pytest.raises(OSError, match="offline"):
        socket.getaddrinfo("api.openai.com", 443)
    assert len(network_attempts) == 2
    with socket.socket() as server:  # loopback stays allowed
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=1):
            pass
    assert len(network_attempts) == 2


def run_agent_as_tool(nested_handoff: bool):
    """Triage asks billing through ``billing.as_tool``; with ``nested_handoff`` billing hands
    off to technical inside the tool call. Returns the RunResult."""
    script = [
        ChatCompletionMessage(role="assistant", content=None, tool_calls=[
            call("call_0001", "ask_billing", input=f"Duplicate March charge on {ACCT}.")]),
        ChatCompletionMessage(role="assistant", content="Refund RF-5521 issued."),
        ChatCompletionMessage(role="assistant", content="Billing has refunded the charge."),
    ]
    technical = Agent(name="Technical Support", model=None, instructions="Fix access.")
    handoffs = []
    if nested_handoff:
        script[1:2] = [
            ChatCompletionMessage(role="assistant", content=None, tool_calls=[
                call("call_0002", "transfer_to_technical_support")]),
            ChatCompletionMessage(role="assistant", content="API access restored."),
        ]
        handoffs = [technical]
    model = ScriptedChatModel(script)
    technical.model = model
    billing = Agent(name="Billing Specialist", model=model, instructions="Resolve billing.",
                    handoffs=handoffs)
    triage = Agent(name="Triage Agent", model=model, instructions="Route the customer.",
                   tools=[billing.as_tool(tool_name="ask_billing",
                                          tool_description="Ask the billing specialist.")])
    config = RunConfig(tracing_disabled=False, trace_include_sensitive_data=True)
    result = asyncio.run(Runner.run(triage, USER, run_config=config))
    assert model.script == [], "the run ended before the script did"
    assert result.final_output == "Billing has refunded the charge."
    return result


def test_agent_as_tool_imports_as_a_delegation(collector, network_attempts):
    result = run_agent_as_tool(nested_handoff=False)
    assert network_attempts == []
    spans = {"trace": collector.traces[0], "spans": collector.spans}
    # the SDK nests the called agent's run under the tool's span: function → task → agent
    by_id = {s["id"]: s for s in collector.spans}
    nested = [s for s in collector.spans if s["span_data"]["type"] == "agent"
              and s["span_data"]["name"] == "Billing Specialist"]
    assert len(nested) == 1
    task = by_id[nested[0]["parent_id"]]
    assert task["span_data"]["type"] == "custom"
    assert by_id[task["parent_id"]]["span_data"]["type"] == "function"
    traces, issues = import_traces(spans)
    t = traces[0]
    assert {role(a) for a in t.agents_involved()} == {"triage", "billing"}
    # the tool's argument (the called agent's `role: user` input) is not a user message
    assert [u.content for u in t.user_messages] == [USER]
    assert [(role(h.from_agent), role(h.to_agent), h.mode, h.reason) for h in t.handoffs] == [
        ("triage", "billing", "delegate", None)]
    assert t.handoffs[0].context_passed == {"input": f"Duplicate March charge on {ACCT}."}
    # the caller's tool call, the delegation, the called agent's turn, the caller again
    assert [shape(e) for e in t.timeline()] == ["user", "triage", "triage->billing", "billing",
                                                "triage"]
    ask = t.turns[0].tool_calls
    assert [c["name"] for c in ask] == ["ask_billing"] and ask[0]["output"] == \
        "Refund RF-5521 issued."
    assert [m.content for m in t.messages(tools=False) if not m.is_user][1:] == [
        "Refund RF-5521 issued.", "Billing has refunded the charge."]
    said = [i.message for i in issues if "agents as tools" in i.message]
    assert len(said) == 1
    assert "Triage Agent → Billing Specialist via tool 'ask_billing'" in said[0]
    # the nested run's root (custom:task) is part of the delegation, not an unmapped span
    assert not any("custom:task" in i.message for i in issues)
    idx = [e.turn_index for e in t.timeline()]
    assert idx == sorted(set(idx))
    # run items and run state hold only the calling run: the called agent is not in them, so
    # they import as a plain tool call (documented in docs/importers.md)
    for data in (run_items_export(result), result.to_state().to_json()):
        items_trace = import_traces(data)[0][0]
        assert items_trace.handoffs == [] and items_trace.agents_involved() == ["Triage Agent"]
        assert items_trace.turns[0].tool_calls[0]["output"] == "Refund RF-5521 issued."


def test_agent_as_tool_with_a_handoff_inside_the_tool_call(collector, network_attempts):
    # billing, called as a tool, transfers to technical inside the call; technical's answer is
    # the tool's output and control returns to triage: one delegation, one transfer, no return
    run_agent_as_tool(nested_handoff=True)
    assert network_attempts == []
    traces, issues = import_traces({"trace": collector.traces[0], "spans": collector.spans})
    t = traces[0]
    assert [u.content for u in t.user_messages] == [USER]
    assert [(role(h.from_agent), role(h.to_agent), h.mode) for h in t.handoffs] == [
        ("triage", "billing", "delegate"), ("billing", "technical", "transfer")]
    assert [shape(e) for e in t.timeline()] == [
        "user", "triage", "triage->billing", "billing", "billing->technical", "technical",
        "triage"]
    assert t.turns[0].tool_calls[0]["output"] == "API access restored."
    assert len([i for i in issues if "agents as tools" in i.message]) == 1
