"""Helpers to build retention items for judge tests."""

from __future__ import annotations

import pytest

from maev_kit.retention import RetentionItem
from maev_kit.traces import Message


def make_item(fact: str, *agent_says: str, user_says: tuple[str, ...] = (), conv: str = "c-1",
              handoff: int = 0, fact_id: str = "f1") -> RetentionItem:
    after = [Message("billing", s, 10 + i) for i, s in enumerate(agent_says)]
    after += [Message("user", s, 30 + i, True) for i, s in enumerate(user_says)]
    return RetentionItem(f"{conv}/h{handoff}/{fact_id}", conv, handoff, fact_id, fact,
                         (Message("triage", "before the handoff", 1),), tuple(after),
                         "triage", "billing")


@pytest.fixture
def three_items() -> list[RetentionItem]:
    says = ("Refund for ACCT-4471 started.",)
    return [make_item("Account is ACCT-4471", *says, fact_id="f1"),
            make_item("Delivery is on Tuesday", *says, fact_id="f2"),
            make_item("E-mail is ana@example.com", *says, fact_id="f3")]
