"""HTML shared by the views (:mod:`maev_kit.widgets`, :mod:`maev_kit.reporting`) and the data
model's ``_repr_html_``: escaping, cell formatting, and the trace / retention-item renderers.

Not part of the user API: the kit's views import this package (and its seam
:mod:`maev_kit.rendering.internal`), never each other; nothing here imports a view. Every piece of
text that reaches a page goes through :func:`esc`: trace text is untrusted, and a notebook's
HTML output runs scripts and ``onerror`` handlers.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["NA", "esc", "fmt", "is_missing"]

#: How a value that does not apply (NaN, pandas NA) is shown: never ``0.000`` or ``nan``.
NA = "n/a"


def esc(value: Any) -> str:
    """``html.escape`` of ``str(value)``, quotes included.

    >>> esc('<img src=x onerror="alert(1)">')
    '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
    """
    return html.escape(str(value), quote=True)


def is_missing(value: Any) -> bool:
    """None, a float NaN, or pandas' NA / NaT.

    >>> is_missing(None), is_missing(float("nan")), is_missing(0.0), is_missing("n/a")
    (True, True, False, False)
    """
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalar
        try:
            v = value.item()
        except (TypeError, ValueError, AttributeError):
            v = None
        if isinstance(v, float) and math.isnan(v):
            return True
    try:
        import pandas as pd

        return value is pd.NA or value is pd.NaT
    except ImportError:  # pragma: no cover
        return False


def fmt(value: Any, spec: str | None = None) -> str:
    """A cell value as plain (unescaped) text: floats to 3 decimals, NaN as ``n/a``, None as ``—``.

    >>> fmt(0.123456), fmt(3), fmt(float("nan")), fmt(None), fmt(True), fmt([1, 2])
    ('0.123', '3', 'n/a', '—', 'yes', '1, 2')
    >>> fmt(0.5, "{:.1%}"), fmt(float("nan"), "{:.1%}")
    ('50.0%', 'n/a')
    """
    if value is None:
        return "—"
    if is_missing(value):
        return NA
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()  # numpy scalar
        except (TypeError, ValueError, AttributeError):
            pass
    if isinstance(value, bool):
        return "yes" if value else "no"
    if spec is not None and isinstance(value, (int, float)):
        return spec.format(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "∞" if value > 0 else "−∞"
        return f"{value:.3f}"
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(fmt(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)
