"""The composite coordination score (the article's formula) and its sensitivity to the weights."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from maev_kit.metrics._reports import (
    CoordinationReport,
    HandoffReport,
    RoutingReport,
    new_coordination_report,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_WEIGHTS", "coordination_score", "weight_sensitivity"]

#: The article's weights of the three components.
DEFAULT_WEIGHTS: MappingProxyType[str, float] = MappingProxyType(
    {"handoff": 0.3, "retention": 0.4, "routing": 0.3})
_COMPONENTS = ("handoff", "retention", "routing")
#: Subtracted from the retention rate per contradicted fact (the article's 0.2).
DEFAULT_CONTRADICTION_PENALTY = 0.2
NotApplicable = Literal["na", "article"]
_MODES = ("na", "article")

# What each report must carry, and the other keys the score_* functions (and evaluate) put in
# it: a key outside both that looks like a needed one is a misspelling, not an extra.
_NEEDED: dict[str, tuple[str, ...]] = {
    "handoff_report": ("target_accuracy", "context_completeness"),
    "retention_report": ("retention_rate", "contradicted"),
    "routing_report": ("acceptable_routing_accuracy",),
}
_KNOWN: dict[str, frozenset[str]] = {
    "handoff_report": frozenset({"handoff_accuracy", "reason_accuracy", "missing_handoffs",
                                 "unexpected_handoffs", "matching", "handoff_details",
                                 "unexpected_handoff_indices"}),
    "retention_report": frozenset({"retained", "lost", "contradicted", "errors", "details",
                                   "judged", "judge_errors", "n_facts"}),
    "routing_report": frozenset({"exact_routing_accuracy", "total_cases", "misrouted",
                                 "category_routing_accuracy", "category_cases", "per_category",
                                 "confusion"}),
}
_SOURCE = {"handoff_report": "score_handoff_accuracy",
           "retention_report": "score_information_retention",
           "routing_report": "score_routing"}
# The typed report each argument may be: it has every needed value, as an attribute.
_TYPED: dict[str, type] = {"handoff_report": HandoffReport, "routing_report": RoutingReport}
_TYPED_REPORTS = frozenset(_TYPED.values())


def coordination_score(
    handoff_report: Mapping[str, Any] | None,
    retention_report: Mapping[str, Any] | None,
    routing_report: Mapping[str, Any] | None,
    *,
    weights: Mapping[str, float] | None = None,
    contradiction_penalty: float = DEFAULT_CONTRADICTION_PENALTY,
    not_applicable: NotApplicable = "na",
) -> CoordinationReport:
    """One number for how well the agents coordinate: the article's composite.

    - handoff quality = 0.5 · ``target_accuracy`` + 0.5 · ``context_completeness`` (of
      :func:`score_handoff_accuracy`);
    - information retention = max(0, ``retention_rate`` − ``contradiction_penalty`` ·
      ``contradicted``), where ``contradicted`` is the *number* of contradicted facts;
    - routing quality = ``acceptable_routing_accuracy`` (of :func:`score_routing`);
    - composite = 0.3 · handoff + 0.4 · retention + 0.3 · routing (``weights`` changes these).

    A component with nothing to measure is *not applicable*, never 0 or 1: its report is None,
    a value it reads is None or NaN, the handoff report has no expectation (no
    ``handoff_details``) or the routing report no case (``total_cases`` is 0). With
    ``not_applicable="na"`` (default) such a component is NaN and the composite is over the
    applicable components, their weights renormalised to sum to 1 (Σ wᵢ·cᵢ / Σ wᵢ over the
    applicable i with wᵢ > 0; NaN when none applies), named in ``components_used``.
    ``not_applicable="article"`` is the article's behaviour, for parity: a missing key or None
    counts 0, an empty report's values are taken as they are. A key that looks like a
    misspelling of a needed one (``context_completness``) is an error in both modes, and so is
    a missing needed key in ``"na"`` mode.

    Parameters
    ----------
    handoff_report, retention_report, routing_report : report or mapping, or None (``"na"``)
        What :func:`score_handoff_accuracy`, :func:`score_information_retention` and
        :func:`score_routing` return (or any mapping with the keys read above).
    weights : mapping with keys ``handoff``, ``retention``, ``routing``, optional
        Non-negative, summing to 1. Default :data:`DEFAULT_WEIGHTS` (0.3, 0.4, 0.3).
    contradiction_penalty : float, default 0.2
        Subtracted from the retention rate per contradicted fact; non-negative.
    not_applicable : {"na", "article"}, default "na"

    Returns
    -------
    CoordinationReport
        ``handoff_quality``, ``information_retention``, ``routing_quality`` and
        ``composite_coordination`` (from the unrounded components), 3 decimals, NaN when n/a;
        ``components_used`` (``"na"`` mode only, else None) names the components the
        composite is over. ``to_dict()`` gives the article's dict.

    Raises
    ------
    ValueError
        On a misspelt or (``"na"``) missing report key, naming it and the expected keys; on
        bad weights.

    Examples
    --------
    >>> handoff = {"target_accuracy": 1.0, "context_completeness": 0.5}
    >>> retention = {"retention_rate": 0.75, "contradicted": 1}
    >>> r = coordination_score(handoff, retention, {"acceptable_routing_accuracy": 0.75})
    >>> r.handoff_quality, r.information_retention, r.routing_quality, r.composite_coordination
    (0.75, 0.55, 0.75, 0.67)

    No routing case: the composite is over handoff and retention, weighted 0.3 : 0.4. The
    article counted the missing component as 0:

    >>> r = coordination_score(handoff, retention, None)
    >>> r.routing_quality, r.composite_coordination, r.components_used
    (nan, 0.636, ('handoff', 'retention'))
    >>> coordination_score(handoff, retention, {}, not_applicable="article").composite_coordination
    0.445
    >>> coordination_score({"target_accuracy": 1.0, "context_completness": 0.5}, retention, None)
    Traceback (most recent call last):
    ...
    ValueError: `handoff_report` has a key 'context_completness' where 'context_completeness' is expected (a misspelling?); coordination_score reads target_accuracy, context_completeness from it
    """
    w = check_weights(weights)
    penalty = _check_penalty(contradiction_penalty)
    mode = _check_mode(not_applicable)
    _check_reports(handoff_report, retention_report, routing_report, mode)
    return combine(handoff_report, retention_report, routing_report, w, penalty, mode)


def combine(handoff_report: Mapping[str, Any] | None, retention_report: Mapping[str, Any] | None,
            routing_report: Mapping[str, Any] | None, w: Mapping[str, float], penalty: float,
            mode: str) -> CoordinationReport:
    """:func:`coordination_score` after its checks: reports, weights (``w``, every key
    present), ``penalty`` and ``mode`` already valid. The per-conversation stage of
    ``evaluate`` calls it directly with the reports it built itself."""
    if mode == "article":
        h, r, ro = _components(handoff_report, retention_report, routing_report,  # type: ignore[arg-type]
                               penalty)
        composite = w["handoff"] * h + w["retention"] * r + w["routing"] * ro
        return new_coordination_report(round(h, 3), round(r, 3), round(ro, 3),
                                       round(composite, 3), None)
    comps = _na_components(handoff_report, retention_report, routing_report, penalty)
    # the applicable components with a weight: a loop, not generators (this runs per
    # conversation); sum() as before, so the float sums are the same
    used, used_w, terms = [], [], []
    isnan = math.isnan
    for c, value in zip(_COMPONENTS, comps):
        if not isnan(value) and w[c] > 0:
            used.append(c)
            used_w.append(w[c])
            terms.append(w[c] * value)
    composite = (sum(terms) / sum(used_w)) if used else math.nan
    return new_coordination_report(round(comps[0], 3), round(comps[1], 3), round(comps[2], 3),
                                   round(composite, 3), tuple(used))


def weight_sensitivity(
    handoff_report: Mapping[str, Any],
    retention_report: Mapping[str, Any],
    routing_report: Mapping[str, Any],
    *,
    weights: Mapping[str, float] | None = None,
    contradiction_penalty: float = DEFAULT_CONTRADICTION_PENALTY,
    delta: float = 0.1,
) -> pd.DataFrame:
    """How the composite moves when each weight shifts by ±``delta`` (default 0.1).

    The shifted weight is clipped to [0, 1]; the other two are rescaled in proportion so the
    three still sum to 1 (split equally when both were 0).

    Returns
    -------
    pandas.DataFrame
        One row for the base weights (``component`` ``"base"``, ``shift`` 0.0), then one per
        component and direction: ``component``, ``shift``, ``weight_handoff``,
        ``weight_retention``, ``weight_routing`` (3 decimals), ``composite_coordination`` and
        ``change`` (from the base composite), both 3 decimals.

    Examples
    --------
    >>> df = weight_sensitivity({"target_accuracy": 1.0, "context_completeness": 0.5},
    ...                         {"retention_rate": 0.75, "contradicted": 1},
    ...                         {"acceptable_routing_accuracy": 0.75})
    >>> df[["component", "shift", "composite_coordination", "change"]]
       component  shift  composite_coordination  change
    0       base    0.0                   0.670   0.000
    1    handoff   -0.1                   0.659  -0.011
    2    handoff    0.1                   0.681   0.011
    3  retention   -0.1                   0.690   0.020
    4  retention    0.1                   0.650  -0.020
    5    routing   -0.1                   0.659  -0.011
    6    routing    0.1                   0.681   0.011

    Retention, the weakest component here, is what moves the composite most: giving it 0.1
    less weight (and the others proportionally more) raises the composite by 0.02.
    """
    import pandas as pd

    base = check_weights(weights)
    penalty = _check_penalty(contradiction_penalty)
    _check_reports(handoff_report, retention_report, routing_report, "article")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 < delta <= 1:
        raise ValueError(f"`delta` must be a number in (0, 1], got {delta!r}")
    comps = dict(zip(_COMPONENTS, _components(handoff_report, retention_report, routing_report,
                                              penalty)))

    def composite(w: Mapping[str, float]) -> float:
        return sum(w[c] * comps[c] for c in _COMPONENTS)

    base_value = composite(base)
    rows: list[dict[str, Any]] = [_row("base", 0.0, base, base_value, base_value)]
    for comp in _COMPONENTS:
        for shift in (-float(delta), float(delta)):
            w = _shifted(base, comp, shift)
            rows.append(_row(comp, shift, w, composite(w), base_value))
    return pd.DataFrame(rows)


def _row(comp: str, shift: float, w: Mapping[str, float], value: float,
         base_value: float) -> dict[str, Any]:
    return {"component": comp, "shift": shift,
            **{f"weight_{c}": round(w[c], 3) for c in _COMPONENTS},
            "composite_coordination": round(value, 3),
            "change": round(round(value, 3) - round(base_value, 3), 3)}


def _shifted(base: Mapping[str, float], comp: str, shift: float) -> dict[str, float]:
    new = min(1.0, max(0.0, base[comp] + shift))
    others = [c for c in _COMPONENTS if c != comp]
    rest = sum(base[c] for c in others)
    out = {comp: new}
    for c in others:
        out[c] = (1.0 - new) * (base[c] / rest if rest > 0 else 1 / len(others))
    return out


def _components(handoff_report: Mapping[str, Any], retention_report: Mapping[str, Any],
                routing_report: Mapping[str, Any], penalty: float) -> tuple[float, float, float]:
    """The three components, the article's way: a missing key or None counts 0."""
    handoff = 0.5 * _get(handoff_report, "target_accuracy") + \
        0.5 * _get(handoff_report, "context_completeness")
    retention = max(0.0, _get(retention_report, "retention_rate")
                    - penalty * _get(retention_report, "contradicted"))
    routing = _get(routing_report, "acceptable_routing_accuracy")
    return handoff, retention, routing


def _na_components(handoff_report: Mapping[str, Any] | None,
                   retention_report: Mapping[str, Any] | None,
                   routing_report: Mapping[str, Any] | None,
                   penalty: float) -> tuple[float, float, float]:
    """The three components, NaN where not applicable (see :func:`coordination_score`)."""
    nan = math.nan
    handoff = retention = routing = nan
    if type(handoff_report) is HandoffReport:
        if handoff_report.handoff_details:  # else nothing was expected: n/a
            handoff = (0.5 * _number(handoff_report.target_accuracy, "target_accuracy")
                       + 0.5 * _number(handoff_report.context_completeness,
                                       "context_completeness"))
    elif handoff_report is not None and handoff_report.get("handoff_details", None) != []:
        t = _value(handoff_report, "target_accuracy")
        c = _value(handoff_report, "context_completeness")
        handoff = 0.5 * t + 0.5 * c  # NaN when either is
    if retention_report is not None:
        rate = _value(retention_report, "retention_rate")
        if not math.isnan(rate):
            contradicted = _value(retention_report, "contradicted")
            retention = max(0.0, rate - penalty * (0.0 if math.isnan(contradicted)
                                                   else contradicted))
    if type(routing_report) is RoutingReport:
        if routing_report.total_cases != 0:  # else no case: n/a
            routing = _number(routing_report.acceptable_routing_accuracy,
                              "acceptable_routing_accuracy")
    elif routing_report is not None and routing_report.get("total_cases", None) != 0:
        routing = _value(routing_report, "acceptable_routing_accuracy")
    return handoff, retention, routing


def _value(report: Mapping[str, Any], key: str) -> float:
    """A needed value as a float, NaN when None or NaN (``"na"`` mode; presence is checked)."""
    return _number(report[key], key)


def _number(value: Any, key: str) -> float:
    """A needed value (of ``key``) as a float, NaN when None or NaN."""
    if type(value) is float:  # the common case; what _as_float returns for it
        return value
    return math.nan if value is None else _as_float(value, key)


def _check_mode(mode: str) -> str:
    if mode not in _MODES:
        raise ValueError(f"`not_applicable` must be 'na' or 'article', got {mode!r}")
    return mode


def _check_reports(handoff_report: Any, retention_report: Any, routing_report: Any,
                   mode: str) -> None:
    """Each report is a mapping (or None in ``"na"`` mode) without misspelt or missing keys."""
    _check_report("handoff_report", handoff_report, mode)
    _check_report("retention_report", retention_report, mode)
    _check_report("routing_report", routing_report, mode)


def _check_report(arg: str, report: Any, mode: str) -> None:
    """A report is a mapping (or None in ``"na"`` mode) without misspelt or missing keys."""
    if report is None and mode == "na":
        return
    if type(report) is _TYPED.get(arg):  # the report of the function meant: it has them all
        return
    if type(report) is not dict and not isinstance(report, Mapping):
        allowed = " (or None when the component is n/a)" if mode == "na" else ""
        raise TypeError(f"`{arg}` must be a mapping (the dict a score_* function returns)"
                        f"{allowed}, got {type(report).__name__}")
    needed = _NEEDED[arg]
    reads = ", ".join(needed)
    missing = [k for k in needed if k not in report]
    if not missing:
        return
    for key in report:
        if key in _KNOWN[arg] or not isinstance(key, str):
            continue
        close = difflib.get_close_matches(key, missing, n=1, cutoff=0.8)
        if close:
            raise ValueError(f"`{arg}` has a key {key!r} where {close[0]!r} is expected (a "
                             f"misspelling?); coordination_score reads {reads} from it")
    if mode == "na":
        raise ValueError(f"`{arg}` has no key {missing[0]!r}; coordination_score reads {reads} "
                         f"from it (the dict {_SOURCE[arg]} returns), or pass None when the "
                         "component is n/a")


def _get(report: Mapping[str, Any], key: str) -> float:
    """``report[key]`` as a float, 0.0 when missing or None (the article's reading). A typed
    report's value is its attribute (the same, without building the mapping)."""
    value = (getattr(report, key, None) if type(report) in _TYPED_REPORTS
             else report.get(key))
    return _as_float(value, key)


def _as_float(value: Any, key: str) -> float:
    if value is None:
        return 0.0
    if type(value) is float or type(value) is int:
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(value)  # numpy scalars
        except (TypeError, ValueError):
            raise TypeError(f"report key {key!r} must be a number, got {value!r}") from None
    return float(value)


def check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return DEFAULT_WEIGHTS.copy()  # a new dict; 7x faster than dict() of the mapping proxy
    if not isinstance(weights, Mapping):
        raise TypeError("`weights` must be a mapping like {'handoff': 0.3, 'retention': 0.4, "
                        f"'routing': 0.3}}, got {type(weights).__name__}")
    keys = set(weights)
    if keys != set(_COMPONENTS):
        missing = [c for c in _COMPONENTS if c not in keys]
        unknown = sorted(map(str, keys - set(_COMPONENTS)))
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + \
            ([f"unknown {', '.join(unknown)}"] if unknown else [])
        raise ValueError(f"`weights` must have exactly the keys handoff, retention, routing "
                         f"({'; '.join(parts)})")
    out = {}
    for c in _COMPONENTS:
        v = weights[c]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ValueError(f"`weights[{c!r}]` must be a non-negative number, got {v!r}")
        out[c] = float(v)
    total = sum(out.values())
    if not math.isclose(total, 1.0, abs_tol=1e-9):
        raise ValueError(f"`weights` must sum to 1, they sum to {total:g}; e.g. "
                         "{'handoff': 0.3, 'retention': 0.4, 'routing': 0.3}")
    return out


def _check_penalty(value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"`contradiction_penalty` must be a non-negative number, got {value!r}")
    return float(value)
