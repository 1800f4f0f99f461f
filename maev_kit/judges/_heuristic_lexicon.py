"""The offline retention judge's words: lexicons, stemming and closed word classes.

This module owns what the heuristic judge (:mod:`maev_kit.judges._heuristic`) knows about
English before it reads a single message: stop words and negations, number words, weekdays and
months, units and what a quantity counts, the closed word classes whose members exclude each
other (billing periods, approved/denied, colours…) with their aliases, synonyms and hypernyms,
the cues of requests, replacements and rejections, the token and sentence patterns, and the
stemmer and group index built on them. It holds data and the small functions that look words
up in it; reading values out of a text lives in :mod:`maev_kit.judges._heuristic_values`.
"""

from __future__ import annotations

import re
from functools import lru_cache


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


# --------------------------------------------------------------------------------------------
# Stemming, synonyms and word groups
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
