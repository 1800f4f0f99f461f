"""The public surface: pinned so it never changes by accident (httpx-style)."""

import importlib

import pytest

import maev_kit

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


@pytest.mark.parametrize("module", ["maev_kit.traces", "maev_kit.metrics", "maev_kit.agreement",
                                    "maev_kit.calibration", "maev_kit.judges", "maev_kit.labels",
                                    "maev_kit.retention", "maev_kit.traces.importers"])
def test_subpackage_all_is_sorted_and_importable(module):
    mod = importlib.import_module(module)
    names = list(mod.__all__)
    assert names == sorted(names, key=lambda s: (not s.isupper(), s)) or names == sorted(names)
    for name in names:
        assert hasattr(mod, name), f"{module}.{name} is in __all__ but missing"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        maev_kit.nope  # noqa: B018
