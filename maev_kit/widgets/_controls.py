"""The buttons the labeling widgets share: one per label, and ← / → to move; and what a key
press does."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import anywidget
import ipywidgets as widgets
import traitlets

__all__ = ["KeyHandler", "label_buttons", "move_buttons", "press_key"]


class KeyHandler(anywidget.AnyWidget):
    """Front-end key listener; sends ``{"type": "key", "key": ...}`` to the kernel."""

    _esm = Path(__file__).with_name("labeler_keys.js")
    shortcuts = traitlets.List(traitlets.Unicode()).tag(sync=True)
    hint = traitlets.Unicode("").tag(sync=True)


def label_buttons(styles: Mapping[str, str], tooltip: Callable[[str], str],
                  on_label: Callable[[str], object]) -> dict[str, widgets.Button]:
    """A button per label (``styles``: label → button style) that calls ``on_label(label)``."""
    buttons: dict[str, widgets.Button] = {}
    for lab, style in styles.items():
        b = widgets.Button(description=lab, button_style=style, tooltip=tooltip(lab),
                           layout={"width": "120px"})
        b.on_click(lambda _b, lab=lab: on_label(lab))
        buttons[lab] = b
    return buttons


def move_buttons(on_move: Callable[[str], object], *, keys: bool = False
                 ) -> tuple[widgets.Button, widgets.Button]:
    """← and → buttons calling ``on_move("previous")`` / ``on_move("next")`` (``keys``: the
    tooltips name the arrow keys)."""
    hint = (" (←)", " (→)") if keys else ("", "")
    previous = widgets.Button(description="←", tooltip="previous item" + hint[0],
                              layout={"width": "44px"})
    following = widgets.Button(description="→", tooltip="next item" + hint[1],
                               layout={"width": "44px"})
    previous.on_click(lambda _: on_move("previous"))
    following.on_click(lambda _: on_move("next"))
    return previous, following


def press_key(keymap: Mapping[str, str], key: str, *, move: Callable[[str], object],
              undo: Callable[[], object], label: Callable[[str], object]) -> None:
    """Do what ``key`` stands for in ``keymap`` (key → ``previous``, ``next``, ``undo`` or a
    label): ``move(direction)``, ``undo()`` or ``label(value)``; an unknown key raises
    ValueError naming the keys there are."""
    action = keymap.get(key)
    if action is None:
        raise ValueError(f"`key` must be one of {', '.join(keymap)}; got {key!r}")
    if action in ("previous", "next"):
        move(action)
    elif action == "undo":
        undo()
    else:
        label(action)
