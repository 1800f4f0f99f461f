"""The seam of :mod:`maev_kit.metrics` for the other packages of maev_kit (not part of the user
API): the routing counts, report builders and composite-score pieces the evaluation layer
aggregates across conversations.
"""

from __future__ import annotations

from maev_kit.metrics._coerce import as_records
from maev_kit.metrics._coordination import DEFAULT_CONTRADICTION_PENALTY, check_weights, combine
from maev_kit.metrics._routing import (
    accuracies,
    confusion_from_counts,
    count_routes,
    report_from_counts,
)

__all__ = ["DEFAULT_CONTRADICTION_PENALTY", "accuracies", "as_records", "check_weights", "combine",
           "confusion_from_counts", "count_routes", "report_from_counts"]
