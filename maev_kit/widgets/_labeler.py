"""Labeler: label retention items in a notebook, with the mouse or the keyboard."""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from typing import Any, Literal, Sequence

import ipywidgets as widgets

from maev_kit.rendering.internal import (
    TRACE_CSS as _TV_CSS,
    evidence_excerpt_html,
    find_entry,
    span_of,
)
from maev_kit.labels import LabelingSession, LabelStore
from maev_kit.widgets._controls import KeyHandler as _KeyHandler
from maev_kit.widgets._controls import label_buttons, move_buttons, press_key
from maev_kit.widgets._render import LABEL_COLORS, item_html, status_html

__all__ = ["KEYMAP", "Labeler"]

#: Keyboard shortcut → action.
KEYMAP: dict[str, str] = {"1": "retained", "2": "lost", "3": "contradicted", "s": "skip",
                          "ArrowLeft": "previous", "ArrowRight": "next", "u": "undo"}

_HINT = "keys: 1 retained · 2 lost · 3 contradicted · s skip · ← → move · u undo"


def _verdict_spans(verdicts: Any) -> dict[str, Any]:
    """item id -> the evidence span of each verdict that has one."""
    verdicts = getattr(verdicts, "verdicts", verdicts)
    if verdicts is None or isinstance(verdicts, (str, bytes)):
        return {}
    pairs = verdicts.items() if isinstance(verdicts, Mapping) else (
        (getattr(v, "item_id", None), v) for v in verdicts)
    out = {}
    for iid, v in pairs:
        sp = span_of(v) if getattr(v, "span", None) is not None else None
        if iid is not None and sp is not None:
            out[iid] = sp
    return out


class Labeler(widgets.VBox):
    """Label retention items one at a time: buttons, keyboard shortcuts, note, progress.

    A view over a :class:`~maev_kit.labels.LabelingSession` (all logic lives there). Each label
    is on disk (one fsync-ed line of ``labels.jsonl``) before the widget shows it as saved.

    Parameters
    ----------
    items : sequence of RetentionItem, a labeled set or its folder
        A labeled set (or folder) gives its items and its random sample
        (``label_sample.json``, from ``maev sample``).
    store : LabelStore or path to ``labels.jsonl``
    annotator : str
    order : "sample", "random", "given" or a list of item ids (e.g. from
        ``next_items_to_label``). By default the items of the random sample come first, in
        its order ("item 7 of the 40-item random sample"), when there is one (in the labeled
        set, or next to ``labels.jsonl``); else a random order. See
        :class:`~maev_kit.labels.LabelingSession`.
    seed : int
    verdicts : list of Verdict, JudgeRun or dict item_id -> label, optional
        Hidden until the annotator has labeled the item (``blind=True``), then shown with
        the "reveal judge verdict" button. A verdict's evidence span (``Verdict.span``) is
        then marked in the item (the exact characters of the receiving agent's entry: its
        text, a tool argument, a tool result) and quoted under the verdict.
    blind : bool

    Keys (while the labeler has the focus — click it once): ``1`` retained, ``2`` lost,
    ``3`` contradicted, ``s`` skip, ``←`` / ``→`` move, ``u`` undo.

    A criterion's items (:meth:`maev_kit.criteria.Criterion.items`) give a
    :class:`~maev_kit.widgets.CriterionLabeler` instead: the criterion's question, guidelines
    and one button per label (keys ``1``, ``2``, …).

    Examples
    --------
    >>> import tempfile, os
    >>> from maev_kit.retention import RetentionItem
    >>> items = [RetentionItem(f"c1/h0/f{i}", "c1", 0, f"f{i}", f"fact {i}", (), ())
    ...          for i in range(3)]
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
    >>> lab = Labeler(items, path, annotator="ana", order="given")
    >>> lab.buttons["contradicted"].click()
    >>> lab.press("1")
    >>> [(r.item_id, r.label) for r in LabelStore(path).labels()]
    [('c1/h0/f0', 'contradicted'), ('c1/h0/f1', 'retained')]
    >>> lab.session.progress()["done"]
    2
    """

    def __new__(cls, items: Any = None, *args: Any, **kwargs: Any) -> Any:
        """A criterion's items (``criterion.items(traces)``) get the criterion's labeler
        (:class:`~maev_kit.widgets.CriterionLabeler`: its question, guidelines and labels)."""
        from maev_kit.criteria import CriterionItem

        if cls is Labeler and isinstance(items, Sequence) and items and all(
                isinstance(it, CriterionItem) for it in items):
            from maev_kit.widgets._criterion_labeler import CriterionLabeler

            return CriterionLabeler(items, *args, **kwargs)
        return super().__new__(cls, items, *args, **kwargs)

    def __init__(self, items: Any, store: LabelStore | str | os.PathLike[str], *,
                 annotator: str,
                 order: Literal["sample", "random", "given"] | Sequence[str] | None = None,
                 seed: int = 0, verdicts: Any = None, blind: bool = True, **kwargs: Any):
        if isinstance(items, (str, os.PathLike)):  # a labeled-set folder or bundled name
            from maev_kit.datasets import load_labeled_set

            items = load_labeled_set(items)
        self.session = LabelingSession(items, store, annotator=annotator, order=order,
                                       seed=seed, verdicts=verdicts, blind=blind)
        #: item id -> the judge's evidence span (shown only with the revealed verdict).
        self._spans = _verdict_spans(verdicts)
        styles = {"retained": "success", "lost": "warning", "contradicted": "danger",
                  "skip": ""}
        keys = {v: k for k, v in KEYMAP.items()}
        self.buttons = label_buttons(
            styles, lambda lab: f"label this item {lab} (key {keys[lab]})", self._label)
        self.previous_button, self.next_button = move_buttons(self._move, keys=True)
        self.undo_button = widgets.Button(description="undo", tooltip="undo the last label (u)",
                                          icon="undo", layout={"width": "90px"})
        self.undo_button.on_click(lambda _: self._undo())
        # Synced once, when the field loses focus (a click on a label button, Escape), not per
        # keystroke: ipywidgets buffers a model's state updates while one is in flight, so on a
        # busy kernel a button's click could arrive before the last keystrokes of the note.
        self.note = widgets.Text(placeholder="optional note (saved with the next label)",
                                 continuous_update=False, layout={"width": "100%"})
        self.progress = widgets.IntProgress(min=0, max=len(self.session), value=0,
                                            layout={"width": "240px"})
        self.progress_text = widgets.HTML()
        self.item_view = widgets.HTML()
        self.status = widgets.HTML()
        self.verdict_view = widgets.HTML()
        self.reveal_button = widgets.Button(description="reveal judge verdict",
                                            tooltip="shown only after you label the item",
                                            layout={"width": "180px"})
        self.reveal_button.on_click(lambda _: self._reveal())
        self.key_handler = _KeyHandler(shortcuts=list(KEYMAP), hint=_HINT)
        self.key_handler.on_msg(self._on_key_msg)
        self._last_labeled: str | None = None
        self._revealed: str | None = None
        has_verdicts = bool(self.session._verdicts)
        if not has_verdicts:
            self.reveal_button.layout.display = "none"
        super().__init__([
            widgets.HBox([self.progress, self.progress_text]),
            self.item_view,
            widgets.HBox([*self.buttons.values(), self.previous_button, self.next_button,
                          self.undo_button]),
            self.note,
            widgets.HBox([self.status, self.reveal_button]),
            self.verdict_view,
            self.key_handler,
        ], **kwargs)
        self.add_class("maev-labeler")
        self._render()

    # ------------------------------------------------------------ actions
    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed (``1 2 3 s u ArrowLeft ArrowRight``)."""
        press_key(KEYMAP, key, move=self._move, undo=self._undo, label=self._label)

    def _on_key_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("type") == "key" and \
                content.get("key") in KEYMAP:
            self.press(content["key"])

    def _label(self, value: str) -> None:
        if self.session.done:
            self._set_status("every item is labeled; use ← to go back", error=True)
            return
        try:
            rec = self.session.label(value, note=self.note.value.strip())
        except Exception as e:  # noqa: BLE001 - shown in the widget; the label was not saved
            self._set_status(f"NOT saved: {e}", error=True)
            raise
        self.note.value = ""
        self._last_labeled = rec.item_id
        self._revealed = None
        self._set_status(f"saved ✓ {rec.item_id} → {rec.label}")
        self._render()

    def _move(self, direction: str) -> None:
        self.session.previous() if direction == "previous" else self.session.next()
        self._revealed = None
        self._set_status("")
        self._render()

    def _undo(self) -> None:
        item = self.session.undo()
        if item is None:
            self._set_status("nothing to undo")
        else:
            self._set_status(f"undone: {item.item_id}")
        self._revealed = None
        self._render()

    def _reveal_target(self) -> str | None:
        cur = self.session.current
        if cur is not None and self.session.label_of(cur.item_id) is not None:
            return cur.item_id
        if self._last_labeled and self.session.label_of(self._last_labeled) is not None:
            return self._last_labeled
        return None

    def _reveal(self) -> None:
        target = self._reveal_target()
        if target is not None and self.session.verdict(target) is not None:
            self._revealed = target
        self._render()

    # ------------------------------------------------------------ view
    def _evidence_html(self, item_id: str, label: str | None) -> str:
        """The revealed verdict's evidence: the entry it names, the span marked (or a warning
        when the span does not fit the item's entry: the two must not disagree silently)."""
        sp = self._spans.get(item_id)
        item = self.session._by_id.get(item_id)
        if sp is None or item is None:
            return ""
        m = find_entry([*item.before, *item.after], sp.turn_index, sp.part, sp.kind)
        if m is None or not 0 <= sp.start < sp.end <= len(m.content) or \
                (sp.text is not None and m.content[sp.start:sp.end] != sp.text):
            return (f'<div style="color:#9a6700">⚠ the judge\'s evidence '
                    f"{html.escape(repr(sp.text or ''))} (turn {sp.turn_index}, part {sp.part}) "
                    "is not in this item's entries</div>")
        return (f'<div class="maev-tv" style="margin-top:3px"><style>{_TV_CSS}</style>evidence: '
                f"{evidence_excerpt_html(m, sp.start, sp.end, label=label)}</div>")

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = status_html(text, error=error)

    def _sample_text(self) -> str:
        """Where the current item is in the random sample (nothing without a sample)."""
        s = self.session
        if not s.sample_size or s.current is None:
            return ""
        k = s.sample_position()
        if k is not None:
            return f" · item {k} of the {s.sample_size}-item random sample"
        return (' · <span style="color:#9a6700">outside the random sample: a label here is '
                "kept, but corrected estimates use only the sample's</span>")

    def _render(self) -> None:
        s = self.session
        p = s.progress()
        self.progress.value = p["done"]
        chips = " · ".join(
            f'<span style="color:{LABEL_COLORS[k]}">{k} {p[k]}</span>'
            for k in ("retained", "lost", "contradicted", "skip"))
        self.progress_text.value = (f'<span style="font-size:12.5px">&nbsp;{p["done"]} of '
                                    f'{p["total"]} labeled · {chips} · annotator '
                                    f"<b>{html.escape(s.annotator)}</b>"
                                    f"{self._sample_text()}</span>")
        cur = s.current
        if cur is None:
            self.item_view.value = (
                '<div style="padding:12px;font-size:15px">All '
                f"{p['total']} items are labeled — thank you. Press ← to go back.</div>")
        else:
            rec = s.label_of(cur.item_id)
            span = None
            if self._revealed == cur.item_id and s.verdict(cur.item_id) is not None:
                span = self._spans.get(cur.item_id)
            self.item_view.value = item_html(cur, label=rec.label if rec else None,
                                             position=(s.position + 1, len(s)), span=span)
        for b in self.buttons.values():
            b.disabled = cur is None
        self.previous_button.disabled = s.position == 0
        self.next_button.disabled = s.done
        self.undo_button.disabled = not s.can_undo
        target = self._reveal_target()
        self.reveal_button.disabled = target is None or not s.has_verdict(target)
        self.reveal_button.tooltip = (f"show the judge's verdict on {target}" if target else
                                      "shown only after you label the item")
        if self._revealed is not None:
            v = s.verdict(self._revealed)
            if v is None:
                self.verdict_view.value = ""
            else:
                mine = s.label_of(self._revealed)
                color = LABEL_COLORS.get(v.label or "", "#6e7781")
                agree = ""
                if mine is not None and v.label is not None:
                    agree = " — agrees with you" if v.label == mine.label else \
                        f" — you said {html.escape(mine.label)}"
                self.verdict_view.value = (
                    f'<div style="font-size:12.5px;border-left:4px solid {color};'
                    f'padding:3px 8px">{html.escape(self._revealed)}: judge says '
                    f'<b style="color:{color}">'
                    f'{html.escape(v.label or "error: " + (v.error or ""))}'
                    f"</b>{agree}<br>{html.escape(v.rationale)}"
                    f"{self._evidence_html(self._revealed, v.label)}</div>")
        else:
            self.verdict_view.value = ""
