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
from typing import Any, Literal, get_args

from maev_kit.errors import InputError
from maev_kit.traces import MultiAgentTrace

__all__ = ["Criterion", "CriterionItem", "Scope", "SCOPES", "parse_attribution"]

Scope = Literal["conversation", "handoff", "turn", "agent"]
#: The units a criterion can be asked of, in the order the docs list them.
SCOPES: tuple[str, ...] = get_args(Scope)

_NAME = re.compile(r"[a-z0-9_-]+")
_STEP = re.compile(r"^(?P<agent>.*\S)\s*@\s*(?P<step>\d+)\s*$")


def parse_attribution(label: str) -> tuple[str, int | None]:
    """``"agent@step"`` → ``(agent, step)``; ``"agent"`` → ``(agent, None)``.

    >>> parse_attribution("WebSurfer@12"), parse_attribution("Orchestrator")
    (('WebSurfer', 12), ('Orchestrator', None))
    >>> parse_attribution("ops@example.org")  # an '@' not followed by a number is the name's
    ('ops@example.org', None)
    """
    if not isinstance(label, str) or not label.strip():
        raise InputError(f"an attribution label is 'agent' or 'agent@step', not {label!r}")
    m = _STEP.match(label)
    return (m["agent"].strip(), int(m["step"])) if m else (label.strip(), None)


@dataclass(frozen=True)
class CriterionItem:
    """One unit a criterion is asked of: a conversation, a handoff, a turn or an agent.

    ``item_id`` is stable (see :meth:`Criterion.items`); ``trace`` is the whole conversation
    (left out of equality, hashing and the repr). Exactly one of ``handoff_index``,
    ``turn_index`` and ``agent`` is set for handoff, turn and agent scope; none for conversation
    scope (and for the item of a criterion whose answers are the agents, which asks "which
    agent?" of the whole conversation). ``handoff_index`` is the position in ``trace.handoffs``,
    ``turn_index`` the position in ``trace.turns`` (both 0-based). ``definition`` is the
    criterion that made the item (left out of equality and the repr). Judges, the Labeler and
    ``calibrate`` read the item's answers from :attr:`labels` and check one with
    :meth:`answer`.
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

    def _criterion(self) -> Criterion:
        if self.definition is None:
            raise InputError(f"item {self.item_id!r} does not know its criterion: make items "
                             "with criterion.items(traces)")
        return self.definition

    @property
    def labels(self) -> tuple[str, ...]:
        """The answers to this item: the criterion's labels, or — for a criterion whose answers
        are the agents (:attr:`Criterion.names_agents`) — this conversation's agents, in the
        order of their first turn (an answer may then add the step: :meth:`answer`)."""
        c = self._criterion()
        return tuple(self.trace.agents_involved()) if c.names_agents else c.labels

    def answer(self, label: Any) -> str:
        """``label`` as an answer to this item, or an :class:`InputError` naming the item.

        One of :attr:`labels`; for a criterion whose answers are the agents, also
        ``agent@step`` with ``step`` a 0-based position in ``trace.turns`` (returned as
        ``agent@step``, spaces dropped).

        >>> from maev_kit.traces import AgentTurn
        >>> t = MultiAgentTrace("r1", turns=[AgentTurn("planner", "", "plan"),
        ...                                   AgentTurn("coder", "", "code")])
        >>> it = Criterion("blame", scope="agent", labels=(), question="Who?").items([t])[0]
        >>> it.labels, it.answer("coder @ 1")
        (('planner', 'coder'), 'coder@1')
        >>> it.answer("coder@2")
        Traceback (most recent call last):
        ...
        maev_kit.errors.InputError: item 'blame:r1': step 2 of 'coder@2' is not a turn of the conversation (its 2 turns are 0 to 1)
        """
        labels = self.labels
        if isinstance(label, str) and label in labels:
            return label
        if not self._criterion().names_agents:
            raise InputError(f"item {self.item_id!r}: {label!r} is not one of its labels: "
                             f"{', '.join(labels)}")
        try:
            agent, step = parse_attribution(label)
        except InputError as e:
            raise InputError(f"item {self.item_id!r}: {e}") from None
        if agent not in labels:
            raise InputError(f"item {self.item_id!r}: {agent!r} is not an agent of conversation "
                             f"{self.conversation_id!r} (its agents: {', '.join(labels)})")
        if step is None:
            return agent
        n = len(self.trace.turns)
        if step >= n:
            raise InputError(f"item {self.item_id!r}: step {step} of {label!r} is not a turn of "
                             f"the conversation (its {n} turns are 0 to {n - 1})")
        return f"{agent}@{step}"


@dataclass(frozen=True)
class Criterion:
    """A question asked of each conversation, handoff, turn or agent, with its answers.

    ``labels`` are the answers (at least two, unique); ``positive`` the label whose share a
    score reports (one of ``labels``, or None); ``ordinal=True`` says the labels are listed in
    order (agreement then uses linearly weighted κ); ``guidelines`` what a person and a judge
    read besides the question.

    ``labels=()`` with agent scope says the answers are *the agents of each conversation*
    ("which agent caused the failure?", :func:`~maev_kit.criteria.failure_attribution`): the
    question is asked once per conversation, each item's answers are that conversation's
    agents (:attr:`CriterionItem.labels`), and an answer may carry the decisive step as
    ``agent@step`` (see :meth:`CriterionItem.answer`). Such a criterion has no ``positive``
    and is not ordinal. With labels, an agent-scope criterion asks its question of each agent.

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

    @property
    def names_agents(self) -> bool:
        """True when the answers are the agents of each conversation (agent scope,
        ``labels=()``): one item per conversation, answered with an agent (or ``agent@step``).
        """
        return self.scope == "agent" and not self.labels

    def items(self, traces: Iterable[MultiAgentTrace]) -> list[CriterionItem]:
        """One item per conversation, handoff, turn or distinct agent of ``traces``, in order.

        Item ids: ``name:conversation_id`` (conversation scope), ``…:h{i}`` (the i-th handoff),
        ``…:t{i}`` (the i-th agent turn), ``…:a:{agent}`` (each agent once, in the order of its
        first turn). A criterion whose answers are the agents (:attr:`names_agents`) has one
        item per conversation with an agent turn, ``name:conversation_id``. Two traces with the
        same conversation id raise :class:`InputError`.

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
        if self.names_agents:  # "which agent?": asked of the conversation, answered by agent
            return [item("")] if trace.turns else []
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
    if not isinstance(c.question, str) or not c.question.strip():
        return "question must be a non-empty string"
    if not isinstance(c.guidelines, str):
        return "guidelines must be a string"
    if not isinstance(c.ordinal, bool):
        return "ordinal must be true or false"
    if not c.labels and c.scope == "agent":  # the answers are each conversation's agents
        if c.positive is not None:
            return ("positive must be left out when the answers are the agents of each "
                    "conversation (labels empty)")
        return "the agents of a conversation are not ordered: ordinal must be false" \
            if c.ordinal else ""
    if not all(isinstance(x, str) and x.strip() for x in c.labels):
        return "labels must be non-empty strings"
    if len(c.labels) < 2:
        return ("needs at least two labels (no labels, for the agents of each conversation as "
                "the answers, is for agent scope only)")
    if len(set(c.labels)) != len(c.labels):
        return f"labels must be unique: {list(c.labels)}"
    if c.positive is not None and c.positive not in c.labels:
        return f"positive {c.positive!r} is not one of the labels {list(c.labels)}"
    return ""
