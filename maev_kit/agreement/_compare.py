"""Comparing judges on the same items: paired bootstrap of Δκ, McNemar, Stuart–Maxwell, Holm."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pandas as pd

from maev_kit.agreement._bootstrap import PatternBootstrap, check_resamples, percentile_ci
from maev_kit.agreement._kappa import kappa_from_table
from maev_kit.agreement._labels import LABELS, check_labels, encode, encode_table, undefined
from maev_kit.agreement._multi import _nanmean, majority_labels
from maev_kit.agreement._report import _f

__all__ = ["JudgeComparison", "bowker_test", "compare_judges", "holm", "mcnemar_chi2",
           "mcnemar_exact", "stuart_maxwell"]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values (step-down), in the input order.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    order = np.argsort(p, kind="stable")
    adj = np.empty(m)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[idx]))
        adj[idx] = running
    return [float(round(x, 15)) for x in adj]


def mcnemar_exact(b: int, c: int) -> tuple[float, float]:
    """Exact two-sided McNemar p-value and mid-p from the discordant counts ``b`` and ``c``.

    >>> mcnemar_exact(8, 0)
    (0.0078125, 0.00390625)
    """
    n = b + c
    if n == 0:
        return 1.0, 1.0
    k = min(b, c)
    pmf = [math.comb(n, i) / 2**n for i in range(k + 1)]
    cdf = sum(pmf)
    return min(1.0, 2 * cdf), min(1.0, 2 * (cdf - pmf[k] / 2))


def mcnemar_chi2(b: int, c: int, *, correction: bool = True) -> tuple[float, float]:
    """Asymptotic McNemar test from the discordant counts: ``(χ², p)`` with one df.

    ``χ² = (|b − c| − 1)² / (b + c)`` with Edwards' continuity correction (the default, as in
    R's ``mcnemar.test``), ``(b − c)² / (b + c)`` without. With few discordant items prefer
    :func:`mcnemar_exact`, which :func:`compare_judges` reports.

    >>> chi2, p = mcnemar_chi2(8, 0)
    >>> chi2, round(p, 12)
    (6.125, 0.013328328781)
    """
    for name, v in (("b", b), ("c", c)):
        if v < 0:
            raise ValueError(f"`{name}` must be a count >= 0, not {v!r}")
    n = b + c
    if n == 0:
        return 0.0, 1.0
    d = abs(b - c)
    if correction:
        d = max(d - 1, 0)
    chi2 = d * d / n
    return float(chi2), _chi2_sf(chi2, 1)


def _chi2_sf(x: float, df: int) -> float:
    """Upper tail of χ²(df) at ``x`` for integer ``df`` (no scipy: the closed-form series).

    >>> round(_chi2_sf(1.0, 2), 12), round(_chi2_sf(3.841458820694124, 1), 12)
    (0.606530659713, 0.05)
    """
    if df <= 0:
        return float("nan")
    if x <= 0:
        return 1.0
    y = x / 2
    if df % 2 == 0:
        a, q = 1.0, math.exp(-y)
    else:
        a, q = 0.5, math.erfc(math.sqrt(y))
    while a < df / 2:
        q += math.exp(a * math.log(y) - y - math.lgamma(a + 1))
        a += 1
    return min(1.0, q)


def stuart_maxwell(table: Any) -> tuple[float, int, float]:
    """Stuart–Maxwell test of marginal homogeneity of a square table: (χ², df, p).

    Categories unused by both raters are dropped, so ``df`` is the number of used categories
    minus one.

    >>> chi2, df, p = stuart_maxwell([[19, 1, 0], [1, 11, 0], [0, 1, 7]])
    >>> round(chi2, 9), df, round(p, 9)
    (1.0, 2, 0.60653066)
    """
    t = np.asarray(table, dtype=float)
    used = (t.sum(axis=0) + t.sum(axis=1)) > 0
    t = t[np.ix_(used, used)]
    q = t.shape[0]
    if q < 2:
        return 0.0, 0, float("nan")
    d = (t.sum(axis=1) - t.sum(axis=0))[:-1]
    s = -(t + t.T)[:-1, :-1]
    np.fill_diagonal(s, (t.sum(axis=1) + t.sum(axis=0) - 2 * np.diag(t))[:-1])
    if not d.any():
        return 0.0, q - 1, 1.0
    df = int(np.linalg.matrix_rank(s))
    inv = np.linalg.inv(s) if df == q - 1 else np.linalg.pinv(s)
    stat = float(d @ inv @ d)
    return stat, df, _chi2_sf(stat, df)


def bowker_test(table: Any) -> tuple[float, int, float]:
    """Bowker's test of symmetry of a square table: (χ², df, p), df = q(q−1)/2.

    >>> bowker_test([[19, 1, 0], [1, 11, 0], [0, 1, 7]])[:2]
    (1.0, 3)
    """
    t = np.asarray(table, dtype=float)
    q = t.shape[0]
    stat = 0.0
    for i, j in itertools.combinations(range(q), 2):
        s = t[i, j] + t[j, i]
        if s > 0:
            stat += float((t[i, j] - t[j, i]) ** 2 / s)
    df = q * (q - 1) // 2
    return stat, df, _chi2_sf(stat, df)


def _bootstrap_p(stars: np.ndarray) -> float:
    """Two-sided bootstrap p-value of ``H0: Δ = 0`` from the resampled Δ*."""
    s = stars[~np.isnan(stars)]
    if s.size == 0:
        return float("nan")
    tail = min(int((s <= 0).sum()), int((s >= 0).sum()))
    return min(1.0, 2 * (tail + 1) / (s.size + 1))


@dataclass(frozen=True)
class JudgeComparison:
    """Judges compared on the same items.

    ``kappas``: each judge's κ (mean κ against each human when there are several).
    ``pairs``: one row per judge pair with Δκ = κ_a − κ_b, its paired percentile bootstrap CI
    and two-sided p-value, the exact McNemar test on per-item correctness, and Holm-adjusted
    p-values (over all pairs). ``marginals``: per judge, Stuart–Maxwell (marginal homogeneity)
    and Bowker (symmetry) tests of the judge's labels against the reference labels.
    """

    judges: tuple[str, ...]
    kappas: pd.Series
    pairs: pd.DataFrame = field(repr=False)
    marginals: pd.DataFrame = field(repr=False)
    n_used: int = 0
    reference: str = "human"
    confidence: float = 0.95

    def _first(self, col: str) -> Any:
        return self.pairs.iloc[0][col]

    @property
    def delta(self) -> float:
        """Δκ of the first pair (judge 1 − judge 2)."""
        return float(self._first("delta"))

    @property
    def ci(self) -> tuple[float, float]:
        """Bootstrap CI of Δκ of the first pair."""
        return float(self._first("delta_low")), float(self._first("delta_high"))

    @property
    def p_value(self) -> float:
        """Paired bootstrap p-value of Δκ of the first pair (Holm-adjusted if > 2 judges)."""
        return float(self._first("p_holm"))

    @property
    def mcnemar_p(self) -> float:
        """Exact McNemar p-value of the first pair (Holm-adjusted if > 2 judges)."""
        return float(self._first("mcnemar_p_holm"))

    def to_dict(self) -> dict[str, Any]:
        def recs(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: _f(v) for k, v in r.items()} for r in df.to_dict("records")]
        return {"judges": list(self.judges),
                "kappas": {k: _f(v) for k, v in self.kappas.items()},
                "pairs": recs(self.pairs), "marginals": recs(self.marginals),
                "n_used": self.n_used, "reference": self.reference,
                "confidence": self.confidence}


def compare_judges(
    human: Any,
    *judges: Any,
    names: Sequence[str] | None = None,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> JudgeComparison:
    """Is judge A really better than judge B on these items?

    Δκ gets a **paired** bootstrap (items resampled jointly for both judges, which is what
    makes it sharper than two separate CIs); McNemar's exact test checks per-item correctness;
    Stuart–Maxwell checks whether a judge shifts the label distribution. With more than two
    judges, every pair is compared and the p-values get Holm's correction.

    Parameters
    ----------
    human : one annotator's labels, or a mapping annotator → labels. With several
        annotators κ is each judge's mean κ against each annotator, and McNemar /
        Stuart–Maxwell use the majority label (ties to the more severe label).
    *judges : two or more label sequences aligned with ``human`` (or one mapping name → labels).
    names : judge names (default ``judge_1``, ``judge_2``, ...).

    Only items where every judge has a label (and at least one human) are used. With no such
    item (a judge whose calls all failed, say) every statistic is NaN, with an
    :class:`~maev_kit.errors.UndefinedMetricWarning` — never an exception.

    Examples
    --------
    >>> human = ["retained"] * 20 + ["lost"] * 12 + ["contradicted"] * 8
    >>> a = human[:18] + ["lost", "retained"] + ["lost"] * 10 + ["retained", "lost"] + \\
    ...     ["contradicted"] * 6 + ["lost", "contradicted"]
    >>> b = ["retained"] * 15 + ["lost"] * 2 + ["retained", "lost", "contradicted"] + \\
    ...     ["lost"] * 7 + ["retained"] * 2 + ["lost"] + ["contradicted"] * 6 + ["lost"] * 2 + \\
    ...     ["retained", "contradicted"]
    >>> c = compare_judges(human, a, b, names=["A", "B"], n_resamples=2000)
    >>> round(c.delta, 6), c.mcnemar_p
    (0.318543, 0.0078125)
    """
    labels = check_labels(labels)
    n_resamples = check_resamples(n_resamples)
    names, judges = _named_judges(judges, names)
    coded = _encode_labels(human, judges, names, labels)
    q, h, nj = len(labels), coded.humans.shape[0], len(names)
    boot = PatternBootstrap(np.vstack([coded.humans, coded.judges]), q)
    kappas = functools.partial(_judge_kappas, boot, h, nj, np.eye(q))
    point = kappas(boot.counts)
    if not coded.keep.any():
        undefined("no item has a label from every judge (and a human): nothing to compare",
                  np.nan)
    elif np.isnan(point).any():
        bad = [nm for nm, k in zip(names, point) if np.isnan(k)]
        undefined(f"κ is undefined for judges {bad} on these items (one class only?)", np.nan)
    stars = boot.run(kappas, n_resamples, seed)
    if stars.ndim != 2:  # no item to resample: no resampled κ at all
        stars = np.empty((0, nj))
    pairs = _pair_tests(names, point, stars, coded, confidence)
    return JudgeComparison(judges=tuple(names), kappas=pd.Series(point, index=names, name="kappa"),
                           pairs=pairs, marginals=_marginal_tests(names, coded, q),
                           n_used=int(coded.keep.sum()), reference=coded.reference,
                           confidence=confidence)


def _named_judges(judges: tuple[Any, ...], names: Sequence[str] | None
                  ) -> tuple[list[str], tuple[Any, ...]]:
    """The judges' names and label sequences: from one mapping name → labels, or positional
    with ``names`` (default ``judge_1``, ``judge_2``, ...); at least two, one distinct name
    each."""
    if len(judges) == 1 and isinstance(judges[0], Mapping):
        names = list(judges[0]) if names is None else names
        judges = tuple(judges[0].values())
    if len(judges) < 2:
        raise ValueError("compare_judges needs at least two judges: compare_judges(human, "
                         "judge_a, judge_b, ...)")
    names = [f"judge_{i + 1}" for i in range(len(judges))] if names is None else list(names)
    if len(names) != len(judges) or len(set(names)) != len(names):
        raise ValueError(f"`names` must give one distinct name per judge ({len(judges)}), "
                         f"got {names!r}")
    return names, judges


@dataclass(frozen=True)
class _Coded:
    """The labels of a comparison as codes, on the items used (every judge and at least one
    human labeled them): the humans' (annotators × items), the judges' (judges × items) and
    the reference label per item (the one human's, or the majority's)."""

    humans: np.ndarray
    judges: np.ndarray
    ref: np.ndarray
    reference: str  # "human" or "majority"
    keep: np.ndarray  # which of all the items are used


def _encode_labels(human: Any, judges: Sequence[Any], names: Sequence[str],
                   labels: tuple[str, ...]) -> _Coded:
    """Encode the humans' and judges' labels, check they are aligned by item, and keep the
    items every judge and at least one human labeled."""
    if isinstance(human, Mapping) or hasattr(human, "columns"):
        _, hcodes = encode_table(human, labels, name="human")
        reference = "majority"
        ref = encode(majority_labels(human, labels=labels), labels, name="majority")
    else:
        hcodes = encode(human, labels, name="human")[None, :]
        reference = "human"
        ref = hcodes[0]
    jcodes = np.stack([encode(j, labels, name=f"judge {nm!r}") for nm, j in zip(names, judges)])
    if jcodes.shape[1] != hcodes.shape[1]:
        raise ValueError(f"the judges have {jcodes.shape[1]} labels per item but `human` has "
                         f"{hcodes.shape[1]}; they must be aligned by item")
    keep = cast("np.ndarray", (jcodes >= 0).all(axis=0) & (hcodes >= 0).any(axis=0))
    return _Coded(hcodes[:, keep], jcodes[:, keep], ref[keep], reference, keep)


def _judge_kappas(boot: PatternBootstrap, n_humans: int, n_judges: int, w: np.ndarray,
                  wv: np.ndarray) -> np.ndarray:
    """Each judge's κ, the mean of its κ against each human, with the items weighted ``wv``
    (the judges' codes follow the humans' in ``boot``)."""
    return np.stack([_nanmean(np.stack([kappa_from_table(boot.table(wv, i, n_humans + j), w)
                                        for i in range(n_humans)], axis=-1))
                     for j in range(n_judges)], axis=-1)


def _holm_keeping_nan(p_values: pd.Series) -> list[float]:
    """Holm-adjusted ``p_values`` (a NaN counts as 1 in the adjustment and stays NaN)."""
    return [np.nan if math.isnan(p) else a for p, a in
            zip(p_values, holm(p_values.fillna(1.0).tolist()))]


def _pair_tests(names: Sequence[str], point: np.ndarray, stars: np.ndarray, coded: _Coded,
                confidence: float) -> pd.DataFrame:
    """One row per judge pair: Δκ with its paired bootstrap CI and p-value, per-item
    correctness against the reference and the exact McNemar test, and both p-values
    Holm-adjusted over the pairs."""
    correct = coded.judges == coded.ref[None, :]
    rows = []
    for a, b in itertools.combinations(range(len(names)), 2):
        d = stars[:, a] - stars[:, b]
        lo, hi = percentile_ci(d, confidence)
        a_only = int((correct[a] & ~correct[b]).sum())
        b_only = int((~correct[a] & correct[b]).sum())
        p_mc, midp = mcnemar_exact(a_only, b_only)
        rows.append({"judge_a": names[a], "judge_b": names[b], "kappa_a": float(point[a]),
                     "kappa_b": float(point[b]), "delta": float(point[a] - point[b]),
                     "delta_low": lo, "delta_high": hi, "p_value": _bootstrap_p(d),
                     "both_correct": int((correct[a] & correct[b]).sum()),
                     "a_only_correct": a_only, "b_only_correct": b_only,
                     "both_wrong": int((~correct[a] & ~correct[b]).sum()),
                     "mcnemar_p": p_mc, "mcnemar_midp": midp})
    pairs = pd.DataFrame(rows)
    if not coded.keep.any():  # nothing compared: no test result either
        pairs[["mcnemar_p", "mcnemar_midp"]] = np.nan
    pairs["p_holm"] = _holm_keeping_nan(pairs["p_value"])
    pairs["mcnemar_p_holm"] = _holm_keeping_nan(pairs["mcnemar_p"])
    return pairs


def _marginal_tests(names: Sequence[str], coded: _Coded, q: int) -> pd.DataFrame:
    """Per judge, Stuart–Maxwell and Bowker tests of its labels against the reference labels."""
    marg = []
    valid = coded.ref >= 0
    for j, nm in enumerate(names):
        t = np.zeros((q, q))
        np.add.at(t, (coded.ref[valid], coded.judges[j][valid]), 1)
        sm, sdf, sp = stuart_maxwell(t)
        bw, bdf, bp = bowker_test(t)
        marg.append({"judge": nm, "stuart_maxwell_chi2": sm, "stuart_maxwell_df": sdf,
                     "stuart_maxwell_p": sp, "bowker_chi2": bw, "bowker_df": bdf,
                     "bowker_p": bp})
    return pd.DataFrame(marg)
