"""The public surface: pinned so it never changes by accident (httpx-style).

Every type a public function returns, and every maev-kit error its docstring says it raises, is
importable from ``maev_kit`` or from the package that exports the function.
"""

import builtins
import importlib
import inspect
import re
import sys
import typing

import pytest

import maev_kit

# Literal, sorted: a name added to or dropped from a public ``__all__`` changes this table too.
PUBLIC = {
    "maev_kit": [
        "AgentTurn", "AgreementReport", "CalibrationDashboard", "CalibrationResult",
        "ContractViolation", "ConversationExpectations", "CoordinationReport", "Criterion",
        "CriterionItem", "EvaluationOptions", "EvaluationResult", "Handoff",
        "HandoffContract", "HandoffExpectation", "HandoffReason", "HandoffReport",
        "HeuristicJudge", "ImportResult",
        "InputError", "Judge", "JudgeCard", "JudgeErrorWarning", "JudgeErrorsExceeded", "JudgeRun",
        "JudgeUnavailableError", "KeyFact", "LabelStore", "LabelValidationError", "LabeledSet",
        "Labeler", "LabelingSession", "LearnedJudge", "LiteLLMBackend", "LoopReport", "MaevError",
        "Message", "MultiAgentTrace", "NotApplicableWarning", "OpenAIClientBackend",
        "ProbeReport", "Problem",
        "Report", "RetentionItem", "RetentionJudge", "RoutingReport", "RoutingTestCase",
        "TraceImportError",
        "TraceValidationError", "TraceViewer", "TraceWarning", "UndefinedMetricWarning",
        "UserMessage", "Verdict", "__version__", "agreement_report", "arun_judge",
        "build_retention_items", "calibrate", "check_handoff_contracts", "cohen_kappa",
        "coordination_score", "detect_circular_handoffs", "evaluate", "get_judge",
        "handoffs_to_frame", "import_traces", "load_contracts", "load_expectations",
        "load_labeled_set", "load_result", "load_traces", "probe_judge", "report",
        "routing_confusion", "run_judge",
        "save_traces", "score_handoff_accuracy", "score_information_retention", "score_routing",
        "show", "traces_to_frame", "weight_sensitivity",
    ],
    "maev_kit.traces": [
        "SUPPORTED_SCHEMA_VERSIONS", "AgentTurn", "Handoff", "HandoffMode", "HandoffReason",
        "Message", "MultiAgentTrace", "UserMessage", "check_trace", "handoffs_to_frame",
        "load_traces", "save_traces", "trace_from_dict", "trace_to_dict", "traces_to_frame",
        "validate_trace_file",
    ],
    "maev_kit.traces.importers": [
        "FORMATS", "Detected", "ImportIssue", "ImportResult", "TraceImportError",
        "detect_file", "detect_format", "import_traces", "load_any",
    ],
    "maev_kit.criteria": [
        "ATTRIBUTION", "BASELINES", "CRITERION_PROMPTS", "MAST_CATEGORIES", "MAST_SOURCE",
        "SCOPES", "CallableJudge", "Criterion", "CriterionItem", "CriterionRun",
        "CriterionVerdict", "LLMCriterionJudge", "MastFindings", "Scope", "attribution_labels",
        "attribution_leaderboard", "builtin", "builtins", "criterion_prompt",
        "failure_attribution", "find_mast_modes", "judge_criterion", "load", "mast_mode",
        "mast_modes", "parse_attribution", "register", "resolve",
    ],
    "maev_kit.expectations": [
        "ConversationExpectations", "HandoffExpectation", "KeyFact", "RoutingTestCase",
        "expectations_to_dict", "load_expectations", "read_expectations", "save_expectations",
    ],
    "maev_kit.metrics": [
        "CategoryRouting", "CircularHandoff", "ContractValidationError", "ContractViolation",
        "CoordinationReport", "DEFAULT_WEIGHTS", "HandoffContract", "HandoffDetail",
        "HandoffReport", "LoopReport", "RoutingReport", "VALUE_TYPES", "check_handoff_contracts",
        "contract_violations_by_handoff",
        "coordination_score", "detect_circular_handoffs", "load_contracts", "parse_contracts",
        "routing_confusion", "score_handoff_accuracy", "score_routing", "weight_sensitivity",
    ],
    "maev_kit.retention": [
        "LABELS", "EvidenceSpan", "RetentionItem", "UnjudgedHandoff", "build_retention_items",
        "context_values", "derive_facts", "fact_hops", "handover_payload", "hop_order",
        "is_free_text", "item_id", "locate", "receiver_silent", "silent_receivers",
        "unjudged_handoffs",
    ],
    "maev_kit.judges": [
        "ExampleOverlapError", "HeuristicJudge", "JUDGE_NAMES", "Judge", "LLMJudge",
        "LearnedJudge", "NotFittedError", "OFFLINE_JUDGES", "OfflineJudge", "PROMPT_IDS",
        "PromptTemplate", "RetentionJudge", "TrainingOverlapError", "Verdict",
        "answer_retention_prompt", "changed_value", "escape_fence", "get_judge",
        "parse_retention_reply", "resolve_judge",
    ],
    "maev_kit.runner": [
        "BatchPendingError", "CachedReply", "DEFAULT_CACHE_DIR", "JudgeCache", "JudgeRun",
        "RequestRun", "RequestTask", "arun_judge", "arun_requests", "cache_key", "run_judge",
        "run_requests", "score_information_retention",
    ],
    "maev_kit.agreement": [
        "LABELS", "MIN_LABELS_FOR_INTERVAL", "AgreementCoefficient", "AgreementReport",
        "Estimate", "HumanCeiling", "JudgeComparison",
        "JudgeVsHumans", "LabelPlan", "MultiRaterAgreement", "agreement_report", "bowker_test",
        "ci_label",
        "cohen_kappa", "compare_judges", "fleiss_kappa", "gwet_ac1", "holm", "human_ceiling",
        "human_mean", "human_share", "judge_mean",
        "judge_vs_humans", "krippendorff_alpha", "labels_needed", "landis_koch", "majority_labels",
        "mcnemar_chi2", "mcnemar_exact", "mean_pairwise_kappa", "multi_rater_agreement",
        "plan_labels", "ppi_mean",
        "stuart_maxwell",
    ],
    "maev_kit.calibration": [
        "AlignmentResult", "Budget", "CalibrationResult", "CriterionDrift",
        "DegenerateLabelsError", "DriftReport",
        "JudgeCard", "JudgeCardMismatchWarning", "JudgeMeta", "PROBES", "ProbeReport",
        "ProbeResult", "PromptComparison", "align",
        "calibrate", "calibration_from_runs", "check_card", "check_criterion_card",
        "compare_prompts",
        "corrected_prevalence", "fit_on_other_splits", "judge_from_card", "load_human_labels",
        "next_items_to_label", "probe_judge",
    ],
    "maev_kit.facts": [
        "FACT_KINDS", "METHODS", "DecisionFileError", "ExpectationsExport",
        "ExpectationsFileError", "FactNote", "FactProposal", "FactReviewSession",
        "FactReviewWarning", "FactUnderReview", "HandoffUnderReview", "ProposedFact",
        "ReviewDecision", "create_labeled_set", "fact_id_for", "facts_to_expectations",
        "first_statements", "load_facts", "merge_facts", "propose_facts", "save_facts",
        "save_facts_as_expectations", "supersede_user_changes",
    ],
    "maev_kit.labels": [
        "ADJUDICATED_SOURCE", "LABEL_VALUES", "PLAN_FILE", "SAMPLE_FILE",
        "AdjudicationSession", "Disagreement", "LabelFile", "LabelRecord", "LabelSample",
        "LabelStatus", "LabelStore", "LabelStoreError", "LabelStoreWarning",
        "LabelingSession", "SessionPlan", "SetAsideLabel", "ShownVerdict",
        "annotator_labels", "check_annotator", "copy_labels", "disagreements", "draw_label_sample",
        "label_status", "latest_labels", "load_session_plan", "open_label_store",
        "plan_session", "population_hash", "read_label_file", "reattach_labels",
        "settled_human_labels", "settled_labels",
    ],
    "maev_kit.evaluation": [
        "ConversationScore", "EvaluationOptions", "EvaluationResult", "JudgeErrorSummary",
        "evaluate", "fact_ledger", "load_result", "score_conversation",
    ],
    "maev_kit.evaluation.stages": [
        "AGGREGATED", "ESTIMATE_COLUMNS", "EvaluationInputs", "FACT_MODES", "KeyFacts",
        "LEDGER_COLUMNS", "SCORE_COLUMNS", "ScoreSummary", "aggregate_scores",
        "aggregate_summary", "build_retention_items", "corrected_estimates", "estimates_for",
        "fact_backend", "fact_methods", "facts_by_source", "judge_info",
        "judge_items", "ledger_dtypes", "ledger_frame", "load_inputs", "merge_facts",
        "read_contracts", "resolve_evaluation_judge", "score_columns", "score_traces",
        "select_facts", "summarize_scores", "unknown_facts", "verdicts_by_conversation",
        "warn_result",
    ],
    "maev_kit.reporting": [
        "Report", "report",
    ],
    "maev_kit.widgets": [
        "Adjudicator", "CalibrationDashboard", "CriterionLabeler", "FactReviewer", "Labeler",
        "SessionProgress",
        "TraceViewer", "show",
    ],
    "maev_kit.scale": [
        "ShardFailure", "evaluate_dataset",
    ],
    "maev_kit.backends": [
        "ERROR_KINDS", "KIND_TO_CAUSE", "Backend", "BackendError", "Completion", "LiteLLMBackend",
        "OpenAIClientBackend", "ScriptError", "ScriptedBackend", "classify_error",
        "retry_after_from_headers",
    ],
    "maev_kit.testing": [
        "FAIL_MODES", "FakeBatch", "FakeOpenAIServer", "FakeReply", "LoggedRequest", "Responder",
        "ScriptedBackend", "free_port", "hang", "http_error", "malformed_body", "reply",
        "truncated_body",
    ],
}
SUBPACKAGES = [m for m in PUBLIC if m != "maev_kit"]

ISSUE_NAMES = {  # names other code and outside checks rely on
    "AgentTurn", "Handoff", "HandoffReason", "MultiAgentTrace", "HandoffExpectation",
    "RoutingTestCase", "score_handoff_accuracy", "score_routing", "routing_confusion",
    "detect_circular_handoffs", "HandoffContract", "check_handoff_contracts",
    "coordination_score", "weight_sensitivity", "load_traces", "save_traces",
    "traces_to_frame", "TraceValidationError", "build_retention_items", "RetentionItem",
    "RetentionJudge", "HeuristicJudge", "run_judge", "arun_judge", "JudgeRun",
    "LiteLLMBackend", "OpenAIClientBackend", "score_information_retention", "evaluate",
    "report", "show",
}


def test_all_is_sorted_and_unique():
    assert maev_kit.__all__ == sorted(set(maev_kit.__all__))


def test_issue_names_are_exported():
    assert ISSUE_NAMES <= set(maev_kit.__all__)


@pytest.mark.parametrize("name", sorted(set(maev_kit.__all__) - {"__version__"}))
def test_every_exported_name_imports(name):
    assert getattr(maev_kit, name) is not None
    exec(f"from maev_kit import {name}", {})


@pytest.mark.parametrize("module", SUBPACKAGES)
def test_subpackage_all_is_sorted_and_importable(module):
    mod = importlib.import_module(module)
    names = list(mod.__all__)
    assert names == sorted(names, key=lambda s: (not s.isupper(), s)) or names == sorted(names)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is in __all__ but missing"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        maev_kit.nope  # noqa: B018


@pytest.mark.parametrize("module", list(PUBLIC))
def test_all_is_pinned(module):
    assert list(importlib.import_module(module).__all__) == PUBLIC[module]


@pytest.mark.parametrize("module, name", [(m, n) for m, names in PUBLIC.items() for n in names])
def test_every_name_in_every_all_resolves(module, name):
    mod = importlib.import_module(module)
    assert getattr(mod, name) is not None
    exec(f"from {module} import {name}", {})


def _namespace() -> dict:
    """What annotations may name (some are imported under TYPE_CHECKING only)."""
    import pandas

    ns = {"pd": pandas}
    for module in [*PUBLIC, "maev_kit.errors", "maev_kit.datasets"]:
        mod = importlib.import_module(module)
        for name in mod.__all__:
            ns.setdefault(name, getattr(mod, name))
    return ns


def _home(defined_in: str) -> str:
    """The public package a function or class is defined under."""
    return max((m for m in PUBLIC if defined_in == m or defined_in.startswith(m + ".")), key=len)


def _public_functions():
    """(module, label, function): every function in each ``__all__`` and the public methods of
    every class there."""
    for module, names in PUBLIC.items():
        mod = importlib.import_module(module)
        for name in names:
            obj = getattr(mod, name)
            if inspect.isfunction(obj):
                yield module, name, obj
            elif inspect.isclass(obj) and obj.__module__.startswith("maev_kit"):
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(value, (classmethod, staticmethod)):
                        value = value.__func__
                    elif isinstance(value, property):
                        value = value.fget
                    if inspect.isfunction(value):
                        yield module, f"{name}.{attr}", value


def _maev_types(tp) -> list[type]:
    found = []
    origin = typing.get_origin(tp)
    if origin is not None:
        found += [origin] if isinstance(origin, type) else []
        for arg in typing.get_args(tp):
            found += _maev_types(arg)
    elif isinstance(tp, type):
        found.append(tp)
    return [t for t in found if t.__module__.startswith("maev_kit")]


def _importable(cls: type, modules: set[str]) -> bool:
    return any(cls.__name__ in importlib.import_module(m).__all__
               and getattr(importlib.import_module(m), cls.__name__) is cls for m in modules)


def test_return_types_are_public():
    ns = _namespace()
    missing = []
    for module, label, fn in _public_functions():
        hints = typing.get_type_hints(fn, localns=ns)
        homes = {"maev_kit", module, _home(fn.__module__)}
        for cls in _maev_types(hints.get("return")):
            if not _importable(cls, homes):
                missing.append(f"{module}: {label} returns {cls.__module__}.{cls.__name__}")
    assert not missing, "\n".join(missing)


def test_documented_errors_are_public():
    _namespace()  # loads every public module, so every maev-kit error class is in sys.modules
    missing = []
    for module, label, fn in _public_functions():
        homes = {"maev_kit", module, _home(fn.__module__)}
        for name in set(re.findall(r"\b([A-Z]\w*(?:Error|Warning|Exceeded))\b",
                                   inspect.getdoc(fn) or "")):
            if hasattr(builtins, name):
                continue
            classes = {getattr(m, name) for k, m in list(sys.modules.items())
                       if k.startswith("maev_kit") and isinstance(getattr(m, name, None), type)}
            if not classes:
                continue  # another library's error (json.JSONDecodeError, …)
            if not any(_importable(cls, homes) for cls in classes):
                missing.append(f"{module}: {label} documents {name}")
    assert not missing, "\n".join(missing)


def _top_level_returns():
    """(function name, class): each maev-kit class that a function exported by ``maev_kit``
    returns (its return annotation, inside containers and unions too). Methods are held to
    their own package by test_return_types_are_public."""
    ns = _namespace()
    for name in maev_kit.__all__:
        fn = getattr(maev_kit, name)
        if inspect.isfunction(fn):
            for cls in _maev_types(typing.get_type_hints(fn, localns=ns).get("return")):
                yield name, cls


def test_what_a_top_level_function_returns_is_a_top_level_name():
    """#39 C: a user who calls ``maev_kit.score_routing`` can annotate with, and find the docs
    of, what it returns from the same place: ``from maev_kit import RoutingReport``."""
    missing = sorted({f"{label} returns {cls.__module__}.{cls.__name__}"
                      for label, cls in _top_level_returns()
                      if getattr(maev_kit, cls.__name__, None) is not cls
                      or cls.__name__ not in maev_kit.__all__})
    assert not missing, "\n".join(missing)
    found = {cls.__name__ for _, cls in _top_level_returns()}
    assert {"HandoffReport", "RoutingReport", "LoopReport", "CoordinationReport"} <= found


def test_the_architecture_api_table_lists_every_returned_class():
    """docs/architecture.md's API table names every class a ``maev_kit`` function returns."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    section = doc.split("## The public API", 1)[1].split("\n## ", 1)[0]
    table = "\n".join(line for line in section.splitlines() if line.startswith("|"))
    missing = sorted({cls.__name__ for _, cls in _top_level_returns()
                      if not re.search(rf"`{cls.__name__}`", table)})
    assert not missing, f"not in docs/architecture.md's API table: {missing}"
