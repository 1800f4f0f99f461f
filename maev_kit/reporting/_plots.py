"""Plots for the report, as inline SVG text.

matplotlib is imported inside the functions (``import maev_kit`` stays light). Figures are
built with :class:`matplotlib.figure.Figure` directly, not through ``pyplot``: no global
figure state, no GUI backend; ``savefig(format="svg")`` renders them. Text is kept as SVG
``<text>`` (``svg.fonttype = "none"``), which matplotlib XML-escapes; labels also have ``$``
escaped so trace text is never parsed as mathtext. Each SVG gets its own id prefix so several
can share one page.
"""

from __future__ import annotations

import io
import itertools
import math
import re
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

__all__ = ["OKABE_ITO", "figure_svg", "forest_svg", "heatmap_svg"]

#: Okabe–Ito colour-blind-safe palette.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
             "#000000")

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "maev-kit",
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#57606a",
    "axes.labelcolor": "#1f2328",
    "xtick.color": "#57606a",
    "ytick.color": "#1f2328",
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "text.usetex": False,
}

_counter = itertools.count(1)


def _label(value: Any, limit: int = 36) -> str:
    """A plot label: shortened, and ``$`` escaped so it is never read as mathtext."""
    s = str(value)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return s.replace("\\", "\\\\").replace("$", r"\$")


def _with_tooltip(svg: str, title: str, limit: int) -> str:
    """The figure with its full title on hover (an SVG ``<title>``) when it was shortened.

    >>> "<title>" + "x" * 70 in _with_tooltip('<svg class="plot"></svg>', "x" * 70, 60)
    True
    """
    if len(title) <= limit:
        return svg
    from html import escape

    at = svg.index(">") + 1
    return svg[:at] + f"<title>{escape(title)}</title>" + svg[at:]


def _margins(fig: Any, *, left: float, right: float, top: float, bottom: float) -> None:
    """Set the axes margins in inches (cheaper than ``bbox_inches="tight"``: one draw)."""
    w, h = fig.get_size_inches()
    fig.subplots_adjust(left=min(left / w, 0.7), right=1 - right / w, top=1 - top / h,
                        bottom=min(bottom / h, 0.6))


def _text_width(labels: Sequence[str], size: float = 9) -> float:
    """Rough width in inches of the longest label at ``size`` points."""
    longest = max((len(s) for s in labels), default=0)
    return longest * size * 0.55 / 72


def figure_svg(fig: Any) -> str:
    """A matplotlib figure as an inline ``<svg>`` element (no XML prolog, no metadata).

    Ids are prefixed so that several figures can live on one page.

    >>> from matplotlib.figure import Figure
    >>> fig = Figure(figsize=(1, 1)); _ = fig.add_subplot().set_title("a <b> & c")
    >>> svg = figure_svg(fig)
    >>> svg.startswith("<svg"), "&lt;b&gt;" in svg, "<b>" in svg, "http://purl" in svg
    (True, True, False, False)
    """
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "maev-kit"}), \
            warnings.catch_warnings():
        # the text is drawn by the browser (svg.fonttype none), in the page's font stack:
        # a glyph matplotlib's own font lacks (CJK agent names) is not missing there
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        fig.savefig(buf, format="svg", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    prefix = f"mk{next(_counter)}-"
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m.group(1)}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m.group(1)})", svg)
    svg = re.sub(r'(xlink:href|href)="#([^"]+)"',
                 lambda m: f'{m.group(1)}="#{prefix}{m.group(2)}"', svg)
    # Scale with the page: keep the viewBox, let CSS size it.
    svg = re.sub(r'^<svg([^>]*?) width="([\d.]+)pt" height="([\d.]+)pt"',
                 lambda m: (f'<svg{m.group(1)} width="{float(m.group(2)) * 4 / 3:.0f}" '
                            f'height="{float(m.group(3)) * 4 / 3:.0f}" class="plot" role="img"'),
                 svg, count=1)
    return svg.strip()


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


#: A plot element's extent on the x axis, (low, high): the axis must show it whole.
_Extent = tuple[float, float]


def _forest_row(ax: Any, y: float, row: tuple[str, float | None, float | None, float | None], *,
                color: str, bars: bool, na_x: float) -> list[_Extent]:
    """Draw one row of a forest plot at ``y``: its bar (or dot), its CI whiskers and its value
    (``n/a`` at ``na_x`` when it has none); return the extents drawn."""
    _, value, lo, hi = row
    if not _finite(value):
        ax.text(na_x, y, "  n/a", va="center", color="#6e7781")
        return []
    v = float(cast(float, value))  # _finite: not None
    extents: list[_Extent] = []
    if bars:
        ax.barh(y, v, height=0.62, color=color, alpha=0.85)
    else:
        ax.plot([v], [y], "o", color=color, markersize=6, zorder=3)
    if _finite(lo) and _finite(hi):
        lo_f, hi_f = float(cast(float, lo)), float(cast(float, hi))  # _finite: not None
        ax.errorbar(v, y, xerr=[[max(v - lo_f, 0.0)], [max(hi_f - v, 0.0)]],
                    fmt="none", ecolor="#1f2328", elinewidth=1.2, capsize=3, zorder=4)
        extents.append((lo_f, hi_f))
    extents.append((v, v))
    text_x = max(float(cast(float, hi)), v) if _finite(hi) else v
    ax.annotate(f"{v:.3f}", (text_x, y), xytext=(5, 0), textcoords="offset points",
                va="center", ha="left", fontsize=8, color="#1f2328", zorder=5)
    return extents


def _forest_band(ax: Any, band: tuple[float, float, float, str]) -> list[_Extent]:
    """Draw the shaded band ``(centre, low, high, label)`` and its centre line (nothing when a
    number is missing); return the extents drawn."""
    if not all(_finite(b) for b in band[:3]):
        return []
    c, lo_b, hi_b, blabel = band
    ax.axvspan(float(lo_b), float(hi_b), color=OKABE_ITO[2], alpha=0.18, lw=0,
               label=_label(blabel, 60))
    ax.axvline(float(c), color=OKABE_ITO[2], lw=1.4, ls="-")
    return [(float(lo_b), float(hi_b))]


def _forest_refs(ax: Any, refs: Sequence[tuple[float, str]]) -> list[_Extent]:
    """Draw the vertical reference lines ``(x, label)``, each in its own style; return the
    extents drawn."""
    styles = ("--", ":", "-.")
    extents: list[_Extent] = []
    for i, (x, rlabel) in enumerate(refs):
        ax.axvline(float(x), color=OKABE_ITO[1] if i == 0 else OKABE_ITO[5],
                   ls=styles[i % 3], lw=1.4, label=_label(rlabel, 60))
        extents.append((float(x), float(x)))
    return extents


def _forest_xlim(xlim: tuple[float, float] | None,
                 extents: Sequence[_Extent]) -> tuple[float, float]:
    """The x range: ``xlim`` with room on the right for the value labels, or, when None, one
    that holds 0, 1 and every extent drawn.

    >>> _forest_xlim((0.0, 1.0), [(2.0, 3.0)])
    (0.0, 1.1)
    >>> _forest_xlim(None, [(-0.5, 0.2), (0.3, 1.5)])
    (-0.55, 1.62)
    """
    if xlim is not None:
        return (xlim[0], xlim[1] + 0.1)
    lows = [lo for lo, _ in extents]
    highs = [hi for _, hi in extents]
    lo_x = min([0.0, *lows]) if lows else 0.0
    hi_x = max([1.0, *highs]) if highs else 1.0
    return (lo_x - 0.05, hi_x + 0.12)


def forest_svg(
    rows: Sequence[tuple[str, float | None, float | None, float | None]],
    *,
    title: str = "",
    xlabel: str = "",
    xlim: tuple[float, float] | None = (0.0, 1.0),
    highlight: Sequence[str] = (),
    refs: Sequence[tuple[float, str]] = (),
    band: tuple[float, float, float, str] | None = None,
    bars: bool = True,
    width: float = 6.4,
) -> str:
    """A horizontal bar (or dot) plot with confidence intervals, top to bottom in row order.

    Parameters
    ----------
    rows : list of (label, value, ci_low, ci_high); NaN/None values are drawn as "n/a".
    highlight : labels drawn in the accent colour (e.g. the composite score).
    refs : vertical reference lines ``(x, label)`` (e.g. the 90 % and 95 % routing targets).
    band : ``(centre, low, high, label)``, a shaded vertical band (e.g. the human ceiling).
    bars : bars from 0 with whiskers when True; dots with whiskers (a forest plot) when False.

    >>> svg = forest_svg([("composite", 0.8, 0.7, 0.9)], refs=[(0.9, "90 %")])
    >>> svg.startswith("<svg") and "composite" in svg
    True
    """
    from matplotlib.figure import Figure
    import matplotlib

    n = max(len(rows), 1)
    ylabels = [_label(r[0]) for r in rows]
    has_legend = bool(refs) or band is not None
    top = (0.3 if title else 0.1) + (0.22 if has_legend else 0.0)
    bottom = 0.32 + (0.2 if xlabel else 0.0)
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(width, top + bottom + 0.3 * n + 0.15))
        _margins(fig, left=_text_width(ylabels) + 0.2, right=0.15, top=top, bottom=bottom)
        ax = fig.add_subplot()
        ys = list(range(n))[::-1]
        extents: list[_Extent] = []
        for y, row in zip(ys, rows):
            extents += _forest_row(ax, y, row, bars=bars, na_x=0.0 if xlim is None else xlim[0],
                                   color=OKABE_ITO[5] if row[0] in highlight else OKABE_ITO[0])
        if band is not None:
            extents += _forest_band(ax, band)
        extents += _forest_refs(ax, refs)
        ax.set_yticks(ys, ylabels)
        ax.set_xlim(*_forest_xlim(xlim, extents))
        ax.set_ylim(-0.6, n - 0.4)
        ax.grid(axis="x", color="#d0d7de", lw=0.6)
        ax.set_axisbelow(True)
        if title:
            ax.set_title(_label(title, 90), loc="left", pad=16 if has_legend else 6)
        if xlabel:
            ax.set_xlabel(_label(xlabel, 90))
        if has_legend:
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, frameon=False,
                      fontsize=8, borderaxespad=0.1, handlelength=1.8)
        return _with_tooltip(figure_svg(fig), title, 90)


def heatmap_svg(
    matrix: Sequence[Sequence[float]],
    row_labels: Sequence[Any],
    col_labels: Sequence[Any],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    fmt: str = "{:.0f}",
    cmap: str = "Blues",
    size: tuple[float, float] | None = None,
    vmax: float | None = None,
) -> str:
    """An annotated heatmap (confusion matrix, handoff counts).

    ``size`` is the (width, height) of one cell in inches; the figure grows with its labels.

    >>> svg = heatmap_svg([[3, 1], [0, 2]], ["a", "b"], ["a", "b"], title="t")
    >>> svg.count("<text") >= 4
    True
    """
    import numpy as np
    from matplotlib.figure import Figure
    import matplotlib

    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"`matrix` must be 2-D, got shape {m.shape}")
    nr, nc = m.shape
    rlabels = [_label(r, 22) for r in row_labels]
    clabels = [_label(c, 18) for c in col_labels]
    rotate = nc > 3 or _text_width(clabels, 9) > 0.62
    left = _text_width(rlabels) + 0.15 + (0.25 if ylabel else 0.0)
    bottom = ((_text_width(clabels) * 0.6 + 0.2) if rotate else 0.3) + (0.22 if xlabel else 0.0)
    top = 0.3 if title else 0.1
    cell_w, cell_h = (0.62, 0.42) if size is None else size
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(left + 0.15 + cell_w * nc, top + bottom + cell_h * nr))
        _margins(fig, left=left, right=0.15, top=top, bottom=bottom)
        ax = fig.add_subplot()
        finite = m[np.isfinite(m)]
        if vmax is None:
            vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        # Vector cells (pcolormesh), not imshow: no embedded raster image.
        ax.pcolormesh(np.arange(nc + 1) - 0.5, np.arange(nr + 1) - 0.5, np.nan_to_num(m),
                      cmap=cmap, vmin=0, vmax=vmax, edgecolors="#ffffff", linewidth=1.0)
        ax.set_xlim(-0.5, nc - 0.5)
        ax.set_ylim(nr - 0.5, -0.5)
        for i in range(nr):
            for j in range(nc):
                v = m[i, j]
                if not np.isfinite(v):
                    txt = "–"
                elif v == 0 and fmt == "{:.0f}":
                    txt = "·"
                else:
                    txt = fmt.format(v)
                dark = np.isfinite(v) and v > 0.55 * vmax
                ax.text(j, i, txt, ha="center", va="center", fontsize=8,
                        color="#ffffff" if dark else "#1f2328")
        ax.set_xticks(range(nc), clabels, rotation=35 if rotate else 0,
                      ha="right" if rotate else "center",
                      rotation_mode="anchor" if rotate else "default")
        ax.set_yticks(range(nr), rlabels)
        for spine in ax.spines.values():
            spine.set_visible(False)
        ax.tick_params(length=0)
        if title:
            ax.set_title(_label(title, 60), loc="left")
        if xlabel:
            ax.set_xlabel(_label(xlabel, 60))
        if ylabel:
            ax.set_ylabel(_label(ylabel, 60))
        return _with_tooltip(figure_svg(fig), title, 60)
