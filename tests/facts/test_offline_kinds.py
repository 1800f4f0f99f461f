"""The offline extractor, kind by kind: what it must find, and near-misses it must not."""

from __future__ import annotations

import pytest

from maev_kit.facts._offline import extract

FOUND = [
    # (message, kind, exact value, text)
    ("My account number is ACCT-4471.", "identifier", "ACCT-4471", "Account number is ACCT-4471"),
    ("account # is ACCT-1827. it's the NX-300 box.", "identifier", "ACCT-1827",
     "Account number is ACCT-1827"),
    ("my user id is omar_rossi_1241", "identifier", "omar_rossi_1241",
     "User id is omar_rossi_1241"),
    ("The booking code is UM3OG5, thanks", "identifier", "UM3OG5",
     "Booking reference is UM3OG5"),
    ("Reservation number: 88123", "identifier", "88123", "Reservation number is 88123"),
    ("ticket #4521 is still open", "identifier", "4521", "Ticket number is 4521"),
    ("order ORD-99812 never arrived", "identifier", "ORD-99812", "Order number is ORD-99812"),
    ("omar_rossi_1241 here", "identifier", "omar_rossi_1241", "User id is omar_rossi_1241"),
    ("The error says ThrottlingException.", "identifier", "ThrottlingException",
     "Error code is ThrottlingException"),
    ("Everything's in eu-west-1.", "identifier", "eu-west-1", "Region is eu-west-1"),
    ("the one ending 3774.", "identifier", "3774", "Card ending is 3774"),
    ("I'm on 6.1.5 of the app", "identifier", "6.1.5", "Version is 6.1.5"),
    ("I have 3 checked bags", "quantity", "3 checked bags", "3 checked bags"),
    ("a table for 12 people please", "quantity", "12 people", "12 people"),
    ("There are 14 of us.", "quantity", "14 of us", "14 of us"),
    ("We need two rooms", "quantity", "two rooms", "two rooms"),
    ("I was billed $1,200.50 twice", "money", "$1,200.50", "Charge amount is $1,200.50"),
    ("it cost €30", "money", "€30", "Price is €30"),
    ("they took 30 EUR", "money", "30 EUR", "Amount is 30 EUR"),
    ("The charge is dated June 16.", "date", "June 16", "Charge date is June 16"),
    ("flying on 2025-03-14", "date", "2025-03-14", "Travel date is 2025-03-14"),
    ("booked for Tuesday at 10:00 am.", "date", "Tuesday at 10:00 am",
     "Date is Tuesday at 10:00 am"),
    ("on 03/14/2025 I think", "date", "03/14/2025", "Date is 03/14/2025"),
    ("someone signed in at 1:41 am.", "time", "1:41 am", "Time is 1:41 am"),
    ("the meeting is at 14:30", "time", "14:30", "Appointment time is 14:30"),
    ("email is ana.petrovic@example.org.", "email", "ana.petrovic@example.org",
     "Email is ana.petrovic@example.org"),
    ("call me on +1 (555) 123-4567", "phone", "+1 (555) 123-4567",
     "Phone number is +1 (555) 123-4567"),
    ("my number is +44 20 7946 0958", "phone", "+44 20 7946 0958",
     "Phone number is +44 20 7946 0958"),
    ("Hi, my name is Ana Lopez.", "name", "Ana Lopez", "Name is Ana Lopez"),
    ("I'm Ana, hi", "name", "Ana", "Name is Ana"),
    ("this is Omar Rossi calling", "name", "Omar Rossi", "Name is Omar Rossi"),
    ("Name's Łukasz Nowak.", "name", "Łukasz Nowak", "Name is Łukasz Nowak"),
    ("Arjun Mehta. My account is gone.", "name", "Arjun Mehta", "Name is Arjun Mehta"),
    ("flying from New York to San Francisco", "place", "New York to San Francisco",
     "Route is from New York to San Francisco"),
    ("a login from Ho Chi Minh City at night", "place", "Ho Chi Minh City",
     "Place is Ho Chi Minh City"),
    ("plan is Basic monthly.", "other", "Basic monthly", "Plan is Basic monthly"),
    ("I'm on the Family annual plan.", "other", "Family annual", "Plan is Family annual"),
    ("I'm on a MacBook Air with macOS 14.", "other", "MacBook Air", "Device is MacBook Air"),
    ("I'm on a MacBook Air with macOS 14.", "other", "macOS 14", "Operating system is macOS 14"),
    # flights and trains
    ("I'm booked on LH 454 tomorrow", "identifier", "LH 454", "Flight number is LH 454"),
    ("my flight UA 915 was cancelled", "identifier", "UA 915", "Flight number is UA 915"),
    ("flight #915 from gate 3", "identifier", "915", "Flight number is 915"),
    ("I'm on ICE 578 to Berlin", "identifier", "ICE 578", "Train number is ICE 578"),
    ("train 9C leaves at noon", "identifier", "9C", "Train number is 9C"),
    ("Booked on BA2490 already", "identifier", "BA2490", "Reference is BA2490"),
    # times
    ("see you at 9pm", "time", "9pm", "Time is 9pm"),
    ("call back at 10.30am please", "time", "10.30am", "Appointment time is 10.30am"),
    ("the pickup is at half past three", "time", "half past three", "Pickup time is half past three"),
    ("we land at quarter to 9 pm", "time", "quarter to 9 pm", "Arrival time is quarter to 9 pm"),
    ("it opens at 5 o'clock", "time", "5 o'clock", "Time is 5 o'clock"),
    ("I need it by noon", "time", "noon", "Time is noon"),
    # money
    ("a charge of $49.00 again", "money", "$49.00", "Charge amount is $49.00"),
    ("they want €40 for it", "money", "€40", "Amount is €40"),
    ("it was 40€ at the desk", "money", "40€", "Amount is 40€"),
    ("USD 1,200.50 was taken", "money", "USD 1,200.50", "Amount is USD 1,200.50"),
    ("£12.99 a month", "money", "£12.99", "Amount is £12.99"),
    ("it's 49 dollars now", "money", "49 dollars", "Amount is 49 dollars"),
    ("I paid 250 SEK", "money", "250 SEK", "Payment amount is 250 SEK"),
    # references
    ("booking BK-88213 is wrong", "identifier", "BK-88213", "Booking reference is BK-88213"),
    ("see INV-88213 please", "identifier", "INV-88213", "Invoice number is INV-88213"),
    ("refund RF-5521 never came", "identifier", "RF-5521", "Refund reference is RF-5521"),
    ("ticket TCK-20931 was closed", "identifier", "TCK-20931", "Ticket number is TCK-20931"),
    ("my booking reference is X7K2PQ", "identifier", "X7K2PQ", "Booking reference is X7K2PQ"),
    ("the confirmation code: QXBPTF", "identifier", "QXBPTF", "Confirmation code is QXBPTF"),
    # dates, counts, names, quoted messages
    ("I was charged twice for March and now", "date", "March", "Charge date is March"),
    ("about my June invoice", "date", "June", "Charge date is June"),
    ("it started in May", "date", "May", "Date is May"),
    ("it will appear in 3-5 business days", "quantity", "3-5 business days",
     "3-5 business days"),
    ("my name is ana lopez", "name", "ana lopez", "Name is ana lopez"),
    ("my calls fail with 'account suspended'. Help", "other", "account suspended",
     "Quoted message is account suspended"),
    ('the error says "Payment declined" again', "other", "Payment declined",
     "Quoted message is Payment declined"),
]


@pytest.mark.parametrize(("message", "kind", "value", "text"), FOUND,
                         ids=[f"{k}:{v}" for _, k, v, _ in FOUND])
def test_finds_each_kind_with_its_exact_span(message, kind, value, text):
    spans = extract(message)
    match = [s for s in spans if s.value == value]
    assert match, [(s.kind, s.value) for s in spans]
    assert (match[0].kind, match[0].text) == (kind, text)
    assert value in message and message[match[0].start:].startswith(value)


NEAR_MISSES = [
    # (message, why nothing should come out)
    ("I called 3 times", "a bare count without a unit"),
    ("It happened twice, maybe 2 or 3", "bare small numbers"),
    ("PLEASE HELP, THIS IS URGENT", "shouting is not a code"),
    ("I'm not sure what happened", "'I'm not' is no name"),
    ("I'm Sorry to bother you", "'I'm Sorry' is no name"),
    ("this is urgent", "lowercase after 'this is'"),
    ("My account is locked.", "an account without a number"),
    ("The account suspended message shows", "a keyword followed by a plain word"),
    ("Thanks, I'll look into it now.", "agent boilerplate"),
    ("You'll get a summary of this chat by email.", "the word email is no address"),
    ("call 12-34", "too few digits for a phone"),
    ("version two of the app", "a version without digits"),
    ("I restarted the router twice already.", "a step, not a value"),
    ("user@localhost", "an address without a domain"),
    ("It's ACCT-4909.", "an identifier after it's is not a name"),
    ("Flight of stairs to the office", "flight without a number"),
    ("at 10 we'll see", "a bare hour is no time"),
    ("It started in 2024", "a bare year"),
    ("See Section 3 of the terms", "a section number"),
    ("we moved to v2.1 last week", "a short version number"),
    ("I changed my flight 3 times", "a count after flight is no flight number"),
    ("OS 14 crashed again", "OS is not taken for an airline"),
    ("May I ask something?", "May as a verb"),
    ("my name is spelled wrong on the invoice", "no name after 'my name is'"),
    ("I'd say 'hello' to them", "a quote without an error word"),
    ("around 10 in the morning, maybe", "a bare number"),
]


@pytest.mark.parametrize(("message", "why"), NEAR_MISSES, ids=[w for _, w in NEAR_MISSES])
def test_near_misses_propose_nothing(message, why):
    assert [(s.kind, s.value) for s in extract(message) if s.kind != "identifier"
            or "ACCT" not in s.value] == [], why


def test_an_identifier_wins_over_the_numbers_inside_it():
    spans = extract("Account ACCT-4471-9920 and phone 555 123 4567 8")
    assert [s.value for s in spans][0] == "ACCT-4471-9920"
    assert not any(s.value in ("4471", "4471-9920") for s in spans)


def test_spans_never_overlap_and_come_in_order():
    msg = ("I'm Ana Lopez, account ACCT-4471, email ana@example.org, $49.99 on June 16 at "
           "10:00 am, 3 checked bags from Madrid to Lisbon, call +34 612 345 678")
    spans = extract(msg)
    ends = [(s.start, s.start + len(s.value)) for s in spans]
    assert ends == sorted(ends)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(ends, ends[1:]))
    assert {s.kind for s in spans} >= {"name", "identifier", "email", "money", "date",
                                       "quantity", "place", "phone"}
    for s in spans:
        assert msg[s.start:s.start + len(s.value)] == s.value


def test_strong_only_keeps_identifiers_emails_phones_and_money():
    msg = "I'm Dana. Refund RF-5521 of $49.00 on June 16 to dana@example.com, 3 bags"
    kinds = {s.kind for s in extract(msg, strong_only=True)}
    assert kinds == {"identifier", "money", "email"}
    assert "name" in {s.kind for s in extract(msg)}


def test_an_order_number_shaped_like_a_phone_is_an_identifier():
    spans = extract("My order number is 555-123-4567, thanks")
    assert [(s.kind, s.value) for s in spans] == [("identifier", "555-123-4567")]


def test_agent_kinds_add_times_and_counts_with_a_digit_but_no_dates():
    from maev_kit.facts._offline import AGENT_KINDS, STRONG_KINDS

    msg = "Refund RF-5521 of $49.00 appears in 3-5 business days; call us Friday at 10:00 am."
    got = [(s.kind, s.value) for s in extract(msg, kinds=AGENT_KINDS)]
    assert got == [("identifier", "RF-5521"), ("money", "$49.00"),
                   ("quantity", "3-5 business days"), ("time", "10:00 am")]
    assert {s.kind for s in extract(msg, kinds=STRONG_KINDS)} == {"identifier", "money"}
    assert extract("We will see you in two weeks.", kinds=AGENT_KINDS) == []  # no digit
