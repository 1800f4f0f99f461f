"""The heuristic judge on the conversation view: only the receiving agent's entries are
evidence (its text, tool calls, tool results, the context it hands on), a contradiction is
another value for the same thing, and verdicts point at where the value was."""

from __future__ import annotations

from typing import Any

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace, UserMessage, build_retention_items
from maev_kit.judges import HeuristicJudge, LearnedJudge
from maev_kit.judges._learned import _agent_text

JUDGE = HeuristicJudge()


def items_of(*steps: tuple[Any, ...], facts: list[str] | dict[str, int], conv: str = "sup-1"):
    """Retention items of a conversation told step by step, one turn index each:
    ``("user", text)``, ``("→", from, to, context)`` or ``(agent, text, tool_calls?)``."""
    turns, handoffs, users = [], [], []
    for i, step in enumerate(steps):
        if step[0] == "user":
            users.append(UserMessage(step[1], i))
        elif step[0] == "→":
            handoffs.append(Handoff(step[1], step[2], None, dict(step[3]) if len(step) > 3
                                    else {}, turn_index=i))
        else:
            agent, text, *calls = step
            turns.append(AgentTurn(agent, "agent", text, list(calls[0]) if calls else [], i))
    trace = MultiAgentTrace(conv, turns, handoffs, users)
    listed = facts if isinstance(facts, dict) else {t: 0 for t in facts}
    exp = [{"conversation_id": conv, "key_facts": [
        {"fact_id": f"f{k}", "handoff_index": hi, "text": text}
        for k, (text, hi) in enumerate(listed.items(), start=1)]}]
    return build_retention_items([trace], exp)


def verdict(*steps: tuple[Any, ...], fact: str, hop: int = 0):
    item = next(it for it in items_of(*steps, facts={fact: hop}) if it.handoff_index == hop)
    return JUDGE.judge(item)


ACCOUNT = "The customer's account number is ACCT-4471-9920."
TRIAGE = (("user", "I was charged twice in March. My account is ACCT-4471-9920."),
          ("triage", "Thanks — passing you to billing."),
          ("→", "triage", "billing", {}))


def call(name: str, arguments: dict[str, Any], output: Any = None) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "arguments": arguments}
    if output is not None:
        c["output"] = output
    return c


# --------------------------------------------------------------------------------------------
# 1. Only the receiver's entries are evidence
# --------------------------------------------------------------------------------------------


def test_a_tool_argument_retains_the_fact_and_the_span_names_it():
    v = verdict(*TRIAGE, ("billing", "", [call("lookup_invoices", {
        "account_number": "ACCT-4471-9920", "month": "2025-03"})]), fact=ACCOUNT)
    assert v.label == "retained", v.evidence
    assert v.span is not None
    assert (v.span.kind, v.span.speaker, v.span.field, v.span.text) == (
        "tool_call", "billing", "arguments.account_number", "ACCT-4471-9920")
    assert v.span.turn_index == 3
    assert "ident 'ACCT-4471-9920' found in a tool call" in v.evidence


def test_a_value_only_in_the_tools_result_is_retained():
    v = verdict(*TRIAGE, ("billing", "I found your account; let me look at March.", [
        call("find_customer", {"email": "ana@example.com"},
             {"account_number": "ACCT-4471-9920", "status": "active"})]), fact=ACCOUNT)
    assert v.label == "retained", v.evidence
    assert (v.span.kind, v.span.field, v.span.text) == ("tool_result", "output",
                                                         "ACCT-4471-9920")


def test_the_context_handed_on_retains_the_fact():
    v = verdict(*TRIAGE, ("billing", "This is a technical issue, sending you on."),
                ("→", "billing", "technical_support", {"account_number": "ACCT-4471-9920"}),
                fact=ACCOUNT)
    assert v.label == "retained", v.evidence
    assert (v.span.kind, v.span.field) == ("handoff", "context.account_number")


def test_the_routers_closing_summary_is_not_the_receivers_retention():
    steps = (*TRIAGE, ("billing", "Let me check the duplicate charge for you."),
             ("triage", "Summary: account ACCT-4471-9920, billing reviewed the charge."))
    v = verdict(*steps, fact=ACCOUNT)
    assert v.label == "lost", v.evidence  # every agent's text counted before: retained
    assert v.span is None


def test_the_delegating_agents_resumed_turn_is_not_evidence():
    steps = (("user", "Please pay booking BK-1042 with my saved card."),
             ("orchestrator", "On it."),
             ("→", "orchestrator", "payments", {}),
             ("payments", "Which booking should I pay?"),
             ("orchestrator", "Booking BK-1042 is the one to pay."))
    v = verdict(*steps, fact="The booking reference is BK-1042.")
    assert v.label == "lost", v.evidence
    assert any(e.startswith("re-ask:") for e in v.evidence)
    assert v.span is not None and v.span.speaker == "payments" and v.span.kind == "text"
    assert v.span.text == "Which booking should I pay?"


def test_after_the_user_gives_the_value_again_the_receivers_mention_does_not_count():
    steps = (*TRIAGE, ("billing", "What's your account number, please?"),
             ("user", "I already said: ACCT-4471-9920."),
             ("billing", "Thanks, ACCT-4471-9920 found.",
              [call("lookup_invoices", {"account_number": "ACCT-4471-9920"})]))
    v = verdict(*steps, fact=ACCOUNT)
    assert v.label == "lost", v.evidence  # before: retained (the later mention counted)
    assert v.span is not None and v.span.text == "What's your account number, please?"
    assert any(e.startswith("the user gave it again") for e in v.evidence)


def test_a_mention_before_the_user_confirms_it_still_counts():
    steps = (*TRIAGE, ("billing", "I have ACCT-4471-9920 open."),
             ("user", "Yes, ACCT-4471-9920."), ("billing", "Refund started."))
    assert verdict(*steps, fact=ACCOUNT).label == "retained"


def test_saying_it_has_no_account_beats_the_context_it_hands_on():
    steps = (*TRIAGE, ("billing", "I don't see an account attached to this chat yet."),
             ("user", "ok"), ("billing", "Sending you to technical support."),
             ("→", "billing", "technical_support", {"account_number": "ACCT-4471-9920"}))
    v = verdict(*steps, fact=ACCOUNT)
    assert v.label == "lost", v.evidence
    assert any(e.startswith("says it lacks it") for e in v.evidence)


# --------------------------------------------------------------------------------------------
# 2. Contradicted only by another value for the same thing
# --------------------------------------------------------------------------------------------

VISIT = "A technician visit is booked for Tuesday at 10:00 am."
TECH = (("user", "My technician is booked for Tuesday at 10:00 am, account ACCT-5949."),
        ("triage", "Transferring you to technical support."),
        ("→", "triage", "technical_support", {"account_number": "ACCT-5949"}))


@pytest.mark.parametrize("fact, said", [
    # negations of something else
    (ACCOUNT, "No, I don't need your account number again: ACCT-4471-9920 is on file."),
    (ACCOUNT, "ACCT-4471-9920 is fine — no, that account doesn't need a callback, not a "
              "problem."),
    (VISIT, "Your visit on Tuesday at 10:00 am stands, no need to book the technician again."),
    ("The customer wants a callback at 3pm.",
     "Your callback is set for 3pm, so you don't need another callback."),
])
def test_a_negation_never_contradicts_a_value_that_is_there(fact, said):
    v = verdict(*TRIAGE, ("billing", said), fact=fact)
    assert v.label == "retained", v.evidence
    assert v.span is not None and v.span.kind == "text"


def test_an_opening_hour_is_not_the_appointments_time():
    v = verdict(*TECH, ("technical_support",
                        "Your visit is still on Tuesday. Our desk opens at 9:00 am."), fact=VISIT)
    assert v.label == "retained", v.evidence  # before: contradicted (9:00 vs 10:00)
    assert not any("conflict" in e for e in v.evidence)


def test_an_invoice_number_is_not_the_account_number():
    fact = "The account number is 4471-9920."
    steps = (("user", "My account number is 4471-9920 and I was charged twice."),
             ("triage", "Passing you to billing."), ("→", "triage", "billing", {}))
    said = verdict(*steps, ("billing", "Invoice 5512-0031 shows the duplicate charge."),
                   fact=fact)
    assert said.label == "lost", said.evidence  # before: contradicted
    looked_up = verdict(*steps, ("billing", "I see invoice 5512-0031 with two charges.", [
        call("lookup_invoices", {"account_number": "4471-9920"},
             {"invoices": [{"invoice_number": "5512-0031", "amount": 49.99}]})]), fact=fact)
    assert looked_up.label == "retained", looked_up.evidence
    assert looked_up.span.field == "arguments.account_number"


def test_a_value_the_conversation_already_holds_is_not_a_conflict():
    fact = "The account number is 4471-9920."
    steps = (("user", "Account 4471-9920; the charge is on invoice 5512-0031."),
             ("triage", "Passing you to billing."), ("→", "triage", "billing", {}),
             ("billing", "Looking at 5512-0031 now."))
    v = verdict(*steps, fact=fact)
    assert v.label == "lost", v.evidence  # before: contradicted


def test_a_reference_the_tool_created_is_not_a_conflict():
    fact = "The booking reference is K7Q-2291."
    steps = (("user", "Cancel booking K7Q-2291 and refund me."),
             ("triage", "Passing you to refunds."), ("→", "triage", "refunds", {}))
    refund = call("issue_refund", {"amount": "49.99"},
                  {"refund_reference": "R4M-8812", "status": "issued"})
    for said in ("Done — your refund reference is R4M-8812.", "Done: R4M-8812."):
        v = verdict(*steps, ("refunds", said, [refund]), fact=fact)
        assert v.label == "lost", (said, v.evidence)  # before: contradicted


def test_another_value_in_a_tool_result_alone_does_not_contradict():
    fact = "The booking reference is BK-1."
    steps = (("user", "Pay booking BK-1 please."), ("triage", "One moment."),
             ("→", "triage", "payments", {}))
    lookup = call("find_booking", {"last_name": "Silva"}, {"booking_ref": "BK-2"})
    v = verdict(*steps, ("payments", "Let me look that up.", [lookup]), fact=fact)
    assert v.label == "lost", v.evidence
    # …until the receiver states it
    v = verdict(*steps, ("payments", "Let me look that up.", [lookup]),
                ("payments", "Your booking BK-2 is paid."), fact=fact)
    assert v.label == "contradicted", v.evidence
    assert (v.span.kind, v.span.text) == ("text", "BK-2")


# true contradictions are still caught, and point at the other value


def test_another_day_for_the_appointment_contradicts():
    v = verdict(*TECH, ("technical_support", "Your appointment is on Thursday."), fact=VISIT)
    assert v.label == "contradicted", v.evidence
    assert (v.span.kind, v.span.speaker, v.span.field, v.span.text) == (
        "text", "technical_support", "text", "Thursday")
    assert "weekday conflict: fact 'Tuesday', messages 'Thursday'" in v.evidence


def test_paying_another_booking_contradicts_even_when_the_text_names_the_right_one():
    fact = "The booking reference is BK-1."
    steps = (("user", "Pay booking BK-1 please."), ("triage", "One moment."),
             ("→", "triage", "payments", {}))
    for said in ("", "Paying booking BK-1 now."):
        v = verdict(*steps, ("payments", said, [call("pay", {"booking_ref": "BK-2"},
                                                     {"status": "paid"})]), fact=fact)
        assert v.label == "contradicted", (said, v.evidence)
        assert (v.span.kind, v.span.field, v.span.text) == (
            "tool_call", "arguments.booking_ref", "BK-2")
        assert "ident conflict: fact 'BK-1', arguments.booking_ref 'BK-2'" in v.evidence


def test_a_wrong_value_said_contradicts_even_when_the_context_handed_on_is_right():
    steps = (*TRIAGE, ("billing", "OK, account ACCT-4471-9902, got it."),
             ("user", "No, ACCT-4471-9920."),
             ("→", "billing", "technical_support", {"account_number": "ACCT-4471-9920"}))
    v = verdict(*steps, fact=ACCOUNT)
    assert v.label == "contradicted", v.evidence
    assert v.span.text == "ACCT-4471-9902"


def test_negating_the_facts_own_statement_contradicts():
    steps = (("user", "I already turned on two-factor, still locked out."),
             ("triage", "Passing you to security."), ("→", "triage", "security", {}))
    v = verdict(*steps, ("security", "Since you haven't turned on two-factor yet, start there."),
                fact="The customer has already turned on two-factor.")
    assert v.label == "contradicted", v.evidence


# --------------------------------------------------------------------------------------------
# 3. Later handoffs, the learned judge's input
# --------------------------------------------------------------------------------------------


def test_each_hop_reads_its_own_receiver():
    steps = (*TRIAGE, ("billing", "", [call("lookup_invoices", {
        "account_number": "ACCT-4471-9920"})]),
             ("→", "billing", "technical_support", {}),
             ("technical_support", "What is your account number?"))
    items = items_of(*steps, facts=[ACCOUNT])
    labels = {it.handoff_index: JUDGE.judge(it).label for it in items}
    assert labels == {0: "retained", 1: "lost"}


def test_the_learned_judge_reads_the_receivers_entries_tool_calls_included():
    steps = (*TRIAGE, ("billing", "", [call("lookup_invoices", {
        "account_number": "ACCT-4471-9920"})]),
             ("triage", "Anything else, ACCT-4471-9920?"))
    item = items_of(*steps, facts=[ACCOUNT])[0]
    text = _agent_text(item)
    assert 'lookup_invoices(account_number="ACCT-4471-9920")' in text
    assert "Anything else" not in text
    assert LearnedJudge().version.startswith("3-")


def test_entries_without_fields_are_read_by_their_key_value_text():
    """Entries read back from a rendered prompt carry their kind but not their fields."""
    from maev_kit.retention import RetentionItem
    from maev_kit.traces import Message

    def judge(fact, content, kind="tool_call"):
        entry = Message("payments", content, 3, kind=kind, tool="pay")
        return JUDGE.judge(RetentionItem("c/h0/f1", "c", 0, "f1", fact, (), (entry,),
                                         "triage", "payments"))

    v = judge("The booking reference is BK-1.", 'pay(booking_ref="BK-2", amount="40")')
    assert (v.label, v.span.field, v.span.text) == ("contradicted", "arguments.booking_ref",
                                                    "BK-2")
    v = judge(ACCOUNT, '→ billing(account_number="ACCT-4471-9920")', kind="handoff")
    assert (v.label, v.span.field) == ("retained", "context.account_number")
