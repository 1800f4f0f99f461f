"""Key facts proposed from the trace itself, for traces that come without expectations.

``propose_facts(traces, method="offline")`` finds, for each handoff, what the user said before
it that the receiving agent should keep (account numbers, amounts, dates, names…);
``method="context"`` turns each handoff's ``context_passed`` into facts. The proposals are
:class:`ProposedFact` objects with a stable ``fact_id``; a person reviews them, then
:func:`save_facts_as_expectations` writes them as key facts that scoring reads.

Importing this package loads the standard library only.
"""

from typing import TYPE_CHECKING

from maev_kit.facts._io import (
    facts_to_expectations,
    load_facts,
    save_facts,
    save_facts_as_expectations,
)
from maev_kit.facts._model import FACT_KINDS, ProposedFact, fact_id_for
from maev_kit.facts._propose import (
    METHODS,
    FactNote,
    FactProposal,
    first_statements,
    merge_facts,
    propose_facts,
)
from maev_kit.facts._supersede import supersede_user_changes

__all__ = [
    "FACT_KINDS",
    "METHODS",
    "DecisionFileError",
    "ExpectationsExport",
    "ExpectationsFileError",
    "FactNote",
    "FactProposal",
    "FactReviewSession",
    "FactReviewWarning",
    "FactUnderReview",
    "HandoffUnderReview",
    "ProposedFact",
    "ReviewDecision",
    "create_labeled_set",
    "fact_id_for",
    "facts_to_expectations",
    "first_statements",
    "load_facts",
    "merge_facts",
    "propose_facts",
    "save_facts",
    "save_facts_as_expectations",
    "supersede_user_changes",
]

_REVIEW_NAMES = frozenset({"DecisionFileError", "ExpectationsExport", "ExpectationsFileError",
                           "FactReviewSession", "FactReviewWarning", "FactUnderReview",
                           "HandoffUnderReview", "ReviewDecision"})

if TYPE_CHECKING:  # what __getattr__ loads, for type checkers
    from maev_kit.facts._review import FactReviewSession, FactUnderReview, HandoffUnderReview


def __getattr__(name: str):  # these need pydantic: loaded when first used
    if name == "create_labeled_set":
        from maev_kit.facts._labeled_set import create_labeled_set

        return create_labeled_set
    if name in _REVIEW_NAMES:
        from maev_kit.facts import _review

        return getattr(_review, name)
    raise AttributeError(f"module 'maev_kit.facts' has no attribute {name!r}")
