"""The offline fact extractor: deterministic rules over one message, stdlib only.

:func:`extract` finds the spans a person would write down as key facts — identifiers and codes,
emails, phone numbers, money, dates and times, counts with a unit, names a person gives for
themselves, places, plans — and returns them as :class:`Span` objects whose ``value`` is the
exact text of the message (``value in message`` holds), so a reviewer can highlight it.

Rules favour precision: a bare number, a word in capitals or an agent's pleasantry proposes
nothing. Overlapping matches keep the most specific one (an account number wins over the
digits inside it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import cast

__all__ = ["AGENT_KINDS", "STRONG_KINDS", "Span", "extract"]

#: Kinds that hold for any speaker: ``extract(strong_only=True)`` keeps to these.
STRONG_KINDS = frozenset({"identifier", "email", "phone", "money"})
#: Kinds taken from the handing-off agent's own words: the strong kinds plus the times and
#: counts an agent commits to ("at 10:00 am", "in 3-5 business days"), when they hold a digit.
#: (An agent's dates are left out: in support_desk they were mostly an agent's slips.)
AGENT_KINDS = STRONG_KINDS | frozenset({"time", "quantity"})
#: What else is read in an agent's words and kept only when a tool call got the value before
#: the handoff (the dates and airports of the change the agent made or searched for).
AGENT_TOOL_KINDS = frozenset({"date", "place"})


@dataclass(frozen=True)
class Span:
    """One extracted fact: ``kind``, ``text`` (a readable sentence naming the slot), ``value``
    (exact span), ``slot`` (what the value is about: ``"departure time"``; None when no word
    names it)."""

    kind: str
    text: str
    value: str
    start: int
    slot: str | None = None


# ---- building blocks ---------------------------------------------------------------------

_MONTHS = ("January|February|March|April|May|June|July|August|September|October|November|"
           "December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec")
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                 "fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
                 "fifty|a dozen|a couple of|a pair of")
_TIME = (r"\d{1,2}(?:[:.][0-5]\d)?\s?(?:[ap]\.m\.|[ap]m)(?![\w])"
         r"|(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\+\d)?)?(?![\d:])")
_DAY_OF_MONTH = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    rf"\d{{4}}-[01]\d-[0-3]\d"                                      # 2025-03-14
    rf"|[0-3]?\d/[0-3]?\d/(?:\d{{4}}|\d{{2}})"                      # 03/14/2025
    rf"|(?:{_MONTHS})\.?\s{_DAY_OF_MONTH}(?:,?\s\d{{4}})?"          # June 16, 2025
    rf"|{_DAY_OF_MONTH}\s(?:of\s)?(?:{_MONTHS})(?:,?\s\d{{4}})?"    # 16 June 2025
    rf"|(?:{_WEEKDAYS})(?:,?\s(?:{_MONTHS})\.?\s{_DAY_OF_MONTH})?"  # Friday(, June 16)
    rf"|(?:{_MONTHS})\s\d{{4}}"                                     # March 2025
)
_CURRENCIES = "USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|INR|CNY|HKD|SGD|MXN|BRL|ZAR"
_B = r"(?<![\w@.-])"   # left boundary: not inside a word, an email or an identifier
_E = r"(?![\w@-])"      # right boundary

# Identifier keywords → the label used in the fact text.
_ID_LABELS = {
    "account": "account number", "acct": "account number", "order": "order number",
    "booking": "booking reference", "reservation": "reservation number",
    "confirmation": "confirmation code", "ticket": "ticket number", "case": "case number",
    "invoice": "invoice number", "customer": "customer number", "member": "member id",
    "membership": "membership number", "user": "user id", "username": "username",
    "policy": "policy number", "tracking": "tracking number", "reference": "reference",
    "ref": "reference", "pnr": "booking reference", "serial": "serial number",
    "claim": "claim number", "loyalty": "loyalty number", "passport": "passport number",
    "flight": "flight number", "transaction": "transaction id", "refund": "refund reference",
    "error": "error code", "model": "model", "version": "version", "license": "license key",
    "subscription": "subscription id", "device": "device id", "employee": "employee id",
    "student": "student id", "patient": "patient id", "id": "id",
}
_ID_TOKEN = (r"(?=[\w-]*\d)[A-Za-z0-9][\w-]*[A-Za-z0-9]"   # has a digit: ACCT-4471, 88123
             r"|[A-Z][A-Z0-9]{4,}(?![a-z])")                  # or capitals: QXBPTF
_ID_CANDIDATE = re.compile(rf"(?<![\w@.-])(?:{_ID_TOKEN})(?![\w@-])")
# The words before a candidate that name it ("my account number is "), matched at its start.
_KEYWORD_BEFORE = re.compile(
    rf"\b(?i:(?P<kw>{'|'.join(sorted(_ID_LABELS, key=len, reverse=True))})"
    r"(?:\s+(?:number|no\.?|num|#|id|code|reference|ref))?"
    r"(?:\s*(?:is|was|:|=|#)\s*|\s+)(?:it'?s\s+)?)#?\Z")
_DIGIT = re.compile(r"\d")
_CARD = re.compile(
    r"\b(?:end(?:s|ing|ed)(?:\s+(?:in|with))?|last\s+(?:four|4)(?:\s+digits)?(?:\s+(?:is|are))?"
    r":?)\s+(?P<value>\d{4})(?![\d,.]\d|\d)", re.IGNORECASE)
_DEVICES = ("iPhone|iPad|iMac|MacBook|Mac mini|Mac Studio|Pixel|Galaxy|Surface|ThinkPad|"
            "Chromebook|Kindle|Xbox|PlayStation|Nintendo Switch|Apple Watch|AirPods|OnePlus|"
            "Xperia|Moto|Fire TV|Roku|Chromecast|Echo|Fairphone|Nokia|Huawei|Xiaomi|Redmi")
_DEVICE = re.compile(
    rf"\b(?:{_DEVICES})(?:\s(?:Air|Pro|Max|Mini|mini|Plus|Ultra|Lite|SE|Fold|Flip|Note|Tab|"
    rf"Go|[A-Z]?\d{{1,4}}[a-z]?)(?![\w-])){{0,3}}")
_OS = re.compile(r"\b(?:macOS|iOS|iPadOS|watchOS|Android|Windows|ChromeOS|Ubuntu|Debian|Fedora|"
                 r"HarmonyOS)\s\d+(?:\.\d+)*(?!\w|\.\d)")
_MARKUP = re.compile(r"<([a-zA-Z][a-zA-Z0-9]*)\b[^<>\n]{0,200}>(?:[^<>\n]{0,200}</\1>)?")
_MODEL = re.compile(r"\b[A-Z][a-z]+[A-Z][a-z]+\s\d{1,4}(?![\w.-])")  # HomeHub 4
_OF_US = re.compile(r"\b(?:\d+|" + _NUMBER_WORDS.replace("a dozen|", "") + r")\sof\sus\b")

# Flights and trains. After "flight"/"train": a carrier code and number (UA 915, ICE 578), or a
# number alone (flight 915, train 9C). Without the word: a known airline code (IATA, the ones
# that are not also common abbreviations) or train brand, a space, a number (LH 454, TGV 6201).
# Codes written together (BA2490) are identifiers already.
_AIRLINES = ("AA|AC|AF|AY|AZ|B6|BA|BR|CX|CZ|DL|DY|EI|EK|ET|EW|EY|F9|FR|HU|IB|JL|KE|KL|LH|LO|"
             "LX|MH|MU|NH|NK|NZ|OZ|QF|QR|SK|SN|SQ|SU|TK|TP|U2|UA|VS|VY|W6|WN")
_TRAINS = "ICE|TGV|AVE|RJX?|Eurostar|Thalys|Frecciarossa|Italo|Amtrak|Acela"
_NOT_A_NUMBER_AFTER = (r"(?![\w-]|\.\d|\s?%|\s(?:times?|hours?|minutes?|days?|weeks?|months?|"
                       r"years?|people|passengers?|persons?|of|or)\b)")
# A number alone after "flight"/"train" followed by a word is a count, not a flight number
# ("flight 10 options", "train 80 rows"), unless the word goes on about a trip.
_COUNT_AFTER = re.compile(r"\s+(?!(?:to|from|at|on|is|was|has|had|departs?|departing|leaves|"
                          r"leaving|arrives?|arriving|lands?|landing|and|or|in|for|with|which|"
                          r"that|will|today|tomorrow|tonight|got|gets|was|were|has|been|"
                          r"delayed|cancell?ed|boards?|boarding)\b)[a-z]")
_TRIP = re.compile(
    r"\b(?P<kw>(?i:flight|flt|train))(?:\s+(?i:no\.?|number|num|#))?\s*#?\s*"
    rf"(?P<value>(?:[A-Z]{{2,3}}|[A-Z]\d|\d[A-Z])\s?\d{{1,5}}[A-Z]?|\d{{1,4}}[A-Z]|\d{{2,5}})"
    + _NOT_A_NUMBER_AFTER
    + rf"|(?<![\w-])(?P<bare>(?:{_AIRLINES})\s\d{{2,4}}|(?:{_TRAINS})\s\d{{1,5}})"
    + _NOT_A_NUMBER_AFTER)
_TRIP_HINT = re.compile(rf"(?<![\w-])(?:{_AIRLINES}|{_TRAINS})\s\d")

# A month alone after a word that makes it a date ("charged twice for March", "my June bill").
# Full names only; "May" only after in/since/until/during/of/last/next (else "May I…").
_BARE_MONTH = re.compile(r"\b(?P<value>January|February|March|April|May|June|July|August|"
                         r"September|October|November|December)\b(?![-'’]\w|\s\d|,\s\d)")
_MONTH_BEFORE = re.compile(  # the word before the month, matched at the month's start
    r"\b(?i:(?P<kw>for|from|through|this|early|late|mid|my|the|our|your|by|before|after|in|"
    r"since|until|till|during|of|last|next))[\s-]+\Z")
_MAY_AFTER = frozenset({"in", "since", "until", "till", "during", "of", "last", "next"})
_MONTH_GATE = (False, ("january", "february", "march", "april", "may", "june", "july",
                       "august", "september", "october", "november", "december"))

# Times said in words: "half past three", "quarter to 9", "5 o'clock", "at noon".
_HOURS = r"\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_WORD_TIME = re.compile(
    rf"\b(?i:(?:half|(?:a\s)?quarter)\s(?:past|to)\s(?:{_HOURS})(?:\s?(?:[ap]\.m\.|[ap]m))?"
    rf"|(?:{_HOURS})\so['’]?clock"
    r"|(?<=at\s)(?:noon|midnight|midday)|(?<=by\s)(?:noon|midnight|midday))\b")
_WORD_TIME_GATE = (False, ("past", "quarter", "clock", "noon", "midnight", "midday"))

# Text quoted after an error word: fails with 'account suspended', the message says "…".
_QUOTED = re.compile(
    r"\b(?i:error|errors|message|warning|banner|alert|popup|pop-up|says|said|saying|shows|"
    r"showing|reads|fails?\s+with|failing\s+with|failed\s+with|returns?|returning|returned)"
    r"(?:\s+(?:is|was|of|that|reading|saying|like|me|us))?:?\s+"
    r"(?:[\"“](?P<dq>[^\"”\n]{3,60})[\"”]|[‘'](?P<sq>[^'’\n]{3,60})['’](?!\w))")
_QUOTED_GATE = (False, ("error", "message", "warning", "banner", "alert", "pop", "says", "said",
                        "saying", "shows", "showing", "reads", "fail", "return"))
_QUOTES = ("\"", "“", "'", "‘")

# A name given in lower case after "my name is" (the capitalised rule takes the rest).
_LOWER_NAME = re.compile(r"\b(?i:my name(?:\sis|['’]s))\s+"
                         r"(?P<value>[a-z][a-z'’-]+(?:\s[a-z][a-z'’-]+)?)(?![\w@])")

# (needs_digit, words): see _passes
_Gate = tuple[bool | None, tuple[str, ...] | None]

_PATTERNS: list[tuple[str, int, _Gate | None, re.Pattern[str]]] = [
    # (kind, priority, gate, pattern): the pattern runs only when the message passes the gate
    # (a cheap test that skips most of the messages it cannot match; see _passes)
    ("email", 90, (False, ("@",)), re.compile(
        r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*"
                             r"\.[A-Za-z]{2,}(?![\w-])")),
    ("money", 80, (True, ("$", "€", "£", "¥", "₹", "dollar", "euro", "pound", "buck",
                           *(c.casefold() for c in _CURRENCIES.split("|")))), re.compile(
        _B + r"(?:(?:US|CA|AU|NZ|HK|S)?[$€£¥₹]\s?\d[\d,]*(?:\.\d+)?"
        r"(?:\s?(?:k|m|bn|million|billion)\b)?"
        rf"|(?:{_CURRENCIES})\s?\d[\d,]*(?:\.\d+)?(?![\d.])"
        r"|\d[\d,]*(?:[.,]\d+)?\s?[€£₹](?![\w$€£])"
        rf"|\d[\d,]*(?:\.\d+)?\s?(?:{_CURRENCIES}|dollars?|euros?|pounds|bucks)\b)")),
    ("date", 70, (False, ("day", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                          "oct", "nov", "dec")),  # or a digit and "-" or "/" (see extract)
     # (the lookahead names the first characters a date can start with: a quick rejection)
     re.compile(rf"\b(?=[\dJFMASONDTW])(?:{_DATE})(?:,?\s(?:at\s)?(?:{_TIME}))?(?![\w/])")),
    ("time", 60, (True, (":", "am", "pm", "a.m", "p.m")), re.compile(rf"{_B}(?:{_TIME})")),
    ("phone", 55, (True, None), re.compile(
        r"(?<![\w-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)\s?|\d{2,4}[\s.-])\d{2,4}[\s.-]\d{3,4}"
        r"(?:[\s.-]\d{2,4})?(?![\w-])")),
    ("identifier", 50, None, re.compile(
        _B + r"(?:[A-Z]{1,6}(?:-[A-Z0-9]+)*-\d[A-Z0-9]*(?:-[A-Z0-9]+)*"  # ACCT-4471-9920
        r"|[A-Z]+[0-9][A-Z0-9]*(?:-[A-Z0-9]+)*"                        # INV88213, UM3OG5, RF5521
        r"|[0-9]+[A-Z][A-Z0-9]*"                                       # 5AB12
        r"|[a-z][a-z0-9]*(?:_[a-z0-9]+)*_\d+[a-z0-9_]*"                # omar_rossi_1241
        r"|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"                              # SSL_ERROR_BAD_CERT
        r"|(?:[A-Z][a-z]+)+(?:Exception|Error|Fault)"               # ThrottlingException
        r"|[a-z]{2,}(?:-[a-z]+)+-\d+[a-z]?"                            # eu-west-1
        r"|HTTP\s\d{3}"                                                # HTTP 504
        r"|v?\d+\.\d+\.\d+(?:\.\d+)?"                                  # 6.1.5
        r"|\d{5,}"                                                     # 8812345
        r")" + _E)),
    ("quantity", 40, (None, ("one", "two", "three", "four", "five", "six", "seven", "eight",
                             "nine", "ten", "eleven", "twelve", "teen", "twenty", "ty ",
                             "dozen", "couple", "pair")), re.compile(
        # (not after "." or "-": "v2.1 last week" is no count; the lookahead is a quick
        # rejection of the places no number or number word starts)
        rf"\b(?<![.,:/-])(?=[\dotfsena])"
        rf"(?:\d+(?:\.\d+)?(?:\s?(?:-|–|to)\s?\d+(?:\.\d+)?)?|{_NUMBER_WORDS})\s(?:[a-z]+\s)?"
        r"(?:bags?|suitcases?|luggage|people|persons?|passengers?|guests?|adults?|children|"
        r"kids?|infants?|seats?|licen[cs]es?|users?|rooms?|nights?|days?|weeks?|months?|"
        r"baggages?|luggages|"
        r"years?|hours?|minutes?|items?|tickets?|devices?|laptops?|phones?|lines?|accounts?|"
        r"units?|boxes|packages?|pieces?|orders?|copies|employees|members|beds?|tables?|"
        r"floors?|pets?|dogs?|cats?|GB|TB|MB|kg|lbs?|km|miles?|meters?|metres?|mbps|Mbps|"
        r"gigabytes?|terabytes?|kilograms?|pounds of)\b")),
]

# A word (letters, inner apostrophes or hyphens); capitalisation is checked after matching.
_CAP = r"[^\W\d_][^\W\d_'’-]*(?:['’-][^\W\d_]+)*"
_NAME = re.compile(
    rf"\b(?:my name is|my name's|name is|name's|I'm|I am|this is|call me|it's)\s+(?P<value>{_CAP}"
    rf"(?:\s{_CAP}){{0,2}})", re.IGNORECASE)
_FROM_TO = re.compile(rf"\bfrom\s+(?P<a>{_CAP}(?:\s{_CAP}){{0,3}})\s+to\s+(?P<b>{_CAP}"
                      rf"(?:\s{_CAP}){{0,3}})")
_SENTENCE_NAME = re.compile(  # "Arjun Mehta. My account…": a sentence that is only a name
    rf"(?:^|(?<=[.!?])\s+)(?P<value>[^\W\d_]{{2,}}(?:[ -][^\W\d_]{{2,}}){{1,2}})(?=[.!]\s|[.!]?$)",
    re.MULTILINE)
_FROM = re.compile(rf"\bfrom\s+(?P<value>{_CAP}(?:\s{_CAP}){{0,3}})")
_PLAN = re.compile(
    rf"\b(?:on|have|has|with|using|use|got|bought|pay for|subscribed to|plan is|plan:|"
    rf"plan's)\s+(?:the\s+|a\s+|an\s+|"
    rf"our\s+|my\s+)?(?P<value>{_CAP}(?:\s(?:annual|monthly|yearly|plan|tier|"
    rf"subscription|membership|package))+|{_CAP}\s(?=plan\b|tier\b|subscription\b))")

# Capitalised words that are not names or places (sentence words, days, pronouns, fillers).
_NOT_PROPER = frozenset("""
a an the i i'm im me my we our you your he she it they this that these those there here
not no yes so very really just also still already now then sorry sure fine ok okay good great
happy glad afraid here calling writing back again from with about in on at to for of and or
but if when what who how why which hi hello hey thanks thank please help can could would will
trying looking having getting going done ready available interested confused frustrated
customer support team agent user sir madam mr mrs ms dr account order booking
monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday morning
evening night january february march april may june july august september october november
december
""".split())
_LOWER_ALLOWED = frozenset({"de", "da", "van", "von", "del", "la", "le", "di", "bin", "al"})
_NOT_A_NAME = _NOT_PROPER | frozenset("""
spelled spelt listed wrong missing different correct incorrect shown showing displayed misspelled
changed written printed registered under still also actually on as is was the same blank empty
""".split())


_DEVICE_GATE = (False, tuple({w.split()[0].casefold() for w in _DEVICES.split("|")}))
_OS_GATE = (True, ("os", "android", "windows", "ubuntu", "debian", "fedora"))
_PLAN_GATE = (False, ("annual", "monthly", "yearly", "plan", "tier", "subscription",
                      "membership", "package"))


# Parts of a snake_case or CONSTANT_CASE word that make it a field, table, split or file name
# rather than a value ("order_id_2", "USER_ID", "train_2"); a code with an error word stays.
_SCHEMA_PARTS = frozenset("""
id ids key keys name names date time type field fields col column columns table tables row rows
train test val valid validation dev split splits data dataset datasets file files tmp temp run
runs step steps epoch epochs batch model models version user users order orders item items
count total amount value values status created updated at idx index num max min avg sum
""".split())
_ERROR_PARTS = frozenset({"error", "err", "fail", "failed", "failure", "denied", "invalid",
                          "timeout", "exception", "refused", "unauthorized", "forbidden",
                          "expired", "exceeded", "unavailable", "bad", "cert", "not", "found",
                          "ssl", "tls", "http", "errno"})
_FILE_AFTER = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}\b")


def _schema_word(value: str, message: str, end: int) -> bool:
    """Whether an identifier-shaped ``value`` is a file name (``data_2024.csv``) or a schema
    word (a field, table or split name: ``order_id_2``, ``USER_ID``, ``train_2``)."""
    if _FILE_AFTER.match(message, end):
        return True
    if "_" not in value:
        return False
    parts = [p for p in value.casefold().split("_") if p]
    if any(p in _ERROR_PARTS for p in parts):
        return False
    if value.isupper() and not any(c.isdigit() for c in value):
        return True  # CONSTANT_CASE without a digit or an error word: a field or setting
    return any(p in _SCHEMA_PARTS for p in parts)


def _passes(gate: _Gate, low: str, digits: bool) -> bool:
    """Whether a message may match. ``gate = (digit, words)``: ``digit`` True — it needs a
    digit and one of ``words`` (casefolded; None: no word needed); False — one of ``words``;
    None — a digit or one of ``words``."""
    needs_digit, words = gate
    if needs_digit is None and digits:
        return True
    if needs_digit and not digits:
        return False
    if words is None:
        return True
    for w in words:
        if w in low:
            return True
    return False


def _proper_words(value: str, *, max_words: int) -> str | None:
    """The leading run of capitalised, non-stop words of ``value`` (None when there is none)."""
    words = value.split()
    out: list[str] = []
    for w in words[:max_words]:
        bare = w.strip("'’-")
        if not bare or bare.casefold() in _NOT_PROPER and not (out and bare.casefold()
                                                               in _LOWER_ALLOWED):
            break
        if len(bare) > 1 and bare.isupper():  # shouting or a code, not a name
            break
        if not bare[0].isupper():
            if out and bare in _LOWER_ALLOWED:
                out.append(w)
                continue
            break
        out.append(w)
    while out and out[-1] in _LOWER_ALLOWED:
        out.pop()
    return " ".join(out) if out else None


def _cap(label: str) -> str:
    return label[:1].upper() + label[1:]


def _id_label(value: str) -> str:
    prefix = re.match(r"[A-Za-z]+", value)
    guess = {"acct": "account number", "acc": "account number", "inv": "invoice number",
             "ord": "order number", "tkt": "ticket number", "tick": "ticket number",
             "case": "case number", "bk": "booking reference", "res": "reservation number",
             "rf": "refund reference", "ref": "reference", "cs": "case number",
             "pnr": "booking reference", "http": "error code", "err": "error code",
             "e": "error code"}
    if prefix and prefix.group().casefold() in guess and not value.isalpha():
        return guess[prefix.group().casefold()]
    if "Exception" in value or "Error" in value or value.startswith("HTTP"):
        return "error code"
    if re.fullmatch(r"[a-z]{2,}(?:-[a-z]+)+-\d+[a-z]?", value):
        return "region"
    if re.fullmatch(r"v?\d+\.\d+\.\d+(?:\.\d+)?", value):
        return "version"
    if "_" in value and value.islower():
        return "user id"
    if "_" in value:
        return "code"
    return "reference"


def _text(kind: str, value: str, label: str | None = None, slot: str | None = None) -> str:
    """The fact's sentence: the slot when one names the value (``Departure time is 19:10``),
    else the kind's word (``Time is 19:10``); a count names itself (``3 checked bags``)."""
    if slot and kind != "quantity" and (kind != "place" or slot != "route"):
        return f"{_cap(slot)} is {value}"
    if kind == "identifier":
        return f"{_cap(label or _id_label(value))} is {value}"
    if kind == "other":
        return f"{_cap(label or 'detail')} is {value}"
    return {
        "email": f"Email is {value}",
        "phone": f"Phone number is {value}",
        "money": f"Amount is {value}",
        "date": f"Date is {value}",
        "time": f"Time is {value}",
        "quantity": value,
        "name": f"Name is {value}",
        "place": f"Place is {value}",
    }.get(kind, value)


def extract(message: str, *, strong_only: bool = False,
            kinds: frozenset[str] | None = None) -> list[Span]:
    """Facts in one message, in order of position, none overlapping another.

    ``strong_only`` keeps to :data:`STRONG_KINDS`; ``kinds`` (when given) to those kinds
    (:data:`AGENT_KINDS` for what an agent says).

    >>> [(s.kind, s.value) for s in extract("My account number is ACCT-4471, 3 checked bags.")]
    [('identifier', 'ACCT-4471'), ('quantity', '3 checked bags')]
    >>> extract("My account number is ACCT-4471")[0].text
    'Account number is ACCT-4471'
    >>> extract("Thanks, I'll look into it now.")
    []
    """
    found: list[tuple[int, int, int, Span]] = []  # (priority, start, end, span)

    allowed = STRONG_KINDS if strong_only else kinds

    def add(kind: str, prio: int, start: int, value: str, label: str | None = None) -> None:
        if allowed is not None and kind not in allowed:
            return
        found.append((prio, start, start + len(value),
                      Span(kind, _text(kind, value, label), value, start, label)))

    if not message:
        return []
    digits = _DIGIT.search(message) is not None
    low = message.casefold()
    if digits or message != low:
        _extract_keyword_ids(message, add)
    for m in _CARD.finditer(message) if digits and ("end" in low or "last" in low) else ():
        add("identifier", 100, m.start("value"), m.group("value"), "card ending")
    trip = digits and ("flight" in low or "flt" in low or "train" in low
                       or _TRIP_HINT.search(message) is not None)
    for m in _TRIP.finditer(message) if trip else ():
        if m.group("bare"):
            value, start = m.group("bare"), m.start("bare")
            train = re.match(_TRAINS, value) is not None
        else:
            value, start = m.group("value"), m.start("value")
            train = m.group("kw").casefold() == "train"
            if value.isdigit() and _COUNT_AFTER.match(message, m.end("value")):
                continue  # "flight 10 options": a count
        add("identifier", 100, start, value, "train number" if train else "flight number")
    if allowed is None:
        _extract_weak(message, low, digits, add, found)
    elif "place" in allowed and not message.islower():
        _extract_airports(message, add)
    for kind, prio, gate, pattern in _PATTERNS:
        if allowed is not None and kind not in allowed:
            continue
        if allowed is not None and kind not in STRONG_KINDS and not digits:
            continue  # a chosen weak kind (an agent's date, time, count) needs a digit
        if kind == "identifier":
            if not (digits or "_" in message or "Exception" in message or "Error" in message
                    or "Fault" in message):
                continue
        elif not _passes(cast(_Gate, gate), low, digits) and not (  # only "identifier" has none
                kind == "date" and digits and ("-" in message or "/" in message)):
            continue
        for m in pattern.finditer(message):
            value = m.group()
            if kind == "phone" and sum(c.isdigit() for c in value) < 8:
                continue
            if kind == "identifier" and _schema_word(value, message, m.end()):
                continue
            add(kind, prio, m.start(), value)

    found.sort(key=lambda f: (-f[0], -(f[2] - f[1]), f[1]))
    taken: list[tuple[int, int]] = []
    spans: list[Span] = []
    for _, start, end, span in found:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        spans.append(_with_slot(message, span))
    spans.sort(key=lambda s: s.start)
    return spans


# An airport code after a word of travel: "from JFK to SFO", "fly into IAH", "via ORD".
_AIRPORT = re.compile(r"\b(?P<kw>(?i:from|to|into|via|out of|at|airport))\s+"
                      r"(?P<value>[A-Z]{3})(?![\w-])")
_NOT_AIRPORT = frozenset({"THE", "AND", "USA", "API", "CEO", "FAQ", "ETA", "PDF", "URL", "SMS",
                          "VIP", "DOB", "EST", "PST", "UTC", "GMT", "CET", "AWS", "GCP", "SSO",
                          "VPN", "DNS", "SSL", "TLS", "CSV", "PIN", "ATM", "YES", "NOT", "ALL"})


# An airport code in brackets after a place's name: "my flight from Los Angeles (LAX)".
_NAMED_AIRPORT = re.compile(r"\b[A-Z][a-z]+(?:\s[A-Z][a-z]+){0,2}\s\((?P<value>[A-Z]{3})\)")
# A percentage the user asks for or quotes about money: "a 50% refund", "10 % off" (not a
# split ratio, "train 80% / test 20%").
_PERCENT = re.compile(r"(?<![\w.,-])\d{1,3}(?:\.\d+)?\s?%")
_PERCENT_CUE = re.compile(r"\b(?:refund|discount|off|compensation|credit|voucher|fee|charge|"
                          r"rebate|cashback|interest|price|cost|bill)")


def _extract_airports(message: str, add) -> None:
    """Airport codes after from/to/into/via/at (places whose slot is the origin or the
    destination) or in brackets after a place's name (``Los Angeles (LAX)``)."""
    for m in _NAMED_AIRPORT.finditer(message):
        if m.group("value") not in _NOT_AIRPORT:
            add("place", 30, m.start("value"), m.group("value"), "airport")
    for m in _AIRPORT.finditer(message):
        if m.group("value") in _NOT_AIRPORT:
            continue
        kw = m.group("kw").casefold()
        label = ("origin" if kw in ("from", "out of") else
                 "destination" if kw in ("to", "into") else "airport")
        add("place", 31, m.start("value"), m.group("value"), label)


def _extract_keyword_ids(message: str, add) -> None:
    """Identifiers a keyword names ("my account number is ACCT-4471", "order #88213"); a short
    number a noun follows is a count ("flight 10 options", "order 3 items")."""
    for c in _ID_CANDIDATE.finditer(message):
        m = _KEYWORD_BEFORE.search(message, max(0, c.start() - 40), c.start())
        if m is None:
            continue
        value = c.group()
        kw = m.group("kw").casefold()
        if kw in ("id", "model", "version") and not any(ch.isdigit() for ch in value):
            continue
        if value.isdigit() and len(value) <= 4 and _COUNT_AFTER.match(message, c.end()):
            continue
        add("identifier", 100, c.start(), value, _ID_LABELS[kw])


def _extract_dates(message: str, low: str, digits: bool, add) -> None:
    """Dates, times and counts in words: a month alone, "half past three", "four of us"."""
    for m in _OF_US.finditer(message) if "of us" in low else ():
        add("quantity", 40, m.start(), m.group())
    for m in _BARE_MONTH.finditer(message) if _passes(_MONTH_GATE, low, digits) else ():
        before = _MONTH_BEFORE.search(message, max(0, m.start() - 12), m.start())
        if before and (m.group() != "May" or before.group("kw").casefold() in _MAY_AFTER):
            add("date", 65, m.start(), m.group())
    for m in _WORD_TIME.finditer(message) if _passes(_WORD_TIME_GATE, low, digits) else ():
        add("time", 60, m.start(), m.group())


def _extract_weak(message: str, low: str, digits: bool, add, found: list) -> None:
    """The kinds taken from the user's words only: names, places, plans, devices, dates…"""
    if "<" in message:
        for m in _MARKUP.finditer(message):
            add("other", 95, m.start(), m.group(), "quoted text")
    for m in _DEVICE.finditer(message) if _passes(_DEVICE_GATE, low, digits) else ():
        add("other", 85, m.start(), m.group(), "device")
    for m in _OS.finditer(message) if _passes(_OS_GATE, low, digits) else ():
        add("other", 85, m.start(), m.group(), "operating system")
    for m in _MODEL.finditer(message) if digits else ():
        add("identifier", 45, m.start(), m.group(), "model")
    _extract_dates(message, low, digits, add)
    for m in _PERCENT.finditer(message) if "%" in message and _PERCENT_CUE.search(low) else ():
        add("other", 40, m.start(), m.group(), "percentage")
    if not message.islower():
        _extract_airports(message, add)
    quotes = any(q in message for q in _QUOTES) and _passes(_QUOTED_GATE, low, digits)
    for m in _QUOTED.finditer(message) if quotes else ():
        g = "dq" if m.group("dq") is not None else "sq"
        quoted = m.group(g)
        if quoted.strip() == quoted and len(quoted.split()) <= 8:
            add("other", 36, m.start(g), quoted, "quoted message")
    has_name = any(k in low for k in ("name", "i'm", "i am", "this is", "call me", "it's"))
    for m in _NAME.finditer(message) if has_name else ():
        name = _proper_words(m.group("value"), max_words=3)
        if name:
            add("name", 45, m.start("value"), name)
    for m in _LOWER_NAME.finditer(message) if "my name" in low else ():
        words = []
        for w in message[m.start("value"):m.end("value")].split():
            if w.casefold() in _NOT_A_NAME or not w.islower():
                break
            words.append(w)
        if words:
            add("name", 44, m.start("value"), " ".join(words))
    for m in _SENTENCE_NAME.finditer(message):
        if _proper_words(m.group("value"), max_words=3) == m.group("value"):
            add("name", 42, m.start("value"), m.group("value"))
    has_from = "from " in low
    for m in _FROM_TO.finditer(message) if has_from else ():
        a = _proper_words(m.group("a"), max_words=4)
        b = _proper_words(m.group("b"), max_words=4)
        if a and b and m.group("a").startswith(a) and m.group("b") == b:
            value = message[m.start("a"):m.start("b") + len(b)]
            found.append((44, m.start("a"), m.start("a") + len(value),
                          Span("place", f"Route is from {value}", value, m.start("a"),
                               "route")))
    for m in _FROM.finditer(message) if has_from else ():
        place = _proper_words(m.group("value"), max_words=4)
        if place:
            add("place", 30, m.start("value"), place)
    for m in _PLAN.finditer(message) if _passes(_PLAN_GATE, low, digits) else ():
        plan_words: str = m.group("value")
        if _proper_words(plan_words.split()[0], max_words=1):
            value = re.sub(r"\s(?:plan|tier|subscription|membership|package)$", "", plan_words)
            add("other", 35, m.start("value"), value, "plan")


# ---- slots: what a value is about ------------------------------------------------------------

# Words near a value that name its slot, per kind, most specific first; matched in the clause
# before the value (and a few words after it), the nearest cue winning.
_SLOT_CUES: dict[str, list[tuple[str, str]]] = {
    "time": [(r"check[- ]?in", "check-in time"), (r"check[- ]?out", "check-out time"),
             (r"boarding|board", "boarding time"),
             (r"depart\w*|leav\w*|take[- ]?off|outbound|outgoing", "departure time"),
             (r"arriv\w*|lands?|landing", "arrival time"),
             (r"pick[- ]?up", "pickup time"), (r"deliver\w*", "delivery time"),
             (r"appointment|visit|technician|meeting|call\s?back", "appointment time"),
             (r"reservation|table|dinner|lunch", "reservation time")],
    "date": [(r"birth\w*|dob|born", "date of birth"),
             (r"check[- ]?in", "check-in date"), (r"check[- ]?out", "check-out date"),
             (r"return\w*|coming back|inbound", "return date"),
             (r"depart\w*|outbound|outgoing|leav\w*|fly\w*|flight|travel\w*", "travel date"),
             (r"charg\w*|billed|invoice\w*|statement", "charge date"),
             (r"appointment|visit|technician", "appointment date"),
             (r"deadline|due", "due date"), (r"renew\w*|expir\w*", "expiry date")],
    "money": [(r"refund\w*", "refund amount"),
              (r"(?:price|fare|cost)\s+difference|difference", "price difference"),
              (r"fees?|penalty|surcharge", "fee"), (r"balance", "balance"),
              (r"total", "total"), (r"charg\w*|billed|debited", "charge amount"),
              (r"certificate|voucher|gift card|compensation|credit", "credit amount"),
              (r"insurance", "insurance price"),
              (r"price|fare|costs?|rate", "price"), (r"budget", "budget"),
              (r"paid|pay\w*", "payment amount")],
}
_SLOT_RE = {kind: [(re.compile(rf"\b(?:{cue})\b", re.IGNORECASE), slot) for cue, slot in cues]
            for kind, cues in _SLOT_CUES.items()}
_UNIT_SLOT = {  # a count's unit → its slot ("3 checked bags" → "bag count")
    "bag": "bag count", "suitcase": "bag count", "luggage": "bag count",
    "people": "passenger count", "person": "passenger count", "passenger": "passenger count",
    "of us": "passenger count", "adult": "passenger count", "children": "child count",
    "kid": "child count", "infant": "infant count", "guest": "guest count",
    "seat": "seat count", "licence": "license count", "license": "license count",
    "user": "user count", "room": "room count", "night": "night count", "ticket": "ticket count",
    "device": "device count", "item": "item count", "order": "order count",
    "day": "duration", "week": "duration", "month": "duration", "year": "duration",
    "hour": "duration", "minute": "duration",
}
_CLAUSE_END = re.compile(r"[.!?;]\s|\n|\s(?:and|but|while|whereas)\s")
# "Economy price: $130", "Departure - 06:00": a label just before the value
_LABEL_BEFORE = re.compile(r"(?P<label>[A-Za-z][A-Za-z' -]{1,40}?)\s*(?:\*\*)?\s*[:=]\s*(?:\*\*)?"
                           r"\s*\Z")
_KIND_NOUN = {"time": "time", "date": "date", "money": "amount"}
_LABEL_STOP = frozenset({"is", "was", "the", "a", "an", "my", "your", "our", "at", "on", "for",
                         "of", "and", "or", "to", "from", "new", "current", "it", "this"})


def _slot_from_cues(kind: str, before: str, after: str) -> str | None:
    """The most specific cue (first in :data:`_SLOT_CUES`) in the clause ``before`` the value,
    else in the words ``after`` it."""
    for text in (before, after):
        for pattern, slot in _SLOT_RE.get(kind, ()):
            if pattern.search(text):
                return slot
    return None


def _label_slot(kind: str, before: str) -> str | None:
    """The label written just before a value (``Economy price: $130`` → ``economy price``)."""
    m = _LABEL_BEFORE.search(before[-48:])
    if m is None:
        return None
    words = [w for w in m.group("label").casefold().replace("-", " ").split()
             if w not in _LABEL_STOP][-3:]
    if not words:
        return None
    label = " ".join(words)
    noun = _KIND_NOUN.get(kind)
    if noun and not any(w in label for w in (noun, "price", "fee", "total", "cost", "fare",
                                             "refund", "balance", "charge", "birth", "due")):
        label = f"{label} {noun}"
    return label


def slot_for(message: str, kind: str, value: str, start: int,
             label: str | None = None) -> str | None:
    """What the value at ``message[start:]`` is about, from the words around it.

    >>> slot_for("Flight UA 915 departs at 19:10.", "time", "19:10", 25)
    'departure time'
    >>> slot_for("Check-in is from 15:00 at the hotel.", "time", "15:00", 17)
    'check-in time'
    >>> slot_for("We have 3 checked bags", "quantity", "3 checked bags", 8)
    'bag count'
    >>> slot_for("It is 19:10 now", "time", "19:10", 6) is None
    True
    """
    if kind == "quantity":
        low = value.casefold()
        for unit, slot in _UNIT_SLOT.items():
            if re.search(rf"\b{unit}", low):
                return slot
        return None
    if kind == "identifier":
        if label and label not in ("reference", "id", "code"):
            return label
        guess = _id_label(value)
        if guess not in ("reference", "code"):
            return guess
        label = None
    elif kind in ("email", "phone", "name"):
        return {"email": "email", "phone": "phone number", "name": "name"}[kind]
    elif kind in ("other", "place"):
        return label
    head = message[max(0, start - 80):start]
    cut = list(_CLAUSE_END.finditer(head))
    before = head[cut[-1].end():] if cut else head
    tail = message[start + len(value):start + len(value) + 30]
    after = re.split(r"[,.;:!?\n(]", tail, maxsplit=1)[0]
    if kind in _SLOT_RE:
        cue = _slot_from_cues(kind, before, after)
        if cue:
            return cue
    got = _label_slot(kind, before)
    if kind == "identifier" and got and not re.search(r"\b(?:id|number|code|reference|no)\b",
                                                      got):
        got = f"{got} id"
    return got


def _with_slot(message: str, span: Span) -> Span:
    """``span`` with its slot (``Span.slot`` holds the label until here) and a text naming it."""
    label = span.slot
    slot = slot_for(message, span.kind, span.value, span.start, label)
    if span.kind == "place" and label == "route":
        return span
    return Span(span.kind, _text(span.kind, span.value, label, slot), span.value, span.start,
                slot)
