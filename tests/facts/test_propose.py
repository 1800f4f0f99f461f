"""propose_facts: offline and context proposers, merging, stable ids, notes for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.errors import InputError
from maev_kit.facts import (
    FACT_KINDS,
    FactProposal,
    ProposedFact,
    fact_id_for,
    facts_to_expectations,
    merge_facts,
    propose_facts,
)
from maev_kit.retention import build_retention_items


def two_handoffs(user_as_turn: bool = False) -> MultiAgentTrace:
    first = "Hi, my account number is ACCT-4471 and I was charged $49.99 twice."
    second = "Also my email is ana@example.org."
    turns = [AgentTurn("triage", "router", "Thanks for reaching out! How can I help?",
                       turn_index=1),
             AgentTurn("triage", "router", "Transferring you to billing now.", turn_index=3),
             AgentTurn("billing", "specialist", "Refund RF-5521 issued for ACCT-4471.",
                       turn_index=5),
             AgentTurn("tech", "specialist", "Tech here.", turn_index=8)]
    users = [(0, first), (6, second)]
    if user_as_turn:
        turns += [AgentTurn("customer", "user", text, turn_index=i) for i, text in users]
        user_messages = []
    else:
        user_messages = [{"content": text, "turn_index": i} for i, text in users]
    from maev_kit.traces._model import UserMessage
    return MultiAgentTrace(
        "c1", turns=sorted(turns, key=lambda t: t.turn_index),
        handoffs=[Handoff("triage", "billing", None, {"account_number": "ACCT-4471"}, 4),
                  Handoff("billing", "tech", None, {}, 7)],
        user_messages=[UserMessage(**m) for m in user_messages])


def values(facts, handoff_index=None):
    return [f.value for f in facts if handoff_index is None or f.handoff_index == handoff_index]


@pytest.mark.parametrize("user_as_turn", [False, True], ids=["user_messages", "user_turns"])
def test_offline_reads_user_text_wherever_it_sits(user_as_turn):
    facts = propose_facts(two_handoffs(user_as_turn))
    assert values(facts, 0) == ["ACCT-4471", "$49.99"]
    # h1: the new email and the billing agent's own refund reference (h0's facts are judged
    # at h1 too, but proposed once)
    assert values(facts, 1) == ["RF-5521", "ana@example.org"]
    t = two_handoffs(user_as_turn)
    said = {m.turn_index: m.content for m in t.messages()}
    for f in facts:
        assert f.value in said[f.source_turn_index], f  # the reviewer can highlight it
        assert f.proposer == "offline" and f.kind in FACT_KINDS
        assert f.fact_id == fact_id_for(f.handoff_index, f.text)


def test_each_value_is_proposed_once_unless_carried_over():
    facts = propose_facts(two_handoffs())  # the default: a fact belongs to the conversation
    assert values(facts, 0) == ["ACCT-4471", "$49.99"]
    assert values(facts, 1) == ["RF-5521", "ana@example.org"]
    # and scoring judges the h0 facts at h1 as well
    items = build_retention_items([two_handoffs()], facts_to_expectations(facts))
    assert sorted((i.fact_key, i.handoff_index) for i in items if i.fact_key.startswith("p-")
                  and i.handoff_index == 1) == sorted(
        [(f.fact_id, 1) for f in facts if f.handoff_index == 0]
        + [(f.fact_id, 1) for f in facts if f.handoff_index == 1])
    copies = propose_facts(two_handoffs(), carry_over=True)
    assert values(copies, 1) == ["ACCT-4471", "$49.99", "RF-5521", "ana@example.org"]


def test_with_several_methods_a_value_is_proposed_at_its_first_handoff_only():
    t = two_handoffs()
    t.handoffs[1].context_passed = {"account_number": "ACCT-4471"}
    facts = propose_facts(t, method=["context", "offline"])
    assert [f.handoff_index for f in facts if f.value == "ACCT-4471"] == [0]


def test_only_the_handing_off_agent_since_it_took_over_counts():
    t = two_handoffs()
    # the triage agent's greeting has no fact; a receiving agent's words never feed h0
    t.turns.append(AgentTurn("billing", "specialist", "Case CS-9912 opened", turn_index=2))
    t.turns.sort(key=lambda x: x.turn_index)
    assert "CS-9912" not in values(propose_facts(t), 0)
    assert "CS-9912" not in values(propose_facts(t), 1)  # said before billing took over


def test_ids_are_stable_across_reruns_and_input_order():
    a = propose_facts([two_handoffs(), MultiAgentTrace("c0")])
    b = propose_facts([MultiAgentTrace("c0"), two_handoffs()])
    assert [f.to_dict() for f in a] == [f.to_dict() for f in b]
    assert len({(f.conversation_id, f.fact_id) for f in a}) == len(a)


def test_context_proposer_turns_context_passed_into_facts():
    facts = propose_facts(two_handoffs(), method="context")
    assert [(f.fact_id, f.text, f.value, f.kind, f.source_turn_index, f.proposer)
            for f in facts] == [("ctx:account_number", "account_number is ACCT-4471",
                                 "ACCT-4471", "context", 4, "context")]


def test_methods_merge_and_deduplicate_by_value():
    facts = propose_facts(two_handoffs(), method=["context", "offline"])
    h0 = [(f.value, f.proposer, f.fact_id) for f in facts if f.handoff_index == 0]
    assert h0 == [("ACCT-4471", "context+offline", "ctx:account_number"),
                  ("$49.99", "offline", fact_id_for(0, "Charge amount is $49.99"))]
    assert facts.notes == []  # h1's empty context is no news: offline filled it


def test_merge_facts_normalises_values_and_keeps_handoffs_apart():
    def fact(h, value, proposer, text=None):
        text = text or f"Code is {value}"
        return ProposedFact("c1", h, fact_id_for(h, text), text, value, "identifier", 0,
                            proposer)
    merged = merge_facts([fact(0, "AB-12", "offline"), fact(1, "AB-12", "offline")],
                         [fact(0, "ab-12", "llm:x"), fact(0, None, "llm:x", "Wants a refund"),
                          fact(0, None, "offline", "wants a refund!")])
    assert [(f.handoff_index, f.value, f.proposer) for f in merged] == [
        (0, "AB-12", "offline+llm:x"), (0, None, "llm:x+offline"), (1, "AB-12", "offline")]
    assert merge_facts([fact(0, "AB-12", "context+offline")], [fact(0, "AB-12", "offline")]
                       )[0].proposer == "context+offline"


def test_no_handoff_no_user_text_and_tool_only_traces_get_notes_not_errors():
    from maev_kit.traces._model import UserMessage

    no_handoff = MultiAgentTrace("a", user_messages=["My account is ACCT-1"])
    no_user = MultiAgentTrace("b", turns=[AgentTurn("x", "router", "Hello", turn_index=0)],
                              handoffs=[Handoff("x", "y", None, turn_index=1)])
    tool_only = MultiAgentTrace(
        "c", turns=[AgentTurn("x", "tool", '{"account": "ACCT-9"}', turn_index=0),
                    AgentTurn("y", "agent", "", [{"name": "lookup"}], turn_index=2)],
        handoffs=[Handoff("x", "y", None, turn_index=1)])
    late_user = MultiAgentTrace(
        "d", turns=[AgentTurn("x", "router", "Hi", turn_index=0)],
        handoffs=[Handoff("x", "y", None, turn_index=1)],
        user_messages=[UserMessage("Account ACCT-5", 2)])  # only after the handoff
    chatter = MultiAgentTrace("e", handoffs=[Handoff("x", "y", None, turn_index=1)],
                              user_messages=["hello there"])
    result = propose_facts([no_handoff, no_user, tool_only, late_user, chatter])
    assert isinstance(result, FactProposal) and isinstance(result, list)
    assert list(result) == []
    notes = {n.conversation_id: str(n) for n in result.notes}
    assert notes == {
        "a": "a: no handoff: nothing to propose facts for",
        "b": "b: no user text: no offline fact proposed",
        "c": "c: only tool turns, no user text: no offline fact proposed",
        "d": "d/h0: no user text before this handoff",
        "e": "e/h0: nothing fact-like in the 1 user message before this handoff",
    }


def test_a_handoff_before_any_user_text_gets_a_note():
    t = MultiAgentTrace("f", turns=[AgentTurn("x", "router", "Hi", turn_index=0)],
                        handoffs=[Handoff("x", "y", None, turn_index=1),
                                  Handoff("y", "z", None, turn_index=3)])
    from maev_kit.traces._model import UserMessage
    t.user_messages = [UserMessage("Order ORD-123 is late", 2)]
    result = propose_facts(t)
    assert [(f.handoff_index, f.value) for f in result] == [(1, "ORD-123")]
    assert [str(n) for n in result.notes] == ["f/h0: no user text before this handoff"]


def test_context_notes_when_no_handoff_passes_anything():
    t = MultiAgentTrace("g", handoffs=[Handoff("x", "y", None, turn_index=1)])
    assert [str(n) for n in propose_facts(t, method="context").notes] == [
        "g: no handoff passes a context value: no context fact"]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "ofline"}, "unknown fact proposer 'ofline'; did you mean 'offline'?"),
    ({"method": []}, "`method` names no proposer"),
    ({"method": "llm"}, "the llm proposer needs a model"),
    ({"method": "llm", "backend": "openai/gpt-4o-mini", "prompt": "v9"},
     "unknown extraction prompt 'v9' for the llm proposer; use one of v1"),
    ({"method": ["offline", "llm"], "backend": "x", "window": 3},
     "unknown option(s) for the offline proposer: window"),
    ({"method": "offline", "window": 3}, "unknown option(s) for the offline proposer: window"),
])
def test_bad_arguments_are_one_clear_input_error(kwargs, message):
    with pytest.raises(InputError) as e:
        propose_facts([two_handoffs()], **kwargs)
    assert message in str(e.value)


def test_importing_the_package_loads_the_standard_library_only():
    code = ("import sys, maev_kit.facts; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('pydantic', 'numpy', 'pandas', 'litellm', 'ipywidgets')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


# ---- values from tool results --------------------------------------------------------------

def billing_with_tool(agent_text: str, output, *, arguments=None,
                      later_args=None) -> MultiAgentTrace:
    """user (0) → triage hands to billing (1) → billing calls a tool (2) and talks (3) →
    billing hands to tech (4)."""
    from maev_kit.traces._model import UserMessage

    calls = [{"name": "lookup_invoices", "arguments": arguments or {"account": "ACCT-4471"},
              "id": "c1", "output": output}]
    if later_args is not None:
        calls.append({"name": "transfer_to_tech", "arguments": later_args, "id": "c2"})
    return MultiAgentTrace(
        "t1", turns=[AgentTurn("triage", "router", "Transferring you.", turn_index=1),
                     AgentTurn("billing", "specialist", "", calls, turn_index=2),
                     AgentTurn("billing", "specialist", agent_text, turn_index=3)],
        handoffs=[Handoff("triage", "billing", None, turn_index=1),
                  Handoff("billing", "tech", None, turn_index=4)],
        user_messages=[UserMessage("I was charged twice. Account ACCT-4471.", 0)])


def test_a_tool_value_the_agent_restates_is_proposed_once_from_the_tool_turn():
    output = {"invoice": "INV-88213", "amount": "49.00", "currency": "USD",
              "charged_at": "2025-03-01", "status": "paid"}
    t = billing_with_tool("I found the duplicate charge of $49.00 on INV-88213.", output)
    facts = [f for f in propose_facts(t) if f.handoff_index == 1]
    assert [(f.value, f.kind, f.source_turn_index) for f in facts] == [
        ("INV-88213", "identifier", 2), ("49.00", "money", 2)]
    assert [f.text for f in facts] == ["Invoice number is INV-88213", "Amount is 49.00"]
    # the date nobody restated is not proposed, and neither is the status word
    assert not any(f.value in ("2025-03-01", "paid") for f in facts)


def test_a_tool_value_nobody_relies_on_is_not_proposed():
    output = {"invoice": "INV-88213", "amount": "49.00", "refund": "RF-5521"}
    t = billing_with_tool("Refund issued; technical support will take it from here.", output)
    assert [f.value for f in propose_facts(t)] == ["ACCT-4471"]
    assert [f.value for f in propose_facts(t, carry_over=True)] == ["ACCT-4471", "ACCT-4471"]


def test_a_tool_value_passed_on_in_a_later_tool_call_counts_and_json_strings_are_read():
    # LangGraph / AutoGen keep the tool's JSON as a string, sometimes wrapped
    output = {"type": "tool", "data": {"content": '{"booking_reference": "QXBPTF", '
                                                  '"refund_issued": "RF-5521"}'}}
    t = billing_with_tool("", output, later_args={"reason": "refund RF-5521 issued"})
    t.turns[2] = AgentTurn("billing", "specialist", "Over to tech.", turn_index=3)
    facts = [f for f in propose_facts(t) if f.handoff_index == 1]
    assert [(f.value, f.source_turn_index) for f in facts] == [("RF-5521", 2)]


def test_the_arguments_that_went_into_the_call_are_no_reliance():
    # the account goes in and comes back out: nothing of the output was used
    output = {"account": "ACCT-9001", "plan": "Pro"}
    t = billing_with_tool("Done.", output, arguments={"account": "ACCT-9001"})
    assert "ACCT-9001" not in [f.value for f in propose_facts(t)]


def test_a_tool_value_relied_on_after_the_handoff_is_not_proposed_for_it():
    output = {"invoice": "INV-88213"}
    t = billing_with_tool("Nothing yet.", output)
    t.turns.append(AgentTurn("billing", "specialist", "It was INV-88213.", turn_index=5))
    t.handoffs.append(Handoff("billing", "tech", None, turn_index=6))
    by_handoff = {}
    for f in propose_facts(t, carry_over=True):
        by_handoff.setdefault(f.handoff_index, []).append(f.value)
    assert "INV-88213" not in by_handoff[1] and "INV-88213" in by_handoff[2]
    once = propose_facts(t, carry_over=False)
    assert [(f.handoff_index, f.value) for f in once if f.value == "INV-88213"] == [
        (2, "INV-88213")]


def test_json_agent_messages_are_still_no_words_but_feed_relied_values():
    t = billing_with_tool("Your invoice INV-55 is settled.", None)
    t.turns[1] = AgentTurn("billing", "specialist", '{"invoice": "INV-55", "due": "12.00"}',
                           turn_index=2)
    facts = [f for f in propose_facts(t) if f.handoff_index == 1]
    assert [(f.value, f.source_turn_index) for f in facts] == [("INV-55", 2)]


def test_a_delegate_s_result_counts_as_the_delegating_agent_s_words():
    from maev_kit.traces._model import UserMessage

    t = MultiAgentTrace(
        "d1", turns=[AgentTurn("lead", "manager", "A billing matter.", turn_index=1),
                     AgentTurn("billing", "specialist", "Refund RF-5521 issued in 3-5 business "
                               "days.", turn_index=3),
                     AgentTurn("lead", "manager", "Now the API.", turn_index=4)],
        handoffs=[Handoff("lead", "billing", None, turn_index=2, mode="delegate"),
                  Handoff("lead", "tech", None, turn_index=5, mode="delegate")],
        user_messages=[UserMessage("Account ACCT-4471 was charged twice.", 0)])
    facts = [f.value for f in propose_facts(t) if f.handoff_index == 1]
    assert facts == ["RF-5521", "3-5 business days"]
    t.handoffs[0].mode = "transfer"  # a transfer does not come back: billing's words stay its own
    assert [f.value for f in propose_facts(t) if f.handoff_index == 1] == []
