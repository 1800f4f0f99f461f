"""``agreement_report``: everything one needs to judge a judge against one human rater."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from maev_kit.agreement._bootstrap import PatternBootstrap, check_resamples, percentile_ci
from maev_kit.agreement._kappa import (
    ac_from_table,
    ac_table_se,
    agreement_weights,
    fce_se,
    kappa_from_table,
    kappa_max,
    observed_expected,
    pabak,
    prevalence_bias,
    Weights,
    scott_pi,
)
from maev_kit.agreement._labels import LABELS, check_labels, encode, rating_values, undefined

__all__ = ["AgreementReport", "agreement_report", "ci_label", "kappa_text", "landis_koch"]

_Z = {0.90: 1.6448536269514722, 0.95: 1.959963984540054, 0.99: 2.5758293035489004}


def kappa_text(kappa: Any, low: Any = None, high: Any = None, *, n: int | None = None,
               confidence: float = 0.95) -> str:
    """κ with its interval, the one way every view writes it — an undefined κ or a missing
    (or zero-width) interval is said in words, never shown as ``0.000–0.000``.

    >>> kappa_text(0.64, 0.3, 0.91)
    '0.640 (95% CI 0.300 to 0.910)'
    >>> kappa_text(float("nan"))
    'undefined — labels hold one class'
    >>> kappa_text(1.0, 1.0, 1.0, n=3)
    '1.000 (no interval — n = 3)'
    """
    def num(x: Any) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)

    k, lo, hi = num(kappa), num(low), num(high)
    if k is None:
        return "undefined — labels hold one class"
    if lo is None or hi is None or lo == hi:
        return f"{k:.3f} (no interval" + (f" — n = {n})" if n is not None else ")")
    return f"{k:.3f} ({ci_label(confidence)} {lo:.3f} to {hi:.3f})"


def ci_label(confidence: float) -> str:
    """How a confidence level is written before an interval: ``"95% CI"``, ``"80% CI"``.

    Every CI the kit prints is labeled from its own ``confidence``, never a fixed 95.

    >>> ci_label(0.95), ci_label(0.8), ci_label(0.999)
    ('95% CI', '80% CI', '99.9% CI')
    """
    return f"{round(confidence * 100, 6):g}% CI"


def _z(confidence: float) -> float:
    if confidence in _Z:
        return _Z[confidence]
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def landis_koch(kappa: float) -> str:
    """Landis & Koch (1977) words for a κ value.

    >>> landis_koch(0.598), landis_koch(0.70), landis_koch(-0.1)
    ('moderate', 'substantial', 'poor')
    """
    if kappa is None or math.isnan(kappa):
        return "undefined"
    for bound, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
                        (0.8, "substantial")):
        if kappa < bound or (bound > 0 and kappa <= bound):
            return word
    return "almost perfect"


def finite_float(x: Any) -> Any:
    """JSON-friendly float: NaN → None (the reports' ``to_dict``; calibration's tables)."""
    if isinstance(x, (float, np.floating)):
        return None if math.isnan(x) else float(x)
    return x


_f = finite_float  # the short name of this package's dict literals


@dataclass(frozen=True)
class AgreementReport:
    """Agreement between a human rater and a judge (rows of ``confusion``: human; columns: judge).

    ``kappa`` is Cohen's κ with a percentile bootstrap ``ci`` over items; ``wald_ci`` (from the
    Fleiss–Cohen–Everitt SE ``se``) is a cross-check; ``ac1_se`` is Gwet's SE of ``ac1``
    from the table. ``n_used`` items had both labels;
    ``n_missing_human`` / ``n_missing_judge`` count the items dropped for a missing label
    (for a judge: no verdict or unparseable output).
    """

    labels: tuple[str, ...]
    n_total: int
    n_used: int
    n_missing_human: int
    n_missing_judge: int
    observed_agreement: float
    expected_agreement: float
    kappa: float
    ci: tuple[float, float]
    confidence: float
    n_resamples: int
    n_undefined_resamples: int
    se: float
    se_null: float
    wald_ci: tuple[float, float]
    kappa_max: float
    kappa_linear: float
    ac1: float
    pabak: float
    scott_pi: float
    prevalence_index: float
    bias_index: float
    confusion: pd.DataFrame = field(repr=False)
    per_class: pd.DataFrame = field(repr=False)
    ac1_se: float = float("nan")

    @property
    def n_dropped(self) -> int:
        """Items left out because a label was missing."""
        return self.n_total - self.n_used

    @property
    def accuracy(self) -> float:
        """Raw agreement (the share of items where the judge gave the human's label)."""
        return self.observed_agreement

    @property
    def interpretation(self) -> str:
        """Landis–Koch words for ``kappa`` (slight, fair, moderate, substantial, ...)."""
        return landis_koch(self.kappa)

    @property
    def human_marginals(self) -> pd.Series:
        return self.confusion.sum(axis=1).rename("human")

    @property
    def judge_marginals(self) -> pd.Series:
        return self.confusion.sum(axis=0).rename("judge")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (NaN → None; the confusion matrix as nested lists)."""
        out: dict[str, Any] = {
            "labels": list(self.labels), "n_total": self.n_total, "n_used": self.n_used,
            "n_dropped": self.n_dropped, "n_missing_human": self.n_missing_human,
            "n_missing_judge": self.n_missing_judge,
            "observed_agreement": _f(self.observed_agreement),
            "expected_agreement": _f(self.expected_agreement), "kappa": _f(self.kappa),
            "ci": [_f(self.ci[0]), _f(self.ci[1])], "ci_method": "percentile bootstrap",
            "confidence": self.confidence, "n_resamples": self.n_resamples,
            "n_undefined_resamples": self.n_undefined_resamples,
            "se": _f(self.se), "se_null": _f(self.se_null),
            "wald_ci": [_f(self.wald_ci[0]), _f(self.wald_ci[1])],
            "kappa_max": _f(self.kappa_max), "kappa_linear": _f(self.kappa_linear),
            "ac1": _f(self.ac1), "ac1_se": _f(self.ac1_se), "pabak": _f(self.pabak),
            "scott_pi": _f(self.scott_pi),
            "prevalence_index": _f(self.prevalence_index), "bias_index": _f(self.bias_index),
            "interpretation": self.interpretation,
            "human_marginals": {k: int(v) for k, v in self.human_marginals.items()},
            "judge_marginals": {k: int(v) for k, v in self.judge_marginals.items()},
            "confusion": self.confusion.astype(int).values.tolist(),
            "per_class": {lab: {k: _f(v) for k, v in row.items()}
                          for lab, row in self.per_class.to_dict("index").items()},
        }
        return out

    def __str__(self) -> str:
        lo, hi = self.ci
        return (f"κ = {self.kappa:.3f} ({self.interpretation}), {ci_label(self.confidence)} "
                f"{lo:.3f} to {hi:.3f}; "
                f"agreement {self.observed_agreement:.1%}; AC1 {self.ac1:.3f}; "
                f"n = {self.n_used} used, {self.n_dropped} dropped")


def _per_class(t: np.ndarray, labels: tuple[str, ...]) -> pd.DataFrame:
    diag = np.diag(t)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = diag / t.sum(axis=0)
        recall = diag / t.sum(axis=1)
        f1 = 2 * diag / (t.sum(axis=0) + t.sum(axis=1))
    frame = pd.DataFrame({"precision": precision, "recall": recall, "f1": f1,
                          "support": t.sum(axis=1).astype(int)}, index=list(labels))
    frame.index.name = "label"
    return frame


def agreement_report(
    human: Sequence[Any],
    judge: Sequence[Any],
    *,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    weights: Weights = None,
) -> AgreementReport:
    """Agreement of a judge with one human rater, with a bootstrap CI and cross-checks.

    The CI is the percentile bootstrap over items (done as a multinomial draw over the confusion
    cells, which is the same distribution and fast). Resamples where κ is undefined (one class
    only) are counted in ``n_undefined_resamples`` and left out. Per-class precision/recall/F1
    treat the human as the truth; a class never predicted (or never present) gets NaN.

    Parameters
    ----------
    human, judge : label sequences, one per item; ``None`` marks a missing label (for the
        judge: no verdict or unparseable output). Such items are dropped and counted.
    labels : the categories, in order (or a criterion: its labels).
    n_resamples, confidence, seed : bootstrap settings.
    weights : None, ``"linear"`` or ``"quadratic"``: the weighted κ (CIs and SE too).

    Examples
    --------
    >>> human = ["retained"] * 10 + ["lost"] * 7 + ["contradicted"] * 3
    >>> judge = (["retained"] * 8 + ["lost", "contradicted", "retained"] + ["lost"] * 5
    ...          + ["contradicted", "lost", "contradicted", "contradicted"])
    >>> r = agreement_report(human, judge, n_resamples=2000)
    >>> round(r.kappa, 4), r.n_used, r.interpretation
    (0.5984, 20, 'moderate')
    >>> r.ci[0] < r.kappa < r.ci[1]
    True
    """
    labels = check_labels(labels, used=[*rating_values([human]), *rating_values([judge])])
    n_resamples = check_resamples(n_resamples)
    ch = encode(human, labels, name="human")
    cj = encode(judge, labels, name="judge")
    if len(ch) != len(cj):
        raise ValueError(f"`human` and `judge` must have the same length (one label per item); "
                         f"got {len(ch)} and {len(cj)}")
    q = len(labels)
    keep = (ch >= 0) & (cj >= 0)
    boot = PatternBootstrap(np.stack([ch[keep], cj[keep]]), q)
    t = boot.table(boot.counts, 0, 1)
    n_used = int(keep.sum())
    w1 = agreement_weights(q, weights)
    wl = agreement_weights(q, "linear")
    if n_used == 0:
        kappa = undefined("κ is undefined: no item has both a human and a judge label", np.nan)
        po = pe = kl = kmax = ac1 = ac1_se = pb = sp = pi_ = bi = se = se0 = float("nan")
    else:
        po, pe = observed_expected(t, w1)
        kappa = float(kappa_from_table(t, w1))
        if math.isnan(kappa):
            undefined("κ is undefined: chance agreement is 1 (one class only)", np.nan)
        kl = float(kappa_from_table(t, wl))
        kmax = kappa_max(t)
        ac1 = float(ac_from_table(t, w1)) if q > 1 else float("nan")
        ac1_se = ac_table_se(t, w1)
        pb, sp = pabak(t), scott_pi(t)
        pi_, bi = prevalence_bias(t)
        se, se0 = fce_se(t, w1)
    stars = boot.run(lambda w: kappa_from_table(boot.table(w, 0, 1), w1), n_resamples, seed)
    n_undef = int(np.isnan(stars).sum()) if n_used else n_resamples
    ci = percentile_ci(stars, confidence) if n_used else (float("nan"), float("nan"))
    z = _z(confidence)
    wald = (kappa - z * se, kappa + z * se)
    conf = pd.DataFrame(t, index=pd.Index(labels, name="human"),
                        columns=pd.Index(labels, name="judge"))
    return AgreementReport(
        labels=labels, n_total=len(ch), n_used=n_used,
        n_missing_human=int((ch < 0).sum()), n_missing_judge=int((cj < 0).sum()),
        observed_agreement=po, expected_agreement=pe, kappa=kappa, ci=ci,
        confidence=confidence, n_resamples=n_resamples, n_undefined_resamples=n_undef,
        se=se, se_null=se0, wald_ci=wald, kappa_max=kmax, kappa_linear=kl, ac1=ac1, pabak=pb,
        scott_pi=sp, prevalence_index=pi_, bias_index=bi, confusion=conf,
        per_class=_per_class(t, labels), ac1_se=ac1_se)
