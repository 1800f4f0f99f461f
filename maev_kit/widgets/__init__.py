"""Notebook widgets: TraceViewer, Labeler, FactReviewer, CalibrationDashboard (ipywidgets views).

The widgets are thin views: the logic lives in headless sessions
(:class:`maev_kit.labels.LabelingSession`, :class:`maev_kit.facts.FactReviewSession`) and the
HTML in :mod:`maev_kit.rendering` (plain strings, shared with the report). ipywidgets is imported
only when a widget name is first used, so ``MultiAgentTrace._repr_html_`` works without it.
Importing this package registers the trace timeline (:mod:`maev_kit.rendering._trace`) as the
HTML view of :class:`~maev_kit.traces.MultiAgentTrace`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import maev_kit.rendering.internal  # noqa: F401  (registers the trace's HTML view)

__all__ = ["Adjudicator", "CalibrationDashboard", "CriterionLabeler", "FactReviewer", "Labeler",
           "SessionProgress", "TraceViewer", "show"]

_LAZY = {
    "Adjudicator": "maev_kit.widgets._adjudicator",
    "CalibrationDashboard": "maev_kit.widgets._dashboard",
    "CriterionLabeler": "maev_kit.widgets._criterion_labeler",
    "FactReviewer": "maev_kit.widgets._fact_reviewer",
    "Labeler": "maev_kit.widgets._labeler",
    "SessionProgress": "maev_kit.widgets._adjudicator",
    "TraceViewer": "maev_kit.widgets._viewer",
    "show": "maev_kit.widgets._viewer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'maev_kit.widgets' has no attribute {name!r}")
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        if e.name in ("ipywidgets", "anywidget", "traitlets"):
            raise ImportError(f"maev_kit.widgets.{name} needs {e.name}: "
                              "it comes with maev-kit: pip install --force-reinstall "
                              "maev-kit") from e
        raise
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover
    from maev_kit.widgets._adjudicator import Adjudicator, SessionProgress
    from maev_kit.widgets._criterion_labeler import CriterionLabeler
    from maev_kit.widgets._dashboard import CalibrationDashboard
    from maev_kit.widgets._fact_reviewer import FactReviewer
    from maev_kit.widgets._labeler import Labeler
    from maev_kit.widgets._viewer import TraceViewer, show
