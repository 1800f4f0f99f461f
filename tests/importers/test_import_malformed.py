"""Malformed input, per format: a TraceImportError naming the format tried and the place."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner

from maev_kit.cli._import import import_command
from maev_kit.errors import InputError
from maev_kit.traces.importers import TraceImportError, import_traces


def _raises(data, fmt, where, match=None):
    with pytest.raises(TraceImportError) as info:
        import_traces(data, format=fmt)
    e = info.value
    assert isinstance(e, InputError)  # the CLI exits 2 on it
    assert e.format == fmt
    assert e.where == where, str(e)
    assert f"as {fmt!r}" in str(e) and where in str(e)
    if match:
        assert match in str(e)
    return e


def test_openai_agents_span_type_null(load_sample):
    data = load_sample("openai_agents_real/openai_agents_chat_spans.json")
    data["spans"][3]["span_data"]["type"] = None
    _raises(data, "openai-agents", "spans[3].span_data.type", "expected a string, got null")


def test_openai_agents_ingest_payload_wrong_object(load_sample):
    data = load_sample("openai_agents_trace.json")
    data[0]["data"][2]["object"] = "banana"
    _raises(data, "openai-agents", "[0].data[2].object", "'banana'")


def test_openai_agents_run_item_without_agent(load_sample):
    data = load_sample("openai_agents_real/openai_agents_chat_nofilter_run_items.json")
    del data["new_items"][2]["agent"]
    _raises(data, "openai-agents", "new_items[2].agent", "names no agent")


def test_openai_agents_unknown_shape():
    _raises({"hello": 1}, "openai-agents", "", "span exports")


def test_otel_bad_span_id(load_sample):
    data = load_sample("otel_genai_spans.json")
    data["resourceSpans"][0]["scopeSpans"][0]["spans"][4]["spanId"] = "not-an-id"
    _raises(data, "otel", "resourceSpans[0].scopeSpans[0].spans[4].spanId",
            "neither 16 hex digits nor base64")


def test_otel_attributes_not_a_list(load_sample):
    data = load_sample("otel_genai_spans.json")
    data["resourceSpans"][0]["scopeSpans"][0]["spans"][1]["attributes"] = {"a": 1}
    _raises(data, "otel", "resourceSpans[0].scopeSpans[0].spans[1].attributes",
            "expected an array, got object")


def test_otel_missing_resource_spans():
    _raises({"foo": []}, "otel", "", "gen_ai")


def test_openinference_missing_trace_id(load_sample):
    data = load_sample("openinference_spans.json")
    del data["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["traceId"]
    _raises(data, "openinference", "resourceSpans[0].scopeSpans[0].spans[2].traceId",
            "required field is missing")


def test_openinference_on_a_genai_export(load_sample):
    _raises(load_sample("otel_genai_spans.json"), "openinference", "resourceSpans",
            "format 'otel'")


def test_langgraph_unknown_message_type(load_sample):
    data = load_sample("langgraph_swarm_messages.json")
    data["messages"][2]["type"] = "alien"
    _raises(data, "langgraph", "messages[2].type", "unknown message type 'alien'")


def test_langgraph_tool_call_without_name(load_sample):
    data = load_sample("langgraph_swarm_messages.json")
    del data["messages"][1]["data"]["tool_calls"][0]["name"]
    _raises(data, "langgraph", "messages[1].tool_calls[0].name")


def test_langgraph_run_without_outputs(load_sample):
    data = load_sample("langgraph_real/langsmith_run_tree_langgraph_swarm.json")
    data[0]["outputs"] = {}
    _raises(data, "langgraph", "outputs.messages", "no output messages")


def test_autogen_message_without_source(load_sample):
    data = load_sample("autogen_swarm_messages.json")
    del data["messages"][1]["source"]
    _raises(data, "autogen", "messages[1].source", "required field is missing")


def test_autogen_handoff_without_target(load_sample):
    data = load_sample("autogen_swarm_messages.json")
    del data["messages"][3]["target"]
    _raises(data, "autogen", "messages[3].target")


def test_crewai_event_without_type(load_sample):
    data = load_sample("crewai_events.json")
    del data["events"][3]["type"]
    _raises(data, "crewai", "events[3].type", "required field is missing")


def test_crewai_no_crew_events():
    _raises({"events": [{"type": "something_else"}]}, "crewai", "events", "no CrewAI")


def test_chat_message_without_role_or_name():
    _raises([{"role": "user", "content": "hi"}, {"content": "who am I"}], "chat", "[1]",
            "'role' or 'name'")


def test_chat_message_without_content():
    _raises({"messages": [{"role": "user"}]}, "chat", "messages[0].content")


def test_auto_detection_error_says_so(load_sample):
    data = load_sample("autogen_swarm_messages.json")
    del data["messages"][1]["source"]
    data["messages"][0]["source"] = "user"
    with pytest.raises(TraceImportError, match="auto-detected"):
        import_traces(data)


@pytest.mark.parametrize("text, match", [
    ("{not json", "not valid JSON"),
    ("", "bad.json: file is empty"),
    ('{"a": 1}\n{oops\n', "neither JSON nor JSON Lines: line 2"),
])
def test_unreadable_files(tmp_path, text, match):
    p = tmp_path / "bad.json"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        import_traces(p)


def test_missing_file_and_undetectable(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        import_traces(tmp_path / "nope.json")
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"what": "ever"}))
    with pytest.raises(InputError, match="not a trace file maev-kit can read .it holds an "
                                         "object with the key what.. It reads: maev trace "
                                         "JSONL") as info:
        import_traces(p)
    assert "chat JSONL, one message per line" in str(info.value)
    assert "openai-agents, otel, openinference, langgraph, autogen, crewai, chat" in str(
        info.value)


def test_unknown_format_and_option(load_sample):
    with pytest.raises(InputError, match="unknown `format` 'zipkin'"):
        import_traces([], format="zipkin")
    with pytest.raises(InputError, match="unknown option.*speaker_change_handoffs"):
        import_traces(load_sample("otel_genai_spans.json"), format="otel",
                      speaker_change_handoffs=True)


def test_cli_bad_input_raises_input_error(tmp_path, samples):
    bad = tmp_path / "bad.json"
    data = json.loads((samples / "otel_genai_spans.json").read_text())
    broken = copy.deepcopy(data)
    broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = 7
    bad.write_text(json.dumps(broken))
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(import_command, ["otel", str(bad), "-o", str(out)])
    assert isinstance(result.exception, TraceImportError)
    assert "bad.json" in str(result.exception) and "traceId" in str(result.exception)
    assert not out.exists()
    result = CliRunner().invoke(import_command, ["nosuch", str(bad), "-o", str(out)])
    assert isinstance(result.exception, InputError)
    assert "unknown FORMAT 'nosuch'" in str(result.exception)


def _paths(o, path=()):
    yield path
    if isinstance(o, dict):
        for k, v in o.items():
            yield from _paths(v, (*path, k))
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from _paths(v, (*path, i))


def test_mutated_samples_fail_with_located_input_errors(samples):
    """Seeded fuzz: any value replaced by a wrong type gives an import or an InputError.

    An error must come from the importers' own checks, not from the last-resort net that turns
    an unanticipated TypeError/KeyError into an input error ("unexpected content").
    """
    import random

    from importers.importer_samples import sample_files

    rng = random.Random(20261129)
    files = sample_files()
    junk = [None, 5, "x", [], {}, True, '{"a":', [1], {"type": None}]
    formats = ["auto", "auto", "openai-agents", "otel", "openinference", "langgraph",
               "autogen", "crewai", "chat"]
    for _ in range(250):
        rel = rng.choice(files)
        data = json.loads((samples / rel).read_text())
        paths = [p for p in _paths(data) if p]
        for _ in range(rng.choice([1, 1, 2, 3])):
            p = rng.choice(paths)
            node = data
            try:
                for k in p[:-1]:
                    node = node[k]
                node[p[-1]] = rng.choice(junk)
            except (KeyError, IndexError, TypeError):
                pass  # an earlier mutation removed this path
        fmt = rng.choice(formats)
        try:
            import_traces(copy.deepcopy(data), format=fmt)
        except InputError as e:
            assert "unexpected content" not in str(e), (rel, fmt, str(e))


def test_a_chat_agent_named_by_a_number_is_the_same_agent_in_turns_and_handoffs(tmp_path):
    """A message's `name` that is not a string (7) names the agent as its turns do ("7"):
    the handoff to it was to_agent=7 (an int), another agent than the turn's."""
    import json

    from maev_kit.traces.importers import import_traces

    chat = [{"role": "user", "content": "Refund please"},
            {"role": "assistant", "name": "triage", "content": "",
             "tool_calls": [{"id": "c1", "function": {"name": "transfer_to_7",
                                                      "arguments": "{}"}}]},
            {"role": "assistant", "name": 7, "content": "Agent seven here."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    traces, _ = import_traces(path, format="chat")
    (t,) = traces
    assert [h.to_agent for h in t.handoffs] == ["7"]
    assert "7" in t.agents_involved()
