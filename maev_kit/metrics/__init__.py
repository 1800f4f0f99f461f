"""Deterministic coordination metrics: handoffs, routing, loops, contracts and the composite.

Pure functions in the scikit-learn style: data positional, options keyword-only, inputs
validated before any work. Reports are plain dicts (the article's keys), records are frozen
dataclasses with ``to_dict()``, and the functions that return tables import pandas lazily.
"""

from maev_kit.metrics._contracts import (
    VALUE_TYPES,
    ContractValidationError,
    ContractViolation,
    HandoffContract,
    check_handoff_contracts,
    contract_violations_by_handoff,
    load_contracts,
    parse_contracts,
)
from maev_kit.metrics._coordination import DEFAULT_WEIGHTS, coordination_score, weight_sensitivity
from maev_kit.metrics._handoffs import score_handoff_accuracy
from maev_kit.metrics._loops import detect_circular_handoffs
from maev_kit.metrics._routing import routing_confusion, score_routing

__all__ = [
    "ContractValidationError",
    "ContractViolation",
    "DEFAULT_WEIGHTS",
    "HandoffContract",
    "VALUE_TYPES",
    "check_handoff_contracts",
    "contract_violations_by_handoff",
    "coordination_score",
    "detect_circular_handoffs",
    "load_contracts",
    "parse_contracts",
    "routing_confusion",
    "score_handoff_accuracy",
    "score_routing",
    "weight_sensitivity",
]
