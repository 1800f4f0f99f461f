"""A criterion is data: a question about a conversation, a handoff, a turn or an agent, with the
answers a person and a judge may give; and its items, one per unit the question is asked of.

A :class:`Criterion` knows nothing of judges or labels; :meth:`Criterion.items` turns traces into
:class:`CriterionItem` objects whose ``item_id`` is built from the criterion's name, the
conversation id and the unit's position only, so it is the same on every call, in every process
and on every machine (labels recorded against it survive a rerun).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, get_args

from maev_kit.errors import InputError
from maev_kit.traces import MultiAgentTrace

__all__ = ["Criterion", "CriterionItem", "Scope", "SCOPES"]

Scope = Literal["conversation", "handoff", "turn", "agent"]
#: The units a criterion can be asked of, in the order the docs list them.
SCOPES: tuple[str, ...] = get_args(Scope)

_NAME = re.compile(r"[a-z0-9_-]+")


@dataclass(frozen=True)
class CriterionItem:
    """One unit a criterion is asked of: a conversation, a handoff, a turn or an agent.

    ``item_id`` is stable (see :meth:`Criterion.items`); ``trace`` is the whole conversation
    (left out of equality, hashing and the repr). Exactly one of ``handoff_index``,
    ``turn_index`` and ``agent`` is set for handoff, turn and agent scope; none for conversation
    scope. ``handoff_index`` is the position in ``trace.handoffs``, ``turn_index`` the position
    in ``trace.turns`` (both 0-based). ``definition`` is the criterion that made the item (left
    out of equality and the repr): judges, the Labeler and ``calibrate`` read its labels.
    """

    item_id: str
    criterion: str
    conversation_id: str
    scope: str
    trace: MultiAgentTrace = field(compare=False, hash=False, repr=False)
    handoff_index: int | None = None
    turn_index: int | None = None
    agent: str | None = None
    #: the criterion itself (labels, question), for judges, the Labeler and calibrate
    definition: Criterion | None = field(default=None, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Criterion:
    """A question asked of each conversation, handoff, turn or agent, with its answers.

    ``labels`` are the answers (at least two, unique); ``positive`` the label whose share a
    score reports (one of ``labels``, or None); ``ordinal=True`` says the labels are listed in
    order (agreement then uses linearly weighted κ); ``guidelines`` what a person and a judge
    read besides the question.

    >>> c = Criterion("grounded", scope="conversation", labels=("yes", "no"),
    ...               question="Is the final answer grounded in a tool result?", positive="yes")
    >>> c.labels, c.positive
    (('yes', 'no'), 'yes')
    >>> Criterion("Bad Name", scope="turn", labels=("a", "b"), question="?")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: criterion 'Bad Name': name must match [a-z0-9_-]+
    """

    name: str
    scope: Scope
    labels: tuple[str, ...]
    question: str
    positive: str | None = None
    guidelines: str = ""
    ordinal: bool = False

    def __post_init__(self) -> None:
        # labels given as a list are kept as a tuple (frozen and hashable)
        object.__setattr__(self, "labels", tuple(self.labels))
        problem = _problem(self)
        if problem:
            raise InputError(f"criterion {self.name!r}: {problem}")

    def items(self, traces: Iterable[MultiAgentTrace]) -> list[CriterionItem]:
        """One item per conversation, handoff, turn or distinct agent of ``traces``, in order.

        Item ids: ``name:conversation_id`` (conversation scope), ``…:h{i}`` (the i-th handoff),
        ``…:t{i}`` (the i-th agent turn), ``…:a:{agent}`` (each agent once, in the order of its
        first turn). Two traces with the same conversation id raise :class:`InputError`.

        >>> from maev_kit.traces import AgentTurn, Handoff
        >>> t = MultiAgentTrace("c-1", turns=[AgentTurn("triage", "router", "Hi", turn_index=0),
        ...     AgentTurn("billing", "specialist", "Billing here", turn_index=2)],
        ...     handoffs=[Handoff("triage", "billing", turn_index=1)])
        >>> c = Criterion("ok", scope="turn", labels=("yes", "no"), question="Is it ok?")
        >>> [i.item_id for i in c.items([t])]
        ['ok:c-1:t0', 'ok:c-1:t1']
        """
        out: list[CriterionItem] = []
        seen: set[str] = set()
        for trace in traces:
            cid = trace.conversation_id
            if cid in seen:
                raise InputError(
                    f"criterion {self.name!r}: two traces share conversation_id {cid!r}; "
                    "item ids would not be unique (give each conversation its own id)")
            seen.add(cid)
            out.extend(self._trace_items(trace))
        return out

    def _trace_items(self, trace: MultiAgentTrace) -> list[CriterionItem]:
        cid = trace.conversation_id
        base = f"{self.name}:{cid}"

        def item(suffix: str, handoff_index: int | None = None, turn_index: int | None = None,
                 agent: str | None = None) -> CriterionItem:
            return CriterionItem(base + suffix, self.name, cid, self.scope, trace,
                                 handoff_index, turn_index, agent, self)

        if self.scope == "conversation":
            return [item("")]
        if self.scope == "handoff":
            return [item(f":h{i}", handoff_index=i) for i in range(len(trace.handoffs))]
        if self.scope == "turn":
            return [item(f":t{i}", turn_index=i) for i in range(len(trace.turns))]
        return [item(f":a:{agent}", agent=agent) for agent in trace.agents_involved()]

    def index(self, label: str) -> int:
        """The position of ``label`` in :attr:`labels` (raises :class:`InputError` if absent)."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise InputError(f"criterion {self.name!r}: {label!r} is not one of its labels "
                             f"{list(self.labels)}") from None


def _problem(c: Criterion) -> str:
    """What is wrong with a criterion's fields, or ''."""
    if not isinstance(c.name, str) or not _NAME.fullmatch(c.name):
        return "name must match [a-z0-9_-]+"
    if c.scope not in SCOPES:
        return f"scope must be one of {list(SCOPES)}, not {c.scope!r}"
    if not all(isinstance(x, str) and x.strip() for x in c.labels):
        return "labels must be non-empty strings"
    if len(c.labels) < 2:
        return "needs at least two labels"
    if len(set(c.labels)) != len(c.labels):
        return f"labels must be unique: {list(c.labels)}"
    if not isinstance(c.question, str) or not c.question.strip():
        return "question must be a non-empty string"
    if c.positive is not None and c.positive not in c.labels:
        return f"positive {c.positive!r} is not one of the labels {list(c.labels)}"
    if not isinstance(c.guidelines, str):
        return "guidelines must be a string"
    if not isinstance(c.ordinal, bool):
        return "ordinal must be true or false"
    return ""
