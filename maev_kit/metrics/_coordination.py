"""The composite coordination score (the article's formula) and its sensitivity to the weights."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DEFAULT_WEIGHTS", "coordination_score", "weight_sensitivity"]

#: The article's weights of the three components.
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {"handoff": 0.3, "retention": 0.4, "routing": 0.3})
_COMPONENTS = ("handoff", "retention", "routing")


def coordination_score(
    handoff_report: Mapping[str, Any],
    retention_report: Mapping[str, Any],
    routing_report: Mapping[str, Any],
    *,
    weights: Mapping[str, float] | None = None,
    contradiction_penalty: float = 0.2,
) -> dict[str, float]:
    """One number for how well the agents coordinate: the article's composite, exactly.

    - handoff quality = 0.5 · ``target_accuracy`` + 0.5 · ``context_completeness`` (of
      :func:`score_handoff_accuracy`);
    - information retention = max(0, ``retention_rate`` − ``contradiction_penalty`` ·
      ``contradicted``), where ``contradicted`` is the *number* of contradicted facts;
    - routing quality = ``acceptable_routing_accuracy`` (of :func:`score_routing`);
    - composite = 0.3 · handoff + 0.4 · retention + 0.3 · routing (``weights`` changes these).

    A key missing from a report (or None) counts as 0, as in the article.

    Parameters
    ----------
    handoff_report, retention_report, routing_report : mapping
    weights : mapping with keys ``handoff``, ``retention``, ``routing``, optional
        Non-negative, summing to 1. Default ``{"handoff": 0.3, "retention": 0.4,
        "routing": 0.3}``.
    contradiction_penalty : float, default 0.2
        Subtracted from the retention rate per contradicted fact; non-negative.

    Returns
    -------
    dict
        ``handoff_quality``, ``information_retention``, ``routing_quality`` and
        ``composite_coordination``, each rounded to 3 decimals (the composite is computed from
        the unrounded components).

    Examples
    --------
    >>> coordination_score({"target_accuracy": 1.0, "context_completeness": 0.5},
    ...                    {"retention_rate": 0.75, "contradicted": 1},
    ...                    {"acceptable_routing_accuracy": 0.75})
    {'handoff_quality': 0.75, 'information_retention': 0.55, 'routing_quality': 0.75, 'composite_coordination': 0.67}
    """
    w = _check_weights(weights)
    penalty = _check_penalty(contradiction_penalty)
    for arg, value in (("handoff_report", handoff_report), ("retention_report", retention_report),
                       ("routing_report", routing_report)):
        if type(value) is not dict and not isinstance(value, Mapping):
            raise TypeError(f"`{arg}` must be a mapping (the dict a score_* function returns), "
                            f"got {type(value).__name__}")
    h, r, ro = _components(handoff_report, retention_report, routing_report, penalty)
    composite = w["handoff"] * h + w["retention"] * r + w["routing"] * ro
    return {
        "handoff_quality": round(h, 3),
        "information_retention": round(r, 3),
        "routing_quality": round(ro, 3),
        "composite_coordination": round(composite, 3),
    }


def weight_sensitivity(
    handoff_report: Mapping[str, Any],
    retention_report: Mapping[str, Any],
    routing_report: Mapping[str, Any],
    *,
    weights: Mapping[str, float] | None = None,
    contradiction_penalty: float = 0.2,
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

    base = _check_weights(weights)
    penalty = _check_penalty(contradiction_penalty)
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
    handoff = 0.5 * _get(handoff_report, "target_accuracy") + \
        0.5 * _get(handoff_report, "context_completeness")
    retention = max(0.0, _get(retention_report, "retention_rate")
                    - penalty * _get(retention_report, "contradicted"))
    routing = _get(routing_report, "acceptable_routing_accuracy")
    return handoff, retention, routing


def _get(report: Mapping[str, Any], key: str) -> float:
    value = report.get(key)
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


def _check_weights(weights: Mapping[str, float] | None) -> dict[str, float]:
    if weights is None:
        return dict(DEFAULT_WEIGHTS)
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
