"""Page building: escaped tables, sections and the stylesheet of the report.

Every piece of text that reaches the page — trace text, agent ids, facts, table cells, column
names, titles — goes through :func:`esc` (``html.escape`` with quotes). Trace text is
untrusted: a ``<script>`` or ``<img onerror=...>`` in a message must show as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maev_kit.rendering import esc, fmt, is_missing
from maev_kit.reporting._fonts import FONT_STACK

__all__ = ["CSS", "Markup", "callout", "details", "esc", "figure", "fmt", "kv_table", "page",
           "records_table", "section", "table"]


class Markup(str):
    """A table cell that is already HTML, made by the report from escaped parts (a link to a
    trace entry, an evidence excerpt): :func:`records_table` puts it in as it is. Never wrap
    trace text in it unescaped."""

#: Labels that get a colour in tables (class names come from this set, never from the data).
_LABEL_CLASSES = {"retained": "lab-ret", "lost": "lab-lost", "contradicted": "lab-con",
                  "skip": "lab-skip"}

#: Columns whose values are labels.
_LABEL_COLUMNS = ("label", "human", "judge_label", "human_label", "human_majority")

CSS = """
:root{--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--bg:#ffffff;--soft:#f6f8fa;
 --accent:#0072B2;--warn:#D55E00;--ok:#009E73;--amber:#E69F00;--font:__FONT_STACK__}
svg.plot text{font-family:var(--font)!important}
*{box-sizing:border-box}
html{background:var(--soft)}
body{margin:0;font-family:var(--font);font-size:14px;line-height:1.5;color:var(--fg);
 background:var(--soft)}
.wrap{max-width:1180px;margin:0 auto;padding:0 24px 40px}
header.top{background:#0b2239;color:#fff;padding:22px 0 16px;margin-bottom:18px}
header.top h1{margin:0 0 4px;font-size:24px;font-weight:650;letter-spacing:.2px}
header.top .sub{color:#c9d6e3;font-size:13px}
nav.toc{margin-top:12px;display:flex;gap:6px;flex-wrap:wrap}
nav.toc a{color:#fff;text-decoration:none;font-size:13px;padding:3px 10px;border-radius:12px;
 background:rgba(255,255,255,.12)}
nav.toc a:hover{background:rgba(255,255,255,.25)}
section.card{background:var(--bg);border:1px solid var(--line);border-radius:8px;
 padding:18px 22px 20px;margin:0 0 18px}
section.card>h2{margin:0 0 12px;font-size:19px;font-weight:650;border-bottom:1px solid var(--line);
 padding-bottom:8px}
h3{font-size:15px;margin:18px 0 8px;font-weight:620}
p.note,.note{color:var(--muted);font-size:12.5px;margin:4px 0 8px}
.kpis{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:10px;
 margin:4px 0 14px}
.kpi{border:1px solid var(--line);border-radius:6px;padding:8px 12px;background:var(--soft)}
.kpi .v{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums}
.kpi .k{font-size:12px;color:var(--muted)}
.kpi .ci{font-size:11.5px;color:var(--muted);font-variant-numeric:tabular-nums}
.kpi.main{border-color:var(--accent);background:#eaf4fb}
.kpi.warn{border-color:var(--warn);background:#fff4ec}
.callout.banner{border-left-width:6px;font-size:14px;white-space:normal}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:12px 22px;
 align-items:start}
.gridm{display:flex;flex-wrap:wrap;gap:10px 18px;align-items:flex-start}
figure{margin:6px 0 10px}
figure figcaption{font-size:12px;color:var(--muted);margin-top:2px}
svg.plot{max-width:100%;height:auto;display:block}
.tbl-wrap{overflow-x:auto;max-width:100%;margin:4px 0 10px}
table.t{border-collapse:collapse;font-size:12.5px;font-variant-numeric:tabular-nums;
 min-width:40%}
table.t th,table.t td{border-bottom:1px solid #eaeef2;padding:4px 8px;text-align:left;
 vertical-align:top}
table.t td{white-space:nowrap}
table.t th{background:var(--soft);font-weight:600;border-bottom:1px solid var(--line);
 white-space:nowrap;position:sticky;top:0}
table.t td.num,table.t th.num{text-align:right;white-space:nowrap}
table.t td.txt{max-width:420px;overflow-wrap:anywhere;white-space:pre-wrap}
table.t tr:hover td{background:#f3f8fd}
table.t tr.best td{background:#eaf7f1}
table.kv{width:100%}
table.kv th{width:230px;text-align:left;white-space:nowrap;background:transparent;
 border-bottom:1px solid #eaeef2;position:static}
table.kv td{overflow-wrap:anywhere;white-space:normal}
table.kv table.kv{margin:0;font-size:12px}table.kv table.kv th{width:150px;color:var(--muted)}
table.kv .tbl-wrap{margin:0}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:2px 0 8px}
.mchip{border:1px solid var(--line);border-radius:12px;padding:1px 9px;font-size:12px;
 background:var(--soft);font-variant-numeric:tabular-nums}
.mchip b{font-weight:650}
.lab{display:inline-block;padding:0 7px;border-radius:9px;font-size:11.5px;color:#fff}
.lab-ret{background:#0072B2}.lab-lost{background:#E69F00;color:#1f2328}
.lab-con{background:#D55E00}.lab-skip{background:#8c959f}
.callout{border-left:4px solid var(--accent);background:#eaf4fb;padding:10px 14px;border-radius:4px;
 margin:6px 0 12px;white-space:pre-wrap}
.callout.warn{border-left-color:var(--warn);background:#fff4ec}
details.blk{border:1px solid var(--line);border-radius:6px;margin:8px 0;background:var(--bg)}
details.blk>summary{cursor:pointer;padding:8px 12px;font-weight:600;list-style-position:inside}
details.blk>summary .meta{font-weight:400;color:var(--muted);font-size:12.5px;margin-left:8px}
details.blk[open]>summary{border-bottom:1px solid var(--line);background:var(--soft)}
details.blk>.body{padding:8px 12px 12px}
.scroll{max-height:560px;overflow:auto}
.scroll-y{max-height:420px;overflow:auto;border-bottom:1px solid var(--line)}
.scroll-y .tbl-wrap{overflow:visible;margin:0}
.empty{color:var(--muted);font-style:italic}
pre.json{background:var(--soft);border:1px solid var(--line);border-radius:4px;padding:8px 10px;
 font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;max-height:420px;overflow:auto}
.transcript .ev{margin:3px 0;padding:4px 8px;border-left:4px solid #8c959f;background:var(--soft);
 white-space:pre-wrap;overflow-wrap:anywhere}
.transcript .ev.user{border-left-color:#E69F00;background:#fff8e6}
.transcript .ev.ho{border-left-color:#0072B2;background:#fff;border:1px dashed #57606a}
.transcript .who{font-weight:600;margin-right:6px}
.transcript .ev.call{border-left-color:#0550ae;background:#eef1f4}
.transcript .ev.result{border-left-style:dotted;background:#fff}
.transcript .mono,.excerpt .mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
 font-size:12px}
.transcript .tag{font-size:10.5px;font-weight:600;text-transform:uppercase;margin-right:6px;
 color:#57606a}
.excerpt .src{color:var(--muted);font-size:11.5px;margin-right:4px}
mark.evidence{background:#ffd33d;outline:2px solid #bf8700;border-radius:2px}
mark.evidence.retained{background:#aceebb;outline-color:#1a7f37}
mark.evidence.contradicted{background:#ffcecb;outline-color:#cf222e}
a.ev-link{color:var(--accent)}
.path{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;letter-spacing:1px}
footer{color:var(--muted);font-size:12px;text-align:center;margin:18px 0}
@media print{html,body{background:#fff}header.top{background:#fff;color:#000}
 header.top .sub{color:#333}nav.toc{display:none}section.card{break-inside:avoid-page}}
""".replace("__FONT_STACK__", FONT_STACK)


_is_missing = is_missing


def _is_num(value: Any) -> bool:
    if isinstance(value, bool) or _is_missing(value):
        return False
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError, AttributeError):
            return False
    return isinstance(value, (int, float))


def _cell(col: str, value: Any, spec: str | None) -> str:
    if isinstance(value, Markup):
        return f'<td class="txt">{value}</td>'
    text = fmt(value, spec)
    if col in _LABEL_COLUMNS and isinstance(value, str) and value in _LABEL_CLASSES:
        return f'<td><span class="lab {_LABEL_CLASSES[value]}">{esc(text)}</span></td>'
    if _is_num(value):
        return f'<td class="num">{esc(text)}</td>'
    cls = ' class="txt"' if isinstance(value, str) and len(value) > 40 else ""
    return f"<td{cls}>{esc(text)}</td>"


NUM = ' class="num"'


def records_table(
    records: Sequence[Mapping[str, Any]],
    columns: Sequence[str] | None = None,
    *,
    formats: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    max_rows: int | None = None,
    row_class: Sequence[str | None] | None = None,
    empty: str = "None.",
) -> str:
    """An escaped HTML table from a list of dicts.

    >>> out = records_table([{"a": "<b>", "x": 0.5}])
    >>> "<td>&lt;b&gt;</td>" in out, '<td class="num">0.500</td>' in out
    (True, True)
    """
    if not records:
        return f'<p class="empty">{esc(empty)}</p>'
    if columns is None:
        columns = list(dict.fromkeys(k for r in records for k in r))
    formats = formats or {}
    headers = headers or {}
    shown = records if max_rows is None else records[:max_rows]
    numeric = {c: any(_is_num(r.get(c)) for r in shown) and
               all(_is_num(r.get(c)) or _is_missing(r.get(c)) for r in shown) for c in columns}
    head = "".join(f'<th{NUM if numeric[c] else ""}>{esc(headers.get(c, c))}</th>'
                   for c in columns)
    body = []
    for i, r in enumerate(shown):
        cls = row_class[i] if row_class is not None and i < len(row_class) else None
        tr = f'<tr class="{esc(cls)}">' if cls else "<tr>"
        body.append(tr + "".join(_cell(c, r.get(c), formats.get(c)) for c in columns) + "</tr>")
    more = ""
    if max_rows is not None and len(records) > max_rows:
        more = (f'<p class="note">Showing the first {max_rows} of {len(records)} rows.</p>')
    return (f'<div class="tbl-wrap"><table class="t"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>{more}')


#: Column names that hold counts (shown as integers: "3 handoffs", never "3.000").
_COUNT_COLUMNS = frozenset({
    "n", "N", "items", "handoffs", "facts", "retained", "lost", "contradicted", "skip",
    "requests", "cache_hits", "tokens", "labels_needed", "more_labels", "labeled_now",
    "labels_needed_without_judge", "count", "conversations", "annotators", "labels"})


def _is_count(column: str) -> bool:
    return column in _COUNT_COLUMNS or column.startswith("n_")


def _css(content: str) -> str:
    """The page's CSS: its font stack, and the glyphs of the page's non-Latin text embedded
    as the stack's last fallback (see :mod:`maev_kit.reporting._fonts`)."""
    import html as _html
    import re as _re

    from maev_kit.reporting._fonts import fallback_font_css

    text = _html.unescape(_re.sub(r"<[^>]+>", " ", content))
    return fallback_font_css(text) + CSS


def table(df: Any, columns: Sequence[str] | None = None, *, index: bool = False,
          **kwargs: Any) -> str:
    """An escaped HTML table from a DataFrame (see :func:`records_table` for options).

    >>> import pandas as pd
    >>> "&lt;script&gt;" in table(pd.DataFrame({"m": ["<script>"]}))
    True
    >>> ">3<" in table(pd.DataFrame({"handoffs": [3.0, float("nan")]}))   # a count, not 3.000
    True
    """
    if df is None or len(df) == 0:
        return records_table([], empty=kwargs.pop("empty", "None."))
    if index:
        name = df.index.name or ""
        df = df.reset_index(names=name if name else "index")
    cols = [str(c) for c in df.columns]
    records = [dict(zip(cols, row)) for row in df.itertuples(index=False, name=None)]
    counts = [c for c in cols if _is_count(c)]
    for rec in records:  # a count is an integer, even in a column a NaN made float
        for c in counts:
            v = rec[c]
            if isinstance(v, float) and v.is_integer():
                rec[c] = int(v)
    if columns is not None:
        columns = [c for c in columns if c in cols]
    return records_table(records, columns, **kwargs)


def kv_table(pairs: Iterable[tuple[str, Any]], *, _level: int = 0) -> str:
    """A two-column key/value table; nested dicts become nested tables, lists of plain values
    are joined, anything deeper is shown as indented JSON.

    >>> kv_table([("a", {"b": 0.123456, "c": ["x", "<y>"]})]).count("<table")
    2
    """
    rows = []
    for k, v in pairs:
        if isinstance(v, Mapping) and v and _level < 3:
            body = kv_table(v.items(), _level=_level + 1)
        elif isinstance(v, (list, tuple)) and all(
                not isinstance(x, (Mapping, list, tuple)) for x in v):
            body = esc(fmt(list(v))) if v else "—"
        elif isinstance(v, (Mapping, list, tuple)) and v:
            body = (f'<pre class="json">'
                    f'{esc(json.dumps(v, indent=2, default=str, ensure_ascii=False))}</pre>')
        elif isinstance(v, Mapping):
            body = "—"
        else:
            body = esc(fmt(v))
        rows.append(f"<tr><th>{esc(k)}</th><td>{body}</td></tr>")
    return f'<div class="tbl-wrap"><table class="t kv"><tbody>{"".join(rows)}</tbody></table></div>'


def section(anchor: str, title: str, body: str) -> str:
    return f'<section class="card" id="{esc(anchor)}"><h2>{esc(title)}</h2>{body}</section>'


def details(summary: str, body: str, *, meta: str = "", open: bool = False,
            scroll: bool = False) -> str:
    """A collapsible block; ``summary`` and ``meta`` are plain text (escaped here)."""
    m = f'<span class="meta">{esc(meta)}</span>' if meta else ""
    cls = "body scroll" if scroll else "body"
    return (f'<details class="blk"{" open" if open else ""}><summary>{esc(summary)}{m}</summary>'
            f'<div class="{cls}">{body}</div></details>')


def callout(text: str, *, warn: bool = False) -> str:
    return f'<div class="callout{" warn" if warn else ""}">{esc(text)}</div>'


def figure(svg: str, caption: str = "") -> str:
    cap = f"<figcaption>{esc(caption)}</figcaption>" if caption else ""
    return f"<figure>{svg}{cap}</figure>"


def page(title: str, subtitle: str, nav: Sequence[tuple[str, str]], body: str,
         footer: str) -> str:
    """The whole document: inline CSS, no scripts, no external resources."""
    links = "".join(f'<a href="#{esc(a)}">{esc(t)}</a>' for a, t in nav)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{_css(title + body + subtitle + footer)}"
            "</style></head><body>"
            f'<header class="top"><div class="wrap" style="padding-bottom:0">'
            f"<h1>{esc(title)}</h1><div class=\"sub\">{esc(subtitle)}</div>"
            f'<nav class="toc">{links}</nav></div></header>'
            f'<main class="wrap">{body}</main>'
            f'<footer class="wrap">{esc(footer)}</footer></body></html>\n')
