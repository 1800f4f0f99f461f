"""A rule-based retention judge from the standard library: value slots, polarity, re-asks, overlap.

It reads the fact for *value slots* (identifiers such as ``ACCT-4471`` or ``eu-west-1`` as whole
tokens, e-mails, money, percentages, numbers with units and number words, dates, weekdays,
months, times, proper nouns, and closed word classes such as billing periods, antonym pairs
like approved/denied, colours or posture) and looks for the same slots in the **receiving
agent's evidence** (:attr:`~maev_kit.retention.RetentionItem.evidence`): its text, the
arguments of the tools it called, what those tools returned, and the context it handed on.
Other agents' entries (the router's closing summary, the delegating agent's own turns) are no
evidence; the user's entries are context: the receiver's entries after the user gave the fact
again do not count (the value came from the user, not from the handoff).

- the receiver states, or acts on (a tool argument, the context it hands on), another value in
  the fact's slot and not the fact's value (``ACCT-4472`` for ``ACCT-4471``, ``Thursday`` for
  ``Tuesday``, ``card ending 5036`` for ``card ends in 5063``, ``Plus monthly`` for ``Pro
  monthly``, ``pay(booking_ref="BK-2")`` for ``BK-1``) → *contradicted*; so is a replacement
  cue ("instead of", "rather than", "switched to") that rejects the fact's value, or a sentence
  that negates the fact's own statement. *Same slot* means: a value of the same kind (and
  shape) that nothing names as another thing — the noun before it ("our desk opens at 9:00" is
  not the appointment's 10:00; "invoice" is not "account") or the tool argument's key
  (``arguments.account_number``) — and that is not a value the conversation already holds (one
  the user, a tool or a handoff gave before the handoff, a ticket the receiver's tool created).
  A value inside a tool result alone never contradicts (it is what the world returned), and a
  negation of anything else ("no, I don't need a refund", "not a problem") never does;
- a question of the receiver asking for what the fact holds (a *re-ask*: "What is your account
  number?", or a yes/no question such as "Have you tried two cards?" when the value is not also
  stated), the user giving the fact again, or the receiver saying it lacks it ("I don't see an
  account attached") while the value is only in the context it hands on → *lost*;
- the fact's values found in its evidence (also as common paraphrases: ``ACCT-6795`` as
  ``6795`` or "the one ending in 95", ``$19.99`` as ``19.99``), or enough of its content words
  → *retained*; otherwise *lost*.

An identifier is matched as a whole token: the digits inside ``ACCT-4471`` never count as a
mention of ``4471``.

A number is read whole, however it is written (``1,200`` = ``1200``, ``12.0`` = ``12``,
``twelve``, ``two hundred and fifty``, ``a dozen``, a price said aloud such as ``twelve
fifty`` = ``$12.50``), and a quantity is keyed by what it counts: the unit word after it, or
one glued to it (``12-person``, ``2h``), normalised so that words counting people (seats,
people, users, licences, members, ``a team of 12``) are one unit and ``hours`` is ``h``. So
"12 seats" is retained by "With 12 people" and contradicted by "120 people", while "12 days",
"12:00", "$12", "12%", "the 12th seat" and "room 12" (a label, not a count) do not mention it.

Every verdict carries evidence strings naming the slots that matched or conflicted, and a
retained or contradicted one its ``span``: the receiver's entry (text, tool argument, tool
result, handoff context) and the characters that carried or contradicted the value; a lost one
points at the question that asked for it again, if any. ``signals(item)`` exposes the numbers
behind the decision (the learned judge uses them).

This module owns the judge itself: :class:`HeuristicJudge`, its version (the revision and a hash
of the source of every module below plus the tuned thresholds), and the two readings other
packages use (:func:`value_mentions`, :func:`changed_value`). The rules live in four private
modules, each read on its own: :mod:`~maev_kit.judges._heuristic_lexicon` (the words it knows),
:mod:`~maev_kit.judges._heuristic_values` (value extraction and normalisation: analyses, numbers,
slots), :mod:`~maev_kit.judges._heuristic_evidence` (the receiver's evidence, slot nouns and
qualifiers) and :mod:`~maev_kit.judges._heuristic_rules` (comparison, slot tally, the verdict and
its thresholds).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from maev_kit.judges._heuristic_evidence import (
    _label_at, _nouns, _qualifiers, _same_slot, _unaddressed as _unaddressed,
)
from maev_kit.judges._heuristic_lexicon import _REJECT_CUE
from maev_kit.judges._heuristic_rules import _PARAMS, _compare as _compare
from maev_kit.judges._heuristic_values import (
    _Analysis, _analyze as _analyze, _comparable, _content_stems as _content_stems, _same,
)
from maev_kit.judges._verdict import Verdict
from maev_kit.retention import RetentionItem

__all__ = ["HeuristicJudge", "ValueMention", "value_mentions"]


_REVISION = "3"  # 2: the receiver's evidence only (its text, tool calls and results, the
#   context it hands on); contradicted only by another value for the same thing; spans
#   3: a receiver not in the trace is judged on what was handed over; values keyed by slot


# A user changing a value themselves: a change verb, "actually", "instead", "make it"…
_USER_CHANGE = re.compile(r"\b(?:actually|instead|rather|make it|chang\w*|switch\w*|mov\w*|"
                          r"updat\w*|reschedul\w*|correct\w*|push\w*|prefer\w*|"
                          r"replac\w*)\b", re.I)


def changed_value(fact: str, message: str, *, slot: str = "") -> tuple[str, str] | None:
    """``(old, new)`` — the fact's value and the one that replaces it, as written — when a
    user's ``message`` changes the fact's value for the same slot ("actually, make the departure
    20:30", "switch me to flight HAT045"); None when it does not (no change word in the
    sentence, a value of another slot or kind, or the new value rejected: "not 20:30").

    >>> changed_value("Departure time is 19:10", "Actually, can we move the departure to 20:30?")
    ('19:10', '20:30')
    >>> changed_value("Departure time is 19:10", "Please change the check-in to 15:00") is None
    True
    >>> changed_value("Departure time is 19:10", "Departure 20:30 works too?") is None
    True
    """
    fa, an = _analyze(fact), _analyze(message)
    stems = [w.stem for w in fa.words] + [w.stem for w in _analyze(slot).words]
    nouns = _nouns(stems) | _qualifiers(stems)
    for t in an.slots:
        a, b = an.sentences[min(_sentence_of(an, t.start), len(an.sentences) - 1)]
        sentence = an.text[a:b]
        if (not t.hard or not _USER_CHANGE.search(sentence)
                or _REJECT_CUE.search(an.text[max(0, t.start - 30):t.start])
                or not _same_slot(nouns, _label_at(an, t))):
            continue
        for s in fa.slots:
            if s.hard and _comparable(s, t) and not _same(s, t) and not any(
                    _same(s, u) and u.start > t.start for u in an.slots):
                return s.text, t.text
    return None


@dataclass(frozen=True)
class ValueMention:
    """Where a text states one of a fact's values, as the heuristic reads values: the slot's
    ``kind`` (``ident``, ``date``, ``time``, ``money``…), its surface ``text`` and offsets."""

    kind: str
    text: str
    start: int
    end: int


def value_mentions(fact: str, text: str) -> list[ValueMention]:
    """The places where ``text`` states a value of ``fact`` — equal under the heuristic's value
    normaliser (``14:30`` = ``2:30 pm``, ``2024-03-05`` = ``3/5/2024``, ``$1,200`` = ``$1200``,
    ``acct-4471`` = ``ACCT-4471``) — in text order; the fact's own values (``text`` =
    ``fact``) when both are the same.

    >>> [(m.kind, m.text) for m in value_mentions("Pickup at 14:30 on 2024-03-05",
    ...                                           "See you 3/5/2024 at 2:30 pm.")]
    [('date', '3/5/2024'), ('time', '2:30 pm')]
    >>> value_mentions("Account is ACCT-4471", "Account ACCT-4472")
    []
    """
    want = [s for s in _analyze(fact).slots if s.hard]
    out = []
    for s in _analyze(text).slots:
        if s.hard and text[s.start:s.start + len(s.text)] == s.text \
                and any(a.kind == s.kind and _same(a, s) for a in want):
            out.append(ValueMention(s.kind, s.text, s.start, s.start + len(s.text)))
    return out


def _sentence_of(an: _Analysis, start: int) -> int:
    return next((k for k, (a, b) in enumerate(an.sentences) if a <= start < b), 0)


#: The modules whose source the version hashes: this one and the rules it is split into.
_SOURCES = ("_heuristic", "_heuristic_lexicon", "_heuristic_values", "_heuristic_evidence",
            "_heuristic_rules")


@lru_cache(maxsize=1)
def _version() -> str:
    """Revision + a hash of the judge's modules' source and parameters: any rule change shows."""
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update(Path(__file__).with_name(f"{name}.py").read_bytes())
    h.update(repr(sorted(_PARAMS.items())).encode())
    return f"{_REVISION}-{h.hexdigest()[:8]}"


class HeuristicJudge:
    """Rule-based offline retention judge (standard library only; deterministic; no I/O).

    See the module docstring for the rules. ``name`` is ``"heuristic"``; ``version`` changes
    when the rules or tuned thresholds change.

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> def item(fact, *said):
    ...     after = tuple(Message("billing", s, i) for i, s in enumerate(said))
    ...     return RetentionItem("c/h0/f1", "c", 0, "f1", fact, (), after)
    >>> judge = HeuristicJudge()
    >>> judge.judge_items([item("Account number is ACCT-4471", "I see ACCT-4472 here.")])[0].label
    'contradicted'
    >>> judge.judge(item("Account number is ACCT-4471", "What is your account number?")).label
    'lost'
    >>> v = judge.judge(item("Account number is ACCT-4471", "Refund for ACCT-4471 started."))
    >>> v.label, v.evidence, v.span.describe()
    ('retained', ("ident 'ACCT-4471' found",), 'billing · turn 0 · text: "ACCT-4471"')

    A tool argument carries a fact as well as a sentence does:

    >>> call = Message("billing", 'lookup(account_number="ACCT-4471")', 1, kind="tool_call",
    ...                tool="lookup", fields=(("arguments.account_number", 23, 32),))
    >>> v = judge.judge(RetentionItem("c/h0/f1", "c", 0, "f1", "Account is ACCT-4471", (),
    ...                               (call,), "triage", "billing"))
    >>> v.label, v.span.field
    ('retained', 'arguments.account_number')
    """

    name = "heuristic"
    offline = True

    def __init__(self) -> None:
        self.version = _version()

    def __repr__(self) -> str:
        return f"HeuristicJudge()  # version {self.version}"

    def judge_items(self, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in order."""
        out = []
        for it in items:
            c = _compare(it)
            out.append(Verdict(it.item_id, c.label, c.rationale, tuple(c.evidence),
                               span=c.span))
        return out

    def judge(self, item: RetentionItem) -> Verdict:
        """The verdict for one item."""
        return self.judge_items([item])[0]

    def signals(self, item: RetentionItem) -> dict[str, float]:
        """The numeric features behind the verdict (same keys for every item).

        >>> from maev_kit.retention import RetentionItem
        >>> it = RetentionItem("c/h0/f1", "c", 0, "f1", "Meeting on Tuesday", (), ())
        >>> s = HeuristicJudge().signals(it)
        >>> s["n_hard_slots"], s["n_agent_messages"]
        (1.0, 0.0)
        """
        return _compare(item).signals
