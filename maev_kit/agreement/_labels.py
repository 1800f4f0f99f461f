"""Label validation and encoding shared by every agreement statistic.

Labels are strings from an explicit, ordered ``labels`` tuple; ``None`` (or a float NaN, or
``pandas.NA``) is a missing label. Anything else raises :class:`ValueError` naming the value,
never becoming a silent extra category.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from maev_kit.errors import UndefinedMetricWarning
from maev_kit.retention import LABELS

__all__ = ["LABELS", "MISSING", "check_labels", "confusion_counts", "encode",
           "encode_table", "is_missing", "rating_values", "undefined"]

#: Code of a missing label in encoded arrays.
MISSING = -1


def is_missing(value: Any) -> bool:
    """True for ``None``, a float NaN and ``pandas.NA``."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in {"NAType", "NaTType"}


def check_labels(labels: Sequence[str], *, name: str = "labels", used: Any = ()
                 ) -> tuple[str, ...]:
    """Validate an explicit label order: a non-empty sequence of distinct strings.

    A criterion (anything with a ``labels`` tuple and a ``question``, such as
    :class:`maev_kit.criteria.Criterion`) stands for its labels, in its order; a criterion
    whose answers are the agents of each conversation (``names_agents``, such as
    ``failure_attribution()``) for the labels in ``used`` (the values rated), sorted.
    """
    if getattr(labels, "names_agents", False) is True:
        found = sorted({v for v in used if not is_missing(v)}, key=str)
        if not found:
            raise ValueError(f"criterion {getattr(labels, 'name', '?')!r} has the agents of "
                             "each conversation as its answers: no label was given to take "
                             f"them from; pass `{name}=` the agents")
        labels = found
    elif hasattr(labels, "question") and isinstance(getattr(labels, "labels", None), tuple):
        labels = labels.labels  # type: ignore[attr-defined]  # a Criterion
    if isinstance(labels, str):
        raise ValueError(f"`{name}` must be a sequence of label strings, not the string "
                         f"{labels!r}; pass e.g. ({labels!r},)")
    out = tuple(labels)
    if not out:
        raise ValueError(f"`{name}` must not be empty; pass e.g. {LABELS!r}")
    if len(set(out)) != len(out):
        dup = sorted({x for x in out if out.count(x) > 1})
        raise ValueError(f"`{name}` has repeated values {dup}; each label must appear once")
    return out


def encode(values: Any, labels: tuple[str, ...], *, name: str) -> np.ndarray:
    """Encode labels as codes ``0..q-1`` (order of ``labels``), missing as :data:`MISSING`.

    >>> encode(["lost", None, "retained"], LABELS, name="human").tolist()
    [1, -1, 0]
    """
    if isinstance(values, (str, bytes)):
        raise ValueError(f"`{name}` must be a sequence of labels, not a single string")
    index = {lab: i for i, lab in enumerate(labels)}
    seq = list(values)
    codes = np.empty(len(seq), dtype=np.int64)
    for i, v in enumerate(seq):
        if is_missing(v):
            codes[i] = MISSING
            continue
        try:
            codes[i] = index[v]
        except (KeyError, TypeError):
            raise ValueError(
                f"`{name}` holds the label {v!r} (item {i}), which is not one of `labels` "
                f"{list(labels)!r}. Fix the label, mark it missing with None, or pass the full "
                f"label set in `labels=`.") from None
    return codes


def rating_values(ratings: Any) -> list[Any]:
    """Every value of ``ratings`` (the forms :func:`encode_table` takes); [] for another form."""
    if isinstance(ratings, Mapping):
        rows = list(ratings.values())
    elif hasattr(ratings, "columns") and hasattr(ratings, "iloc"):
        rows = [ratings[c].tolist() for c in ratings.columns]
    elif isinstance(ratings, Sequence) and not isinstance(ratings, (str, bytes)):
        rows = list(ratings)
    else:
        return []
    return [v for r in rows if isinstance(r, Sequence) and not isinstance(r, (str, bytes))
            for v in r]


def encode_table(ratings: Any, labels: tuple[str, ...], *, name: str = "ratings"
                 ) -> tuple[list[str], np.ndarray]:
    """Encode many raters' labels into a ``(raters, items)`` code array.

    ``ratings`` is a mapping annotator → labels (aligned by item), a pandas DataFrame whose
    columns are annotators and rows items, or a sequence of per-rater label sequences (rows are
    raters, as in the ``krippendorff`` package).
    """
    if isinstance(ratings, Mapping):
        names = [str(k) for k in ratings]
        rows = list(ratings.values())
    elif hasattr(ratings, "columns") and hasattr(ratings, "iloc"):
        names = [str(c) for c in ratings.columns]
        rows = [ratings[c].tolist() for c in ratings.columns]
    elif isinstance(ratings, (str, bytes)) or not isinstance(ratings, Sequence):
        raise ValueError(f"`{name}` must be a mapping annotator -> labels, a DataFrame with one "
                         "column per annotator, or a list of per-annotator label lists")
    else:
        rows = list(ratings)
        names = [f"rater_{i}" for i in range(len(rows))]
    if not rows:
        raise ValueError(f"`{name}` holds no raters")
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise ValueError(f"`{name}`: every rater must have one label (or None) per item; "
                         f"got lengths {sorted(lengths)}")
    codes = np.stack([encode(r, labels, name=f"{name}[{n!r}]") for n, r in zip(names, rows)])
    return names, codes


def confusion_counts(a: np.ndarray, b: np.ndarray, q: int,
                     sample_weight: np.ndarray | None = None) -> np.ndarray:
    """``q × q`` counts of (a, b) code pairs; pairs with a missing code are left out."""
    keep = (a >= 0) & (b >= 0)
    idx = a[keep] * q + b[keep]
    w = None if sample_weight is None else sample_weight[keep]
    return np.bincount(idx, weights=w, minlength=q * q).reshape(q, q).astype(float)


def undefined(what: str, replace_by: float) -> float:
    """Warn that ``what`` is undefined and return the caller's fallback (NaN by default)."""
    warnings.warn(f"{what}; returning {replace_by}", UndefinedMetricWarning, stacklevel=3)
    return replace_by
