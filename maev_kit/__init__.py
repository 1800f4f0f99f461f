"""maev-kit: evaluate how the agents of a multi-agent LLM system coordinate.

Scores handoffs, information retention, routing, circular handoffs and handoff contracts from
conversation traces, and calibrates the LLM judge of retention against human labels.

``import maev_kit`` stays light: heavy parts (litellm, ipywidgets, matplotlib, scikit-learn)
load only when the names that need them are first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from maev_kit import _views
from maev_kit._version import __version__


def _trace_timeline(trace: Any) -> str:
    """A trace's timeline, the HTML view loaded on first use (the data model never imports
    its view; the package root, above every layer, may)."""
    from maev_kit.rendering.internal import trace_html

    return trace_html(trace)


_views.register("trace", _trace_timeline)


def _log_to_mlflow(result: Any, **keywords: Any) -> str:
    """``EvaluationResult.log_to_mlflow``: the logger of the reporting layer (it builds the HTML
    report), loaded on first use, so the evaluation layer never imports reporting and
    ``import maev_kit`` never imports mlflow."""
    from maev_kit.reporting.internal import log_to_mlflow

    return log_to_mlflow(result, **keywords)


_views.provide("log_to_mlflow", _log_to_mlflow)

# name -> module that defines it. Loaded on first attribute access (PEP 562).
_LAZY: dict[str, str] = {
    # traces
    "AgentTurn": "maev_kit.traces",
    "Handoff": "maev_kit.traces",
    "HandoffReason": "maev_kit.traces",
    "MultiAgentTrace": "maev_kit.traces",
    "UserMessage": "maev_kit.traces",
    "Message": "maev_kit.traces",
    "load_traces": "maev_kit.traces",
    "save_traces": "maev_kit.traces",
    "traces_to_frame": "maev_kit.traces",
    "handoffs_to_frame": "maev_kit.traces",
    "import_traces": "maev_kit.traces.importers",
    "ImportResult": "maev_kit.traces.importers",
    "TraceImportError": "maev_kit.traces.importers",
    "TraceValidationError": "maev_kit.errors",
    "MaevError": "maev_kit.errors",
    "InputError": "maev_kit.errors",
    "LabelValidationError": "maev_kit.errors",
    "Problem": "maev_kit.errors",
    "JudgeUnavailableError": "maev_kit.errors",
    "JudgeErrorsExceeded": "maev_kit.errors",
    "JudgeErrorWarning": "maev_kit.errors",
    "TraceWarning": "maev_kit.errors",
    "NotApplicableWarning": "maev_kit.errors",
    "UndefinedMetricWarning": "maev_kit.errors",
    # expectations
    "ConversationExpectations": "maev_kit.expectations",
    "HandoffExpectation": "maev_kit.expectations",
    "RoutingTestCase": "maev_kit.expectations",
    "KeyFact": "maev_kit.expectations",
    "load_expectations": "maev_kit.expectations",
    # deterministic metrics
    "score_handoff_accuracy": "maev_kit.metrics",
    "score_routing": "maev_kit.metrics",
    "routing_confusion": "maev_kit.metrics",
    "detect_circular_handoffs": "maev_kit.metrics",
    "HandoffContract": "maev_kit.metrics",
    "check_handoff_contracts": "maev_kit.metrics",
    "load_contracts": "maev_kit.metrics",
    "coordination_score": "maev_kit.metrics",
    "weight_sensitivity": "maev_kit.metrics",
    "HandoffReport": "maev_kit.metrics",
    "RoutingReport": "maev_kit.metrics",
    "LoopReport": "maev_kit.metrics",
    "CoordinationReport": "maev_kit.metrics",
    # retention judging
    "RetentionItem": "maev_kit.retention",
    "build_retention_items": "maev_kit.retention",
    "Judge": "maev_kit.judges",
    "Verdict": "maev_kit.judges",
    "RetentionJudge": "maev_kit.judges",
    "HeuristicJudge": "maev_kit.judges",
    "LearnedJudge": "maev_kit.judges",
    "get_judge": "maev_kit.judges",
    "run_judge": "maev_kit.runner",
    "arun_judge": "maev_kit.runner",
    "JudgeRun": "maev_kit.runner",
    "score_information_retention": "maev_kit.runner",
    "LiteLLMBackend": "maev_kit.backends",
    "OpenAIClientBackend": "maev_kit.backends",
    # labeled sets, evaluation, report, notebook display
    "load_labeled_set": "maev_kit.datasets",
    "LabeledSet": "maev_kit.datasets",
    "evaluate": "maev_kit.evaluation",
    "EvaluationResult": "maev_kit.evaluation",
    "EvaluationOptions": "maev_kit.evaluation",
    "load_result": "maev_kit.evaluation",
    "report": "maev_kit.reporting",
    "show": "maev_kit.widgets",
    "Report": "maev_kit.reporting",
    "calibrate": "maev_kit.calibration",
    "CalibrationResult": "maev_kit.calibration",
    "JudgeCard": "maev_kit.calibration",
    "probe_judge": "maev_kit.calibration",
    "ProbeReport": "maev_kit.calibration",
    "agreement_report": "maev_kit.agreement",
    "AgreementReport": "maev_kit.agreement",
    "cohen_kappa": "maev_kit.agreement",
    "ContractViolation": "maev_kit.metrics",
    "TraceViewer": "maev_kit.widgets",
    "Labeler": "maev_kit.widgets",
    "CalibrationDashboard": "maev_kit.widgets",
    "LabelStore": "maev_kit.labels",
    "LabelingSession": "maev_kit.labels",
    # criteria: your own questions, as data
    "Criterion": "maev_kit.criteria",
    "CriterionItem": "maev_kit.criteria",
}

__all__ = sorted([*_LAZY, "__version__"])


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'maev_kit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # for type checkers and IDEs; never executed. Lists every _LAZY name.
    from maev_kit.agreement import AgreementReport, agreement_report, cohen_kappa
    from maev_kit.backends import LiteLLMBackend, OpenAIClientBackend
    from maev_kit.calibration import (
        CalibrationResult,
        JudgeCard,
        ProbeReport,
        calibrate,
        probe_judge,
    )
    from maev_kit.criteria import Criterion, CriterionItem
    from maev_kit.datasets import LabeledSet, load_labeled_set
    from maev_kit.errors import (
        InputError,
        JudgeErrorsExceeded,
        JudgeErrorWarning,
        JudgeUnavailableError,
        LabelValidationError,
        MaevError,
        NotApplicableWarning,
        Problem,
        TraceValidationError,
        TraceWarning,
        UndefinedMetricWarning,
    )
    from maev_kit.evaluation import EvaluationOptions, EvaluationResult, evaluate, load_result
    from maev_kit.expectations import (
        ConversationExpectations,
        HandoffExpectation,
        KeyFact,
        RoutingTestCase,
        load_expectations,
    )
    from maev_kit.judges import (
        HeuristicJudge,
        Judge,
        LearnedJudge,
        RetentionJudge,
        Verdict,
        get_judge,
    )
    from maev_kit.labels import LabelStore, LabelingSession
    from maev_kit.metrics import (
        ContractViolation,
        CoordinationReport,
        HandoffContract,
        HandoffReport,
        LoopReport,
        RoutingReport,
        check_handoff_contracts,
        coordination_score,
        detect_circular_handoffs,
        load_contracts,
        routing_confusion,
        score_handoff_accuracy,
        score_routing,
        weight_sensitivity,
    )
    from maev_kit.reporting import Report, report
    from maev_kit.retention import RetentionItem, build_retention_items
    from maev_kit.runner import JudgeRun, arun_judge, run_judge, score_information_retention
    from maev_kit.traces import (
        AgentTurn,
        Handoff,
        HandoffReason,
        Message,
        MultiAgentTrace,
        UserMessage,
        handoffs_to_frame,
        load_traces,
        save_traces,
        traces_to_frame,
    )
    from maev_kit.traces.importers import ImportResult, TraceImportError, import_traces
    from maev_kit.widgets import CalibrationDashboard, Labeler, TraceViewer, show
