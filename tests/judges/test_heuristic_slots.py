"""Values with a slot: the offline judge calls a fact contradicted only when the receiver gives a
different value for the same slot; a value of the same kind about another thing (a hotel's
check-in time against a departure time) is no evidence either way."""

from __future__ import annotations

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.judges import HeuristicJudge
from maev_kit.retention import build_retention_items

USER = "We fly out on May 20, departure is at 19:10, and I need a hotel near the airport."


def _label(receiver_says: str, fact: str, *, slot: str | None = None,
           tool_args: dict | None = None) -> str:
    calls = [{"name": "book_hotel", "arguments": tool_args}] if tool_args else []
    t = MultiAgentTrace("c", user_messages=[USER],
                        turns=[AgentTurn("triage", "router", "Passing you to travel.",
                                         turn_index=1),
                               AgentTurn("hotel", "specialist", receiver_says, calls,
                                         turn_index=3)],
                        handoffs=[Handoff("triage", "hotel", None, turn_index=2)])
    kf = {"fact_id": "f1", "handoff_index": 0, "text": fact} | ({"slot": slot} if slot else {})
    items = build_retention_items([t], [{"conversation_id": "c", "key_facts": [kf]}])
    return HeuristicJudge().judge(items[0]).label


@pytest.mark.parametrize("says", ["Check-in time is 15:00 at the Grand Hotel.",
                                  "Hotel check-in is at 15:00.",
                                  "Your room is ready for check-in at 15:00 on arrival."])
def test_a_time_for_another_slot_is_no_contradiction(says):
    assert _label(says, "Departure time is 19:10") == "lost"
    assert _label(says, "Time is 19:10") == "lost"  # a fact naming no slot: no evidence either


@pytest.mark.parametrize("says", ["Your departure is at 20:30, right?",
                                  "Noted: your flight leaves at 20:30."])
def test_a_changed_departure_time_is_a_contradiction(says):
    assert _label(says, "Departure time is 19:10") == "contradicted"


def test_the_fact_slot_field_names_the_slot_when_the_text_does_not():
    says = "Your flight leaves at 20:30."
    assert _label(says, "Time is 19:10") == "lost"
    assert _label(says, "Time is 19:10", slot="departure time") == "contradicted"


def test_a_tool_argument_is_keyed_by_its_name():
    fact = "Departure time is 19:10"
    assert _label("Booked.", fact, tool_args={"checkin_time": "15:00"}) == "lost"
    assert _label("Booked.", fact, tool_args={"departure_time": "20:30"}) == "contradicted"
    assert _label("Booked.", fact, tool_args={"departure_time": "19:10"}) == "retained"


def test_both_values_in_their_slots_retain_the_fact():
    says = "Your flight departs at 19:10 and check-in is at 15:00."
    assert _label(says, "Departure time is 19:10") == "retained"
