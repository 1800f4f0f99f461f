"""Reviewing proposed key facts before they drive a score: every rule, with no widget library.

A :class:`FactReviewSession` walks the handoffs that have proposed facts. For each it shows the
messages before the handoff with each fact's span located in its source message, and records
the reviewer's decisions — accept, reject, edit, add, undo — one line each in an append-only
decisions file (``fact_reviews.jsonl``) written with the same guarantees as the label store
(single-write ``O_APPEND`` lines under ``flock``, ``fsync``-ed before the call returns, a torn
last line reported and ignored). The latest decision per ``(conversation_id, handoff_index,
fact_id, reviewer)`` wins, so reopening the file resumes where the reviewer stopped.

The session is blind to any judge: it takes no verdicts and shows none. The
:class:`~maev_kit.widgets.FactReviewer` widget is a thin view over it.

A decisions line reads::

    {"fact_id": "p-3c1f0a9e2b", "conversation_id": "c-001", "handoff_index": 0,
     "reviewer": "ana", "decision": "edit", "text": "Account is ACCT-4471",
     "value": "ACCT-4471", "created_at": "2025-01-01T12:00:00.000Z"}

``decision`` is one of ``accept``, ``reject``, ``edit``, ``add``, ``undo``; ``text`` and
``value`` are the fact as decided (for ``undo``: null — the fact has no decision again).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from maev_kit.errors import InputError, LabelValidationError, Problem
from maev_kit.facts._model import ProposedFact, fact_id_for
from maev_kit.internal import append_lines, display_name, read_append_log, validated_lines
from maev_kit.labels.internal import DECISIONS, DecisionFileError, ReviewDecision, read_decisions
from maev_kit.traces import Message

__all__ = ["DECISIONS", "DecisionFileError", "ExpectationsExport", "ExpectationsFileError",
           "FactReviewSession", "FactReviewWarning", "FactUnderReview", "HandoffUnderReview",
           "ReviewDecision", "Span", "read_decisions"]

#: Decisions that keep a fact (it is exported).
_KEPT = ("accept", "edit", "add")
#: ``proposer`` of a fact the reviewer added.
ADDED_BY = "reviewer"


class FactReviewWarning(UserWarning):
    """The decisions file had a torn last line (an interrupted write); it was ignored."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Span:
    """Where a fact's value sits: ``before[message_index].content[start:end]``."""

    message_index: int
    start: int
    end: int


@dataclass(frozen=True)
class FactUnderReview:
    """One fact of a handoff as the reviewer sees it.

    ``fact`` is the fact as it stands (an edit applied; ``reviewed`` set once kept),
    ``proposed`` the fact as proposed (or as added), ``decision`` this reviewer's latest
    decision (None when undecided) and ``span`` where ``fact.value`` sits in the messages
    before the handoff (None when it has no value or the value is not found there).
    """

    fact: ProposedFact
    proposed: ProposedFact
    decision: str | None
    span: Span | None

    @property
    def fact_id(self) -> str:
        return self.fact.fact_id

    @property
    def added(self) -> bool:
        """True for a fact the reviewer added (not proposed)."""
        return self.proposed.proposer == ADDED_BY


@dataclass(frozen=True)
class HandoffUnderReview:
    """A handoff with its proposed facts and the messages before it."""

    conversation_id: str
    handoff_index: int
    from_agent: str
    to_agent: str
    before: tuple[Message, ...]
    facts: tuple[FactUnderReview, ...]

    @property
    def key(self) -> tuple[str, int]:
        return (self.conversation_id, self.handoff_index)


def locate(value: str | None, before: Sequence[Message], source_turn_index: int | None
           ) -> Span | None:
    """Where ``value`` sits in ``before``: its source message first, then the latest message
    holding it; in each message an exact match before a case-insensitive one.

    >>> msgs = [Message("user", "Order 12, account acct-9", 0, True),
    ...         Message("triage", "Noted ACCT-9", 1)]
    >>> locate("ACCT-9", msgs, 0)
    Span(message_index=0, start=18, end=24)
    >>> locate("ACCT-9", msgs, None), locate("nope", msgs, 0)
    (Span(message_index=1, start=6, end=12), None)
    """
    if not value:
        return None
    order = [i for i, m in enumerate(before) if m.turn_index == source_turn_index]
    order += [i for i in reversed(range(len(before))) if i not in order]
    pattern = re.compile(re.escape(value), re.IGNORECASE)
    for i in order:
        text = before[i].content
        start = text.find(value)
        if start >= 0:
            return Span(i, start, start + len(value))
        m = pattern.search(text)
        if m:
            return Span(i, m.start(), m.end())
    return None


_KEEP: Any = object()


class FactReviewSession:
    """Review proposed key facts handoff by handoff: accept, reject, edit, add, undo.

    Parameters
    ----------
    traces : iterable of MultiAgentTrace
        The conversations the facts were proposed from.
    proposed_facts : iterable of ProposedFact
        What the proposers found (e.g. :func:`maev_kit.facts.propose_facts`).
    store_path : str or path-like
        The decisions file (``fact_reviews.jsonl``), created on the first decision and shared
        by every reviewer.
    reviewer : str
        Who is reviewing. Decisions by others in the same file are not shown.

    Only handoffs with at least one proposed (or added) fact are walked, in trace order and
    then conversation order. The session opens at the first handoff with an undecided fact,
    so reopening the file resumes; the *focused* fact is the first undecided one there.

    Examples
    --------
    >>> import tempfile, os
    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["I am Dana, account ACCT-4471, 2 bags"],
    ...     turns=[AgentTurn("triage", "router", "Passing you on", turn_index=1)],
    ...     handoffs=[Handoff("triage", "billing", turn_index=2)])
    >>> def fact(text, value):
    ...     return ProposedFact("c1", 0, fact_id_for(0, text), text, value, "other", 0, "offline")
    >>> facts = [fact("Account is ACCT-4471", "ACCT-4471"), fact("Bags: 2", "2 bags")]
    >>> path = os.path.join(tempfile.mkdtemp(), "fact_reviews.jsonl")
    >>> s = FactReviewSession([t], facts, path, reviewer="ana")
    >>> s.focused.fact.text, s.focused.span
    ('Account is ACCT-4471', Span(message_index=0, start=19, end=28))
    >>> _ = s.accept()                          # the focused fact; focus moves on
    >>> _ = s.edit(text="Has 2 checked bags")
    >>> _ = s.add(None, "Name is Dana", value="Dana")
    >>> [f.text for f in s.reviewed_facts()]
    ['Account is ACCT-4471', 'Has 2 checked bags', 'Name is Dana']
    >>> [f.proposer for f in s.reviewed_facts()]
    ['offline', 'offline', 'reviewer']
    >>> all(f.reviewed for f in s.reviewed_facts())
    True
    >>> s.progress["decided"], s.progress["facts"], s.done
    (3, 3, True)
    >>> _ = s.undo()                            # the added fact is gone again
    >>> len(FactReviewSession([t], facts, path, reviewer="ana").reviewed_facts())
    2
    """

    def __init__(self, traces: Iterable[Any], proposed_facts: Iterable[ProposedFact],
                 store_path: str | os.PathLike[str], *, reviewer: str):
        if not isinstance(reviewer, str) or not reviewer.strip():
            raise ValueError(f"`reviewer` must be a non-blank name, got {reviewer!r}")
        if not isinstance(store_path, (str, os.PathLike)):
            raise TypeError("`store_path` must be a file path (str or os.PathLike), got "
                            f"{type(store_path).__name__}")
        self.path = Path(store_path)
        if self.path.is_dir():
            raise ValueError(f"`store_path` {display_name(self.path)!r} is a folder; give the "
                             "decisions file, e.g. 'fact_reviews.jsonl' inside it")
        self.reviewer = reviewer
        #: The torn last line found by the latest read of the decisions file, or None.
        self.torn_last_line: Problem | None = None
        self._warned_torn: tuple[int | None, str] | None = None
        self._traces: dict[str, Any] = {}
        for i, t in enumerate(traces):
            cid = getattr(t, "conversation_id", None)
            if not isinstance(cid, str) or not hasattr(t, "handoffs"):
                raise TypeError(f"`traces[{i}]` must be a MultiAgentTrace, got "
                                f"{type(t).__name__}")
            if cid in self._traces:
                raise InputError(f"traces[{i}] › conversation_id: {cid!r} appears twice")
            self._traces[cid] = t
        self._proposals: dict[tuple[str, int, str], ProposedFact] = {}
        for i, f in enumerate(proposed_facts):
            self._check_proposal(i, f)
            self._proposals[(f.conversation_id, f.handoff_index, f.fact_id)] = f
        if not self._proposals:
            raise ValueError("`proposed_facts` is empty: nothing to review (propose some with "
                             "maev_kit.facts.propose_facts)")
        self._rank = {cid: r for r, cid in enumerate(self._traces)}
        self._before: dict[tuple[str, int], tuple[Message, ...]] = {}
        self._latest: dict[tuple[str, int, str], ReviewDecision] = {}
        # the add line of each fact the reviewer added, in the order first added
        self._added: dict[tuple[str, int, str], ReviewDecision] = {}
        self._undo: list[tuple[tuple[str, int, str], ReviewDecision | None]] = []
        self.refresh()
        self._here = self._first_open_handoff()
        self._focus = self._first_open_fact(self._here)

    def __repr__(self) -> str:
        return f"FactReviewSession({display_name(self.path)!r}, reviewer={self.reviewer!r})"

    def _check_proposal(self, i: int, f: Any) -> None:
        if not isinstance(f, ProposedFact):
            raise TypeError(f"`proposed_facts[{i}]` must be a ProposedFact, got "
                            f"{type(f).__name__}")
        where = f"proposed_facts[{i}]"
        trace = self._traces.get(f.conversation_id)
        if trace is None:
            raise InputError(f"{where} › conversation_id: {f.conversation_id!r} is not one of "
                             "`traces`")
        if not 0 <= f.handoff_index < len(trace.handoffs):
            raise InputError(f"{where} › handoff_index: {f.handoff_index} but conversation "
                             f"{f.conversation_id!r} has {len(trace.handoffs)} handoff(s)")
        key = (f.conversation_id, f.handoff_index, f.fact_id)
        if key in self._proposals:
            raise InputError(f"{where} › fact_id: {f.fact_id!r} is proposed twice for "
                             f"{f.conversation_id!r} handoff {f.handoff_index}; merge the "
                             "proposals first")

    # ---------------------------------------------------------------- reading the file
    def decisions(self) -> list[ReviewDecision]:
        """Every decision line of this reviewer, in file order (read fresh from disk)."""
        if not self.path.exists():
            self.torn_last_line = None
            return []
        records, torn = read_decisions(self.path)
        self.torn_last_line = torn
        if torn is not None:
            key = (torn.line, str(torn))
            if key != self._warned_torn:
                self._warned_torn = key
                warnings.warn(f"{torn} (a write was interrupted before it was acknowledged; "
                              "the next decision written cuts it off)", FactReviewWarning,
                              stacklevel=2)
        return [r for r in records if r.reviewer == self.reviewer]

    def refresh(self) -> None:
        """Re-read this reviewer's decisions from the file (e.g. written by another process)."""
        self._latest, self._added = {}, {}
        for rec in self.decisions():
            self._apply(rec)

    def _apply(self, rec: ReviewDecision) -> None:
        key = rec.key
        trace = self._traces.get(rec.conversation_id)
        if trace is None or not 0 <= rec.handoff_index < len(trace.handoffs):
            return  # a decision about a conversation this session does not review
        if rec.decision == "undo":
            self._latest.pop(key, None)
            return
        if key not in self._proposals:
            if rec.decision == "add":
                self._added[key] = rec
            elif key not in self._added:
                return  # a decision about a proposal that is no longer proposed
        self._latest[key] = rec

    # ---------------------------------------------------------------- what is on screen
    def _keys_of(self, here: tuple[str, int]) -> list[tuple[str, int, str]]:
        proposed = [k for k in self._proposals if k[:2] == here]
        added = [k for k in self._added if k[:2] == here and k in self._latest]
        return proposed + added

    def _handoff_keys(self) -> list[tuple[str, int]]:
        keys = {k[:2] for k in self._proposals}
        keys.update(k[:2] for k in self._added if k in self._latest)

        def order(key: tuple[str, int]) -> tuple[int, int, int]:
            h = self._traces[key[0]].handoffs[key[1]]
            return (self._rank[key[0]], h.turn_index, key[1])

        return sorted(keys, key=order)

    def _before_of(self, here: tuple[str, int]) -> tuple[Message, ...]:
        if here not in self._before:
            trace = self._traces[here[0]]
            ti = trace.handoffs[here[1]].turn_index
            # as in build_retention_items: a message sharing the handoff's index precedes it
            self._before[here] = tuple(m for m in trace.messages() if m.turn_index <= ti)
        return self._before[here]

    def _fact(self, key: tuple[str, int, str]) -> FactUnderReview:
        rec = self._latest.get(key)
        proposed = self._proposals.get(key)
        if proposed is None:  # added by the reviewer: the add line is the proposal
            added = self._added[key]
            proposed = self._with_text(ProposedFact(key[0], key[1], key[2], added.text or "",
                                                    None, "other", None, ADDED_BY),
                                       added.text or "", added.value)
        fact = proposed
        if rec is not None and rec.decision in ("edit", "add"):
            fact = self._with_text(proposed, rec.text or "", rec.value)
        if rec is not None and rec.decision in _KEPT:
            fact = replace(fact, reviewed=True)
        span = locate(fact.value, self._before_of(key[:2]), fact.source_turn_index)
        return FactUnderReview(fact, proposed, rec.decision if rec else None, span)

    def _with_text(self, fact: ProposedFact, text: str, value: str | None) -> ProposedFact:
        """``fact`` with a new text and value; the source turn follows the value."""
        source = fact.source_turn_index
        if value != fact.value or source is None:
            before = self._before_of((fact.conversation_id, fact.handoff_index))
            span = locate(value, before, None)
            source = before[span.message_index].turn_index if span else None
        return replace(fact, text=text, value=value, source_turn_index=source)

    def handoff(self, conversation_id: str, handoff_index: int) -> HandoffUnderReview:
        """One handoff with its facts (proposed, then added) and the messages before it."""
        here = (conversation_id, handoff_index)
        trace = self._traces.get(conversation_id)
        if trace is None or not 0 <= handoff_index < len(trace.handoffs):
            raise KeyError(f"no handoff {handoff_index} of {conversation_id!r} in this session")
        h = trace.handoffs[handoff_index]
        return HandoffUnderReview(conversation_id, handoff_index, h.from_agent, h.to_agent,
                                  self._before_of(here),
                                  tuple(self._fact(k) for k in self._keys_of(here)))

    def __len__(self) -> int:
        """Number of handoffs to review."""
        return len(self._handoff_keys())

    @property
    def position(self) -> int:
        """Index of the current handoff among the handoffs to review."""
        return self._handoff_keys().index(self._here)

    @property
    def current(self) -> HandoffUnderReview:
        """The handoff on screen."""
        return self.handoff(*self._here)

    @property
    def focused(self) -> FactUnderReview | None:
        """The fact the keyboard acts on (None when the handoff has no fact left)."""
        if self._focus is None or self._focus not in self._keys_of(self._here):
            return None
        return self._fact(self._focus)

    @property
    def done(self) -> bool:
        """True once every fact has a decision."""
        return all(k in self._latest for k in self._proposals)

    @property
    def progress(self) -> dict[str, int]:
        """Counts: ``handoffs`` and ``handoffs_done`` (every fact decided), ``facts`` (proposed
        and added) and ``decided``, and per decision ``accepted``, ``edited``, ``rejected``,
        ``added`` (added facts still kept)."""
        handoffs = self._handoff_keys()
        keys = [k for h in handoffs for k in self._keys_of(h)]
        decided = [self._latest[k].decision for k in keys if k in self._latest]
        return {"handoffs_done": sum(all(k in self._latest for k in self._keys_of(h))
                                     for h in handoffs),
                "handoffs": len(handoffs), "decided": len(decided), "facts": len(keys),
                "accepted": decided.count("accept"), "edited": decided.count("edit"),
                "rejected": decided.count("reject"), "added": decided.count("add")}

    def decision_of(self, fact_id: str | None = None, *, conversation_id: str | None = None
                    ) -> ReviewDecision | None:
        """This reviewer's latest decision on a fact (default: the focused fact)."""
        return self._latest.get(self._resolve(fact_id, conversation_id))

    # ---------------------------------------------------------------- moving
    def _first_open_fact(self, here: tuple[str, int], after: tuple[str, int, str] | None = None
                         ) -> tuple[str, int, str] | None:
        keys = self._keys_of(here)
        if not keys:
            return None
        start = keys.index(after) + 1 if after in keys else 0
        for k in keys[start:] + keys[:start]:
            if k not in self._latest:
                return k
        return after if after in keys else keys[0]

    def _first_open_handoff(self) -> tuple[str, int]:
        handoffs = self._handoff_keys()
        for h in handoffs:
            if any(k not in self._latest for k in self._keys_of(h)):
                return h
        return handoffs[0]

    def _go(self, here: tuple[str, int]) -> HandoffUnderReview:
        self._here = here
        self._focus = self._first_open_fact(here)
        return self.current

    def next(self) -> HandoffUnderReview:
        """Move to the next handoff (stays on the last one); returns it."""
        keys = self._handoff_keys()
        return self._go(keys[min(keys.index(self._here) + 1, len(keys) - 1)])

    def previous(self) -> HandoffUnderReview:
        """Move to the previous handoff (stays on the first one); returns it."""
        keys = self._handoff_keys()
        return self._go(keys[max(keys.index(self._here) - 1, 0)])

    prev = previous

    def go_to(self, conversation_id: str, handoff_index: int) -> HandoffUnderReview:
        """Jump to a handoff (one with facts to review)."""
        here = (conversation_id, handoff_index)
        if here not in self._handoff_keys():
            raise KeyError(f"handoff {handoff_index} of {conversation_id!r} has no facts to "
                           "review in this session")
        return self._go(here)

    def focus(self, fact_id: str) -> FactUnderReview:
        """Focus a fact of the current handoff."""
        key = (*self._here, fact_id)
        if key not in self._keys_of(self._here):
            raise KeyError(f"no fact {fact_id!r} at the current handoff")
        self._focus = key
        return self._fact(key)

    def focus_next(self) -> FactUnderReview | None:
        """Focus the next fact of the current handoff (stays on the last)."""
        return self._focus_step(+1)

    def focus_previous(self) -> FactUnderReview | None:
        """Focus the previous fact of the current handoff (stays on the first)."""
        return self._focus_step(-1)

    def _focus_step(self, step: int) -> FactUnderReview | None:
        keys = self._keys_of(self._here)
        if not keys:
            return None
        i = keys.index(self._focus) if self._focus in keys else 0
        self._focus = keys[min(max(i + step, 0), len(keys) - 1)]
        return self._fact(self._focus)

    # ---------------------------------------------------------------- deciding
    def _resolve(self, fact_id: str | None, conversation_id: str | None
                 ) -> tuple[str, int, str]:
        if fact_id is None:
            if self._focus is None or self._focus not in self._keys_of(self._here):
                raise ValueError("no fact is focused at this handoff; name a `fact_id`")
            return self._focus
        known = [*self._proposals, *(k for k in self._added if k in self._latest)]
        here = [k for k in self._keys_of(self._here) if k[2] == fact_id
                and conversation_id in (None, k[0])]
        found = here or [k for k in known if k[2] == fact_id
                         and conversation_id in (None, k[0])]
        if not found:
            raise KeyError(f"no fact {fact_id!r}" + (f" in {conversation_id!r}"
                                                    if conversation_id else "") +
                           " in this session")
        if len(found) > 1:
            raise ValueError(f"fact {fact_id!r} is in several conversations "
                             f"({', '.join(sorted({k[0] for k in found}))}); pass "
                             "`conversation_id=`")
        return found[0]

    def _write(self, key: tuple[str, int, str], decision: str, text: str | None,
               value: str | None) -> ReviewDecision:
        rec = ReviewDecision(fact_id=key[2], conversation_id=key[0], handoff_index=key[1],
                             reviewer=self.reviewer, decision=decision,  # type: ignore[arg-type]
                             text=text, value=value, created_at=_now())
        line = json.dumps(rec.model_dump(), ensure_ascii=False) + "\n"
        if append_lines(self.path, [line.encode("utf-8")]):
            self.torn_last_line = None
        return rec

    def _decide(self, key: tuple[str, int, str], decision: str, text: str | None,
                value: str | None) -> ReviewDecision:
        before = self._latest.get(key)
        rec = self._write(key, decision, text, value)
        self._apply(rec)
        self._undo.append((key, before))
        if key[:2] == self._here:
            self._focus = self._first_open_fact(self._here, after=key)
        return rec

    def accept(self, fact_id: str | None = None, *, conversation_id: str | None = None
               ) -> ReviewDecision:
        """Keep a fact as proposed (default: the focused fact); on disk before returning."""
        key = self._resolve(fact_id, conversation_id)
        f = self._fact(key).proposed
        return self._decide(key, "add" if f.proposer == ADDED_BY else "accept", f.text,
                            f.value)

    def reject(self, fact_id: str | None = None, *, conversation_id: str | None = None
               ) -> ReviewDecision:
        """Drop a fact (default: the focused fact): it is not exported."""
        key = self._resolve(fact_id, conversation_id)
        f = self._fact(key).fact
        return self._decide(key, "reject", f.text, f.value)

    def edit(self, fact_id: str | None = None, *, text: str | None = None,
             value: str | None = _KEEP, conversation_id: str | None = None
             ) -> ReviewDecision:
        """Keep a fact with a new text and/or value (default: the focused fact).

        The fact keeps its ``fact_id``, so its labels survive. ``text`` defaults to the text
        shown, ``value`` to the value shown; ``value=None`` removes the value.
        """
        key = self._resolve(fact_id, conversation_id)
        f = self._fact(key).fact
        text = f.text if text is None else text
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"`text` must be the fact's non-blank text, got {text!r}")
        value = f.value if value is _KEEP else _clean_value(value)
        return self._decide(key, "edit", text.strip(), value)

    def add(self, handoff: HandoffUnderReview | tuple[str, int] | None, text: str,
            value: str | None = None) -> ReviewDecision:
        """Add a fact the proposers missed, at ``handoff`` (None: the current handoff).

        Its id comes from :func:`~maev_kit.facts.fact_id_for`, as a proposer's would.
        """
        if handoff is None:
            here = self._here
        elif isinstance(handoff, HandoffUnderReview):
            here = handoff.key
        else:
            here = (handoff[0], int(handoff[1]))
        trace = self._traces.get(here[0])
        if trace is None or not 0 <= here[1] < len(trace.handoffs):
            raise KeyError(f"no handoff {here[1]} of {here[0]!r} in this session")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"`text` must be the fact's non-blank text, got {text!r}")
        text = text.strip()
        key = (*here, fact_id_for(here[1], text))
        if key in self._proposals:
            raise ValueError(f"{text!r} is already proposed here (fact {key[2]}); accept or "
                             "edit it instead")
        if key in self._latest and self._latest[key].decision != "reject":
            raise ValueError(f"{text!r} is already added here (fact {key[2]})")
        return self._decide(key, "add", text, _clean_value(value))

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    def undo(self) -> HandoffUnderReview | None:
        """Undo this session's last decision and go back to that fact; returns its handoff.

        The file is append-only, so undo appends a line: the earlier decision again, or —
        when the fact had none — an ``undo`` line, after which it has no decision (an added
        fact is gone). Returns None (and does nothing) when there is nothing to undo.
        """
        if not self._undo:
            return None
        key, before = self._undo.pop()
        if before is None:
            rec = self._write(key, "undo", None, None)
        else:
            rec = self._write(key, before.decision, before.text, before.value)
        self._apply(rec)
        here = key[:2]
        if here in self._handoff_keys():
            self._here = here
            self._focus = key if key in self._keys_of(here) else self._first_open_fact(here)
        else:  # undid the only added fact of a handoff without proposals
            self._here = self._first_open_handoff()
            self._focus = self._first_open_fact(self._here)
        return self.current

    # ---------------------------------------------------------------- results
    def reviewed_facts(self) -> list[ProposedFact]:
        """The facts this reviewer kept (accepted, edited, added), edits applied, in review
        order; each with ``reviewed=True`` and ``proposer`` naming where it came from
        (``"reviewer"`` for an added fact)."""
        return [f.fact for h in self._handoff_keys() for f in
                (self._fact(k) for k in self._keys_of(h)) if f.decision in _KEPT]

    def export_expectations(self, path: str | os.PathLike[str], *, dry_run: bool = False
                            ) -> ExpectationsExport:
        """Merge the reviewed facts into an ``expectations.jsonl``; nothing else changes.

        The file is updated, never replaced wholesale:

        - a conversation this reviewer decided nothing in keeps its line byte for byte, and so
          does a reviewed conversation whose facts did not change;
        - in a reviewed conversation, a fact the reviewer kept (accepted, edited, added) is
          written with its reviewed text (in place when the line already lists it, else after
          the line's facts); a fact the reviewer **rejected** is removed; every other key fact
          — written by hand, or exported earlier — stays, as do the line's expected handoffs,
          routing cases and metadata (``fact_proposers`` gains the reviewed facts' proposers,
          ``facts_reviewed_by`` names the reviewer);
        - a reviewed conversation the file does not list yet gets a new line at the end (an
          empty ``key_facts`` when every fact was rejected, so it is not proposed again).

        The new file is written to a temporary file beside it and renamed over it
        (``os.replace``), so a crash leaves the old file or the new one, never half of each.
        With ``dry_run=True`` nothing is written: the returned export's ``diff`` (a unified
        diff) and ``summary()`` say what would change.

        Returns an :class:`ExpectationsExport`: the merged records of the reviewed
        conversations (a list, in trace order) with ``diff``, ``changed``, ``added`` and
        ``removed`` (the rejected facts taken out).

        Raises
        ------
        ExpectationsFileError
            When the existing file has malformed lines (each named ``file:line › field``);
            nothing is written.
        """
        target = Path(path)
        if target.is_dir():
            raise IsADirectoryError(21, "is a folder; give the expectations.jsonl file",
                                    os.fspath(path))
        name = display_name(target)
        old_bytes, lines_of = _read_expectations_file(target, name)
        export = ExpectationsExport(path=target, dry_run=dry_run)
        new_bytes = self._merged_file(old_bytes, lines_of, export)
        export.unchanged = len(lines_of) - len(export.changed)
        export.diff = "".join(difflib.unified_diff(
            old_bytes.decode("utf-8").splitlines(keepends=True),
            new_bytes.decode("utf-8").splitlines(keepends=True),
            fromfile=f"{name} (now)", tofile=f"{name} (after export)"))
        if not dry_run and (new_bytes != old_bytes or not target.exists()):
            _atomic_write(target, new_bytes)
        export.written = not dry_run
        return export

    def _merged_file(self, old_bytes: bytes, lines_of: dict[str, int],
                     export: ExpectationsExport) -> bytes:
        """The expectations file ``old_bytes`` (``lines_of``: the line of each conversation)
        with each reviewed conversation's line merged (:meth:`_merge`) in place, or appended
        when the file has none; records each merged record, and what changed, in
        ``export``."""
        from maev_kit.expectations import EXPECTATIONS_ADAPTER, expectations_to_dict

        raw_lines = old_bytes.splitlines(keepends=True)
        reviewed = self.reviewed_facts()
        cids = [cid for cid in self._traces if any(k[0] == cid for k in self._latest)]
        new_lines = list(raw_lines)
        appended: list[bytes] = []
        for cid in cids:
            at = lines_of.get(cid)
            old = json.loads(raw_lines[at - 1]) if at is not None else None
            merged, removed = self._merge(cid, old, [f for f in reviewed
                                                      if f.conversation_id == cid])
            if old is None:
                merged = expectations_to_dict(EXPECTATIONS_ADAPTER.validate_python(merged))
            record = EXPECTATIONS_ADAPTER.validate_python(merged)
            export.append(record)
            export.removed += [(cid, fid) for fid in removed]
            if old is not None and merged == old:
                continue  # nothing changed: the line stays byte for byte
            line = (json.dumps(merged, ensure_ascii=False, separators=(", ", ": "))
                    + "\n").encode("utf-8")
            if at is None:
                appended.append(line)
                export.added.append(cid)
            else:
                new_lines[at - 1] = line
                export.changed.append(cid)
        if appended and new_lines and not new_lines[-1].endswith(b"\n"):
            new_lines[-1] += b"\n"
        return b"".join(new_lines + appended)

    def _merge(self, cid: str, old: dict[str, Any] | None, kept: list[ProposedFact]
               ) -> tuple[dict[str, Any], list[str]]:
        """The expectations line of a reviewed conversation: ``old`` (its current line, as
        parsed JSON, or None) with the kept facts written in and the rejected ones taken out;
        and the ids of the facts taken out."""
        rejected = {(k[1], k[2]) for k, rec in self._latest.items()
                    if k[0] == cid and rec.decision == "reject"}
        by_key = {(f.handoff_index, f.fact_id): f for f in kept}
        out: dict[str, Any] = dict(old) if old is not None else {"conversation_id": cid}
        facts: list[Any] = []
        removed: list[str] = []
        placed: set[tuple[int, str]] = set()
        for kf in (old or {}).get("key_facts") or []:
            key = (kf.get("handoff_index"), kf.get("fact_id"))
            if key in rejected and key not in by_key:
                removed.append(str(key[1]))
                continue
            if key in by_key:
                placed.add(key)  # type: ignore[arg-type]
                kf = {**kf, "text": by_key[key].text}  # type: ignore[index]
            facts.append(kf)
        facts += [{"fact_id": f.fact_id, "handoff_index": f.handoff_index, "text": f.text}
                  for key, f in by_key.items() if key not in placed]
        out["key_facts"] = facts
        metadata = dict(out.get("metadata") or {})
        proposers = dict(metadata.get("fact_proposers") or {})
        still = {kf.get("fact_id") for kf in facts}
        for fid in removed:
            if fid not in still:
                proposers.pop(fid, None)
        proposers.update({f.fact_id: f.proposer for f in kept})
        metadata["fact_proposers"] = proposers
        metadata["facts_reviewed_by"] = self.reviewer
        out["metadata"] = metadata
        return out, removed


class ExpectationsFileError(LabelValidationError):
    """The ``expectations.jsonl`` to export into has malformed lines; nothing was written."""

    kind = "expectations"


class ExpectationsExport(list):  # type: ignore[type-arg]
    """What :meth:`FactReviewSession.export_expectations` wrote (or, in a dry run, would
    write): the merged records of the reviewed conversations, in trace order (a list of
    :class:`~maev_kit.expectations.ConversationExpectations`), and

    ``path``, ``dry_run``, ``written`` (False in a dry run); ``changed`` / ``added``: the
    conversations whose line changed / was added; ``unchanged``: lines kept byte for byte;
    ``removed``: ``(conversation_id, fact_id)`` of the rejected facts taken out; ``diff``: a
    unified diff of the file before and after ("" when nothing changes).
    """

    def __init__(self, *, path: Path, dry_run: bool):
        super().__init__()
        self.path = path
        self.dry_run = dry_run
        self.written = False
        self.changed: list[str] = []
        self.added: list[str] = []
        self.removed: list[tuple[str, str]] = []
        self.unchanged = 0
        self.diff = ""

    def summary(self) -> str:
        """One line: what changed (or would change) in the file."""
        verb = "would change" if self.dry_run else "changed"
        return (f"{display_name(self.path)}: {len(self.changed)} conversation line(s) "
                f"{verb}, {len(self.added)} added, {self.unchanged} kept as they were; "
                f"{len(self.removed)} rejected fact(s) taken out"
                + (" (dry run: nothing written)" if self.dry_run else ""))

    def __repr__(self) -> str:
        return self.summary() + ("\n" + self.diff if self.diff else "")

    def __eq__(self, other: object) -> bool:  # a list of records, compared as one
        return list.__eq__(self, other)  # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]


def _read_expectations_file(target: Path, name: str) -> tuple[bytes, dict[str, int]]:
    """The bytes of the expectations file ``target`` (``b""`` when there is none) and the
    line of each conversation in it. Raises :class:`ExpectationsFileError` when a line is
    malformed."""
    from maev_kit.expectations import read_expectations

    old_bytes = target.read_bytes() if target.exists() else b""
    lines_of: dict[str, int] = {}
    if target.exists():
        _, problems, lines_of = read_expectations(target, name=name)
        if problems:
            raise ExpectationsFileError(problems)
    return old_bytes, lines_of


def _atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and
    ``os.replace``: readers see the old file or the new one, never a part. An existing
    file's permissions are kept."""
    import tempfile

    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _clean_value(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"`value` must be a string or None, got {type(value).__name__}")
    return value.strip() or None
