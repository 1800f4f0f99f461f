"""The look shared by the trace timeline and the retention-item view.

This module owns the constants and CSS both drawings use: the page size of a long trace, the
agent palette (one colour-blind-friendly colour per agent lane) and the label colours, the CSS
of the ``maev-tv`` view and of entries under any scope (:func:`entry_css`), and the small
pieces every row is built from (a coloured chip, a plural).
"""

from __future__ import annotations

from collections.abc import Sequence

from maev_kit.rendering import esc as _e


#: Events per page of a long trace.
DEFAULT_PAGE_SIZE = 200

#: One colour per agent lane (colour-blind-friendly order, Okabe–Ito then Tableau).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7F7F7F",
           "#BCBD22", "#8C564B", "#17BECF")

LABEL_COLORS = {"retained": "#1a7f37", "lost": "#b35900", "contradicted": "#cf222e",
                "skip": "#6e7781", "re-asked": "#8250df", "stated": "#0969da"}

def entry_css(scope: str) -> str:
    """The CSS of view entries that every drawing shares (a tool call's row, monospaced
    arguments, the kind tags), under the class ``scope`` (``"maev-tv"``, ``"maev-fr"``)."""
    return (f".{scope} .ev.call{{background:#eef1f4}}\n"
            f".{scope} .mono{{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,"
            "Consolas,monospace;\n font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;"
            "margin-top:1px}\n"
            f".{scope} .tag{{display:inline-block;font-size:10.5px;font-weight:600;"
            "text-transform:uppercase;\n letter-spacing:.3px;padding:0 5px;border-radius:3px;"
            "margin-right:6px;border:1px solid #d0d7de;\n color:#57606a;background:#fff}\n"
            f".{scope} .tag.call{{color:#0550ae;border-color:#0550ae}}\n")


TRACE_CSS = """
.maev-tv{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.4;
 color:#1f2328;max-width:980px}
.maev-tv .hdr{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:4px 0 8px}
.maev-tv .cid{font-weight:600}
.maev-tv .chip{display:inline-block;padding:0 7px;border-radius:9px;font-size:11.5px;
 color:#fff;white-space:nowrap}
.maev-tv .ev{margin:3px 0;padding:4px 8px;border-left:4px solid #ccc;border-radius:3px;
 background:#f6f8fa;white-space:pre-wrap;overflow-wrap:anywhere}
.maev-tv .ev .who{font-weight:600;font-size:11.5px;margin-right:6px}
.maev-tv .ev .ti{color:#6e7781;font-size:11px;float:right}
.maev-tv .ev.user{background:#fff8c5;border-left-color:#9a6700;margin-left:0!important}
.maev-tv .ho{margin:6px 0;padding:4px 8px;border:1px dashed #57606a;border-radius:4px;
 background:#fff;white-space:normal}
.maev-tv .ho.loop{border:2px solid #cf222e;background:#fff0f0}
.maev-tv .ho .arrow{font-weight:600}
.maev-tv .ho table{border-collapse:collapse;margin-top:3px;font-size:12px}
.maev-tv .ho td{padding:0 8px 0 0;vertical-align:top}
.maev-tv .missing{color:#cf222e;font-weight:600}
.maev-tv details.tool{margin-top:3px;font-size:12px}
.maev-tv details.tool pre,.maev-tv pre{margin:2px 0;white-space:pre-wrap}
.maev-tv mark{background:#ddf4ff;padding:0 1px;border-radius:2px}
.maev-tv mark.retained{background:#dafbe1}.maev-tv mark.contradicted{background:#ffebe9}
.maev-tv .badge{font-size:11px;margin-left:6px}
.maev-tv .fact{font-size:15px;padding:6px 10px;background:#ddf4ff;border-radius:4px;margin:4px 0}
.maev-tv .more{color:#57606a;font-style:italic;margin:6px 0}
.maev-tv .facts{margin:2px 0 6px;padding-left:18px}
.maev-tv .ev.result{background:#fff;border-left-style:dotted;border-left-color:#8c959f;
 color:#24292f}
.maev-tv .tag.result{color:#57606a;border-style:dotted}
.maev-tv .tag.ctx{color:#6e7781}
.maev-tv .src{font-size:11.5px;color:#57606a;margin-right:6px}
.maev-tv .ctx-entry{opacity:.6}
.maev-tv .evid-entry{box-shadow:inset 0 0 0 1px #d0d7de}
.maev-tv mark.evidence{background:#ffd33d;outline:2px solid #bf8700;border-radius:2px}
.maev-tv mark.evidence.retained{background:#aceebb;outline-color:#1a7f37}
.maev-tv mark.evidence.contradicted{background:#ffcecb;outline-color:#cf222e}
.maev-tv .warn{color:#9a6700;font-size:11.5px}
.maev-tv .legend{color:#57606a;font-size:11.5px;margin:4px 0}
.maev-tv :target{box-shadow:0 0 0 3px #0969da}
""" + entry_css("maev-tv")


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """One colour per agent, in the order given (cycling through :data:`PALETTE`)."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(dict.fromkeys(agents))}


def _plural(n: int, word: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _chip(text: str, color: str, title: str = "") -> str:
    t = f' title="{_e(title)}"' if title else ""
    return f'<span class="chip" style="background:{color}"{t}>{_e(text)}</span>'
