"""The public surface of maev_kit.metrics and its import cost."""

from __future__ import annotations

import subprocess
import sys

import maev_kit
import maev_kit.metrics as metrics

EXPECTED = [
    "CategoryRouting", "CircularHandoff", "ContractValidationError", "ContractViolation",
    "CoordinationReport", "DEFAULT_WEIGHTS", "HandoffContract", "HandoffDetail", "HandoffReport",
    "LoopReport", "RoutingReport", "VALUE_TYPES", "check_handoff_contracts",
    "contract_violations_by_handoff",
    "coordination_score", "detect_circular_handoffs",
    "load_contracts", "parse_contracts", "routing_confusion", "score_handoff_accuracy", "score_routing",
    "weight_sensitivity",
]


def test_all_is_sorted_and_pinned():
    assert metrics.__all__ == sorted(metrics.__all__) == EXPECTED
    for name in metrics.__all__:
        assert getattr(metrics, name) is not None


def test_issue_names_resolve_from_the_top_level():
    for name in ("score_handoff_accuracy", "score_routing", "routing_confusion",
                 "detect_circular_handoffs", "HandoffContract", "check_handoff_contracts",
                 "coordination_score", "weight_sensitivity", "load_contracts"):
        assert getattr(maev_kit, name) is getattr(metrics, name)


def test_importing_metrics_stays_light():
    code = ("import sys, maev_kit.metrics; "
            "print(sorted(m for m in ('pandas', 'yaml', 'sklearn', 'litellm', 'matplotlib', "
            "'ipywidgets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
