"""PromptComparisonView: why one judge prompt beats another — the text diff, κ with CIs, the
confusion-matrix difference and the items whose verdict changed, each openable in a
TraceViewer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from maev_kit.rendering import esc as _e
from maev_kit.rendering.internal import (
    PROMPT_CSS,
    changed_rows_html,
    comparison_summary_html,
    prompt_diff_html,
)
from maev_kit.widgets._render import item_html
from maev_kit.widgets._viewer import TraceViewer

__all__ = ["PromptComparisonView"]


def _as_comparison(obj: Any) -> Any:
    """A PromptComparison from itself or from an AlignmentResult."""
    if hasattr(obj, "changed") and hasattr(obj, "confusion_delta"):
        return obj
    if callable(getattr(obj, "comparison", None)):
        cmp = obj.comparison()
        if cmp is None:
            raise ValueError("this alignment has no prompt comparison: the base prompt won on "
                             "dev, or the test split was not scored")
        return cmp
    raise TypeError("`comparison` must be a PromptComparison (maev_kit.calibration."
                    f"compare_prompts) or an AlignmentResult, got {type(obj).__name__}")


class PromptComparisonView(widgets.VBox):
    """Two prompts side by side, and every item whose verdict changed.

    Parameters
    ----------
    comparison : PromptComparison or AlignmentResult (its winner against the base on test).
    traces : list of MultiAgentTrace, optional
        The conversations, to open a changed item in its trace.

    Choosing an item in ``changed`` shows it (the fact, the messages around the handoff, both
    verdicts and their reasons) and its conversation in a :class:`TraceViewer`.
    """

    def __init__(self, comparison: Any, *, traces: Sequence[Any] | None = None, **kwargs: Any):
        cmp = _as_comparison(comparison)
        self.comparison = cmp
        self._traces = {t.conversation_id: t for t in (traces or [])}
        self._rows = cmp.changed.to_dict("records")
        head = (f"<h4>Prompt comparison: a = {_e(cmp.a)}, b = {_e(cmp.b)}</h4>"
                + comparison_summary_html(cmp)
                + "<h4>Prompt text (a left, b right)</h4>"
                + prompt_diff_html(cmp.text_a, cmp.text_b, cmp.a, cmp.b)
                + f"<h4>Verdicts that changed ({len(self._rows)})</h4>"
                + changed_rows_html(cmp, excerpts=False, limit=12))
        self.summary = widgets.HTML(f'<style>{PROMPT_CSS}</style><div class="maev-pc">{head}'
                                    "</div>")
        options = [(f"{r['change']} · {r['item_id']} — {cmp.labels_kind} {r['human']} · a "
                    f"{r['label_a']} "
                    f"→ b {r['label_b']}"[:160], i) for i, r in enumerate(self._rows)]
        self.changed = widgets.Dropdown(options=[("choose an item to open…", None), *options],
                                        value=None, layout={"width": "100%"})
        self.changed.observe(self._on_select, names="value")
        self.detail = widgets.VBox()
        self.viewer: TraceViewer | None = None
        super().__init__([self.summary, self.changed, self.detail], **kwargs)
        self.add_class("maev-prompt-comparison")

    def open_item(self, index: int) -> TraceViewer | None:
        """Show changed item ``index`` and its conversation; returns the TraceViewer (None
        when the conversation is not loaded)."""
        if not 0 <= index < len(self._rows):
            raise IndexError(f"`index` must be between 0 and {len(self._rows) - 1}")
        r = self._rows[index]
        cmp = self.comparison
        iid = str(r["item_id"])
        head = (f'<div class="maev-pc"><b>{_e(iid)}</b> — {_e(r["change"])}: {_e(cmp.labels_kind)} '
                f"<b>{_e(r['human'])}</b> ({_e(r.get('human_label_text') or '')}); "
                f"a <b>{_e(r['label_a'])}</b>: {_e(r.get('rationale_a') or '')}; "
                f"b <b>{_e(r['label_b'])}</b>: {_e(r.get('rationale_b') or '')}</div>")
        children: list[widgets.Widget] = [widgets.HTML(head)]
        item = cmp.items.get(iid)
        if item is not None:
            children.append(widgets.HTML(item_html(item)))
        trace = self._traces.get(r["conversation_id"])
        self.viewer = None
        if trace is not None:
            verdict = r["label_b"] if r["label_b"] in ("retained", "lost", "contradicted") else None
            self.viewer = TraceViewer(trace, facts=[item] if item is not None else None,
                                      verdicts={iid: verdict} if verdict else None)
            hi = r.get("handoff_index")
            if isinstance(hi, int) and 0 <= hi < len(trace.handoffs):
                self.viewer.show_page(self.viewer.page_of_handoff(hi))
            children.append(self.viewer)
        else:
            children.append(widgets.HTML(
                f'<div class="maev-pc" style="color:#57606a">Conversation '
                f"{_e(r['conversation_id'])} is not loaded: pass <code>traces=</code> to open "
                "it.</div>"))
        self.detail.children = children
        return self.viewer

    def _on_select(self, change: Mapping[str, Any]) -> None:
        if change.get("new") is not None:
            self.open_item(int(change["new"]))
