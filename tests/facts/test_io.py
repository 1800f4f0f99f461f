"""Facts files and their export to expectations.jsonl, scored by build_retention_items."""

from __future__ import annotations

import json

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.errors import InputError
from maev_kit.expectations import load_expectations
from maev_kit.facts import (
    facts_to_expectations,
    load_facts,
    propose_facts,
    save_facts,
    save_facts_as_expectations,
)
from maev_kit.retention import build_retention_items


def trace() -> MultiAgentTrace:
    return MultiAgentTrace(
        "c1", user_messages=["My order ORD-5512 is late, I'm Ana Lopez, 3 checked bags."],
        turns=[AgentTurn("triage", "router", "Passing you to orders.", turn_index=1),
               AgentTurn("orders", "specialist", "Ana, ORD-5512 ships tomorrow.", turn_index=3)],
        handoffs=[Handoff("triage", "orders", None, {}, 2)])


def test_facts_file_round_trip(tmp_path):
    facts = propose_facts([trace()])
    path = tmp_path / "facts.jsonl"
    save_facts(path, facts)
    assert load_facts(path) == list(facts)


def test_expectations_round_trip_yields_retention_items(tmp_path):
    facts = propose_facts([trace()])
    assert [f.value for f in facts] == ["ORD-5512", "Ana Lopez", "3 checked bags"]
    path = tmp_path / "expectations.jsonl"
    save_facts_as_expectations(path, facts)
    loaded = load_expectations(path)
    assert [(k.fact_id, k.handoff_index, k.text) for k in loaded["c1"].key_facts] == [
        (f.fact_id, f.handoff_index, f.text) for f in facts]
    items = build_retention_items([trace()], path)
    assert [i.item_id for i in items] == [f"c1/h0/{f.fact_id}" for f in facts]
    assert [i.fact for i in items] == [f.text for f in facts]
    assert [m.content for m in items[0].after] == ["Ana, ORD-5512 ships tomorrow."]
    assert facts_to_expectations(facts)["c1"].key_facts == loaded["c1"].key_facts


def test_a_context_key_passed_at_every_handoff_is_a_fact_at_each(tmp_path):
    """``ctx:<key>`` recurs at each handoff that passes the key: with ``carry_over=True`` one
    fact per handoff, through the facts file, the expectations file and the retention items
    (the same text listed again is the same fact: one ``fact_key``); by default it is proposed
    once and judged at both handoffs all the same."""
    t = MultiAgentTrace(
        "c2", user_messages=["Account ACCT-4471 please."],
        turns=[AgentTurn("triage", "router", "Routing.", turn_index=1),
               AgentTurn("billing", "specialist", "Checking ACCT-4471.", turn_index=3),
               AgentTurn("tech", "specialist", "Hello.", turn_index=5)],
        handoffs=[Handoff("triage", "billing", None, {"account": "ACCT-4471"}, 2),
                  Handoff("billing", "tech", None, {"account": "ACCT-4471"}, 4)])
    once = propose_facts([t], method="context")
    assert [(f.handoff_index, f.fact_id) for f in once] == [(0, "ctx:account")]
    assert [i.item_id for i in build_retention_items([t], facts_to_expectations(once))] == [
        "c2/h0/ctx:account", "c2/h1/ctx:account"]
    facts = propose_facts([t], method="context", carry_over=True)
    assert [(f.handoff_index, f.fact_id) for f in facts] == [(0, "ctx:account"),
                                                              (1, "ctx:account")]
    save_facts(tmp_path / "facts.jsonl", facts)
    assert load_facts(tmp_path / "facts.jsonl") == list(facts)
    save_facts_as_expectations(tmp_path / "expectations.jsonl", facts)
    items = build_retention_items([t], tmp_path / "expectations.jsonl")
    assert [i.item_id for i in items] == ["c2/h0/ctx:account", "c2/h1/ctx:account"]
    assert {i.fact_key for i in items} == {"ctx:account"}


GOOD = {"conversation_id": "c1", "handoff_index": 0, "fact_id": "p-1", "text": "Code is X1",
        "value": "X1", "kind": "identifier", "source_turn_index": 0, "proposer": "offline"}


@pytest.mark.parametrize(("line", "where"), [
    ("{not json", "facts.jsonl:2: not valid JSON"),
    (json.dumps({**GOOD, "fact_id": "p-2", "kind": "colour"}),
     "facts.jsonl:2 › kind: unknown kind 'colour'"),
    (json.dumps({k: v for k, v in GOOD.items() if k != "text"} | {"fact_id": "p-2"}),
     "facts.jsonl:2 › text: field required"),
    (json.dumps({**GOOD, "fact_id": "p-2", "handoff_index": "0"}),
     "facts.jsonl:2 › handoff_index: expected a whole number ≥ 0, got '0'"),
    (json.dumps({**GOOD, "fact_id": "p-2", "colour": "red"}),
     "facts.jsonl:2 › colour: unknown field"),
    (json.dumps(GOOD), "facts.jsonl:2 › fact_id: duplicate fact_id 'p-1' at handoff 0 of "
     "conversation 'c1' (first on line 1)"),
    ("[1, 2]", "facts.jsonl:2: expected a JSON object, got an array"),
])
def test_a_malformed_facts_file_is_one_line_naming_file_line_and_field(tmp_path, monkeypatch,
                                                                        line, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "facts.jsonl").write_text(json.dumps(GOOD) + "\n" + line + "\n",
                                          encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_facts("facts.jsonl")
    assert str(e.value).startswith(where)
    assert "\n" not in str(e.value)


def test_several_problems_are_counted_on_the_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "facts.jsonl").write_text("{\n[]\n{}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^facts.jsonl:1: not valid JSON.*\(and 2 more\)$"):
        load_facts("facts.jsonl")


def test_a_missing_facts_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="^nope.jsonl: file not found$"):
        load_facts("nope.jsonl")


def test_value_and_turn_may_be_null(tmp_path):
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({**GOOD, "value": None, "source_turn_index": None}) + "\n",
                    encoding="utf-8")
    (f,) = load_facts(path)
    assert (f.value, f.source_turn_index) == (None, None)
