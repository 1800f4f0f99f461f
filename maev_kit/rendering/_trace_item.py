"""The retention-item view: one fact at one handoff, drawn for labeling.

This module owns :func:`item_html`: the fact, the entries before the handoff (collapsed), the
handoff with the context it passed, and the entries after it with the receiving agent's marked
as evidence and the others as context (or, when the receiver is not in the trace, what was
handed over), plus the verdict when the caller shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.rendering import esc as _e
from maev_kit.rendering._trace_entries import (
    _agents_arrow, _context_rows, _context_table, _spans, _spans_by_entry, _verdict_spans,
    _warnings_html, entry_anchors, entry_html, fact_terms,
)
from maev_kit.rendering._trace_style import LABEL_COLORS, TRACE_CSS, _chip, agent_colors


# --------------------------------------------------------------------------- items
def _entry_key(m: Any) -> tuple[Any, ...]:
    return (m.turn_index, getattr(m, "part", 0), getattr(m, "kind", "text"), m.speaker,
            m.content)


@dataclass(frozen=True)
class _ItemView:
    """One retention item laid out for drawing: its entries in order (before, the handoff's own
    entry when it closes "before", after) with their colours, marks, warnings and anchors, and
    the keys of its evidence entries."""

    entries: list[Any]
    n_before: int
    hand: Any  # the handoff's own entry, drawn as the marker; None when "before" lacks it
    from_agent: str
    to_agent: str
    colors: dict[str, str]
    terms: list[tuple[str, str]]
    marks: dict[int, list[tuple[int, int, str, str]]]
    warns: dict[int, list[str]]
    ids: list[str | None]
    evidence: set[tuple[Any, ...]]

    @property
    def first_after(self) -> int:
        """The position of the first entry after the handoff."""
        return self.n_before + (self.hand is not None)

    def draw(self, i: int, side: str | None) -> str:
        """Entry ``i`` as :func:`entry_html` draws it, on ``side`` (see there)."""
        return entry_html(self.entries[i], self.colors, terms=self.terms,
                          marks=self.marks.get(i, []), warnings=self.warns.get(i, []),
                          anchor=self.ids[i], side=side)


def _split_closing_handoff(before: list[Any], from_agent: str,
                           to_agent: str) -> tuple[list[Any], Any]:
    """``before`` without the handoff's own entry when that entry closes it, and the entry
    (None when ``before`` does not end with it)."""
    if before and getattr(before[-1], "kind", "") == "handoff" and \
            before[-1].speaker == from_agent and (before[-1].tool or "") == to_agent:
        return before[:-1], before[-1]
    return before, None


def _evidence_keys(item: Any, after: Sequence[Any], to_agent: str) -> set[tuple[Any, ...]]:
    """The :func:`_entry_key` of each evidence entry: ``item.evidence``, or for an item-like
    object without it, the receiving agent's entries after the handoff."""
    try:
        return {_entry_key(m) for m in item.evidence}
    except AttributeError:  # an item-like object without `.evidence`
        return {_entry_key(m) for m in after if not m.is_user and
                (not to_agent or m.speaker == to_agent)}


def _item_view(item: Any, verdict: Any, span: Any, anchors: str | None) -> _ItemView:
    """Lay ``item`` out for drawing (see :func:`item_html` for the arguments)."""
    before, after = list(item.before), list(item.after)
    fa, ta = getattr(item, "from_agent", ""), getattr(item, "to_agent", "")
    speakers = [m.speaker for m in (*before, *after) if not m.is_user]
    colors = agent_colors([fa, ta, *speakers])
    terms = [(t, "") for t in fact_terms(item.fact)]
    # the handoff's own entry closes "before": it is drawn as the marker between the two
    before, hand = _split_closing_handoff(before, fa, ta)
    entries = [*before, *([hand] if hand is not None else []), *after]
    span_list = _spans(span) + _verdict_spans([verdict] if verdict is not None else None)
    marks, warns = _spans_by_entry(entries, span_list)
    evidence = _evidence_keys(item, after, ta)
    ids = entry_anchors(entries, anchors)
    return _ItemView(entries, len(before), hand, fa, ta, colors, terms, marks, warns, ids,
                     evidence)


def _item_handoff_html(view: _ItemView, handoff_index: Any) -> str:
    """The handoff marker between before and after: from → to and, when the handoff's own
    entry is there, the context it passed."""
    arrow = (f'<span class="arrow">⇢ handoff {_e(handoff_index)}: '
             f"{_agents_arrow(view.from_agent, view.to_agent, view.colors)}</span>")
    hand = view.hand
    if hand is None:
        return f'<div class="ho">{arrow}</div>'
    nb = view.n_before
    a = view.ids[nb]
    ida = f' id="{_e(a)}"' if a else ""
    ctx = _context_table(_context_rows(hand, view.terms, view.marks.get(nb, [])))
    return (f'<div class="ho"{ida} data-kind="handoff" '
            f'data-turn="{int(hand.turn_index)}" data-part="{int(hand.part)}">'
            f'{arrow} <span class="badge">context passed:</span>{ctx}'
            f"{_warnings_html(view.warns.get(nb, []))}</div>")


def _item_after_html(view: _ItemView) -> str:
    """The entries after the handoff, each marked evidence or context, with the legend saying
    which is which (a note when there are none)."""
    after_html = "".join(
        view.draw(i, "evidence" if _entry_key(view.entries[i]) in view.evidence else "context")
        for i in range(view.first_after, len(view.entries))) or \
        '<div class="more">no messages after the handoff</div>'
    legend = ""
    if len(view.entries) > view.first_after:
        who = _e(view.to_agent) if view.to_agent else "the receiving agent"
        legend = (f'<div class="legend">after the handoff: {who}\'s entries are the evidence; '
                  "the user's and other agents' are context</div>")
    return legend + after_html


#: What the Labeler and the report say above an item whose receiver is not in the trace.
SILENT_RECEIVER_NOTE = ("the receiver is not in this trace; judge what was handed over: "
                        "retained = it carries the fact, lost = it leaves it out, "
                        "contradicted = it hands over a different value")


def _item_handed_over_html(view: _ItemView) -> str:
    """For a receiver that is not in the trace: the note, then what was handed over (the
    handing-over message and tool call, drawn as evidence; the handoff's context is drawn with
    the marker above) and, dimmed, whatever followed."""
    handed = "".join(view.draw(i, "evidence") for i in range(view.n_before)
                     if _entry_key(view.entries[i]) in view.evidence)
    rest = "".join(view.draw(i, "context") for i in range(view.first_after, len(view.entries)))
    return (f'<div class="legend silent">{_e(SILENT_RECEIVER_NOTE)}</div>{handed}'
            + (f'<div class="legend">after the handoff (context)</div>{rest}' if rest else ""))


def _verdict_html(verdict: Any) -> str:
    """The judge's verdict on an item: its label (or error) in a chip titled with the judge,
    and its rationale; "" without a verdict."""
    if verdict is None:
        return ""
    vl = getattr(verdict, "label", None)
    err = getattr(verdict, "error", None)
    text = f"judge: {vl}" if vl else f"judge error: {err or 'no label'}"
    judge = getattr(verdict, "judge", "")
    return (f'<div class="ev" style="border-left-color:{LABEL_COLORS.get(vl or "", "#6e7781")}">'
            f'{_chip(text, LABEL_COLORS.get(vl or "", "#6e7781"), judge)}'
            f'{" " + _e(verdict.rationale) if getattr(verdict, "rationale", "") else ""}'
            "</div>")


def item_html(item: Any, *, label: str | None = None, verdict: Any = None,
              position: tuple[int, int] | None = None, span: Any = None,
              anchors: str | None = "") -> str:
    """One retention item for labeling: the fact, the entries before (collapsed), the handoff
    with the context it passed, and the entries after it.

    Entries are drawn by kind (text, tool call, tool result, handoff), as the judge reads
    them. After the handoff, the receiving agent's entries (``item.evidence``) are marked
    as evidence and the user's and other agents' as context (dimmed, tagged "context").
    ``span`` (an EvidenceSpan, or a Verdict with one) marks the exact characters of the
    verdict's evidence; ``verdict`` (a Verdict or ShownVerdict) is shown when given — the
    caller decides when (the Labeler only passes it after the annotator has labeled the
    item), and its ``.span``, if any, is marked too. ``anchors`` prefixes each entry's
    ``id`` (see :func:`trace_html`).

    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> it = RetentionItem("c/h0/f1", "c", 0, "f1", "Account is ACCT-1",
    ...     (Message("user", "ACCT-1 </div>", 0, True),), (Message("billing", "Hi", 2),),
    ...     "triage", "billing")
    >>> out = item_html(it)
    >>> "&lt;/div&gt;" in out, out.count("<details") == 1
    (True, True)
    """
    view = _item_view(item, verdict, span, anchors)
    pos = f"item {position[0]} of {position[1]} · " if position else ""
    derived = " (derived from context)" if getattr(item, "derived", False) else ""
    before_html = "".join(view.draw(i, None) for i in range(view.n_before))
    lab = ""
    if label:
        lab = " " + _chip(f"your label: {label}", LABEL_COLORS.get(label, "#6e7781"))
    return (f'<div class="maev-tv"><style>{TRACE_CSS}</style>'
            f'<div class="hdr"><span>{pos}<span class="cid">{_e(item.item_id)}</span>{derived}'
            f"</span>{lab}</div>"
            f'<div class="fact">{_e(item.fact)}</div>'
            f"<details><summary>before the handoff ({view.n_before} messages)</summary>"
            f"{before_html}</details>{_item_handoff_html(view, item.handoff_index)}"
            f"{_item_handed_over_html(view) if getattr(item, 'receiver_silent', False) else _item_after_html(view)}"
            f"{_verdict_html(verdict)}</div>")
