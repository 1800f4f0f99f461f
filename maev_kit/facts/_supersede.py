"""Facts the user changed: a value superseded at a turn, judged anew from the next handoff on."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic-backed: imported where used (``import maev_kit.facts`` stays light)
    from maev_kit.expectations import ConversationExpectations, KeyFact
    from maev_kit.traces import MultiAgentTrace

__all__ = ["supersede_user_changes"]


def supersede_user_changes(traces: Sequence[MultiAgentTrace],
                           expectations: Mapping[str, ConversationExpectations]
                           ) -> dict[str, ConversationExpectations]:
    """The expectations with each user-made change recorded: when the user changes a key
    fact's value themselves after a handoff it was judged at ("actually, move the departure
    to 20:30"), the fact is listed again at the next handoff under its own id with the new value
    and ``changed_at`` = the user's turn, so from there on it is judged against the new value
    (:func:`~maev_kit.retention.fact_hops`: a listing under an earlier fact's id replaces it).
    An agent that replaces a value the user never changed is still a contradiction.

    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> from maev_kit.expectations import ConversationExpectations, KeyFact
    >>> t = MultiAgentTrace("c", user_messages=[
    ...     "Departure is at 19:10.", "Actually, please move my departure to 20:30."],
    ...     turns=[AgentTurn("a", "", "ok", turn_index=1), AgentTurn("b", "", "ok", turn_index=3)],
    ...     handoffs=[Handoff("a", "b", None, turn_index=1), Handoff("b", "c", None, turn_index=4)])
    >>> t.user_messages[1].turn_index = 3
    >>> exp = {"c": ConversationExpectations("c", key_facts=[
    ...     KeyFact("f1", 0, "Departure time is 19:10")])}
    >>> [(f.handoff_index, f.text, f.changed_at)
    ...  for f in supersede_user_changes([t], exp)["c"].key_facts]
    [(0, 'Departure time is 19:10', None), (1, 'Departure time is 20:30', 3)]
    """
    out = dict(expectations)
    for trace in traces:
        exp = expectations.get(trace.conversation_id)
        if exp is None or not exp.key_facts or len(trace.handoffs) < 2:
            continue
        added = _changes(trace, exp.key_facts)
        if added:
            # the new value, proposed again as a fact of its own at that handoff, is the
            # superseding fact: listed once
            kept = [f for f in exp.key_facts if not any(
                f.handoff_index == a.handoff_index and f.fact_id != a.fact_id
                and _mentions(f.text, value) for a, value in added)]
            out[trace.conversation_id] = dataclasses.replace(
                exp, key_facts=[*kept, *(a for a, _ in added)])
    return out


def _mentions(text: str, value: str) -> bool:
    """Does ``text`` state ``value`` as a whole token (``20:30`` in "Time is 20:30")?"""
    return re.search(rf"(?<![\w:.-]){re.escape(value)}(?![\w:-]|\.\w)", text, re.I) is not None


def _changes(trace: MultiAgentTrace, facts: Sequence[KeyFact]) -> list[tuple[KeyFact, str]]:
    """The listings that record the user's changes of ``facts`` (each change once), each with
    the new value."""
    from maev_kit.expectations import KeyFact
    from maev_kit.judges import changed_value
    from maev_kit.retention import hop_order

    order = hop_order(trace)
    at = {hi: trace.handoffs[hi].turn_index for hi in order}
    said = [(m.turn_index, m.content) for m in trace.messages(tools=False) if m.is_user]
    listed = {(f.fact_id, f.handoff_index) for f in facts}
    added: list[tuple[KeyFact, str]] = []
    for f in facts:
        if f.derived or f.changed_at is not None:
            continue
        text, since = f.text, at[f.handoff_index]
        for turn, content in said:
            if turn <= since:
                continue
            change = changed_value(text, content, slot=f.slot or "")
            nxt = next((hi for hi in order if at[hi] >= turn and at[hi] > since), None)
            if change is None or nxt is None or (f.fact_id, nxt) in listed:
                continue
            old, new = change
            text = text.replace(old, new, 1) if old in text else f"{text} (now {new})"
            added.append((KeyFact(f.fact_id, nxt, text, slot=f.slot, changed_at=turn), new))
            listed.add((f.fact_id, nxt))
            since = at[nxt]
    return added
