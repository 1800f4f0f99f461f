"""Numbers you can cite: a mean with a confidence interval from a judge plus a few human labels.

A judge scores all N + n items; people label a simple random sample of n of them.
:func:`ppi_mean` is prediction-powered inference (PPI++) for the mean of the human value: the
judge's mean over the unlabeled items, corrected by the judge's error measured on the labeled
sample, with the power-tuning weight λ that makes the interval never (asymptotically) wider than
the labels' own. :func:`human_mean` and :func:`judge_mean` are the two baselines, and
:func:`plan_labels` says how many labels a wanted interval width needs.

The formulas are those of ``ppi_py`` (``ppi_mean_pointestimate``, ``ppi_mean_ci``,
``classical_mean_ci``), written again with numpy alone (``ppi-python`` pulls numba and gdown) and
tested against it to 1e-6.

References
----------
- A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic. "Prediction-powered
  inference." *Science* 382(6671):669–674, 2023. https://doi.org/10.1126/science.adi6000
- A. N. Angelopoulos, J. C. Duchi, T. Zrnic. "PPI++: Efficient Prediction-Powered Inference."
  arXiv:2311.01453, 2023/2024. https://arxiv.org/abs/2311.01453
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from maev_kit.errors import InputError

__all__ = ["MIN_LABELS_FOR_INTERVAL", "Estimate", "LabelPlan", "human_mean", "human_share",
           "judge_mean", "plan_labels", "ppi_mean"]

#: Fewest values (human labels for :func:`ppi_mean` and :func:`human_mean`, judged items for
#: :func:`judge_mean`) for which a CLT interval is given; below it only the point estimate.
#: Measured on the SNLI retention data (``benchmarks/bench_ppi.py``, 2,000 random samples per
#: n, two real judges, a retention rate of 0.33) the "95 %" PPI++ interval covers the
#: all-human rate only 0.73–0.80 of the time at n = 5, 0.79–0.82 at n = 10, 0.90 at n = 20,
#: and 0.92 at n = 30 (0.93 at n = 50, 0.95 at n = 100): below 30 the interval would promise
#: a confidence it does not keep.
MIN_LABELS_FOR_INTERVAL: int = 30

_METHODS = ("ppi++", "human-only", "judge-only")


def _z(confidence: float) -> float:
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _ci_text(confidence: float) -> str:
    return f"{round(confidence * 100, 6):g}% CI"


@dataclass(frozen=True)
class Estimate:
    """A mean with its confidence interval, and where it came from.

    Attributes
    ----------
    method : str
        ``"ppi++"`` (judge corrected by human labels, :func:`ppi_mean`), ``"human-only"``
        (the labels alone, :func:`human_mean`) or ``"judge-only"`` (the judge alone,
        :func:`judge_mean`: not corrected for the judge's errors).
    estimate : float
        The point estimate of the mean.
    ci_low, ci_high : float or None
        The two-sided CLT interval at ``confidence``; both ``None`` when no interval is given
        (fewer than :data:`MIN_LABELS_FOR_INTERVAL` values, or no spread at all): ``note`` says
        why. Never a zero-width interval.
    n : int
        Human-labeled items used (0 for ``"judge-only"``).
    N : int
        Judged items **without** a human label: ``len(yhat_unlabeled)`` for ``"ppi++"``,
        every judged item for ``"judge-only"``, 0 for ``"human-only"``. For ``"ppi++"`` the
        judge scored ``n + N`` items in all (the n labeled ones too).
    confidence : float
        The interval's confidence level, e.g. 0.95.
    lam : float or None
        PPI++'s power-tuning weight λ (``"ppi++"`` only): 0 ignores the judge, 1 is plain PPI.
    note : str
        Why there is no interval, or what to keep in mind; ``""`` when there is nothing to say.
    """

    method: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    n: int
    N: int
    confidence: float
    lam: float | None = None
    note: str = ""

    @property
    def half_width(self) -> float | None:
        """Half the interval's width (the "±" number); ``None`` without an interval."""
        if self.ci_low is None or self.ci_high is None:
            return None
        return (self.ci_high - self.ci_low) / 2

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict of every field plus ``half_width``."""
        return {"method": self.method, "estimate": self.estimate, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "half_width": self.half_width, "n": self.n,
                "N": self.N, "confidence": self.confidence, "lam": self.lam,
                "note": self.note}

    def __str__(self) -> str:
        counts = f"n={self.n}, N={self.N}" + ("" if self.lam is None else f", λ={self.lam:.3f}")
        if self.ci_low is None or self.ci_high is None:
            return f"{self.estimate:.4f} (no interval: {self.note}; {self.method}, {counts})"
        return (f"{self.estimate:.4f} ({_ci_text(self.confidence)} {self.ci_low:.4f} to "
                f"{self.ci_high:.4f}; {self.method}, {counts})")


@dataclass(frozen=True)
class LabelPlan:
    """How many human labels a wanted interval width needs (see :func:`plan_labels`).

    Attributes
    ----------
    n : int
        Human labels in all (the pilot's included) for the PPI++ interval to reach
        ``± target_half_width``; label ``more_labels`` more items, drawn at random.
    expected_half_width : float
        The PPI++ half-width expected at ``n`` labels (the pilot's variances).
    n_human_only : int
        Labels the same width needs without the judge (:func:`human_mean`).
    pilot_n : int
        Labeled items in the pilot.
    target_half_width : float
        The half-width asked for.
    confidence : float
        The interval's confidence level.
    N : int
        Judged items in all (pilot and unlabeled): after labeling ``n`` of them,
        ``N - n`` stay unlabeled.
    lam : float
        The power-tuning λ expected at ``n`` labels.
    note : str
        What to keep in mind (e.g. the target needs more labels than there are items).
    """

    n: int
    expected_half_width: float
    n_human_only: int
    pilot_n: int
    target_half_width: float = math.nan
    confidence: float = 0.95
    N: int = 0
    lam: float = 0.0
    note: str = ""

    @property
    def more_labels(self) -> int:
        """Labels still to collect beyond the pilot's: ``max(0, n - pilot_n)``."""
        return max(0, self.n - self.pilot_n)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict of every field plus ``more_labels``."""
        return {"n": self.n, "expected_half_width": self.expected_half_width,
                "n_human_only": self.n_human_only, "pilot_n": self.pilot_n,
                "more_labels": self.more_labels, "target_half_width": self.target_half_width,
                "confidence": self.confidence, "N": self.N, "lam": self.lam,
                "note": self.note}


# -- input checks -----------------------------------------------------------------------------


def _values(x: Any, name: str, *, allow_empty: bool = False) -> np.ndarray:
    """``x`` as a 1-D float array of finite numbers, or an InputError naming ``name``."""
    if isinstance(x, (str, bytes)):
        raise InputError(f"`{name}` must be a sequence of numbers (one per item: 0/1 or a "
                         f"score), got the string {x!r}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InputError(f"`{name}` must be a flat sequence of numbers, one per item "
                         f"({e})") from None
    if arr.ndim == 0:
        raise InputError(f"`{name}` must be a sequence of numbers (one per item: 0/1 or a "
                         f"score), got {type(x).__name__} {x!r}")
    if arr.ndim != 1:
        raise InputError(f"`{name}` must be 1-D (one number per item), got shape {arr.shape}")
    if arr.dtype.kind not in "biuf":
        for i, v in enumerate(arr.tolist()):
            if not isinstance(v, Real):
                hint = ("drop the items without a value first" if v is None
                        else "map labels to numbers first, e.g. 1 for 'retained', else 0")
                raise InputError(f"`{name}` must hold numbers (0/1 or scores); item {i} is "
                                 f"{v!r}: {hint}")
    arr = arr.astype(float)
    if not allow_empty and arr.size == 0:
        raise InputError(f"`{name}` is empty: give at least one value")
    finite = np.isfinite(arr)
    if not finite.all():
        i = int(np.flatnonzero(~finite)[0])
        raise InputError(f"`{name}` must hold finite numbers; item {i} is {arr[i]!r}: drop the "
                         "items without a value (NaN) first")
    return arr


def _check_confidence(confidence: Any) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, Real) \
            or not 0 < float(confidence) < 1:
        raise InputError(f"`confidence` must be a number in (0, 1), e.g. 0.95; got "
                         f"{confidence!r}")
    return float(confidence)


def _check_same_length(a: np.ndarray, b: np.ndarray, na: str, nb: str) -> None:
    if a.size != b.size:
        raise InputError(f"`{na}` has {a.size} values and `{nb}` {b.size}: give the judge's "
                         f"value for each labeled item, in the same order")


# -- the estimates ----------------------------------------------------------------------------


def _interval(method: str, est: float, var: float, *, n: int, N: int, confidence: float,
              count: int, count_name: str, spread: bool, lam: float | None = None,
              note: str = "") -> Estimate:
    """The estimate with its CLT interval, or without one (and why) when it means nothing."""
    why = ""
    if count < MIN_LABELS_FOR_INTERVAL:
        why = (f"{count} {count_name}: fewer than {MIN_LABELS_FOR_INTERVAL} "
               "(MIN_LABELS_FOR_INTERVAL), too few for a CLT interval to keep its confidence")
    elif not spread or not var > 0:
        why = ("the values show no spread at all (every value equal), so a CLT interval "
               "would have zero width: more labels are needed to bound the error")
    if why:
        return Estimate(method, est, None, None, n, N, confidence, lam,
                        "; ".join(s for s in (why, note) if s))
    h = _z(confidence) * math.sqrt(var)
    return Estimate(method, est, est - h, est + h, n, N, confidence, lam, note)


def _rare_note(y: np.ndarray) -> str:
    """A caution when 0/1 labels hold fewer than 5 of one value (the CLT is then optimistic)."""
    if not np.isin(y, (0.0, 1.0)).all():
        return ""
    ones = int(y.sum())
    rare, value = min((ones, 1), (y.size - ones, 0))
    if 0 < rare < 5:
        return (f"only {rare} of the {y.size} labels are {value}: with so few of the rarer "
                "value the interval covers less often than its confidence says")
    return ""


def _lam_tuned(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """The power-tuning λ exactly as ``ppi_py`` computes it for a mean (``lam_optim_mode=
    "overall"``, clipped to [0, 1]): ``cov(Y, Ŷ) / ((1 + n/N) · var(Ŷ over all items))``, the
    covariance over the labeled items with divisor n, the variance over labeled and unlabeled
    predictions with divisor n + N − 1. 0 when the judge gives every item the same value."""
    n, N = y.size, yhat_unlabeled.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    allhat = np.concatenate([yhat, yhat_unlabeled])
    if allhat.size < 2 or np.ptp(allhat) == 0:
        return 0.0
    var = float(np.var(allhat, ddof=1))
    return float(np.clip(cov / ((1 + n / N) * var), 0.0, 1.0))


def _ppi_inputs(y: Any, yhat: Any, yhat_unlabeled: Any, confidence: Any,
                lam: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """:func:`ppi_mean`'s arguments checked, in order: ``y``, ``yhat`` (same length),
    ``yhat_unlabeled`` (may be empty), ``confidence``, then ``lam`` (None or in [0, 1])."""
    y_ = _values(y, "y")
    yhat_ = _values(yhat, "yhat")
    _check_same_length(y_, yhat_, "y", "yhat")
    unl = _values(yhat_unlabeled, "yhat_unlabeled", allow_empty=True)
    conf = _check_confidence(confidence)
    if lam is not None and (isinstance(lam, bool) or not isinstance(lam, Real)
                            or not 0 <= float(lam) <= 1):
        raise InputError(f"`lam` must be None (tuned) or a number in [0, 1] (1: plain PPI, "
                         f"0: the labels alone); got {lam!r}")
    return y_, yhat_, unl, conf


def _ppi_lam(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray,
             lam: float | None) -> tuple[float, str]:
    """The λ :func:`ppi_mean` uses and a note on it: 0 when every judged item is labeled,
    tuned when ``lam`` is None, else ``lam`` as given."""
    if yhat_unlabeled.size == 0:  # the judge has nothing to add (λ* → 0 as N → 0)
        return 0.0, ("every judged item is labeled: the judge adds nothing (λ = 0, the labels "
                     "alone)")
    if lam is None:
        return _lam_tuned(y, yhat, yhat_unlabeled), ""
    lam_ = float(lam)
    return lam_, {1.0: "λ fixed at 1 (plain PPI)",
                  0.0: "λ fixed at 0 (the labels alone)"}.get(lam_, f"λ fixed at {lam_:g}")


def _ppi_moments(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray,
                 lam: float) -> tuple[float, float, bool]:
    """PPI++'s point estimate at ``lam``, its variance (divisors N and n, as ``ppi_py``), and
    whether anything varies at all (else no interval)."""
    n, N, unl = y.size, yhat_unlabeled.size, yhat_unlabeled
    rect = y - lam * yhat
    est = float(lam * unl.mean() + rect.mean()) if N else float(rect.mean())
    var = float(np.var(lam * unl) / N + np.var(rect) / n) if N else float(np.var(rect) / n)
    spread = bool(np.ptp(rect) > 0 or (lam > 0 and np.ptp(unl) > 0))
    return est, var, spread


def ppi_mean(y: Any, yhat: Any, yhat_unlabeled: Any, *, confidence: float = 0.95,
             lam: float | None = None) -> Estimate:
    """The mean of the human value from a judge's values plus a few human labels: PPI++.

    The estimate is ``λ · mean(yhat_unlabeled) + mean(y − λ · yhat)``: the judge's mean over
    the items nobody labeled, corrected by its average error on the labeled sample. Its CLT
    interval is ``± z · sqrt(var(λ·yhat_unlabeled)/N + var(y − λ·yhat)/n)`` (variances with
    divisor N and n, as ``ppi_py``). With ``lam=None`` λ is tuned to the data as
    ``ppi_py.ppi_mean_ci`` tunes it (``cov(y, yhat) / ((1 + n/N) · var(yhat))``, clipped to
    [0, 1]): the interval is then about as narrow as the judge allows and, for large n, never
    wider than the labels' own. ``lam=1`` is the original PPI; ``lam=0`` is :func:`human_mean`.

    Valid when the labeled items are a **simple random sample** of the judged items (each
    judged item equally likely to be labeled, independently of the judge's verdict). Items
    picked for labeling because the judge was unsure, or because judges disagreed, give a
    biased estimate and an interval that does not cover.

    Parameters
    ----------
    y : array-like of shape (n,)
        The human value of each labeled item (0/1, e.g. 1 when the label is ``retained``, or
        any number).
    yhat : array-like of shape (n,)
        The judge's value on the same items, same order (0/1, or a probability or score).
    yhat_unlabeled : array-like of shape (N,)
        The judge's value on the judged items nobody labeled. Empty (every item labeled):
        λ is 0 and the result is the labels' own mean and interval, with a note.
    confidence : float, default 0.95
        Confidence level of the two-sided interval, in (0, 1).
    lam : float or None, default None
        Power-tuning weight in [0, 1]; ``None`` tunes it.

    Returns
    -------
    Estimate
        ``method="ppi++"``, with ``n = len(y)``, ``N = len(yhat_unlabeled)`` and ``lam``. No
        interval (``ci_low``/``ci_high`` None, ``note`` says why) below
        :data:`MIN_LABELS_FOR_INTERVAL` labels or when nothing varies. The estimate of a 0/1
        rate is not clipped to [0, 1].

    Raises
    ------
    InputError
        Empty, non-numeric or non-finite values, ``y`` and ``yhat`` of different lengths,
        ``confidence`` outside (0, 1), ``lam`` outside [0, 1].

    References
    ----------
    Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science
    2023; Angelopoulos, Duchi, Zrnic, "PPI++: Efficient Prediction-Powered Inference",
    arXiv:2311.01453.

    Examples
    --------
    >>> y    = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0] * 2  # retained = 1
    >>> yhat = [1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 1] * 2  # judge, same 40
    >>> unlabeled = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 50  # the judge on 500 unlabeled items
    >>> est = ppi_mean(y, yhat, unlabeled)
    >>> round(est.estimate, 3), round(est.ci_low, 3), round(est.ci_high, 3), round(est.lam, 3)
    (0.55, 0.436, 0.664, 0.655)
    >>> est.n, est.N, est.method
    (40, 500, 'ppi++')
    >>> round(est.half_width, 3), round(human_mean(y).half_width, 3)   # the labels alone: wider
    (0.114, 0.154)
    >>> few = ppi_mean(y[:5], yhat[:5], unlabeled)   # below MIN_LABELS_FOR_INTERVAL
    >>> few.ci_low is None, few.note.split(":")[0]
    (True, '5 human labels')
    """
    y_, yhat_, unl, conf = _ppi_inputs(y, yhat, yhat_unlabeled, confidence, lam)
    lam_, note = _ppi_lam(y_, yhat_, unl, lam)
    est, var, spread = _ppi_moments(y_, yhat_, unl, lam_)
    note = "; ".join(s for s in (note, _rare_note(y_)) if s)
    return _interval("ppi++", est, var, n=y_.size, N=unl.size, confidence=conf, count=y_.size,
                     count_name="human labels", spread=spread, lam=lam_, note=note)


def human_mean(y: Any, *, confidence: float = 0.95) -> Estimate:
    """The mean of the human labels alone, with its classical CLT interval.

    ``mean(y) ± z · sd(y) / sqrt(n)`` with the standard deviation's divisor n, as
    ``ppi_py.classical_mean_ci`` (and :func:`ppi_mean` with ``lam=0``). Valid for a simple
    random sample of the items.

    Parameters
    ----------
    y : array-like of shape (n,)
        The human value of each labeled item (0/1 or numbers).
    confidence : float, default 0.95
        Confidence level of the two-sided interval, in (0, 1).

    Returns
    -------
    Estimate
        ``method="human-only"``, ``n = len(y)``, ``N = 0``. No interval below
        :data:`MIN_LABELS_FOR_INTERVAL` labels or when every label is the same.

    Raises
    ------
    InputError
        Empty, non-numeric or non-finite ``y``; ``confidence`` outside (0, 1).

    Examples
    --------
    >>> est = human_mean([1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0] * 3)
    >>> round(est.estimate, 3), round(est.half_width, 3), est.n, est.N
    (0.583, 0.161, 36, 0)
    >>> human_mean([1] * 40).ci_low is None     # 40 of 40: no zero-width interval
    True
    """
    y_ = _values(y, "y")
    conf = _check_confidence(confidence)
    n = y_.size
    return _interval("human-only", float(y_.mean()), float(np.var(y_) / n), n=n, N=0,
                     confidence=conf, count=n, count_name="human labels",
                     spread=bool(np.ptp(y_) > 0), note=_rare_note(y_))


def human_share(y: Any, *, confidence: float = 0.95) -> Estimate:
    """The share of the human labels alone, with its Wilson score interval.

    For a share (values in [0, 1]: each item 0/1, or the share of its annotators who gave the
    label) the Wilson interval ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)`` stays
    inside [0, 1] at any n and has width even when every label is the same — unlike the CLT
    interval of :func:`human_mean`, which can leave [0, 1] on a small sample.

    Examples
    --------
    >>> est = human_share([1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    >>> round(est.estimate, 3), round(est.ci_low, 3), round(est.ci_high, 3)
    (0.1, 0.018, 0.404)
    >>> human_share([0] * 5).ci_low
    0.0
    """
    y_ = _values(y, "y")
    conf = _check_confidence(confidence)
    if ((y_ < 0) | (y_ > 1)).any():
        raise InputError("`y` must hold shares in [0, 1] (0/1 labels, or an item's share of "
                         "annotators); use human_mean for other values")
    n, p, z = y_.size, float(y_.mean()), _z(conf)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    note = "Wilson score interval" + (f" (only {n} labels)" if n < MIN_LABELS_FOR_INTERVAL
                                      else "")
    return Estimate("human-only", p, max(0.0, centre - half), min(1.0, centre + half), n, 0,
                    conf, None, note)


def judge_mean(yhat_all: Any, *, confidence: float = 0.95) -> Estimate:
    """The judge's mean over all judged items, with its CLT interval — not corrected for
    the judge's errors.

    The interval covers only the sampling noise of the items, never the judge's bias: it says
    where the *judge's* rate would settle on more items like these, not the humans'. Use
    :func:`ppi_mean` for a number about what people would say.

    Parameters
    ----------
    yhat_all : array-like of shape (N,)
        The judge's value on every judged item (0/1, or a probability or score).
    confidence : float, default 0.95
        Confidence level of the two-sided interval, in (0, 1).

    Returns
    -------
    Estimate
        ``method="judge-only"``, ``n = 0``, ``N = len(yhat_all)``; ``note`` says it is not
        corrected for judge error. No interval below :data:`MIN_LABELS_FOR_INTERVAL` items or
        when the judge gives every item the same value.

    Raises
    ------
    InputError
        Empty, non-numeric or non-finite ``yhat_all``; ``confidence`` outside (0, 1).

    Examples
    --------
    >>> est = judge_mean([1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 10)
    >>> round(est.estimate, 2), round(est.half_width, 3), est.n, est.N
    (0.6, 0.096, 0, 100)
    >>> est.note
    'not corrected for judge error'
    """
    f = _values(yhat_all, "yhat_all")
    conf = _check_confidence(confidence)
    N = f.size
    return _interval("judge-only", float(f.mean()), float(np.var(f) / N), n=0, N=N,
                     confidence=conf, count=N, count_name="judged items",
                     spread=bool(np.ptp(f) > 0), note="not corrected for judge error")


# -- the planner ------------------------------------------------------------------------------


def _plan_inputs(y_pilot: Any, yhat_pilot: Any, yhat_unlabeled: Any, half_width: Any,
                 confidence: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """:func:`plan_labels`'s arguments checked, in order: the three value arrays, ``half_width``
    (> 0, finite), ``confidence``, then a pilot of at least 2 labels that are not all equal."""
    y = _values(y_pilot, "y_pilot", allow_empty=True)
    f = _values(yhat_pilot, "yhat_pilot", allow_empty=True)
    _check_same_length(y, f, "y_pilot", "yhat_pilot")
    unl = _values(yhat_unlabeled, "yhat_unlabeled", allow_empty=True)
    if isinstance(half_width, bool) or not isinstance(half_width, Real) \
            or not 0 < float(half_width) < math.inf:
        raise InputError(f"`half_width` must be a positive number, e.g. 0.05 for ±5 points; "
                         f"got {half_width!r}")
    conf = _check_confidence(confidence)
    if y.size < 2:
        raise InputError(f"`y_pilot` has {y.size} labeled item(s): a pilot needs at least 2 "
                         "(better 20–50, drawn at random) to estimate the variances")
    if np.ptp(y) == 0:
        raise InputError(f"`y_pilot`: all {y.size} pilot labels are {y[0]:g}, so their "
                         "variance is unknown: label more pilot items (drawn at random) "
                         "until both values occur")
    return y, f, unl, float(half_width), conf


@dataclass(frozen=True)
class _Pilot:
    """What the planner takes from a pilot: ``var_y`` and ``cov`` (pilot, divisor n − 1),
    ``var_f`` (the judge on all ``total`` judged items; 0 if constant) and the interval's z."""

    var_y: float
    cov: float
    var_f: float
    total: int
    z: float

    @classmethod
    def of(cls, y: np.ndarray, f: np.ndarray, unl: np.ndarray, z: float) -> _Pilot:
        """The variances of pilot labels ``y``, their judge values ``f`` and the rest ``unl``."""
        allhat = np.concatenate([f, unl])
        return cls(var_y=float(np.var(y, ddof=1)), cov=float(np.cov(y, f, ddof=1)[0, 1]),
                   var_f=float(np.var(allhat, ddof=1)) if np.ptp(allhat) > 0 else 0.0,
                   total=allhat.size, z=z)

    def lam_at(self, n: int) -> float:
        """The tuned λ with n items labeled (0 if none is left unlabeled or the judge is flat)."""
        N = self.total - n
        if N <= 0 or self.var_f == 0:
            return 0.0
        return float(np.clip(self.cov / ((1 + n / N) * self.var_f), 0.0, 1.0))

    def half_width_at(self, n: int) -> float:
        """The expected PPI++ half-width with n items labeled, at the tuned λ."""
        N = self.total - n
        lam = self.lam_at(n)
        var = (self.var_y - 2 * lam * self.cov + lam**2 * self.var_f) / n + (
            lam**2 * self.var_f / N if N > 0 else 0.0)
        return self.z * math.sqrt(max(var, 0.0))

    def human_half_width(self, n: int) -> float:
        """The expected half-width of n labels alone (:func:`human_mean`)."""
        return self.z * math.sqrt(self.var_y / n)


def _smallest_n(pilot: _Pilot, h: float) -> int | None:
    """The smallest n in [1, total − 1] whose PPI++ half-width is at most ``h`` (a bisection:
    it only falls as n grows), or None when even ``total − 1`` labels do not reach it."""
    last = pilot.total - 1  # at least one item left for the judge
    if not (last >= 1 and pilot.half_width_at(last) <= h):
        return None
    lo, hi = 1, last  # half_width_at(hi) <= h; find the smallest such n
    if pilot.half_width_at(lo) <= h:
        hi = lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pilot.half_width_at(mid) <= h:
            hi = mid
        else:
            lo = mid
    return hi


def plan_labels(y_pilot: Any, yhat_pilot: Any, yhat_unlabeled: Any, *, half_width: float,
                confidence: float = 0.95) -> LabelPlan:
    """How many human labels the PPI++ interval needs to reach ``± half_width``.

    From a pilot (a first random sample of labeled items, their judge values, and the judge's
    values on the other judged items) take ``σ²_Y`` and ``cov(Y, Ŷ)`` (pilot, divisor n − 1)
    and ``σ²_f`` (the judge's values on all judged items). With T judged items in all, n of
    them labeled and ``N = T − n`` not, the PPI++ variance at λ is
    ``(σ²_Y − 2λ·cov + λ²σ²_f)/n + λ²σ²_f/N``, at the tuned
    ``λ = cov / ((1 + n/N)·σ²_f)`` (clipped to [0, 1]); the plan is the smallest n whose
    ``z·sqrt(variance)`` is at most ``half_width`` (at the tuned λ this variance only falls as
    n grows, so the search is a bisection).
    Without the judge: ``n = z²σ²_Y / half_width²``. Both are at least
    :data:`MIN_LABELS_FOR_INTERVAL`.

    On the SNLI retention data (``benchmarks/bench_ppi.py``) the realised half-width averages
    within 1–2 % of the target, but one plan from a 50-item pilot varies with the pilot (for
    ±0.05 with the heuristic judge: 136 to 370 labels, 279 on average): plan from a random
    pilot of 30–50 items, label towards the plan, and plan again with every label so far as
    the pilot. The pilot's labels count towards n when the pilot is itself a random sample of
    the judged items.

    Parameters
    ----------
    y_pilot : array-like of shape (pilot_n,)
        Human values of the pilot items (at least 2, not all equal).
    yhat_pilot : array-like of shape (pilot_n,)
        The judge's values on the pilot items.
    yhat_unlabeled : array-like
        The judge's values on the judged items not in the pilot.
    half_width : float
        The wanted ± of the interval, > 0 (e.g. 0.05 for ±5 points of a rate).
    confidence : float, default 0.95
        Confidence level of the interval, in (0, 1).

    Returns
    -------
    LabelPlan
        ``n`` labels in all (``more_labels`` beyond the pilot), the expected half-width
        there, and ``n_human_only``. When even labeling every judged item would not reach the
        target, ``n`` is the labels-only number (more than there are items) and ``note`` says
        so.

    Raises
    ------
    InputError
        A pilot of fewer than 2 items or with all labels equal, lengths that differ,
        non-finite values, ``half_width`` ≤ 0, ``confidence`` outside (0, 1).

    Examples
    --------
    >>> y_pilot    = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 1, 0]
    >>> yhat_pilot = [1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 1, 1, 0, 1, 1]
    >>> plan = plan_labels(y_pilot, yhat_pilot, [1, 0, 1, 1, 0] * 400, half_width=0.05)
    >>> plan.n, plan.n_human_only, plan.more_labels, round(plan.expected_half_width, 4)
    (218, 401, 198, 0.0499)
    """
    y, f, unl, h, conf = _plan_inputs(y_pilot, yhat_pilot, yhat_unlabeled, half_width,
                                      confidence)
    pilot = _Pilot.of(y, f, unl, _z(conf))
    n_human = max(MIN_LABELS_FOR_INTERVAL, math.ceil(pilot.z**2 * pilot.var_y / h**2))
    note = ""
    smallest = _smallest_n(pilot, h)
    if smallest is not None:
        n = max(smallest, MIN_LABELS_FOR_INTERVAL)
        expected = pilot.half_width_at(n) if n < pilot.total else pilot.human_half_width(n)
        lam = pilot.lam_at(n)
    else:
        n, lam = n_human, 0.0
        expected = pilot.human_half_width(n)
        note = (f"the target needs about {n} labels, more than the {pilot.total} judged items: "
                "judge more items, or accept a wider interval")
    return LabelPlan(n=n, expected_half_width=expected, n_human_only=n_human, pilot_n=y.size,
                     target_half_width=h, confidence=conf, N=pilot.total, lam=lam, note=note)
