"""The Labeler for a criterion's items: the question, the guidelines, the conversation (or the
window around the handoff or turn asked about) and one button per label, with number keys."""

from __future__ import annotations

import html
import os
import random
from typing import Any, Sequence

import ipywidgets as widgets

from maev_kit.criteria import Criterion, CriterionItem
from maev_kit.criteria.internal import criterion_of, focus_text, window
from maev_kit.labels import LabelRecord, LabelStore
from maev_kit.widgets._controls import KeyHandler, label_buttons, move_buttons
from maev_kit.widgets._render import status_html

__all__ = ["CriterionLabeler", "criterion_keymap", "item_view_html"]

_KIND = {"user": "user", "text": "says", "tool_call": "calls", "tool_result": "tool result",
         "handoff": "hands off"}


def criterion_keymap(criterion: Criterion) -> dict[str, str]:
    """Key → action: ``1``…``9`` the labels in order, ``s`` skip, arrows move."""
    keys = {str(k): lab for k, lab in enumerate(criterion.labels[:9], 1)}
    return {**keys, "s": "skip", "ArrowLeft": "previous", "ArrowRight": "next"}


def item_view_html(item: CriterionItem) -> str:
    """The entries a person judges ``item`` on (escaped), the unit asked about highlighted."""
    rows = []
    for e in window(item):
        m = e.message
        style = ("background:#fff8c5;border-left:4px solid #bf8700;" if e.focus
                 else "border-left:4px solid transparent;")
        who = "user" if m.is_user else m.speaker
        tool = f" {html.escape(m.tool)}" if m.tool else ""
        rows.append(f'<div style="{style}padding:2px 8px;margin:1px 0">'
                    f'<b>{html.escape(who)}</b> <span style="color:#6e7781">'
                    f"{_KIND.get(m.kind, html.escape(m.kind))}{tool}</span>: "
                    f'<span style="white-space:pre-wrap">{html.escape(m.content)}</span></div>')
    if not rows:
        rows.append('<div style="color:#6e7781">(nothing recorded)</div>')
    return ('<div style="max-height:420px;overflow:auto;font-size:13px;border:1px solid #d0d7de;'
            'border-radius:4px;padding:4px">' + "".join(rows) + "</div>")


class CriterionLabeler(widgets.VBox):
    """Label a criterion's items: the question and guidelines on top, the conversation (whole
    for conversation and agent scope, the window around it for a handoff or a turn, the unit
    highlighted), one button per label (keys ``1``…), skip (``s``), ← / →.

    Each click appends one line to the label store (``criterion`` set to the criterion's
    name), on disk before the widget says it is saved; the latest line per item and annotator
    wins, so relabeling is a new line. ``Labeler(items, ...)`` gives this widget for criterion
    items.

    >>> import tempfile, os
    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> c = Criterion("polite", scope="conversation", labels=("yes", "no"), question="Polite?")
    >>> items = c.items([MultiAgentTrace(f"c{i}", turns=[AgentTurn("a", "r", "hi")])
    ...                  for i in range(2)])
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
    >>> lab = CriterionLabeler(items, path, annotator="ana")
    >>> lab.buttons["no"].click()
    >>> lab.press("1")
    >>> [(r.item_id, r.label, r.criterion) for r in LabelStore(path).labels()]
    [('polite:c0', 'no', 'polite'), ('polite:c1', 'yes', 'polite')]
    """

    def __init__(self, items: Sequence[CriterionItem], store: LabelStore | str | os.PathLike[str],
                 *, annotator: str, order: str = "given", seed: int = 0, **kwargs: Any) -> None:
        from maev_kit.labels import check_annotator

        self.items = list(items)
        self.criterion = criterion_of(self.items)
        self.annotator = check_annotator(annotator, "`annotator`")
        self.store = store if isinstance(store, LabelStore) else LabelStore(store)
        if order == "random":
            random.Random(seed).shuffle(self.items)
        elif order != "given":
            raise ValueError(f"`order` must be 'given' or 'random', got {order!r}")
        self.keymap = criterion_keymap(self.criterion)
        self._labels = self._stored()
        self.position = next((k for k, it in enumerate(self.items)
                              if it.item_id not in self._labels), len(self.items))
        keys = {v: k for k, v in self.keymap.items()}
        styles = {lab: "" for lab in (*self.criterion.labels, "skip")}
        self.buttons = label_buttons(
            styles, lambda lab: f"label this item {lab}" + (f" (key {keys[lab]})"
                                                           if lab in keys else ""), self._label)
        self.previous_button, self.next_button = move_buttons(self._move, keys=True)
        self.question_view = widgets.HTML(self._question_html())
        self.item_view = widgets.HTML()
        self.progress_text = widgets.HTML()
        self.status = widgets.HTML()
        self.note = widgets.Text(placeholder="optional note (saved with the next label)",
                                 continuous_update=False, layout={"width": "100%"})
        hint = "keys: " + " · ".join(f"{k} {a}" for k, a in self.keymap.items()
                                     if not k.startswith("Arrow")) + " · ← → move"
        self.key_handler = KeyHandler(shortcuts=list(self.keymap), hint=hint)
        self.key_handler.on_msg(self._on_key_msg)
        super().__init__([self.progress_text, self.question_view, self.item_view,
                          widgets.HBox([*self.buttons.values(), self.previous_button,
                                        self.next_button]),
                          self.note, self.status, self.key_handler], **kwargs)
        self.add_class("maev-labeler")
        self._render()

    @property
    def current(self) -> CriterionItem | None:
        """The item shown (None when past the last one)."""
        return self.items[self.position] if self.position < len(self.items) else None

    def label_of(self, item_id: str) -> str | None:
        """This annotator's latest label of ``item_id`` (``skip`` included), or None."""
        return self._labels.get(item_id)

    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed (``1``…, ``s``, ``ArrowLeft``, ``ArrowRight``)."""
        action = self.keymap.get(key)
        if action is None:
            raise ValueError(f"`key` must be one of {', '.join(self.keymap)}; got {key!r}")
        if action in ("previous", "next"):
            self._move(action)
        else:
            self._label(action)

    def _stored(self) -> dict[str, str]:
        ids = {it.item_id for it in self.items}
        out: dict[str, str] = {}
        for r in self.store.labels(self.annotator):
            if r.item_id in ids and r.criterion == self.criterion.name:
                out[r.item_id] = r.label
        return out

    def _on_key_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "key" and \
                content.get("key") in self.keymap:
            self.press(content["key"])

    def _label(self, value: str) -> None:
        cur = self.current
        if cur is None:
            self._set_status("every item is labeled; use ← to go back", error=True)
            return
        if value != "skip" and value not in self.criterion.labels:
            raise ValueError(f"{value!r} is not one of {list(self.criterion.labels)}")
        try:
            rec: LabelRecord = self.store.add(cur.item_id, value, annotator=self.annotator,
                                              note=self.note.value.strip(),
                                              criterion=self.criterion.name)
        except Exception as e:  # noqa: BLE001 - shown in the widget; the label was not saved
            self._set_status(f"NOT saved: {e}", error=True)
            raise
        self._labels[cur.item_id] = rec.label
        self.note.value = ""
        self.position += 1
        self._set_status(f"saved ✓ {rec.item_id} → {rec.label}")
        self._render()

    def _move(self, direction: str) -> None:
        step = -1 if direction == "previous" else 1
        self.position = min(max(self.position + step, 0), len(self.items))
        self._set_status("")
        self._render()

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = status_html(text, error=error)

    def _question_html(self) -> str:
        c = self.criterion
        guide = (f'<div style="color:#57606a;white-space:pre-wrap">{html.escape(c.guidelines)}'
                 "</div>" if c.guidelines.strip() else "")
        return (f'<div style="font-size:14px;padding:4px 0"><b>{html.escape(c.question)}</b>'
                f"{guide}</div>")

    def _render(self) -> None:
        done = sum(1 for it in self.items if it.item_id in self._labels)
        self.progress_text.value = (
            f'<span style="font-size:12.5px">{done} of {len(self.items)} labeled · criterion '
            f"<b>{html.escape(self.criterion.name)}</b> · annotator "
            f"<b>{html.escape(self.annotator)}</b></span>")
        cur = self.current
        if cur is None:
            self.item_view.value = (f'<div style="padding:12px;font-size:15px">All '
                                    f"{len(self.items)} items are labeled — thank you. Press ← "
                                    "to go back.</div>")
        else:
            mine = self._labels.get(cur.item_id)
            head = (f'<div style="font-size:12.5px;color:#57606a">item {self.position + 1} of '
                    f"{len(self.items)} · {html.escape(cur.item_id)} · about "
                    f"{html.escape(focus_text(cur).split(' (')[0])}"
                    + (f" · your label: <b>{html.escape(mine)}</b>" if mine else "") + "</div>")
            self.item_view.value = head + item_view_html(cur)
        for b in self.buttons.values():
            b.disabled = cur is None
        self.previous_button.disabled = self.position == 0
        self.next_button.disabled = cur is None
