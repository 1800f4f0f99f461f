"""Build the two labeled sets bundled with maev-kit, reproducibly.

    python tools/build_labeled_sets.py                      # writes labeled_sets/support_desk and
                                                            # labeled_sets/snli_calibration
    python tools/build_labeled_sets.py --out OTHER_DIR       # somewhere else
    python tools/build_labeled_sets.py --snli PATH          # another copy of the SNLI subset

``support_desk`` is authored here, from templates, with a seeded ``random.Random``: the same seed
gives byte-identical files. Because the script writes every message that follows a handoff, it
knows by construction whether each key fact was retained, lost (re-asked or ignored) or
contradicted; those are the set's *reference* labels (annotator ``maev-authors``).

``snli_calibration`` is converted from ``retention_snli_subset.jsonl`` (SNLI 1.0, CC BY-SA 4.0),
read by default from ``../shared/data/`` relative to the repository root.

Only the standard library is used, so the script runs without maev-kit installed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SNLI = Path("..") / "shared" / "data" / "retention_snli_subset.jsonl"
SEED = 20261129
CREATED_AT = "2026-11-29T00:00:00Z"
LABELS = ["retained", "lost", "contradicted"]

# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------


def _dump_line(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": ")) + "\n"


def _write_jsonl(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(_dump_line(r))


def _write_json(path: Path, obj: Any) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")


def _write_text(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def _end(s: str) -> str:
    """``s`` ending in sentence punctuation."""
    return s if s.endswith((".", "!", "?", "…")) else s + "."


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:] if s else s


def fleiss_kappa(rows: list[list[str]], categories: list[str]) -> float:
    """Fleiss' κ for items each rated by the same number of raters.

    >>> round(fleiss_kappa([["a", "a"], ["b", "b"], ["a", "b"]], ["a", "b"]), 4)
    0.3333
    """
    n = len(rows[0])
    if any(len(r) != n for r in rows) or n < 2:
        raise ValueError("every item needs the same number (>= 2) of ratings")
    counts = [[r.count(c) for c in categories] for r in rows]
    n_items = len(rows)
    p_j = [sum(c[j] for c in counts) / (n_items * n) for j in range(len(categories))]
    p_i = [(sum(x * x for x in c) - n) / (n * (n - 1)) for c in counts]
    p_bar = sum(p_i) / n_items
    p_e = sum(p * p for p in p_j)
    return (p_bar - p_e) / (1 - p_e)


# --------------------------------------------------------------------------------------------
# support_desk: agents, customers, products
# --------------------------------------------------------------------------------------------

AGENTS = {
    "triage": "router",
    "billing": "specialist",
    "technical_support": "specialist",
    "account_security": "specialist",
    "general_faq": "specialist",
    "human_escalation": "escalation",
}
AGENT_DESCRIPTIONS = {
    "triage": "first contact; reads the request and routes it to one specialist",
    "billing": "charges, refunds, invoices, plans and payment methods",
    "technical_support": "outages, errors, apps, routers, cloud regions, technician visits",
    "account_security": "sign-in problems, suspicious activity, 2FA, account takeovers",
    "general_faq": "how-to questions, policies, opening hours, plan features",
    "human_escalation": "a human supervisor who takes complaints and cases the bots could not solve",
}
TEAM = {
    "billing": ["our Billing team", "Billing", "a billing specialist", "the billing desk"],
    "technical_support": ["Technical Support", "our tech support team", "a technical specialist",
                          "the support engineers"],
    "account_security": ["Account Security", "our security team", "a security specialist",
                         "the account protection team"],
    "general_faq": ["our help desk", "the FAQ assistant", "general support"],
    "human_escalation": ["a senior support agent", "a human supervisor", "one of our team leads",
                         "a member of our customer care team"],
}
CATEGORY = {"billing": "money", "technical_support": "tech", "account_security": "account",
            "general_faq": "info", "human_escalation": "human"}

CUSTOMERS = [
    ("Priya", "Shah", "f"), ("Marcus", "Webb", "m"), ("Sofía", "Delgado", "f"),
    ("Daniel", "Okafor", "m"), ("Hannah", "Kowalski", "f"), ("Tomás", "Ribeiro", "m"),
    ("Aiko", "Tanaka", "f"), ("Liam", "O'Connell", "m"), ("Fatima", "Zahra", "f"),
    ("Jonas", "Lindqvist", "m"), ("Grace", "Mensah", "f"), ("Ravi", "Iyer", "m"),
    ("Chloé", "Martin", "f"), ("Ethan", "Brooks", "m"), ("Mei", "Chen", "f"),
    ("Oluwaseun", "Adeyemi", "m"), ("Zoë", "Fischer", "f"), ("Mateo", "Rossi", "m"),
    ("Leila", "Haddad", "f"), ("Łukasz", "Nowak", "m"), ("Amara", "Diallo", "f"),
    ("Noah", "Schneider", "m"), ("Isabella", "Costa", "f"), ("Kenji", "Watanabe", "m"),
    ("Ana", "Petrović", "f"), ("Samuel", "Greene", "m"), ("Nadia", "Karimi", "f"),
    ("Owen", "Price", "m"), ("Ingrid", "Halvorsen", "f"), ("Diego", "Fernández", "m"),
    ("Yasmin", "Aziz", "f"), ("Patrick", "Murphy", "m"), ("Elena", "Volkova", "f"),
    ("Kwame", "Asante", "m"), ("Ruth", "Goldberg", "f"), ("Arjun", "Mehta", "m"),
    ("Camille", "Dubois", "f"), ("Victor", "Lindgren", "m"), ("Maria", "Lopez", "f"),
    ("Ben", "Carter", "m"), ("Sara", "Nilsson", "f"), ("Hamza", "Malik", "m"),
]

PLANS = ["Basic monthly", "Plus monthly", "Plus annual", "Pro monthly", "Pro annual",
         "Family annual", "Business annual"]
PLAN_WRONG = {"Basic monthly": "Basic annual", "Plus monthly": "Pro monthly",
              "Plus annual": "Plus monthly", "Pro monthly": "Plus monthly",
              "Pro annual": "Pro monthly", "Family annual": "Family monthly",
              "Business annual": "Business monthly"}
PLAN_PARA = {"Basic monthly": "the monthly Basic subscription", "Plus monthly": "Plus, billed monthly",
             "Plus annual": "the yearly Plus plan", "Pro monthly": "Pro on monthly billing",
             "Pro annual": "the yearly Pro plan", "Family annual": "the yearly Family plan",
             "Business annual": "the yearly Business plan"}
AMOUNTS = [("$49.99", "$59.99", "forty-nine ninety-nine"), ("$12.50", "$21.50", "twelve fifty"),
           ("$89.00", "$98.00", "eighty-nine dollars"), ("$19.99", "$9.99", "nineteen ninety-nine"),
           ("$129.00", "$192.00", "a hundred and twenty-nine dollars"),
           ("$34.95", "$43.95", "thirty-four ninety-five"), ("$7.49", "$74.90", "seven forty-nine"),
           ("$240.00", "$420.00", "two hundred forty dollars"), ("$15.00", "$50.00", "fifteen dollars"),
           ("$64.20", "$46.20", "sixty-four twenty")]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
TIMES = [("9:00 am", "first thing in the morning"), ("10:00 am", "morning"),
         ("11:30 am", "late morning"), ("1:00 pm", "early afternoon"),
         ("2:30 pm", "afternoon"), ("4:00 pm", "late afternoon")]
REGIONS = [("eu-west-1", "Ireland"), ("eu-central-1", "Frankfurt"), ("us-east-1", "N. Virginia"),
           ("us-west-2", "Oregon"), ("ap-southeast-2", "Sydney"), ("ap-northeast-1", "Tokyo"),
           ("eu-north-1", "Stockholm")]
REGION_WRONG = {"eu-west-1": "us-east-1", "eu-central-1": "eu-west-1", "us-east-1": "us-east-2",
                "us-west-2": "us-west-1", "ap-southeast-2": "ap-southeast-1",
                "ap-northeast-1": "ap-northeast-2", "eu-north-1": "eu-west-1"}
CITIES = ["Lagos", "Minsk", "São Paulo", "Jakarta", "Bucharest", "Manila", "Ho Chi Minh City",
          "Caracas", "Tashkent", "Lima"]
CITY_WRONG = {"Lagos": "Lisbon", "Minsk": "Milan", "São Paulo": "Santiago", "Jakarta": "Jaipur",
              "Bucharest": "Budapest", "Manila": "Madrid", "Ho Chi Minh City": "Hanoi",
              "Caracas": "Cartagena", "Tashkent": "Tbilisi", "Lima": "Lyon"}
PHONES = [("Pixel 8", "Android 14"), ("Galaxy S23", "Android 14"), ("iPhone 13", "iOS 17"),
          ("iPhone 15", "iOS 17"), ("OnePlus 11", "Android 13"), ("iPad Air", "iPadOS 17"),
          ("MacBook Air", "macOS 14"), ("ThinkPad X1", "Windows 11"), ("Surface Laptop", "Windows 11")]
PHONE_WRONG = {"Pixel 8": "Pixel 6", "Galaxy S23": "Galaxy S21", "iPhone 13": "iPhone 14",
               "iPhone 15": "iPhone 12", "OnePlus 11": "OnePlus 9", "iPad Air": "iPad mini",
               "MacBook Air": "MacBook Pro", "ThinkPad X1": "ThinkPad T14",
               "Surface Laptop": "Surface Pro"}
ROUTERS = ["NX-300", "NX-520", "HomeHub 4", "FiberBox 2", "AX-1800"]
ROUTER_WRONG = {"NX-300": "NX-500", "NX-520": "NX-250", "HomeHub 4": "HomeHub 3",
                "FiberBox 2": "FiberBox 3", "AX-1800": "AX-3000"}
EMAIL_DOMAINS = ["example.com", "example.org", "mail.example.net"]

# Error codes: (code, what it means in words, a nearby wrong code)
ERRORS = {
    "app": [("E1042", "sync conflict error", "E1024"), ("E2210", "storage quota error", "E2201"),
            ("0x80070005", "access-denied error", "0x80070057"),
            ("E503-SYNC", "sync service unavailable message", "E502-SYNC")],
    "cloud": [("HTTP 504", "gateway timeout", "HTTP 502"),
              ("ThrottlingException", "throttling error", "ServiceUnavailable"),
              ("ERR_CONN_TIMEOUT", "connection timeout", "ERR_CONN_REFUSED"),
              ("SSL_ERROR_BAD_CERT_DOMAIN", "certificate mismatch error", "SSL_ERROR_EXPIRED_CERT")],
    "fiber": [("LOS red light", "red LOS light on the box", "blinking PON light"),
              ("DHCP-117", "no-IP-address error", "DHCP-171"),
              ("PPP-691", "authentication failure on the line", "PPP-619")],
    "pay": [("E-PAY-402", "card declined error", "E-PAY-404"),
            ("3DS-TIMEOUT", "bank verification timeout", "3DS-FAILED")],
}


def _swap_digits(rng: random.Random, digits: str) -> str:
    """A plausible typo of a digit string: swap two adjacent different digits, else change one."""
    pairs = [i for i in range(len(digits) - 1) if digits[i] != digits[i + 1]]
    if pairs:
        i = pairs[-1] if rng.random() < 0.6 else rng.choice(pairs)
        return digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:]
    i = rng.randrange(len(digits))
    return digits[:i] + str((int(digits[i]) + 3) % 10) + digits[i + 1:]


# --------------------------------------------------------------------------------------------
# support_desk: facts
# --------------------------------------------------------------------------------------------


@dataclass
class Fact:
    """One concrete fact of one conversation, with every way the script can speak about it."""

    kind: str
    value: str  # what the customer said
    wrong: str  # a plausible wrong value (used when an agent contradicts the fact)
    para: str  # a paraphrase of the value (retained but not verbatim)
    text: str  # the key-fact statement written in expectations.jsonl
    user: list[str]  # ways the customer states it
    retain: list[str]  # agent lines that restate it verbatim
    retain_para: list[str]  # agent lines that keep it, paraphrased or clearly used
    reask: list[str]  # agent asks again (lost)
    ignore: list[str]  # agent acts as if it never heard it (lost)
    contra: list[str]  # agent states the wrong value (contradicted)
    resupply: list[str]  # customer repeats it after a re-ask
    correct: list[str]  # customer corrects a contradiction
    context_key: str | None = None
    context_value: Any = None
    fact_id: str = ""


def make_fact(kind: str, rng: random.Random, c: dict[str, Any]) -> Fact:
    """Draw a value for ``kind`` and build its phrasings; ``c`` is the conversation's context."""
    first, last = c["first"], c["last"]
    if kind == "account_number":
        digits = c.get("acct_digits") or f"{rng.randrange(1000, 9999)}"
        wrong = c.get("acct_wrong") or _swap_digits(rng, digits)
        v, w = f"ACCT-{digits}", f"ACCT-{wrong}"
        return Fact(
            kind, v, w, f"the account ending {digits[-2:]}" if rng.random() < 0.3 else f"account {digits}",
            rng.choice([f"The customer's account number is {v}.", f"Account number: {v}.",
                        f"The customer gave account number {v}."]),
            user=[f"My account number is {v}.", f"account # is {v}", f"It's {v}.",
                  f"Account {v}.", f"the account is {v} if that helps",
                  f"Sure — {v}."],
            retain=[f"I have account {v} open in front of me.", f"I've pulled up {v}.",
                    f"Looking at {v} now.", f"Thanks, I can see {v} in our system."],
            retain_para=[f"I've found your account — the one ending in {digits[-2:]}.",
                         f"I have your account ({digits}) up on my screen.",
                         f"Your account with the {digits} number is open on my side.",
                         f"I'm in your account now (number ending {digits[-3:]})."],
            reask=["Before I start, could you tell me your account number?",
                   "Can I get your account number to look this up?",
                   "What's the account number on this, please?",
                   "Could you confirm your account number for me first?"],
            ignore=["I don't see an account attached to this chat yet, so I'll have to work from what you tell me.",
                    "I'm not able to locate an account for this conversation, so I'll keep this general.",
                    "Without an account on file I can only give you general guidance."],
            contra=[f"I've opened account {w}.", f"I have {w} pulled up here.",
                    f"Looking at {w} — give me a second.", f"OK, account {w}, got it."],
            resupply=[f"It's {v}. I already gave it to the first agent.", f"{v}, same as before.",
                      f"I told the other bot already... {v}", f"As I said: {v}."],
            correct=[f"Hang on, my account is {v}, not {w}.", f"That's the wrong number — it's {v}.",
                     f"No, {v}. You've swapped the digits."],
            context_key="account_number", context_value=v)
    if kind == "customer_name":
        wrong_last = {"Shah": "Shaw", "Webb": "Webber", "Okafor": "Okoro", "Chen": "Cheng",
                      "Lopez": "Lopes", "Nowak": "Novak", "Brooks": "Brooke", "Iyer": "Ayer"}
        w_last = wrong_last.get(last, last[:-1] + ("n" if last[-1] != "n" else "m"))
        v, w = f"{first} {last}", f"{first} {w_last}"
        return Fact(
            kind, v, w, first,
            f"The customer's name is {v}.",
            user=[f"I'm {v}.", f"{v}.", f"Name's {v}.", f"This is {v}."],
            retain=[f"Thanks for waiting, {v}.", f"Hello {v}."],
            retain_para=[f"Hi {first}!", f"Thanks {first}.", f"Good to meet you, {first}."],
            reask=["Could I start with your full name?", "Who am I speaking with, please?",
                   "May I have your name for the ticket?"],
            ignore=["Hello there, customer.", "Hi, valued customer."],
            contra=[f"Thanks for waiting, {w}.", f"Hello {w}, thanks for your patience."],
            resupply=[f"{v}. I gave my name already.", f"It's {v}."],
            correct=[f"It's {last}, not {w_last}.", f"My name is {v}, actually."],
            context_key="customer_name", context_value=v)
    if kind == "email":
        local = f"{first.lower()}.{last.lower()}".replace("'", "")
        for a, b in (("á", "a"), ("é", "e"), ("í", "i"), ("ó", "o"), ("ú", "u"), ("ë", "e"),
                     ("ł", "l"), ("ć", "c"), ("ã", "a")):
            local = local.replace(a, b)
        dom = rng.choice(EMAIL_DOMAINS)
        v = f"{local}@{dom}"
        w = f"{local[0]}{local.split('.')[-1]}@{dom}" if rng.random() < 0.5 else f"{local}@{'example.net' if dom != 'example.net' else 'example.com'}"
        return Fact(
            kind, v, w, f"your {dom} address",
            f"The email address on the account is {v}.",
            user=[f"The email on the account is {v}.", f"email is {v}", f"It's registered to {v}."],
            retain=[f"I see {v} as the login email.", f"The account email, {v}, is confirmed."],
            retain_para=[f"I'll send the confirmation to your {dom} address.",
                         f"The reset link will go to the address starting {local[:4]}…"],
            reask=["Which email address is the account registered to?",
                   "Can you tell me the email on the account?"],
            ignore=["I'll send a confirmation to the email we have on file, whichever that is.",
                    "You should receive an email shortly at whatever address is on the account."],
            contra=[f"I'll send that to {w}.", f"The account email is {w}, correct?"],
            resupply=[f"{v} — I said that earlier.", f"It's {v}."],
            correct=[f"No, it's {v}.", f"That's not my email, it's {v}."],
            context_key="email", context_value=v)
    if kind == "refund_amount":
        v, w, spoken = c.get("amount") or rng.choice(AMOUNTS)
        return Fact(
            kind, v, w, spoken,
            rng.choice([f"The customer wants a refund of {v}.", f"The disputed charge is {v}.",
                        f"The refund requested is {v}."]),
            user=[f"I'd like the {v} back.", f"The charge was {v}.", f"it was {v}",
                  f"I want a refund for the {v} charge."],
            retain=[f"I'm processing a refund of {v} now.", f"A {v} refund is on its way.",
                    f"I've raised a refund for {v}."],
            retain_para=[f"I'll reverse that {spoken} charge.",
                         f"The {v.lstrip('$')} is being credited back to you.",
                         f"That charge of {spoken} will come back to your card."],
            reask=["How much was the charge you want refunded?", "What amount should I refund?",
                   "Can you tell me the amount on the charge?"],
            ignore=["I've issued a refund for your most recent invoice.",
                    "I'll refund the standard monthly fee to your card.",
                    "I've started a refund for the last payment we took."],
            contra=[f"I'm processing a refund of {w} now.", f"I see the charge was {w}; refunding that.",
                    f"A {w} refund has been approved."],
            resupply=[f"{v}. I already said that.", f"It was {v}!", f"the amount is {v}"],
            correct=[f"It was {v}, not {w}.", f"Wait — {w}? The charge was {v}."],
            context_key="refund_amount", context_value=float(v.lstrip("$")))
    if kind == "charge_date":
        m = rng.choice(MONTHS)
        d = rng.randrange(2, 28)
        wd = d + 10 if d < 18 else d - 10
        suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(d, "th")
        v, w = f"{m} {d}", f"{m} {wd}"
        return Fact(
            kind, v, w, f"the {d}{suffix} of {m}",
            f"The charge in question was taken on {v}.",
            user=[f"It was taken on {v}.", f"The charge is dated {v}.", f"this happened {v}"],
            retain=[f"I can see the {v} transaction.", f"The payment on {v} is the one, yes."],
            retain_para=[f"I found the payment from the {d}{suffix} of {m}.",
                         f"That {m[:3]} {d} transaction is flagged now."],
            reask=["What date did the charge go through?", "When exactly were you charged?"],
            ignore=["I only see this month's normal payment, nothing unusual.",
                    "Everything on the latest statement looks standard to me."],
            contra=[f"I see the transaction on {w}.", f"The charge from {w} — is that the one?"],
            resupply=[f"{v}, like I said.", f"It was on {v}."],
            correct=[f"No, {v}, not {w}.", f"The date was {v}."],
            context_key="charge_date", context_value=v)
    if kind == "card_last4":
        digits = f"{rng.randrange(1000, 9999)}"
        brand = rng.choice(["Visa", "Mastercard", "Amex"])
        v, w = digits, _swap_digits(rng, digits)
        return Fact(
            kind, v, w, f"the {brand} you use with us",
            f"The customer's card ends in {v}.",
            user=[f"It's the {brand} ending in {v}.", f"card ending {v}", f"the one ending {v}."],
            retain=[f"The refund will go back to the card ending {v}.",
                    f"I see the {brand} ending {v} on file."],
            retain_para=[f"It'll land back on your {brand} (…{v}).",
                         f"I'll use the {brand} you mentioned."],
            reask=["Which card was charged?", "Can you tell me the last four digits of the card?"],
            ignore=["The money goes back to whichever payment method is on file.",
                    "I'll credit your default payment method."],
            contra=[f"The refund will go to the card ending {w}.", f"I see the card ending {w}."],
            resupply=[f"Ending {v}. I said.", f"{v}."],
            correct=[f"My card ends in {v}, not {w}.", f"It's {v}."],
            context_key="card_last4", context_value=v)
    if kind == "invoice_number":
        digits = f"{rng.randrange(10000, 99999)}"
        v, w = f"INV-{digits}", f"INV-{_swap_digits(rng, digits)}"
        return Fact(
            kind, v, w, f"invoice {digits}",
            f"The invoice in question is {v}.",
            user=[f"It's invoice {v}.", f"Invoice number {v}.", f"the invoice says {v}"],
            retain=[f"I have {v} open.", f"I'm reissuing {v} now."],
            retain_para=[f"I'm looking at invoice {digits}.", f"That invoice ({digits}) is the one I'm fixing."],
            reask=["Which invoice number is it?", "Could you send me the invoice number?"],
            ignore=["I'll reissue your most recent invoice.", "I'll just regenerate the latest invoice."],
            contra=[f"I have {w} open.", f"I'm reissuing {w} now."],
            resupply=[f"{v}, again.", f"{v}."],
            correct=[f"It's {v}, not {w}.", f"Wrong invoice — {v}."],
            context_key="invoice_number", context_value=v)
    if kind == "plan":
        v = c.get("plan") or rng.choice(PLANS)
        w = PLAN_WRONG[v]
        return Fact(
            kind, v, w, PLAN_PARA[v],
            f"The customer is on the {v} plan.",
            user=[f"I'm on the {v} plan.", f"We have {v}.", f"plan is {v}"],
            retain=[f"Since you're on {v}, here's how it works.", f"On the {v} plan that's covered."],
            retain_para=[f"With {PLAN_PARA[v]} this is included.",
                         f"Your {v.split()[0]} subscription ({v.split()[1]} billing) covers that."],
            reask=["Which plan are you on?", "What subscription do you have with us?"],
            ignore=["On the free tier that isn't included, I'm afraid.",
                    "Most plans include that, but I'm not sure about yours."],
            contra=[f"Since you're on {w}, here's how it works.", f"On the {w} plan that's covered."],
            resupply=[f"{v}. I mentioned it.", f"I'm on {v}."],
            correct=[f"I'm on {v}, not {w}.", f"No, {v}."],
            context_key="plan", context_value=v)
    if kind == "seats":
        n = rng.choice([5, 8, 12, 14, 25, 30, 40])
        wn = int(str(n)[::-1]) if n >= 10 and str(n)[::-1] != str(n) and str(n)[-1] != "0" else n + 10
        v, w = f"{n} seats", f"{wn} seats"
        return Fact(
            kind, v, w, f"{n} people",
            f"The team needs {v}.",
            user=[f"We need {v}.", f"There are {n} of us.", f"{n} users on the team"],
            retain=[f"For {v} the price is per user.", f"I've noted {v}."],
            retain_para=[f"With {n} people on the team you'd qualify for the volume rate.",
                         f"A team of {n} fits the Business tier."],
            reask=["How many people need access?", "How many seats are you after?"],
            ignore=["For a single user the standard price applies.",
                    "The individual plan should be enough for you."],
            contra=[f"For {w} the price is per user.", f"I've noted {w}."],
            resupply=[f"{n}. I already said.", f"{n} seats."],
            correct=[f"{n}, not {wn}.", f"We're {n} people."],
            context_key="seats", context_value=n)
    if kind == "appointment":
        day = c.get("day") or rng.choice(DAYS[:5])
        wday = c.get("wrong_day") or rng.choice([d for d in DAYS[:5] if d != day])
        t, tpara = c.get("time") or rng.choice(TIMES)
        v, w = f"{day} at {t}", f"{wday} at {t}"
        return Fact(
            kind, v, w, f"{day} {tpara}",
            rng.choice([f"The technician appointment is on {v}.",
                        f"A technician visit is booked for {v}."]),
            user=[f"I have a technician booked for {v}.", f"The engineer is coming {v}.",
                  f"the visit is {v}"],
            retain=[f"Your technician visit on {v} is confirmed.", f"I see the {v} appointment."],
            retain_para=[f"The engineer will see you {day} {tpara} as planned.",
                         f"Your {day} visit stays on the calendar."],
            reask=["When is your technician appointment?", "Do you already have a visit booked? When?"],
            ignore=["I can book you a technician; the first free slot is next week.",
                    "Shall I schedule an engineer visit for you?"],
            contra=[f"Your technician visit on {w} is confirmed.", f"I see the {w} appointment.",
                    f"The engineer is due {w}."],
            resupply=[f"{v}. It's already booked.", f"It's {v}!"],
            correct=[f"It's {day}, not {wday}.", f"{wday}?? The visit is {v}."],
            context_key="appointment", context_value=v)
    if kind == "region":
        v, city = c.get("region") or rng.choice(REGIONS)
        w = REGION_WRONG[v]
        return Fact(
            kind, v, w, f"the {city} region",
            f"The affected workload runs in region {v}.",
            user=[f"Everything's in {v}.", f"We're running in {v}.", f"region {v}"],
            retain=[f"I'm checking {v} now.", f"Our status board shows a degradation in {v}."],
            retain_para=[f"I'm checking our {city} data centre now.",
                         f"The {city} region had a load-balancer issue this morning."],
            reask=["Which region is the deployment in?", "What region are you running in?"],
            ignore=["All regions are green on our status page.",
                    "Let me check the default region for you."],
            contra=[f"I'm checking {w} now.", f"Our status board shows a degradation in {w}.",
                    f"Your workload in {w} looks healthy."],
            resupply=[f"{v}, I said.", f"{v}."],
            correct=[f"We're in {v}, not {w}.", f"{w} is wrong — {v}."],
            context_key="region", context_value=v)
    if kind == "error_code":
        code, words, wrong = rng.choice(ERRORS[c["error_family"]])
        v, w = code, wrong
        return Fact(
            kind, v, w, words,
            f"The customer sees error {v}.",
            user=[f"The error says {v}.", f"I keep getting {v}.", f"it shows {v} every time"],
            retain=[f"{v} usually means something specific; let me check.",
                    f"Thanks — {v} is a known one."],
            retain_para=[f"That {words} is a known issue.", f"That kind of {words} usually clears after a reset."],
            reask=["What error message do you see?", "Is there an error code on the screen?"],
            ignore=["If there's no error on screen, it's probably the cache.",
                    "Since nothing is showing, let's start with the basics."],
            contra=[f"{w} usually means something specific; let me check.",
                    f"Thanks — {w} is a known one.", f"So the screen shows {w}."],
            resupply=[f"{v}, like I wrote.", f"It's {v}."],
            correct=[f"It's {v}, not {w}.", f"No, the code is {v}."],
            context_key="error_code", context_value=v)
    if kind == "device":
        model, os_ = rng.choice(PHONES)
        v, w = f"{model} ({os_})", f"{PHONE_WRONG[model]} ({os_})"
        return Fact(
            kind, v, w, f"your {os_.split()[0]} device",
            f"The customer's device is the {model}, running {os_}.",
            user=[f"I'm on a {model} with {os_}.", f"{model}, {os_}.", f"my {model}"],
            retain=[f"On a {model} with {os_} the fix is a bit different.",
                    f"For the {model}, here's what to do."],
            retain_para=[f"Since you're on {os_}, open Settings and clear the app data.",
                         f"On your {os_.split()[0]} device, reinstall from the store."],
            reask=["What device are you using?", "Which phone or computer is this on?"],
            ignore=["On Windows, open the control panel first.",
                    "If you're on a desktop, try another browser."],
            contra=[f"On a {PHONE_WRONG[model]} the fix is a bit different.",
                    f"For the {PHONE_WRONG[model]}, here's what to do."],
            resupply=[f"{model}. I said.", f"It's a {model}."],
            correct=[f"It's a {model}, not a {PHONE_WRONG[model]}.", f"{model}!"],
            context_key="device", context_value=v)
    if kind == "router":
        model = rng.choice(ROUTERS)
        v, w = model, ROUTER_WRONG[model]
        return Fact(
            kind, v, w, "the router we sent you",
            f"The customer's router model is {v}.",
            user=[f"The router is a {v}.", f"it's the {v} box", f"model {v}"],
            retain=[f"On the {v}, hold the reset button for ten seconds.",
                    f"The {v} has a known firmware issue."],
            retain_para=["On the router we supplied, the reset pin is on the back.",
                         f"That model ({v}) needs the latest firmware."],
            reask=["Which router model do you have?", "What's the model name on the router?"],
            ignore=["If you're using your own router we can't support it, sorry.",
                    "Third-party routers aren't covered, unfortunately."],
            contra=[f"On the {w}, hold the reset button for ten seconds.",
                    f"The {w} has a known firmware issue."],
            resupply=[f"{v}.", f"It's the {v}, I said."],
            correct=[f"It's a {v}, not a {w}.", f"Model {v}."],
            context_key="router_model", context_value=v)
    if kind == "app_version":
        maj, mi, pa = rng.randrange(3, 7), rng.randrange(0, 9), rng.randrange(1, 9)
        v = f"{maj}.{mi}.{pa}"
        w = f"{maj}.{pa}.{mi}" if mi != pa else f"{maj}.{mi}.{pa + 1}"
        return Fact(
            kind, v, w, "the current release",
            f"The app version is {v}.",
            user=[f"App version {v}.", f"I'm on {v}.", f"version {v} I think"],
            retain=[f"Version {v} has a known bug here.", f"On {v} this happens occasionally."],
            retain_para=[f"The {maj}.{mi} release line has a known bug with this.",
                         f"You're on a {maj}.x build, so the fix is a setting rather than an update."],
            reask=["Which app version do you have?", "What version of the app is it?"],
            ignore=["First, please update the app to the latest version.",
                    "Older versions have this bug — please update."],
            contra=[f"Version {w} has a known bug here.", f"On {w} this happens occasionally."],
            resupply=[f"{v}.", f"Version {v}, I said."],
            correct=[f"I'm on {v}, not {w}.", f"{v}."],
            context_key="app_version", context_value=v)
    if kind == "tried_steps":
        steps = c["tried"]
        v = steps[0]
        return Fact(
            kind, v, f"has not {v} yet", steps[2],
            f"The customer has already {v}.",
            user=[f"I've already {v}.", f"Already {v}, no luck.", f"I {steps[1]} twice already.",
                  f"fwiw I {steps[1]} this morning, didn't help"],
            retain=[f"Since you've already {v}, let's skip that.",
                    f"As you've {v} without luck, I'll go deeper."],
            retain_para=[f"{_cap(steps[2])} didn't help, so the next step is on our side.",
                         f"Given {steps[2]} didn't fix it, I'll run a diagnostic."],
            reask=[f"Have you {v}?", f"Could you tell me whether you've {v}?"],
            ignore=[f"First, please {steps[3]}.", f"Let's start simple: {steps[3]}."],
            contra=[f"Since you haven't {v} yet, start there.",
                    f"As you haven't tried to {steps[3]} yet, please do that now."],
            resupply=[f"I {steps[1]} already!", f"Yes, I've already {v}, I said."],
            correct=[f"I *did* {steps[3]} already.", f"I already {steps[1]}."],
            context_key="attempted_steps", context_value=[v])
    if kind == "deadline":
        day = rng.choice(["Friday", "Thursday", "Monday", "tomorrow morning", "end of day today"])
        wrong = {"Friday": "next Friday", "Thursday": "next week", "Monday": "Wednesday",
                 "tomorrow morning": "next week", "end of day today": "tomorrow"}[day]
        what = rng.choice(["a product launch", "a client demo", "payroll", "an audit",
                           "a board meeting"])
        v = f"{what} on {day}" if day[0].isupper() else f"{what} {day}"
        w = f"{what} {wrong}" if not wrong[0].isupper() else f"{what} on {wrong}"
        return Fact(
            kind, v, w, f"your deadline ({day})",
            f"The customer needs this fixed before {v}.",
            user=[f"We need this before {v}.", f"It has to work for {v}.", f"we have {v}"],
            retain=[f"I've marked this urgent because of {v}.",
                    f"Knowing about {v}, I've set priority to high."],
            retain_para=[f"Given the {day} deadline I've bumped this up the queue.",
                         "I've flagged the time pressure on the ticket."],
            reask=["Is there a deadline we should know about?", "How urgent is this for you?"],
            ignore=["I've added this to the standard queue; expect a reply in 3–5 business days.",
                    "This will be handled in normal order; no rush needed."],
            contra=[f"Since {w} gives us time, this goes in the normal queue.",
                    f"With {w} there's no rush, I'll file it as normal priority."],
            resupply=[f"{_cap(v)}! It's urgent.", f"I told you: {v}."],
            correct=[f"No, it's {v}!", f"Not {wrong} — {day}."],
            context_key="deadline", context_value=v)
    if kind == "login_location":
        city = rng.choice(CITIES)
        t = f"{rng.randrange(1, 5)}:{rng.randrange(10, 59)} am"
        v, w = f"{city} at {t}", f"{CITY_WRONG[city]} at {t}"
        return Fact(
            kind, v, w, f"the overnight {city} sign-in",
            f"There was an unrecognised sign-in from {v}.",
            user=[f"I got an alert about a login from {v}.", f"someone signed in from {v}",
                  f"There's a sign-in from {city} I didn't do, at {t}."],
            retain=[f"I can see the sign-in from {v} and I've ended that session.",
                    f"The sign-in from {v} wasn't you, so I've revoked it."],
            retain_para=[f"That overnight {city} session has been signed out.",
                         f"The {city} sign-in came from a new device; I've blocked it."],
            reask=["Where was the suspicious sign-in from?", "Can you tell me what the alert said?"],
            ignore=["I don't see anything unusual in your recent sign-ins.",
                    "Your sign-in history looks normal to me."],
            contra=[f"I can see the sign-in from {w} and I've ended that session.",
                    f"The sign-in from {w} wasn't you, so I've revoked it."],
            resupply=[f"{v}. It's in the alert I mentioned.", f"{v}."],
            correct=[f"It said {city}, not {CITY_WRONG[city]}.", f"{v}."],
            context_key="login_location", context_value=v)
    if kind == "ticket_number":
        digits = f"{rng.randrange(10000, 99999)}"
        v, w = f"#{digits}", f"#{_swap_digits(rng, digits)}"
        return Fact(
            kind, v, w, "your earlier ticket",
            f"The customer's earlier ticket is {v}.",
            user=[f"I already have ticket {v} open.", f"ticket {v}", f"My previous ticket was {v}."],
            retain=[f"I've linked this to ticket {v}.", f"I see ticket {v} and its history."],
            retain_para=["I've read the notes on your earlier ticket.",
                         f"Your existing case ({digits}) is now linked."],
            reask=["Do you have a ticket number?", "Is there an existing ticket for this?"],
            ignore=["I'll open a fresh ticket for this.", "I've created a new case for you."],
            contra=[f"I've linked this to ticket {w}.", f"I see ticket {w} and its history."],
            resupply=[f"{v}.", f"{v}, I gave it before."],
            correct=[f"It's {v}, not {w}.", f"{v}."],
            context_key="ticket_number", context_value=v)
    if kind == "display_name_xss":
        v = "<img src=x onerror=alert(1)>"
        w = "<img src=x>"
        return Fact(
            kind, v, w, "that HTML snippet",
            f"The account's display name was changed to {v}.",
            user=[f"Someone changed my display name to {v} — I didn't do that!",
                  f"my display name now literally shows {v}"],
            retain=[f"I've reset the display name; it had been changed to {v}.",
                    f"The name {v} was set from an unknown session, I've reverted it."],
            retain_para=["I've removed that HTML snippet from your display name.",
                         "The tampered display name has been put back."],
            reask=["What did the display name change to?", "What does your profile name show now?"],
            ignore=["Your profile looks unchanged on my side.", "I don't see any profile edits."],
            contra=[f"I see the display name was changed to {w}.", f"It shows {w} here."],
            resupply=[f"{v}. It's in my first message.", f"{v}"],
            correct=[f"It was {v}, not {w}.", f"No — {v}."],
            context_key="display_name", context_value=v)
    raise KeyError(kind)


# --------------------------------------------------------------------------------------------
# support_desk: issues (what customers write about)
# --------------------------------------------------------------------------------------------


@dataclass
class Issue:
    key: str
    owner: str  # the specialist that should handle it
    openers: list[str]  # the customer's first message; {…} fields name facts stated in it
    kinds: list[str]  # facts the issue can carry (account_number is added to most)
    summary: str  # issue_summary put in handoff context
    fixes: list[str]  # what the owner finally does
    acceptable: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


# (participle, simple past, noun phrase, imperative)
TRIED = {
    "fiber": [("restarted the router", "restarted the router", "the restart", "restart the router"),
              ("swapped the ethernet cable", "swapped the ethernet cable", "a new cable",
               "swap the ethernet cable"),
              ("done a factory reset", "did a factory reset", "the factory reset",
               "do a factory reset")],
    "app": [("reinstalled the app", "reinstalled the app", "reinstalling", "reinstall the app"),
            ("cleared the cache", "cleared the cache", "clearing the cache", "clear the app cache"),
            ("logged out and back in", "logged out and back in", "signing out and in",
             "log out and back in")],
    "cloud": [("rolled back the last deploy", "rolled back the last deploy", "the rollback",
               "roll back your last deploy"),
              ("restarted the instances", "restarted the instances", "restarting the instances",
               "restart the instances")],
    "security": [("reset the password", "reset the password", "the password reset",
                  "reset your password"),
                 ("turned on two-factor", "turned on two-factor", "enabling two-factor",
                  "turn on two-factor")],
    "pay": [("tried two different cards", "tried two different cards", "switching cards",
             "try another card")],
}

ISSUES = [
    Issue("duplicate_charge", "billing",
          ["Hi, I've been charged twice this month and I want the extra payment back.",
           "hello?? there are two identical charges on my statement from you",
           "I was double billed for my subscription. Can someone fix this please",
           "Why did you take my payment twice? I need a refund."],
          ["refund_amount", "charge_date", "card_last4", "plan"],
          "Customer was charged twice and wants the duplicate refunded",
          ["I've refunded the duplicate payment; it'll show in 3–5 business days.",
           "The duplicate charge is reversed. You'll get an email receipt shortly."]),
    Issue("refund_cancelled", "billing",
          ["I cancelled my subscription but got charged anyway. Please refund me.",
           "Cancelled last month, still got billed. Not happy.",
           "hi - I want a refund, I cancelled before the renewal date"],
          ["refund_amount", "plan", "charge_date", "card_last4"],
          "Charged after cancellation; customer asks for a refund",
          ["I've confirmed the cancellation date and refunded the renewal.",
           "Your subscription is now fully closed and the renewal charge refunded."]),
    Issue("invoice_fix", "billing",
          ["I need an invoice reissued with our company VAT number on it.",
           "Our finance team says the invoice is missing the company name. Can you fix it?",
           "Can I get a corrected invoice? The address is wrong."],
          ["invoice_number", "plan", "seats"],
          "Invoice needs to be reissued with corrected company details",
          ["The corrected invoice is in your billing page now.",
           "I've emailed the corrected invoice to the billing contact."],
          acceptable=["general_faq"]),
    Issue("card_declined", "billing",
          ["My card keeps getting declined when I try to renew.",
           "Payment failed again?? the card works everywhere else",
           "I can't update my payment method, it errors out."],
          ["error_code", "card_last4", "plan", "tried_steps"],
          "Renewal payment keeps failing with a card error",
          ["I've reset the payment attempt; please try once more now.",
           "The block was on our side — the renewal has gone through."],
          acceptable=["technical_support"], extra={"error_family": "pay", "tried": "pay"}),
    Issue("outage_credit", "billing",
          ["Your service was down for two days. I expect a credit on my bill.",
           "We lost internet for most of the week — do we get money back for that?",
           "The outage last week cost us. What compensation do you offer?"],
          ["refund_amount", "plan", "deadline"],
          "Customer requests a service credit after an outage",
          ["I've applied a credit for the outage days to your next bill.",
           "A service credit is now on the account."],
          acceptable=["technical_support"]),
    Issue("fiber_down", "technical_support",
          ["My home internet has been dropping every evening since Sunday.",
           "internet not working AGAIN. the light on the box is red",
           "Hi, our broadband keeps disconnecting, can you help?",
           "No connection since this morning. Working from home so this is urgent."],
          ["router", "tried_steps", "appointment", "error_code"],
          "Home fibre connection drops; customer already troubleshooting",
          ["I've pushed a line reset and new firmware to your router.",
           "We found a fault at the street cabinet; an engineer is on it."],
          extra={"error_family": "fiber", "tried": "fiber"}),
    Issue("technician_visit", "technical_support",
          ["I need to move my technician appointment.",
           "The engineer visit you booked — can I check what time they're coming?",
           "Can you confirm my installation appointment?"],
          ["appointment", "router"],
          "Customer asks about an existing technician appointment",
          ["Your visit is confirmed; you'll get a text when the engineer is on the way.",
           "All set — the engineer has the notes about the fault."]),
    Issue("app_crash", "technical_support",
          ["The Kestrel Drive app crashes as soon as I open it.",
           "app won't sync my files anymore",
           "Every time I upload a folder the app freezes and then closes.",
           "My photos stopped backing up and there's an error."],
          ["device", "app_version", "error_code", "tried_steps"],
          "Kestrel Drive app crashes or fails to sync",
          ["A fix is in the next release; meanwhile I've reset your sync state from our side.",
           "I've cleared the stuck upload on our servers — it should sync now."],
          extra={"error_family": "app", "tried": "app"}),
    Issue("cloud_timeouts", "technical_support",
          ["Our API calls to Kestrel Cloud are timing out since this morning.",
           "Production is throwing errors on every request to your load balancer!",
           "Latency on our instances went through the roof an hour ago."],
          ["region", "error_code", "deadline", "tried_steps"],
          "Kestrel Cloud requests time out for the customer's workload",
          ["Engineering found a bad load-balancer node and drained it; errors should stop now.",
           "The incident is mitigated — we're watching it closely."],
          extra={"error_family": "cloud", "tried": "cloud"}),
    Issue("suspicious_login", "account_security",
          ["I got an email about a login I didn't make. Is my account hacked?",
           "someone logged into my account!! help",
           "There's a new device on my account that isn't mine."],
          ["login_location", "email", "tried_steps"],
          "Unrecognised sign-in on the account",
          ["I've signed out every session and locked the account until you set a new password.",
           "Your account is secured: all sessions ended and 2FA enforced."],
          extra={"tried": "security"}),
    Issue("locked_out", "account_security",
          ["I'm locked out of my account after too many password attempts.",
           "Can't log in, it says my account is locked",
           "The password reset email never arrives and now I'm locked out."],
          ["email", "device", "tried_steps"],
          "Customer locked out of the account",
          ["I've unlocked the account and sent a fresh reset link.",
           "You're unlocked. Please set a new password within the hour."],
          extra={"tried": "security"}),
    Issue("lost_2fa", "account_security",
          ["I lost my phone and it had my 2FA codes on it.",
           "New phone, and my authenticator app didn't transfer. How do I get in?",
           "my phone was stolen, it has the two-factor app"],
          ["device", "email"],
          "Customer lost the device holding 2FA codes",
          ["I've removed the old device; you can enrol a new one after the identity check.",
           "Two-factor is reset; set it up again on your new phone."]),
    Issue("profile_tamper", "account_security",
          ["Someone changed things on my profile that I didn't touch.",
           "My account's display name changed by itself??"],
          ["display_name_xss", "login_location", "email"],
          "Profile was changed by someone else",
          ["I've reverted the profile changes and ended the other sessions.",
           "The profile is restored and locked against edits for 24 hours."]),
    Issue("data_export", "general_faq",
          ["How do I export all my data?", "Is there a way to download everything in my account?",
           "I'd like a copy of my data under GDPR."],
          ["plan", "email"],
          "Customer asks how to export their data",
          ["Go to Settings → Privacy → Export; the archive link arrives by email.",
           "The export is under Settings → Privacy; it takes up to 24 hours."]),
    Issue("team_plan", "general_faq",
          ["Do you have a plan for teams? We want to add colleagues.",
           "How much would it cost to add my coworkers?",
           "What's the difference between Pro and Business for a small team?"],
          ["seats", "plan"],
          "Customer asks about team plans and pricing",
          ["The Business plan suits you; here's the comparison page.",
           "You can add teammates from the Team tab; pricing is per seat."],
          acceptable=["billing"]),
    Issue("hours_policy", "general_faq",
          ["What are your support hours over the holidays?",
           "Is there a phone number I can call?",
           "Can I pause my subscription instead of cancelling?"],
          ["plan"],
          "General question about policies",
          ["Here's the policy page with all the details.",
           "That's all explained in our help centre under Policies."],
          acceptable=["billing"]),
    Issue("complaint", "human_escalation",
          ["I want to make a formal complaint. I've contacted you four times about this.",
           "Get me a real person. I'm done talking to bots.",
           "This is my third time writing about the same problem and nobody has fixed it."],
          ["ticket_number", "deadline", "tried_steps"],
          "Repeat contact; customer asks for a human and a formal complaint",
          ["I've logged a formal complaint and I'll personally follow up within 48 hours.",
           "I've taken ownership of your case and added a goodwill credit."],
          extra={"tried": "fiber"}),
]
ISSUE_BY_KEY = {i.key: i for i in ISSUES}

SALUTE = ["Hi{n}!", "Hello{n}.", "Hey{n}!", "Hi{n}.", "Thanks for waiting{n}.",
          "Good to meet you{n}."]
GREETING = {
    "billing": ["You're through to Billing.", "Billing specialist here.",
                "Billing here — thanks for your patience.", "I handle billing questions."],
    "technical_support": ["Technical Support here.", "I'm with the tech team.",
                          "Tech support here — let's get this sorted.",
                          "I'm one of the support engineers."],
    "account_security": ["This is Account Security.", "Security team here.",
                         "I'm from account protection — I'll help you lock things down."],
    "general_faq": ["I can help with general questions.", "Help desk here.",
                    "Happy to answer that."],
    "human_escalation": ["My name is Dana and I'm a team lead here.",
                         "This is Sam from customer care — a real person, promise.",
                         "I'm Jordan, a senior agent. I've read through the chat so far."],
}
TRIAGE_HELLO = ["Hi! Thanks for contacting Kestrel support. {ask}",
                "Hello, I'm the Kestrel virtual assistant. {ask}",
                "Thanks for reaching out. {ask}", "Hi there! {ask}",
                "Sorry to hear that. {ask}"]
TRIAGE_ASK = ["Could you share a few details so I can send you to the right team?",
              "Can you give me some details first?",
              "What else can you tell me about it?",
              "Could you tell me a bit more, including your account number?"]
ROUTE = {
    "specialization": ["I'm transferring you to {team}; they specialise in exactly this.",
                       "This is one for {team}. Transferring you now.",
                       "{Team} will take it from here — one moment."],
    "capability_match": ["{Team} can do this directly, so I'm handing you over.",
                         "Let me pass this to {team}, who have the tools for it.",
                         "{Team} can take action on this — connecting you."],
    "escalation": ["I'm escalating this to {team}.", "I'm going to bring in {team} for this one.",
                   "This needs {team}; I'm escalating now."],
    "fallback": ["This isn't something I can handle, so I'm sending you to {team}.",
                 "Sorry, I can't help with that part — let me route you to {team}.",
                 "I can't resolve this here. Passing you to {team}."],
    None: ["Connecting you with {team}.", "One moment, I'm transferring you to {team}.",
           "Let me get {team} for you."],
}
BOUNCE = {
    "billing": ["This doesn't look like a billing problem to me.",
                "I can't see anything wrong with the billing itself."],
    "technical_support": ["The service itself is working, so this isn't a technical fault.",
                          "Technically everything checks out on our side."],
    "account_security": ["The account itself looks secure, so this isn't really a security case.",
                         "There's no sign of a security problem, this is about something else."],
    "general_faq": ["That's beyond what I can answer from the help centre.",
                    "I only have general information, so I'll need to pass this on."],
}
WORKING = {
    "billing": ["Let me check the payment history.", "I'm looking at the recent transactions.",
                "Give me a moment to review the billing records."],
    "technical_support": ["Let me run a quick diagnostic.", "I'm checking our monitoring now.",
                          "Let me look at the logs on our side."],
    "account_security": ["Let me review the recent account activity.",
                         "I'm checking the security log for your account."],
    "general_faq": ["Let me find the right help article.", "Here's what I can tell you."],
    "human_escalation": ["I'm sorry this has taken so long.", "I understand how frustrating this is.",
                         "Let me take ownership of this."],
}
USER_ACK = ["OK, thanks.", "ok", "Thank you.", "Alright.", "Great, go ahead.", "Sure.",
            "Fine.", "👍", "thanks, please hurry", "Ok. Anything else you need from me?"]
USER_ANNOYED = ["Why do I have to repeat everything?", "Didn't the last agent pass this on?",
                "Seriously?", "I already explained this.", "Ugh.", ""]
USER_CLOSE = ["Thanks, that's all.", "Great, thank you!", "OK. Hope it works this time.",
              "thx", "Appreciate it.", "Fine. Bye."]
AGENT_CLOSE = ["Anything else I can help with today?", "Have a good day!",
               "Thanks for your patience.", "You'll get a summary of this chat by email."]
USER_FRUSTRATED = ["You just sent me here from the other team!",
                   "I've been bounced around three times now.",
                   "This is going in circles.", "Is anyone actually going to help me?",
                   "Again?? I was just there."]


# --------------------------------------------------------------------------------------------
# support_desk: building one conversation
# --------------------------------------------------------------------------------------------

OUTCOME_LABEL = {"verbatim": "retained", "paraphrase": "retained", "reask": "lost",
                 "ignore": "lost", "contradict": "contradicted"}
OUTCOME_NOTE = {"verbatim": "restated verbatim", "paraphrase": "paraphrased or clearly used",
                "reask": "re-asked for the fact", "ignore": "ignored (acted without the fact)",
                "contradict": "stated a conflicting value"}

CONTRACTS = [
    {"from_agent": "*", "to_agent": "billing", "reason": None,
     "required_context_keys": ["account_number", "issue_summary"],
     "value_types": {"account_number": "str", "issue_summary": "str"}},
    {"from_agent": "*", "to_agent": "technical_support", "reason": None,
     "required_context_keys": ["issue_summary"],
     "value_types": {"issue_summary": "str"}},
    {"from_agent": "*", "to_agent": "account_security", "reason": None,
     "required_context_keys": ["account_number", "issue_summary"],
     "value_types": {"account_number": "str", "issue_summary": "str"}},
    {"from_agent": "*", "to_agent": "general_faq", "reason": None,
     "required_context_keys": ["issue_summary"],
     "value_types": {"issue_summary": "str"}},
    {"from_agent": "*", "to_agent": "human_escalation", "reason": None,
     "required_context_keys": ["account_number", "issue_summary"],
     "value_types": {"account_number": "str", "issue_summary": "str"}},
    {"from_agent": "triage", "to_agent": "billing", "reason": None,
     "required_context_keys": ["account_number", "issue_summary", "customer_name"],
     "value_types": {"account_number": "str", "issue_summary": "str", "customer_name": "str"}},
    {"from_agent": "*", "to_agent": "*", "reason": "escalation",
     "required_context_keys": ["issue_summary", "attempted_steps"],
     "value_types": {"issue_summary": "str", "attempted_steps": "list"}},
]


def required_keys(from_agent: str, to_agent: str, reason: str | None = None) -> list[str]:
    """Context keys the contracts require of a ``from_agent → to_agent`` handoff with ``reason``.

    A contract applies when its agents match (``"*"`` matches any) and its ``reason`` is null or
    equals the handoff's reason (the semantics of ``maev_kit.metrics.check_handoff_contracts``).
    """
    keys: list[str] = []
    for c in CONTRACTS:
        if (c["to_agent"] in ("*", to_agent) and c["from_agent"] in ("*", from_agent)
                and c["reason"] in (None, reason)):
            keys += [k for k in c["required_context_keys"] if k not in keys]
    return keys


@dataclass
class Hop:
    """One planned handoff."""

    to: str
    reason: str | None  # actual reason recorded in the trace
    mode: str = "transfer"
    bounce: bool = False  # the sending agent bounces the case (wrong team)
    drop: list[str] = field(default_factory=list)  # required context keys left out
    int_account: bool = False  # account_number passed as an int (a contract type violation)


class Conversation:
    """Accumulates one trace, its expectations and reference labels."""

    def __init__(self, cid: str, rng: random.Random, issue: Issue, scenario: str,
                 customer: tuple[str, str, str], fixed: dict[str, Any]):
        self.cid, self.rng, self.issue, self.scenario = cid, rng, issue, scenario
        self.first, self.last = customer[0], customer[1]
        self.ti = 0
        self.turns: list[dict[str, Any]] = []
        self.handoffs: list[dict[str, Any]] = []
        self.users: list[dict[str, Any]] = []
        self.key_facts: list[dict[str, Any]] = []
        self.labels: list[dict[str, Any]] = []
        self.ctx: dict[str, Any] = {"first": self.first, "last": self.last, **issue.extra, **fixed}
        if "tried" in self.ctx and isinstance(self.ctx["tried"], str):
            self.ctx["tried"] = rng.choice(TRIED[self.ctx["tried"]])
        self.facts: dict[str, Fact] = {}
        self.known: list[str] = []  # kinds the customer has stated so far, in order
        self.n_fact = 0
        self.outcome_bias: dict[str, float] = {}
        self.forced: dict[tuple[int, str], str] = {}
        self.expected: list[dict[str, Any]] = []  # the ideal handoffs (expectations.jsonl)

    # -- timeline ---------------------------------------------------------------------------
    def user(self, text: str) -> None:
        self.users.append({"content": text, "turn_index": self.ti})
        self.ti += 1

    def say(self, agent: str, text: str, tool_calls: list[dict[str, Any]] | None = None) -> None:
        self.turns.append({"agent_id": agent, "agent_role": AGENTS[agent], "message": text,
                           "tool_calls": tool_calls or [], "turn_index": self.ti})
        self.ti += 1

    def fact(self, kind: str) -> Fact:
        if kind not in self.facts:
            self.facts[kind] = make_fact(kind, self.rng, self.ctx)
        return self.facts[kind]

    def state(self, kinds: list[str]) -> str:
        """The customer's words stating ``kinds`` (and remember they are known)."""
        parts = []
        for k in kinds:
            f = self.fact(k)
            parts.append(_end(self.rng.choice(f.user)))
            if k not in self.known:
                self.known.append(k)
        return " ".join(parts)

    # -- handoffs ---------------------------------------------------------------------------
    def context_for(self, from_agent: str, hop: Hop) -> dict[str, Any]:
        ctx: dict[str, Any] = {}
        req = required_keys(from_agent, hop.to, hop.reason)
        for k in self.known:
            f = self.facts[k]
            if f.context_key and (f.context_key in req or self.rng.random() < 0.6):
                ctx[f.context_key] = f.context_value
        if "issue_summary" in req or self.rng.random() < 0.8:
            ctx["issue_summary"] = self.issue.summary
        if "customer_name" in req and "customer_name" not in ctx:
            ctx["customer_name"] = f"{self.first} {self.last}"
        if "attempted_steps" in req and "attempted_steps" not in ctx:
            ctx["attempted_steps"] = ["checked the status page", "basic troubleshooting"]
        if "account_number" in req and "account_number" not in ctx and "account_number" in self.facts:
            ctx["account_number"] = self.facts["account_number"].context_value
        if hop.int_account and "account_number" in ctx:
            ctx["account_number"] = int(str(ctx["account_number"]).split("-")[1])
        for k in hop.drop:
            ctx.pop(k, None)
        # stable, readable key order
        order = ["customer_name", "account_number", "issue_summary"]
        return {k: ctx[k] for k in sorted(ctx, key=lambda k: (k not in order,
                                                               order.index(k) if k in order else 0, k))}

    def pick_outcome(self, h: int, kind: str, to: str) -> str:
        if (h, kind) in self.forced:
            return self.forced[(h, kind)]
        r = self.rng.random()
        p_lost = 0.24 + self.outcome_bias.get("lost", 0.0)
        p_con = 0.12 + self.outcome_bias.get("contradicted", 0.0)
        if to == "human_escalation":
            p_lost -= 0.08  # the human reads the transcript
        if r < p_con:
            return "contradict"
        if r < p_con + p_lost:
            if kind == "customer_name":  # an agent "ignoring" a name is not visible; it asks
                return "reask"
            return "reask" if self.rng.random() < 0.5 else "ignore"
        return "verbatim" if self.rng.random() < 0.45 else "paraphrase"

    def handoff(self, from_agent: str, hop: Hop, fact_kinds: list[str]) -> list[tuple[Fact, str]]:
        """Record the handoff and its key facts; return (fact, outcome) for the receiver's turn."""
        h = len(self.handoffs)
        self.handoffs.append({"from_agent": from_agent, "to_agent": hop.to, "reason": hop.reason,
                              "context_passed": self.context_for(from_agent, hop),
                              "turn_index": self.ti, "mode": hop.mode})
        self.ti += 1
        plan = []
        for kind in fact_kinds:
            f = self.facts[kind]
            self.n_fact += 1
            fid = f"f{self.n_fact}_{kind}"
            self.key_facts.append({"fact_id": fid, "handoff_index": h, "text": f.text})
            outcome = self.pick_outcome(h, kind, hop.to)
            self.labels.append({"item_id": f"{self.cid}/h{h}/{fid}", "annotator": "maev-authors",
                                "label": OUTCOME_LABEL[outcome],
                                "note": f"{f.kind}: {OUTCOME_NOTE[outcome]}"
                                        + (f" ({f.wrong} for {f.value})" if outcome == "contradict"
                                           else ""),
                                "created_at": CREATED_AT, "source": "reference"})
            plan.append((f, outcome))
        return plan

    def receive(self, agent: str, plan: list[tuple[Fact, str]], *, bounce_next: str | None = None
                ) -> list[tuple[Fact, str]]:
        """The receiving agent's first turn, rendering each fact by its outcome."""
        rng = self.rng
        name_outcome = {f.kind: o for f, o in plan}.get("customer_name")
        n = "" if name_outcome or rng.random() < 0.35 else f" {self.first}"
        salute = rng.choice(SALUTE).format(n=n)
        if name_outcome in ("verbatim", "paraphrase", "contradict"):
            who = {"verbatim": f"{self.first} {self.last}", "paraphrase": self.first,
                   "contradict": self.facts["customer_name"].wrong}[name_outcome]
            salute = rng.choice(["Hi {n}!", "Hello {n}.", "Thanks for waiting, {n}.",
                                 "Good to meet you, {n}."]).format(n=who)
        parts = [salute, rng.choice(GREETING[agent])]
        asks = []
        for f, outcome in plan:
            if f.kind == "customer_name":
                if outcome in ("reask", "ignore"):
                    asks.append(rng.choice(f.reask))
                continue
            if outcome == "reask":
                asks.append(rng.choice(f.reask))
            else:
                pool = {"verbatim": f.retain, "paraphrase": f.retain_para, "ignore": f.ignore,
                        "contradict": f.contra}[outcome]
                parts.append(rng.choice(pool))
        if bounce_next is None and rng.random() < 0.5:
            parts.append(rng.choice(WORKING[agent]))
        parts += asks
        self.say(agent, " ".join(parts))
        return plan

    def customer_reply(self, plan: list[tuple[Fact, str]], *, new_kinds: list[str] = (),
                       frustrated: bool = False) -> None:
        rng = self.rng
        bits = []
        if frustrated:
            bits.append(rng.choice(USER_FRUSTRATED))
        reasks = [f for f, o in plan if o == "reask"]
        contras = [f for f, o in plan if o == "contradict"]
        if reasks:
            pre = rng.choice(USER_ANNOYED)
            if pre:
                bits.append(pre)
            bits += [rng.choice(f.resupply) for f in reasks]
        for f in contras:
            if rng.random() < 0.4:
                bits.append(rng.choice(f.correct))
        if new_kinds:
            bits.append(rng.choice(["Also:", "One more thing:", "Oh — also:", "PS:"]))
            bits.append(self.state(list(new_kinds)))
        if not bits:
            bits.append(rng.choice(USER_ACK))
        self.user(" ".join(bits))


def _pick_facts(rng: random.Random, conv: Conversation, n: int, *, must: list[str] = ()) -> list[str]:
    pool = [k for k in conv.known if k not in must]
    rng.shuffle(pool)
    out = [k for k in must if k in conv.known] + pool
    return out[:max(n, len([k for k in must if k in conv.known]))]


def build_conversation(cid: str, rng: random.Random, issue: Issue, scenario: str,
                       route: list[Hop], customer: tuple[str, str, str], *,
                       fixed: dict[str, Any] | None = None,
                       forced: dict[tuple[int, str], str] | None = None,
                       expected: list[dict[str, Any]] | None = None,
                       first_kinds: list[str] | None = None,
                       xss: str | None = None) -> Conversation:
    """Write one conversation following ``route`` (the handoffs it actually makes)."""
    conv = Conversation(cid, rng, issue, scenario, customer, fixed or {})
    conv.forced = dict(forced or {})
    if scenario in ("long_chain", "ping_pong", "three_cycle"):
        conv.outcome_bias = {"lost": 0.06, "contradicted": 0.02}
    kinds = list(first_kinds) if first_kinds else _issue_kinds(rng, issue)
    if any("account_number" in hop.drop for hop in route) and "account_number" not in kinds:
        kinds.insert(0, "account_number")
    # opener (some facts in the first message), triage asks, customer gives the rest
    opener = rng.choice(issue.openers)
    in_opener = [k for k in kinds[1:2] if rng.random() < 0.4 and k != "display_name_xss"]
    first_msg = opener
    if in_opener:
        first_msg = _end(first_msg) + " " + conv.state(in_opener)
    conv.user(first_msg)
    ask = rng.choice(TRIAGE_ASK)
    conv.say("triage", rng.choice(TRIAGE_HELLO).format(ask=ask))
    rest = [k for k in kinds if k not in in_opener]
    details = conv.state(rest)
    if xss == "user":
        details += rng.choice([" The error page literally says <script>alert(1)</script> — is that normal??",
                               " I pasted this from the banner: <script>alert(1)</script>"])
    conv.user(details)
    # triage routes
    hop0 = route[0]
    team = rng.choice(TEAM[hop0.to])
    reason = hop0.reason if hop0.reason in ROUTE else None
    line = rng.choice(ROUTE[reason]).format(team=team, Team=_cap(team))
    if rng.random() < 0.4:
        f = conv.facts[rng.choice(conv.known)]
        line = rng.choice(["Thanks, I've noted that: ", "Got it. ", "Understood. "]) + line
        if f.kind not in ("display_name_xss", "tried_steps"):
            line = line.replace("noted that: ", f"noted {f.value}. ")
    conv.say("triage", line, tool_calls=[{"name": "transfer_to_" + hop0.to,
                                          "arguments": {"reason": hop0.reason}}]
             if rng.random() < 0.5 else [])
    current = "triage"
    n_hops = len(route)
    for h, hop in enumerate(route):
        n_facts = 1 if rng.random() < 0.3 else (2 if rng.random() < 0.75 else 3)
        must = ["account_number"] if "account_number" in hop.drop else []
        fact_kinds = _pick_facts(rng, conv, n_facts, must=must)
        if "account_number" in hop.drop and (h, "account_number") not in conv.forced:
            conv.forced[(h, "account_number")] = rng.choice(["reask", "reask", "ignore", "verbatim"])
        plan = conv.handoff(current, hop, fact_kinds)
        last = h == n_hops - 1
        nxt = route[h + 1] if not last else None
        if hop.mode == "delegate":
            conv.receive(hop.to, plan)
            if any(o == "reask" for _, o in plan):
                conv.customer_reply(plan)
            conv.say(hop.to, rng.choice(["Identity verified; passing the result back.",
                                         "Verification done — returning to my colleague.",
                                         "Checked. Handing back now."]))
            conv.say(current, rng.choice(["Thanks for your patience — you're verified.",
                                          "All verified, let's continue."]))
            if last:
                conv.say(current, rng.choice(issue.fixes) + " " + rng.choice(AGENT_CLOSE))
                if rng.random() < 0.7:
                    conv.user(rng.choice(USER_CLOSE))
            continue
        conv.receive(hop.to, plan, bounce_next=nxt.to if nxt else None)
        new_kinds = []
        unstated = [k for k in kinds if k not in conv.known]
        if unstated and rng.random() < 0.5:
            new_kinds = unstated[:1]
        extra = [k for k in issue.kinds if k not in conv.facts]
        if not new_kinds and extra and rng.random() < 0.35 and not last:
            new_kinds = extra[:1]
        conv.customer_reply(plan, new_kinds=new_kinds,
                            frustrated=scenario in ("ping_pong", "three_cycle", "long_chain")
                            and h >= 2 and rng.random() < 0.6)
        if last:
            owner = hop.to == issue.owner or hop.to == "human_escalation"
            if owner:
                text = rng.choice(issue.fixes)
            elif hop.to == "general_faq":
                text = rng.choice(["You can find more in our help centre at help.kestrel.example.",
                                   "I'd suggest checking the FAQ article on this topic."])
            else:
                text = rng.choice(["I've added notes to your account; someone will follow up by email.",
                                   "I've logged this; you'll hear back within two business days."])
            if xss == "agent":
                text += " For reference, the note I saved reads: \"customer pasted <script>alert(1)</script> in the form\"."
            conv.say(hop.to, text + " " + rng.choice(AGENT_CLOSE))
            if rng.random() < 0.7:
                conv.user(rng.choice(USER_CLOSE))
            break
        # transfer message of the current receiver
        nteam = rng.choice(TEAM[nxt.to])
        rkey = nxt.reason if nxt.reason in ROUTE else None
        if nxt.mode == "delegate":
            text = rng.choice(["Before I change anything I need {team} to verify your identity — one moment.",
                               "I'm asking {team} to run a quick identity check; I'll stay with you.",
                               "Let me have {team} confirm it's really you first."]).format(team=nteam)
        elif nxt.bounce and hop.to in BOUNCE:
            text = rng.choice(BOUNCE[hop.to]) + " " + rng.choice(ROUTE["fallback"]).format(
                team=nteam, Team=_cap(nteam))
        else:
            text = rng.choice(ROUTE[rkey]).format(team=nteam, Team=_cap(nteam))
        conv.say(hop.to, text)
        current = hop.to
    conv.expected = list(expected or [])
    return conv


def _issue_kinds(rng: random.Random, issue: Issue) -> list[str]:
    # customers of the general help desk often write without an account number
    kinds = ["account_number"] if issue.owner != "general_faq" or rng.random() < 0.5 else []
    extra = list(issue.kinds)
    rng.shuffle(extra)
    if "display_name_xss" in issue.kinds:
        extra.remove("display_name_xss")
        extra.insert(0, "display_name_xss")
    n = min(len(extra), rng.choice([2, 2, 3]))
    kinds += extra[:n]
    if rng.random() < 0.25:
        kinds.insert(0, "customer_name")
    return kinds


# --------------------------------------------------------------------------------------------
# support_desk: the scenario plan
# --------------------------------------------------------------------------------------------

OTHERS = ["billing", "technical_support", "account_security", "general_faq"]


def _reason(rng: random.Random, expected: str | None, *, p_null: float = 0.2,
            p_wrong: float = 0.1) -> str | None:
    r = rng.random()
    if r < p_null:
        return None
    if r < p_null + p_wrong:
        return rng.choice([x for x in ("capability_match", "escalation", "specialization",
                                       "fallback") if x != expected])
    return expected


def _exp(target: str, reason: str | None, from_agent: str = "triage") -> dict[str, Any]:
    return {"expected_target": target, "expected_reason": reason,
            "required_context_keys": required_keys(from_agent, target, reason)}


def plan_support_desk(rng: random.Random) -> list[dict[str, Any]]:
    """The scenario of every conversation: issue, route, expected handoffs, special cases."""
    plans: list[dict[str, Any]] = []
    issues_by_owner: dict[str, list[Issue]] = {}
    for i in ISSUES:
        issues_by_owner.setdefault(i.owner, []).append(i)

    def issue_for(owner: str | None = None) -> Issue:
        pool = issues_by_owner[owner] if owner else [i for i in ISSUES if i.owner != "human_escalation"]
        return rng.choice(pool)

    # The four textbook contradictions, pinned so they are in the set word for word.
    plans.append(dict(scenario="clean", issue=ISSUE_BY_KEY["technician_visit"],
                      route=[Hop("technical_support", "specialization")],
                      expected=[_exp("technical_support", "specialization")],
                      fixed={"day": "Tuesday", "wrong_day": "Thursday", "time": TIMES[1]},
                      forced={(0, "appointment"): "contradict"},
                      first_kinds=["account_number", "appointment", "router"]))
    plans.append(dict(scenario="clean", issue=ISSUE_BY_KEY["duplicate_charge"],
                      route=[Hop("billing", "specialization")],
                      expected=[_exp("billing", "specialization")],
                      fixed={"acct_digits": "4471", "acct_wrong": "4417",
                             "amount": AMOUNTS[0]},
                      forced={(0, "account_number"): "contradict",
                              (0, "refund_amount"): "verbatim"},
                      first_kinds=["account_number", "refund_amount", "charge_date"]))
    plans.append(dict(scenario="clean", issue=ISSUE_BY_KEY["cloud_timeouts"],
                      route=[Hop("technical_support", "specialization")],
                      expected=[_exp("technical_support", "specialization")],
                      fixed={"region": REGIONS[0]},
                      forced={(0, "region"): "contradict"},
                      first_kinds=["account_number", "region", "error_code"]))
    plans.append(dict(scenario="cross_domain", issue=ISSUE_BY_KEY["refund_cancelled"],
                      route=[Hop("billing", "specialization"),
                             Hop("human_escalation", "escalation")],
                      expected=[_exp("billing", "specialization"),
                                _exp("human_escalation", "escalation", "billing")],
                      fixed={"amount": AMOUNTS[0], "acct_digits": "4471", "acct_wrong": "4417"},
                      forced={(0, "refund_amount"): "contradict",
                              (1, "refund_amount"): "verbatim"},
                      first_kinds=["account_number", "refund_amount", "plan"]))
    # Re-asked account number in a plain handoff, pinned too.
    plans.append(dict(scenario="reask", issue=ISSUE_BY_KEY["invoice_fix"],
                      route=[Hop("billing", "specialization")],
                      expected=[_exp("billing", "specialization")],
                      forced={(0, "account_number"): "reask"},
                      first_kinds=["account_number", "invoice_number"]))

    # clean single handoff, correct target
    for owner, n in (("billing", 5), ("technical_support", 5), ("account_security", 4),
                     ("general_faq", 4), ("human_escalation", 2)):
        for _ in range(n):
            exp_reason = "escalation" if owner == "human_escalation" else "specialization"
            plans.append(dict(scenario="clean", issue=issue_for(owner),
                              route=[Hop(owner, _reason(rng, exp_reason))],
                              expected=[_exp(owner, exp_reason)]))
    # escalation after a specialist: triage -> specialist -> human
    for _ in range(7):
        iss = issue_for()
        plans.append(dict(scenario="escalation", issue=iss,
                          route=[Hop(iss.owner, _reason(rng, "specialization")),
                                 Hop("human_escalation", _reason(rng, "escalation", p_null=0.15))],
                          expected=[_exp(iss.owner, "specialization"),
                                    _exp("human_escalation", "escalation", iss.owner)]))
    # cross-domain, two legitimate specialists
    for a, b, key in (("technical_support", "billing", "fiber_down"),
                      ("technical_support", "billing", "cloud_timeouts"),
                      ("billing", "technical_support", "card_declined"),
                      ("billing", "account_security", "card_declined"),
                      ("account_security", "billing", "suspicious_login"),
                      ("general_faq", "billing", "team_plan"),
                      ("technical_support", "account_security", "locked_out"),
                      ("billing", "technical_support", "outage_credit")):
        plans.append(dict(scenario="cross_domain", issue=ISSUE_BY_KEY[key],
                          route=[Hop(a, _reason(rng, "specialization")),
                                 Hop(b, _reason(rng, "capability_match"))],
                          expected=[_exp(a, "specialization"),
                                    _exp(b, "capability_match", a)]))
    # wrong target: triage sends to the wrong team, which bounces (fallback) or answers badly
    for k in range(11):
        iss = issue_for()
        wrong = rng.choice([o for o in OTHERS if o != iss.owner and o not in iss.acceptable])
        route = [Hop(wrong, _reason(rng, "specialization"))]
        if k % 4 != 3:
            route.append(Hop(iss.owner, _reason(rng, "fallback", p_null=0.25), bounce=True))
        plans.append(dict(scenario="wrong_target", issue=iss, route=route,
                          expected=[_exp(iss.owner, "specialization")]))
    # dropped context keys (required keys missing from context_passed)
    for k in range(9):
        owner = ["billing", "account_security", "human_escalation"][k % 3]
        iss = issue_for(owner) if owner != "human_escalation" else ISSUE_BY_KEY["complaint"]
        exp_reason = "escalation" if owner == "human_escalation" else "specialization"
        req = required_keys("triage", owner, exp_reason)
        drop = ["account_number"] if k < 6 else [rng.choice([r for r in req if r != "account_number"])]
        route = [Hop(owner, _reason(rng, exp_reason), drop=drop, int_account=(k == 7))]
        expected = [_exp(owner, exp_reason)]
        if k % 3 == 0:
            route.append(Hop("human_escalation", "escalation", drop=["attempted_steps"]))
            expected.append(_exp("human_escalation", "escalation", owner))
        plans.append(dict(scenario="dropped_context", issue=iss, route=route, expected=expected,
                          first_kinds=None))
    # ping-pong billing <-> technical_support
    for k in range(8):
        iss = rng.choice([ISSUE_BY_KEY[x] for x in ("card_declined", "outage_credit", "fiber_down",
                                                     "duplicate_charge", "app_crash")])
        a = "billing" if k % 2 == 0 else "technical_support"
        b = "technical_support" if a == "billing" else "billing"
        hops = [Hop(a, _reason(rng, "specialization"))]
        cur, other = a, b
        for _ in range(3 + (k % 2)):
            hops.append(Hop(other, _reason(rng, "fallback", p_null=0.3), bounce=True))
            cur, other = other, cur
        if k % 3 == 0:
            hops.append(Hop("human_escalation", "escalation"))
        plans.append(dict(scenario="ping_pong", issue=iss, route=hops,
                          expected=[_exp(iss.owner, "specialization")]))
    # 3-cycles
    for k in range(6):
        iss = rng.choice([ISSUE_BY_KEY[x] for x in ("card_declined", "locked_out", "suspicious_login",
                                                     "duplicate_charge")])
        cyc = ["billing", "technical_support", "account_security"]
        rng.shuffle(cyc)
        hops = [Hop(cyc[0], _reason(rng, "specialization")),
                Hop(cyc[1], _reason(rng, "fallback", p_null=0.3), bounce=True),
                Hop(cyc[2], _reason(rng, "capability_match", p_null=0.3)),
                Hop(cyc[0], _reason(rng, "fallback", p_null=0.3), bounce=True)]
        if k % 2 == 0:
            hops.append(Hop(cyc[1], None, bounce=True))
        plans.append(dict(scenario="three_cycle", issue=iss, route=hops,
                          expected=[_exp(iss.owner, "specialization")]))
    # over-long chains (> 5 handoffs)
    for k in range(7):
        iss = issue_for()
        n = 6 + (k % 2)
        agents = []
        prev = "triage"
        for j in range(n - 1):
            choice = rng.choice([o for o in OTHERS if o != prev])
            agents.append(choice)
            prev = choice
        agents.append("human_escalation")
        hops = [Hop(a, _reason(rng, "specialization" if j == 0 else "capability_match", p_null=0.3),
                    bounce=j > 0 and rng.random() < 0.5) for j, a in enumerate(agents[:-1])]
        hops.append(Hop("human_escalation", _reason(rng, "escalation", p_null=0.1)))
        plans.append(dict(scenario="long_chain", issue=iss, route=hops,
                          expected=[_exp(iss.owner, "specialization"),
                                    _exp("human_escalation", "escalation", iss.owner)]))
    # delegation: billing asks account_security to verify identity and gets the result back
    for _ in range(4):
        iss = issue_for("billing")
        plans.append(dict(scenario="delegate", issue=iss,
                          route=[Hop("billing", _reason(rng, "specialization")),
                                 Hop("account_security", "capability_match", mode="delegate")],
                          expected=[_exp("billing", "specialization"),
                                    _exp("account_security", "capability_match", "billing")]))
    return plans


def build_support_desk(seed: int = SEED) -> dict[str, Any]:
    """Generate the whole support_desk set in memory."""
    rng = random.Random(seed)
    plans = plan_support_desk(rng)
    # XSS probes in a few conversations
    xss_at = {3: "user", 11: "agent", 30: "user", 47: "agent"}
    profile = [i for i, p in enumerate(plans) if p["issue"].key == "profile_tamper"]
    if not profile:  # make sure the display-name probe (fact text with HTML) is present
        plans[17] = dict(scenario="clean", issue=ISSUE_BY_KEY["profile_tamper"],
                         route=[Hop("account_security", "specialization")],
                         expected=[_exp("account_security", "specialization")])
    customers = list(CUSTOMERS)
    rng.shuffle(customers)
    convs: list[Conversation] = []
    for n, p in enumerate(plans):
        cid = f"sd-{n + 1:03d}"
        crng = random.Random(f"{seed}:{cid}")
        customer = customers[n % len(customers)]
        conv = build_conversation(cid, crng, p["issue"], p["scenario"], p["route"], customer,
                                  fixed=p.get("fixed"), forced=p.get("forced"),
                                  expected=p["expected"], first_kinds=p.get("first_kinds"),
                                  xss=xss_at.get(n))
        convs.append(conv)
    return _support_desk_files(convs, rng)


def _support_desk_files(convs: list[Conversation], rng: random.Random) -> dict[str, Any]:
    traces, exps, labels = [], [], []
    for c in convs:
        traces.append({"schema_version": 1, "conversation_id": c.cid, "turns": c.turns,
                       "handoffs": c.handoffs, "user_messages": c.users,
                       "metadata": {"scenario": c.scenario, "issue": c.issue.key,
                                    "channel": "chat", "product": "Kestrel"}})
        first = c.users[0]["content"]
        exps.append({"conversation_id": c.cid,
                     "handoffs": c.expected,
                     "key_facts": c.key_facts,
                     "routing": [{"user_input": first, "correct_agent": c.issue.owner,
                                  "acceptable_agents": list(c.issue.acceptable),
                                  "category": CATEGORY[c.issue.owner]}],
                     "metadata": {"scenario": c.scenario}})
        labels += c.labels
    # ~40/60 dev/test split, stratified by scenario
    by_scn: dict[str, list[str]] = {}
    for c in convs:
        by_scn.setdefault(c.scenario, []).append(c.cid)
    dev: list[str] = []
    for scn in sorted(by_scn):
        ids = list(by_scn[scn])
        rng.shuffle(ids)
        dev += ids[:round(len(ids) * 0.4)]
    dev_set = set(dev)
    splits = {"dev": [c.cid for c in convs if c.cid in dev_set],
              "test": [c.cid for c in convs if c.cid not in dev_set]}
    return {"traces": traces, "expectations": exps, "labels": labels, "splits": splits}


# --------------------------------------------------------------------------------------------
# writing support_desk
# --------------------------------------------------------------------------------------------


def support_desk_stats(data: dict[str, Any]) -> dict[str, Any]:
    traces = data["traces"]
    mix = Counter(r["label"] for r in data["labels"])
    reasons = Counter(str(h["reason"]) for t in traces for h in t["handoffs"])
    return {
        "conversations": len(traces),
        "handoffs": sum(len(t["handoffs"]) for t in traces),
        "messages": sum(len(t["turns"]) + len(t["user_messages"]) for t in traces),
        "retention_items": len(data["labels"]),
        "labels": {k: mix[k] for k in LABELS},
        "scenarios": dict(sorted(Counter(t["metadata"]["scenario"] for t in traces).items())),
        "handoff_reasons": dict(sorted(reasons.items())),
        "longest_chain": max(len(t["handoffs"]) for t in traces),
        "splits": {k: len(v) for k, v in data["splits"].items()},
    }


def write_support_desk(out: Path, seed: int = SEED) -> dict[str, Any]:
    data = build_support_desk(seed)
    stats = support_desk_stats(data)
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "traces.jsonl", data["traces"])
    _write_jsonl(out / "expectations.jsonl", data["expectations"])
    _write_jsonl(out / "labels.jsonl", data["labels"])
    manifest = {
        "name": "support_desk",
        "version": "1.0.0",
        "description": ("Synthetic multi-agent customer-support chats for the fictional company "
                        "Kestrel (fibre internet, the Kestrel Drive app, Kestrel Cloud, "
                        "subscriptions): a triage agent routes to five specialists. Covers correct "
                        "and wrong handoffs, dropped context keys, ping-pong and 3-cycle loops, "
                        "over-long chains, and key facts retained, re-asked, ignored or "
                        "contradicted after a handoff. Reference labels by the maev-kit authors."),
        "agents": dict(AGENTS),
        "agent_descriptions": dict(AGENT_DESCRIPTIONS),
        "labels": list(LABELS),
        "splits": data["splits"],
        "contracts": CONTRACTS,
        "labelers": {
            "maev-authors": {
                "kind": "reference",
                "source": "reference",
                "description": ("Labels written by the maev-kit authors through the generator: "
                                "each message after a handoff was written to retain, lose "
                                "(re-ask or ignore) or contradict a given key fact, and the label "
                                "records that intent. Not human annotations of finished text."),
            }
        },
        "generator": {"script": "tools/build_labeled_sets.py", "seed": seed},
        "license": "MIT",
        "counts": stats,
    }
    _write_json(out / "manifest.json", manifest)
    _write_text(out / "README.md", _support_desk_readme(stats, seed))
    return stats


def _support_desk_readme(s: dict[str, Any], seed: int) -> str:
    lab = s["labels"]
    tot = sum(lab.values())
    pct = {k: f"{100 * v / tot:.0f} %" for k, v in lab.items()}
    scen = "\n".join(f"| `{k}` | {v} |" for k, v in s["scenarios"].items())
    reasons = ", ".join(f"`{k}` {v}" for k, v in s["handoff_reasons"].items())
    return f"""# support_desk — a labeled set of multi-agent support chats

Customer-support conversations between customers and the agents of a fictional company,
**Kestrel** (home fibre internet, the Kestrel Drive app, Kestrel Cloud hosting, subscriptions).
A `triage` agent reads the customer's request and hands the conversation to one of five agents:

| agent | role | handles |
|---|---|---|
| `triage` | router | first contact; routes the request |
| `billing` | specialist | charges, refunds, invoices, plans, payment methods |
| `technical_support` | specialist | outages, error codes, apps, routers, cloud regions, technician visits |
| `account_security` | specialist | sign-in problems, suspicious activity, 2FA |
| `general_faq` | specialist | how-to questions, policies, plan features |
| `human_escalation` | escalation | a human supervisor: complaints, cases the bots could not solve |

The set exists to exercise every part of maev-kit on one folder: handoff target / reason /
context accuracy, routing, loops, contracts, and above all **information retention** — whether
the key facts a customer gave before a handoff survive it.

## Contents

| | count |
|---|---|
| conversations | {s['conversations']} |
| handoffs | {s['handoffs']} (longest chain: {s['longest_chain']}) |
| messages (customer + agent) | {s['messages']} |
| key facts as listed (fact × the handoff it is listed at) | {s['retention_items']} |
| reference labels | {tot}: retained {lab['retained']} ({pct['retained']}), lost {lab['lost']} ({pct['lost']}), contradicted {lab['contradicted']} ({pct['contradicted']}) |
| split | dev {s['splits']['dev']} conversations, test {s['splits']['test']} conversations |

Each listed fact has a reference label. Scoring also judges a fact at every later handoff where
it is not listed (a fact belongs to the conversation); those items carry no reference label.

Handoff reasons recorded in the traces: {reasons} (`None` = the framework recorded no reason).

| scenario (`metadata.scenario`) | conversations |
|---|---|
{scen}

- `clean`: triage routes straight to the right specialist.
- `reask`: a plain handoff after which the specialist asks again for the account number.
- `escalation`: specialist, then `human_escalation`.
- `cross_domain`: two legitimate specialists in turn (for example a billing credit after a
  technical outage); `delegate` conversations use `mode: "delegate"` (billing asks
  account_security to verify the customer and gets the answer back).
- `wrong_target`: triage picks the wrong specialist, which bounces the case (reason `fallback`)
  or answers it badly.
- `dropped_context`: a key required by the handoff contract is missing from `context_passed`
  (and once `account_number` is passed as a number instead of a string).
- `ping_pong`: billing ↔ technical_support back and forth; `three_cycle`: billing →
  technical_support → account_security → billing (in some order).
- `long_chain`: more than five handoffs before the case reaches a human.

What happens to each key fact after a handoff:

- **retained**: the receiving agent restates it (`I've pulled up ACCT-4471`) or keeps it in
  other words or by clearly using it (`the account ending in 71`, `Your Tuesday visit stays on the calendar`,
  `that forty-nine ninety-nine charge`). Paraphrases are deliberate: a judge that only looks for
  the literal value will miss some.
- **lost**: the receiving agent asks for it again (the customer then repeats it, often
  annoyed), or acts as if it never heard it (tells a customer who already restarted the router
  to restart the router; files an urgent case in the standard queue).
- **contradicted**: the receiving agent states a conflicting value — a technician visit on
  Tuesday becomes Thursday, ACCT-4471 becomes ACCT-4417, eu-west-1 becomes us-east-1, a refund
  of $49.99 becomes $59.99, and many more like them. Sometimes the customer corrects it in the
  next message; the label stays `contradicted`.

A few conversations contain HTML/JavaScript probes typed by a "customer" or quoted by an agent
(`<script>alert(1)</script>`, `<img src=x onerror=alert(1)>`, once inside a key fact's text), so
that reports and widgets can be checked for escaping. They must always show up as text.

## Files

- `traces.jsonl` — one conversation per line (maev-kit trace schema, `schema_version` 1).
  `metadata` holds `scenario`, `issue`, `channel`, `product`.
- `expectations.jsonl` — per conversation: the expected (ideal) handoffs with their reason and
  `required_context_keys` (taken from the contracts below), the key facts per handoff
  (`fact_id`, `handoff_index`, `text`), and one routing case (`user_input` is the customer's
  first message, `correct_agent`, `acceptable_agents`, `category`: `money`, `tech`, `account`,
  `info` or `human`). Expected handoffs describe the route the conversation *should* have
  taken, so they can be shorter than the handoffs that happened.
- `labels.jsonl` — one reference label per retention item; item ids are
  `<conversation_id>/h<handoff_index>/<fact_id>`, `annotator` is `maev-authors`, `source` is
  `reference`, and `note` says how the fact was treated (for example
  `appointment: stated a conflicting value (Thursday at 10:00 am for Tuesday at 10:00 am)`).
  `created_at` is a fixed timestamp (the build of version 1.0.0) so rebuilds are identical.
- `manifest.json` — name, version, description, `agents` (id → role), `labels`, `splits`,
  `contracts`, `labelers`, and these extra keys: `agent_descriptions` (what each agent does),
  `generator` (script and seed), `license`, `counts` (the numbers in this README).

### Handoff contracts (`manifest.json › contracts`)

Each contract says what a handoff from `from_agent` to `to_agent` (`"*"` = any agent) must
carry: the keys of `context_passed` in `required_context_keys`, each of the JSON type given in
`value_types` (`str`, `int`, `float`, `bool`, `list`, `dict`). `reason` narrows the contract to
handoffs recorded with that reason; `null` means it applies whatever the reason (as in
`maev_kit.metrics.check_handoff_contracts`). Several contracts can apply to one handoff; all of
them must hold. For example, every handoff into `billing` needs `account_number` and
`issue_summary`, one from `triage` also `customer_name`, and every `escalation` handoff needs
`attempted_steps` (a list).

## How it was made and who labeled it

Every conversation was generated by `tools/build_labeled_sets.py` (seed `{seed}`) from
templates written by the maev-kit authors: dozens of opening messages, issues, customer names,
products, error codes and phrasings of each fact. Running the script again writes
byte-identical files.

The labels in `labels.jsonl` are **reference labels written by the maev-kit authors**
(annotator `maev-authors`, `source: "reference"`). They are not human annotations of finished
conversations: for each key fact at each handoff, the generator first decides what the receiving
agent will do with it (restate, paraphrase/use, re-ask, ignore or contradict), then writes that
agent's message accordingly, so the label is known by construction. They are a consistent,
documented reference for the kit's demo and tests, not an estimate of how people would
label these chats. For human–human and judge–human agreement on real annotations, use the
`snli_calibration` set.

## Split

Conversations are split about 40/60 into `dev` (for choosing or tuning a judge) and `test`
(for reporting), stratified by scenario; see `manifest.json › splits`.

## License

Written for maev-kit and released under the project's license, MIT. The conversations are
synthetic: the company, people, account numbers, e-mail addresses (on `example.*` domains) and
tickets are invented.
"""


# --------------------------------------------------------------------------------------------
# snli_calibration
# --------------------------------------------------------------------------------------------

SNLI_PER_SPLIT = 400


def build_snli(snli_path: Path) -> dict[str, Any]:
    rows = []
    with open(snli_path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                rows.append(json.loads(line))
    taken: dict[str, list[dict[str, Any]]] = {"dev": [], "test": []}
    for r in rows:  # the first rows of each split that carry all five crowd labels
        if len(r["annotator_labels"]) == 5 and len(taken[r["split"]]) < SNLI_PER_SPLIT:
            taken[r["split"]].append(r)
    chosen = taken["dev"] + taken["test"]
    if min(len(v) for v in taken.values()) < SNLI_PER_SPLIT:
        raise SystemExit(f"{snli_path.name}: fewer than {SNLI_PER_SPLIT} usable rows per split")
    traces, exps, labels = [], [], []
    for r in chosen:
        cid = r["id"] if r["id"].startswith("snli-") else f"snli-{r['id']}"
        image = r["original_pair_id"].split("#")[0]
        traces.append({
            "schema_version": 1, "conversation_id": cid,
            "turns": [{"agent_id": "intake", "agent_role": "intake", "message": r["fact"],
                       "tool_calls": [], "turn_index": 1},
                      {"agent_id": "responder", "agent_role": "responder",
                       "message": r["message"], "tool_calls": [], "turn_index": 3}],
            "handoffs": [{"from_agent": "intake", "to_agent": "responder", "reason": None,
                          "context_passed": {}, "turn_index": 2, "mode": "transfer"}],
            "user_messages": [{"content": f"What is happening in photo {image}?",
                               "turn_index": 0}],
            "metadata": {"source": r["source"], "original_pair_id": r["original_pair_id"],
                         "split": r["split"]}})
        exps.append({"conversation_id": cid, "handoffs": [],
                     "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": r["fact"]}],
                     "routing": []})
        iid = f"{cid}/h0/f1"
        for k, lab in enumerate(r["annotator_labels"], start=1):
            labels.append({"item_id": iid, "annotator": f"slot{k}", "label": lab, "note": "",
                           "created_at": CREATED_AT, "source": "snli_1.0"})
        labels.append({"item_id": iid, "annotator": "gold", "label": r["label"], "note": "",
                       "created_at": CREATED_AT, "source": "gold"})
    kappa = fleiss_kappa([r["annotator_labels"] for r in chosen], LABELS)
    splits = {s: [t["conversation_id"] for t, r in zip(traces, chosen) if r["split"] == s]
              for s in ("dev", "test")}
    gold_mix = Counter(r["label"] for r in chosen)
    unanimous = sum(len(set(r["annotator_labels"])) == 1 for r in chosen)
    slot1_gold = sum(r["annotator_labels"][0] == r["label"] for r in chosen)
    stats = {"items": len(chosen), "labels_per_item": 6, "fleiss_kappa_5_slots": round(kappa, 4),
             "gold": {k: gold_mix[k] for k in LABELS}, "unanimous_items": unanimous,
             "slot1_equals_gold": slot1_gold,
             "splits": {k: len(v) for k, v in splits.items()}}
    return {"traces": traces, "expectations": exps, "labels": labels, "splits": splits,
            "stats": stats}


def write_snli(out: Path, snli_path: Path) -> dict[str, Any]:
    data = build_snli(snli_path)
    s = data["stats"]
    out.mkdir(parents=True, exist_ok=True)
    _write_jsonl(out / "traces.jsonl", data["traces"])
    _write_jsonl(out / "expectations.jsonl", data["expectations"])
    _write_jsonl(out / "labels.jsonl", data["labels"])
    manifest = {
        "name": "snli_calibration",
        "version": "1.0.0",
        "description": ("SNLI 1.0 premise/hypothesis pairs recast as one-handoff traces: the "
                        "hypothesis is a fact stated before the handoff, the premise is what the "
                        "next agent says. Five real crowd labels per item (as label slots) plus "
                        "the gold label; for judge-vs-human and human-vs-human agreement."),
        "agents": {"intake": "intake", "responder": "responder"},
        "labels": list(LABELS),
        "splits": data["splits"],
        "contracts": [],
        "labelers": {
            **{f"slot{k}": {"kind": "crowd-slot", "source": "snli_1.0",
                            "description": ("label slot 1: the crowd worker who wrote the "
                                            "hypothesis (a different person per item)" if k == 1
                                            else f"label slot {k}: a crowd worker who validated "
                                            "the pair (a different person per item)")}
               for k in range(1, 6)},
            "gold": {"kind": "gold", "source": "gold",
                     "description": "SNLI gold label: the majority (at least 3 of 5) of the slots"},
        },
        "label_mapping": {"entailment": "retained", "neutral": "lost",
                          "contradiction": "contradicted"},
        "generator": {"script": "tools/build_labeled_sets.py",
                      "input": "retention_snli_subset.jsonl"},
        "license": "CC BY-SA 4.0",
        "attribution": ("SNLI 1.0 — Samuel R. Bowman, Gabor Angeli, Christopher Potts and "
                        "Christopher D. Manning. 2015. A large annotated corpus for learning "
                        "natural language inference. EMNLP 2015."),
        "counts": s,
    }
    _write_json(out / "manifest.json", manifest)
    _write_text(out / "README.md", _snli_readme(s))
    return s


def _snli_readme(s: dict[str, Any]) -> str:
    g = s["gold"]
    return f"""# snli_calibration — real human labels for calibrating retention judges

{s['items']} sentence pairs from **SNLI 1.0** (the Stanford Natural Language Inference corpus), each
recast as a tiny multi-agent trace, with **five real crowd-worker labels per item** and the gold
label. This is the set where judge-vs-human and human-vs-human agreement mean something: the
labels were given by people, independently, before this project existed.

## Attribution and license

The sentence pairs and their labels come from SNLI 1.0:

> Samuel R. Bowman, Gabor Angeli, Christopher Potts, and Christopher D. Manning. 2015.
> *A large annotated corpus for learning natural language inference.* In Proceedings of the 2015
> Conference on Empirical Methods in Natural Language Processing (EMNLP). Association for
> Computational Linguistics.

SNLI is licensed under the **Creative Commons Attribution-ShareAlike 4.0 International License
(CC BY-SA 4.0)**, https://creativecommons.org/licenses/by-sa/4.0/. This folder is a derived work
(the pairs were reformatted as traces and the labels renamed, see below) and is shared under the
same license, CC BY-SA 4.0 — not under maev-kit's MIT license, which covers the code only. The
premises are Flickr30k image captions, as in SNLI.

## How the items were made

Input: `retention_snli_subset.jsonl` (the first rows of the official SNLI 1.0 dev and test
files, pairs without a 3-of-5 majority already removed). Taken from it, in file order: the
first {s['splits']['dev']} `dev` rows and the first {s['splits']['test']} `test` rows that carry
all five crowd labels (so the three hypotheses written for one premise stay together).
`tools/build_labeled_sets.py` converts each pair into one trace:

| turn_index | speaker | text |
|---|---|---|
| 0 | user | `What is happening in photo <image id>?` |
| 1 | agent `intake` | the SNLI **hypothesis** — the key fact |
| 2 | handoff `intake → responder` | reason `null`, no context |
| 3 | agent `responder` | the SNLI **premise** — what the next agent said |

`conversation_id` is the subset's `id` (`snli-dev-…`/`snli-test-…`, the SNLI pair id prefixed
with `snli-` and the split); `metadata` keeps `original_pair_id`, `split` and `source`.
`expectations.jsonl` has one key fact per item: `f1`, the hypothesis, at handoff 0, so every item
id is `<conversation_id>/h0/f1`.

The NLI labels map to retention labels as follows (the question being "after the handoff, is the
fact the intake agent stated retained by what the responder says?"):

| SNLI label | retention label |
|---|---|
| entailment | `retained` |
| neutral | `lost` |
| contradiction | `contradicted` |

## Labels

`labels.jsonl` holds six lines per item:

- `slot1` … `slot5` (`source: "snli_1.0"`): the five crowd labels, mapped as above. **These
  are label *slots*, not fixed people.** Each slot is a different crowd worker on each item:
  `slot1` on one item and `slot1` on the next are usually two different people. `slot1` is always
  the worker who wrote the hypothesis (their label is the one they were asked to write towards);
  `slot2`–`slot5` are four other workers who later validated the pair. Treat agreement "between
  slots" as agreement between randomly drawn annotators, and prefer statistics made for that
  (Fleiss κ, Krippendorff α) over per-annotator ones.
- `gold` (`source: "gold"`): SNLI's gold label, the label given by at least 3 of the 5.
  Compare a judge with each slot, and slots with each other; don't compare judge-vs-gold with
  human-vs-human, since gold is a majority vote that includes those humans.

`created_at` is a fixed timestamp (the build of version 1.0.0 of this folder), not the time of
the original annotation, so that rebuilding gives identical files.

## Numbers (measured on this folder)

| | |
|---|---|
| items | {s['items']} (dev {s['splits']['dev']}, test {s['splits']['test']}) |
| gold labels | retained {g['retained']}, lost {g['lost']}, contradicted {g['contradicted']} |
| unanimous items (5 of 5 slots agree) | {s['unanimous_items']} |
| `slot1` equals gold | {s['slot1_equals_gold']} |
| human–human **Fleiss κ** over the five slots | **{s['fleiss_kappa_5_slots']:.3f}** |

Fleiss κ is computed by `tools/build_labeled_sets.py` (its own implementation; the test
suite recomputes it) over exactly the {s['items']} items shipped here, with the categories
`retained`, `lost`, `contradicted`.

## Split

`manifest.json › splits` keeps the source split: SNLI `dev` rows are the `dev` split, SNLI
`test` rows the `test` split.
"""


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None,
                    help="folder to write the sets into (default: labeled_sets/ of the repository)")
    ap.add_argument("--snli", type=Path, default=None,
                    help="path of retention_snli_subset.jsonl (default: ../shared/data/ relative "
                         "to the repository root)")
    ap.add_argument("--seed", type=int, default=SEED, help=f"support_desk seed (default {SEED})")
    ap.add_argument("--only", choices=["support_desk", "snli_calibration"], default=None,
                    help="build one set only")
    args = ap.parse_args(argv)
    out = args.out if args.out is not None else REPO_ROOT / "labeled_sets"
    snli = args.snli if args.snli is not None else REPO_ROOT / DEFAULT_SNLI
    if args.only in (None, "support_desk"):
        s = write_support_desk(out / "support_desk", args.seed)
        print(f"support_desk: {s['conversations']} conversations, {s['handoffs']} handoffs, "
              f"{s['retention_items']} labeled items {s['labels']}")
    if args.only in (None, "snli_calibration"):
        if not snli.is_file():
            print(f"error: SNLI subset not found at {args.snli or DEFAULT_SNLI}; pass --snli PATH",
                  file=sys.stderr)
            return 2
        s = write_snli(out / "snli_calibration", snli)
        print(f"snli_calibration: {s['items']} items, Fleiss kappa {s['fleiss_kappa_5_slots']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
