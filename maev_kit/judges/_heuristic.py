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
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

from maev_kit.judges._verdict import Verdict
from maev_kit.retention._items import EvidenceSpan, RetentionItem, locate
from maev_kit.traces._model import Message

__all__ = ["HeuristicJudge", "ValueMention", "value_mentions"]

# --------------------------------------------------------------------------------------------
# Lexicons
# --------------------------------------------------------------------------------------------

_STOP = frozenset("""
a an the and or but if then than so of to in on at by for with from into onto over under about
as is are was were be been being am do does did doing done have has had having will would shall
should can could may might must i me my mine we us our ours you your yours he him his she her hers
it its they them their theirs this that these those there here what which who whom whose when
where why how all any both each few more most other some such only own same too very just also
s t up down out off again further once while during before after above below between through
own please thank thanks hi hello okay ok yes sure let lets let's get got go going gone make made
one's someone something anything everything thing things some very really now customer customers
client already currently still
""".split())

_NEGATIONS = frozenset("""
not no never none nobody nothing nowhere neither nor cannot can't won't don't doesn't didn't
isn't aren't wasn't weren't haven't hasn't hadn't shouldn't wouldn't couldn't without noone
""".split())

_WORD_NUMBERS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "dozen": 12, "single": 1, "couple": 2, "pair": 2, "several": None, "many": None,
}
_WEEKDAYS = {d: i for i, d in enumerate(
    ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])}
_WEEKDAYS.update({"tues": 1, "thurs": 3, "weds": 2})
_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"])}
_MONTHS.update({"jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8,
                "sep": 9, "sept": 9, "oct": 10, "nov": 11, "dec": 12})
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "jan", "dec"})  # also ordinary words
_UNITS = {"kg", "g", "mg", "lb", "lbs", "km", "m", "cm", "mm", "mi", "ft", "gb", "mb", "tb",
          "kb", "ms", "s", "sec", "min", "mins", "h", "hr", "hrs", "x", "pcs", "l", "ml"}
# Cardinal words that combine into one number ("two hundred fifty"), and the scales among them.
_CARDINALS = {w: v for w, v in _WORD_NUMBERS.items()
              if v is not None and w not in ("single", "couple", "pair")}
_CARDINALS["million"] = 1_000_000
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "dozen": 12}
# What a quantity counts, one name per unit: a number's unit word (or its stem) → the unit.
# Words that count people are one unit, so "12 seats" and "12 people" state the same count.
_UNIT_NAMES: dict[str, tuple[str, ...]] = {
    "person": ("person", "people", "seat", "user", "licence", "license", "member", "employee",
               "staff", "staffer", "headcount", "teammate", "colleague", "attendee",
               "participant", "guest", "worker", "learner", "student", "engineer",
               "developer", "login"),
    "s": ("s", "sec", "secs", "second"), "ms": ("ms", "millisecond"),
    "min": ("min", "mins", "minute"), "h": ("h", "hr", "hrs", "hour"), "day": ("day",),
    "week": ("week", "wk"), "month": ("month", "mo"), "year": ("year", "yr"),
    "kg": ("kg", "kilo", "kilogram"), "g": ("g", "gram"), "mg": ("mg", "milligram"),
    "lb": ("lb", "lbs"), "km": ("km", "kilometer", "kilometre"), "m": ("m", "meter", "metre"),
    "cm": ("cm", "centimeter", "centimetre"), "mm": ("mm", "millimeter", "millimetre"),
    "mi": ("mi", "mile"), "ft": ("ft", "foot"), "kb": ("kb", "kilobyte"),
    "mb": ("mb", "megabyte"), "gb": ("gb", "gigabyte"), "tb": ("tb", "terabyte"),
    "l": ("l", "liter", "litre"), "ml": ("ml", "milliliter", "millilitre"),
    "piece": ("pcs", "piece"),
}
_UNIT_OF = {w: unit for unit, names in _UNIT_NAMES.items() for w in names}
# Words between a number and what it counts ("12 additional seats", "two different cards").
_MODIFIERS = frozenset("""new additional extra different separate paid free full total active
unused spare more other whole entire""".split())
# "a team of 14" counts people
_COLLECTIVES = frozenset({"team", "group", "party", "crew", "staff", "squad", "class"})
_CURRENCY_WORDS = {"usd": "USD", "dollar": "USD", "dollars": "USD", "bucks": "USD",
                   "eur": "EUR", "euro": "EUR", "euros": "EUR", "gbp": "GBP", "pound": "GBP",
                   "pounds": "GBP", "$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY"}

# Closed classes whose members exclude each other (a value slot without digits).
_GROUPS: dict[str, tuple[str, ...]] = {
    "gender": ("man", "woman"),
    "posture": ("sit", "stand", "lie", "sleep", "run", "walk"),
    "colour": ("red", "blue", "green", "yellow", "black", "white", "orange", "pink", "purple",
               "brown", "gray"),
    "place": ("indoor", "outdoor"),
    "daytime": ("day", "night"),
    "animal": ("dog", "cat", "horse", "bird", "cow", "sheep", "fish"),
    "vehicle": ("car", "bicycle", "motorcycle", "bus", "truck", "train", "boat", "plane"),
    "weather": ("sunny", "rain", "snow"),
    # antonym pairs, useful in support conversations too
    "open": ("open", "closed"),
    "approval": ("approve", "deny"),
    "enabled": ("enable", "disable"),
    "active": ("active", "inactive"),
    "paid": ("paid", "unpaid"),
    "fill": ("empty", "full"),
    "age": ("young", "old"),
    "wetness": ("wet", "dry"),
    "mood": ("happy", "sad"),
    "heat": ("hot", "cold"),
    "outcome": ("win", "lose"),
    "trade": ("buy", "sell"),
    "trend": ("increase", "decrease"),
    "tier": ("upgrade", "downgrade"),
    "company": ("alone", "together"),
    "period": ("daily", "weekly", "monthly", "annual"),
}
_GROUP_ALIASES = {
    "men": "man", "boy": "man", "guy": "man", "gentleman": "man", "male": "man",
    "father": "man", "son": "man", "brother": "man", "husband": "man", "gentlemen": "man",
    "women": "woman", "girl": "woman", "lady": "woman", "ladies": "woman", "female": "woman",
    "mother": "woman", "daughter": "woman", "sister": "woman", "wife": "woman",
    "sat": "sit", "seat": "sit", "seated": "sit", "stood": "stand", "lay": "lie", "lying": "lie",
    "laying": "lie", "slept": "sleep", "asleep": "sleep", "nap": "sleep", "ran": "run",
    "jog": "run", "sprint": "run", "walked": "walk", "stroll": "walk",
    "grey": "gray", "inside": "indoor", "indoors": "indoor", "outside": "outdoor",
    "outdoors": "outdoor", "daytime": "day", "nighttime": "night", "evening": "night",
    "puppy": "dog", "kitten": "cat", "bike": "bicycle", "airplane": "plane", "ship": "boat",
    "raining": "rain", "rainy": "rain", "snowy": "snow", "snowing": "snow",
    "shut": "closed", "reject": "deny", "rejected": "deny", "decline": "deny",
    "declined": "deny", "denied": "deny", "approval": "approve", "elderly": "old",
    "unhappy": "sad", "won": "win", "bought": "buy",
    "sold": "sell", "chilly": "cold", "freezing": "cold", "warm": "hot",
    "yearly": "annual", "annually": "annual", "year": "annual", "month": "monthly",
}
_IRREGULAR = {"men": "man", "women": "woman", "children": "child", "kids": "child",
              "kid": "child", "people": "person", "persons": "person", "feet": "foot",
              "teeth": "tooth", "mice": "mouse", "geese": "goose", "ladies": "woman",
              "lady": "woman", "guy": "man", "guys": "man", "e-mail": "email"}

# Same meaning after stemming (applied to content words before comparing).
_SYNONYM_STEMS = {
    "bike": "bicycle", "stroll": "walk", "jog": "run", "seat": "sit", "photo": "picture",
    "photograph": "picture", "pic": "picture", "outside": "outdoor", "outdoors": "outdoor",
    "inside": "indoor", "indoors": "indoor", "female": "woman", "male": "man",
    "gentleman": "man", "automobile": "car", "puppy": "dog", "kitten": "cat",
    "e-mail": "email", "phone": "telephone", "cellphone": "telephone", "purchase": "buy",
    "reimburse": "refund", "reimbursement": "refund",
}
# A general word in a fact is shown by any of these more specific words in the messages.
_HYPERNYMS = {
    "person": {"man", "woman", "boy", "girl", "child", "baby", "worker", "player", "customer",
               "user", "student", "people", "someone", "adult", "teenager"},
    "child": {"boy", "girl", "baby", "toddler", "infant", "teenager"},
    "outdoor": {"street", "park", "beach", "wood", "field", "mountain", "yard", "garden",
                "lake", "ocean", "river", "road", "snow", "sidewalk", "forest", "sun"},
    "animal": {"dog", "cat", "horse", "bird", "cow", "sheep", "fish", "seagull", "duck"},
    "vehicle": {"car", "bicycle", "motorcycle", "bus", "truck", "train", "boat", "plane"},
    "instrument": {"guitar", "piano", "violin", "drum", "trumpet", "flute", "saxophone"},
    "water": {"lake", "ocean", "river", "pool", "sea", "puddle"},
}

# Words that say which kind of value a question asks for.
_ASKS_FOR = {
    "email": ("email", "mail", "address"),
    "ident": ("number", "id", "reference", "code", "account", "order", "ticket", "which"),
    "money": ("much", "amount", "price", "cost", "budget", "total"),
    "percent": ("percent", "percentage", "rate"),
    "quantity": ("many", "number", "much"),
    "number": ("many", "number", "much"),
    "date": ("when", "date", "day"),
    "weekday": ("when", "day", "date"),
    "month": ("when", "month"),
    "time": ("when", "time"),
    "proper": ("who", "name", "where", "which"),
}
_REQUEST = re.compile(
    r"\b(?:could|can|would|will) you (?:please )?(?:tell|give|send|share|provide|confirm|"
    r"remind|repeat|let me know)|\bplease (?:provide|share|send|confirm|tell|give|enter)|"
    r"\bmay i (?:have|get|ask)|\bi(?:'ll| will)? need (?:your|the)|"
    r"\bwhat(?:'s| is| was) (?:your|the)",
    re.I)
_REJECT_CUE = re.compile(r"\b(?:instead of|rather than|not|no longer|from|replac\w*|"
                         r"in place of)\s*$", re.I)
_ADOPT_CUE = re.compile(r"\b(?:switch\w*|chang\w*|mov\w*|updat\w*|reschedul\w*|correct\w*|"
                        r"replac\w*)\b[^.?!]{0,40}?\b(?:to|with)\s+(?:the\s+|a\s+)?$", re.I)
_REPLACEMENT = re.compile(r"\b(?:instead|rather than|switch\w*|chang\w* (?:it |this |that )?to|"
                          r"moved? to|updated? to|reschedul\w*|no longer|in place of|replac\w*)\b",
                          re.I)

_TOKEN = re.compile(r"""
 (?P<email>[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)
|(?P<money>[$€£¥]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|bn)\b)?
   |\b\d[\d,]*(?:\.\d+)?\s?(?:usd|eur|gbp|dollars?|euros?|pounds?|bucks)\b)
|(?P<percent>\b\d+(?:\.\d+)?\s?(?:%|percent\b))
|(?P<date>\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b)
|(?P<time>\b\d{1,2}:\d{2}(?:\s?[ap](?:\.m\.|m\b))?|\b\d{1,2}\s?[ap](?:\.m\.|m\b))
|(?P<number>\b\d{1,3}(?:,\d{3})+(?:\.\d+)?\b)
|(?P<compound>[A-Za-z0-9]+(?:['’][A-Za-z]+)?(?:[-_/.#:][A-Za-z0-9]+)*)
""", re.X | re.I)
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+|$)|[^\n]+", re.M)

# Tuned on the dev split of the SNLI subset only (benchmarks/eval_offline_judges.py).
_PARAMS: dict[str, float] = {
    "retain_overlap": 0.6,       # share of the fact's content words found → retained
    "polarity_overlap": 0.5,     # overlap of the best sentence needed to trust a polarity flip
    "slot_share": 0.5,           # share of hard slots found → retained
    "negated_share": 0.6,        # share of a fact's words a negated sentence must restate
}
_REVISION = "3"  # 2: the receiver's evidence only (its text, tool calls and results, the
#   context it hands on); contradicted only by another value for the same thing; spans
#   3: a receiver not in the trace is judged on what was handed over; values keyed by slot

# --------------------------------------------------------------------------------------------
# Text analysis
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = _IRREGULAR.get(w, w)
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":
            w = w[:-1]
        return w
    if len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
        if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "ls":
            w = w[:-1]
        return w
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _canonical(word: str) -> str:
    """Stem, then map synonyms onto one word (``bikes`` → ``bicycle``)."""
    s = _stem(word)
    return _SYNONYM_STEMS.get(s, s)


def _group_member(word: str) -> tuple[str, str] | None:
    w = word.lower()
    base = _GROUP_ALIASES.get(w)
    if base is None:
        s = _stem(w)
        base = _GROUP_ALIASES.get(s) or _MEMBER.get(s, s)
    g = _GROUP_INDEX.get(base)
    return (g, base) if g else None


_VERB_GROUPS = frozenset({"posture", "open", "approval", "enabled", "outcome", "trade", "trend",
                          "tier"})


def _group_index() -> dict[str, str]:
    """Stem of an inflected form → member (approved → approve; dogs → dog)."""
    index: dict[str, str] = {}
    for g, members in _GROUPS.items():
        for m in members:
            forms = {m + "s"}
            if g in _VERB_GROUPS:
                if m.endswith("e"):
                    forms |= {m + "d", m[:-1] + "ing"}
                else:
                    forms |= {m + "ed", m + "ing", m + m[-1] + "ing", m + m[-1] + "ed"}
            for f in forms:
                index.setdefault(_stem(f), m)
            index[m] = m
            index.setdefault(_stem(m), m)
    return index


_MEMBER = _group_index()
_SPECIFIC_TO_GENERAL: dict[str, list[str]] = {}
for _g, _specific in _HYPERNYMS.items():
    for _w in _specific:
        _SPECIFIC_TO_GENERAL.setdefault(_w, []).append(_g)
_GROUP_INDEX = {m: g for g, members in _GROUPS.items() for m in members}


@dataclass(frozen=True)
class _Slot:
    kind: str          # email ident money percent date time weekday month quantity number
    #                    ordinal proper category
    key: str           # slots conflict only with slots of the same kind and key
    value: Any         # normalized value
    text: str          # surface text
    start: int         # character offset in the analysed text
    hard: bool = True  # False for proper nouns and closed word classes
    context: tuple[str, str] = ("", "")  # the words before and after (numbers, proper nouns)


@dataclass(frozen=True)
class _Word:
    text: str
    stem: str
    start: int
    sentence: int


@dataclass(frozen=True)
class _Analysis:
    text: str
    words: tuple[_Word, ...]
    stems: frozenset[str]
    slots: tuple[_Slot, ...]
    sentences: tuple[tuple[int, int], ...]  # char spans
    negation_positions: tuple[int, ...]      # word indexes


def _num(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _ident_key(token: str) -> str:
    parts = re.split(r"([-_/.#:])", token)
    shape = []
    for i, p in enumerate(parts):
        if i % 2:
            shape.append(p)
        elif p.isdigit():
            shape.append("9")
        elif p.isalpha():
            # an all-caps code prefix (ACCT-, INV-) is part of the kind; a word is not
            shape.append(p.upper() if i == 0 and p.isupper() and len(parts) > 1 else "a")
        else:
            shape.append("x")
    return "".join(shape)


def _time_value(text: str) -> tuple[int, int, str | None]:
    t = text.lower().replace(".", "").replace(" ", "")
    ampm = "am" if t.endswith("am") else "pm" if t.endswith("pm") else None
    t = t[:-2] if ampm else t
    h, _, m = t.partition(":")
    hour, minute = int(h), int(m or 0)
    if ampm is None and hour > 12:
        ampm = "pm"
    return hour % 12, minute, ampm


@lru_cache(maxsize=8192)
def _analyze(text: str) -> _Analysis:
    words: list[_Word] = []
    slots: list[_Slot] = []
    sentences = [(m.start(), m.end()) for m in _SENTENCE.finditer(text)] or [(0, len(text))]
    sent_of = 0

    def sentence_at(pos: int) -> int:
        nonlocal sent_of
        while sent_of + 1 < len(sentences) and pos >= sentences[sent_of][1]:
            sent_of += 1
        return sent_of

    def add_word(w: str, start: int) -> None:
        words.append(_Word(w, _canonical(w), start, sentence_at(start)))

    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        tok = m.group()
        start = m.start()
        if kind == "email":
            slots.append(_Slot("email", "email", tok.lower(), tok, start))
            add_word(tok.lower(), start)
        elif kind == "money":
            cur = next((c for sym, c in _CURRENCY_WORDS.items()
                        if sym in tok.lower() and (len(sym) == 1 or re.search(
                            rf"\b{sym}\b", tok.lower()))), "")
            mult = 1.0
            low = tok.lower().rstrip()
            if re.search(r"\d\s?k$", low):
                mult = 1e3
            elif re.search(r"\d\s?m$", low):
                mult = 1e6
            elif low.endswith("bn"):
                mult = 1e9
            # the token matched the money pattern: it holds a digit
            amount = _num(cast("re.Match[str]", re.search(r"\d[\d,]*(?:\.\d+)?", tok)).group())
            slots.append(_Slot("money", "money", (cur, (amount or 0) * mult), tok, start))
            add_word(tok, start)
        elif kind == "percent":
            slots.append(_Slot("percent", "percent",
                               _num(cast("re.Match[str]",  # the percent token holds a digit
                                         re.search(r"\d+(?:\.\d+)?", tok)).group()),
                               tok, start))
            add_word(tok, start)
        elif kind == "date":
            y: int | None
            if "-" in tok:
                y, mo, d = (int(x) for x in tok.split("-"))
            else:
                parts = [int(x) for x in tok.split("/")]
                mo, d = parts[0], parts[1]
                y = parts[2] if len(parts) > 2 else None
            slots.append(_Slot("date", "date", (y, mo, d), tok, start))
            add_word(tok, start)
        elif kind == "time":
            slots.append(_Slot("time", "time", _time_value(tok), tok, start))
            add_word(tok, start)
        elif kind == "number":  # with thousands separators: "1,200"
            add_word(tok, start)
        else:
            _compound(tok, start, text, words, slots, add_word)
    # number words / numbers + the word after them → quantities; month + day → dates
    _quantities(text, words, slots)
    _proper_context(words, slots)
    negs = tuple(i for i, w in enumerate(words)
                 if (low := w.text.lower().replace("\u2019", "'")) in _NEGATIONS
                 or low.endswith("n't"))
    stems = frozenset(w.stem for w in words)
    return _Analysis(text, tuple(words), stems, tuple(slots), tuple(sentences), negs)


def _compound(tok: str, start: int, text: str, words: list[_Word], slots: list[_Slot],
              add_word: Any) -> None:
    has_digit = any(c.isdigit() for c in tok)
    if not has_digit:
        pieces = re.split(r"[-_/.#:]", tok)
        if len(pieces) > 1 and all(p.lower() in _WORD_NUMBERS for p in pieces):
            add_word(tok, start)  # "twenty-five"
            return
        offset = start
        for p in pieces:
            if p:
                pos = text.find(p, offset)
                offset = pos + len(p)
                _plain_word(p, pos, text, slots, add_word)
        return
    if tok.isdigit() or re.fullmatch(r"\d+\.\d+", tok):
        add_word(tok, start)
        return
    if _ORDINAL.fullmatch(tok):
        add_word(tok, start)  # "12th": a date with a month beside it, else an ordinal
        return
    m = re.fullmatch(r"(\d+(?:\.\d+)?)-([A-Za-z]+)", tok)
    if m:  # a number glued to what it counts: "12-person", "3-day"
        add_word(m.group(1), start)
        add_word(m.group(2), m.start(2) + start)
        return
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([a-z]{1,3})", tok, re.I)
    if m and m.group(2).lower() in _UNITS:
        unit = m.group(2).lower()
        slots.append(_Slot("quantity", _UNIT_OF.get(unit, unit), float(m.group(1)), tok, start))
        add_word(tok.lower(), start)
        return
    slots.append(_Slot("ident", _ident_key(tok), tok.upper(), tok, start))
    add_word(tok.upper(), start)


def _plain_word(w: str, start: int, text: str, slots: list[_Slot], add_word: Any) -> None:
    low = w.lower()
    add_word(w, start)
    if low in _WEEKDAYS and (w[0].isupper() or len(low) > 5):
        slots.append(_Slot("weekday", "weekday", _WEEKDAYS[low], w, start))
        return
    if low in _MONTHS and (w[0].isupper() and (low not in _AMBIGUOUS_MONTHS or start > 0)):
        if low not in _AMBIGUOUS_MONTHS or re.match(r"\s*\d", text[start + len(w):]) or \
                re.search(r"\d\s*(?:st|nd|rd|th)?\s*(?:of\s+)?$", text[:start]):
            slots.append(_Slot("month", "month", _MONTHS[low], w, start))
            return
    before = text[:start].rstrip()
    if len(w) == 3 and w.isalpha() and w.isupper() and _PLACE_CUE.search(before):
        slots.append(_Slot("ident", "place-code", w, w, start))  # "from PHX", "Origin is SEA"
        return
    prev = _NAMED.search(before)
    named = (w[0].isupper() and not w.isupper() and prev is not None
             and prev.group(0).strip().lower() not in _STOP)
    gm = _group_member(w)
    if gm is not None and not named:
        slots.append(_Slot("category", gm[0], gm[1], w, start, hard=False))
        return
    if w[0].isupper() and low not in _STOP and low not in _NEGATIONS and len(w) > 1 \
            and not w.isupper() and (named or (
                before[-1:] not in ".!?:\n\"'(" if before else False)
                or _NAME_NEXT.match(text, start + len(w)) is not None):
        slots.append(_Slot("proper", "proper", low, w, start, hard=False))


# A three-letter code after a place word is a place code (an airport, a station).
_PLACE_CUE = re.compile(r"\b(?:from|to|via|origin|destination|airport|depart\w*|arriv\w*)"
                        r"(?:\s+(?:is|at|of|the|was))*[\s:]*$", re.I)
# A capitalised word after a name's label or after another capitalised word is a name ("Last
# name is Brown", "Mei Brown"), not a colour; one that starts a sentence is a name when another
# capitalised word follows ("Mei Brown, a Gold member").
_NAMED = re.compile(r"(?:\bname(?:\s+is|:)?|\b[A-Z][a-z]+)\s*$")
_NAME_NEXT = re.compile(r"\s+[A-Z][a-z]+\b")


_DIGITS = re.compile(r"\d[\d,]*(?:\.\d+)?")
_ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)", re.I)


@dataclass(frozen=True)
class _Number:
    value: float
    end: int             # index of the word after the number
    spelled: bool        # written in words ("twelve")
    scaled: bool         # used a scale word ("two hundred")


def _same_sentence(words: list[_Word], i: int, j: int) -> bool:
    return 0 <= j < len(words) and words[j].sentence == words[i].sentence


def _spelled(parts: list[str]) -> tuple[float, int, bool]:
    """Read cardinal words as one number: (value, parts used, whether a scale was used).

    >>> _spelled(["two", "hundred", "and", "fifty", "seats"])
    (250.0, 4, True)
    >>> _spelled(["twelve", "fifty"])  # two numbers (a price said aloud), not 62
    (12.0, 1, False)
    """
    total = current = 0.0
    used, last, scaled = 0, "", False
    for k, t in enumerate(parts):
        if t == "and":
            nxt = parts[k + 1] if k + 1 < len(parts) else ""
            if last == "scale" and nxt in _CARDINALS and nxt not in _SCALES:
                continue
            break
        if t not in _CARDINALS:
            break
        v = float(_CARDINALS[t])
        if t in _SCALES:
            if last == "scale" and not (parts[used - 1] == "hundred" and v >= 1000):
                break
            current = (current or 1.0) * v
            if v >= 1000:
                total, current = total + current, 0.0
            last, scaled = "scale", True
        elif used == 0 or last == "scale" or (last == "tens" and v < 10):
            current += v
            last = "tens" if v >= 20 and v % 10 == 0 else "small"
        else:
            break
        used = k + 1
    return total + current, used, scaled


def _read_number(words: list[_Word], i: int) -> _Number | None:
    """The number that starts at word ``i`` ("1,200", "12.0", "twelve", "two hundred", "a
    dozen" read at "dozen"), or None."""
    text = words[i].text.lower()
    if _DIGITS.fullmatch(text):
        value, j = _num(text), i + 1
        while value is not None and _same_sentence(words, i, j) and \
                words[j].text.lower() in _SCALES:  # "1.5 million"
            value, j = value * _SCALES[words[j].text.lower()], j + 1
        return None if value is None else _Number(value, j, False, j > i + 1)
    if text in _WORD_NUMBERS and text not in _CARDINALS:  # "a couple", "several"
        value = _WORD_NUMBERS[text]
        return None if value is None else _Number(float(value), i + 1, True, False)
    # spelled-out cardinals, a hyphenated word ("twenty-five") read part by part
    parts: list[str] = []
    owner: list[int] = []
    j = i
    while _same_sentence(words, i, j) and all(
            p in _CARDINALS or p == "and" for p in words[j].text.lower().split("-")):
        for p in words[j].text.lower().split("-"):
            parts.append(p)
            owner.append(j)
        j += 1
    if not parts or parts[0] == "and":
        return None
    value, used, scaled = _spelled(parts)
    if used < len(parts) and owner[used] == owner[used - 1]:
        cut = owner.index(owner[used - 1])  # stopped inside a hyphenated word: stop before it
        if cut == 0:
            return None
        value, used, scaled = _spelled(parts[:cut])
    return _Number(value, owner[used - 1] + 1, True, scaled)


def _joined(text: str, a: _Word, b: _Word, seps: str = "-") -> bool:
    """Are words ``a`` and ``b`` next to each other, with only spaces or ``seps`` between?"""
    return text[a.start + len(a.text):b.start].strip(" \t" + seps) == ""


def _unit_name(word: str) -> str | None:
    low = word.lower()
    return _UNIT_OF.get(low) or _UNIT_OF.get(_stem(low))


def _unit_after(text: str, words: list[_Word], i: int, j: int) -> tuple[str, bool]:
    """What the number ending before word ``j`` counts: (unit, whether it is a known unit).

    A known unit within the next two words wins ("12 seat licences", "two business days"),
    after modifiers ("12 additional seats"); else the next content word ("3 laptops").
    """
    def next_to(k: int) -> bool:  # "14, open Settings": the comma ends the number's phrase
        return _same_sentence(words, i, k) and _joined(text, words[k - 1], words[k])

    while next_to(j) and words[j].text.lower() in _MODIFIERS:
        j += 1
    if not next_to(j):
        return "", False
    first = words[j]
    if not first.text.isalpha() or first.text.lower() in _STOP:
        return "", False
    second = words[j + 1] if next_to(j + 1) else None
    if second is not None and (not second.text.isalpha() or second.text.lower() in _STOP):
        second = None
    for w in (first, second):
        unit = _unit_name(w.text) if w is not None else None
        if unit:
            return unit, True
    if second is not None and _is_noun(second.stem) and not _is_noun(first.stem):
        return second.stem, False  # "two young children"
    return first.stem, False


def _is_noun(stem: str) -> bool:
    return stem in _HYPERNYMS or stem in _SPECIFIC_TO_GENERAL


def _kin(a: str, b: str) -> bool:
    """Is one unit a kind of the other ("woman" and "person")?"""
    return a in _HYPERNYMS.get(b, ()) or b in _HYPERNYMS.get(a, ())


def _quantities(text: str, words: list[_Word], slots: list[_Slot]) -> None:
    """Numbers in ``words`` → quantity/number/ordinal slots, dates and prices said aloud.

    A quantity's key is what it counts, named by :data:`_UNIT_OF` when known (so "12 seats",
    "12 people", "twelve users" and "a 12-person team" agree, "12 days" does not); a number
    with nothing after it is keyed by the content word before it ("ends in 5063" → ``#end``),
    and marked a *label* when that word is right before it ("room 12", "macOS 14").
    """
    i = 0
    while i < len(words):
        w = words[i]
        prev = words[i - 1] if _same_sentence(words, i, i - 1) else None
        ordinal = _ORDINAL.fullmatch(w.text.lower())
        if ordinal:
            slots.append(_ordinal_slot(text, words, i, int(ordinal.group(1)), prev))
            i += 1
            continue
        num = _read_number(words, i)
        if num is None:
            i += 1
            continue
        nxt = words[num.end] if _same_sentence(words, i, num.end) else None
        date = _day_and_month(words, i, num, prev, nxt)
        if date is not None:
            slots.append(date)
            i += 1
            continue
        if w.text.lower() == "one" and num.end == i + 1 and (
                nxt is None or nxt.text.lower() in _STOP):
            i += 1
            continue  # "one of them", a pronoun
        spoken = _spoken_price(text, words, i, num, nxt)
        if spoken is not None:
            price, i = spoken
            slots.append(price)
            # kept as it always was: the numbers after a price said aloud are read against
            # the price's words, not the whole text
            text = price.text
            continue
        slots.append(_count_slot(text, words, i, num, prev))
        i = num.end


def _ordinal_slot(text: str, words: list[_Word], i: int, day: int, prev: _Word | None
                  ) -> _Slot:
    """The slot of the ordinal at word ``i`` ("12th"): a date with a month beside it, else an
    ordinal keyed by what follows it ("the 12th seat" is not 12 seats)."""
    w = words[i]
    nxt = words[i + 1] if _same_sentence(words, i, i + 1) else None
    month = next((x.text.lower() for x in (nxt, prev)
                  if x is not None and x.text.lower() in _MONTHS), None)
    if month is not None and day <= 31:
        first = prev if prev is not None and prev.text.lower() == month else w
        return _Slot("date", "date", (None, _MONTHS[month], day),
                     f"{first.text} {words[i + 1].text}" if first is w else
                     # here first is prev, so prev is not None
                     f"{cast(_Word, prev).text} {w.text}", first.start)
    unit, _ = _unit_after(text, words, i, i + 1)
    return _Slot("ordinal", unit, float(day), w.text, w.start)


def _day_and_month(words: list[_Word], i: int, num: _Number, prev: _Word | None,
                   nxt: _Word | None) -> _Slot | None:
    """The date a one-word number up to 31 makes with a month right after or before it ("12
    March", "March 12"), or None."""
    w, value = words[i], num.value
    if num.end != i + 1:
        return None
    if nxt is not None and nxt.text.lower() in _MONTHS and value == int(value) and value <= 31:
        return _Slot("date", "date", (None, _MONTHS[nxt.text.lower()], int(value)),
                     f"{w.text} {nxt.text}", w.start)
    if prev is not None and prev.text.lower() in _MONTHS and value <= 31:
        return _Slot("date", "date", (None, _MONTHS[prev.text.lower()], int(value)),
                     f"{prev.text} {w.text}", prev.start)
    return None


def _spoken_price(text: str, words: list[_Word], i: int, num: _Number, nxt: _Word | None
                  ) -> tuple[_Slot, int] | None:
    """A price said aloud at word ``i`` ("twelve fifty" → 12.50, "nineteen ninety-nine" →
    19.99): its slot and the index of the word after it, or None."""
    price = _read_number(words, num.end) if nxt is not None else None
    if num.spelled and price is not None and price.spelled and not num.scaled and \
            _joined(text, words[num.end - 1], words[num.end]) and \
            not price.scaled and 1 <= num.value < 100 and 10 <= price.value < 100:
        spoken = " ".join(x.text for x in words[i:price.end])
        return _Slot("money", "spoken", ("", num.value + price.value / 100), spoken,
                     words[i].start), price.end
    return None


def _count_slot(text: str, words: list[_Word], i: int, num: _Number, prev: _Word | None
                ) -> _Slot:
    """The quantity slot of the number at word ``i``, keyed by what it counts (a bare number
    when nothing says), with the words before it and whether it is a label."""
    w = words[i]
    surface = " ".join(x.text for x in words[i:num.end])
    before = " ".join(x.text.lower() for x in words[max(0, i - 3):i]
                      if x.sentence == w.sentence)
    unit, label = _count_key(text, words, i, num, prev)
    return _Slot("quantity" if unit else "number", unit, float(num.value), surface,
                 w.start, context=(before, "label" if label else ""))


def _count_key(text: str, words: list[_Word], i: int, num: _Number, prev: _Word | None
               ) -> tuple[str, bool]:
    """What the number at word ``i`` counts ("" if nothing says), and whether it is a label.

    The unit after it ("12 seats"), "a team of 14" (people), a unit right before it ("seats:
    12"), else the nearest content word before it as ``#word`` ("ends in 5063"), a label when
    that word is right before it ("room 12", "macOS 14": a name, not a count).
    """
    w = words[i]
    unit, known = _unit_after(text, words, i, num.end)
    if not known and prev is not None and prev.text.lower() == "of" and any(
            x.text.lower() in _COLLECTIVES for x in words[max(0, i - 3):i - 1]
            if x.sentence == w.sentence):
        return "person", False  # "a team of 14"
    if unit:
        return unit, False
    if prev is not None and prev.text.isalpha() and prev.text.lower() not in _STOP \
            and _unit_name(prev.text) and _joined(text, prev, w, ":"):
        return _unit_name(prev.text) or "", False  # "seats: 12", "headcount 12"
    for x in reversed(words[max(0, i - 3):i]):
        if x.sentence == w.sentence and x.text.isalpha() and x.text.lower() not in _STOP:
            return "#" + x.stem, x is prev and _joined(text, prev, w)
    return "", False


def _proper_context(words: list[_Word], slots: list[_Slot]) -> None:
    """Give each proper noun the words around it (``the Pro monthly plan`` → ``monthly``)."""
    at = {w.start: i for i, w in enumerate(words)}
    for k, s in enumerate(slots):
        if s.kind != "proper" or s.start not in at:
            continue
        i = at[s.start]
        prev = words[i - 1] if i > 0 and words[i - 1].sentence == words[i].sentence else None
        nxt = (words[i + 1] if i + 1 < len(words) and words[i + 1].sentence == words[i].sentence
               else None)
        slots[k] = _Slot(s.kind, s.key, s.value, s.text, s.start, s.hard,
                         (prev.stem if prev and prev.text.lower() not in _STOP else "",
                          nxt.stem if nxt and nxt.text.lower() not in _STOP else ""))


# --------------------------------------------------------------------------------------------
# Comparing a fact with the messages
# --------------------------------------------------------------------------------------------


_NUMERIC = frozenset({"number", "quantity"})
_ASKING = re.compile(r"(?:\W|hi|hello|and|so|also|first)*\b(?:have|did|do|are|is|has|were|was|"
                     r"had)\s+(?:you|your)\b", re.I)
_CONFIRM = re.compile(r"\b(?:confirm|right|correct|just to|still)\b", re.I)
_ENDING = re.compile(r"\b(?:ending|ends|end|last)\b")


def _same(a: _Slot, b: _Slot) -> bool:
    """Does text slot ``b`` state the value of fact slot ``a``?"""
    if a.kind in _NUMERIC and b.kind in _NUMERIC:
        return a.value == b.value and _units_agree(a, b)
    if a.kind == "money" and b.kind in _NUMERIC:
        # "$19.99" restated as "the 19.99" (a bare number, not "19.99 kg")
        return abs(a.value[1] - b.value) < 1e-9 and not _counts(b)
    if a.kind in _NUMERIC and b.kind == "money":
        # "Flight price is 100" stated as "$100"
        return abs(a.value - b.value[1]) < 1e-9 and not _counts(a)
    if a.kind == "ident" and b.kind in _NUMERIC:
        # "ACCT-6795" referred to as "6795", or as "the one ending in 95"
        groups = re.findall(r"\d+", a.text)
        digits = re.sub(r"\D", "", b.text)
        if not groups or not digits:
            return False
        if len(digits) >= 3 and digits == groups[-1]:
            return True
        return (len(digits) >= 2 and groups[-1].endswith(digits)
                and _ENDING.search(b.context[0]) is not None)
    if a.kind != b.kind:
        return False
    if a.kind == "money":
        (ca, xa), (cb, xb) = a.value, b.value
        return abs(xa - xb) < 1e-9 and (ca == cb or not ca or not cb)
    if a.kind == "time":
        return a.value[:2] == b.value[:2] and (a.value[2] == b.value[2] or None in (
            a.value[2], b.value[2]))
    if a.kind == "date":
        return all(x == y for x, y in zip(a.value, b.value) if x is not None and y is not None)
    return a.value == b.value


def _counts(s: _Slot) -> bool:
    """Does the number say what it counts ("12 seats"), not only a word near it?"""
    return bool(s.key) and not s.key.startswith("#")


def _units_agree(a: _Slot, b: _Slot) -> bool:
    """Can two equal numbers be the same quantity?

    Real units must agree (3 laptops is not 3 days; 12 seats is 12 people); a number keyed
    only by a nearby word agrees with anything, except that a count is not a label ("12 seats"
    is not "room 12").
    """
    if _counts(a) and _counts(b):
        return a.key == b.key or _kin(a.key, b.key)
    if _counts(a) or _counts(b):
        return "label" not in (a.context[1], b.context[1])
    return True


def _comparable(a: _Slot, b: _Slot) -> bool:
    """Can ``b`` stand for the same thing as ``a`` (so a different value conflicts)?"""
    if a.kind != b.kind or a.kind == "number":
        return False
    if a.kind == "proper":  # a different name in the same frame: "Pro monthly" / "Plus monthly"
        return any(x and x == y for x, y in zip(a.context, b.context))
    if a.kind == "money":  # a price said aloud may be a year: it confirms, never conflicts
        return "spoken" not in (a.key, b.key) and (
            a.value[0] == b.value[0] or not a.value[0] or not b.value[0])
    return a.key == b.key


def _content_stems(an: _Analysis) -> list[str]:
    out = []
    for w in an.words:
        low = w.stem
        if low in _STOP or w.text.lower() in _STOP or low in _NEGATIONS or low.endswith("n't"):
            continue
        out.append(w.stem)
    return list(dict.fromkeys(out))


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or _REQUEST.search(sentence) is not None


_EMPTY = _analyze("")


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


def _role_name(part: _Part) -> str:
    return {"act": "a tool call", "handoff": "the context handed on",
            "world": "a tool result"}.get(part.role, "the text")



@lru_cache(maxsize=1)
def _version() -> str:
    """Revision + a hash of this module's source and parameters: any rule change shows."""
    h = hashlib.sha256(Path(__file__).read_bytes())
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
