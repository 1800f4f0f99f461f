import pytest

from maev_kit.judges import HeuristicJudge

from .conftest import make_item

JUDGE = HeuristicJudge()


def judge(fact, *said, **kw):
    return JUDGE.judge(make_item(fact, *said, **kw))


CASES = [
    # identifiers are whole tokens: a neighbour id conflicts, inner digits never match
    ("contradicted", "Account number is ACCT-4471", "I've opened ACCT-4472 for you."),
    ("retained", "Account number is ACCT-4471", "Refund for acct-4471 is on its way."),
    ("lost", "Ticket 4471 is open", "Account ACCT-4471 is open."),
    ("retained", "Account number is ACCT-4471", "Your account 4471 is open."),
    ("retained", "Account number is ACCT-6487", "I'm in your account now (number ending 487)."),
    ("lost", "Account number is ACCT-6487", "You have 487 points."),
    ("contradicted", "The cluster runs in eu-west-1", "I deployed it to us-east-1."),
    ("retained", "The cluster runs in eu-west-1", "Deploying to eu-west-1 now."),
    ("lost", "The cluster runs in eu-west-1", "The cluster has 1 node in the west."),
    # weekdays, dates, times
    ("contradicted", "The meeting is on Tuesday", "See you on Thursday then."),
    ("retained", "The meeting is on Tuesday", "Just to confirm, your meeting is Tuesday, right?"),
    ("retained", "Delivery on March 5", "Delivery is set for 2024-03-05."),
    ("contradicted", "Delivery on March 5", "Delivery is set for March 7."),
    ("retained", "Callback at 3pm", "I'll call you back at 15:00."),
    ("contradicted", "Callback at 3pm", "I'll call you back at 4pm."),
    # money, percent, numbers with units and number words, e-mails
    ("contradicted", "The refund is $120", "I've issued a refund of $150."),
    ("retained", "The refund is $120", "I've issued a refund of 120 dollars."),
    ("retained", "Discount is 15%", "Applying your 15 percent discount."),
    ("contradicted", "Discount is 15%", "Applying your 20% discount."),
    ("retained", "Customer ordered three laptops", "Your order of 3 laptops has shipped."),
    ("contradicted", "Customer ordered three laptops", "Your order of two laptops has shipped."),
    ("contradicted", "Email is ana@example.com", "I'll write to ana@example.org."),
    ("retained", "Email is ana@example.com", "I'll write to Ana@Example.com today."),
    # replacement cues
    ("contradicted", "Account number is ACCT-4471", "I'll use ACCT-4472 instead of ACCT-4471."),
    ("contradicted", "The meeting is on Tuesday",
     "I switched the meeting to Thursday instead of Tuesday."),
    ("retained", "The meeting is on Tuesday", "I moved the meeting from Thursday to Tuesday."),
    ("retained", "The refund requested is $19.99", "The 19.99 is being credited back to you."),
    ("retained", "The team needs 12 seats", "I've noted 12 seats."),
    ("contradicted", "The customer's card ends in 5063", "I see the card ending 5036."),
    ("retained", "The customer's card ends in 5063", "It goes back to your Visa (…5063)."),
    # a different name or period in the same frame
    ("contradicted", "The customer is on the Pro monthly plan",
     "On the Plus monthly plan that's covered."),
    ("contradicted", "The customer is on the Family annual plan",
     "On the Family monthly plan that's covered."),
    ("contradicted", "The customer's name is Ana Silva", "Thanks, Ana Sousa."),
    # re-asks
    ("lost", "Account number is ACCT-4471", "Could you give me your account number?"),
    ("lost", "The meeting is on Tuesday", "What day works for the meeting?"),
    ("lost", "The customer's name is Ana Silva", "May I have your name please?"),
    ("lost", "The customer's e-mail is ana@example.com", "What's your email address?"),
    ("lost", "The customer has already tried two different cards",
     "Have you tried two different cards?"),
    ("retained", "The customer has already tried two different cards",
     "Have you tried two different cards? Ah, you tried two different cards. Noted."),
    ("retained", "The customer has already tried two different cards",
     "Since you tried two different cards, I'll check the gateway."),
    # closed word classes and antonyms
    ("contradicted", "The refund was approved", "Unfortunately your refund was denied."),
    ("retained", "The refund was approved", "Good news: the refund is approved."),
    ("contradicted", "The ticket is open", "This ticket is closed."),
    ("retained", "Change the plan", "I will change the plan; the plane tickets are separate."),
    # proper nouns, polarity, topic overlap
    ("retained", "The customer's name is Ana Silva", "Thanks Ana Silva, let me check."),
    ("contradicted", "The customer has a premium plan", "You don't have a premium plan."),
    ("retained", "Customer wants a refund for a broken blender",
     "I'm processing the refund for your broken blender."),
    ("lost", "Customer wants a refund for a broken blender", "Is there anything else?"),
]


@pytest.mark.parametrize("expected, fact, said", CASES, ids=[f"{c[0]}:{c[2][:30]}" for c in CASES])
def test_cases(expected, fact, said):
    v = judge(fact, said)
    assert v.label == expected, v.evidence
    assert v.evidence and v.rationale and v.error is None


def test_evidence_names_the_slot():
    v = judge("Account number is ACCT-4471", "I've opened ACCT-4472 for you.")
    assert v.evidence == ("ident conflict: fact 'ACCT-4471', messages 'ACCT-4472'",)
    v = judge("The meeting is on Tuesday", "See you on Thursday then.")
    assert "weekday conflict: fact 'Tuesday', messages 'Thursday'" in v.evidence
    v = judge("Account number is ACCT-4471", "Could you give me your account number?")
    assert any(e.startswith("re-ask:") for e in v.evidence)


def test_only_agents_count_a_user_repeating_the_value_is_still_lost():
    v = judge("Account number is ACCT-4471", "Could you give me your account number?",
              user_says=("It's ACCT-4471",))
    assert v.label == "lost"
    assert judge("Account number is ACCT-4471", user_says=("ACCT-4471",)).label == "lost"


def test_no_message_after_the_handoff_is_lost():
    v = judge("Account number is ACCT-4471")
    assert v.label == "lost" and "no agent message after the handoff" in v.evidence


def test_a_value_anywhere_in_the_window_counts():
    v = judge("Account number is ACCT-4471", "Hello!", "Looking at ACCT-4471 now.")
    assert v.label == "retained"


def test_signals_have_the_same_numeric_keys_for_every_item():
    items = [make_item(c[1], c[2]) for c in CASES] + [make_item("x")]
    keys = {tuple(sorted(JUDGE.signals(it))) for it in items}
    assert len(keys) == 1
    assert all(isinstance(v, float) for it in items for v in JUDGE.signals(it).values())
    s = JUDGE.signals(make_item("Account number is ACCT-4471", "I see ACCT-4472."))
    assert s["hard_conflict"] == 1.0 and s["n_hard_slots"] == 1.0


def test_judge_items_keeps_order_and_is_deterministic():
    items = [make_item(c[1], c[2], fact_id=f"f{i}") for i, c in enumerate(CASES)]
    a = JUDGE.judge_items(items)
    assert [v.item_id for v in a] == [it.item_id for it in items]
    assert a == HeuristicJudge().judge_items(list(items))
    assert HeuristicJudge().version == JUDGE.version and JUDGE.name == "heuristic"
    assert JUDGE.offline is True


def test_odd_text_does_not_break_it():
    for text in ["", "   ", "???", "<<<>>>", "é" * 1000, "1" * 500, "ACCT-" * 100,
                 "a@b.c @@ $$$ 99% 12:99 2024-13-45 31/31/31", "\x00\ud800"]:
        assert judge(text, text).label in ("retained", "lost", "contradicted")
