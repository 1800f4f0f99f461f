"""Prevalence-corrected label rates: undo a judge's known confusions on unlabeled items."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from maev_kit.agreement.internal import check_labels, check_resamples, encode, percentile_ci
from maev_kit.agreement import LABELS

__all__ = ["corrected_prevalence", "project_to_simplex"]


def project_to_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row of ``v`` onto the probability simplex.

    >>> project_to_simplex(np.array([0.7, 0.5, -0.2])).round(3).tolist()
    [0.6, 0.4, 0.0]
    """
    one = np.ndim(v) == 1
    v = np.atleast_2d(np.asarray(v, dtype=float))
    u = -np.sort(-v, axis=1)
    css = np.cumsum(u, axis=1) - 1
    k = np.arange(1, v.shape[1] + 1)
    cond = u - css / k > 0
    rho = v.shape[1] - 1 - np.argmax(cond[:, ::-1], axis=1)
    theta = css[np.arange(len(v)), rho] / (rho + 1)
    out = np.maximum(v - theta[:, None], 0.0)
    return out[0] if one else out


def _misclassification(conf: np.ndarray) -> np.ndarray:
    """Row-normalised confusion ``P(judge = j | human = i)`` for a stack of tables; rows with no
    items become identity rows (no correction for a class the humans never used)."""
    rows = conf.sum(axis=-1, keepdims=True)
    eye = np.broadcast_to(np.eye(conf.shape[-1]), conf.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.where(rows > 0, conf / rows, eye)
    return m


def _correct(m: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Solve ``Mᵀ p = q`` (least squares, via the pseudo-inverse) and project onto the simplex."""
    p = np.einsum("...ij,...j->...i", np.linalg.pinv(np.swapaxes(m, -1, -2)), q)
    return project_to_simplex(p.reshape(-1, q.shape[-1])).reshape(p.shape)


def corrected_prevalence(
    judge_labels: Sequence[Any],
    confusion: Any,
    *,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 2_000,
    confidence: float = 0.95,
    seed: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """The share of each label on unlabeled items, corrected for the judge's known errors.

    If humans say ``i`` and the judge says ``j`` with probability ``M[i, j]`` (from its confusion
    matrix against humans on labeled items), the judge's label shares ``q`` on new items are
    ``Mᵀ p`` for the true shares ``p``; this solves for ``p`` (matrix inversion, least squares
    when singular) and clips it to the simplex. The percentile bootstrap CI resamples both the
    labeled items (the confusion cells) and the new items' judge labels.

    Parameters
    ----------
    judge_labels : the judge's labels on the new items (``None`` = no verdict, left out).
    confusion : counts, rows = human label, columns = judge label, in the order of ``labels``
        (e.g. ``CalibrationResult.confusions[key]``); a DataFrame or a nested list.

    Returns
    -------
    DataFrame indexed by label with ``raw`` (the judge's own shares), ``corrected``, ``low`` and
    ``high``.

    Examples
    --------
    >>> conf = [[80, 15, 5], [10, 85, 5], [0, 10, 90]]   # the judge over-calls "lost"
    >>> judge = ["retained"] * 50 + ["lost"] * 40 + ["contradicted"] * 10
    >>> out = corrected_prevalence(judge, conf, n_resamples=500)
    >>> out["raw"].round(2).tolist(), out["corrected"].round(3).tolist()
    ([0.5, 0.4, 0.1], [0.58, 0.361, 0.059])
    """
    labels = check_labels(labels)
    n_resamples = check_resamples(n_resamples)
    q_n = len(labels)
    if hasattr(confusion, "loc") and hasattr(confusion, "index"):
        try:
            conf = confusion.loc[list(labels), list(labels)].to_numpy(dtype=float)
        except KeyError:
            conf = np.asarray(confusion, dtype=float)
    else:
        conf = np.asarray(confusion, dtype=float)
    if conf.shape != (q_n, q_n) or (conf < 0).any():
        raise ValueError(f"`confusion` must be a {q_n}×{q_n} table of non-negative counts (rows: "
                         f"human, columns: judge, in the order {list(labels)}); got shape "
                         f"{conf.shape}")
    codes = encode(judge_labels, labels, name="judge_labels")
    codes = codes[codes >= 0]
    if codes.size == 0:
        raise ValueError("`judge_labels` holds no labels to correct")
    counts = np.bincount(codes, minlength=q_n).astype(float)
    raw = counts / counts.sum()
    if (conf.sum(axis=1) == 0).any():
        missing = [labels[i] for i in np.flatnonzero(conf.sum(axis=1) == 0)]
        warnings.warn(f"no labeled item has human label(s) {missing}: the judge's errors on "
                      "them are unknown and left uncorrected", UserWarning, stacklevel=2)
    corrected = _correct(_misclassification(conf), raw)
    rng = np.random.default_rng(seed)
    n_conf = int(round(conf.sum()))
    conf_star = rng.multinomial(n_conf, (conf / conf.sum()).ravel(), size=n_resamples)
    conf_star = conf_star.reshape(n_resamples, q_n, q_n).astype(float)
    q_star = rng.multinomial(int(counts.sum()), raw, size=n_resamples) / counts.sum()
    p_star = _correct(_misclassification(conf_star), q_star)
    ci = [percentile_ci(p_star[:, k], confidence) for k in range(q_n)]
    out = pd.DataFrame({"raw": raw, "corrected": corrected,
                        "low": [c[0] for c in ci], "high": [c[1] for c in ci]},
                       index=pd.Index(labels, name="label"))
    return out
