"""detect_circular_handoffs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit import Handoff, MultiAgentTrace, detect_circular_handoffs


def trace(*pairs: str, start: int = 1) -> MultiAgentTrace:
    """trace("a>b", "b>c") with turn indices start, start+2, ..."""
    hs = [Handoff(*p.split(">"), turn_index=start + 2 * i) for i, p in enumerate(pairs)]
    return MultiAgentTrace("c", handoffs=hs)


def test_no_handoffs():
    r = detect_circular_handoffs(MultiAgentTrace("c-0"))
    assert r.to_dict() == {"conversation_id": "c-0", "loops": [], "has_loops": False,
                           "total_handoffs": 0, "max_handoffs": 5, "exceeds_limit": False,
                           "should_escalate": False}


def test_one_round_trip_is_not_a_loop():
    r = detect_circular_handoffs(trace("triage>billing", "billing>triage"))
    assert r["loops"] == [] and not r["should_escalate"]


def test_ping_pong():
    r = detect_circular_handoffs(trace("triage>billing", "billing>tech", "tech>billing",
                                       "billing>tech"))
    assert r["loops"] == [{"kind": "ping_pong", "agents": ["billing", "tech"],
                           "turn_indices": [3, 5, 7], "handoff_indices": [1, 2, 3]}]
    assert r["has_loops"] and r["should_escalate"] and not r["exceeds_limit"]


def test_ping_pong_with_other_handoffs_between():
    r = detect_circular_handoffs(trace("triage>billing", "billing>triage", "triage>tech",
                                       "tech>triage", "triage>billing"))
    assert [(lp["kind"], lp["agents"], lp["handoff_indices"]) for lp in r["loops"]] == [
        ("ping_pong", ["triage", "billing"], [0, 1, 4])]


def test_same_direction_repeated_is_not_ping_pong():
    r = detect_circular_handoffs(trace("a>b", "a>b", "a>b"))
    assert r["loops"] == []


def test_three_agent_cycle():
    r = detect_circular_handoffs(trace("a>b", "b>c", "c>a"))
    assert r["loops"] == [{"kind": "cycle", "agents": ["a", "b", "c"],
                           "turn_indices": [1, 3, 5], "handoff_indices": [0, 1, 2]}]
    assert r["should_escalate"]


def test_cycle_entered_later_and_repeated_is_reported_once():
    r = detect_circular_handoffs(trace("triage>a", "a>b", "b>c", "c>a", "a>b", "b>c", "c>a"),
                                 max_handoffs=10)
    cycles = [lp for lp in r["loops"] if lp["kind"] == "cycle"]
    assert cycles == [{"kind": "cycle", "agents": ["a", "b", "c"],
                       "turn_indices": [3, 5, 7, 9, 11, 13],
                       "handoff_indices": [1, 2, 3, 4, 5, 6]}]


def test_four_agent_cycle_inside_a_longer_chain():
    r = detect_circular_handoffs(trace("a>b", "b>c", "c>d", "d>e", "e>b"))
    assert r["loops"] == [{"kind": "cycle", "agents": ["b", "c", "d", "e"],
                           "turn_indices": [3, 5, 7, 9], "handoff_indices": [1, 2, 3, 4]}]


def test_returning_the_way_it_came_is_no_cycle():
    r = detect_circular_handoffs(trace("a>b", "b>c", "c>b", "b>a"))
    assert r["loops"] == []


def test_broken_chain_is_no_cycle():
    # d>a starts at d, not where the chain a>b>c ended, so nothing closes
    r = detect_circular_handoffs(trace("a>b", "b>c", "d>a"))
    assert r["loops"] == []


def test_exceeds_limit_alone_escalates():
    r = detect_circular_handoffs(trace("a>b", "b>c", "c>d", "d>e"), max_handoffs=3)
    assert r["loops"] == [] and r["exceeds_limit"] and r["should_escalate"]
    assert not detect_circular_handoffs(trace("a>b", "b>c", "c>d"), max_handoffs=3)["exceeds_limit"]


def test_both_kinds_sorted_by_first_handoff():
    r = detect_circular_handoffs(trace("x>y", "a>b", "b>c", "c>a", "y>x", "x>y"), max_handoffs=10)
    assert [(lp["kind"], lp["agents"]) for lp in r["loops"]] == [
        ("ping_pong", ["x", "y"]), ("cycle", ["a", "b", "c"])]


@pytest.mark.parametrize("bad", [-1, 2.5, True, "5"])
def test_rejects_bad_max_handoffs(bad):
    with pytest.raises(ValueError, match="`max_handoffs`"):
        detect_circular_handoffs(trace("a>b"), max_handoffs=bad)


def test_rejects_non_trace():
    with pytest.raises(TypeError, match="`trace` must be a MultiAgentTrace"):
        detect_circular_handoffs([Handoff("a", "b")])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd")), max_size=12),
       st.integers(0, 8))
def test_report_is_consistent(pairs, limit):
    t = MultiAgentTrace("c", handoffs=[Handoff(f, to, turn_index=i) for i, (f, to) in
                                       enumerate(pairs)])
    r = detect_circular_handoffs(t, max_handoffs=limit)
    assert r["exceeds_limit"] == (len(pairs) > limit)
    assert r["should_escalate"] == (r["has_loops"] or r["exceeds_limit"])
    for lp in r["loops"]:
        assert len(lp["turn_indices"]) == len(lp["handoff_indices"]) >= (
            3 if lp["kind"] == "ping_pong" else len(lp["agents"]))
        assert len(set(lp["agents"])) == len(lp["agents"]) >= (2 if lp["kind"] == "ping_pong" else 3)
        for i in lp["handoff_indices"]:
            h = t.handoffs[i]
            assert h.from_agent in lp["agents"] and h.to_agent in lp["agents"]
