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
from maev_kit.labels.internal import UNDO_SOURCE
from maev_kit.widgets._controls import KeyHandler, label_buttons, move_buttons, press_key
from maev_kit.widgets._render import status_html

__all__ = ["CriterionLabeler", "criterion_keymap", "item_view_html"]

_KIND = {"user": "user", "text": "says", "tool_call": "calls", "tool_result": "tool result",
         "handoff": "hands off"}


def criterion_keymap(asked: Criterion | CriterionItem) -> dict[str, str]:
    """Key → action: ``1``…``9`` the labels in order (a criterion's, or an item's own answers:
    for failure attribution, the agents of its conversation), ``s`` skip, arrows move, ``u``
    undo."""
    keys = {str(k): lab for k, lab in enumerate(asked.labels[:9], 1)}
    return {**keys, "s": "skip", "ArrowLeft": "previous", "ArrowRight": "next", "u": "undo"}


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
    highlighted), one button per answer of the item shown (keys ``1``…), skip (``s``), ← / →,
    undo (``u``). For failure attribution the buttons are the agents of the conversation shown
    (its :attr:`~maev_kit.criteria.CriterionItem.labels`), and change with it.

    Each click appends one line to the label store (``criterion`` set to the criterion's
    name), on disk before the widget says it is saved; the latest line per item and annotator
    wins, so relabeling is a new line. Undo takes back this widget's last label as the
    retention Labeler does: the store is append-only, so it appends the item's earlier label
    again (its note, source and sample mark too) or — when the item had none — a ``skip``
    with ``source="undo"``, which counts as no label; other labels, and other annotators',
    are untouched. ``Labeler(items, ...)`` gives this widget for criterion items.

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
    >>> lab.press("u")  # back to c1, its label taken back
    >>> lab.current.item_id, lab.label_of("polite:c1")
    ('polite:c1', None)
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
        #: this annotator's latest record per item of the criterion (undo lines removed)
        self._labels: dict[str, LabelRecord] = self._stored()
        #: (item id, its record before) for each label this widget wrote, newest last
        self._undo: list[tuple[str, LabelRecord | None]] = []
        self.position = next((k for k, it in enumerate(self.items)
                              if it.item_id not in self._labels), len(self.items))
        self.keymap = criterion_keymap(self.current or self.items[0])
        self.buttons: dict[str, widgets.Button] = {}
        self.button_row = widgets.HBox()
        self.previous_button, self.next_button = move_buttons(self._move, keys=True)
        self.undo_button = widgets.Button(description="undo", tooltip="undo the last label (u)",
                                          icon="undo", layout={"width": "90px"})
        self.undo_button.on_click(lambda _: self._undo_last())
        self.question_view = widgets.HTML(self._question_html())
        self.item_view = widgets.HTML()
        self.progress_text = widgets.HTML()
        self.status = widgets.HTML()
        self.note = widgets.Text(placeholder="optional note (saved with the next label)",
                                 continuous_update=False, layout={"width": "100%"})
        self.key_handler = KeyHandler(shortcuts=self._all_keys(), hint=self._hint())
        self.key_handler.on_msg(self._on_key_msg)
        self._set_buttons(self.current or self.items[0])
        super().__init__([self.progress_text, self.question_view, self.item_view,
                          self.button_row, self.note, self.status, self.key_handler], **kwargs)
        self.add_class("maev-labeler")
        self._render()

    @property
    def current(self) -> CriterionItem | None:
        """The item shown (None when past the last one)."""
        return self.items[self.position] if self.position < len(self.items) else None

    def label_of(self, item_id: str) -> str | None:
        """This annotator's latest label of ``item_id`` (``skip`` included), or None."""
        rec = self._labels.get(item_id)
        return None if rec is None else rec.label

    @property
    def can_undo(self) -> bool:
        """Whether this widget has a label it can take back."""
        return bool(self._undo)

    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed (``1``…, ``s``, ``u``, ``ArrowLeft``, ``ArrowRight``)."""
        press_key(self.keymap, key, move=self._move, undo=self._undo_last, label=self._label)

    def _set_buttons(self, item: CriterionItem) -> None:
        """One button per answer of ``item`` and skip, with their keys (kept when the answers
        are those shown already)."""
        if self.buttons and tuple(self.buttons)[:-1] == item.labels:
            return
        self.keymap = criterion_keymap(item)
        keys = {v: k for k, v in self.keymap.items()}
        self.buttons = label_buttons(
            {lab: "" for lab in (*item.labels, "skip")},
            lambda lab: f"label this item {lab}" + (f" (key {keys[lab]})" if lab in keys
                                                    else ""), self._label)
        self.button_row.children = [*self.buttons.values(), self.previous_button,
                                    self.next_button, self.undo_button]

    def _all_keys(self) -> list[str]:
        """Every key some item answers to (the front end listens for these; a key the item
        shown has no answer for does nothing)."""
        keys = {k: None for it in self.items for k in criterion_keymap(it)}
        return sorted(keys, key=lambda k: (not k.isdigit(), k.isdigit() and int(k), k))

    def _hint(self) -> str:
        if self.criterion.names_agents:
            return "keys: 1… the agents in the order of the buttons · s skip · ← → move · u undo"
        return "keys: " + " · ".join(f"{k} {a}" for k, a in self.keymap.items()
                                     if not k.startswith("Arrow") and k != "u") \
            + " · ← → move · u undo"

    def _stored(self) -> dict[str, LabelRecord]:
        ids = {it.item_id for it in self.items}
        out: dict[str, LabelRecord] = {}
        for r in self.store.labels(self.annotator):
            if r.item_id in ids and r.criterion == self.criterion.name:
                if r.source == UNDO_SOURCE and r.label == "skip":
                    out.pop(r.item_id, None)  # an undo: no label
                else:
                    out[r.item_id] = r
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
        if value != "skip":
            value = cur.answer(value)  # an InputError (a ValueError) naming the item
        try:
            rec: LabelRecord = self.store.add(cur.item_id, value, annotator=self.annotator,
                                              note=self.note.value.strip(),
                                              criterion=self.criterion.name)
        except Exception as e:  # noqa: BLE001 - shown in the widget; the label was not saved
            self._set_status(f"NOT saved: {e}", error=True)
            raise
        self._undo.append((cur.item_id, self._labels.get(cur.item_id)))
        self._labels[cur.item_id] = rec
        self.note.value = ""
        self.position += 1
        self._set_status(f"saved ✓ {rec.item_id} → {rec.label}")
        self._render()

    def _undo_last(self) -> None:
        """Take back this widget's last label (a new line: see the class) and show its item."""
        if not self._undo:
            self._set_status("nothing to undo")
            self._render()
            return
        iid, before = self._undo[-1]
        name = self.criterion.name
        try:
            if before is None:
                self.store.add(iid, "skip", annotator=self.annotator, source=UNDO_SOURCE,
                               criterion=name)
            else:
                restored = self.store.add(iid, before.label, annotator=self.annotator,
                                          note=before.note, source=before.source,
                                          in_sample=before.in_sample, criterion=name)
        except Exception as e:  # noqa: BLE001 - shown in the widget; nothing was undone
            self._set_status(f"NOT undone: {e}", error=True)
            raise
        self._undo.pop()
        if before is None:
            self._labels.pop(iid, None)
        else:
            self._labels[iid] = restored
        self.position = next(k for k, it in enumerate(self.items) if it.item_id == iid)
        self._set_status(f"undone: {iid}")
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
            self._set_buttons(cur)
            mine = self.label_of(cur.item_id)
            head = (f'<div style="font-size:12.5px;color:#57606a">item {self.position + 1} of '
                    f"{len(self.items)} · {html.escape(cur.item_id)} · about "
                    f"{html.escape(focus_text(cur).split(' (')[0])}"
                    + (f" · your label: <b>{html.escape(mine)}</b>" if mine else "") + "</div>")
            self.item_view.value = head + item_view_html(cur)
        for b in self.buttons.values():
            b.disabled = cur is None
        self.previous_button.disabled = self.position == 0
        self.next_button.disabled = cur is None
        self.undo_button.disabled = not self._undo
