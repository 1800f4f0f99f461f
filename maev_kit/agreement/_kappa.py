"""Two-rater chance-corrected agreement computed from a confusion matrix.

Every statistic here is a function of the ``q × q`` table of counts (rows: rater a, columns:
rater b, in the order of ``labels``), so item order never matters and a bootstrap can resample
the table's cells instead of items. The table functions accept a stack of tables
``(..., q, q)`` and return one value per table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from maev_kit.agreement._labels import LABELS, check_labels, confusion_counts, encode, undefined
from maev_kit.agreement._labels import rating_values

__all__ = ["cohen_kappa", "gwet_ac1"]

Weights = Literal["linear", "quadratic"] | None


def agreement_weights(q: int, weights: Weights) -> np.ndarray:
    """``q × q`` agreement weights: 1 on the diagonal, 0 for the furthest categories."""
    if weights is None:
        return np.eye(q)
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"`weights` must be None, 'linear' or 'quadratic', not {weights!r}")
    if q == 1:
        return np.ones((1, 1))
    d = np.abs(np.subtract.outer(np.arange(q), np.arange(q))) / (q - 1)
    return 1.0 - (d if weights == "linear" else d**2)


def _margins(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return t.sum(axis=(-2, -1)), t.sum(axis=-1), t.sum(axis=-2)


def kappa_from_table(t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Cohen's κ (weighted by agreement weights ``w``) of each table; NaN where undefined.

    Computed in count space, ``(n·Σw·t − Σw·r·c) / (n² − Σw·r·c)``, so a degenerate table
    (one class, both raters) gives an exactly zero denominator.
    """
    n, r, c = _margins(t)
    s_obs = np.einsum("...ij,ij->...", t, w)
    s_exp = np.einsum("...i,...j,ij->...", r, c, w)
    den = n * n - s_exp
    with np.errstate(divide="ignore", invalid="ignore"):
        k = (n * s_obs - s_exp) / den
    return np.where(np.abs(den) > 1e-9 * np.maximum(n * n, 1.0), k, np.nan)


def observed_expected(t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Weighted observed and chance agreement ``p_o, p_e`` of one table."""
    n, r, c = _margins(t)
    if n == 0:
        return float("nan"), float("nan")
    return float((w * t).sum() / n), float((w * np.outer(r, c)).sum() / (n * n))


def fce_se(t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Fleiss–Cohen–Everitt (1969) large-sample SE of κ_w, and its SE under κ = 0."""
    n, r, c = _margins(t)
    if n == 0:
        return float("nan"), float("nan")
    p, pr, pc = t / n, r / n, c / n
    po, pe = float((w * p).sum()), float((w * np.outer(pr, pc)).sum())
    if pe == 1.0:
        return float("nan"), float("nan")
    k = (po - pe) / (1 - pe)
    wi, wj = w @ pc, pr @ w
    tot = np.add.outer(wi, wj)
    var = ((p * (w - tot * (1 - k)) ** 2).sum() - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
    var0 = ((np.outer(pr, pc) * (w - tot) ** 2).sum() - pe**2) / (n * (1 - pe) ** 2)
    return float(np.sqrt(max(var, 0.0))), float(np.sqrt(max(var0, 0.0)))


def kappa_max(t: np.ndarray) -> float:
    """Largest κ the two marginals allow (Cohen 1960)."""
    n, r, c = _margins(t)
    pe = float((r * c).sum() / (n * n))
    if pe == 1.0:
        return float("nan")
    return (float(np.minimum(r, c).sum() / n) - pe) / (1 - pe)


def ac_from_table(t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Gwet's AC1 (identity ``w``) or AC2 (weighted) of each table; q = table size.

    ``p_e = T_w / (q(q−1)) · Σ π_k(1−π_k)`` with ``π_k`` the mean of both raters' marginals.
    """
    q = t.shape[-1]
    n, r, c = _margins(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        pa = np.einsum("...ij,ij->...", t, w) / n
        pi = (r + c) / (2 * n[..., None])
        pe = w.sum() / (q * (q - 1)) * (pi * (1 - pi)).sum(axis=-1) if q > 1 else 0.0 * n
        out = (pa - pe) / (1 - pe)
    return np.where(np.isfinite(out), out, np.nan)


def ac_table_se(t: np.ndarray, w: np.ndarray) -> float:
    """Gwet's large-sample SE of AC1/AC2 from one two-rater table (irrCAC ``table`` gwet).

    Differs slightly from the SE from raw ratings (``multi_rater_agreement(...).gwet_ac.se``),
    which linearises over items instead of cells.
    """
    q = t.shape[-1]
    n, r, c = _margins(t)
    if n == 0 or q < 2:
        return float("nan")
    p = t / n
    pi = (r + c) / (2 * n)
    tw = float(w.sum()) / (q * (q - 1))
    pa = float((w * p).sum())
    pe = tw * float((pi * (1 - pi)).sum())
    if pe >= 1.0:
        return float("nan")
    ac = (pa - pe) / (1 - pe)
    term = w - 2 * (1 - ac) * tw * (1 - np.add.outer(pi, pi) / 2)
    var = ((p * term**2).sum() - (pa - 2 * (1 - ac) * pe) ** 2) / (n * (1 - pe) ** 2)
    return float(np.sqrt(max(var, 0.0)))


def cohen1960_se(t: np.ndarray) -> float:
    """Cohen's (1960) approximate SE of κ, ``√(p_o(1 − p_o)/n) / (1 − p_e)``.

    Historical: it ignores the sampling error of the marginals. Prefer :func:`fce_se`.
    """
    n, r, c = _margins(t)
    if n == 0:
        return float("nan")
    po = float(np.trace(t) / n)
    pe = float((r * c).sum() / (n * n))
    return math.sqrt(po * (1 - po) / n) / (1 - pe) if pe < 1 else float("nan")


def pabak(t: np.ndarray) -> float:
    """Prevalence- and bias-adjusted κ, ``(q·p_o − 1)/(q − 1)`` (Byrt et al. 1993)."""
    q = t.shape[-1]
    n = t.sum()
    return float((q * np.trace(t) / n - 1) / (q - 1)) if q > 1 and n else float("nan")


def scott_pi(t: np.ndarray) -> float:
    """Scott's π (Fleiss' κ for two raters): chance from the pooled marginals."""
    n, r, c = _margins(t)
    pi = (r + c) / (2 * n)
    pe = float((pi**2).sum())
    return (float(np.trace(t) / n) - pe) / (1 - pe) if pe != 1.0 else float("nan")


def prevalence_bias(t: np.ndarray) -> tuple[float, float]:
    """Prevalence index ``|a − d|/n`` (2 × 2 only, else NaN) and bias index ``Σ|r_k − c_k|/2n``."""
    n, r, c = _margins(t)
    bi = float(np.abs(r - c).sum() / (2 * n))
    pi = float(abs(t[0, 0] - t[1, 1]) / n) if t.shape[-1] == 2 else float("nan")
    return pi, bi


def _pair_table(a: Any, b: Any, labels: Sequence[str], sample_weight: Any = None,
                names: tuple[str, str] = ("a", "b")) -> tuple[tuple[str, ...], np.ndarray, int]:
    labels = check_labels(labels, used=[*rating_values([a]), *rating_values([b])])
    ca = encode(a, labels, name=names[0])
    cb = encode(b, labels, name=names[1])
    if len(ca) != len(cb):
        raise ValueError(f"`{names[0]}` and `{names[1]}` must have the same length "
                         f"(one label per item); got {len(ca)} and {len(cb)}")
    sw = None
    if sample_weight is not None:
        sw = np.asarray(sample_weight, dtype=float)
        if sw.shape != ca.shape:
            raise ValueError(f"`sample_weight` must have one weight per item ({len(ca)}), "
                             f"got shape {sw.shape}")
    t = confusion_counts(ca, cb, len(labels), sw)
    n_missing = int(((ca < 0) | (cb < 0)).sum())
    return labels, t, n_missing


def cohen_kappa(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    labels: Sequence[str] = LABELS,
    weights: Weights = None,
    sample_weight: Sequence[float] | None = None,
    replace_undefined_by: float = np.nan,
) -> float:
    """Cohen's κ between two raters, with an explicit label order.

    Equal to scikit-learn's ``cohen_kappa_score(a, b, labels=labels, ...)`` on complete data, but
    items where either label is missing (``None``/NaN) are dropped pairwise (not made a category),
    and a label outside ``labels`` raises :class:`ValueError` naming it instead of being
    silently dropped.

    Parameters
    ----------
    a, b : sequences of labels (``None`` = missing), one per item.
    labels : the categories in order; the order matters for weighted κ.
    weights : None, ``"linear"`` or ``"quadratic"``.
    sample_weight : optional weight per item.
    replace_undefined_by : value returned (with an
        :class:`~maev_kit.errors.UndefinedMetricWarning`) when κ is undefined, e.g. when both
        raters use a single class.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. *Educ. Psychol. Meas.* 20.

    Examples
    --------
    >>> human = ["retained"] * 10 + ["lost"] * 7 + ["contradicted"] * 3
    >>> judge = (["retained"] * 8 + ["lost", "contradicted", "retained"] + ["lost"] * 5
    ...          + ["contradicted", "lost", "contradicted", "contradicted"])
    >>> round(cohen_kappa(human, judge), 6)
    0.598394
    >>> round(cohen_kappa(human, judge, weights="linear"), 6)
    0.620253
    """
    labels, t, _ = _pair_table(a, b, labels, sample_weight)
    w = agreement_weights(len(labels), weights)
    if t.sum() == 0:
        return undefined("κ is undefined: no item has both labels", replace_undefined_by)
    k = float(kappa_from_table(t, w))
    if np.isnan(k):
        return undefined("κ is undefined: chance agreement is 1 (both raters use a single "
                         "class)", replace_undefined_by)
    return k


def gwet_ac1(
    a: Sequence[Any],
    b: Sequence[Any],
    *,
    labels: Sequence[str] = LABELS,
    weights: Weights = None,
) -> float:
    """Gwet's AC1 (or AC2 with ``weights``): agreement corrected for chance, robust to prevalence.

    The number of categories is ``len(labels)``, also when some are unused. Missing labels are
    dropped pairwise.

    References
    ----------
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. *Br. J. Math. Stat. Psychol.* 61.

    Examples
    --------
    >>> round(gwet_ac1(["retained"] * 6, ["retained"] * 3 + ["lost"] * 2 + ["contradicted"]), 6)
    0.373913
    """
    labels, t, _ = _pair_table(a, b, labels)
    if len(labels) < 2:
        raise ValueError("`labels` must hold at least two categories for AC1")
    if t.sum() == 0:
        return undefined("AC1 is undefined: no item has both labels", np.nan)
    return float(ac_from_table(t, agreement_weights(len(labels), weights)))
