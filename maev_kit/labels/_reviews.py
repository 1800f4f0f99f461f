"""The fact-review decisions file, ``fact_reviews.jsonl``: its line format and its reader.

People's decisions on proposed key facts (accept, reject, edit, add, undo) are human
judgements kept in a labeled set's folder beside its labels, so the format lives here, in the
data layer, where both the review session (:mod:`maev_kit.facts`, which writes the file) and
the labels (which say why a label's fact is gone) read it; the review rules themselves stay
in :class:`~maev_kit.facts.FactReviewSession`. docs/formats.md, "Fact-review decisions".
"""

from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from maev_kit.errors import LabelValidationError, Problem
from maev_kit.internal import display_name, read_append_log, validated_lines

__all__ = ["DECISIONS", "DecisionFileError", "ReviewDecision", "read_decisions"]

#: What a reviewer can decide about a fact.
DECISIONS: tuple[str, ...] = ("accept", "reject", "edit", "add", "undo")


class DecisionFileError(LabelValidationError):
    """A decisions file has a malformed line; ``.problems`` names file:line › field."""

    kind = "review decisions"


class ReviewDecision(BaseModel):
    """One line of the decisions file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    fact_id: str
    conversation_id: str
    handoff_index: int = Field(ge=0, strict=True)
    reviewer: str
    decision: Literal["accept", "reject", "edit", "add", "undo"]
    text: str | None = None
    value: str | None = None
    created_at: str = ""

    @field_validator("fact_id", "conversation_id", "reviewer")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be blank")
        return v

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.conversation_id, self.handoff_index, self.fact_id)


def read_decisions(path: str | os.PathLike[str], *, name: str | None = None
                   ) -> tuple[list[ReviewDecision], Problem | None]:
    """Every decision line of a decisions file in file order, and its torn last line (or None).

    Raises
    ------
    DecisionFileError
        When any line other than a torn last line is malformed (every problem listed, each as
        ``file:line › field: message``).
    """
    name = name or display_name(path)
    lines, torn = read_append_log(path, name=name)
    out: list[ReviewDecision] = []
    problems: list[Problem] = []
    for line, rec in validated_lines(lines, ReviewDecision.model_validate, name, problems):
        if rec.decision in ("edit", "add") and not (rec.text or "").strip():
            problems.append(Problem(name, line, "text",
                                    f"an {rec.decision!r} decision needs the fact's text"))
            continue
        out.append(rec)
    if problems:
        raise DecisionFileError(problems)
    return out, torn
