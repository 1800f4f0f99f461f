"""The offline retention judge's verdict rules: comparison, slot tally and the verdict.

This module owns how the heuristic judge (:mod:`maev_kit.judges._heuristic`) decides: for
each of the fact's value slots, where the receiver's evidence holds it or another value for the
same thing (``_find_slot``, ``_tally_slots``, replacement cues); the fact's topic, re-asks,
disclaimers and negations of the fact; and the decision among *retained*, *lost* and
*contradicted* with its rationale, evidence and span (``_compare``). It also owns the tuned
thresholds ``_PARAMS`` those rules read (tuned on the dev split of the SNLI subset only, see
``benchmarks/eval_offline_judges.py``), which feed the judge's version.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from maev_kit.judges._heuristic_evidence import (
    _DISCLAIMERS, _GENERIC_NAMES, _Part, _Receiver, _SLOT_NOUN, _label_at, _noun_at, _receiver,
    _role_name, _same_slot, _span,
)
from maev_kit.judges._heuristic_lexicon import (
    _ADOPT_CUE, _ASKS_FOR, _HYPERNYMS, _REJECT_CUE, _REPLACEMENT, _SPECIFIC_TO_GENERAL,
)
from maev_kit.judges._heuristic_values import (
    _Analysis, _Slot, _Word, _comparable, _content_stems, _is_question, _same,
)
from maev_kit.retention import EvidenceSpan, RetentionItem
from maev_kit.traces import Message

# Tuned on the dev split of the SNLI subset only (benchmarks/eval_offline_judges.py).
_PARAMS: dict[str, float] = {
    "retain_overlap": 0.6,       # share of the fact's content words found → retained
    "polarity_overlap": 0.5,     # overlap of the best sentence needed to trust a polarity flip
    "slot_share": 0.5,           # share of hard slots found → retained
    "negated_share": 0.6,        # share of a fact's words a negated sentence must restate
}


# --------------------------------------------------------------------------------------------
# Comparing a fact with the receiver's evidence
# --------------------------------------------------------------------------------------------


@dataclass
class _Comparison:
    signals: dict[str, float]
    label: str
    rationale: str
    evidence: list[str]
    span: EvidenceSpan | None = None


# A question that asks for the fact again, or asks to confirm it.
_ASKING = re.compile(r"(?:\W|hi|hello|and|so|also|first)*\b(?:have|did|do|are|is|has|were|was|"
                     r"had)\s+(?:you|your)\b", re.I)
_CONFIRM = re.compile(r"\b(?:confirm|right|correct|just to|still)\b", re.I)


# Slot analysis: where the receiver's entries hold each of the fact's values, or another one


@dataclass(frozen=True)
class _SlotFinds:
    """Where the receiver's entries hold one fact slot's value, and where another value for it."""

    matches: list[_Slot]                   # the value, in its text
    elsewhere: list[tuple[_Part, _Slot]]   # the value, in its acts and tool results
    others: list[_Slot]                    # another value for the same thing, in its text
    acted: list[tuple[_Part, _Slot]]       # another value, in a tool argument or handed-on context


def _conflicting(r: _Receiver, s: _Slot, t: _Slot, label: frozenset[str]) -> bool:
    """Is ``t`` (named ``label``) another value for the thing fact slot ``s`` holds: comparable,
    different, neither the fact's nor one the conversation already had, not named otherwise?"""
    # what was handed over to a receiver outside the trace is a summary of many values: another
    # value there conflicts only when it is named as the fact's own thing
    return (_comparable(s, t) and not _same(s, t)
            and (t.kind, str(t.value)) not in r.fact_values
            and (t.kind, str(t.value)) not in r.known and _same_slot(r.fact_nouns, label)
            and (not r.silent or not r.fact_nouns.isdisjoint(label)))


def _find_slot(r: _Receiver, s: _Slot) -> _SlotFinds:
    """Look for fact slot ``s`` in the receiver's text, acts and tool results."""
    text = r.text
    return _SlotFinds(
        matches=[t for t in text.slots if _same(s, t)],
        elsewhere=[(p, t) for p in (*r.acts, *r.world) for t in p.an.slots if _same(s, t)],
        others=[t for t in text.slots if _conflicting(r, s, t, _label_at(text, t))],
        acted=[(p, t) for p in r.acts for t in p.an.slots
               if _conflicting(r, s, t, p.label or _label_at(p.an, t))])


# Comparison: what the receiver did with each slot, then with the fact as a whole


@dataclass
class _SlotTally:
    """What the receiver's entries did with the fact's slots, filled in slot by slot."""

    found_soft: int = 0
    conflict_hard: int = 0
    conflict_soft: int = 0
    rejected: int = 0
    adopted_conflict: int = 0
    roles: dict[int, set[str]] = field(default_factory=dict)  # hard slot index -> where found
    matched_at: list[int] = field(default_factory=list)  # where the text states a hard value
    first_match: tuple[tuple[int, int], EvidenceSpan] | None = None
    conflict_span: EvidenceSpan | None = None

    def found_hard(self) -> int:
        """How many hard slots were found somewhere."""
        return sum(1 for r in self.roles.values() if r)

    def found_in(self, *where: str) -> int:
        """How many hard slots were found in one of the roles ``where``."""
        return sum(1 for r in self.roles.values() if not r.isdisjoint(where))

    def forget_said(self) -> None:
        """A value said only inside a re-ask does not count as said."""
        for r in self.roles.values():
            r.discard("said")

    def note_match(self, part: _Part, t: _Slot, order: dict[int, int]) -> None:
        """Keep the span of the earliest match (by entry, then offset)."""
        span = _span(part, t.start, t.text)
        msg, _ = part.where(t.start)
        rank = (order.get(id(msg), 0), span.start)
        if self.first_match is None or rank < self.first_match[0]:
            self.first_match = (rank, span)

    def keep_conflict_span(self, part: _Part, t: _Slot) -> None:
        """Keep the span of the first conflict."""
        if self.conflict_span is None:
            self.conflict_span = _span(part, t.start, t.text)

    def note_conflict(self, hard: bool, part: _Part, t: _Slot) -> None:
        """Count another value ``t`` for a hard or a soft slot."""
        if hard:
            self.conflict_hard += 1
        else:
            self.conflict_soft += 1
        self.keep_conflict_span(part, t)


def _tally_slots(r: _Receiver, ev: list[str]) -> _SlotTally:
    """Find and tally every slot of the fact, in order."""
    tally = _SlotTally()
    for k, s in enumerate(r.fact.slots):
        _tally_slot(r, tally, k, s, _find_slot(r, s), ev)
    return tally


def _tally_slot(r: _Receiver, tally: _SlotTally, k: int, s: _Slot, f: _SlotFinds,
                ev: list[str]) -> None:
    """Add fact slot ``k`` to the tally: where its value was found, and whether the receiver acts
    on another value for it, rejects it for another with a replacement cue, or states another."""
    if s.hard:
        tally.matched_at.extend(t.start for t in f.matches)
    for t in f.matches:
        tally.note_match(r.said, t, r.order)
    for p, t in f.elsewhere:
        tally.note_match(p, t, r.order)
    if f.matches or f.elsewhere:
        if s.hard:
            tally.roles[k] = {"said"} if f.matches else set()
            tally.roles[k].update(p.role for p, _ in f.elsewhere)
        else:
            tally.found_soft += 1
        where = "" if f.matches else f" in {_role_name(f.elsewhere[0][0])}"
        ev.append(f"{s.kind} {s.text!r} found{where}")
    if f.acted:
        # acting on another value for the same thing (a tool argument, the context handed on)
        p, t = f.acted[0]
        tally.note_conflict(s.hard, p, t)
        ev.append(f"{s.kind} conflict: fact {s.text!r}, {p.key} {t.text!r}")
    elif f.matches and f.others and _REPLACEMENT.search(r.text.text):
        _replacement_cues(r, tally, s, f, ev)
    elif f.others and not f.matches:
        # the receiver says another value for it (even if a tool or the context it handed
        # on holds the fact's value: what it told the user is wrong)
        tally.note_conflict(s.hard, r.said, f.others[0])
        ev.append(f"{s.kind} conflict: fact {s.text!r}, messages {f.others[0].text!r}")
    elif not (f.matches or f.elsewhere) and s.hard:
        ev.append(f"{s.kind} {s.text!r} not mentioned")


def _replacement_cues(r: _Receiver, tally: _SlotTally, s: _Slot, f: _SlotFinds,
                      ev: list[str]) -> None:
    """The text states the fact's value and another one, with a replacement cue: count the
    fact's value rejected by a cue ("instead of") and another value adopted by one ("switched
    to")."""
    text = r.text.text
    for t in f.matches:
        if _REJECT_CUE.search(text[max(0, t.start - 30):t.start]):
            tally.rejected += 1
            tally.keep_conflict_span(r.said, t)
            ev.append(f"{s.kind} {s.text!r} rejected by a replacement cue")
            break
    for o in f.others:
        if _ADOPT_CUE.search(text[max(0, o.start - 60):o.start]) or re.match(
                r"\s*instead\b", text[o.start + len(o.text):], re.I):
            tally.adopted_conflict += 1
            tally.keep_conflict_span(r.said, o)
            ev.append(f"{s.kind} {o.text!r} replaces {s.text!r}")
            break


def _slot_signals(r: _Receiver, tally: _SlotTally) -> dict[str, float]:
    """The slot signals: found, conflicting, rejected or replaced values, and where found."""
    found_hard = tally.found_hard()
    return {
        "n_hard_slots": float(len(r.hard)), "hard_found": float(found_hard),
        "hard_conflict": float(tally.conflict_hard),
        "hard_found_share": found_hard / len(r.hard) if r.hard else 0.0,
        "n_soft_slots": float(len(r.soft)), "soft_found": float(tally.found_soft),
        "soft_conflict": float(tally.conflict_soft),
        "value_rejected": float(tally.rejected),
        "conflict_adopted": float(tally.adopted_conflict),
        "replacement_cue": float(bool(_REPLACEMENT.search(r.text.text))),
        "found_in_text": float(tally.found_in("said")),
        "found_in_tool": float(tally.found_in("act", "world")),
        "found_in_handoff": float(tally.found_in("handoff")),
        "user_restated": float(r.restated is not None),
    }


@dataclass(frozen=True)
class _Topic:
    """The fact's content words and how many of them the receiver's entries share."""

    stems: tuple[str, ...]          # the fact's content words
    value_stems: frozenset[str]     # those that are its values
    shared: tuple[str, ...]         # those in the receiver's text, acts or tool results
    overlap: float                  # share of them shared
    best_sentence: int              # the text's sentence sharing most of them (-1: none)
    best_overlap: float             # share of them in that sentence


def _topic(r: _Receiver) -> _Topic:
    """Topic overlap: the fact's content words in the receiver's text and the values it acted
    on, overall and in its best sentence."""
    fact = r.fact
    value_stems = frozenset(w.stem for s in fact.slots for w in fact.words if w.start == s.start)
    fstems = _content_stems(fact)
    act_stems = frozenset().union(*(p.an.stems for p in (*r.acts, *r.world)))
    all_stems = r.text.stems | act_stems
    shared = [s for s in fstems if s in all_stems or (
        s in _HYPERNYMS and not _HYPERNYMS[s].isdisjoint(all_stems))]
    overlap = len(shared) / len(fstems) if fstems else 0.0
    best_sent, best_ov = _best_sentence(r.text, fstems)
    return _Topic(tuple(fstems), value_stems, tuple(shared), overlap, best_sent, best_ov)


def _best_sentence(text: _Analysis, fstems: list[str]) -> tuple[int, float]:
    """The sentence of ``text`` with most of the fact's words (a general word is shown by a more
    specific one), first on ties, and the share it holds; ``(-1, 0.0)`` when none holds any."""
    if not (fstems and text.words):
        return -1, 0.0
    per: dict[int, set[str]] = {}
    fset = set(fstems)
    for w in text.words:
        if w.stem in fset:
            per.setdefault(w.sentence, set()).add(w.stem)
        for general in _SPECIFIC_TO_GENERAL.get(w.stem, ()):
            if general in fset:
                per.setdefault(w.sentence, set()).add(general)
    if not per:
        return -1, 0.0
    best_sent, hits = max(per.items(), key=lambda kv: (len(kv[1]), -kv[0]))
    return best_sent, len(hits) / len(fstems)


def _negation_near_topic(text: _Analysis, topic: _Topic) -> float:
    """Polarity of the text: 1.0 when its best sentence, a statement, has a negation close
    before a fact word (within four words)."""
    best = topic.best_sentence
    if best < 0:
        return 0.0
    fset = set(topic.stems)
    sa, sb = text.sentences[best]
    for pos in text.negation_positions:
        w = text.words[pos]
        if w.sentence != best or _is_question(text.text[sa:sb]):
            continue
        if any(x.stem in fset for x in text.words[pos + 1:pos + 5] if x.sentence == best):
            return 1.0
    return 0.0


def _quote(text: str) -> str:
    """A sentence as evidence quotes it: stripped, its first 80 characters, repr'd."""
    return repr(text.strip()[:80])


def _sentence_span(said: _Part, a: int, b: int) -> EvidenceSpan:
    """The span of the sentence ``said.an.text[a:b]``, without the blanks around it."""
    sentence = said.an.text[a:b]
    lead = len(sentence) - len(sentence.lstrip())
    return _span(said, a + lead, sentence.strip())


def _stated_in_text(r: _Receiver) -> int:
    """How many of the fact's hard slots the receiver's text states."""
    return sum(1 for s in r.hard if any(_same(s, t) for t in r.text.slots))


@dataclass(frozen=True)
class _Reask:
    """A question of the receiver asking again for what the fact holds (``span``; None: none)."""

    span: EvidenceSpan | None
    questions: int               # the text's questions (up to the re-ask a scan found)
    values_in_question: bool     # the text states the fact's values only inside that question

    @property
    def reask(self) -> float:
        """1.0 for a re-ask."""
        return float(self.span is not None)


def _reask(r: _Receiver, topic: _Topic, matched_at: Sequence[int], text_found: int,
           ev: list[str]) -> _Reask:
    """Re-asks: a question of the receiver about what the fact holds, without its value.

    A yes/no question about the fact ("Have you tried two cards?") asks for it again even though
    it holds the value, unless it is a confirmation or the value is also stated.
    """
    text = r.text
    asking = [(a, b) for a, b in text.sentences
              if _is_question(text.text[a:b]) and _ASKING.match(text.text[a:b].strip())
              and not _CONFIRM.search(text.text[a:b])]
    span: EvidenceSpan | None = None
    in_question = False
    if text_found and asking and all(any(a <= pos < b for a, b in asking)
                                     for pos in matched_at):
        in_question = True
        span = _sentence_span(r.said, *asking[0])
        ev.append(f"re-ask: {_quote(text.text[asking[0][0]:asking[0][1]])}")
    elif not r.hard and topic.best_sentence >= 0 and \
            text.sentences[topic.best_sentence] in asking:
        sa, sb = text.sentences[topic.best_sentence]
        span = _sentence_span(r.said, sa, sb)
        ev.append(f"re-ask: {_quote(text.text[sa:sb])}")
    if span is not None:
        questions = sum(int(_is_question(text.text[a:b])) for a, b in text.sentences)
        return _Reask(span, questions, in_question)
    questions, span = _scan_questions(r, topic, text_found, ev)
    return _Reask(span, questions, False)


def _scan_questions(r: _Receiver, topic: _Topic, text_found: int, ev: list[str]
                    ) -> tuple[int, EvidenceSpan | None]:
    """Count the text's questions up to the first that asks for what the fact holds (when the
    text states none of its values), and that question's span (None if none does)."""
    text = r.text
    key_stems = set(topic.stems) - topic.value_stems
    questions = 0
    for a, b in text.sentences:
        sentence = text.text[a:b]
        if not _is_question(sentence):
            continue
        questions += 1
        if text_found:
            continue
        if _asks_for_fact(r, key_stems, a, b):
            ev.append(f"re-ask: {_quote(sentence)}")
            return questions, _sentence_span(r.said, a, b)
    return questions, None


def _asks_for_fact(r: _Receiver, key_stems: set[str], a: int, b: int) -> bool:
    """Does the question ``r.text.text[a:b]`` ask for what the fact holds: for a valued fact, its
    key words or its kind of value ("What is your account number?"); else most key words?"""
    qwords = {w.stem for w in r.text.words if a <= w.start < b}
    asks_kind = any(any(k in qwords for k in _ASKS_FOR.get(s.kind, ())) for s in r.fact.slots)
    shared_keys = key_stems & qwords
    if r.hard:
        return bool(shared_keys or asks_kind)
    return bool(key_stems) and len(shared_keys) >= max(1, len(key_stems) / 2)


def _before_hyphen(text: _Analysis, w: _Word) -> bool:
    """Is word ``w`` followed by a hyphen (part of a name: "no-IP-address error")?"""
    return text.text[w.start + len(w.text):w.start + len(w.text) + 1] == "-"


def _disclaimed(r: _Receiver, text_found: int, ev: list[str]) -> float:
    """1.0 when the receiver says it does not have the thing that names the fact's value ("I
    don't see an account attached", "whatever address is on the account") and its text states
    none of the fact's values."""
    text = r.text
    value_nouns = frozenset().union(*(_noun_at(r.fact, s) for s in r.hard))
    if not value_nouns or text_found:
        return 0.0
    cues = sorted({*text.negation_positions, *(
        i for i, w in enumerate(text.words) if w.text.lower() in _DISCLAIMERS)})
    for i in cues:
        w = text.words[i]
        if _before_hyphen(text, w):
            continue
        near = [x for x in text.words[i + 1:i + 6] if x.sentence == w.sentence]
        if any(_SLOT_NOUN.get(x.stem) in value_nouns for x in near):
            sa, sb = text.sentences[w.sentence]
            ev.append(f"says it lacks it: {_quote(text.text[sa:sb])}")
            return 1.0
    return 0.0


def _negation_of_fact(r: _Receiver, topic: _Topic, neg_fact: float, ev: list[str]
                      ) -> EvidenceSpan | None:
    """The span of a statement negating the fact's own statement ("you haven't turned on
    two-factor yet" for "has turned on two-factor"): most of its words, at least two, right after
    the negation. A negation of anything else ("no, I don't need a refund", "not a problem") is
    none, and so is any for a fact without values or one that is itself negated."""
    text = r.text
    predicate = [s for s in topic.stems if s not in topic.value_stems and s not in _SLOT_NOUN
                 and s not in _GENERIC_NAMES]
    if not (r.hard and len(predicate) >= 2 and not neg_fact):
        return None
    for i in text.negation_positions:
        w = text.words[i]
        sa, sb = text.sentences[w.sentence]
        if _before_hyphen(text, w) or _is_question(text.text[sa:sb]):
            continue
        if not any(x.stem in predicate for x in text.words[i + 1:i + 4]
                   if x.sentence == w.sentence):
            continue
        here = {x.stem for x in text.words if x.sentence == w.sentence} & set(predicate)
        if len(here) >= 2 and len(here) >= _PARAMS["negated_share"] * len(predicate):
            ev.append(f"negated: {_quote(text.text[sa:sb])}")
            return _sentence_span(r.said, sa, sb)
    return None


@dataclass(frozen=True)
class _Findings:
    """Everything the verdict is decided on, besides the receiver's evidence."""

    tally: _SlotTally
    topic: _Topic
    neg_fact: float
    mismatch: float                  # the fact and the text differ in polarity
    reask: _Reask
    disclaimed: float
    negated: EvidenceSpan | None     # a statement negating the fact's own


_Decision = tuple[str, str, EvidenceSpan | None]  # label, rationale, span
_REASKED = "the receiver asks again for what the fact holds"


def _decide(r: _Receiver, f: _Findings, ev: list[str]) -> _Decision:
    """The verdict: lost without evidence, contradicted by a conflicting, rejected or replaced
    value, else decided on the fact's values or, for a fact without any, on its words."""
    t = f.tally
    if not r.n_evidence:
        ev.append("no agent message after the handoff")
        return "lost", "no agent message after the handoff", None
    if (t.conflict_hard or t.rejected or t.adopted_conflict) and not (
            r.silent and t.found_hard()):  # a summary that carries the value carries the fact
        return "contradicted", "the receiver states or acts on a different value", t.conflict_span
    match_span = t.first_match[1] if t.first_match else None
    if r.hard:
        return _decide_valued(r, f, match_span, ev)
    return _decide_unvalued(r, f, match_span, ev)


def _user_restated(r: _Receiver, f: _Findings, ev: list[str]) -> _Decision:
    """Lost: the user had to give the fact again."""
    ev.append(f"the user gave it again: {_quote(cast(Message, r.restated).content)}")
    return "lost", "the user had to give the fact again", f.reask.span


def _decide_valued(r: _Receiver, f: _Findings, match_span: EvidenceSpan | None,
                   ev: list[str]) -> _Decision:
    """The verdict for a fact with values: retained when enough of them are in the receiver's
    entries (not only in the context it hands on while it asks again or disclaims them)."""
    found_hard = f.tally.found_hard()
    only_handed_on = found_hard and not f.tally.found_in("said", "act", "world")
    if f.negated is not None and found_hard:
        return "contradicted", "the receiver negates the fact", f.negated
    if found_hard / len(r.hard) >= _PARAMS["slot_share"] and not (
            only_handed_on and (f.reask.reask or f.disclaimed)):
        return "retained", "the fact's values appear in the receiver's entries", match_span
    if r.restated is not None:
        return _user_restated(r, f, ev)
    if f.reask.reask:
        return "lost", _REASKED, f.reask.span
    if f.disclaimed:
        return "lost", "the receiver says it does not have the fact", None
    return "lost", "the fact's values are not in the receiver's entries", None


def _decide_unvalued(r: _Receiver, f: _Findings, match_span: EvidenceSpan | None,
                     ev: list[str]) -> _Decision:
    """The verdict for a fact without values: on its names, its polarity and its words."""
    text, topic = r.text, f.topic
    if f.tally.conflict_soft:
        return "contradicted", "the receiver describes something else", f.tally.conflict_span
    names = [s for s in r.soft if s.kind == "proper"]
    all_slots = [*text.slots, *(t for q in (*r.acts, *r.world) for t in q.an.slots)]
    if names and sum(1 for s in names if any(_same(s, t) for t in all_slots)) \
            >= _PARAMS["slot_share"] * len(names) and not f.mismatch:
        return "retained", "the names in the fact appear in the receiver's entries", match_span
    if f.mismatch and topic.best_overlap >= _PARAMS["polarity_overlap"]:
        ev.append("negation in the fact" if f.neg_fact else "negation in the messages")
        return "contradicted", "the receiver states the opposite", (
            _sentence_span(r.said, *text.sentences[topic.best_sentence])
            if topic.best_sentence >= 0 else None)
    if r.restated is not None and topic.overlap < _PARAMS["retain_overlap"]:
        return _user_restated(r, f, ev)
    if f.reask.reask:
        return "lost", _REASKED, f.reask.span
    ev.append(f"{len(topic.shared)}/{len(topic.stems)} content words shared")
    if topic.overlap >= _PARAMS["retain_overlap"]:
        return "retained", "the receiver restates the fact", match_span
    return "lost", "the receiver's entries do not show the fact", None


def _compare(item: RetentionItem) -> _Comparison:
    """Judge one item: the fact's slots in the receiver's entries, topic overlap, polarity,
    re-asks, disclaimers and negations, then the verdict; the signals are the numbers behind it
    (in a fixed order, the same keys for every item)."""
    r = _receiver(item)
    ev: list[str] = []
    sig: dict[str, float] = {"n_agent_messages": float(r.n_evidence),
                             "n_user_messages": float(len(r.users))}
    tally = _tally_slots(r, ev)
    sig.update(_slot_signals(r, tally))
    topic = _topic(r)
    sig.update({"overlap": topic.overlap, "best_sentence_overlap": topic.best_overlap,
                "fact_content_words": float(len(topic.stems)),
                "novel_words": float(len(topic.stems) - len(topic.shared)),
                "text_words": float(len(r.text.words))})
    # polarity: a negation in the fact vs a negation close before a fact word in the text
    # (only a fact without values can be negated: a value is contradicted only by another value)
    neg_fact = float(bool(r.fact.negation_positions))
    neg_text = _negation_near_topic(r.text, topic)
    mismatch = float(neg_fact != neg_text)
    sig.update({"negation_fact": neg_fact, "negation_text": neg_text,
                "polarity_mismatch": mismatch})
    text_found = _stated_in_text(r)
    reask = _reask(r, topic, tally.matched_at, text_found, ev)
    if reask.values_in_question:
        tally.forget_said()
    disclaimed = _disclaimed(r, text_found, ev)
    sig.update({"reask": reask.reask, "questions": float(reask.questions),
                "disclaimed": disclaimed})
    negated = _negation_of_fact(r, topic, neg_fact, ev)
    sig["negated"] = float(negated is not None)
    label, why, span = _decide(r, _Findings(tally, topic, neg_fact, mismatch, reask, disclaimed,
                                            negated), ev)
    if item.receiver_silent:
        why = f"{_SILENT}: {_HANDED_OVER.get(label, why)}"
    return _Comparison(sig, label, why, ev, span)


_SILENT = "the receiver is not in the trace; judged on what was handed over"
_HANDED_OVER = {"retained": "it carries the fact", "lost": "it does not carry the fact",
                "contradicted": "it carries a different value"}
