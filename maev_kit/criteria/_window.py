"""What a person and a judge see of a criterion item: the whole conversation (conversation and
agent scope) or the window around the handoff or turn asked about, each entry marked when it is
the unit in question.

One function serves the LLM prompt and the Labeler, so both show the same entries.
"""

from __future__ import annotations

from dataclasses import dataclass

from maev_kit.criteria._criterion import CriterionItem
from maev_kit.traces import Message
from maev_kit.traces.internal import conversation_view

__all__ = ["Entry", "focus_text", "window"]

#: Entries shown before a turn asked about (the conversation leading up to it).
TURN_CONTEXT = 12


@dataclass(frozen=True)
class Entry:
    """One entry of the view, with ``focus`` True for the unit the question is about."""

    message: Message
    focus: bool = False


def window(item: CriterionItem) -> list[Entry]:
    """The entries of ``item``'s view, in conversation order.

    Conversation scope: every entry. Agent scope: every entry, the agent's own marked (none
    for "which agent?", whose answers are the conversation's agents).
    Handoff scope: from the previous handoff (or the start) to the next handoff (or the end),
    the handoff marked. Turn scope: up to :data:`TURN_CONTEXT` entries before the turn, and the
    turn's own entries (its text, tool calls and results, its handoff), marked.

    >>> from maev_kit.criteria import Criterion
    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "hi", turn_index=0),
    ...     AgentTurn("b", "r", "b here", turn_index=2)],
    ...     handoffs=[Handoff("a", "b", turn_index=1)])
    >>> it = Criterion("x", scope="handoff", labels=("y", "n"), question="?").items([t])[0]
    >>> [(e.message.kind, e.focus) for e in window(it)]
    [('text', False), ('handoff', True), ('text', False)]
    """
    trace = item.trace
    view = conversation_view(trace)
    if item.scope == "agent" and item.agent is not None:
        return [Entry(m, not m.is_user and m.speaker == item.agent) for m in view]
    if item.scope == "handoff" and item.handoff_index is not None:
        return _handoff_window(item, view)
    if item.scope == "turn" and item.turn_index is not None:
        turn = trace.turns[item.turn_index]
        mine = [i for i, m in enumerate(view) if m.turn_index == turn.turn_index
                and not m.is_user and m.speaker == turn.agent_id]
        if not mine:
            return [Entry(m) for m in view]
        start = max(0, mine[0] - TURN_CONTEXT)
        return [Entry(view[i], i in mine) for i in range(start, mine[-1] + 1)]
    return [Entry(m) for m in view]


def _handoff_window(item: CriterionItem, view: list[Message]) -> list[Entry]:
    """From the previous handoff's entry (exclusive) to the next one's (inclusive)."""
    handoffs = item.trace.handoffs
    assert item.handoff_index is not None
    h = handoffs[item.handoff_index]
    at = [i for i, m in enumerate(view) if m.kind == "handoff"]
    # the view's handoff entries, in order, are the trace's handoffs in timeline order
    order = sorted(range(len(handoffs)), key=lambda k: handoffs[k].turn_index)
    rank = order.index(item.handoff_index)
    if len(at) != len(handoffs):  # a view that shows handoffs differently: by turn index
        lo = max((x.turn_index for x in handoffs if x.turn_index < h.turn_index), default=-1)
        hi = min((x.turn_index for x in handoffs if x.turn_index > h.turn_index), default=None)
        return [Entry(m, m.kind == "handoff" and m.turn_index == h.turn_index) for m in view
                if m.turn_index > lo and (hi is None or m.turn_index <= hi)]
    start = at[rank - 1] + 1 if rank > 0 else 0
    end = at[rank + 1] + 1 if rank + 1 < len(at) else len(view)
    return [Entry(view[i], i == at[rank]) for i in range(start, end)]


def focus_text(item: CriterionItem) -> str:
    """What the question is about, in words: "the whole conversation", "the handoff from
    triage to billing (marked focus)", "the turn of billing (marked focus)", "agent billing"."""
    if item.scope == "handoff" and item.handoff_index is not None:
        h = item.trace.handoffs[item.handoff_index]
        return (f"the handoff from {h.from_agent} to {h.to_agent} (the entry marked "
                '"focus": true), judged on what happens around it')
    if item.scope == "turn" and item.turn_index is not None:
        t = item.trace.turns[item.turn_index]
        return f'the turn of agent {t.agent_id} (the entries marked "focus": true)'
    if item.scope == "agent" and item.agent is not None:
        return f'agent {item.agent} (its entries are marked "focus": true)'
    return "the whole conversation"  # also "which agent?" (answers: the conversation's agents)
