"""Score every conversation: handoffs, retention (with a judge), routing, loops, contracts.

``evaluate(...)`` is the one call behind ``maev score``, ``maev demo`` and the report. It runs
four stages: load the traces and expectations, judge every key fact, score each conversation
(:func:`score_conversation`, which returns a :class:`ConversationScore`) and aggregate into an
:class:`EvaluationResult`.
"""

from maev_kit.evaluation._ledger import fact_ledger
from maev_kit.evaluation._pipeline import evaluate
from maev_kit.evaluation._result import EvaluationResult, JudgeErrorSummary
from maev_kit.evaluation._score import ConversationScore, score_conversation

__all__ = ["ConversationScore", "EvaluationResult", "JudgeErrorSummary", "evaluate",
           "fact_ledger", "score_conversation"]
