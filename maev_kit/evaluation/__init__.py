"""Score every conversation: handoffs, retention (with a judge), routing, loops, contracts.

``evaluate(source, options)`` is the one call behind ``maev score``, ``maev demo`` and the
report. It composes the stages of :mod:`maev_kit.evaluation.stages` — load → facts →
retention items → judging → metrics (:func:`score_conversation`, a
:class:`ConversationScore` per conversation) → result — into an :class:`EvaluationResult`,
which :meth:`~EvaluationResult.save` writes and :func:`load_result` reads back.
"""

from maev_kit.evaluation._ledger import fact_ledger
from maev_kit.evaluation._options import EvaluationOptions
from maev_kit.evaluation._pipeline import evaluate
from maev_kit.evaluation._result import EvaluationResult, JudgeErrorSummary, load_result
from maev_kit.evaluation._score import ConversationScore, score_conversation

__all__ = ["ConversationScore", "EvaluationOptions", "EvaluationResult", "JudgeErrorSummary",
           "evaluate", "fact_ledger", "load_result", "score_conversation"]
