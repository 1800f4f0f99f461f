"""Retention items: one key fact, the messages before its handoff and the messages after."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from maev_kit.errors import InputError
from maev_kit.expectations import ConversationExpectations, KeyFact, load_expectations
from maev_kit.traces._model import Message, MultiAgentTrace

__all__ = ["LABELS", "RetentionItem", "build_retention_items", "derive_facts", "item_id"]

#: The three retention labels, in the fixed order used everywhere (confusion matrices, κ).
LABELS: tuple[str, str, str] = ("retained", "lost", "contradicted")


def item_id(conversation_id: str, handoff_index: int, fact_id: str) -> str:
    """``<conversation_id>/h<handoff_index>/<fact_id>`` (docs/formats.md, "Labels JSONL")."""
    return f"{conversation_id}/h{handoff_index}/{fact_id}"


@dataclass(frozen=True)
class RetentionItem:
    """One thing to judge: was ``fact`` retained, lost or contradicted after handoff ``handoff_index``?

    ``before`` holds the messages up to the handoff, ``after`` the messages from the handoff
    until the next one (or the first ``window`` of them). ``derived`` marks facts made from the
    handoff's ``context_passed`` rather than written in the expectations.
    """

    item_id: str
    conversation_id: str
    handoff_index: int
    fact_id: str
    fact: str
    before: tuple[Message, ...]
    after: tuple[Message, ...]
    from_agent: str = ""
    to_agent: str = ""
    derived: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "conversation_id": self.conversation_id,
                "handoff_index": self.handoff_index, "fact_id": self.fact_id, "fact": self.fact,
                "before": [m.to_dict() for m in self.before],
                "after": [m.to_dict() for m in self.after],
                "from_agent": self.from_agent, "to_agent": self.to_agent,
                "derived": self.derived}


def derive_facts(trace: MultiAgentTrace, handoff_index: int) -> list[KeyFact]:
    """Facts made from a handoff's ``context_passed``: ``account_number is ACCT-4471``."""
    h = trace.handoffs[handoff_index]
    return [KeyFact(f"ctx:{key}", handoff_index, f"{key} is {value}", derived=True)
            for key, value in h.context_passed.items()
            if isinstance(value, (str, int, float)) and not isinstance(value, bool)
            and str(value).strip()]


def build_retention_items(
    traces: Iterable[MultiAgentTrace],
    expectations: str | os.PathLike[str] | Iterable[Any] | Mapping[str, ConversationExpectations],
    *,
    window: int | None = None,
    derive_from_context: bool = False,
) -> list[RetentionItem]:
    """Build one :class:`RetentionItem` per key fact per handoff.

    Parameters
    ----------
    traces : iterable of MultiAgentTrace
    expectations : path to ``expectations.jsonl``, list of dicts in that format, parsed
        :class:`~maev_kit.expectations.ConversationExpectations`, or a mapping by conversation id.
    window : int, optional
        Keep only the first ``window`` messages after the handoff (the article used 5).
    derive_from_context : bool
        For handoffs with no explicit key facts, derive facts from ``context_passed``.

    Raises
    ------
    InputError
        When a key fact points at a handoff the trace does not have.

    Examples
    --------
    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", turns=[AgentTurn("triage", "router", "Noted ACCT-1", turn_index=1),
    ...     AgentTurn("billing", "specialist", "Your account ACCT-1 ...", turn_index=3)],
    ...     handoffs=[Handoff("triage", "billing", None, turn_index=2)])
    >>> items = build_retention_items([t], [{"conversation_id": "c1",
    ...     "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": "Account is ACCT-1"}]}])
    >>> items[0].item_id, [m.content for m in items[0].after]
    ('c1/h0/f1', ['Your account ACCT-1 ...'])
    """
    if window is not None and window < 1:
        raise ValueError(f"`window` must be a positive number of messages, got {window!r}")
    if isinstance(expectations, Mapping):
        by_conv = dict(expectations)
    else:
        by_conv = load_expectations(expectations)
    items: list[RetentionItem] = []
    for trace in traces:
        exp = by_conv.get(trace.conversation_id)
        facts_by_handoff: dict[int, list[KeyFact]] = {}
        for f in exp.key_facts if exp else []:
            if not 0 <= f.handoff_index < len(trace.handoffs):
                raise InputError(
                    f"{trace.conversation_id} › key_facts › {f.fact_id}: handoff_index "
                    f"{f.handoff_index} but the trace has {len(trace.handoffs)} handoff(s)")
            facts_by_handoff.setdefault(f.handoff_index, []).append(f)
        if not facts_by_handoff and not derive_from_context:
            continue
        messages = trace.messages()
        order = sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index)
        for rank, hi in enumerate(order):
            facts = facts_by_handoff.get(hi)
            if not facts and derive_from_context:
                facts = derive_facts(trace, hi)
            if not facts:
                continue
            h = trace.handoffs[hi]
            end = (trace.handoffs[order[rank + 1]].turn_index if rank + 1 < len(order)
                   else float("inf"))
            # A turn that shares the handoff's index was spoken before the handoff (see _model).
            before = tuple(m for m in messages if m.turn_index <= h.turn_index)
            # Everything up to and including the next handoff's index precedes that handoff.
            after = [m for m in messages if h.turn_index < m.turn_index <= end]
            if window is not None:
                after = after[:window]
            for f in facts:
                items.append(RetentionItem(
                    item_id(trace.conversation_id, hi, f.fact_id), trace.conversation_id, hi,
                    f.fact_id, f.text, before, tuple(after), h.from_agent, h.to_agent,
                    f.derived))
    return items
