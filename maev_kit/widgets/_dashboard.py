"""CalibrationDashboard: the judge leaderboard, κ with CIs against the annotators' ceiling,
confusion matrices, and every disagreement one click away from its conversation."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import ipywidgets as widgets

from maev_kit.rendering.internal import (
    ceiling as _ceiling,
    judge_label as _judge_label,
    key_label as _key_label,
    num as _num,
)
from maev_kit.agreement import ci_label
from maev_kit.widgets._render import LABEL_COLORS, item_html
from maev_kit.widgets._viewer import TraceViewer

__all__ = ["CalibrationDashboard", "confusion_html", "forest_html", "leaderboard_html"]

_CSS = """
.maev-cal{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;color:#1f2328}
.maev-cal h4{margin:10px 0 4px}
.maev-cal table.lb{border-collapse:collapse}
.maev-cal table.lb th,.maev-cal table.lb td{padding:2px 8px;border-bottom:1px solid #d0d7de;
 text-align:right}
.maev-cal table.lb th:first-child,.maev-cal table.lb td:first-child{text-align:left}
.maev-cal table.lb tr.best td{background:#dafbe1;font-weight:600}
.maev-cal .forest{position:relative;margin:4px 0}
.maev-cal .frow{display:flex;align-items:center;height:22px}
.maev-cal .fname{width:220px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
 padding-right:8px;text-align:right}
.maev-cal .track{position:relative;flex:0 0 420px;height:22px;border-left:1px solid #d0d7de}
.maev-cal .band{position:absolute;top:0;bottom:0;background:rgba(0,158,115,.18)}
.maev-cal .bandc{position:absolute;top:0;bottom:0;border-left:2px solid #009E73}
.maev-cal .ci{position:absolute;top:10px;height:2px;background:#1f2328}
.maev-cal .dot{position:absolute;top:6px;width:10px;height:10px;margin-left:-5px;
 border-radius:5px;background:#0072B2}
.maev-cal .fval{width:60px;padding-left:6px;font-variant-numeric:tabular-nums}
.maev-cal .axis{display:flex;justify-content:space-between;width:420px;margin-left:228px;
 color:#57606a;font-size:11px}
.maev-cal table.cm{border-collapse:collapse;margin:2px 12px 8px 0;display:inline-table}
.maev-cal table.cm td,.maev-cal table.cm th{padding:3px 7px;text-align:center;font-size:12px}
.maev-cal table.cm caption{font-weight:600;text-align:left}
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(x: Any, digits: int = 3) -> str:
    v = _num(x)
    if v is None:
        return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)
    if float(v).is_integer() and not isinstance(x, float):
        return str(int(v))
    return f"{v:.{digits}f}"


def _records(df: Any) -> list[dict[str, Any]]:
    if df is None:
        return []
    if hasattr(df, "to_dict"):
        return list(df.to_dict("records"))
    return [dict(r) for r in df]


#: Leaderboard columns shown, in this order (when the leaderboard has them).
LEADERBOARD_SHOWN = ("judge", "prompt", "kappa", "kappa_low", "kappa_high", "delta_kappa",
                     "p_value", "ac1", "accuracy", "parse_failure_rate", "recall_contradicted",
                     "n_items", "cost", "latency_p50")


def leaderboard_html(leaderboard: Any) -> str:
    """The leaderboard as an escaped HTML table; the row with the highest κ highlighted."""
    recs = _records(leaderboard)
    if not recs:
        return "<p>No judges in the leaderboard.</p>"
    cols = list(leaderboard.columns) if hasattr(leaderboard, "columns") else list(recs[0])
    shown = [c for c in LEADERBOARD_SHOWN if c in cols]
    cols = shown if {"judge", "kappa"} <= set(shown) else cols
    kappas = [_num(r.get("kappa")) for r in recs]
    best = None
    if any(k is not None for k in kappas):
        best = max(range(len(recs)),
                   key=lambda i: -math.inf if kappas[i] is None else cast(float, kappas[i]))
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = "".join(
        f'<tr{" class=best" if i == best else ""}>'
        + "".join(f"<td>{_e(_fmt(r.get(c)))}</td>" for c in cols) + "</tr>"
        for i, r in enumerate(recs))
    return f'<table class="lb"><tr>{head}</tr>{body}</table>'


def forest_html(rows: Sequence[tuple[str, Any, Any, Any]],
                ceiling: tuple[float, float, float] | None = None, *,
                confidence: float = 0.95, labels: str = "human") -> str:
    """A κ forest plot in plain HTML/CSS: a dot and CI whisker per judge, the ceiling band.

    ``confidence`` labels the intervals (``"80% CI"``); ``labels`` names who labeled
    (``"human"`` or ``"reference"``) in the ceiling's legend.

    >>> out = forest_html([("judge-a", 0.61, 0.5, 0.7)], ceiling=(0.8, 0.72, 0.88),
    ...                   confidence=0.8)
    >>> 'class="band"' in out and "judge-a" in out and "0.610" in out
    True
    >>> "human ceiling κ 0.800 (80% CI 0.720–0.880)" in out, "95" in out
    (True, False)
    """
    values = [v for r in rows for v in (_num(r[1]), _num(r[2]), _num(r[3])) if v is not None]
    if ceiling:
        values += list(ceiling)
    lo_x = min([0.0, *values]) if values else 0.0
    lo_x = math.floor(lo_x * 10) / 10
    hi_x = 1.0

    def x(v: float) -> float:
        return 100.0 * (min(max(v, lo_x), hi_x) - lo_x) / (hi_x - lo_x)

    out = []
    for name, k, lo, hi in rows:
        kv, lov, hiv = _num(k), _num(lo), _num(hi)
        band = ""
        if ceiling:
            c, cl, ch = ceiling
            band = (f'<div class="band" style="left:{x(cl):.2f}%;width:{x(ch) - x(cl):.2f}%">'
                    f'</div><div class="bandc" style="left:{x(c):.2f}%"></div>')
        marks = ""
        if kv is not None:
            if lov is not None and hiv is not None:
                marks += (f'<div class="ci" style="left:{x(lov):.2f}%;'
                          f'width:{x(hiv) - x(lov):.2f}%"></div>')
            marks += f'<div class="dot" style="left:{x(kv):.2f}%"></div>'
        ci = f" [{_fmt(lo)}, {_fmt(hi)}]" if lov is not None and hiv is not None else ""
        out.append(f'<div class="frow" title="{_e(name)}: κ {_e(_fmt(k))}{_e(ci)}">'
                   f'<div class="fname">{_e(name)}</div><div class="track">{band}{marks}</div>'
                   f'<div class="fval">{_e(_fmt(k) if kv is not None else "n/a")}</div></div>')
    ticks = [lo_x + (hi_x - lo_x) * i / 4 for i in range(5)]
    axis = "".join(f"<span>{t:.2f}</span>" for t in ticks)
    legend = ""
    if ceiling:
        legend = (f'<div style="font-size:11.5px;color:#57606a;margin-left:228px">shaded: '
                  f"{_ceiling_name(labels)} κ {ceiling[0]:.3f} ({ci_label(confidence)} "
                  f"{ceiling[1]:.3f}–{ceiling[2]:.3f}); dots: judge κ with "
                  f"{ci_label(confidence)}</div>")
    return f'<div class="forest">{"".join(out)}<div class="axis">{axis}</div>{legend}</div>'


def _ceiling_name(labels: str) -> str:
    """The annotators' agreement with each other, named for who labeled (as the report does)."""
    return "human ceiling" if labels == "human" else f"{labels}-annotator ceiling"


def confusion_html(matrix: Any, title: str = "", *, labels: str = "human") -> str:
    """A confusion matrix (rows: the ``labels``' label, columns: judge) as a shaded HTML table."""
    if hasattr(matrix, "values") and hasattr(matrix, "index"):
        rows_l = [str(i) for i in matrix.index]
        cols_l = [str(c) for c in matrix.columns]
        m = [[_num(v) for v in row] for row in matrix.values.tolist()]
    else:
        m = [[_num(v) for v in row] for row in matrix]
        rows_l = cols_l = [str(i) for i in range(len(m))]
    vmax = max([v for row in m for v in row if v is not None] + [1.0])
    head = (f"<tr><th>{_e(labels)} ↓ judge →</th>"
            + "".join(f"<th>{_e(c)}</th>" for c in cols_l) + "</tr>")
    body = []
    for rl, row in zip(rows_l, m):
        cells = []
        for cl, v in zip(cols_l, row):
            a = 0.0 if v is None else 0.85 * v / vmax
            style = f"background:rgba(0,114,178,{a:.2f});" + ("color:#fff;" if a > 0.5 else "")
            if rl == cl:
                style += "outline:1px solid #57606a;"
            txt = "–" if v is None else (str(int(v)) if v.is_integer() else f"{v:.3f}")
            cells.append(f'<td style="{style}">{_e(txt)}</td>')
        body.append(f"<tr><th>{_e(rl)}</th>{''.join(cells)}</tr>")
    cap = f"<caption>{_e(title)}</caption>" if title else ""
    return f'<table class="cm">{cap}{head}{"".join(body)}</table>'


_HUMAN_COLS = ("human_majority", "human", "human_label", "label_human", "annotator_label",
               "gold")
_JUDGE_COLS = ("judge_label", "predicted", "verdict", "label_judge", "judge_verdict")


def _pick(row: Mapping[str, Any], names: Sequence[str]) -> Any:
    for n in names:
        v = row.get(n)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return v
    return None


class CalibrationDashboard(widgets.VBox):
    """The result of calibrating judges against labels, to explore in a notebook.

    Shows the leaderboard (best κ highlighted), a κ forest plot with CIs at the result's
    ``confidence`` and the annotators'-ceiling band, a confusion matrix per judge, and the list
    of disagreements: choosing one opens its item and its conversation in a
    :class:`TraceViewer`. When every label is a reference label (the result's
    ``reference_labels``), the labels are called "reference", never "human".

    Parameters
    ----------
    calibration_result : CalibrationResult
        Uses ``leaderboard`` (DataFrame with ``judge``, ``prompt``, ``kappa``, ``kappa_low``,
        ``kappa_high``), ``ceiling``, ``confusions`` (dict key → 3×3 DataFrame),
        ``disagreements`` (DataFrame with ``item_id``), ``confidence`` and
        ``reference_labels``.
    traces : list of MultiAgentTrace, optional
        The conversations, to open disagreements in (default: the result's ``traces``).
    items : list of RetentionItem, optional
        The labeled items (default: the result's ``items``), to show the fact with the trace.
    comparison : PromptComparison, optional
        Adds a prompt comparison (:class:`~maev_kit.widgets._prompt_comparison.
        PromptComparisonView`): two prompts side by side, κ with CIs, the confusion-matrix
        difference and each item whose verdict changed, openable in a TraceViewer. An
        :class:`~maev_kit.calibration.AlignmentResult` passed as ``calibration_result`` shows
        its test split and its winner-against-base comparison.
    """

    def __init__(self, calibration_result: Any, *, traces: Sequence[Any] | None = None,
                 items: Sequence[Any] | None = None, comparison: Any = None, **kwargs: Any):
        cal = calibration_result
        if hasattr(cal, "candidates") and hasattr(cal, "test_comparison"):  # AlignmentResult
            comparison = comparison if comparison is not None else cal.comparison()
            cal = cal.test if cal.test is not None else cal.dev
        if not hasattr(cal, "leaderboard"):
            raise TypeError("`calibration_result` must be a CalibrationResult (from "
                            f"maev_kit.calibration), got {type(cal).__name__}")
        self.result = cal
        traces = traces if traces is not None else getattr(cal, "traces", None)
        items = items if items is not None else getattr(cal, "items", None)
        self._traces = {t.conversation_id: t for t in (traces or [])}
        if items is None:  # the runs may hold the items they judged
            items = [it for run in (getattr(cal, "runs", None) or {}).values()
                     for it in (getattr(run, "items", None) or ())]
        self._items = {it.item_id: it for it in (items or []) if hasattr(it, "item_id")}
        self.ceiling = _ceiling(getattr(cal, "ceiling", None))
        #: Who labeled: "reference" when every label is a reference label, else "human".
        self.labels = "reference" if getattr(cal, "reference_labels", False) is True else "human"
        who, confidence = self.labels, float(getattr(cal, "confidence", 0.95))

        recs = _records(cal.leaderboard)
        rows = [(_judge_label(r), r.get("kappa"), r.get("kappa_low"), r.get("kappa_high"))
                for r in recs]
        parts = [f"<style>{_CSS}</style>"]
        rec = getattr(cal, "recommendation", None)
        if rec:
            parts.append(f"<p><b>{_e(rec)}</b></p>")
        parts.append("<h4>Leaderboard</h4>" + leaderboard_html(cal.leaderboard))
        parts.append(f"<h4>Judge–{who} κ ({ci_label(confidence)})</h4>"
                     + forest_html(rows, self.ceiling, confidence=confidence, labels=who))
        if self.ceiling is None:
            parts.append(f'<p style="color:#57606a">No {_ceiling_name(who)}: the labeled set '
                         "has one annotator per item.</p>")
        confusions = getattr(cal, "confusions", None) or {}
        if confusions:
            parts.append(f"<h4>Confusion matrices (rows: {who} label, columns: judge label)</h4>"
                         + "".join(confusion_html(m, _key_label(k), labels=who)
                                   for k, m in list(confusions.items())[:24]))
        self.summary = widgets.HTML('<div class="maev-cal">' + "".join(parts) + "</div>")

        dis = getattr(cal, "disagreements", None)
        self._disagreements = _records(dis)
        options = []
        for i, r in enumerate(self._disagreements):
            human, judge = _pick(r, _HUMAN_COLS), _pick(r, _JUDGE_COLS)
            who = _judge_label(r) if "judge" in r else "judge"
            text = (f"{r.get('item_id', '?')} — {self.labels}: {human} · {who}: "
                    f"{judge or 'no label'}")
            options.append((text[:160], i))
        self.disagreements = widgets.Select(options=options, value=None, rows=min(10, max(
            2, len(options))), layout={"width": "100%"})
        self.disagreements.observe(self._on_select, names="value")
        self.detail = widgets.VBox()
        self.viewer: TraceViewer | None = None
        dis_title = widgets.HTML(
            f'<div class="maev-cal"><h4>Disagreements ({len(options)})</h4>'
            + ("<span>choose one to open its conversation</span>" if options else
               f"<span>none: the judges agree with the {self.labels} labels on every labeled "
               "item</span>")
            + "</div>")
        self.prompt_comparison = None
        parts = [self.summary, dis_title, self.disagreements, self.detail]
        if comparison is not None:
            from maev_kit.widgets._prompt_comparison import PromptComparisonView

            self.prompt_comparison = PromptComparisonView(comparison, traces=traces)
            parts.insert(1, self.prompt_comparison)
        super().__init__(parts, **kwargs)
        self.add_class("maev-calibration-dashboard")

    def open_disagreement(self, index: int) -> TraceViewer | None:
        """Open disagreement ``index`` (its item and conversation); returns the TraceViewer."""
        if not 0 <= index < len(self._disagreements):
            raise IndexError(f"`index` must be between 0 and {len(self._disagreements) - 1}")
        r = self._disagreements[index]
        iid = str(r.get("item_id", ""))
        human, judge = _pick(r, _HUMAN_COLS), _pick(r, _JUDGE_COLS)
        rationale = r.get("rationale") or r.get("error") or ""
        if isinstance(rationale, float):  # NaN from a DataFrame
            rationale = ""
        every = r.get("human_label_text")
        every = f" ({every})" if isinstance(every, str) and every else ""
        conv = r.get("conversation_id") or iid.split("/h")[0]
        children: list[widgets.Widget] = []
        color_h = LABEL_COLORS.get(str(human), "#6e7781")
        color_j = LABEL_COLORS.get(str(judge), "#6e7781")
        head = (f'<div class="maev-cal"><b>{_e(iid)}</b> — {_e(self.labels)}: '
                f'<b style="color:{color_h}">{_e(human)}</b>{_e(every)} · {_e(_judge_label(r))}: '
                f'<b style="color:{color_j}">{_e(judge or "no label")}</b>'
                f'{"<br>" + _e(rationale) if rationale else ""}</div>')
        children.append(widgets.HTML(head))
        item = self._items.get(iid)
        if item is not None:
            children.append(widgets.HTML(item_html(item)))
        trace = self._traces.get(conv)
        self.viewer = None
        if trace is not None:
            facts = [item] if item is not None else None
            verdicts = {iid: judge} if judge in ("retained", "lost", "contradicted") else None
            self.viewer = TraceViewer(trace, facts=facts, verdicts=verdicts)
            hi = getattr(item, "handoff_index", None)
            if hi is None and "/h" in iid:
                try:
                    hi = int(iid.split("/h", 1)[1].split("/", 1)[0])
                except ValueError:
                    hi = None
            if hi is not None and 0 <= hi < len(trace.handoffs):
                self.viewer.show_page(self.viewer.page_of_handoff(hi))
            children.append(self.viewer)
        else:
            children.append(widgets.HTML(
                f'<div class="maev-cal" style="color:#57606a">Conversation {_e(conv)} is not '
                "loaded: pass <code>traces=</code> to CalibrationDashboard to open it.</div>"))
        self.detail.children = children
        return self.viewer

    def _on_select(self, change: Mapping[str, Any]) -> None:
        if change.get("new") is not None:
            self.open_disagreement(int(change["new"]))
