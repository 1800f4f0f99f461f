"""Small hand-made conversations shared by the evaluation tests."""

from maev_kit import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.expectations import load_expectations


def two_conversations():
    good = MultiAgentTrace("good", turns=[
        AgentTurn("triage", "router", "Your account is ACCT-4471; sending you to billing.", turn_index=1),
        AgentTurn("billing", "specialist", "I have account ACCT-4471 open and the refund of $49.99 is on its way.", turn_index=3)],
        handoffs=[Handoff("triage", "billing", "specialization", {"account_number": "ACCT-4471"}, 2)],
        user_messages=["I was double charged $49.99 on ACCT-4471"])
    bad = MultiAgentTrace("bad", turns=[
        AgentTurn("triage", "router", "Sending you on.", turn_index=1),
        AgentTurn("tech", "specialist", "What is your account number?", turn_index=3),
        AgentTurn("billing", "specialist", "Hello again.", turn_index=5),
        AgentTurn("tech", "specialist", "Back to me.", turn_index=7),
        AgentTurn("billing", "specialist", "And back to billing.", turn_index=9)],
        handoffs=[Handoff("triage", "tech", "fallback", {}, 2), Handoff("tech", "billing", None, {}, 4),
                  Handoff("billing", "tech", None, {}, 6), Handoff("tech", "billing", None, {}, 8)],
        user_messages=["Refund please, account ACCT-4471"])
    exps = load_expectations([
        {"conversation_id": "good",
         "handoffs": [{"expected_target": "billing", "expected_reason": "specialization",
                       "required_context_keys": ["account_number"]}],
         "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": "Account number is ACCT-4471"}],
         "routing": [{"user_input": "double charged", "correct_agent": "billing"}]},
        {"conversation_id": "bad",
         "handoffs": [{"expected_target": "billing", "expected_reason": "specialization",
                       "required_context_keys": ["account_number"]}],
         "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": "Account number is ACCT-4471"}],
         "routing": [{"user_input": "refund", "correct_agent": "billing"}]}])
    return [good, bad], exps
