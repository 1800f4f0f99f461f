"""Helpers the report's sections share: table records, plurals, the CI's name, judge errors.

Internal to :mod:`maev_kit.reporting`; every section module may import from here, this module
imports none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maev_kit.reporting import _html as h
from maev_kit.rendering.internal import num as _num


def _as_dict(obj: Any) -> dict[str, Any] | None:
    """``obj`` as a plain dict (``model_dump``, ``to_dict``, a mapping or a dataclass's fields),
    ``{"value": str(obj)}`` for anything else, None for None."""
    if obj is None:
        return None
    for attr in ("model_dump", "to_dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                d = fn()
            except TypeError:
                continue
            if isinstance(d, Mapping):
                return dict(d)
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
                if not hasattr(getattr(obj, f.name), "to_html")}
    return {"value": str(obj)}


def _plural(n: int, word: str) -> str:
    """``n word`` with an English plural.

    >>> _plural(1, "loop"), _plural(2, "loop"), _plural(2, "lost")
    ('1 loop', '2 loops', '2 lost')
    """
    if n == 1 or word in ("lost", "contradicted"):
        return f"{n} {word}"
    return f"{n} {word}s"


def _records(df: Any) -> list[dict[str, Any]]:
    """The rows of a DataFrame as dicts keyed by the column names (``[]`` for None or empty)."""
    if df is None or len(df) == 0:
        return []
    cols = [str(c) for c in df.columns]
    return [dict(zip(cols, row)) for row in df.itertuples(index=False, name=None)]


def _ci_name(confidence: Any) -> str:
    """How the report names a confidence interval: ``95 % CI`` for 0.95, else ``CI``.

    >>> _ci_name(0.95), _ci_name(0.9), _ci_name(None), _ci_name(95)
    ('95 % CI', '90 % CI', 'CI', 'CI')
    """
    conf = _num(confidence)
    return f"{conf * 100:g} % CI" if conf is not None and 0 < conf < 1 else "CI"


@dataclass(frozen=True)
class _JudgeErrors:
    """Facts to judge, judged, failed and the failures by cause (from the result or its ledger)."""

    total: int
    judged: int
    failed: int
    by_cause: dict[str, int]

    def causes(self) -> str:
        """``rate_limit 10, timeout 2``: the causes, most frequent first."""
        ranked = sorted(self.by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{c} {n}" for c, n in ranked if n)


def _judge_errors(ev: Any) -> _JudgeErrors:
    """The run's judge-error counts: ``ev.judge_errors`` when the result has them, else counted
    from the ledger (a row with an ``error``, or no label, is a fact the judge failed on)."""
    je = getattr(ev, "judge_errors", None)
    if je is not None and hasattr(je, "failed") and hasattr(je, "total"):
        return _JudgeErrors(int(je.total), int(je.judged), int(je.failed),
                            dict(getattr(je, "by_cause", {}) or {}))
    recs = _records(getattr(ev, "ledger", None))
    failed = [r for r in recs if not h.is_missing(r.get("error")) or
              h.is_missing(r.get("label"))]
    by_cause: dict[str, int] = {}
    for r in failed:
        cause = r.get("error_cause")
        cause = "other" if h.is_missing(cause) else str(cause)
        by_cause[cause] = by_cause.get(cause, 0) + 1
    return _JudgeErrors(len(recs), len(recs) - len(failed), len(failed), by_cause)
