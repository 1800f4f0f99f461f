"""Adjudicator: settle the items annotators disagree on; SessionProgress: who has labeled what.

Views over :class:`~maev_kit.labels.AdjudicationSession` and
:class:`~maev_kit.labels.SessionPlan`; every rule lives there.
"""

from __future__ import annotations

import html
import os
from typing import Any, Sequence

import ipywidgets as widgets

from maev_kit.labels import (
    AdjudicationSession,
    LabelStore,
    SessionPlan,
    disagreements,
    settled_labels,
)
from maev_kit.widgets._controls import label_buttons, move_buttons
from maev_kit.widgets._render import LABEL_COLORS, item_html, status_html

__all__ = ["Adjudicator", "SessionProgress"]

_SETTLE_STYLES = {"retained": "success", "lost": "warning", "contradicted": "danger"}


def labels_table_html(session: AdjudicationSession) -> str:
    """Each annotator's label and note on the current item, and the settled label if any."""
    d = session.disagreement()
    if d is None:
        return ""
    rows = []
    for ann, rec in d.records.items():
        color = LABEL_COLORS.get(rec.label, "#6e7781")
        rows.append(f'<tr><td style="padding:2px 8px"><b>{html.escape(ann)}</b></td>'
                    f'<td style="padding:2px 8px;color:{color}"><b>{html.escape(rec.label)}'
                    f'</b></td><td style="padding:2px 8px">{html.escape(rec.note)}</td></tr>')
    settled = session.settled()
    done = ""
    if settled is not None:
        color = LABEL_COLORS.get(settled.label, "#6e7781")
        done = (f'<div style="margin-top:3px">settled by {html.escape(settled.annotator)}: '
                f'<b style="color:{color}">{html.escape(settled.label)}</b>'
                + (f" — {html.escape(settled.note)}" if settled.note else "") + "</div>")
    return ('<div style="font-size:12.5px"><table><tr><th style="text-align:left">annotator'
            '</th><th style="text-align:left">label</th><th style="text-align:left">note'
            f"</th></tr>{''.join(rows)}</table>{done}</div>")


class Adjudicator(widgets.VBox):
    """Settle disagreements: the item, every annotator's label and note, a button per label.

    A settled label is one appended line (``source="adjudicated"``, ``annotator`` the
    adjudicator) in the same store, on disk before the widget shows it as saved.

    >>> import tempfile, os
    >>> from maev_kit.retention import RetentionItem
    >>> items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "fact", (), ())]
    >>> store = LabelStore(os.path.join(tempfile.mkdtemp(), "labels.jsonl"))
    >>> _ = store.add("c1/h0/f1", "lost", annotator="ana", note="asked again")
    >>> _ = store.add("c1/h0/f1", "retained", annotator="ben")
    >>> adj = Adjudicator(items, store, adjudicator="cleo")
    >>> adj.buttons["lost"].click()
    >>> settled_labels(store)
    {'c1/h0/f1': 'lost'}
    """

    def __init__(self, items: Sequence[Any], store: LabelStore | str | os.PathLike[str], *,
                 adjudicator: str, plan: SessionPlan | None = None, **kwargs: Any):
        self.session = AdjudicationSession(items, store, adjudicator, plan=plan)
        self.buttons = label_buttons(_SETTLE_STYLES, lambda lab: f"settle this item as {lab}",
                                     self._settle)
        self.previous_button, self.next_button = move_buttons(self._move)
        self.refresh_button = widgets.Button(description="refresh", icon="refresh",
                                             tooltip="re-read the labels (new disagreements)",
                                             layout={"width": "100px"})
        self.refresh_button.on_click(lambda _: self._refresh())
        self.note = widgets.Text(placeholder="why (saved with the settled label)",
                                 continuous_update=False, layout={"width": "100%"})
        self.progress_text = widgets.HTML()
        self.labels_view = widgets.HTML()
        self.item_view = widgets.HTML()
        self.status = widgets.HTML()
        super().__init__([
            widgets.HBox([self.progress_text, self.refresh_button]),
            self.labels_view,
            self.item_view,
            widgets.HBox([*self.buttons.values(), self.previous_button, self.next_button]),
            self.note,
            self.status,
        ], **kwargs)
        self.add_class("maev-adjudicator")
        self._render()

    def _settle(self, label: str) -> None:
        if self.session.done:
            self._set_status("every item is settled; use ← to go back", error=True)
            return
        try:
            rec = self.session.settle(label, note=self.note.value.strip())
        except Exception as e:  # noqa: BLE001 - shown in the widget; nothing was saved
            self._set_status(f"NOT saved: {e}", error=True)
            raise
        self.note.value = ""
        self._set_status(f"saved ✓ {rec.item_id} → {rec.label}")
        self._render()

    def _move(self, direction: str) -> None:
        self.session.previous() if direction == "previous" else self.session.next()
        self._set_status("")
        self._render()

    def _refresh(self) -> None:
        self.session.refresh()
        self._set_status("")
        self._render()

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = status_html(text, error=error)

    def _render(self) -> None:
        s = self.session
        p = s.progress()
        self.progress_text.value = (f'<span style="font-size:12.5px">{p["settled"]} of '
                                    f'{p["total"]} disagreements settled · adjudicator '
                                    f"<b>{html.escape(s.adjudicator)}</b></span>")
        cur = s.current
        if cur is None:
            self.labels_view.value = ""
            self.item_view.value = (
                '<div style="padding:12px;font-size:15px">'
                + ("Nothing to settle: the annotators agree on every item."
                   if not p["total"] else f"All {p['settled']} of {p['total']} disagreements "
                   "are settled. Press ← to go back.") + "</div>")
        else:
            rec = s.settled()
            self.labels_view.value = labels_table_html(s)
            self.item_view.value = item_html(cur, label=rec.label if rec else None,
                                             position=(s.position + 1, len(s)))
        for b in self.buttons.values():
            b.disabled = cur is None
        self.previous_button.disabled = s.position == 0
        self.next_button.disabled = s.done


def progress_html(plan: SessionPlan, store: LabelStore) -> str:
    """A table per annotator: assigned, labeled, left, a bar; then the disagreements."""
    rows = []
    for ann, p in plan.progress(store).items():
        share = p["labeled"] / p["assigned"] if p["assigned"] else 1.0
        bar = (f'<div style="width:120px;background:#eaeef2;height:8px"><div style="width:'
               f'{round(120 * share)}px;background:#1a7f37;height:8px"></div></div>')
        rows.append(f'<tr><td style="padding:2px 8px"><b>{html.escape(ann)}</b></td>'
                    f'<td style="padding:2px 8px;text-align:right">{p["labeled"]} / '
                    f'{p["assigned"]}</td><td style="padding:2px 8px">{bar}</td>'
                    f'<td style="padding:2px 8px">{p["left"]} left</td></tr>')
    found = disagreements(store, plan)
    settled = settled_labels(store)
    n_settled = sum(1 for d in found if d.item_id in settled)
    return ('<div style="font-size:12.5px"><table><tr><th style="text-align:left">annotator'
            '</th><th>labeled</th><th></th><th></th></tr>' + "".join(rows) + "</table>"
            f"<div>{len(plan.overlap_items())} items labeled twice · {len(found)} "
            f"disagreement{'s' if len(found) != 1 else ''} · {n_settled} settled</div></div>")


class SessionProgress(widgets.VBox):
    """Progress per annotator of a :class:`~maev_kit.labels.SessionPlan` (press refresh).

    >>> import tempfile, os
    >>> from maev_kit.labels import plan_session
    >>> plan = plan_session(["a", "b", "c"], ["ana", "ben"], overlap=0)
    >>> w = SessionProgress(plan, os.path.join(tempfile.mkdtemp(), "labels.jsonl"))
    >>> "0 disagreements" in w.view.value
    True
    """

    def __init__(self, plan: SessionPlan, store: LabelStore | str | os.PathLike[str],
                 **kwargs: Any):
        if not isinstance(plan, SessionPlan):
            raise TypeError(f"`plan` must be a SessionPlan, got {type(plan).__name__}")
        self.plan = plan
        self.store = store if isinstance(store, LabelStore) else LabelStore(store)
        self.view = widgets.HTML()
        self.refresh_button = widgets.Button(description="refresh", icon="refresh",
                                             layout={"width": "100px"})
        self.refresh_button.on_click(lambda _: self.refresh())
        super().__init__([self.view, self.refresh_button], **kwargs)
        self.add_class("maev-session-progress")
        self.refresh()

    def refresh(self) -> None:
        """Re-read the store and redraw."""
        self.view.value = progress_html(self.plan, self.store)
