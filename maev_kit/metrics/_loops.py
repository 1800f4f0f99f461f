"""Circular handoffs: agents passing the user back and forth, or round in a cycle."""

from __future__ import annotations

from operator import itemgetter

from maev_kit.metrics._reports import (
    CircularHandoff,
    LoopReport,
    new_circular_handoff,
    new_loop_report,
)
from maev_kit.traces import Handoff, MultiAgentTrace

__all__ = ["detect_circular_handoffs"]


def detect_circular_handoffs(trace: MultiAgentTrace, *, max_handoffs: int = 5) -> LoopReport:
    """Find handoff loops in one conversation and say whether to escalate to a human.

    Three coordination failures are looked for, in the order of the trace's handoffs:

    - **ping-pong**: the same two agents handing off to each other more than once, e.g.
      A→B, B→A, A→B. One round trip (A→B, B→A: an escalation that comes back) is normal; the
      pair is reported once it has handoffs in both directions and more than two in all.
    - **cycle**: a chain of handoffs through three or more agents that comes back to where it
      started, e.g. A→B, B→C, C→A. A chain is consecutive handoffs where each starts at the
      agent the previous one went to. A cycle that repeats is reported once, with the turn
      indices of every pass. A chain that only returns the way it came (A→B, B→C, C→B, B→A)
      is no cycle.
    - **too many handoffs**: more than ``max_handoffs`` in the conversation (typically 3–5).

    Parameters
    ----------
    trace : MultiAgentTrace
    max_handoffs : int, default 5
        The most handoffs a conversation may make before it ``exceeds_limit``.

    Returns
    -------
    LoopReport
        ``conversation_id``; ``loops``: one :class:`CircularHandoff` per loop with ``kind``
        (``"ping_pong"`` or ``"cycle"``), ``agents`` (in the order they were first handed to),
        ``turn_indices`` and ``handoff_indices`` (positions in ``trace.handoffs``) of the
        handoffs involved; ``has_loops``; ``total_handoffs``; ``max_handoffs``;
        ``exceeds_limit`` (``total_handoffs > max_handoffs``); ``should_escalate`` (a loop, or
        over the limit). ``to_dict()`` gives the article's dict (loops as dicts); the report
        also reads as that mapping.

    Examples
    --------
    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c-1", handoffs=[
    ...     Handoff("triage", "billing", turn_index=2), Handoff("billing", "tech", turn_index=4),
    ...     Handoff("tech", "billing", turn_index=6), Handoff("billing", "tech", turn_index=8)])
    >>> r = detect_circular_handoffs(t, max_handoffs=3)
    >>> r.loops
    (CircularHandoff(kind='ping_pong', agents=('billing', 'tech'), turn_indices=(4, 6, 8), handoff_indices=(1, 2, 3)),)
    >>> r.exceeds_limit, r.should_escalate
    (True, True)
    >>> t = MultiAgentTrace("c-2", handoffs=[Handoff("a", "b", turn_index=1),
    ...     Handoff("b", "c", turn_index=2), Handoff("c", "a", turn_index=3)])
    >>> detect_circular_handoffs(t).to_dict()["loops"]
    [{'kind': 'cycle', 'agents': ['a', 'b', 'c'], 'turn_indices': [1, 2, 3], 'handoff_indices': [0, 1, 2]}]
    """
    if not isinstance(trace, MultiAgentTrace):
        raise TypeError("`trace` must be a MultiAgentTrace (one conversation), "
                        f"got {type(trace).__name__}")
    if isinstance(max_handoffs, bool) or not isinstance(max_handoffs, int) or max_handoffs < 0:
        raise ValueError(f"`max_handoffs` must be a non-negative int, got {max_handoffs!r}")
    handoffs = trace.handoffs
    n = len(handoffs)
    loops: tuple[CircularHandoff, ...] = ()
    if n >= 3:  # a ping-pong and a cycle both take three handoffs
        found = _ping_pongs(handoffs) + _cycles(handoffs)  # (first handoff index, loop)
        found.sort(key=itemgetter(0))
        # tuple() of a list, not of a generator: CPython 3.11 counts a tuple built from a
        # generator as a lasting allocation, so the cyclic GC (and its full passes over every
        # trace loaded) would run more often
        loops = tuple([loop for _, loop in found])
    exceeds = n > max_handoffs
    return new_loop_report(trace.conversation_id, loops, bool(loops), n, max_handoffs, exceeds,
                           bool(loops) or exceeds)


def _ping_pongs(handoffs: list[Handoff]) -> list[tuple[int, CircularHandoff]]:
    """Each pair of agents with handoffs both ways and three or more in all, with the index of
    its first handoff."""
    # Handoffs grouped by unordered pair of agents. A pair's three or more handoffs all go to
    # one of its two agents, so there is none unless some target repeats (checked first:
    # cheaper than the grouping, and many conversations have no repeated target).
    if len({h.to_agent for h in handoffs}) == len(handoffs):
        return []
    # keyed by the pair's first direction: (a, b) and (b, a) are looked up (cheaper than a
    # frozenset per handoff)
    pairs: dict[tuple[str, str], list[int]] = {}
    for i, h in enumerate(handoffs):
        a, b = h.from_agent, h.to_agent
        if a != b:
            idx = pairs.get((a, b))
            if idx is None:
                idx = pairs.get((b, a))
                if idx is None:
                    pairs[a, b] = idx = []
            idx.append(i)
    found = []
    for idx in pairs.values():
        if len(idx) < 3:
            continue
        first = handoffs[idx[0]]
        if all(handoffs[i].from_agent == first.from_agent for i in idx):
            continue  # one direction only: no back-and-forth
        found.append((idx[0], new_circular_handoff(
            "ping_pong", (first.from_agent, first.to_agent),
            tuple([handoffs[i].turn_index for i in idx]), tuple(idx))))
    return found


def _cycles(handoffs: list[Handoff]) -> list[tuple[int, CircularHandoff]]:
    """Each cycle of three or more agents along chains of consecutive handoffs, with the
    index of its first handoff; a cycle passed again adds its handoffs to the first pass's."""
    # rotation key -> (first handoff index, agents, turn indices, handoff indices)
    cycles: dict[tuple[str, ...], tuple[int, list[str], list[int], list[int]]] = {}
    path: list[str] = []  # agents of the current chain, no repeats
    path_handoffs: list[int] = []  # handoff that left path[k] (k < len(path) - 1)
    for i, h in enumerate(handoffs):
        if not path or path[-1] != h.from_agent:
            path, path_handoffs = [h.from_agent], []
        path_handoffs.append(i)
        if h.to_agent in path:
            start = path.index(h.to_agent)
            agents = path[start:]
            if len(agents) >= 3:
                steps = path_handoffs[start:]
                key = _rotation_key(agents)
                loop = cycles.get(key)
                if loop is None:
                    cycles[key] = loop = (steps[0], agents, [], [])
                loop[2].extend(handoffs[k].turn_index for k in steps)
                loop[3].extend(steps)
            path, path_handoffs = [h.to_agent], []  # a closed chain starts afresh
        else:
            path.append(h.to_agent)
    return [(first, new_circular_handoff("cycle", tuple(agents), tuple(turns), tuple(steps)))
            for first, agents, turns, steps in cycles.values()]


def _rotation_key(agents: list[str]) -> tuple[str, ...]:
    """The same cycle entered at another agent (b→c→a for a→b→c) gives the same key."""
    k = agents.index(min(agents))
    return tuple(agents[k:] + agents[:k])
