"""The seam of :mod:`maev_kit.calibration` for the other packages of maev_kit: the label accounting
and wording the CLI and the report print for a calibration, the drift bound of a check and the
backend a card names.

Another package of maev_kit uses ``calibration`` through ``maev_kit.calibration`` (the user API) or
through this module, never through a private module of it (tests/package/test_private_names.py).
Not part of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.calibration._card import card_backend
from maev_kit.calibration._check import upper_bound
from maev_kit.calibration._probes import PROBE_DESCRIPTIONS
from maev_kit.calibration._result import (
    CAUSE_FIXES,
    account_labels,
    accounting_text,
    label_problem,
    labels_are_reference,
    lost_items_note,
    outside_sample,
    rank_labels,
)

__all__ = ["CAUSE_FIXES", "PROBE_DESCRIPTIONS", "account_labels", "accounting_text",
           "card_backend", "label_problem", "labels_are_reference", "lost_items_note",
           "outside_sample", "rank_labels", "upper_bound"]
