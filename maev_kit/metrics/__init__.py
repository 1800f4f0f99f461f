"""Deterministic coordination metrics: handoffs, routing, loops, contracts and the composite.

Pure functions in the scikit-learn style: data positional, options keyword-only, inputs
validated before any work. Reports and records are frozen dataclasses whose attributes are the
API; ``to_dict()`` gives the article's dict (its keys, order and JSON), and a report also reads
as that read-only mapping (``r["target_accuracy"]``) for code written against the dicts. The
functions that return tables import pandas lazily.
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
from maev_kit.metrics._reports import (
    CategoryRouting,
    CircularHandoff,
    CoordinationReport,
    HandoffDetail,
    HandoffReport,
    LoopReport,
    RoutingReport,
)
from maev_kit.metrics._routing import routing_confusion, score_routing

__all__ = [
    "CategoryRouting",
    "CircularHandoff",
    "ContractValidationError",
    "ContractViolation",
    "CoordinationReport",
    "DEFAULT_WEIGHTS",
    "HandoffContract",
    "HandoffDetail",
    "HandoffReport",
    "LoopReport",
    "RoutingReport",
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
