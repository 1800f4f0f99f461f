"""Every shared sample imports to the triage → billing → technical story, and round-trips.

The table below is the expected reading of each sample: format detected, handoffs (as roles),
which handoffs carry the account number in ``context_passed`` (where the format records it),
whether the user message and the message text are in the source.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from importers.importer_samples import SAMPLES, SKIP_REASON, sample_files

from maev_kit.cli._import import import_command
from maev_kit.traces import load_traces, save_traces, trace_to_dict, validate_trace_file
from maev_kit.traces.importers import detect_format, import_traces

ACCT = "ACCT-4471-9920"
ALL = {"triage", "billing", "technical"}
SWARM = [("triage", "billing", "transfer"), ("billing", "technical", "transfer")]
CREW = [("triage", "billing", "delegate"), ("triage", "technical", "delegate")]


def row(fmt, handoffs=SWARM, acct=(True, True), agents=ALL, users=1, text=True):
    return {"format": fmt, "handoffs": handoffs, "acct": list(acct), "agents": agents,
            "users": users, "text": text}


FLAT = {"handoffs": [], "acct": [], "agents": {"assistant"}, "text": True}
EXPECTED = {
    # OpenAI Agents SDK
    "openai_agents_trace.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_ingest_payload.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_nofilter_ingest_payload.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_spans.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_nofilter_spans.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_nofilter_run_items.json": row("openai-agents"),
    "openai_agents_real/openai_agents_chat_nofilter_run_state.json": row("openai-agents"),
    # input_filter: the billing → technical handoff is inferred; run items lose its arguments,
    # the run state still has them in model_responses
    "openai_agents_real/openai_agents_chat_run_items.json": row("openai-agents",
                                                                acct=(True, False)),
    "openai_agents_real/openai_agents_chat_run_state.json": row("openai-agents"),
    # Responses API: spans carry response ids only
    "openai_agents_real/openai_agents_responses_nofilter_spans.json": row(
        "openai-agents", acct=(False, False), users=0, text=False),
    "openai_agents_real/openai_agents_responses_nofilter_ingest_payload.json": row(
        "openai-agents", acct=(False, False), users=0, text=False),
    "openai_agents_real/openai_agents_responses_nofilter_run_items.json": row("openai-agents"),
    "openai_agents_real/openai_agents_responses_nofilter_run_state.json": row("openai-agents"),
    "openai_agents_real/otlp_openinference_openai_agents.json": row("openinference"),
    "openai_agents_real/otlp_otel_openai_agents.json": row("otel"),
    "openinference_spans.json": row("openinference"),
    "otel_genai_spans.json": row("otel"),
    # LangGraph swarm: the default handoff tool takes no arguments; the custom one does
    "langgraph_swarm_messages.json": row("langgraph", acct=(False, True)),
    "langgraph_real/langgraph_swarm_messages.json": row("langgraph", acct=(False, True)),
    "langgraph_real/langgraph_swarm_stream_updates.json": row("langgraph", acct=(False, True)),
    "langgraph_real/langsmith_run_tree_langgraph_swarm.json": row("langgraph",
                                                                  acct=(False, True)),
    "langgraph_real/otlp_openinference_langgraph_swarm.json": row("openinference",
                                                                  acct=(False, True)),
    # AutoGen Swarm: the handoff tools take no arguments, so context_passed is {}; the
    # HandoffMessage.context (model context carried along, not arguments) is in metadata
    "autogen_swarm_messages.json": row("autogen", acct=(False, False)),
    "autogen_real/autogen_swarm_messages.json": row("autogen", acct=(False, False)),
    "autogen_real/autogen_swarm_team_state.json": row("autogen", acct=(False, False)),
    # AutoGen's spans carry the chat messages as JSON payloads: the conversation is rebuilt
    "autogen_real/otlp_autogen_native_genai.json": row("otel", acct=(False, False)),
    "autogen_real/otlp_openinference_autogen_swarm.json": row("openinference",
                                                              acct=(False, False)),
    # CrewAI delegates (the caller gets the answer back)
    "crewai_events.json": row("crewai", handoffs=CREW),
    "crewai_real/crewai_events.json": row("crewai", handoffs=CREW),
    # OpenInference's CrewAI instrumentation misses the delegated agents' spans
    "crewai_real/otlp_openinference_crewai.json": row("openinference", handoffs=CREW,
                                                      agents={"triage"}),
    # third party: single spans' flat attribute maps, no agent names, no handoffs
    "third_party/openinference_genai_fixtures/openinference_client_span_input_output_only.json":
        {**FLAT, "format": "openinference", "users": 1},
    "third_party/openinference_genai_fixtures/openinference_client_span_tool_calls.json":
        {**FLAT, "format": "openinference", "users": 1},
    "third_party/openinference_genai_fixtures/otel_genai_client_span_tool_calls.json":
        {**FLAT, "format": "otel", "users": 1},
    "third_party/openinference_genai_fixtures/otel_genai_deprecated_client_span_tool_calls.json":
        {**FLAT, "format": "otel", "users": 1},
    "third_party/openinference_genai_fixtures/otel_genai_tool_execution_span.json":
        {**FLAT, "format": "otel", "users": 0, "text": False},
}

FILES = sample_files() or [pytest.param("<absent>", marks=pytest.mark.skip(reason=SKIP_REASON))]


def role(agent: str) -> str:
    low = agent.lower()
    for r in ("triage", "billing", "technical"):
        if r in low:
            return r
    return agent


def test_every_sample_has_an_expectation(samples):
    assert set(sample_files()) == set(EXPECTED), (
        "samples without an expected reading (add them to EXPECTED): "
        f"{sorted(set(sample_files()) - set(EXPECTED))}; "
        f"expected but missing: {sorted(set(EXPECTED) - set(sample_files()))}")


@pytest.mark.parametrize("rel", FILES)
def test_sample_imports_to_the_story(rel, samples):
    exp = EXPECTED[rel]
    assert detect_format(json.loads((samples / rel).read_text())) == exp["format"]
    traces, issues = import_traces(samples / rel)
    assert len(traces) == 1
    t = traces[0]
    assert t.metadata["source_format"] == exp["format"]
    assert t.metadata["source_file"] == (samples / rel).name
    assert {role(a) for a in t.agents_involved()} == exp["agents"]
    assert [(role(h.from_agent), role(h.to_agent), h.mode) for h in t.handoffs] == exp["handoffs"]
    assert [ACCT in json.dumps(h.context_passed) for h in t.handoffs] == exp["acct"]
    assert all(h.reason is None for h in t.handoffs)  # no sample records one of the 4 reasons
    assert len(t.user_messages) == exp["users"]
    assert t.metadata.get("text_unavailable", False) is (not exp["text"])
    if not exp["text"]:  # structure only: the import says so
        assert any("no text" in i.message for i in issues)
    # one shared, strictly increasing turn_index sequence in source order
    idx = [e.turn_index for e in t.timeline()]
    assert idx == sorted(set(idx))
    if exp["agents"] == ALL:  # the story's order: triage speaks first, technical last
        speakers = [role(m.speaker) for m in t.messages() if not m.is_user]
        assert speakers[0] == "triage" and speakers[-1] in ("technical", "triage")


@pytest.mark.parametrize("rel", FILES)
def test_import_save_load_round_trips(rel, samples, tmp_path):
    traces, _ = import_traces(samples / rel)
    out = tmp_path / "t.jsonl"
    save_traces(traces, out)
    loaded = load_traces(out)
    assert [trace_to_dict(t) for t in loaded] == [trace_to_dict(t) for t in traces]


@pytest.mark.parametrize("rel", FILES)
def test_cli_writes_a_valid_trace_file(rel, samples, tmp_path):
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(import_command, ["auto", str(samples / rel), "-o", str(out)])
    assert result.exit_code == 0, result.output
    first = result.output.splitlines()[0]
    assert first.startswith("imported 1 trace") and f"as {EXPECTED[rel]['format']!r}" in first
    traces, errors, _warnings = validate_trace_file(out)
    assert errors == []
    assert len(traces) == 1


def test_explicit_format_overrides_detection(samples):
    # the OpenInference export of the Agents SDK also reads as OpenInference when forced,
    # and an explicit wrong format fails with a message naming it
    traces, _ = import_traces(samples / "openinference_spans.json", format="openinference")
    assert traces[0].metadata["source_format"] == "openinference"
    from maev_kit.traces.importers import TraceImportError

    with pytest.raises(TraceImportError, match=r"as 'otel'.*OpenInference"):
        import_traces(samples / "openinference_spans.json", format="otel")


def test_samples_folder_is_found():
    # documents where the samples are: in the repository, so a clone runs every sample test
    assert SAMPLES.name == "trace_samples" and SAMPLES.parent.name == "data" and SAMPLES.is_dir()
