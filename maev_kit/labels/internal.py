"""The seam of :mod:`maev_kit.labels` for the other packages of maev_kit (not part of the user
API): the store URLs and SQLite header the CLI and MLflow logging inspect, the review-decision file
the fact review writes, why a label was set aside, and the source an undo line carries.
"""

from __future__ import annotations

from maev_kit.labels._attach import review_rejections, set_aside_reason
from maev_kit.labels._backends import (
    SQLITE_HEADER,
    SQLiteBackend,
    is_sqlite_file,
    is_store_url,
    redact_url,
)
from maev_kit.labels._reviews import DECISIONS, DecisionFileError, ReviewDecision, read_decisions
from maev_kit.labels._session import UNDO_SOURCE

__all__ = ["DECISIONS", "SQLITE_HEADER", "DecisionFileError", "ReviewDecision", "SQLiteBackend",
           "UNDO_SOURCE", "is_sqlite_file", "is_store_url", "read_decisions", "redact_url", "review_rejections",
           "set_aside_reason"]
