"""The problems the trace timeline marks at a handoff: contracts, expectations, loops.

This module owns turning what the caller passes as ``contracts`` (HandoffContracts, a
``{(from, to) or to: [keys]}`` mapping, or a conversation's expectations) into the problems of
each handoff (missing context keys, an expected handoff never made), paired with the handoffs
exactly as :mod:`maev_kit.metrics` pairs them, and the handoffs that close a loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from maev_kit.metrics import HandoffContract


# --------------------------------------------------------------------------- contracts, loops
@dataclass(frozen=True)
class _Problem:
    """One thing wrong with a handoff's context, as the metrics found it."""

    kind: str  # "missing_key", "wrong_type" or "no_contract"
    key: str
    why: str


def _is_expectations(contracts: Any) -> bool:
    if hasattr(contracts, "handoffs") and hasattr(contracts, "key_facts"):
        return True  # ConversationExpectations
    return (isinstance(contracts, Sequence) and not isinstance(contracts, (str, bytes))
            and bool(contracts)
            and all(hasattr(c, "expected_target") for c in contracts))


def _expectation_problems(expected: Any, trace: Any
                          ) -> tuple[dict[int, list[_Problem]], list[dict[str, Any]]]:
    """Missing keys per handoff and the expected handoffs never made, paired with the actual
    handoffs exactly as :func:`maev_kit.metrics.score_handoff_accuracy` pairs them."""
    from maev_kit.metrics import score_handoff_accuracy

    exps = list(getattr(expected, "handoffs", expected))
    if not exps:
        return {}, []
    details = score_handoff_accuracy(trace, exps).handoff_details
    out: dict[int, list[_Problem]] = {}
    never_made = []
    for d in details:
        if d.actual_index is None:
            never_made.append(d.to_dict())
            continue
        for key in d.missing_context_keys:
            out.setdefault(d.actual_index, []).append(_Problem(
                "missing_key", key, f"missing (required by expected handoff "
                f"{d.expected_index} to {d.expected_target})"))
    return out, never_made


def _as_contract_list(contracts: Any) -> Any:
    """``{(from_agent, to_agent) or to_agent: [keys]}`` → HandoffContracts; others unchanged."""
    if not isinstance(contracts, Mapping):
        return contracts
    from maev_kit.metrics import HandoffContract

    out = []
    for k, keys in contracts.items():
        src, dst = k if isinstance(k, tuple) else ("*", k)
        out.append(HandoffContract(src, dst, required_context_keys=cast("tuple[str, ...]", list(keys))))  # __post_init__ tuples it
    return out


def _contract_problems(contracts: Any, trace: Any
                       ) -> tuple[dict[int, list[_Problem]], list[dict[str, Any]]]:
    """Per handoff index, what is wrong with its context; and the expected handoffs never made.

    Expectations are paired with the handoffs by
    :func:`~maev_kit.metrics.score_handoff_accuracy`; contracts are checked by
    :func:`~maev_kit.metrics.contract_violations_by_handoff`: the view marks exactly what the
    metrics count.
    """
    if contracts is None:
        return {}, []
    if _is_expectations(contracts):
        return _expectation_problems(contracts, trace)
    from maev_kit.metrics import contract_violations_by_handoff

    out: dict[int, list[_Problem]] = {}
    for i, found in contract_violations_by_handoff(trace, _as_contract_list(contracts)).items():
        for v in found:
            if v.kind == "missing_key":
                broken = cast("HandoffContract", v.contract)  # only "no_contract" has none
                why = f"missing (required by contract {broken.label()!r})"
            elif v.kind == "wrong_type":
                why = f"should be {' or '.join(v.expected_types)}, got {v.actual_type}"
            else:
                why = "no contract covers this handoff"
            out.setdefault(i, []).append(_Problem(v.kind, v.key or "", why))
    return out, []


def _loop_handoffs(trace: Any) -> set[int]:
    """Indices of handoffs in a circular handoff (ping-pong or cycle), per
    :func:`maev_kit.metrics.detect_circular_handoffs`."""
    try:
        from maev_kit.metrics import detect_circular_handoffs
    except ImportError:  # pragma: no cover - the metrics area is part of the kit
        return set()
    try:
        found = detect_circular_handoffs(trace)
    except Exception:  # noqa: BLE001 - a metric must never break the view
        return set()
    return {int(i) for loop in found.loops for i in loop.handoff_indices}
