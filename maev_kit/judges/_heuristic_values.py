"""The offline retention judge's value extraction and normalisation: analyses and slots.

This module owns how the heuristic judge (:mod:`maev_kit.judges._heuristic`) reads one text:
``_analyze`` splits it into sentences, content words and *value slots* (identifiers, e-mails,
money, percentages, dates, weekdays, times, proper nouns, closed word classes), reads numbers
whole however they are written (digits, number words, a price said aloud) and keys a quantity
by what it counts. It also owns how two slots compare (``_same``, ``_comparable``: the same
value, of the same kind and unit) and the fact's content words. It knows nothing of
conversations or agents: whose words a text was is :mod:`maev_kit.judges._heuristic_evidence`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from maev_kit.judges._heuristic_lexicon import (
    _AMBIGUOUS_MONTHS, _CARDINALS, _COLLECTIVES, _CURRENCY_WORDS, _HYPERNYMS, _MODIFIERS, _MONTHS,
    _NEGATIONS, _REQUEST, _SCALES, _SENTENCE, _SPECIFIC_TO_GENERAL, _STOP, _TOKEN, _UNITS,
    _UNIT_OF, _WEEKDAYS, _WORD_NUMBERS, _canonical, _group_member, _stem,
)


# --------------------------------------------------------------------------------------------
# Text analysis
# --------------------------------------------------------------------------------------------


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
