"""The seam of :mod:`maev_kit.calibration` for the other packages of maev_kit (not part of the user
API): the label accounting and wording the CLI and the report print for a calibration, the drift
bound of a check, the backend a card names, and the Wilson interval of a proportion (``wilson``,
the report's routing table).
"""

from __future__ import annotations

from maev_kit.calibration._card import card_backend
from maev_kit.calibration._check import upper_bound
from maev_kit.calibration._probes import PROBE_DESCRIPTIONS, wilson
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
           "outside_sample", "rank_labels", "upper_bound", "wilson"]
