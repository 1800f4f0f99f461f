"""The proposed key fact: what a proposer (offline rules, an LLM, a handoff's context) found in
the messages before a handoff, with the exact span it rests on."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["FACT_KINDS", "ProposedFact", "fact_id_for"]

#: Kinds of fact a proposer labels its proposals with.
FACT_KINDS: tuple[str, ...] = ("identifier", "quantity", "money", "date", "time", "email",
                               "phone", "name", "place", "context", "other")


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", re.sub(r"[^\w@.+\- ]", " ", text)).strip()


def fact_id_for(handoff_index: int, text: str) -> str:
    """A stable fact id from the handoff and the normalised fact text, so labels and reviews
    survive reruns: ``p-<10 hex digits>``.

    >>> fact_id_for(0, "Account is ACCT-4471") == fact_id_for(0, "account  is acct-4471!")
    True
    >>> fact_id_for(0, "x") == fact_id_for(1, "x")
    False
    """
    return _fact_id(handoff_index, _normalise(text))


def _fact_id(handoff_index: int, normalised_text: str) -> str:
    digest = hashlib.sha256(f"{handoff_index}\x1f{normalised_text}".encode()).hexdigest()
    return f"p-{digest[:10]}"


@dataclass(frozen=True)
class ProposedFact:
    """One key fact proposed for a handoff, before a person reviews it.

    ``value`` is the exact span of the source message the fact rests on (``"ACCT-4471"``), or
    None when there is none; ``source_turn_index`` is the ``turn_index`` of that message;
    ``proposer`` names what proposed it (``"offline"``, ``"llm:<model>"``, ``"context"``;
    several joined by ``+`` after a merge). ``reviewed`` is True once a person accepted, edited
    or added the fact (see :class:`~maev_kit.facts.FactReviewSession`). ``slot`` names what
    the value is about (``"departure time"``, ``"booking reference"``), taken from the words
    around the value or a tool argument's name; None when nothing names it. Two values of one
    kind (two clock times) about different slots are different facts, and a judge compares a
    value only with values for the same slot.
    """

    conversation_id: str
    handoff_index: int
    fact_id: str
    text: str
    value: str | None
    kind: str
    source_turn_index: int | None
    proposer: str
    reviewed: bool = False
    slot: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["slot"] is None:  # files written before slots existed read the same
            del d["slot"]
        return d
