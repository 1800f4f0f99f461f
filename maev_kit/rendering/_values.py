"""Reading numbers out of loosely typed results: shared by the HTML report and the dashboard."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def num(x: Any) -> float | None:
    """``x`` as a finite float, else None.

    >>> num("0.5"), num(None), num(float("nan")), num("n/a")
    (0.5, None, None, None)
    """
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _fields(c: Any) -> dict[str, Any]:
    if isinstance(c, Mapping):
        return dict(c)
    if hasattr(c, "to_dict") and callable(c.to_dict):
        try:
            d = c.to_dict()
            if isinstance(d, Mapping):
                return dict(d)
        except TypeError:
            pass
    return {k: getattr(c, k) for k in dir(c) if not k.startswith("_")
            and not callable(getattr(c, k, None))}


def ceiling(c: Any) -> tuple[float, float, float] | None:
    """(κ, low, high) of the human ceiling, or None when it has no finite κ.

    Reads a number, a HumanCeiling-like object (``kappa`` and ``ci``), or a mapping / Series
    with ``kappa`` (or ``value``, ``mean``) and ``ci`` (or ``kappa_low``/``ci_low``/``low`` and
    ``kappa_high``/``ci_high``/``high``). A missing bound is κ itself.

    >>> ceiling({"kappa": 0.8, "ci": [0.7, 0.9]}), ceiling({"kappa": 0.8}), ceiling(0.5)
    ((0.8, 0.7, 0.9), (0.8, 0.8, 0.8), (0.5, 0.5, 0.5))
    >>> ceiling({"kappa": float("nan")}) is None, ceiling(None) is None
    (True, True)
    """
    if c is None:
        return None
    if num(c) is not None and not isinstance(c, bool):
        v = float(c)
        return (v, v, v)
    if hasattr(c, "kappa") and hasattr(c, "ci"):
        k, ci = c.kappa, c.ci
    else:
        d = _fields(c)
        k = d.get("kappa", d.get("value", d.get("mean")))
        ci = d.get("ci")
        if ci is None:
            ci = (d.get("kappa_low", d.get("ci_low", d.get("low"))),
                  d.get("kappa_high", d.get("ci_high", d.get("high"))))
    try:
        lo, hi = ci
    except (TypeError, ValueError):
        lo = hi = None
    k, lo, hi = num(k), num(lo), num(hi)
    if k is None:
        return None
    return (k, lo if lo is not None else k, hi if hi is not None else k)


def judge_label(row: Mapping[str, Any]) -> str:
    """``judge · prompt`` of a leaderboard row (just the judge when it has no prompt).

    >>> judge_label({"judge": "gpt-4o-mini", "prompt": "v2"}), judge_label({"judge": "heuristic"})
    ('gpt-4o-mini · v2', 'heuristic')
    >>> judge_label({"judge": "heuristic", "prompt": float("nan")})
    'heuristic'
    """
    name = str(row.get("judge", row.get("key", "?")))
    prompt = row.get("prompt")
    if prompt is None or (isinstance(prompt, float) and math.isnan(prompt)) \
            or str(prompt) in ("", "nan", "None"):
        return name
    return f"{name} · {prompt}"


def key_label(key: Any) -> str:
    """A confusion matrix's key (a judge name or a ``(judge, prompt)`` tuple) as a title.

    >>> key_label(("gpt-4o-mini", "v2")), key_label(("heuristic", None)), key_label("heuristic")
    ('gpt-4o-mini · v2', 'heuristic', 'heuristic')
    """
    if isinstance(key, tuple):
        return " · ".join(str(k) for k in key if k is not None and str(k) != "")
    return str(key)
