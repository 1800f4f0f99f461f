"""How many labeled items give a κ confidence interval of a wanted half-width."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from maev_kit.agreement._kappa import fce_se

__all__ = ["labels_needed"]


def labels_needed(
    *,
    target_halfwidth: float = 0.1,
    kappa: float,
    marginals: Sequence[float] | Mapping[str, float] | np.ndarray,
    confidence: float = 0.95,
) -> int:
    """Items to label so that κ's CI is about ``±target_halfwidth`` wide.

    Assumes both raters share the label shares ``marginals`` (counts or proportions) and that
    the table follows the κ model ``p_ij = p_i p_j (1 − κ) + κ p_i [i = j]``; the Fleiss–Cohen–
    Everitt variance of that table gives ``n = (z · SE₁ / halfwidth)²`` with ``SE₁`` the
    one-item standard error. Subtract the items already labeled to get "label ~N more".

    Examples
    --------
    >>> labels_needed(target_halfwidth=0.1, kappa=0.6, marginals=[0.5, 0.35, 0.15])
    191
    >>> labels_needed(target_halfwidth=0.05, kappa=0.6, marginals=[0.5, 0.35, 0.15])
    762
    """
    if not (isinstance(target_halfwidth, (int, float)) and 0 < target_halfwidth < 2):
        raise ValueError(f"`target_halfwidth` must be a number in (0, 2), e.g. 0.1; got "
                         f"{target_halfwidth!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1), got {confidence!r}")
    p = np.asarray(list(marginals.values()) if isinstance(marginals, Mapping) else marginals,
                   dtype=float)
    if p.ndim != 1 or p.size < 2 or (p < 0).any() or p.sum() <= 0:
        raise ValueError("`marginals` must be two or more non-negative label shares (or counts), "
                         f"e.g. [0.5, 0.35, 0.15]; got {marginals!r}")
    p = p / p.sum()
    if (p == 0).any():
        p = p[p > 0]
        if p.size < 2:
            raise ValueError("`marginals` must have at least two labels with a positive share")
    if not (isinstance(kappa, (int, float)) and kappa <= 1) or math.isnan(kappa):
        raise ValueError(f"`kappa` must be a number ≤ 1 (the expected κ), got {kappa!r}")
    lowest = float(-(p / (1 - p)).min())
    if kappa < lowest:
        raise ValueError(f"`kappa`={kappa} is impossible with these marginals (minimum "
                         f"{lowest:.3f})")
    table = np.outer(p, p) * (1 - kappa) + kappa * np.diag(p)
    se1, _ = fce_se(table, np.eye(p.size))  # table sums to 1 → SE of one item
    from maev_kit.agreement._report import _z

    z = _z(confidence)
    return max(2, int(math.ceil((z * se1 / target_halfwidth) ** 2)))
