"""Retention items: one key fact at one handoff, the conversation view before it and after it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from maev_kit.errors import InputError
from maev_kit.expectations import ConversationExpectations, KeyFact, load_expectations
from maev_kit.traces import Message, MultiAgentTrace

__all__ = ["LABELS", "EvidenceSpan", "RetentionItem", "UnjudgedHandoff", "build_retention_items",
           "context_values", "derive_facts", "fact_hops", "handover_payload", "hop_order",
           "is_free_text", "item_id", "locate", "unjudged_handoffs"]

#: The three retention labels, in the fixed order used everywhere (confusion matrices, κ).
LABELS: tuple[str, str, str] = ("retained", "lost", "contradicted")


def item_id(conversation_id: str, handoff_index: int, fact_id: str) -> str:
    """``<conversation_id>/h<handoff_index>/<fact_id>`` (docs/formats.md, "Labels JSONL")."""
    return f"{conversation_id}/h{handoff_index}/{fact_id}"


@dataclass(frozen=True)
class RetentionItem:
    """One thing to judge: was ``fact`` retained, lost or contradicted after handoff ``handoff_index``?

    ``before`` holds the conversation view up to the handoff, ``after`` the view from the
    handoff until the next one (or the first ``window`` entries): user and agent text, tool
    calls, tool results and handoffs, each a :class:`~maev_kit.traces.Message` marked by
    ``kind``. Only what the receiving agent ``to_agent`` did there — its text, the tools it
    called and what they returned, the context it handed on — is evidence (:attr:`evidence`);
    the user's and other agents' entries are context (a user repeating the fact, or an agent
    asking for it again, tells that it was lost).

    ``derived`` marks facts made from a handoff's ``context_passed`` rather than written in the
    expectations. ``fact_key`` names the conversation's fact the item judges (the id under
    which it was first stated): a fact is judged at its first handoff and at every later one,
    and the items of one fact share its ``fact_key`` (see :func:`build_retention_items`).
    ``before_text`` / ``after_text`` are the text-only view of maev-kit's first versions, which
    the prompts ``v1`` and ``v2`` render (None: derived from ``before`` / ``after``).

    ``slot`` names what the fact's value is about (``"departure time"``; empty when unknown):
    a value of the same kind for another slot is no evidence either way.

    ``receiver_silent`` marks a handoff whose receiver has no entry in the judged window — a
    person who takes over outside the trace (``transfer_to_human_agents``), an agent whose side
    was not recorded. An absent receiver gives no evidence of loss; what can be judged is what
    was handed over, the ``payload``: the handoff's context, the handing-over tool call (its
    ``summary``, ``reason``…) and the text of the handing-over message. For such an item the
    question is "does what was handed over carry this fact?" and :attr:`evidence` is the
    payload. A silent handoff with nothing handed over gets no item at all (see
    :func:`unjudged_handoffs`).

    ``changed_at`` is the turn at which the user changed the fact's value themselves (the
    fact was superseded there, and ``fact`` holds the new value); None otherwise.
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
    fact_key: str = ""
    hop: int = 0
    before_text: tuple[Message, ...] | None = field(default=None, repr=False, compare=False)
    after_text: tuple[Message, ...] | None = field(default=None, repr=False, compare=False)
    slot: str = ""
    receiver_silent: bool = False
    payload: tuple[Message, ...] = ()
    changed_at: int | None = None

    def __post_init__(self) -> None:
        if not self.fact_key:
            object.__setattr__(self, "fact_key", self.fact_id)

    @property
    def evidence(self) -> tuple[Message, ...]:
        """The entries of ``after`` that are the receiving agent's own: its text, tool calls,
        tool results and handoffs (every agent's when ``to_agent`` is empty).

        >>> it = RetentionItem("c/h0/f1", "c", 0, "f1", "Ref BK-1", (),
        ...     (Message("billing", "Which ref?", 3), Message("triage", "BK-1 noted", 4)),
        ...     "triage", "billing")
        >>> [m.content for m in it.evidence]
        ['Which ref?']
        """
        if self.receiver_silent:
            return self.payload
        if not self.to_agent:
            return tuple(m for m in self.after if not m.is_user)
        return tuple(m for m in self.after if m.speaker == self.to_agent and not m.is_user)

    @property
    def window(self) -> tuple[Message, ...]:
        """The entries a judge reads for this item: what followed the handoff (``after``), or,
        when the receiver is not in the trace, what was handed over (``payload``)."""
        return self.payload if self.receiver_silent else self.after

    def text_view(self) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
        """``(before, after)`` as maev-kit's first versions showed them: text only."""
        def legacy(ms: tuple[Message, ...]) -> tuple[Message, ...]:
            return tuple(m for m in ms if m.kind in ("user", "text"))

        return (self.before_text if self.before_text is not None else legacy(self.before),
                self.after_text if self.after_text is not None else legacy(self.after))

    def to_dict(self) -> dict[str, Any]:
        d = {"item_id": self.item_id, "conversation_id": self.conversation_id,
             "handoff_index": self.handoff_index, "fact_id": self.fact_id, "fact": self.fact,
             "before": [m.to_dict() for m in self.before],
             "after": [m.to_dict() for m in self.after],
             "from_agent": self.from_agent, "to_agent": self.to_agent,
             "derived": self.derived}
        if self.fact_key != self.fact_id:
            d["fact_key"] = self.fact_key
        if self.slot:
            d["slot"] = self.slot
        if self.changed_at is not None:
            d["changed_at"] = self.changed_at
        if self.receiver_silent:
            d["receiver_silent"] = True
            d["payload"] = [m.to_dict() for m in self.payload]
        return d


#: A context value longer than this many characters (or words) is free text, not a fact.
_MAX_CONTEXT_FACT_CHARS = 60
_MAX_CONTEXT_FACT_WORDS = 6


def context_values(context: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``(key, value)`` for each scalar value of a handoff's ``context_passed``, nested objects
    flattened with dotted keys and lists indexed (``items[0]``); booleans and empty values
    left out.

    >>> context_values({"account": "A-1", "trip": {"flight": "LH 454", "seats": [2, 3]},
    ...                 "vip": True, "note": ""})
    [('account', 'A-1'), ('trip.flight', 'LH 454'), ('trip.seats[0]', 2), ('trip.seats[1]', 3)]
    """
    out: list[tuple[str, Any]] = []
    for key, value in context.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.extend(context_values(value, name + "."))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                if isinstance(v, Mapping):
                    out.extend(context_values(v, f"{name}[{i}]."))
                elif _is_value(v):
                    out.append((f"{name}[{i}]", v))
        elif _is_value(value):
            out.append((name, value))
    return out


def _is_value(value: Any) -> bool:
    return (isinstance(value, (str, int, float)) and not isinstance(value, bool)
            and bool(str(value).strip()))


def is_free_text(value: Any) -> bool:
    """True for a context value that is a sentence rather than one value (a reason, a task):
    longer than 60 characters or 6 words.

    >>> is_free_text("ACCT-4471"), is_free_text("Customer reports a duplicate charge on March 3")
    (False, True)
    """
    text = str(value).strip()
    return len(text) > _MAX_CONTEXT_FACT_CHARS or len(text.split()) > _MAX_CONTEXT_FACT_WORDS


def derive_facts(trace: MultiAgentTrace, handoff_index: int) -> list[KeyFact]:
    """Facts made from a handoff's ``context_passed``: one per key with a value
    (``account_number is ACCT-4471``), nested keys dotted; a free-text value (a reason, a task
    — see :func:`is_free_text`) is no fact by itself (the ``context`` proposer of
    :func:`maev_kit.facts.propose_facts` finds the values in it).

    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", handoffs=[Handoff("triage", "billing", None,
    ...     {"account_number": "ACCT-4471", "reason": "The customer was charged twice in March"})])
    >>> [(f.fact_id, f.text) for f in derive_facts(t, 0)]
    [('ctx:account_number', 'account_number is ACCT-4471')]
    """
    h = trace.handoffs[handoff_index]
    return [KeyFact(f"ctx:{key}", handoff_index, f"{key} is {value}", derived=True)
            for key, value in context_values(h.context_passed) if not is_free_text(value)]


def _normal_text(text: str) -> str:
    return " ".join(text.casefold().split())


def hop_order(trace: MultiAgentTrace) -> list[int]:
    """The trace's handoff indices in conversation order (by ``turn_index``)."""
    return sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index)


def fact_hops(trace: MultiAgentTrace, facts: Iterable[KeyFact]
              ) -> list[tuple[int, KeyFact, str]]:
    """Which fact is judged at which handoff: ``(handoff_index, fact as listed there,
    fact_key)`` in conversation order.

    A key fact belongs to the conversation: it is judged at its ``handoff_index`` and at every
    later handoff. The same fact listed again at a later handoff (the same text, however
    spaced or cased — older labeled sets copied each fact to every handoff) is that fact, not a
    new one: its items keep the id it is listed under there, so labels written for it keep
    their meaning, and share the first listing's ``fact_key``. A fact listed at a later handoff
    under the id of an earlier, different fact replaces that one from there on.

    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c", handoffs=[Handoff("a", "b", None, turn_index=1),
    ...     Handoff("b", "c", None, turn_index=3), Handoff("c", "d", None, turn_index=5)])
    >>> fs = [KeyFact("f1", 0, "Ref is BK-1"), KeyFact("f4", 2, "ref is  BK-1")]
    >>> [(hi, f.fact_id, key) for hi, f, key in fact_hops(t, fs)]
    [(0, 'f1', 'f1'), (1, 'f1', 'f1'), (2, 'f4', 'f1')]
    """
    order = hop_order(trace)
    rank = {hi: r for r, hi in enumerate(order)}
    listed: dict[int, list[KeyFact]] = {}
    for f in facts:
        listed.setdefault(rank[f.handoff_index], []).append(f)
    live: dict[str, tuple[KeyFact, str]] = {}  # normalised text -> (fact as first listed, key)
    out: list[tuple[int, KeyFact, str]] = []
    for r, hi in enumerate(order):
        here: dict[str, KeyFact] = {}  # normalised text -> the fact as listed at this hop
        for f in listed.get(r, ()):
            norm = _normal_text(f.text)
            if norm in here:
                continue
            here[norm] = f
            # the same id on a different fact: the earlier one ends here
            for old_norm, (old, _) in list(live.items()):
                if old.fact_id == f.fact_id and old_norm != norm:
                    del live[old_norm]
            if norm not in live:
                live[norm] = (f, f.fact_id)
        taken: set[str] = set()
        for norm, (first, key) in live.items():
            f = here.get(norm, first)
            if f.fact_id in taken:
                continue
            taken.add(f.fact_id)
            out.append((hi, f, key))
    return out


def build_retention_items(
    traces: Iterable[MultiAgentTrace],
    expectations: str | os.PathLike[str] | Iterable[Any] | Mapping[str, ConversationExpectations],
    *,
    window: int | None = None,
    derive_from_context: bool = False,
) -> list[RetentionItem]:
    """Build one :class:`RetentionItem` per key fact per handoff from its first on.

    A key fact is stated once and judged at every later handoff (:func:`fact_hops` says how
    facts listed again are matched); the item of handoff A→B holds B's window — everything
    from that handoff until the next one — and :attr:`RetentionItem.evidence` is B's part of it.

    Parameters
    ----------
    traces : iterable of MultiAgentTrace
    expectations : path to ``expectations.jsonl``, list of dicts in that format, parsed
        :class:`~maev_kit.expectations.ConversationExpectations`, or a mapping by conversation id.
    window : int, optional
        Keep only the first ``window`` entries of the view after the handoff (the article used
        5).
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
    ...     AgentTurn("billing", "specialist", "Your account ACCT-1 ...", turn_index=3),
    ...     AgentTurn("tech", "specialist", "Rebooting.", turn_index=5)],
    ...     handoffs=[Handoff("triage", "billing", None, turn_index=2),
    ...               Handoff("billing", "tech", None, turn_index=4)])
    >>> items = build_retention_items([t], [{"conversation_id": "c1",
    ...     "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": "Account is ACCT-1"}]}])
    >>> [(it.item_id, [m.content for m in it.evidence]) for it in items]
    [('c1/h0/f1', ['Your account ACCT-1 ...', '→ tech()']), ('c1/h1/f1', ['Rebooting.'])]
    """
    if window is not None and window < 1:
        raise ValueError(f"`window` must be a positive number of messages, got {window!r}")
    if isinstance(expectations, Mapping):
        by_conv = dict(expectations)
    else:
        by_conv = load_expectations(expectations)
    items: list[RetentionItem] = []
    for trace in traces:
        facts = _judged_facts(trace, by_conv.get(trace.conversation_id), derive_from_context)
        if facts:
            items += _trace_items(trace, facts, window)
    return items


def _judged_facts(trace: MultiAgentTrace, exp: ConversationExpectations | None,
                  derive_from_context: bool) -> list[KeyFact]:
    """The key facts of one conversation to judge: those listed in its expectations (each
    checked to sit on a handoff of the trace), then, with ``derive_from_context``, those
    derived from the ``context_passed`` of the handoffs that list none."""
    facts: list[KeyFact] = []
    for f in exp.key_facts if exp else []:
        if not 0 <= f.handoff_index < len(trace.handoffs):
            raise InputError(
                f"{trace.conversation_id} › key_facts › {f.fact_id}: handoff_index "
                f"{f.handoff_index} but the trace has {len(trace.handoffs)} handoff(s)")
        facts.append(f)
    if derive_from_context:
        listed = {f.handoff_index for f in facts}
        facts += [d for hi in range(len(trace.handoffs)) if hi not in listed
                  for d in derive_facts(trace, hi)]
    return facts


def _trace_items(trace: MultiAgentTrace, facts: list[KeyFact], window: int | None
                 ) -> list[RetentionItem]:
    """The retention items of one conversation: one per fact per handoff it is judged at
    (:func:`fact_hops`), each handoff's views cut once and shared by its items."""
    items: list[RetentionItem] = []
    hops = fact_hops(trace, facts)
    view = trace.messages()
    text = trace.messages(tools=False)
    order = hop_order(trace)
    rank = {hi: r for r, hi in enumerate(order)}
    windows: dict[int, _Hop] = {}
    for hi, f, key in hops:
        if hi not in windows:
            windows[hi] = _hop(trace, hi, view, text, order, rank, window)
        hop = windows[hi]
        if hop.silent and not hop.payload:
            continue  # nothing handed over to a receiver outside the trace: not applicable
        h = trace.handoffs[hi]
        items.append(RetentionItem(
            item_id(trace.conversation_id, hi, f.fact_id), trace.conversation_id, hi,
            f.fact_id, f.text, hop.before, hop.after, h.from_agent, h.to_agent, f.derived,
            key, rank[hi], hop.before_text, hop.after_text, f.slot or "", hop.silent,
            hop.payload, f.changed_at))
    return items


@dataclass(frozen=True)
class _Hop:
    """One handoff's views: before and after it (conversation and text-only), whether its
    receiver is absent from the window, and what it handed over."""

    before: tuple[Message, ...]
    after: tuple[Message, ...]
    before_text: tuple[Message, ...]
    after_text: tuple[Message, ...]
    silent: bool
    payload: tuple[Message, ...]


def receiver_silent(trace: MultiAgentTrace, handoff_index: int, *,
                    window: int | None = None) -> bool:
    """Whether the receiver of ``trace.handoffs[handoff_index]`` has no entry of its own in
    the window judged for that handoff — from the handoff to the next one in
    :func:`hop_order` (the first ``window`` entries of it) — such as a person outside the
    trace taking over after ``transfer_to_human_agents``, or an agent whose side was not
    recorded. Such a handoff is judged on what was handed over (:func:`handover_payload`).

    The one definition of a silent receiver: retention items (``receiver_silent``), the
    not-applicable handoffs (:func:`unjudged_handoffs`) and the ``"auto"`` key facts
    (``maev_kit.facts.auto_facts``) all use it.

    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["Ref BK-1"],
    ...     turns=[AgentTurn("bot", "agent", "Passing you on.", turn_index=1),
    ...            AgentTurn("billing", "agent", "BK-1 is refunded.", turn_index=3)],
    ...     handoffs=[Handoff("bot", "billing", None, turn_index=2),
    ...               Handoff("billing", "human", None, turn_index=4)])
    >>> receiver_silent(t, 0), receiver_silent(t, 1)
    (False, True)
    """
    return handoff_index in silent_receivers(trace, window=window)


def silent_receivers(trace: MultiAgentTrace, *, window: int | None = None) -> frozenset[int]:
    """The indices of ``trace.handoffs`` whose receiver is silent (:func:`receiver_silent`),
    with the conversation view and the hop order built once for the whole trace."""
    order = hop_order(trace)
    rank = {hi: r for r, hi in enumerate(order)}
    view = trace.messages()
    return frozenset(hi for hi in range(len(trace.handoffs))
                     if _silent(trace, hi, _after(trace, hi, view, order, rank, window)))


def _after(trace: MultiAgentTrace, hi: int, view: list[Message], order: list[int],
           rank: dict[int, int], window: int | None) -> tuple[Message, ...]:
    r = rank[hi]
    end = trace.handoffs[order[r + 1]].turn_index if r + 1 < len(order) else float("inf")
    return _window(view, trace.handoffs[hi].turn_index, end, window)[1]


def _silent(trace: MultiAgentTrace, hi: int, after: Sequence[Message]) -> bool:
    to_agent = trace.handoffs[hi].to_agent
    return not any(m.speaker == to_agent and not m.is_user for m in after)


def _hop(trace: MultiAgentTrace, hi: int, view: list[Message], text: list[Message],
         order: list[int], rank: dict[int, int], window: int | None) -> _Hop:
    h = trace.handoffs[hi]
    r = rank[hi]
    end = trace.handoffs[order[r + 1]].turn_index if r + 1 < len(order) else float("inf")
    before, after = _window(view, h.turn_index, end, window)
    silent = _silent(trace, hi, after)
    payload = handover_payload(before, h.from_agent, h.to_agent, h.turn_index) if silent else ()
    return _Hop(before, after, *_window(text, h.turn_index, end, window), silent, payload)


# Tool names that hand a conversation on (transfer_to_human_agents, escalate, handoff_to_x…).
_HANDOFF_TOOL = re.compile(r"transfer|hand_?off|hand_?over|escalat|delegat|route_to|forward",
                           re.I)


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.casefold())


def handover_payload(before: Sequence[Message], from_agent: str, to_agent: str,
                     turn_index: int) -> tuple[Message, ...]:
    """What a handoff handed over, in conversation order: the text of the handing-over
    message, the handing-over tool call (``transfer_to_human_agents(summary="…")``: a tool
    whose name says it transfers, escalates, delegates or hands off, or names the receiver)
    and the handoff's own entry with the context it passed — each only when it carries
    something. Empty when nothing was handed over.

    The handing-over message is the handing-off agent's last turn at or before the handoff.

    >>> from maev_kit.traces import Message
    >>> before = (Message("user", "Cancel booking BK-7 please", 0, True),
    ...     Message("agent", "Passing you to a colleague.", 1),
    ...     Message("agent", 'transfer_to_human_agents(summary="cancel BK-7")', 1,
    ...             kind="tool_call", tool="transfer_to_human_agents", part=1,
    ...             fields=(("arguments.summary", 34, 45),)),
    ...     Message("agent", "→ human()", 2, kind="handoff", tool="human"))
    >>> [m.content for m in handover_payload(before, "agent", "human", 2)]
    ['Passing you to a colleague.', 'transfer_to_human_agents(summary="cancel BK-7")']
    """
    own = [m for m in before if m.speaker == from_agent and not m.is_user
           and m.kind in ("text", "tool_call") and m.turn_index <= turn_index]
    last = max((m.turn_index for m in own), default=None)
    target = _squash(to_agent)
    out: list[Message] = []
    for m in before:
        if m.kind == "handoff":
            if (m.speaker == from_agent and m.tool == to_agent and m.turn_index == turn_index
                    and m.fields):
                out.append(m)
        elif m.turn_index == last and m.speaker == from_agent and not m.is_user:
            if m.kind == "text" and m.content.strip():
                out.append(m)
            elif m.kind == "tool_call" and m.fields and (
                    _HANDOFF_TOOL.search(m.tool or "")
                    or (target and target in _squash(m.tool or ""))):
                out.append(m)
    return tuple(out)


@dataclass(frozen=True)
class UnjudgedHandoff:
    """A handoff with key facts to judge that is not applicable to retention: its receiver has
    no entry in the judged window and nothing was handed over (no context, no handing-over
    tool call or message)."""

    conversation_id: str
    handoff_index: int
    from_agent: str
    to_agent: str
    n_facts: int


def unjudged_handoffs(
    traces: Iterable[MultiAgentTrace],
    expectations: str | os.PathLike[str] | Iterable[Any] | Mapping[str, ConversationExpectations],
    *,
    window: int | None = None,
) -> list[UnjudgedHandoff]:
    """The handoffs :func:`build_retention_items` leaves out: facts would be judged there, but
    the receiver is not in the trace and nothing was handed over. They are left out of
    retention and of the composite, and counted (the report and ``maev score`` say how many).

    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["Ref BK-1"],
    ...     turns=[AgentTurn("bot", "agent", "", turn_index=1)],
    ...     handoffs=[Handoff("bot", "human", None, turn_index=1)])
    >>> exp = [{"conversation_id": "c1",
    ...         "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": "Ref is BK-1"}]}]
    >>> [(u.handoff_index, u.to_agent, u.n_facts) for u in unjudged_handoffs([t], exp)]
    [(0, 'human', 1)]
    >>> build_retention_items([t], exp)
    []
    """
    by_conv = dict(expectations) if isinstance(expectations, Mapping) else load_expectations(
        expectations)
    out: list[UnjudgedHandoff] = []
    for trace in traces:
        exp = by_conv.get(trace.conversation_id)
        if exp is None or not exp.key_facts:
            continue
        facts = _judged_facts(trace, exp, False)
        per_hop: dict[int, int] = {}
        for hi, _, _ in fact_hops(trace, facts):
            per_hop[hi] = per_hop.get(hi, 0) + 1
        view = trace.messages()
        order = hop_order(trace)
        rank = {hi: r for r, hi in enumerate(order)}
        for hi in order:
            if hi in per_hop:
                hop = _hop(trace, hi, view, [], order, rank, window)
                if hop.silent and not hop.payload:
                    h = trace.handoffs[hi]
                    out.append(UnjudgedHandoff(trace.conversation_id, hi, h.from_agent,
                                               h.to_agent, per_hop[hi]))
    return out


def _window(view: list[Message], at: int, end: float, window: int | None
            ) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """The entries up to a handoff at ``at`` and those after it up to ``end``."""
    # A turn that shares the handoff's index was spoken before the handoff (see _model); the
    # handoff's own entry (kind "handoff") is the last of "before".
    before = tuple(m for m in view if m.turn_index <= at)
    # Everything up to and including the next handoff's index precedes that handoff.
    after = [m for m in view if at < m.turn_index <= end]
    if window is not None:
        after = after[:window]
    return before, tuple(after)


@dataclass(frozen=True)
class EvidenceSpan:
    """Where a verdict's evidence is: one entry of the conversation view and a span of it.

    ``turn_index`` and ``part`` name the entry (:class:`~maev_kit.traces.Message`), ``kind``
    and ``speaker`` repeat its kind and agent, ``field`` names the value the span lies in
    (``text``, ``arguments.<key>``, ``output``, ``context.<key>``), ``start``/``end`` are
    offsets into the entry's ``content`` and ``text`` is the span itself.
    """

    turn_index: int
    part: int
    kind: str
    speaker: str
    field: str
    start: int
    end: int
    text: str

    def describe(self) -> str:
        """One line for tables: ``billing · turn 5 · tool_call › arguments.ref: "BK-1"``."""
        where = f" › {self.field}" if self.field and self.field != "text" else ""
        return f'{self.speaker} · turn {self.turn_index} · {self.kind}{where}: "{self.text}"'

    def to_dict(self) -> dict[str, Any]:
        return {"turn_index": self.turn_index, "part": self.part, "kind": self.kind,
                "speaker": self.speaker, "field": self.field, "start": self.start,
                "end": self.end, "text": self.text}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EvidenceSpan:
        return cls(int(d["turn_index"]), int(d.get("part", 0)), str(d.get("kind", "text")),
                   str(d.get("speaker", "")), str(d.get("field", "")), int(d["start"]),
                   int(d["end"]), str(d.get("text", "")))


def _fold(text: str) -> str:
    return text.casefold()


def locate(messages: Iterable[Message], needle: str) -> EvidenceSpan | None:
    """The first span of ``messages`` that holds ``needle`` (case-insensitive; runs of spaces
    match any run of spaces), or None.

    >>> m = Message("billing", 'pay(ref="BK-1", amount="40")', 5, kind="tool_call",
    ...             tool="pay", part=1, fields=(("arguments.ref", 9, 13),
    ...                                         ("arguments.amount", 25, 27)))
    >>> locate([m], "bk-1").describe()
    'billing · turn 5 · tool_call › arguments.ref: "BK-1"'
    >>> locate([m], "BK-2") is None
    True
    """
    words = needle.split()
    if not words:
        return None
    pattern = re.compile(r"\s+".join(re.escape(w) for w in words), re.IGNORECASE)
    for m in messages:
        found = pattern.search(m.content)
        if found:
            a, b = found.span()
            return EvidenceSpan(m.turn_index, m.part, m.kind, m.speaker, m.field_at(a, b), a, b,
                                m.content[a:b])
    return None
