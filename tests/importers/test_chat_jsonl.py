"""The chat importer on the common chat JSONL shapes, and the one detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maev_kit.errors import InputError
from maev_kit.traces.importers import TraceImportError, detect_file, import_traces

DATA = Path(__file__).resolve().parents[1] / "data" / "chat_jsonl"


def test_conversation_per_line_maps_agents_transfers_and_escalation():
    traces, issues = import_traces(DATA / "conversations.jsonl")
    assert issues == []
    c1, c2 = traces
    assert c1.metadata["system_messages"] == ["You are a support team."]
    assert c1.turns[0].tool_calls[0]["output"] == '{"assistant": "booking"}'  # tool_call_id
    # one handoff for the transfer call, none again for the speaker change it announced
    assert [(h.from_agent, h.to_agent, h.context_passed) for h in c1.handoffs] == [
        ("triage", "booking", {"summary": "Booking ZX4821, wants 14 May"})]
    assert c2.agents_involved() == ["triage", "billing"]  # the `agent` field names them
    assert [(h.from_agent, h.to_agent, h.context_passed) for h in c2.handoffs] == [
        ("triage", "billing", {}),  # the speaking agent changed
        ("billing", "human_agents", {"summary": "Refunded duplicate on INV-7730; customer "
                                                "wants a person",
                                     "reason": "customer request"})]


def test_message_per_line_groups_by_conversation_in_file_order(tmp_path):
    lines = [{"conversation_id": "a", "role": "user", "content": "one"},
             {"conversation_id": "b", "role": "user", "content": "other"},
             {"conversation_id": "a", "role": "assistant", "name": "x", "content": "two"},
             {"conversation_id": "a", "role": "assistant", "name": "y", "content": "three"}]
    p = tmp_path / "m.jsonl"
    p.write_text("".join(json.dumps(m) + "\n" for m in lines))
    traces, _ = import_traces(p)
    assert [t.conversation_id for t in traces] == ["a", "b"]
    a = traces[0]
    assert [m.content for m in a.user_messages] == ["one"]
    assert [t.message for t in a.turns] == ["two", "three"]
    assert [(h.from_agent, h.to_agent) for h in a.handoffs] == [("x", "y")]


def test_a_message_line_without_conversation_id_is_named(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text(json.dumps({"conversation_id": "a", "role": "user", "content": "hi"}) + "\n"
                 + json.dumps({"role": "assistant", "content": "yo"}) + "\n")
    with pytest.raises(TraceImportError, match=r"at \[1\]\.conversation_id"):
        import_traces(p)


def test_escalate_tool_hands_off_with_its_arguments():
    log = [{"role": "user", "content": "I want a person"},
           {"role": "assistant", "name": "support", "content": "",
            "tool_calls": [{"id": "e", "function": {"name": "escalate_to_human",
                                                    "arguments": {"reason": "asked"}}}]}]
    t = import_traces(log, format="chat").traces[0]
    assert [(h.to_agent, h.context_passed) for h in t.handoffs] == [("human", {"reason": "asked"})]


@pytest.mark.parametrize("name, fmt", [("conversations.jsonl", "chat"),
                                       ("messages.jsonl", "chat")])
def test_detect_file_names_the_chat_shapes(name, fmt):
    assert detect_file(DATA / name).format == fmt


def test_detect_file_says_maev_for_a_trace_file_and_refuses_other_kit_files(tmp_path):
    from factories import make_trace

    from maev_kit.traces import save_traces

    save_traces([make_trace()], tmp_path / "t.jsonl")
    assert detect_file(tmp_path / "t.jsonl").format == "maev"
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"item_id": "c/h0/f", "annotator": "a", "label": "lost"}) + "\n")
    with pytest.raises(InputError, match="this looks like a labels file"):
        detect_file(labels)
    with pytest.raises(InputError, match="not a trace file maev-kit can read"):
        detect_file(DATA / "unknown_shape.jsonl")
