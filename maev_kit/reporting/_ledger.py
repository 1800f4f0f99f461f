"""The Coordination section's retention ledger (per fact and per handoff), and the link from
each verdict to the trace entry its evidence is in."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from maev_kit.reporting import _html as h
from maev_kit.reporting._common import _plural, _records
from maev_kit.rendering.internal import entry_anchors, evidence_excerpt_html, num as _num
from maev_kit.traces.internal import conversation_view


#: Headers of the ledger tables.
LEDGER_HEADERS = {"evidence_at": "evidence at (the receiver's entry)", "fact_key": "fact",
                  "first_handoff": "stated at handoff", "first_lost_handoff": "first lost at",
                  "reacquired": "re-acquired", "judge_errors": "judge errors",
                  "final": "final verdict", "path": "path"}


def _int_or_none(value: Any) -> int | None:
    """``value`` as an int when it is a whole number, else None."""
    n = _num(value)
    return int(n) if n is not None and float(n).is_integer() else None


def _ledger_span(row: Mapping[str, Any], view: list[Any]) -> tuple[int, int, int] | None:
    """Where a ledger row's evidence is in the conversation view: ``(entry position, start,
    end)``, or None when the row names none or its entry is not in the view.

    The row gives the entry (``evidence_turn``, ``evidence_part``), the value
    (``evidence_field``) and, in ``evidence_at`` (:meth:`EvidenceSpan.describe`), the text;
    ``evidence_start`` / ``evidence_end``, when the ledger has them, give the offsets.
    """
    at, ti = row.get("evidence_at"), _int_or_none(row.get("evidence_turn"))
    if h.is_missing(at) or not at or ti is None:
        return None
    part = _int_or_none(row.get("evidence_part")) or 0
    field = row.get("evidence_field")
    field = "" if h.is_missing(field) or field is None else str(field)
    at = str(at)
    for i, m in enumerate(view):
        if m.turn_index != ti or m.part != part:
            continue
        where = f" › {field}" if field and field != "text" else ""
        prefix = f'{m.speaker} · turn {m.turn_index} · {m.kind}{where}: "'
        if not (at.startswith(prefix) and at.endswith('"')) or len(at) <= len(prefix) + 1:
            continue
        text = at[len(prefix):-1]
        start, end = _int_or_none(row.get("evidence_start")), _int_or_none(row.get("evidence_end"))
        if start is not None and end is not None and m.content[start:end] == text:
            return i, start, end
        lo, hi = 0, len(m.content)
        for name, a, b in m.fields:
            if name == field:
                lo, hi = a, b
        found = m.content.find(text, lo, hi)
        if found < 0:
            found = m.content.find(text)
        if found >= 0:
            return i, found, found + len(text)
    return None


@dataclass
class _Shown:
    """A conversation's view as the report draws it: its entries and their anchors (set when
    the trace is drawn in the page), to link a verdict to the entry it rests on."""

    view: list[Any]
    anchors: list[str | None]
    embedded: bool = False


def _shown(trace: Any, prefix: str | None) -> _Shown | None:
    """The trace's view, its entries anchored under ``prefix`` (None: the trace is not drawn in
    the page); None when the trace has no view."""
    try:
        view = conversation_view(trace)
    except Exception:  # noqa: BLE001 - an odd trace: no links, the text stays in the row
        return None
    return _Shown(view, entry_anchors(view, prefix), prefix is not None)


def _evidence_cell(row: Mapping[str, Any], shown: _Shown | None) -> Any:
    """The ``evidence_at`` cell: a link to the marked entry when the trace is drawn in the
    page, else the entry's excerpt with the span marked, else the description as text."""
    at = row.get("evidence_at")
    if h.is_missing(at) or not at:
        return None
    found = _ledger_span(row, shown.view) if shown is not None else None
    if found is None:
        return str(at)
    i, start, end = found
    label = row.get("label") if isinstance(row.get("label"), str) else None
    anchor = shown.anchors[i] if shown is not None else None
    if shown is not None and shown.embedded and anchor:
        return h.Markup(f'<a class="ev-link" href="#{h.esc(anchor)}">{h.esc(at)}</a>')
    # (found is None when shown is None)
    return h.Markup(evidence_excerpt_html(cast(_Shown, shown).view[i], start, end, width=40,
                                          label=label))


def _fact_ledger(ev: Any) -> Any:
    """``ev.fact_ledger`` (one row per conversation fact), computed from the ledger for a
    result without it; None when neither can be had."""
    try:
        fl = getattr(ev, "fact_ledger", None)
        if fl is None and getattr(ev, "ledger", None) is not None and len(ev.ledger):
            from maev_kit.evaluation import fact_ledger

            fl = fact_ledger(ev.ledger)
    except Exception:  # noqa: BLE001 - an older or partial ledger: the per-hop table stays
        return None
    return fl


def _ledger_section(ev: Any, traces: Mapping[str, Any], shown: dict[str, _Shown | None]) -> str:
    """The per-fact ledger (each conversation fact across its handoffs: its path, where it was
    first lost, whether it came back) and the per-hop ledger (one verdict per fact per
    handoff), each verdict's evidence linked to the marked entry of the trace drawn above, or
    quoted with its entry when that trace is not drawn."""
    out = ["<h3>Per-fact retention ledger</h3>"]
    recs = _records(getattr(ev, "ledger", None))
    if not recs:
        out.append('<p class="empty">No retention items.</p>')
        return "".join(out)
    fl = _records(_fact_ledger(ev))
    if fl:
        lost = [r for r in fl if (_num(r.get("lost")) or 0) + (_num(r.get("contradicted")) or 0)]
        back = [r for r in lost if not h.is_missing(r.get("reacquired"))
                and bool(r.get("reacquired"))]
        out.append(
            f'<p class="note">{_plural(len(fl), "key fact")}, each followed across every '
            "handoff after the one where it was stated. Path: its verdicts hop by hop in "
            "conversation order (R retained, L lost, C contradicted, ? the judge failed); "
            "first lost at: the handoff where it was first lost or contradicted; re-acquired: "
            f"retained again at a later handoff. {len(lost)} lost or contradicted somewhere, "
            f"{len(back)} of them re-acquired.</p>")
        cols: list[str] = [c for c in ("conversation_id", "fact_key", "fact", "fact_source",
                            "first_handoff", "hops", "path", "retained", "lost", "contradicted",
                            "judge_errors", "first_lost_handoff", "reacquired", "final")
                if c in fl[0]]
        headers = {**LEDGER_HEADERS, "fact_key": "fact id"}
        out.append(h.details("Per fact: each key fact across its handoffs",
                             h.records_table(fl, cols, headers=headers),
                             meta=_plural(len(fl), "fact"), open=True, scroll=True))
    counts: dict[str, int] = {}
    for r in recs:
        lab = r.get("label")
        cause = r.get("error_cause")
        key = str(lab) if not h.is_missing(lab) else "judge error" + (
            "" if h.is_missing(cause) else f" ({cause})")
        counts[key] = counts.get(key, 0) + 1
    out.append('<p class="note">Per handoff: ' + h.esc(" · ".join(f"{k}: {v}"
                                                                   for k, v in counts.items()))
               + f" ({len(recs)} verdicts). Evidence at: the receiving agent's entry the "
               "verdict rests on — a link to it, marked, in the trace drawn above, or quoted "
               "with the span marked.</p>")

    def cell(r: dict[str, Any]) -> Any:
        cid = str(r.get("conversation_id"))
        if cid not in shown:
            t = traces.get(cid)
            shown[cid] = _shown(t, None) if t is not None else None
        return _evidence_cell(r, shown[cid])

    rows = [{**r, "evidence_at": cell(r)} if "evidence_at" in r else r for r in recs]
    rows = [{**r, "fact": f"{r.get('fact')} (the user changed it at turn "
                          f"{int(r['changed_at'])}; the earlier value is superseded)"}
            if not h.is_missing(r.get("changed_at")) else r for r in rows]
    cols = ["item_id", "hop", "from_agent", "to_agent", "fact", "fact_source", "label",
            "rationale", "evidence", "evidence_at", "error", "error_cause"]
    bad = [r for r in rows if r.get("label") != "retained"]
    if bad:
        out.append(h.details("Verdicts other than retained (lost, contradicted or not judged)",
                             h.records_table(bad, [c for c in cols if c in bad[0]],
                                             headers=LEDGER_HEADERS),
                             meta=f"{len(bad)} verdicts", scroll=True))
    out.append(h.details("Full ledger: one verdict per fact per handoff",
                         h.records_table(rows, [c for c in cols if c in rows[0]],
                                         headers=LEDGER_HEADERS),
                         meta=f"{len(recs)} verdicts", scroll=True))
    return "".join(out)
