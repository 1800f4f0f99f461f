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

__all__ = ["call", "provide", "register", "render"]

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


_PROVIDERS: dict[str, Callable[..., Any]] = {}


def provide(name: str, function: Callable[..., Any]) -> None:
    """Make ``function`` what :func:`call` runs for ``name``: an upper layer's service a lower
    layer's object offers as a method (``EvaluationResult.log_to_mlflow``), without importing
    that layer.

    >>> provide("example-double", lambda x: 2 * x)
    >>> call("example-double", 21)
    42
    """
    _PROVIDERS[name] = function


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """Run what was provided for ``name``; a clear error when nothing was."""
    function = _PROVIDERS.get(name)
    if function is None:
        raise RuntimeError(f"nothing provides {name!r} (maev_kit provides it on import)")
    return function(*args, **kwargs)
