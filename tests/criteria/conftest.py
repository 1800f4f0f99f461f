"""Traces and a criterion shared by the criteria tests."""

import pytest

from maev_kit.criteria import Criterion
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace, UserMessage


def make_traces(n: int = 12, *, handoffs: bool = True) -> list[MultiAgentTrace]:
    """``n`` support conversations; every third one's final answer names no amount."""
    out = []
    for i in range(n):
        grounded = i % 3 != 0
        final = (f"Your refund of {10 + i} EUR is on its way." if grounded
                 else "It is sorted, trust me.")
        turns = [AgentTurn("triage", "router", "Let me pass you to billing.", turn_index=1),
                 AgentTurn("billing", "specialist",
                           final, tool_calls=[{"name": "refund", "arguments": {"amount": 10 + i},
                                               "output": f"refunded {10 + i} EUR"}],
                           turn_index=3 if handoffs else 2)]
        hs = [Handoff("triage", "billing", turn_index=2)] if handoffs else []
        out.append(MultiAgentTrace(f"conv-{i:02d}", turns=turns, handoffs=hs,
                                   user_messages=[UserMessage("I was charged twice.", 0)]))
    return out


@pytest.fixture
def traces():
    return make_traces()


@pytest.fixture
def grounded():
    return Criterion("grounded", scope="conversation", labels=("yes", "no"), positive="yes",
                     question="Is the final answer grounded in a tool result?",
                     guidelines="No when it names no amount a tool returned.")


def says_amount(item):
    """A callable judge: 'yes' when the last turn names an amount."""
    return "yes" if "EUR" in item.trace.turns[-1].message else "no"


def blames_on_amount(item):
    """A failure-attribution judge: billing at its turn when the final answer names an amount,
    else triage at the first turn."""
    return "billing@1" if "EUR" in item.trace.turns[-1].message else "triage@0"
