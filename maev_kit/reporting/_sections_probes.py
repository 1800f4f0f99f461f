"""The report's Judge robustness section: each judge's flip rate under the robustness probes
(:func:`maev_kit.calibration.probe_judge`), and every flip linked to its item — the original
window and the perturbed copy side by side. Everything from traces is escaped."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from maev_kit.reporting import _html as h

__all__ = ["has_probes", "robustness_html"]

#: The most flips listed per judge and probe (the rest are counted).
MAX_FLIPS = 50


def has_probes(cal: Any) -> bool:
    """True when ``cal`` (a CalibrationResult) carries probe reports."""
    return bool(getattr(cal, "probes", None))


def _anchor(key: str, probe: str, item_id: str) -> str:
    return "probe-" + re.sub(r"[^A-Za-z0-9_-]+", "-", f"{key}-{probe}-{item_id}")


def _cell(r: Any) -> str:
    if r is None or not r.n:
        return "n/a"
    lo, hi = r.ci
    return f"{r.flip_rate:.3f} [{lo:.3f}, {hi:.3f}] ({r.n_flips}/{r.n})"


def _table(reports: Mapping[str, Any]) -> str:
    names = list(dict.fromkeys(p for rep in reports.values() for p in rep.results))
    head = "".join(f"<th>{h.esc(p)}</th>" for p in names)
    rows = []
    for key, rep in reports.items():
        cells = "".join(f"<td>{h.esc(_cell(rep.results.get(p)))}</td>" for p in names)
        rows.append(f"<tr><td>{h.esc(key)}</td>{cells}</tr>")
    return (f'<table class="tbl"><thead><tr><th>judge</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


def _window_text(item: Any) -> str:
    lines = [f"{m.speaker} · turn {m.turn_index} · {m.kind}: {m.content}" for m in item.window]
    return "\n".join(lines) or "(nothing)"


def _flip_block(key: str, probe: str, flip: Any, original: Any, copy: Any) -> str:
    """One flip: its anchor, the labels, the fact, the original window and the copy."""
    fact = h.esc(getattr(original or copy, "fact", ""))
    before = h.esc(_window_text(original)) if original is not None else "(not available)"
    after = h.esc(_window_text(copy)) if copy is not None else "(not available)"
    return (f'<div class="flip" id="{h.esc(_anchor(key, probe, flip.item_id))}">'
            f"<p><b>{h.esc(flip.item_id)}</b> — {h.esc(flip.before)} → {h.esc(flip.after)}; "
            f"fact: {fact}</p><p>original</p><pre>{before}</pre>"
            f"<p>{h.esc(probe)} copy</p><pre>{after}</pre></div>")


def _flips(key: str, rep: Any, originals: Mapping[str, Any]) -> str:
    out = []
    for probe, r in rep.results.items():
        if not r.flips:
            continue
        copies = {it.item_id: it for it in r.items}
        shown = r.flips[:MAX_FLIPS]
        links = "".join(
            f'<li><a href="#{h.esc(_anchor(key, probe, f.item_id))}">{h.esc(f.item_id)}</a> '
            f"{h.esc(f.before)} → {h.esc(f.after)}</li>" for f in shown)
        blocks = "".join(_flip_block(key, probe, f, originals.get(f.item_id),
                                     copies.get(f.item_id)) for f in shown)
        more = (f"<p>and {len(r.flips) - MAX_FLIPS} more flips not listed</p>"
                if len(r.flips) > MAX_FLIPS else "")
        out.append(h.details(f"{key} · {probe}: {len(r.flips)} flips",
                             f"<ul>{links}</ul>{more}{blocks}", meta=r.description,
                             scroll=True))
    return "".join(out)


def robustness_html(cal: Any) -> str:
    """The section's body: what the probes are, the flip-rate table (a column per probe), and
    per judge and probe the flips, each linked to its original and perturbed item."""
    from maev_kit.calibration.internal import PROBE_DESCRIPTIONS

    reports = dict(cal.probes)
    intro = ("How often each judge's verdict changed when the judged text changed in a way "
             "that must not change it (flip rate, lower is better; Wilson interval; items "
             "whose judge call failed are left out, never counted as flips).")
    what = "".join(f"<li><b>{h.esc(p)}</b>: {h.esc(d)}</li>"
                   for p, d in PROBE_DESCRIPTIONS.items())
    parts = [f"<p>{h.esc(intro)}</p><ul>{what}</ul>", _table(reports)]
    for key, rep in reports.items():
        originals = {it.item_id: it for it in getattr(rep.baseline, "items", ())}
        parts.append(_flips(key, rep, originals))
    worst = max((r.flip_rate for rep in reports.values() for r in rep.results.values()
                 if r.n and not math.isnan(r.flip_rate)), default=None)
    if worst is not None and worst > 0.1:
        parts.insert(1, h.callout(f"A judge flips on more than 10 % of items under one probe "
                                  f"(up to {worst:.0%}): its verdicts can be moved by text "
                                  "the agents under evaluation write.", warn=True))
    return "".join(parts)
