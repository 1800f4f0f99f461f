"""Retention judges: the LLM judge's versioned prompts and reply parser, and offline judges.

A judge has a ``name``, a ``version`` (changes whenever its prompt or rules change) and
``offline``. An LLM judge (:class:`RetentionJudge`) builds one request per handoff and parses the
reply; an offline judge (:class:`HeuristicJudge`, :class:`LearnedJudge`) answers with
``judge_items``. :func:`resolve_judge` turns what a user names (``"heuristic"``,
``"gpt-4o-mini"``...) into a judge and its backend; :func:`get_judge` builds a judge by its name.

>>> from maev_kit.judges import get_judge
>>> [get_judge(n).offline for n in ("heuristic", "retention-v2")]
[True, False]

The learned judge (``"tfidf-logreg"``) must be fit on a training split before judging and
refuses items it was trained on; see :func:`get_judge` for the calibration recipe.

:class:`PromptTemplate` reads your own prompt (``PromptTemplate.from_file("mine.txt")``), usable
wherever a prompt id is; ``RetentionJudge(..., examples=k)`` shows ``k`` human-labeled items of
another split as worked examples (:meth:`RetentionJudge.bind_examples`). See docs/prompts.md.
"""

from maev_kit.judges._answer import answer_retention_prompt
from maev_kit.judges._heuristic import HeuristicJudge, changed_value
from maev_kit.judges._learned import LearnedJudge, NotFittedError, TrainingOverlapError
from maev_kit.judges._llm import ExampleOverlapError, RetentionJudge
from maev_kit.judges._parse import parse_retention_reply
from maev_kit.judges._prompts import PROMPT_IDS, PromptTemplate, escape_fence
from maev_kit.judges._protocol import Judge, LLMJudge, OfflineJudge
from maev_kit.judges._registry import JUDGE_NAMES, OFFLINE_JUDGES, get_judge, resolve_judge
from maev_kit.judges._verdict import Verdict

__all__ = [
    "ExampleOverlapError",
    "HeuristicJudge",
    "JUDGE_NAMES",
    "Judge",
    "LLMJudge",
    "LearnedJudge",
    "NotFittedError",
    "OFFLINE_JUDGES",
    "OfflineJudge",
    "PROMPT_IDS",
    "PromptTemplate",
    "RetentionJudge",
    "TrainingOverlapError",
    "Verdict",
    "answer_retention_prompt",
    "changed_value",
    "escape_fence",
    "get_judge",
    "parse_retention_reply",
    "resolve_judge",
]
