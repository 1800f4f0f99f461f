"""The seam of :mod:`maev_kit.evaluation` for the other packages of maev_kit (not part of the user
API): what the CLI needs beyond :func:`~maev_kit.evaluation.evaluate`: criteria resolution, the
default judge and whether a path is a saved result.
"""

from __future__ import annotations

from maev_kit.evaluation._criteria import (
    check_criteria_judge,
    criteria_only_judge,
    resolve_criteria,
)
from maev_kit.evaluation._options import DEFAULT_JUDGE
from maev_kit.evaluation._persist import is_saved_result

__all__ = ["DEFAULT_JUDGE", "check_criteria_judge", "criteria_only_judge", "is_saved_result",
           "resolve_criteria"]
