"""The in-memory trace model.

The names and positional constructors are the article's (``AgentTurn(agent_id, agent_role,
message, tool_calls=[], turn_index=0)`` and so on) so code written against it keeps working.
They are plain dataclasses with ``__slots__``: fast to build, small in memory, easy to read
(an instance takes no attributes beyond its fields). Validation of data from files goes
through pydantic (see :mod:`maev_kit.traces._io`), which builds these same classes.

Turn indices share one sequence across user messages, agent turns and handoffs: a handoff with
``turn_index=2`` happens after everything with an index below 2. When an agent turn and a handoff
share an index, the turn comes first (the agent speaks, then hands off).
"""

from __future__ import annotations

import enum
import html
import itertools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict

from maev_kit.internal import views
from maev_kit.traces._view import Message, conversation_view

__all__ = [
    "AgentTurn",
    "Handoff",
    "HandoffMode",
    "HandoffReason",
    "Message",
    "MultiAgentTrace",
    "UserMessage",
]

_FORBID = ConfigDict(extra="forbid")

HandoffMode = Literal["transfer", "delegate"]


class HandoffReason(str, enum.Enum):
    """Why control passed from one agent to another (the article's four reasons)."""

    CAPABILITY_MATCH = "capability_match"
    ESCALATION = "escalation"
    SPECIALIZATION = "specialization"
    FALLBACK = "fallback"

    def __str__(self) -> str:  # "escalation", not "HandoffReason.ESCALATION"
        return self.value


class _Slotted:
    """Base of the slotted trace classes: loads their pickles, and those of maev-kit
    versions whose trace classes had no ``__slots__`` (a dict of fields)."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, tuple):  # (instance dict, slots), as pickle gives for slots
            state = {**(state[0] or {}), **(state[1] or {})}
        for name, value in state.items():
            object.__setattr__(self, name, value)


@dataclass(slots=True)
class AgentTurn(_Slotted):
    """One message by one agent.

    >>> AgentTurn("triage", "router", "Let me route you.", turn_index=1).agent_id
    'triage'
    """

    __pydantic_config__ = _FORBID

    agent_id: str
    agent_role: str
    message: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    turn_index: int = 0


@dataclass(slots=True)
class Handoff(_Slotted):
    """Control (``mode="transfer"``) or a task (``mode="delegate"``) passing between agents.

    ``reason`` may be None: most frameworks record no reason.

    >>> h = Handoff("triage", "billing", HandoffReason.SPECIALIZATION, {"account_number": "ACCT-4471"})
    >>> (h.to_agent, h.reason.value, h.mode)
    ('billing', 'specialization', 'transfer')
    """

    __pydantic_config__ = _FORBID

    from_agent: str
    to_agent: str
    reason: HandoffReason | None = None
    context_passed: dict[str, Any] = field(default_factory=dict)
    turn_index: int = 0
    mode: HandoffMode = "transfer"

    def __post_init__(self) -> None:
        if isinstance(self.reason, str) and not isinstance(self.reason, HandoffReason):
            self.reason = HandoffReason(self.reason)


@dataclass(slots=True)
class UserMessage(_Slotted):
    """A message from the user (the person the agents serve)."""

    __pydantic_config__ = _FORBID

    content: str
    turn_index: int = 0


@dataclass(slots=True)
class MultiAgentTrace(_Slotted):
    """One conversation: agent turns, handoffs between agents and the user's messages.

    >>> t = MultiAgentTrace("c-1",
    ...     turns=[AgentTurn("triage", "router", "Hi", turn_index=1),
    ...            AgentTurn("billing", "specialist", "Billing here", turn_index=3)],
    ...     handoffs=[Handoff("triage", "billing", "specialization", turn_index=2)])
    >>> t.agents_involved(), t.handoff_count(), t.turns_per_agent()
    (['triage', 'billing'], 1, {'triage': 1, 'billing': 1})
    """

    __pydantic_config__ = _FORBID

    conversation_id: str
    turns: list[AgentTurn] = field(default_factory=list)
    handoffs: list[Handoff] = field(default_factory=list)
    user_messages: list[UserMessage] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # The article kept user messages as plain strings; accept them.
        if any(isinstance(m, str) for m in self.user_messages):
            self.user_messages = [UserMessage(m) if isinstance(m, str) else m
                                  for m in self.user_messages]

    def agents_involved(self) -> list[str]:
        """Agents in the order of their first turn."""
        return list(dict.fromkeys(t.agent_id for t in self.turns))

    def handoff_count(self) -> int:
        """Number of handoffs in the conversation."""
        return len(self.handoffs)

    def turns_per_agent(self) -> dict[str, int]:
        """Number of turns per agent, in the order of first turn."""
        return dict(Counter(t.agent_id for t in self.turns))

    def timeline(self) -> list[AgentTurn | Handoff | UserMessage]:
        """User messages, agent turns and handoffs in conversation order.

        Ordered by ``turn_index``; on a tie a user message comes first, then the agent turn,
        then the handoff. The sort is stable, so file order breaks remaining ties.
        """
        rank = {UserMessage: 0, AgentTurn: 1, Handoff: 2}
        events: list[AgentTurn | Handoff | UserMessage] = [
            *self.user_messages, *self.turns, *self.handoffs]
        return sorted(events, key=lambda e: (e.turn_index, rank[type(e)]))

    def messages(self, *, tools: bool = True) -> list[Message]:
        """The conversation view in order: user and agent text, tool calls, tool results and
        handoffs, each a :class:`Message` marked by ``kind`` (see
        :func:`maev_kit.traces.conversation_view`); ``tools=False``: user and agent text only,
        as maev-kit's first versions showed it."""
        return conversation_view(self, tools=tools)

    def _repr_html_(self) -> str:
        """The trace's HTML view, as a view registered it (:mod:`maev_kit.internal` `views`: the
        package root registers the timeline, loaded on first use); a ``<pre>`` of the repr
        when none has."""
        drawn = views.render("trace", self)
        return drawn if drawn is not None else f"<pre>{html.escape(repr(self))}</pre>"


def register_html_view(render: Callable[[MultiAgentTrace], str] | None) -> None:
    """Make ``render`` the drawing of :meth:`MultiAgentTrace._repr_html_` (None: the plain
    ``<pre>`` of the repr)."""
    views.register("trace", render)


# Fast construction for readers whose input already has the final types (the Parquet reader,
# after its schema check): each object is made without ``__init__``/``__post_init__`` (which
# only convert strings: a reason, plain-string user messages) and its slots are set one by one.
# Objects built here equal, print and mutate like those built by the constructors
# (tests/traces/test_parquet.py checks that every dataclass field is set). Not public: no checks.

def _agent_turns(agent_id: Iterable[str], agent_role: Iterable[str], message: Iterable[str],
                 tool_calls: Iterable[list[dict[str, Any]]], turn_index: Iterable[int],
                 count: int) -> list[AgentTurn]:
    """``count`` :class:`AgentTurn` from columns (iterables of at least ``count`` values)."""
    out = list(map(object.__new__, itertools.repeat(AgentTurn, count)))
    for t, a, r, m, c, i in zip(out, agent_id, agent_role, message, tool_calls, turn_index):
        t.agent_id = a
        t.agent_role = r
        t.message = m
        t.tool_calls = c
        t.turn_index = i
    return out


def _handoffs(from_agent: Iterable[str], to_agent: Iterable[str],
              reason: Iterable[HandoffReason | None], context_passed: Iterable[dict[str, Any]],
              turn_index: Iterable[int], mode: Iterable[str], count: int) -> list[Handoff]:
    """``count`` :class:`Handoff` from columns; ``reason`` already a HandoffReason or None."""
    out = list(map(object.__new__, itertools.repeat(Handoff, count)))
    for h, f, t, r, c, i, m in zip(out, from_agent, to_agent, reason, context_passed,
                                   turn_index, mode):
        h.from_agent = f
        h.to_agent = t
        h.reason = r
        h.context_passed = c
        h.turn_index = i
        h.mode = m
    return out


def _user_messages(content: Iterable[str], turn_index: Iterable[int], count: int
                   ) -> list[UserMessage]:
    """``count`` :class:`UserMessage` from columns."""
    out = list(map(object.__new__, itertools.repeat(UserMessage, count)))
    for u, c, i in zip(out, content, turn_index):
        u.content = c
        u.turn_index = i
    return out


def _traces(conversation_id: Iterable[str], turns: Iterable[list[AgentTurn]],
            handoffs: Iterable[list[Handoff]], user_messages: Iterable[list[UserMessage]],
            metadata: Iterable[dict[str, Any]], count: int) -> list[MultiAgentTrace]:
    """``count`` :class:`MultiAgentTrace` from columns (user messages already UserMessage)."""
    out = list(map(object.__new__, itertools.repeat(MultiAgentTrace, count)))
    for t, c, tu, h, u, m in zip(out, conversation_id, turns, handoffs, user_messages, metadata):
        t.conversation_id = c
        t.turns = tu
        t.handoffs = h
        t.user_messages = u
        t.metadata = m
    return out
