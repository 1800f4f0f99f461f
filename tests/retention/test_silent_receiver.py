"""A handoff to a receiver that is not in the trace (a person taking over, an agent whose side
was not recorded) is judged on what was handed over; with nothing handed over it is not
applicable: no item, counted by ``unjudged_handoffs`` and by ``evaluate``."""

from __future__ import annotations

import math

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.evaluation import evaluate
from maev_kit.judges import HeuristicJudge
from maev_kit.retention import build_retention_items, unjudged_handoffs

SUMMARY = "User wants to cancel reservation BK-771 for 2 passengers and get a refund."


def _escalation(cid: str, *, summary: str | None, text: str = "") -> MultiAgentTrace:
    call = {"name": "transfer_to_human_agents",
            "arguments": {"summary": summary} if summary is not None else {}}
    return MultiAgentTrace(
        cid,
        user_messages=["Hi, I want to cancel booking BK-771. We are 2 passengers, departure "
                       "is at 19:10 on May 20."],
        turns=[AgentTurn("airline_agent", "agent", "",
                         [{"name": "get_reservation_details",
                           "arguments": {"reservation_id": "BK-771"},
                           "output": {"reservation_id": "BK-771", "passengers": 2}}],
                         turn_index=1),
               AgentTurn("airline_agent", "agent", text, [call], turn_index=2)],
        handoffs=[Handoff("airline_agent", "human_agent", "escalation",
                          {"summary": summary} if summary is not None else {},
                          turn_index=2)])


FACTS = [("f1", "Booking reference is BK-771"), ("f2", "Passenger count is 2 passengers"),
         ("f3", "Departure time is 19:10")]


def _exp(cid: str) -> dict:
    return {"conversation_id": cid, "key_facts": [
        {"fact_id": fid, "handoff_index": 0, "text": text} for fid, text in FACTS]}


def test_a_summary_handed_to_a_person_is_judged_on_what_it_carries():
    trace = _escalation("c1", summary=SUMMARY)
    items = build_retention_items([trace], [_exp("c1")])
    assert [it.receiver_silent for it in items] == [True, True, True]
    # what was handed over: the tool call and the handoff's context, not the lookup before it
    assert all(m.kind in ("tool_call", "handoff", "text") for it in items for m in it.payload)
    assert not any("get_reservation_details" in m.content for m in items[0].payload)
    verdicts = {v.item_id: v for v in HeuristicJudge().judge_items(items)}
    assert verdicts["c1/h0/f1"].label == "retained"
    assert verdicts["c1/h0/f2"].label == "retained"
    assert verdicts["c1/h0/f3"].label == "lost"
    assert "not in the trace" in verdicts["c1/h0/f1"].rationale
    span = verdicts["c1/h0/f1"].span
    assert span is not None and span.text == "BK-771"
    assert span.kind in ("tool_call", "handoff") and "summary" in span.field


def test_a_changed_value_in_what_was_handed_over_is_a_contradiction():
    trace = _escalation("c2", summary="Cancel reservation BK-779 for 2 passengers.")
    items = build_retention_items([trace], [_exp("c2")])
    labels = {v.item_id: v.label for v in HeuristicJudge().judge_items(items)}
    assert labels["c2/h0/f1"] == "contradicted"


def test_the_handing_over_message_counts_as_payload():
    trace = _escalation("c3", summary=None,
                        text="I'm transferring you to a person about booking BK-771.")
    items = build_retention_items([trace], [_exp("c3")])
    assert [m.kind for m in items[0].payload] == ["text"]
    labels = {v.item_id: v.label for v in HeuristicJudge().judge_items(items)}
    assert labels["c3/h0/f1"] == "retained" and labels["c3/h0/f3"] == "lost"


def test_nothing_handed_over_is_not_applicable_and_counted():
    silent = _escalation("c4", summary=None)
    assert build_retention_items([silent], [_exp("c4")]) == []
    un = unjudged_handoffs([silent], [_exp("c4")])
    assert [(u.conversation_id, u.handoff_index, u.to_agent, u.n_facts) for u in un] == [
        ("c4", 0, "human_agent", 3)]
    with pytest.warns(Warning):
        result = evaluate([silent, _escalation("c1", summary=SUMMARY)],
                          expectations=[_exp("c4"), _exp("c1")], judge="heuristic",
                          progress=False)
    rows = result.per_conversation.set_index("conversation_id")
    assert rows.loc["c4", "n_facts"] == 0
    assert math.isnan(rows.loc["c4", "information_retention"])
    assert rows.loc["c1", "retained"] == 2
    assert result.provenance["unjudged_handoffs"] == {"handoffs": 1, "facts": 3}
    note = result.aggregates.set_index("metric").loc["retention_rate", "note"]
    assert "1 handoff to a receiver that is not in the trace and carries nothing" in note


def test_a_receiver_that_speaks_is_not_silent():
    trace = _escalation("c5", summary=SUMMARY)
    trace.turns.append(AgentTurn("human_agent", "agent", "Hello, I see BK-771.", turn_index=3))
    items = build_retention_items([trace], [_exp("c5")])
    assert not any(it.receiver_silent for it in items)


def test_the_llm_prompt_v4_shows_what_was_handed_over_and_v3_is_unchanged():
    from maev_kit.judges import RetentionJudge

    items = build_retention_items([_escalation("c6", summary=SUMMARY)], [_exp("c6")])
    v4 = RetentionJudge("v4").build_messages(items)[1]["content"]
    assert '"receiver_in_trace": false' in v4 and '"role": "handed over"' in v4
    assert "BK-771 for 2 passengers" in v4
    assert "get_reservation_details" not in v4.split("<<<MESSAGES")[1]
    v3 = RetentionJudge("v3").build_messages(items)[1]["content"]
    assert "receiver_in_trace" not in v3 and "handed over" not in v3
    # a reply's evidence entry number points into what v4 showed: the tool call's summary
    reply = ('{"F1": {"status": "retained", "reason": "in the summary", '
             '"evidence": {"n": 1, "quote": "BK-771"}}, "F2": {"status": "retained", '
             '"reason": "x", "evidence": null}, "F3": {"status": "lost", "reason": "x", '
             '"evidence": null}}')
    verdicts = RetentionJudge("v4").parse(reply, items)
    assert verdicts[0].span is not None and verdicts[0].span.field == "arguments.summary"


def test_the_views_say_the_receiver_is_not_in_the_trace():
    from maev_kit.rendering._trace import SILENT_RECEIVER_NOTE, item_html, trace_html

    trace = _escalation("c7", summary=SUMMARY)
    items = build_retention_items([trace], [_exp("c7")])
    html = item_html(items[0])
    assert SILENT_RECEIVER_NOTE in html
    handed = html.split(SILENT_RECEIVER_NOTE)[1]
    assert "transfer_to_human_agents" in handed and "get_reservation_details" not in handed
    assert "receiver not in this trace" in trace_html(trace)
    speaking = _escalation("c8", summary=SUMMARY)
    speaking.turns.append(AgentTurn("human_agent", "agent", "Hi, BK-771 here.", turn_index=3))
    assert "receiver not in this trace" not in trace_html(speaking)
    assert SILENT_RECEIVER_NOTE not in item_html(build_retention_items([speaking],
                                                                       [_exp("c8")])[0])
