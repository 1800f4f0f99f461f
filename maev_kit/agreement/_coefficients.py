"""Gwet's chance-corrected agreement coefficients for many raters, with missing labels and SEs.

Fleiss' κ, Gwet's AC1/AC2, Conger's κ, Brennan–Prediger and Krippendorff's α computed from
the raw ratings with the formulas of Gwet (2014) as implemented in the irrCAC package
(``fleiss.kappa.raw``, ``gwet.ac1.raw``, ``conger.kappa.raw``, ``bp.coeff.raw``,
``krippen.alpha.raw``), including their linearised (jackknife-type) variances. Missing labels
are handled as irrCAC does:

* an item nobody labeled is left out entirely (``n`` counts the items with a label);
* observed agreement ``p_a`` averages over the items with two or more labels;
* chance agreement uses every labeled item (an item labeled once still tells which categories
  are common), except for α, which uses only pairable items (two or more labels);
* the variance sums over the ``n`` labeled items (α: over its pairable items).

Unlike irrCAC, the categories are always the full ``labels`` (irrCAC uses the categories that
occur unless ``categories=`` is passed), so a category nobody used still counts in ``q``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from maev_kit.agreement._kappa import Weights, agreement_weights
from maev_kit.agreement._labels import LABELS, check_labels, encode_table, rating_values, undefined
from maev_kit.agreement._report import _f

__all__ = ["AgreementCoefficient", "MultiRaterAgreement", "multi_rater_agreement"]


@dataclass(frozen=True)
class AgreementCoefficient:
    """One chance-corrected agreement coefficient with its standard error.

    ``value = (observed_agreement − expected_agreement) / (1 − expected_agreement)``.
    ``se`` is Gwet's large-sample SE conditional on the raters (irrCAC's ``se``; NaN with fewer
    than two items). ``n_items`` is the number of items the variance sums over.
    """

    name: str
    value: float
    se: float
    observed_agreement: float
    expected_agreement: float
    n_items: int

    def ci(self, confidence: float = 0.95) -> tuple[float, float]:
        """``value ± t·se`` with ``n_items − 1`` degrees of freedom, the upper bound capped at 1.

        This is irrCAC's interval. It rests on a normal approximation; for a judge against one
        human, :func:`agreement_report`'s bootstrap CI is the better choice at small n.

        >>> lo, hi = AgreementCoefficient("AC1", 0.5, 0.1, 0.6, 0.2, 31).ci()
        >>> round(lo, 6), round(hi, 6)
        (0.295773, 0.704227)
        """
        if not 0 < confidence < 1:
            raise ValueError(f"`confidence` must be in (0, 1), not {confidence!r}")
        if math.isnan(self.value) or math.isnan(self.se) or self.n_items < 2:
            return float("nan"), float("nan")
        from scipy import stats

        half = float(stats.t.ppf(0.5 + confidence / 2, self.n_items - 1)) * self.se
        return self.value - half, min(1.0, self.value + half)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (NaN → None)."""
        return {"name": self.name, "value": _f(self.value), "se": _f(self.se),
                "observed_agreement": _f(self.observed_agreement),
                "expected_agreement": _f(self.expected_agreement), "n_items": self.n_items}


@dataclass(frozen=True)
class MultiRaterAgreement:
    """Five chance-corrected coefficients for the same ratings (see :func:`multi_rater_agreement`).

    ``gwet_ac`` is AC1 without weights and AC2 with them (its ``name`` says which). All five
    share the observed agreement (except α, which corrects it for small samples); they differ
    in how they estimate chance agreement.
    """

    fleiss_kappa: AgreementCoefficient
    gwet_ac: AgreementCoefficient
    conger_kappa: AgreementCoefficient
    brennan_prediger: AgreementCoefficient
    krippendorff_alpha: AgreementCoefficient
    labels: tuple[str, ...]
    weights: str | None
    n_items: int
    n_raters: int

    @property
    def coefficients(self) -> tuple[AgreementCoefficient, ...]:
        return (self.fleiss_kappa, self.gwet_ac, self.conger_kappa, self.brennan_prediger,
                self.krippendorff_alpha)

    def to_frame(self, confidence: float = 0.95) -> pd.DataFrame:
        """One row per coefficient: value, se, t-based CI, p_a, p_e, n."""
        rows = []
        for c in self.coefficients:
            lo, hi = c.ci(confidence)
            rows.append({"coefficient": c.name, "value": c.value, "se": c.se, "ci_low": lo,
                         "ci_high": hi, "observed_agreement": c.observed_agreement,
                         "expected_agreement": c.expected_agreement, "n_items": c.n_items})
        return pd.DataFrame(rows).set_index("coefficient")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (NaN → None)."""
        return {"fleiss_kappa": self.fleiss_kappa.to_dict(), "gwet_ac": self.gwet_ac.to_dict(),
                "conger_kappa": self.conger_kappa.to_dict(),
                "brennan_prediger": self.brennan_prediger.to_dict(),
                "krippendorff_alpha": self.krippendorff_alpha.to_dict(),
                "labels": list(self.labels), "weights": self.weights,
                "n_items": self.n_items, "n_raters": self.n_raters}


def _finish(name: str, pa: float, pe: float, coef_i: np.ndarray, pe_i: np.ndarray | None,
            n: int) -> AgreementCoefficient:
    """Coefficient and Gwet's linearised SE from per-item terms (irrCAC's ``*.ivec``).

    ``coef_i`` are the items' agreement terms ``(n/n₂)(p_a,i − p_e·[r_i ≥ 2])/(1 − p_e)``;
    ``pe_i`` the items' chance-agreement terms (None when ``p_e`` is a constant).
    """
    if pe >= 1.0 - 1e-12:
        return AgreementCoefficient(name, float("nan"), float("nan"), pa, pe, n)
    value = (pa - pe) / (1 - pe)
    x = coef_i if pe_i is None else coef_i - 2 * (1 - value) * (pe_i - pe) / (1 - pe)
    se = math.sqrt(float(((x - value) ** 2).sum()) / (n * (n - 1))) if n > 1 else float("nan")
    return AgreementCoefficient(name, float(value), se, float(pa), float(pe), n)


def _alpha(counts: np.ndarray, w: np.ndarray) -> AgreementCoefficient:
    """Krippendorff's α and its SE on the pairable items (``krippen.alpha.raw``)."""
    r = counts.sum(axis=1)
    c = counts[r >= 2]
    r = r[r >= 2]
    n = len(r)
    if n == 0:
        return AgreementCoefficient("Krippendorff's alpha", float("nan"), float("nan"),
                                    float("nan"), float("nan"), 0)
    r_bar = float(r.mean())
    eps = 1.0 / float(r.sum())
    sum_q = (c * (c @ w.T - 1)).sum(axis=1)
    pa_prime = float((sum_q / (r_bar * (r - 1))).mean())
    pa = (1 - eps) * pa_prime + eps
    pi = (c / r_bar).mean(axis=0)
    pe = float(pi @ w @ pi)
    name = "Krippendorff's alpha"
    if pe >= 1.0 - 1e-12:
        return AgreementCoefficient(name, float("nan"), float("nan"), pa, pe, n)
    alpha = (pa - pe) / (1 - pe)
    alpha_prime = (pa_prime - pe) / (1 - pe)
    pa_i = sum_q / (r_bar * (r - 1)) - pa * (r - r_bar) / r_bar
    alpha_i = (pa_i - pe) / (1 - pe)
    pi_w = (w @ pi + w.T @ pi) / 2
    pe_i = c @ pi_w / r_bar - pe * (r - r_bar) / r_bar
    x = alpha_i - 2 * (1 - alpha_prime) * (pe_i - pe) / (1 - pe)
    se = math.sqrt(float(((x - alpha_prime) ** 2).sum()) / (n * (n - 1))) if n > 1 \
        else float("nan")
    return AgreementCoefficient(name, float(alpha), se, float(pa), pe, n)


def _conger(codes: np.ndarray, counts: np.ndarray, w: np.ndarray, pa: float,
            pa_term: np.ndarray, two: np.ndarray) -> AgreementCoefficient:
    """Conger's κ and its SE (``conger.kappa.raw``); ``codes`` is (items, raters)."""
    n, q = counts.shape
    name = "Conger's kappa"
    codes = codes[:, (codes >= 0).any(axis=0)]  # a rater with no label carries no information
    g = codes.shape[1]
    if g < 2:
        return AgreementCoefficient(name, float("nan"), float("nan"), pa, float("nan"), n)
    delta = (codes[:, :, None] == np.arange(q)).astype(float)  # (n, g, q)
    eps = (codes >= 0).astype(float)  # (n, g)
    classif = delta.sum(axis=0)  # (g, q)
    ng = classif.sum(axis=1)  # (g,)
    p = classif / ng[:, None]
    p_bar = p.mean(axis=0)
    s2 = (p.T @ p - g * np.outer(p_bar, p_bar)) / (g - 1)
    pe = float((w * (np.outer(p_bar, p_bar) - s2 / g)).sum())
    if pe >= 1.0 - 1e-12:
        return AgreementCoefficient(name, float("nan"), float("nan"), pa, pe, n)
    # λ_ig = Σ_k (n/n_g) Σ_l w_kl (δ_igl − (ε_ig − n_g/n) p_gl) · (g·p̄_k − p_gk)
    inner = delta @ w.T - (eps - ng / n)[:, :, None] * (p @ w.T)[None, :, :]
    lam = ((n / ng)[None, :, None] * inner * (g * p_bar - p)[None, :, :]).sum(axis=(1, 2))
    pe_i = lam / (g * (g - 1))
    coef_i = (n / two.sum()) * (pa_term - pe * two) / (1 - pe)
    return _finish(name, pa, pe, coef_i, pe_i, n)


def multi_rater_agreement(
    ratings: Any,
    *,
    labels: Sequence[str] = LABELS,
    weights: Weights = None,
) -> MultiRaterAgreement:
    """Fleiss' κ, Gwet's AC1/AC2, Conger's κ, Brennan–Prediger and Krippendorff's α, with SEs.

    Any number of raters (two or more); missing labels (``None``) allowed, handled as in
    Gwet's irrCAC ``*.raw`` functions: items nobody labeled are dropped, agreement is averaged
    over items with two or more labels, and items labeled once still count towards the
    category shares used for chance agreement (except for α, which uses pairable items only).
    The values equal irrCAC's ``fleiss.kappa.raw``, ``gwet.ac1.raw``, ``conger.kappa.raw``,
    ``bp.coeff.raw`` and ``krippen.alpha.raw`` with ``categories = labels``, and their SEs
    (Gwet's linearisation, conditional on the raters, no finite-population correction).

    With complete data, ``fleiss_kappa`` is Fleiss (1971) (= statsmodels' ``fleiss_kappa``),
    ``krippendorff_alpha`` equals the ``krippendorff`` package and Brennan–Prediger is
    Randolph's free-marginal κ. With missing labels, :func:`fleiss_kappa` gives the same value
    as ``fleiss_kappa`` here; statsmodels needs complete data (listwise deletion gives a
    different number).

    Parameters
    ----------
    ratings : mapping annotator → labels aligned by item (``None`` = not labeled), a DataFrame
        with one column per annotator, or a list of per-annotator label lists.
    labels : the categories, in order (the order matters for weighted coefficients). Every
        label counts in ``q``, used or not.
    weights : None, ``"linear"`` or ``"quadratic"``. With weights, ``gwet_ac`` is AC2 and
        every coefficient is its weighted version (credit for near misses).

    Returns
    -------
    MultiRaterAgreement
        ``fleiss_kappa``, ``gwet_ac``, ``conger_kappa``, ``brennan_prediger`` and
        ``krippendorff_alpha``, each an :class:`AgreementCoefficient` (``value``, ``se``,
        ``ci()``, observed and expected agreement). A coefficient whose chance agreement is 1
        (e.g. one class only) is NaN, with an :class:`~maev_kit.errors.UndefinedMetricWarning`.

    References
    ----------
    Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed., Advanced Analytics.
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. *Br. J. Math. Stat. Psychol.* 61. Conger, A. J. (1980). Integration and
    generalization of kappas for multiple raters. *Psychol. Bull.* 88.

    Examples
    --------
    >>> r = multi_rater_agreement({
    ...     "a1": ["retained", "retained", "lost", "contradicted", "retained", None],
    ...     "a2": ["retained", "lost", "lost", "contradicted", "retained", "lost"],
    ...     "a3": ["retained", "retained", "lost", "contradicted", None, "lost"]})
    >>> round(r.fleiss_kappa.value, 6), round(r.fleiss_kappa.se, 6)
    (0.821782, 0.18543)
    >>> round(r.gwet_ac.value, 6), r.gwet_ac.name, r.n_items, r.n_raters
    (0.838565, 'AC1', 6, 3)
    >>> r.to_frame().round(4).loc[:, ["value", "se"]]  # doctest: +NORMALIZE_WHITESPACE
                           value      se
    coefficient
    Fleiss' kappa         0.8218  0.1854
    AC1                   0.8386  0.1594
    Conger's kappa        0.8282  0.1766
    Brennan-Prediger      0.8333  0.1667
    Krippendorff's alpha  0.8148  0.2025
    """
    labels = check_labels(labels, used=rating_values(ratings))
    w, n_raters, codes = _encode_ratings(ratings, labels, weights)
    counts = np.stack([(codes == k).sum(axis=1) for k in range(len(labels))], axis=1).astype(float)
    n = len(counts)
    if not (counts.sum(axis=1) >= 2).any():
        undefined("agreement is undefined: no item has two or more labels", float("nan"))
        return _undefined_agreement(labels, weights, n, n_raters)
    result = MultiRaterAgreement(*_five_coefficients(codes, counts, w, weights), labels=labels,
                                 weights=weights, n_items=n, n_raters=n_raters)
    bad = [c.name for c in result.coefficients if math.isnan(c.value)]
    if bad:
        undefined(f"{', '.join(bad)} undefined: chance agreement is 1 (one class only?)",
                  float("nan"))
    return result


_Five = tuple[AgreementCoefficient, AgreementCoefficient, AgreementCoefficient,
              AgreementCoefficient, AgreementCoefficient]


def _encode_ratings(ratings: Any, labels: tuple[str, ...],
                    weights: Weights) -> tuple[np.ndarray, int, np.ndarray]:
    """Check the categories and raters; the agreement weights, the number of raters and the
    codes as (items, raters), the items nobody labeled left out."""
    q = len(labels)
    if q < 2:
        raise ValueError("`labels` must hold at least two categories; with one there is no "
                         "chance correction")
    w = agreement_weights(q, weights)
    names, codes = encode_table(ratings, labels)
    if len(names) < 2:
        raise ValueError("`ratings` must hold at least two raters")
    return w, len(names), codes[:, (codes >= 0).any(axis=0)].T


def _undefined_agreement(labels: tuple[str, ...], weights: Weights, n: int,
                         n_raters: int) -> MultiRaterAgreement:
    """Every coefficient NaN: no item has two or more labels."""
    nan = float("nan")
    empty = [AgreementCoefficient(nm, nan, nan, nan, nan, n) for nm in
             ("Fleiss' kappa", "AC1" if weights is None else "AC2", "Conger's kappa",
              "Brennan-Prediger", "Krippendorff's alpha")]
    # five names, so five coefficients: one per field of MultiRaterAgreement
    return MultiRaterAgreement(*cast("_Five", empty), labels=labels, weights=weights,
                               n_items=n, n_raters=n_raters)


def _item_terms(pe: float, pa_term: np.ndarray, two: np.ndarray) -> np.ndarray:
    """The items' agreement terms ``(n/n₂)(p_a,i − p_e·[r_i ≥ 2])/(1 − p_e)`` for a chance
    agreement ``pe`` (NaN when it is 1)."""
    n, n2 = len(pa_term), int(two.sum())
    return (n / n2) * (pa_term - pe * two) / (1 - pe) if pe < 1 else np.full(n, np.nan)


def _five_coefficients(codes: np.ndarray, counts: np.ndarray, w: np.ndarray,
                       weights: Weights) -> _Five:
    """Fleiss' κ, Gwet's AC, Conger's κ, Brennan–Prediger and Krippendorff's α (the order of
    :class:`MultiRaterAgreement`'s fields) from the codes (items, raters) and the label counts
    (items, categories) of items of which some have two or more labels."""
    n, q = counts.shape
    r = counts.sum(axis=1)
    two = r >= 2
    sum_q = (counts * (counts @ w.T - 1)).sum(axis=1)
    pa_term = np.where(two, sum_q / np.where(two, r * (r - 1), 1.0), 0.0)
    pa = float(pa_term[two].mean())
    pi = (counts / r[:, None]).mean(axis=0)
    # Fleiss: chance = Σ w_kl π_k π_l
    pe_f = float(pi @ w @ pi)
    pi_w = (w @ pi + w.T @ pi) / 2
    fleiss = _finish("Fleiss' kappa", pa, pe_f, _item_terms(pe_f, pa_term, two),
                     counts @ pi_w / r, n)
    # Gwet: chance = T_w / (q(q−1)) · Σ π_k (1 − π_k)
    tw = float(w.sum()) / (q * (q - 1))
    pe_g = tw * float((pi * (1 - pi)).sum())
    gwet = _finish("AC1" if weights is None else "AC2", pa, pe_g,
                   _item_terms(pe_g, pa_term, two), tw * (counts @ (1 - pi)) / r, n)
    # Brennan–Prediger: chance = T_w / q², a constant
    pe_bp = float(w.sum()) / q**2
    bp = _finish("Brennan-Prediger", pa, pe_bp, _item_terms(pe_bp, pa_term, two), None, n)
    conger = _conger(codes, counts, w, pa, pa_term, two)
    alpha = _alpha(counts, w)
    return fleiss, gwet, conger, bp, alpha
