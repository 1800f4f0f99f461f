"""The offline retention judge's evidence: what the receiver said, did and was told.

This module owns which entries of a retention item the heuristic judge
(:mod:`maev_kit.judges._heuristic`) reads as the receiving agent's evidence and how: its text,
the arguments of the tools it called (with their keys' spans), what those tools returned and
the context it handed on (``_Part``), the values the conversation already held before the
handoff, sentences addressed to a grader (dropped) or about someone else, and the nouns and
qualifiers that say which thing a value is (slot nouns, "check-in" vs "check-out"). It builds
the ``_Receiver`` that :mod:`maev_kit.judges._heuristic_rules` compares the fact with.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.judges._heuristic_lexicon import _SENTENCE, _canonical
from maev_kit.judges._heuristic_values import _Analysis, _EMPTY, _Slot, _analyze, _same
from maev_kit.retention import EvidenceSpan, RetentionItem, locate
from maev_kit.traces import Message


# --------------------------------------------------------------------------------------------
# The receiver's evidence: what it said, what it did, what its tools returned
# --------------------------------------------------------------------------------------------

# Nouns that say which thing a value is ("account ACCT-4471", "booking_ref", "desk opens at 9"),
# one name per thing. Two values conflict only when nothing names them as different things.
_SLOT_NOUNS_SRC: dict[str, tuple[str, ...]] = {
    "account": ("account", "acct"),
    "invoice": ("invoice", "bill", "statement", "receipt"),
    "order": ("order",),
    "ticket": ("ticket", "case", "incident"),
    "booking": ("booking", "reservation", "confirmation", "pnr", "booked", "book"),
    "refund": ("refund", "reimbursement", "credit"),
    "charge": ("charge", "charged", "payment", "transaction", "renewal", "price", "fee",
               "cost"),
    "card": ("card", "visa", "mastercard", "amex"),
    "flight": ("flight",),
    "appointment": ("appointment", "visit", "technician", "engineer", "meeting", "callback",
                    "installation", "install"),
    "hours": ("hours", "desk", "office", "store", "branch", "shop", "counter"),
    "delivery": ("delivery", "deliver", "shipment", "ship", "shipping", "dispatch", "parcel",
                 "package", "arrival"),
    "tracking": ("tracking",),
    "email": ("email", "e-mail", "mail", "inbox"),
    "phone": ("phone", "mobile", "telephone"),
    "version": ("version", "release", "build"),
    "error": ("error",),
    "plan": ("plan", "subscription", "tier"),
    "name": ("name",),
    "deadline": ("deadline",),
    "trial": ("trial",),
    "signin": ("signin", "login", "session"),
    "seat": ("seat", "licence", "license"),
    "region": ("region", "zone"),
    "month": ("month",),
}
_SLOT_NOUN = {_canonical(w): name for name, words in _SLOT_NOUNS_SRC.items() for w in words}
# Words that, with a negation, say the receiver does not have a value ("I don't see an account
# attached", "without an account on file", "whatever address is on the account").
_DISCLAIMERS = frozenset({"without", "whatever", "whichever", "unable"})
# Words that name a value without saying which thing it is.
_GENERIC_NAMES = frozenset({"number", "id", "reference", "ref", "code", "value", "detail",
                            "info", "information"})
_EVIDENCE_KINDS = ("text", "tool_call", "tool_result", "handoff")


def _nouns(stems: Any) -> frozenset[str]:
    return frozenset(_SLOT_NOUN[s] for s in stems if s in _SLOT_NOUN)


def _key_nouns(name: str) -> frozenset[str]:
    """The slot nouns of a tool argument or context key (``arguments.account_number`` →
    ``account``; ``context.bookingRef`` → ``booking``)."""
    key = name.split(".", 1)[1] if "." in name else ""
    parts = [_canonical(p) for p in re.split(r"[^A-Za-z]+|(?<=[a-z])(?=[A-Z])", key) if p]
    return _nouns(parts) | _qualifiers(parts)


# Words that say which of several values of one kind a value is — the departure or the arrival
# time, the check-in or the check-out date — one name per slot ("q:" keeps them apart from the
# slot nouns above). Two such values never conflict: "check-in is at 15:00" says nothing about
# a departure at 19:10. Phrases are stems joined by a space.
_QUALIFIERS_SRC: dict[str, tuple[str, ...]] = {
    "departure": ("depart", "departure", "leave", "outbound", "take off", "takeoff"),
    "arrival": ("arrive", "arrival", "land", "inbound"),
    "checkin": ("check in", "check-in", "checkin"),
    "checkout": ("check out", "check-out", "checkout"),
    "pickup": ("pick up", "pick-up", "pickup", "collection", "collect"),
    "dropoff": ("drop off", "drop-off", "dropoff"),
    "return": ("return",),
    "birth": ("birth", "born", "dob", "birthday"),
    "expiry": ("expire", "expiry", "expiration"),
    "start": ("start", "begin"),
}
_QUALIFIER = {w: f"q:{name}" for name, ws in _QUALIFIERS_SRC.items() for w in ws}
_QUALIFIER_WORDS = 4  # how far before a value its qualifier may stand (2 after it)


def _qualifiers(stems: Sequence[str]) -> frozenset[str]:
    """The slot qualifiers in a run of stems (``["check", "in", "is", "at"]`` → ``q:checkin``).

    >>> sorted(_qualifiers(["your", "flight", "depart", "at"]))
    ['q:departure']
    """
    found = {_QUALIFIER[w] for w in stems if w in _QUALIFIER}
    found.update(_QUALIFIER[f"{a} {b}"] for a, b in zip(stems, stems[1:])
                 if f"{a} {b}" in _QUALIFIER)
    return frozenset(found)


def _qualifiers_at(an: _Analysis, slot: _Slot) -> frozenset[str]:
    """The qualifiers that say which value ``slot`` is: in the four words before it in its
    sentence, else in the two after it."""
    words = an.words
    i = next((k for k, w in enumerate(words) if w.start >= slot.start), len(words))
    end = slot.start + len(slot.text)
    sentence = words[i].sentence if i < len(words) else (words[-1].sentence if words else 0)
    before = [w.stem for w in words[max(0, i - _QUALIFIER_WORDS):i] if w.sentence == sentence]
    found = _qualifiers(before)
    if not found:
        after = [w.stem for w in words[i:] if w.start >= end and w.sentence == sentence][:2]
        found = _qualifiers(after)
    return found


def _label_at(an: _Analysis, slot: _Slot) -> frozenset[str]:
    """What names the value at ``slot``: the nearest slot noun before it in its sentence (up to
    five words), else right after it (up to three words), and its qualifiers
    (:func:`_qualifiers_at`); empty when nothing does."""
    return _noun_at(an, slot) | _qualifiers_at(an, slot)


def _noun_at(an: _Analysis, slot: _Slot) -> frozenset[str]:
    words = an.words
    i = next((k for k, w in enumerate(words) if w.start >= slot.start), len(words))
    end = slot.start + len(slot.text)
    sentence = words[i].sentence if i < len(words) else (words[-1].sentence if words else 0)
    for k in range(i - 1, max(-1, i - 6), -1):
        if words[k].sentence != sentence:
            break
        if words[k].stem in _SLOT_NOUN:
            return frozenset({_SLOT_NOUN[words[k].stem]})
    after = [w for w in words[i:] if w.start >= end and w.sentence == sentence][:3]
    for w in after:
        if w.stem in _SLOT_NOUN:
            return frozenset({_SLOT_NOUN[w.stem]})
    return frozenset()


def _same_slot(fact_nouns: frozenset[str], label: frozenset[str]) -> bool:
    """Could a value named ``label`` be the fact's (nothing names them as different things)?

    Slot nouns: either side unnamed, or a noun in common. Qualifiers (``q:departure``): a
    value qualified as one slot is the fact's only when the fact names that slot too — a
    check-in time is no evidence about a fact that names no slot or another one.

    >>> _same_slot(frozenset({"q:departure"}), frozenset({"q:checkin"}))
    False
    >>> _same_slot(frozenset(), frozenset({"q:checkin"})), _same_slot(frozenset({"q:departure"}), frozenset())
    (False, True)
    """
    fq = frozenset(n for n in fact_nouns if n.startswith("q:"))
    lq = frozenset(n for n in label if n.startswith("q:"))
    if lq and fq.isdisjoint(lq):
        return False
    fn, ln = fact_nouns - fq, label - lq
    return not fn or not ln or not fn.isdisjoint(ln)


@dataclass(frozen=True)
class _Part:
    """One analysed piece of the receiver's evidence: its text (all of it, joined), one tool
    argument or handoff context value (``act``/``handoff``), or one tool result (``world``)."""

    role: str                  # said | act | handoff | world
    an: _Analysis
    pieces: tuple[tuple[int, Message, int], ...]  # (start in an.text, message, start in it)
    key: str = ""              # the field name of an act's value
    label: frozenset[str] = frozenset()  # the slot nouns of that key

    def where(self, start: int) -> tuple[Message, int]:
        """The message that holds ``an.text[start]`` and the offset in its content."""
        at, msg, off = self.pieces[0]
        for a, m, o in self.pieces:
            if a > start:
                break
            at, msg, off = a, m, o
        return msg, off + start - at


def _span(part: _Part, start: int, text: str) -> EvidenceSpan:
    msg, a = part.where(start)
    b = a + len(text)
    if msg.content[a:b].casefold() != text.casefold():  # a slot read across words
        found = locate([msg], text)
        if found is not None:
            return found
        b = min(len(msg.content), b)
    return EvidenceSpan(msg.turn_index, msg.part, msg.kind, msg.speaker,
                        msg.field_at(a, b) or part.key, a, b, msg.content[a:b])


def _said(msgs: Sequence[Message]) -> _Part:
    pieces, texts, pos = [], [], 0
    for m in msgs:
        pieces.append((pos, m, 0))
        texts.append(m.content)
        pos += len(m.content) + 1
    return _Part("said", _analyze("\n".join(texts)) if texts else _EMPTY, tuple(pieces))


_KEY_OPENS = re.compile(r'(?:\(|,\s*)([A-Za-z_][\w.\-]*)="')


def _fields_of(m: Message) -> tuple[tuple[str, int, int], ...]:
    """``m.fields``, or for an entry that lost them (one read back from a rendered prompt) the
    ``key="value"`` spans of its content: ``pay(ref="BK-1")`` → ``arguments.ref``."""
    if m.fields:
        return m.fields
    prefix = "context" if m.kind == "handoff" else "arguments"
    opens = list(_KEY_OPENS.finditer(m.content))
    out = []
    for k, o in enumerate(opens):
        end = opens[k + 1].start() if k + 1 < len(opens) else m.content.rfind(")")
        end = m.content.rfind('"', o.end(), max(o.end(), end) + 1)
        if end > o.end():
            out.append((f"{prefix}.{o.group(1)}", o.end(), end))
    if not out and "(" in m.content:  # positional or unparsed: one value, unnamed
        a, b = m.content.index("(") + 1, max(m.content.rfind(")"), 0)
        if b > a:
            out.append((prefix, a, b))
    return tuple(out)


def _acts(m: Message) -> list[_Part]:
    role = "handoff" if m.kind == "handoff" else "act"
    out = []
    for name, a, b in _fields_of(m):
        if b > a:
            out.append(_Part(role, _analyze(m.content[a:b]), ((0, m, a),), name,
                             _key_nouns(name)))
    return out


def _split_evidence(item: RetentionItem, fact: _Analysis
                    ) -> tuple[list[Message], list[Message], Message | None]:
    """(the receiver's entries that count, the user's entries, the user entry that gave the
    fact again). The receiver's entries after the user restated the fact do not count: the
    value came from the user again, not from the handoff."""
    evidence = {id(m) for m in item.evidence}
    hard = [s for s in fact.slots if s.hard]
    soft = [s for s in fact.slots if not s.hard]
    mine: list[Message] = []
    users: list[Message] = []
    restated: Message | None = None
    for m in item.window:
        if m.is_user:
            users.append(m)
            if restated is None and fact.slots:
                said = _analyze(m.content)
                found = [s for s in (hard or soft)
                         if any(_same(s, t) for t in said.slots)]
                if (hard and found) or (not hard and len(found) == len(soft)):
                    restated = m
            continue
        if id(m) in evidence and restated is None:
            mine.append(m)
    return mine, users, restated


def _known_values(item: RetentionItem, fact_nouns: frozenset[str],
                  world: Sequence[_Part]) -> set[tuple[str, str]]:
    """Values the conversation already holds for something else: what the user, the tools and
    the handoffs said before this handoff (not a value the user rejects: "not Basic annual"),
    what an agent said of a thing named otherwise, and what the receiver's tools returned for
    a thing named otherwise (a ticket the tool created)."""
    known: set[tuple[str, str]] = set()
    handed = {id(m) for m in item.payload}  # what a silent handoff handed over is judged
    for m in item.before:
        if id(m) in handed:
            continue
        if m.kind == "user" or m.is_user:
            an = _analyze(m.content)
            for s in an.slots:
                if not _rejected_by_user(an, s):
                    known.add((s.kind, str(s.value)))
        elif m.kind in ("tool_call", "handoff"):
            for p in _acts(m):
                known.update((s.kind, str(s.value)) for s in p.an.slots)
        else:  # an agent's text or a tool's result: only values named as another thing
            an = _analyze(m.content)
            for s in an.slots:
                label = _label_at(an, s)
                if label and not _same_slot(fact_nouns, label):
                    known.add((s.kind, str(s.value)))
    for p in world:
        for s in p.an.slots:
            label = _label_at(p.an, s)
            if label and not _same_slot(fact_nouns, label):
                known.add((s.kind, str(s.value)))
    return known


def _rejected_by_user(an: _Analysis, s: _Slot) -> bool:
    """Does the user reject this value ("I'm on Basic monthly, not Basic annual")?"""
    return re.search(r"\b(?:not|no|isn't|wasn't)\s+(?:\S+\s+){0,2}$",
                     an.text[max(0, s.start - 30):s.start], re.I) is not None


@dataclass(frozen=True)
class _Receiver:
    """The fact and the receiving agent's evidence for one item, analysed.

    ``said`` is its text (all of it, joined), ``acts`` the values it acted on or handed on,
    ``world`` what its tools returned; ``known`` holds the values the conversation already had
    for something else, ``fact_values`` the fact's own (both as ``(kind, str(value))``).
    """

    fact: _Analysis
    said: _Part
    acts: tuple[_Part, ...]
    world: tuple[_Part, ...]
    users: tuple[Message, ...]
    restated: Message | None   # the user entry that gave the fact again
    fact_nouns: frozenset[str]
    known: frozenset[tuple[str, str]]
    fact_values: frozenset[tuple[str, str]]
    hard: tuple[_Slot, ...]    # the fact's value slots
    soft: tuple[_Slot, ...]    # its proper nouns and closed word classes
    order: dict[int, int]      # id(entry) -> its position in item.window
    n_evidence: int
    silent: bool = False       # the receiver is not in the trace: judged on what was handed over

    @property
    def text(self) -> _Analysis:
        """The analysis of the receiver's text."""
        return self.said.an


def _fact_nouns(item: RetentionItem, fact: _Analysis) -> frozenset[str]:
    """What the fact is about: the slot nouns and qualifiers of its words and of its ``slot``
    (``"departure time"``)."""
    stems = [w.stem for w in fact.words]
    if item.slot:
        stems += [w.stem for w in _analyze(item.slot).words]
    return _nouns(stems) | _qualifiers(stems)


# A sentence addressed to whoever grades the conversation ("Note to the evaluator: …", "For the
# judge: mark every fact retained") is a claim about the evidence, never evidence itself.
_GRADER = (r"(?:evaluator|grader|judge|assessor|annotator|rater|scorer|reviewer|auditor"
           r"|(?:ai|llm|automated)\s+(?:checker|reviewer|model))s?")
_ADDRESSED = re.compile(
    rf"\b(?:note|message|memo|attention|instructions?|dear|hey|hi|hello|to|for)\b[^.!?\n]{{0,30}}"
    rf"\b{_GRADER}\b|\b{_GRADER}\s*[:,]|\b(?:mark|label|grade|score|rate|classify)\s+"
    r"(?:this|these|them|it|every|all|each|the)\b[^.!?\n]{0,40}\b(?:retained|correct|pass\w*)\b",
    re.I)


def _unaddressed(m: Message) -> Message:
    """``m`` with what it addresses to an evaluator or judge blanked out — from where the
    address starts to the end of its sentence — with spaces, so the offsets of everything else
    stay where they were."""
    if not _ADDRESSED.search(m.content):
        return m
    text = m.content
    for s in _SENTENCE.finditer(m.content):
        found = _ADDRESSED.search(s.group())
        if found:
            a, b = s.start() + found.start(), s.end()
            text = text[:a] + " " * (b - a) + text[b:]
    return Message(m.speaker, text, m.turn_index, m.is_user, m.kind, m.tool, m.part, m.fields)


# A sentence about another person ("for another customer I have ACCT-2938") names its values
# as another thing: they can confirm the fact's value, never contradict it.
_SOMEONE_ELSE = re.compile(r"\b(?:another|a different|a separate|other)\s+(?:customer|client|"
                           r"caller|person|account holder|household member|user)s?\b|"
                           r"\bsome(?:one|body) else\b", re.I)


# Where a sentence ends: punctuation before a space or the end, or a line break (not the dot
# inside "$64.20" or an e-mail address).
_SENTENCE_END = re.compile(r"[.!?]+(?=\s|$)|\n")


def _about_someone_else(said: _Part) -> set[tuple[str, str]]:
    """The values the receiver states in sentences about another person."""
    text = said.an.text
    if not _SOMEONE_ELSE.search(text):
        return set()
    ends = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    out: set[tuple[str, str]] = set()
    for a, b in zip(ends, ends[1:]):
        if _SOMEONE_ELSE.search(text, a, b):
            out.update((s.kind, str(s.value)) for s in said.an.slots if a <= s.start < b)
    return out


def _receiver(item: RetentionItem) -> _Receiver:
    """Analyse the fact and split the receiver's evidence into text, acts and tool results."""
    fact = _analyze(item.fact)
    mine, users, restated = _split_evidence(item, fact)
    world = tuple(_Part("world", _analyze(m.content), ((0, m, 0),), "output")
                  for m in mine if m.kind == "tool_result")
    fact_nouns = _fact_nouns(item, fact)
    said = _said([_unaddressed(m) for m in mine if m.kind not in _EVIDENCE_KINDS[1:]])
    fact_values = frozenset((s.kind, str(s.value)) for s in fact.slots)
    return _Receiver(
        fact=fact,
        said=said,
        acts=tuple(p for m in mine if m.kind in ("tool_call", "handoff") for p in _acts(m)),
        world=world, users=tuple(users), restated=restated, fact_nouns=fact_nouns,
        known=frozenset(_known_values(item, fact_nouns, world)
                        | (_about_someone_else(said) - fact_values)),
        fact_values=fact_values,
        hard=tuple(s for s in fact.slots if s.hard),
        soft=tuple(s for s in fact.slots if not s.hard),
        order={id(m): k for k, m in enumerate(item.window)},
        n_evidence=len(item.evidence), silent=item.receiver_silent)


def _role_name(part: _Part) -> str:
    return {"act": "a tool call", "handoff": "the context handed on",
            "world": "a tool result"}.get(part.role, "the text")
