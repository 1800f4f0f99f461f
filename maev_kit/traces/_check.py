"""Non-fatal findings in a valid trace, shared by the JSONL reader (:mod:`maev_kit.traces._io`)
and the Parquet reader (:mod:`maev_kit.traces._parquet`), which import it and never each other
the other way round: ``_io`` dispatches to ``_parquet`` by suffix."""

from __future__ import annotations

from maev_kit.errors import Problem
from maev_kit.traces._model import MultiAgentTrace

__all__ = ["check_trace"]


def check_trace(trace: MultiAgentTrace, *, file: str = "<trace>", line: int | None = None
                ) -> list[Problem]:
    """Non-fatal findings in a valid trace (each a ``severity="warning"`` :class:`Problem`).

    - a handoff from an agent that never spoke;
    - decreasing ``turn_index`` among turns or among handoffs.
    """
    found: list[Problem] = []
    speakers = {t.agent_id for t in trace.turns}
    for i, h in enumerate(trace.handoffs):
        if h.from_agent not in speakers:
            found.append(Problem(file, line, f"handoffs[{i}] › from_agent",
                                 f"agent {h.from_agent!r} hands off but never speaks", "warning"))
    for field_name, seq in (("turns", trace.turns), ("handoffs", trace.handoffs)):
        for i in range(1, len(seq)):
            if seq[i].turn_index < seq[i - 1].turn_index:
                found.append(Problem(
                    file, line, f"{field_name}[{i}] › turn_index",
                    f"turn_index decreases ({seq[i - 1].turn_index} → {seq[i].turn_index})",
                    "warning"))
    return found
