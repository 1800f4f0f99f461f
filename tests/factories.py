"""Small builders shared by tests (importable as `factories`: tests/ is on pytest's pythonpath)."""

from maev_kit import AgentTurn, Handoff, HandoffReason, MultiAgentTrace


def make_trace() -> MultiAgentTrace:
    return MultiAgentTrace(
        "c-1",
        turns=[AgentTurn("triage", "router", "Routing you", turn_index=1),
               AgentTurn("billing", "specialist", "Billing here", turn_index=3),
               AgentTurn("tech", "specialist", "Tech here", turn_index=5),
               AgentTurn("billing", "specialist", "Back in billing", turn_index=7)],
        handoffs=[Handoff("triage", "billing", HandoffReason.SPECIALIZATION, turn_index=2),
                  Handoff("billing", "tech", "escalation", {"error_code": "E42"}, 4),
                  Handoff("tech", "billing", None, turn_index=6)],
        user_messages=["My bill is wrong"],
    )
