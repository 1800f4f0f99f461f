"""Many raters: Krippendorff's α, Fleiss' κ, mean pairwise κ, the human ceiling, judge vs humans.

Ratings are given per annotator (a mapping annotator → labels aligned by item, a DataFrame with
one column per annotator, or a list of per-rater label lists); ``None`` marks a missing label.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from maev_kit.agreement._bootstrap import PatternBootstrap, check_resamples, percentile_ci
from maev_kit.agreement._kappa import Weights, agreement_weights, kappa_from_table
from maev_kit.agreement._labels import LABELS, check_labels, encode, encode_table, undefined
from maev_kit.agreement._report import _f

__all__ = ["HumanCeiling", "JudgeVsHumans", "fleiss_kappa", "human_ceiling", "judge_vs_humans",
           "krippendorff_alpha", "majority_labels", "mean_pairwise_kappa"]

#: Severity used to break ties in a majority vote: the more severe label wins.
_SEVERITY = {"retained": 0, "lost": 1, "contradicted": 2}


def krippendorff_alpha(
    ratings: Any,
    *,
    labels: Sequence[str] = LABELS,
    level: Literal["nominal", "ordinal"] = "nominal",
) -> float:
    """Krippendorff's α for any number of raters, missing labels allowed.

    Uses the ``krippendorff`` package with ``level_of_measurement`` always passed explicitly
    (its default is *interval*) and the value domain fixed to ``labels`` (their order is the
    ordinal scale).

    References
    ----------
    Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability.

    Examples
    --------
    >>> a = {"a1": ["retained", "lost", "lost", None], "a2": ["retained", "lost", "retained",
    ...      "contradicted"], "a3": ["retained", "lost", "lost", "contradicted"]}
    >>> round(krippendorff_alpha(a), 6)
    0.736842
    """
    import krippendorff

    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"`level` must be 'nominal' or 'ordinal', not {level!r}")
    labels = check_labels(labels)
    _, codes = encode_table(ratings, labels)
    data = np.where(codes >= 0, codes, np.nan).astype(float)
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any():
        return undefined("α is undefined: no item has two or more labels", np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        value = float(krippendorff.alpha(reliability_data=data, value_domain=list(range(len(labels))),
                                         level_of_measurement=level))
    if math.isnan(value):
        return undefined("α is undefined: every pairable label is the same", np.nan)
    return value


def fleiss_kappa(ratings: Any, *, labels: Sequence[str] = LABELS) -> float:
    """Fleiss' κ for many raters, with missing labels (Gwet's generalisation, as in irrCAC).

    Agreement is averaged over the items with two or more labels; the category shares π_k
    average each item's label shares over all items with at least one label. With complete
    data this is Fleiss (1971) exactly (= statsmodels' ``fleiss_kappa``).

    With missing labels this equals irrCAC's ``fleiss.kappa.raw`` on **all** items, not
    statsmodels on the complete items only: statsmodels needs the same number of raters per
    item, so it forces listwise deletion, which throws away the information in the partly
    labeled items (in the golden example M1: 0.6959 on all 10 items here and in irrCAC, 0.6108
    from statsmodels on the 8 complete ones). Never code a missing label as a category or as
    one of the labels (0.4881 in M1: wrong). For the SE and the other many-rater coefficients
    (Gwet's AC1/AC2, Conger, Brennan–Prediger, α) use :func:`multi_rater_agreement`, whose
    ``fleiss_kappa.value`` is this number.

    References
    ----------
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. *Psychol. Bull.*
    76. Gwet, K. L. (2014). *Handbook of Inter-Rater Reliability*, 4th ed., ch. 2.

    Examples
    --------
    >>> a = {"a1": ["retained", "lost", "lost", None], "a2": ["retained", "lost", "retained",
    ...      "contradicted"], "a3": ["retained", "lost", "lost", "contradicted"]}
    >>> round(fleiss_kappa(a), 6)
    0.744681
    """
    labels = check_labels(labels)
    _, codes = encode_table(ratings, labels)
    q = len(labels)
    counts = np.stack([(codes == k).sum(axis=0) for k in range(q)], axis=1).astype(float)
    r = counts.sum(axis=1)
    rated = r >= 1
    two = r >= 2
    if not two.any():
        return undefined("Fleiss κ is undefined: no item has two or more labels", np.nan)
    pa = float(np.mean((counts[two] * (counts[two] - 1)).sum(axis=1) / (r[two] * (r[two] - 1))))
    pi = (counts[rated] / r[rated, None]).mean(axis=0)
    pe = float((pi**2).sum())
    if pe >= 1.0:
        return undefined("Fleiss κ is undefined: every label is the same", np.nan)
    return (pa - pe) / (1 - pe)


def _nanmean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=axis)


def mean_pairwise_kappa(ratings: Any, *, labels: Sequence[str] = LABELS,
                        weights: Weights = None) -> float:
    """Light's κ: the mean of Cohen's κ over every pair of raters (missing dropped pairwise).

    Pairs whose κ is undefined are left out of the mean (with an ``UndefinedMetricWarning``).

    Examples
    --------
    >>> a = {"a1": ["retained", "lost", "lost", "contradicted"],
    ...      "a2": ["retained", "lost", "retained", "contradicted"]}
    >>> round(mean_pairwise_kappa(a), 6)
    0.636364
    """
    labels = check_labels(labels)
    names, codes = encode_table(ratings, labels)
    if len(names) < 2:
        raise ValueError("`ratings` must hold at least two raters for a pairwise κ")
    q = len(labels)
    boot = PatternBootstrap(codes, q)
    pairs = list(itertools.combinations(range(len(names)), 2))
    w = agreement_weights(q, weights)
    ks = np.array([kappa_from_table(boot.table(boot.counts, i, j), w) for i, j in pairs])
    if np.isnan(ks).any():
        bad = [f"{names[i]}–{names[j]}" for (i, j), k in zip(pairs, ks) if np.isnan(k)]
        if len(bad) == len(pairs):
            return undefined("mean pairwise κ is undefined for every pair", np.nan)
        undefined(f"κ is undefined for pairs {bad}; they are left out of the mean", np.nan)
    return float(_nanmean(ks))


def majority_labels(ratings: Any, *, labels: Sequence[str] = LABELS) -> list[str | None]:
    """The majority label per item; ties go to the more severe label (contradicted > lost >
    retained; for other labels, the later one in ``labels``). ``None`` when nobody labeled it.

    Do not compare a judge against this majority with human-vs-human κ: the majority is less
    noisy than any one human, which flatters the judge. Use :func:`judge_vs_humans`.

    >>> majority_labels({"a": ["lost", "retained"], "b": ["lost", "lost"],
    ...                  "c": ["retained", None]})
    ['lost', 'lost']
    """
    labels = check_labels(labels)
    _, codes = encode_table(ratings, labels)
    rank = [_SEVERITY.get(lab, 3 + i) for i, lab in enumerate(labels)]
    out: list[str | None] = []
    for col in codes.T:
        col = col[col >= 0]
        if col.size == 0:
            out.append(None)
            continue
        counts = np.bincount(col, minlength=len(labels))
        best = max(range(len(labels)), key=lambda k: (counts[k], rank[k]))
        out.append(labels[best])
    return out


def _bootstrap_means(boot: PatternBootstrap, groups: list[list[tuple[int, int]]],
                     w: np.ndarray, n_resamples: int, seed: Any) -> np.ndarray:
    """Bootstrap ``(B, len(groups))``: each group's mean κ over its rater pairs per resample."""
    def stat(wv: np.ndarray) -> np.ndarray:
        return np.stack([_nanmean(np.stack([kappa_from_table(boot.table(wv, i, j), w)
                                             for i, j in g], axis=-1)) for g in groups], axis=-1)
    return boot.run(stat, n_resamples, seed)


def _point_means(boot: PatternBootstrap, groups: list[list[tuple[int, int]]], w: np.ndarray
                 ) -> list[float]:
    return [float(_nanmean(np.array([kappa_from_table(boot.table(boot.counts, i, j), w)
                                     for i, j in g]))) for g in groups]


def _pairwise_frame(names: list[str], codes: np.ndarray, boot: PatternBootstrap, w: np.ndarray,
                    pairs: list[tuple[int, int]]) -> pd.DataFrame:
    rows = []
    for i, j in pairs:
        t = boot.table(boot.counts, i, j)
        rows.append({"rater_a": names[i], "rater_b": names[j], "kappa": float(kappa_from_table(t, w)),
                     "n": int(t.sum())})
    return pd.DataFrame(rows, columns=["rater_a", "rater_b", "kappa", "n"])


@dataclass(frozen=True)
class HumanCeiling:
    """How well the humans agree with each other: the bar a judge is measured against.

    ``kappa`` is the mean pairwise Cohen κ (Light's κ) with a percentile bootstrap ``ci`` over
    items; ``fleiss_kappa`` and ``krippendorff_alpha`` are the many-rater views.
    """

    kappa: float
    ci: tuple[float, float]
    fleiss_kappa: float
    krippendorff_alpha: float
    n_items: int
    annotators: tuple[str, ...]
    pairwise: pd.DataFrame = field(repr=False)
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        return {"kappa": _f(self.kappa), "ci": [_f(self.ci[0]), _f(self.ci[1])],
                "fleiss_kappa": _f(self.fleiss_kappa),
                "krippendorff_alpha": _f(self.krippendorff_alpha), "n_items": self.n_items,
                "annotators": list(self.annotators), "confidence": self.confidence,
                "pairwise": [{k: _f(v) for k, v in r.items()}
                             for r in self.pairwise.to_dict("records")]}


def human_ceiling(
    labels_by_annotator: Any,
    *,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> HumanCeiling:
    """The human–human agreement: mean pairwise κ with a bootstrap CI, Fleiss κ, α.

    Parameters
    ----------
    labels_by_annotator : mapping annotator → labels aligned by item (``None`` = not labeled),
        a DataFrame with one column per annotator, or a list of per-annotator lists.

    Examples
    --------
    >>> a = {"a1": ["retained", "lost", "lost", "contradicted", "retained"],
    ...      "a2": ["retained", "lost", "retained", "contradicted", "retained"],
    ...      "a3": ["retained", "lost", "lost", "contradicted", None]}
    >>> c = human_ceiling(a, n_resamples=500)
    >>> round(c.kappa, 4), c.n_items
    (0.7746, 5)
    """
    labels = check_labels(labels)
    n_resamples = check_resamples(n_resamples)
    names, codes = encode_table(labels_by_annotator, labels, name="labels_by_annotator")
    if len(names) < 2:
        raise ValueError("`labels_by_annotator` must hold at least two annotators for a human "
                         "ceiling; with one annotator there is no human–human agreement")
    q = len(labels)
    w = np.eye(q)
    boot = PatternBootstrap(codes, q)
    pairs = list(itertools.combinations(range(len(names)), 2))
    (kappa,) = _point_means(boot, [pairs], w)
    stars = _bootstrap_means(boot, [pairs], w, n_resamples, seed)[:, 0]
    if math.isnan(kappa):
        undefined("the human–human κ is undefined for every pair", np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fk = fleiss_kappa(labels_by_annotator, labels=labels)
        ka = krippendorff_alpha(labels_by_annotator, labels=labels)
    return HumanCeiling(kappa=kappa, ci=percentile_ci(stars, confidence), fleiss_kappa=fk,
                        krippendorff_alpha=ka, n_items=codes.shape[1], annotators=tuple(names),
                        pairwise=_pairwise_frame(names, codes, boot, w, pairs),
                        confidence=confidence)


@dataclass(frozen=True)
class JudgeVsHumans:
    """A judge's mean κ against **each** human beside the mean human–human κ.

    ``difference`` = ``judge_kappa − human_kappa`` with a paired bootstrap CI (the same item
    resamples for both). ``per_annotator`` has the judge's κ with each human and that human's
    mean κ with the other humans; ``leave_one_out`` sets each human's mean κ with the *others*
    beside the judge's mean κ with the *same others*. ``kappa_vs_majority`` is for reference
    only: the majority label is less noisy than a human, so it flatters the judge.
    """

    judge_kappa: float
    judge_ci: tuple[float, float]
    human_kappa: float
    human_ci: tuple[float, float]
    difference: float
    difference_ci: tuple[float, float]
    per_annotator: pd.DataFrame = field(repr=False)
    leave_one_out: pd.DataFrame = field(repr=False)
    kappa_vs_majority: float = float("nan")
    n_items: int = 0
    confidence: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        def recs(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: _f(v) for k, v in r.items()} for r in df.to_dict("records")]
        return {"judge_kappa": _f(self.judge_kappa), "judge_ci": [_f(x) for x in self.judge_ci],
                "human_kappa": _f(self.human_kappa), "human_ci": [_f(x) for x in self.human_ci],
                "difference": _f(self.difference),
                "difference_ci": [_f(x) for x in self.difference_ci],
                "per_annotator": recs(self.per_annotator),
                "leave_one_out": recs(self.leave_one_out),
                "kappa_vs_majority": _f(self.kappa_vs_majority), "n_items": self.n_items,
                "confidence": self.confidence}


def judge_vs_humans(
    judge: Sequence[Any],
    labels_by_annotator: Any,
    *,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> JudgeVsHumans:
    """Compare a judge with several humans the fair way: mean κ against each human.

    Never compare judge-vs-majority with human-vs-human: the majority is less noisy than any
    single human, so that comparison flatters the judge.

    Examples
    --------
    >>> a = {"a1": ["retained", "lost", "lost", "contradicted", "retained"],
    ...      "a2": ["retained", "lost", "retained", "contradicted", "retained"],
    ...      "a3": ["retained", "lost", "lost", "contradicted", None]}
    >>> judge = ["retained", "lost", "lost", "lost", "retained"]
    >>> r = judge_vs_humans(judge, a, n_resamples=500)
    >>> round(r.judge_kappa, 4), round(r.human_kappa, 4)
    (0.5324, 0.7746)
    """
    labels = check_labels(labels)
    n_resamples = check_resamples(n_resamples)
    names, hcodes = encode_table(labels_by_annotator, labels, name="labels_by_annotator")
    jcodes = encode(judge, labels, name="judge")
    if len(jcodes) != hcodes.shape[1]:
        raise ValueError(f"`judge` has {len(jcodes)} labels but `labels_by_annotator` has "
                         f"{hcodes.shape[1]} items; they must be aligned by item")
    h = len(names)
    q = len(labels)
    w = np.eye(q)
    codes = np.vstack([hcodes, jcodes[None, :]])
    boot = PatternBootstrap(codes, q)
    judge_pairs = [(i, h) for i in range(h)]
    human_pairs = list(itertools.combinations(range(h), 2))
    groups = [judge_pairs, human_pairs] if human_pairs else [judge_pairs]
    points = _point_means(boot, groups, w)
    stars = _bootstrap_means(boot, groups, w, n_resamples, seed)
    jk = points[0]
    hk = points[1] if human_pairs else float("nan")
    if math.isnan(jk):
        undefined("the judge's κ is undefined against every annotator", np.nan)
    jci = percentile_ci(stars[:, 0], confidence)
    if human_pairs:
        hci = percentile_ci(stars[:, 1], confidence)
        dci = percentile_ci(stars[:, 0] - stars[:, 1], confidence)
    else:
        hci = dci = (float("nan"), float("nan"))

    def k(i: int, j: int) -> float:
        return float(kappa_from_table(boot.table(boot.counts, i, j), w))

    per = []
    loo = []
    for i, name in enumerate(names):
        others = [j for j in range(h) if j != i]
        t = boot.table(boot.counts, i, h)
        human_others = float(_nanmean(np.array([k(i, j) for j in others]))) if others \
            else float("nan")
        per.append({"annotator": name, "kappa_judge": k(i, h), "n": int(t.sum()),
                    "kappa_human_mean": human_others})
        if others:
            loo.append({"annotator": name, "human_vs_others": human_others,
                        "judge_vs_same_others": float(_nanmean(np.array([k(h, j)
                                                                         for j in others])))})
    maj = encode(majority_labels(labels_by_annotator, labels=labels), labels, name="majority")
    mb = PatternBootstrap(np.stack([jcodes, maj]), q)
    kmaj = float(kappa_from_table(mb.table(mb.counts, 0, 1), w))
    return JudgeVsHumans(
        judge_kappa=jk, judge_ci=jci, human_kappa=hk, human_ci=hci,
        difference=jk - hk, difference_ci=dci,
        per_annotator=pd.DataFrame(per, columns=["annotator", "kappa_judge", "kappa_human_mean",
                                                 "n"]),
        leave_one_out=pd.DataFrame(loo, columns=["annotator", "human_vs_others",
                                                 "judge_vs_same_others"]),
        kappa_vs_majority=kmaj, n_items=codes.shape[1], confidence=confidence)
