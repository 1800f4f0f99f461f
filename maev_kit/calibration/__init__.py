"""Calibrate retention judges against human labels and pin the winner in a judge card.

:func:`calibrate` runs every judge × prompt variant on the labeled items and returns a
:class:`CalibrationResult` (leaderboard with κ and CI, the human ceiling, confusions,
disagreements, a recommendation). :class:`JudgeCard` records what was calibrated and warns
when it no longer matches. :func:`next_items_to_label` says where labels help most;
:func:`corrected_prevalence` corrects a judge's label shares for its known errors;
:func:`fit_on_other_splits` fits a judge that learns from labels on every split but the scored
one. :func:`align` searches for a better judge prompt on the dev split and tests the winner
once on the test split; :func:`compare_prompts` shows why one prompt beats another.
:func:`probe_judge` runs robustness probes on a judge (does its verdict move when the judged
text changes in a way that must not change it?). :func:`check_card` is the drift gate: it
re-runs a card's judge on the card's labeled items and returns a :class:`DriftReport`
(PASS / FAIL) comparing κ with what the card recorded; :func:`check_criterion_card` does it for
a card calibrated on a criterion (a ``module:function`` judge or a model). ``calibrate`` also
takes a criterion's items (:mod:`maev_kit.criteria`).
"""

from maev_kit.calibration._active import next_items_to_label
from maev_kit.calibration._align import AlignmentResult, Budget, align
from maev_kit.calibration._calibrate import calibrate
from maev_kit.calibration._card import JudgeCard, JudgeCardMismatchWarning, judge_from_card
from maev_kit.calibration._check import DriftReport, check_card
from maev_kit.calibration._compare_prompts import PromptComparison, compare_prompts
from maev_kit.calibration._criteria import CriterionDrift, check_criterion_card
from maev_kit.calibration._human import fit_on_other_splits, load_human_labels
from maev_kit.calibration._prevalence import corrected_prevalence
from maev_kit.calibration._probes import PROBES, ProbeReport, ProbeResult, probe_judge
from maev_kit.calibration._result import (
    CalibrationResult,
    DegenerateLabelsError,
    JudgeMeta,
    calibration_from_runs,
)

__all__ = [
    "AlignmentResult",
    "Budget",
    "CalibrationResult",
    "CriterionDrift",
    "DegenerateLabelsError",
    "DriftReport",
    "JudgeCard",
    "JudgeCardMismatchWarning",
    "JudgeMeta",
    "PROBES",
    "ProbeReport",
    "ProbeResult",
    "PromptComparison",
    "align",
    "calibrate",
    "calibration_from_runs",
    "check_card",
    "check_criterion_card",
    "compare_prompts",
    "corrected_prevalence",
    "fit_on_other_splits",
    "judge_from_card",
    "load_human_labels",
    "next_items_to_label",
    "probe_judge",
]
