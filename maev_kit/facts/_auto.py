"""The ``"auto"`` key facts: the one default of ``maev init-set``, ``maev score``, ``maev report``
and ``evaluate`` (docs/facts.md)."""

from __future__ import annotations

from collections.abc import Sequence

from maev_kit.facts._model import ProposedFact
from maev_kit.facts._propose import FactNote, first_statements, propose_facts
from maev_kit.retention import silent_receivers
from maev_kit.traces import MultiAgentTrace

__all__ = ["AUTO", "auto_facts"]

#: How the ``"auto"`` facts are made, as messages and the set's README say it.
AUTO = "auto (context_passed where a handoff passes context, else the offline proposer)"


def auto_facts(rest: Sequence[MultiAgentTrace]) -> tuple[list[ProposedFact], list[FactNote]]:
    """The ``"auto"`` facts of conversations with no key fact of their own: handoff by handoff,
    one fact per ``context_passed`` value when the handoff passes context, else the offline
    proposer's — also at a handoff whose receiver is silent
    (:func:`maev_kit.retention.receiver_silent`: it is judged on what it handed over) — and
    the proposer's notes (where nothing was proposed).

    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", [
    ...     AgentTurn("triage", "router", "Passing you on.", turn_index=1),
    ...     AgentTurn("billing", "billing", "Account ACCT-1 fixed.", turn_index=3)],
    ...                     [Handoff("triage", "billing", None, {"account": "ACCT-1"}, 2)])
    >>> facts, notes = auto_facts([t])
    >>> [(f.proposer, f.value) for f in facts]
    [('context', 'ACCT-1')]
    """
    # a handoff to a silent receiver (no entry in its judged window) is judged on what it handed over
    # (its context among it): facts taken from that context would be judged against themselves,
    # so the offline proposer's facts (what was said before it) are judged there instead
    silent = {(t.conversation_id, i) for t in rest for i in silent_receivers(t)}
    ctx = [f for f in propose_facts(rest, method="context")
           if (f.conversation_id, f.handoff_index) not in silent]
    filled = {(f.conversation_id, f.handoff_index) for f in ctx}
    # the offline proposer for the handoffs without context: a trace whose every handoff
    # has some is left out (the proposer works trace by trace, and all it would propose
    # or note for it is dropped below)
    # (with every value at each handoff, so a value said before a handoff the context
    # filled is proposed at the next one without; then each fact once)
    off = propose_facts([t for t in rest if not t.handoffs or any(
        (t.conversation_id, i) not in filled for i in range(len(t.handoffs)))],
        method="offline", carry_over=True)
    proposed = first_statements([*ctx, *(f for f in off if (f.conversation_id,
                                                            f.handoff_index) not in filled)],
                                rest)
    convs = {cid for cid, _ in filled}
    notes = [n for n in off.notes if (n.conversation_id, n.handoff_index) not in filled
             and not (n.handoff_index is None and n.conversation_id in convs)]
    return proposed, notes
