"""The seam of :mod:`maev_kit.agreement` for the other packages of maev_kit (not part of the user
API): the label encoding, bootstrap and number-formatting helpers the calibration layer builds its
tables and intervals with.
"""

from __future__ import annotations

from maev_kit.agreement._bootstrap import check_resamples, percentile_ci
from maev_kit.agreement._kappa import ac_from_table
from maev_kit.agreement._labels import check_labels, encode
from maev_kit.agreement._report import finite_float, kappa_text

__all__ = ["ac_from_table", "check_labels", "check_resamples", "encode", "finite_float",
           "kappa_text", "percentile_ci"]
