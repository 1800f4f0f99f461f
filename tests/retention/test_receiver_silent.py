"""One definition of a silent receiver (``retention.receiver_silent``), shared by the retention
items and the ``"auto"`` key facts."""

from maev_kit.facts._auto import auto_facts
from maev_kit.retention import build_retention_items, receiver_silent
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace


def _bounce() -> MultiAgentTrace:
    # billing speaks after the first handoff, hands back, and is handed the case again at the
    # end but never speaks after that: it is in the trace, yet silent at the second hop
    return MultiAgentTrace(
        "c1", user_messages=["My booking is BK-1234, please refund it."],
        turns=[AgentTurn("triage", "agent", "Passing you to billing.", turn_index=1),
               AgentTurn("billing", "agent", "I see BK-1234; back to triage.", turn_index=3),
               AgentTurn("triage", "agent", "Billing again, please.", turn_index=5)],
        handoffs=[Handoff("triage", "billing", None, {"booking": "BK-1234"}, turn_index=2),
                  Handoff("billing", "triage", None, {}, turn_index=4),
                  Handoff("triage", "billing", None, {"refund": "RF-77"}, turn_index=6)])


def test_a_receiver_that_spoke_earlier_but_not_after_this_handoff_is_silent():
    t = _bounce()
    assert [receiver_silent(t, i) for i in range(3)] == [False, False, True]


def test_the_window_decides_whether_a_receiver_is_silent():
    t = MultiAgentTrace(
        "c2", user_messages=["Ref BK-9"],
        turns=[AgentTurn("a", "agent", "To b.", turn_index=1),
               AgentTurn("a", "agent", "One more note from a.", turn_index=3),
               AgentTurn("b", "agent", "BK-9 done.", turn_index=4)],
        handoffs=[Handoff("a", "b", None, {"ref": "BK-9"}, turn_index=2)])
    assert receiver_silent(t, 0) is False
    assert receiver_silent(t, 0, window=1) is True  # b's entry is past the first one


def test_retention_items_and_auto_facts_agree_on_the_silent_handoff():
    t = _bounce()
    facts, _ = auto_facts([t])
    # the context facts are kept where the receiver speaks, and left out where it is silent
    # (they would be judged against the very context they came from)
    by_hop = {}
    for f in facts:
        by_hop.setdefault(f.handoff_index, set()).add(f.proposer)
    assert by_hop[0] == {"context"}
    assert "context" not in by_hop.get(2, set())
    assert not [f for f in facts if f.value == "RF-77"]
    exp = [{"conversation_id": "c1", "key_facts": [
        {"fact_id": "f1", "handoff_index": 0, "text": "Booking is BK-1234"}]}]
    items = {i.handoff_index: i for i in build_retention_items([t], exp)}
    assert {hi: it.receiver_silent for hi, it in items.items()} == {
        hi: receiver_silent(t, hi) for hi in items}
    assert items[2].receiver_silent and not items[0].receiver_silent
