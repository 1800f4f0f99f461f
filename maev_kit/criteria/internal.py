"""The seam of :mod:`maev_kit.criteria` for the other packages of maev_kit: the judge a criterion
names (``module:function`` or a model), the criterion of an item and the window of conversation an
annotator is shown.

Another package of maev_kit uses ``criteria`` through ``maev_kit.criteria`` (the user API) or
through this module, never through a private module of it (tests/package/test_private_names.py).
Not part of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.criteria._judge import criterion_judge, criterion_of, is_function_name, load_function
from maev_kit.criteria._window import focus_text, window

__all__ = ["criterion_judge", "criterion_of", "focus_text", "is_function_name", "load_function",
           "window"]
