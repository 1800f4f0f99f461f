"""Criteria: your own questions about conversations, handoffs, turns or agents, as data.

A :class:`Criterion` names a question and its answers; :meth:`Criterion.items` gives one
:class:`CriterionItem` per unit the question is asked of, each with a stable ``item_id``.
Criteria load from TOML (:func:`load`) or by name (:func:`builtin`, :func:`register`).

A judge of a criterion is a Python callable ``judge(item) -> label`` (:class:`CallableJudge`),
``"module:function"``, or a model asked the versioned criterion prompt
(:class:`LLMCriterionJudge`); :func:`judge_criterion` runs one over items through the kit's
request engine (retries, cache, accounting). ``maev_kit.calibrate`` and
``maev_kit.evaluate(..., criteria=[...])`` take criteria too.
"""

from __future__ import annotations

from maev_kit.criteria._criterion import SCOPES, Criterion, CriterionItem, Scope
from maev_kit.criteria._judge import (
    CallableJudge,
    CriterionRun,
    CriterionVerdict,
    LLMCriterionJudge,
    judge_criterion,
)
from maev_kit.criteria._load import builtin, builtins, load, register, resolve
from maev_kit.criteria._prompt import CRITERION_PROMPTS, criterion_prompt

__all__ = ["CRITERION_PROMPTS", "SCOPES", "CallableJudge", "Criterion", "CriterionItem",
           "CriterionRun", "CriterionVerdict", "LLMCriterionJudge", "Scope", "builtin",
           "builtins", "criterion_prompt", "judge_criterion", "load", "register", "resolve"]

# ---- built in: failure attribution (Who&When) and the MAST failure modes -------------------
from maev_kit.criteria._attribution import (  # noqa: E402
    ATTRIBUTION,
    BASELINES,
    attribution_labels,
    attribution_leaderboard,
    failure_attribution,
    parse_attribution,
)
from maev_kit.criteria._mast import (  # noqa: E402
    MAST_CATEGORIES,
    MAST_SOURCE,
    MastFindings,
    find_mast_modes,
    mast_mode,
    mast_modes,
)

__all__ = sorted([*__all__, "ATTRIBUTION", "BASELINES", "MAST_CATEGORIES", "MAST_SOURCE",
                  "MastFindings", "attribution_labels", "attribution_leaderboard",
                  "failure_attribution", "find_mast_modes", "mast_mode", "mast_modes",
                  "parse_attribution"], key=lambda s: (not s.isupper(), s))
