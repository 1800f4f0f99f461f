"""The seam of :mod:`maev_kit.criteria` for the other packages of maev_kit (not part of the user
API): the judge a criterion names (``module:function`` or a model), the criterion of an item and
the window of conversation an annotator is shown.
"""

from __future__ import annotations

from maev_kit.criteria._judge import criterion_judge, criterion_of, is_function_name, load_function
from maev_kit.criteria._window import focus_text, window

__all__ = ["criterion_judge", "criterion_of", "focus_text", "is_function_name", "load_function",
           "window"]
