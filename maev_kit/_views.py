"""Where the views register how to draw a data object, so the data model never imports its view.

A model's ``_repr_html_`` asks :func:`render` for its kind (``"trace"``); a view registers a
drawing function with :func:`register`. The package root registers a lazy one that loads the
HTML view on first use, so a trace shown bare in a notebook draws its timeline without the data
layer importing the view layer.

>>> register("example", lambda obj: f"<b>{obj}</b>")
>>> render("example", 1), render("nothing", 1)
('<b>1</b>', None)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["register", "render"]

_RENDERERS: dict[str, Callable[[Any], str]] = {}


def register(kind: str, draw: Callable[[Any], str] | None) -> None:
    """Make ``draw`` the HTML of objects of ``kind`` (None: none registered)."""
    if draw is None:
        _RENDERERS.pop(kind, None)
    else:
        _RENDERERS[kind] = draw


def render(kind: str, obj: Any) -> str | None:
    """The registered HTML of ``obj``, or None when no view registered ``kind``."""
    draw = _RENDERERS.get(kind)
    return draw(obj) if draw is not None else None
