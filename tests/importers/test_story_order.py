"""Every shared sample tells the same story: the imports agree on order and kind.

Each sample is projected onto the sequence of what happened — ``user``, a tool ``call`` (agent,
tool; hand-off tools ``transfer_to_*`` / "Delegate work to coworker" read as ``HANDOFF_TOOL``)
and a ``handoff`` (from, to) — in timeline order, and compared with the story: the hand-off tool
call comes before the handoff it caused, in the turn of the agent that made it; the tool calls
``lookup_invoices`` and ``lift_api_suspension`` sit between the right handoffs and carry their
outputs; no agent turn says a tool's output; ``context_passed`` is the hand-off tool's
arguments. Where an export lacks a part of the story, its row says what and why.
"""

from __future__ import annotations

import pytest
from importers.importer_samples import SKIP_REASON, sample_files

from maev_kit.traces import AgentTurn, Handoff, UserMessage
from maev_kit.traces.importers import import_traces
from maev_kit.traces.importers._common import parse_jsonish, slug, transfer_target

HANDOFF_TOOL = "<handoff tool>"
USER = ("user",)


def call(agent: str, tool: str) -> tuple[str, str, str]:
    return ("call", agent, tool)


def handoff(frm: str, to: str) -> tuple[str, str, str]:
    return ("handoff", frm, to)


SWARM = [USER,
         call("triage", HANDOFF_TOOL), handoff("triage", "billing"),
         call("billing", "lookup_invoices"),
         call("billing", HANDOFF_TOOL), handoff("billing", "technical"),
         call("technical", "lift_api_suspension")]
CREW = [USER,
        call("triage", HANDOFF_TOOL), handoff("triage", "billing"),
        call("billing", "lookup_invoices"),
        call("triage", HANDOFF_TOOL), handoff("triage", "technical"),
        call("technical", "lift_api_suspension")]
# Responses-API spans hold only response ids: no user input, no model tool calls (the hand-off
# tools are model calls); function spans still give the tools with their outputs
RESPONSES_SPANS = [handoff("triage", "billing"), call("billing", "lookup_invoices"),
                   handoff("billing", "technical"), call("technical", "lift_api_suspension")]
# input_filter=remove_all_tools: run items lose billing's transfer call (the run state keeps it
# in model_responses)
FILTERED_ITEMS = [x for i, x in enumerate(SWARM) if i != 4]
# OpenInference's CrewAI instrumentation has no spans of the delegated agents
CREW_LEAD_ONLY = [USER, call("triage", HANDOFF_TOOL), handoff("triage", "billing"),
                  call("triage", HANDOFF_TOOL), handoff("triage", "technical")]

STORY = {
    "openai_agents_real/openai_agents_responses_nofilter_spans.json": RESPONSES_SPANS,
    "openai_agents_real/openai_agents_responses_nofilter_ingest_payload.json": RESPONSES_SPANS,
    "openai_agents_real/openai_agents_chat_run_items.json": FILTERED_ITEMS,
    "crewai_events.json": CREW,
    "crewai_real/crewai_events.json": CREW,
    "crewai_real/otlp_openinference_crewai.json": CREW_LEAD_ONLY,
}
THIRD_PARTY = "third_party/"  # single spans of another story: not checked here

FILES = [f for f in sample_files() if not f.startswith(THIRD_PARTY)] or [
    pytest.param("<absent>", marks=pytest.mark.skip(reason=SKIP_REASON))]


def role(agent: str) -> str:
    low = agent.lower()
    return next((r for r in ("triage", "billing", "technical") if r in low), agent)


def is_handoff_tool(name: str) -> bool:
    return bool(transfer_target(name)) or slug(name) in (
        "delegate_work_to_coworker", "ask_question_to_coworker")


def story_of(trace) -> list[tuple[str, ...]]:
    """The trace as (kind, agent, tool) / (kind, from, to) in timeline order."""
    out: list[tuple[str, ...]] = []
    for e in trace.timeline():
        if isinstance(e, UserMessage):
            out.append(USER)
        elif isinstance(e, AgentTurn):
            for c in e.tool_calls:
                out.append(call(role(e.agent_id),
                                HANDOFF_TOOL if is_handoff_tool(c["name"]) else c["name"]))
        elif isinstance(e, Handoff):
            out.append(handoff(role(e.from_agent), role(e.to_agent)))
    return out


@pytest.mark.parametrize("rel", FILES)
def test_sample_follows_the_story(rel, samples):
    traces, _ = import_traces(samples / rel)
    [t] = traces
    assert story_of(t) == STORY.get(rel, SWARM)

    turns = sorted(t.turns, key=lambda x: x.turn_index)
    for turn in turns:
        # no agent turn is a tool's output said by the agent
        assert not isinstance(parse_jsonish(turn.message), (dict, list)), (turn.turn_index,
                                                                            turn.message[:80])
        for c in turn.tool_calls:
            if c["name"] in ("lookup_invoices", "lift_api_suspension"):
                # the result is the call's output, unwrapped to the tool's JSON
                assert isinstance(c.get("output"), dict), (c["name"], c.get("output"))
                assert c["output"].get("type") != "tool", c["output"]
    # each handoff's tool call: in the from-agent's turn just before it, its arguments the context
    for h in t.handoffs:
        before = [x for x in turns if x.turn_index < h.turn_index]
        made = [c for c in (before[-1].tool_calls if before else [])
                if is_handoff_tool(c["name"])]
        if not made:  # the export lacks the call (rows above): nothing to compare
            continue
        assert role(before[-1].agent_id) == role(h.from_agent)
        args = made[-1].get("arguments")
        if isinstance(args, dict):
            expected = {k: v for k, v in args.items()
                        if k != "coworker" and v not in (None, "")}
            assert h.context_passed == expected, (h, args)
