"""HTML for a prompt comparison (:class:`maev_kit.calibration.PromptComparison`): the two prompt
texts side by side with their differences marked, κ with CIs, the confusion-matrix difference
and the items whose verdict changed. Shared by the dashboard and the report; plain strings, no
scripts; every piece of text escaped (a prompt file or a trace may hold anything)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from maev_kit.rendering import esc as _e
from maev_kit.rendering import fmt as _fmt
from maev_kit.rendering._trace import LABEL_COLORS, item_html

__all__ = ["PROMPT_CSS", "comparison_summary_html", "changed_rows_html", "prompt_diff_html"]

PROMPT_CSS = """
.maev-pc{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;color:#1f2328}
.maev-pc table.diff{border-collapse:collapse;width:100%;table-layout:fixed;font-size:12px}
.maev-pc table.diff th{background:#f6f8fa;text-align:left;padding:3px 6px}
.maev-pc table.diff td{vertical-align:top;padding:1px 6px;white-space:pre-wrap;
 overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;
 border-bottom:1px solid #eaeef2}
.maev-pc table.diff td.n{width:34px;color:#8c959f;text-align:right;white-space:nowrap}
.maev-pc td.del{background:#ffebe9}.maev-pc td.add{background:#e6ffec}
.maev-pc del{background:#ffc1bd;text-decoration:line-through}
.maev-pc ins{background:#abf2bc;text-decoration:none}
.maev-pc table.k,.maev-pc table.cmd,.maev-pc table.ch{border-collapse:collapse;margin:4px 0 8px}
.maev-pc table.k td,.maev-pc table.k th,.maev-pc table.cmd td,.maev-pc table.cmd th,
.maev-pc table.ch td,.maev-pc table.ch th{padding:2px 8px;border-bottom:1px solid #d0d7de;
 text-align:left}
.maev-pc .fixed{color:#1a7f37;font-weight:600}.maev-pc .broke{color:#cf222e;font-weight:600}
.maev-pc .lab{font-weight:600}
"""

_WORDS = re.compile(r"\s+|\w+|[^\w\s]")


def _inline(a: str, b: str) -> tuple[str, str]:
    """Two changed lines with the removed words in ``<del>`` and the added ones in ``<ins>``."""
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    left, right = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        x, y = _e("".join(wa[i1:i2])), _e("".join(wb[j1:j2]))
        if op == "equal":
            left.append(x)
            right.append(y)
        else:
            if x:
                left.append(f"<del>{x}</del>")
            if y:
                right.append(f"<ins>{y}</ins>")
    return "".join(left), "".join(right)


def prompt_diff_html(text_a: str, text_b: str, name_a: str = "a", name_b: str = "b") -> str:
    """Two prompt texts side by side: changed lines shaded, changed words marked.

    >>> out = prompt_diff_html("Judge each fact.\\nBe brief.", "Judge each fact carefully.\\n"
    ...                        "Be brief.", "v1", "<mine>")
    >>> "<ins> carefully</ins>" in out, "&lt;mine&gt;" in out, out.count('class="del"')
    (True, True, 1)
    """
    if not text_a and not text_b:
        return "<p>No prompt text to compare (offline judges).</p>"
    la, lb = text_a.split("\n"), text_b.split("\n")
    rows = []

    def row(na: Any, a: str, ca: str, nb: Any, b: str, cb: str) -> None:
        rows.append(f'<tr><td class="n">{na}</td><td class="{ca}">{a}</td>'
                    f'<td class="n">{nb}</td><td class="{cb}">{b}</td></tr>')

    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if op == "equal":
            for k in range(i2 - i1):
                row(i1 + k + 1, _e(la[i1 + k]), "", j1 + k + 1, _e(lb[j1 + k]), "")
            continue
        n = max(i2 - i1, j2 - j1)
        for k in range(n):
            a = la[i1 + k] if i1 + k < i2 else None
            b = lb[j1 + k] if j1 + k < j2 else None
            if a is not None and b is not None:
                xa, xb = _inline(a, b)
                row(i1 + k + 1, xa, "del", j1 + k + 1, xb, "add")
            elif a is not None:
                row(i1 + k + 1, f"<del>{_e(a)}</del>", "del", "", "", "")
            else:
                row("", "", "", j1 + k + 1, f"<ins>{_e(b)}</ins>", "add")
    same = " (identical text)" if text_a == text_b else ""
    return (f'<table class="diff"><colgroup><col style="width:34px"><col><col style="width:34px">'
            f'<col></colgroup><tr><th></th><th>{_e(name_a)}{same}</th><th></th>'
            f'<th>{_e(name_b)}</th></tr>{"".join(rows)}</table>')


def _label(x: Any) -> str:
    if x is None or (isinstance(x, float) and x != x):
        return '<span class="lab" style="color:#6e7781">no label</span>'
    return f'<span class="lab" style="color:{LABEL_COLORS.get(str(x), "#6e7781")}">{_e(x)}</span>'


def comparison_summary_html(cmp: Any) -> str:
    """κ of both judges with CIs, the paired Δκ with its CI and McNemar p, and the
    confusion-matrix difference (b − a)."""
    ci = f"{cmp.confidence * 100:g}% CI"
    krows = "".join(
        f"<tr><td>{_e(role)}</td><td>{_e(key)}</td><td>{_e(_fmt(r['kappa']))}</td>"
        f"<td>{_e(_fmt(r['kappa_low']))} to {_e(_fmt(r['kappa_high']))}</td>"
        f"<td>{_e(_fmt(r['n_items']))}</td></tr>"
        for role, key in (("a", cmp.a), ("b", cmp.b)) for r in [cmp.kappas.loc[key]])
    sign = "" if cmp.delta != cmp.delta else ("+" if cmp.delta >= 0 else "")
    delta = (f"<p>Δκ (b − a) = <b>{sign}{_e(_fmt(cmp.delta))}</b> ({_e(ci)} "
             f"{_e(_fmt(cmp.delta_low))} to {_e(_fmt(cmp.delta_high))}, paired bootstrap p "
             f"{_e(_fmt(cmp.p_value))}); McNemar exact p {_e(_fmt(cmp.mcnemar_p))} on "
             f"{_e(cmp.n_items)} items{' of the ' + _e(cmp.split) + ' split' if cmp.split else ''}"
             f". {_e(len(cmp.changed))} verdicts changed: <span class=fixed>{cmp.n_fixed} "
             f"fixed</span>, <span class=broke>{cmp.n_broke} broke</span>.</p>")
    d = cmp.confusion_delta
    cells = []
    for h in d.index:
        tds = []
        for j in d.columns:
            v = int(d.loc[h, j])
            good = (v > 0) == (h == j)
            color = "" if v == 0 else ("#1a7f37" if good else "#cf222e")
            style = f' style="color:{color};font-weight:600"' if color else ""
            tds.append(f"<td{style}>{'+' if v > 0 else ''}{v}</td>")
        cells.append(f"<tr><th>{_e(h)}</th>{''.join(tds)}</tr>")
    head = "".join(f"<th>{_e(c)}</th>" for c in d.columns)
    conf = (f'<table class="cmd"><caption style="text-align:left">confusion b − a (rows: '
            f"{_e(cmp.labels_kind)} majority, columns: judge; green = more items right)</caption><tr><th></th>{head}"
            f"</tr>{''.join(cells)}</table>")
    return (f'<table class="k"><tr><th></th><th>judge</th><th>κ</th><th>{_e(ci)}</th>'
            f"<th>items</th></tr>{krows}</table>{delta}{conf}")


def changed_rows_html(cmp: Any, *, excerpts: bool = True, limit: int | None = None) -> str:
    """The items whose verdict changed: human label, a's and b's labels; with ``excerpts`` each
    row holds the item (fact, messages before and after the handoff) in a ``<details>``."""
    recs: Sequence[dict[str, Any]] = cmp.changed.to_dict("records")
    if not recs:
        return "<p>No verdict changed between the two prompts.</p>"
    shown = recs if limit is None else recs[:limit]
    out = []
    for r in shown:
        cls = r["change"] if r["change"] in ("fixed", "broke") else ""
        head = (f'<span class="{cls}">{_e(r["change"])}</span> · <code>{_e(r["item_id"])}</code>'
                f" — {_e(cmp.labels_kind)} {_label(r['human'])} · a {_label(r['label_a'])} → b "
                f"{_label(r['label_b'])}")
        if not excerpts:
            out.append(f"<div>{head}</div>")
            continue
        item = cmp.items.get(r["item_id"])
        body = item_html(item, anchors=None) if item is not None else ""  # many items: no ids
        why = (f"<p><b>a</b>: {_e(r.get('rationale_a') or '')}<br><b>b</b>: "
               f"{_e(r.get('rationale_b') or '')}</p>")
        out.append(f"<details><summary>{head}</summary>{why}{body}</details>")
    more = (f"<p>… and {len(recs) - len(shown)} more (see <code>comparison.changed</code>).</p>"
            if len(shown) < len(recs) else "")
    return "".join(out) + more
