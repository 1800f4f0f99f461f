"""A value the user changes themselves supersedes the fact: later hops are judged against the
new value, the ledger says where it changed; an agent changing a value the user never changed
is still a contradiction."""

from __future__ import annotations

import pandas as pd

from maev_kit import AgentTurn, Handoff, MultiAgentTrace, UserMessage
from maev_kit.evaluation import evaluate


def _trip(cid: str, *, user_change: bool, third_says: str) -> MultiAgentTrace:
    users = [UserMessage("Book me on the Lisbon flight, departure time 19:10 please.", 0)]
    if user_change:
        users.append(UserMessage("Actually, please make it 20:30 instead.", 3))
    else:
        users.append(UserMessage("Thanks, and I need a hotel too.", 3))
    return MultiAgentTrace(cid, user_messages=users, turns=[
        AgentTurn("triage", "router", "Passing you to flights.", turn_index=1),
        AgentTurn("flights", "specialist", "Departure time 19:10 noted for Lisbon.",
                  turn_index=2),
        AgentTurn("flights", "specialist", "Passing you to hotels.", turn_index=4),
        AgentTurn("hotels", "specialist", third_says, turn_index=6)],
        handoffs=[Handoff("triage", "flights", None, turn_index=1),
                  Handoff("flights", "hotels", None, turn_index=5)])


def _ledger(trace):
    result = evaluate([trace], judge="heuristic", facts="offline", progress=False)
    led = result.ledger
    return led[led["fact"].str.contains("19:10|20:30")].sort_values("hop")


def test_a_user_made_change_supersedes_the_fact_at_later_hops():
    led = _ledger(_trip("c1", user_change=True,
                        third_says="I have you on the 20:30 flight; here is a hotel near the airport."))
    assert list(led["hop"]) == [0, 1]
    first, second = led.iloc[0], led.iloc[1]
    assert "19:10" in first["fact"] and pd.isna(first["changed_at"])
    assert "20:30" in second["fact"] and int(second["changed_at"]) == 3
    assert second["fact_key"] == first["fact_key"]  # one fact, superseded
    assert second["label"] == "retained"  # judged against the new value


def test_an_agent_that_replaces_a_value_the_user_never_changed_contradicts_it():
    led = _ledger(_trip("c2", user_change=False,
                        third_says="I have you on the 20:30 flight; here is a hotel near the airport."))
    assert list(led["hop"]) == [0, 1] and led["changed_at"].isna().all()
    assert "19:10" in led.iloc[1]["fact"] and led.iloc[1]["label"] == "contradicted"
