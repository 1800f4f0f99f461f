"""Item bootstrap done as a multinomial draw over distinct label patterns.

Resampling ``n`` items with replacement is the same as drawing ``n`` items from the multinomial
over the *distinct* rows of labels (one row = one item's labels from every rater), with each
row's probability its share of the items. With two raters and three labels there are at most
nine such rows (the confusion cells), so 10,000 resamples of 10,000 items cost milliseconds;
with five annotators and a judge there are a few hundred. Statistics are then computed from
the resampled confusion tables, one per rater pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

__all__ = ["PatternBootstrap", "percentile_ci"]

_CHUNK_CELLS = 2_000_000  # resamples × patterns held in memory at once


class PatternBootstrap:
    """Resample items of a ``(raters, items)`` code array (−1 = missing) by pattern counts.

    >>> import numpy as np
    >>> codes = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    >>> boot = PatternBootstrap(codes, q=2)
    >>> boot.table(boot.counts, 0, 1).tolist()
    [[1.0, 1.0], [0.0, 2.0]]
    """

    def __init__(self, codes: np.ndarray, q: int):
        codes = np.asarray(codes, dtype=np.int64)
        self.q = q
        self.n = codes.shape[1]
        if self.n:
            self.patterns, counts = np.unique(codes.T, axis=0, return_counts=True)
        else:
            self.patterns, counts = np.empty((0, codes.shape[0]), np.int64), np.empty(0, int)
        self.counts = counts.astype(float)
        self._onehot: dict[tuple[int, int], np.ndarray] = {}

    def onehot(self, i: int, j: int) -> np.ndarray:
        """``(patterns, q·q)`` indicator of the (rater i, rater j) cell of each pattern."""
        key = (i, j)
        if key not in self._onehot:
            a, b = self.patterns[:, i], self.patterns[:, j]
            m = np.zeros((len(a), self.q * self.q))
            keep = (a >= 0) & (b >= 0)
            m[np.flatnonzero(keep), (a * self.q + b)[keep]] = 1.0
            self._onehot[key] = m
        return self._onehot[key]

    def table(self, weights: np.ndarray, i: int, j: int) -> np.ndarray:
        """Confusion table(s) of raters ``i`` × ``j`` for pattern weights ``(..., patterns)``."""
        t = weights @ self.onehot(i, j)
        return t.reshape(*t.shape[:-1], self.q, self.q)

    def resamples(self, n_resamples: int, seed: int | np.random.Generator | None
                  ) -> Iterator[np.ndarray]:
        """Yield chunks of resampled pattern counts, ``(chunk, patterns)``, n_resamples in all."""
        rng = np.random.default_rng(seed)
        if self.n == 0:
            return
        p = self.counts / self.n
        chunk = max(1, min(n_resamples, _CHUNK_CELLS // max(len(p), 1)))
        done = 0
        while done < n_resamples:
            b = min(chunk, n_resamples - done)
            yield rng.multinomial(self.n, p, size=b).astype(float)
            done += b

    def run(self, stat: Callable[[np.ndarray], np.ndarray], n_resamples: int,
            seed: int | np.random.Generator | None) -> np.ndarray:
        """Apply ``stat`` (pattern weights ``(b, P)`` → values ``(b, ...)``) to every resample."""
        parts = [np.asarray(stat(w), dtype=float) for w in self.resamples(n_resamples, seed)]
        return np.concatenate(parts) if parts else np.empty(0)


def percentile_ci(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """Percentile interval of the defined (non-NaN) resampled values; NaNs are left out."""
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be between 0 and 1 (e.g. 0.95), got {confidence!r}")
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return float("nan"), float("nan")
    alpha = 1 - confidence
    lo, hi = np.quantile(v, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def check_resamples(n_resamples: int) -> int:
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive integer, got {n_resamples!r}")
    return int(n_resamples)
