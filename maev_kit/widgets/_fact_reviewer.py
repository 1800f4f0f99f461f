"""FactReviewer: review proposed key facts in a notebook, with the mouse or the keyboard."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import ipywidgets as widgets
import traitlets

from maev_kit.rendering import esc as _e
from maev_kit.rendering.internal import agent_colors, entry_css, entry_html
from maev_kit.facts import FactReviewSession, FactUnderReview, HandoffUnderReview
from maev_kit.widgets._labeler import _KeyHandler
from maev_kit.widgets._render import status_html

__all__ = ["KEYMAP", "FactReviewer", "review_html"]

#: Keyboard shortcut → action.
KEYMAP: dict[str, str] = {"a": "accept", "r": "reject", "e": "edit", "n": "add",
                          "ArrowUp": "up", "ArrowDown": "down", "ArrowLeft": "previous",
                          "ArrowRight": "next", "u": "undo"}

_HINT = ("keys: a accept · r reject · e edit · n add · ↑ ↓ fact · ← → handoff · u undo · "
         "Enter saves the text · Esc leaves it")

#: Colour of each decision.
DECISION_COLORS = {"accept": "#1a7f37", "edit": "#0969da", "add": "#8250df",
                   "reject": "#cf222e", None: "#6e7781"}
_DECISION_NAMES = {"accept": "accepted", "edit": "edited", "add": "added",
                   "reject": "rejected", None: "to review"}

_CSS = """
.maev-fr{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.4;
 color:#1f2328;max-width:980px}
.maev-fr .hdr{margin:4px 0 6px;font-weight:600}
.maev-fr .ev{margin:3px 0;padding:4px 8px;border-left:4px solid #ccc;border-radius:3px;
 background:#f6f8fa;white-space:pre-wrap;overflow-wrap:anywhere}
.maev-fr .ev.user{background:#fff8c5;border-left-color:#9a6700}
.maev-fr .who{font-weight:600;font-size:11.5px;margin-right:6px}
.maev-fr .ho{margin:6px 0;padding:4px 8px;border:1px dashed #57606a;border-radius:4px}
.maev-fr mark{background:#ddf4ff;padding:0 1px;border-radius:2px}
.maev-fr mark.focus{background:#ffd33d;outline:2px solid #bf8700}
.maev-fr table.facts{border-collapse:collapse;margin:6px 0;width:100%}
.maev-fr table.facts td{padding:2px 8px;vertical-align:top;border-top:1px solid #eaeef2}
.maev-fr table.facts tr.focus td{background:#fff8c5}
.maev-fr table.facts td:nth-child(1){width:28px}.maev-fr table.facts td:nth-child(2){width:80px}
.maev-fr .chip{display:inline-block;padding:0 7px;border-radius:9px;font-size:11.5px;
 color:#fff;white-space:nowrap}
.maev-fr .meta{color:#57606a;font-size:11.5px}
.maev-fr .more{color:#57606a;font-style:italic}
.maev-fr .ti{color:#6e7781;font-size:11px;float:right}
.maev-fr .badge{font-size:11px;margin-left:6px;color:#57606a}
.maev-fr .ev.result{background:#fff;border-left:4px dotted #8c959f}
.maev-fr .tag.result{border-style:dotted}
.maev-fr .src{font-size:11.5px;color:#57606a;margin-right:6px}
""" + entry_css("maev-fr")

#: Messages shown before the handoff; earlier ones sit in a collapsed block.
_SHOWN = 30


def _marked(text: str, spans: Sequence[tuple[int, int, bool]]) -> str:
    """``text`` escaped, with each ``(start, end, focused)`` span in a ``<mark>`` (the first of
    overlapping spans wins)."""
    out, pos = [], 0
    for start, end, focused in sorted(spans):
        if start < pos:
            continue
        out.append(_e(text[pos:start]))
        cls = ' class="focus"' if focused else ""
        out.append(f"<mark{cls}>{_e(text[start:end])}</mark>")
        pos = end
    out.append(_e(text[pos:]))
    return "".join(out)


def review_html(h: HandoffUnderReview, focused: FactUnderReview | None = None, *,
                position: tuple[int, int] | None = None) -> str:
    """One handoff under review as escaped HTML: its facts (the focused one marked) and the
    messages before it, each fact's span highlighted.

    >>> from maev_kit.facts import ProposedFact
    >>> from maev_kit.facts._review import FactUnderReview, HandoffUnderReview, Span
    >>> from maev_kit.traces import Message
    >>> f = ProposedFact("c", 0, "p-1", "Account <b>", "ACCT-1", "identifier", 0, "offline")
    >>> h = HandoffUnderReview("c", 0, "triage", "billing",
    ...     (Message("user", "<i>ACCT-1</i>", 0, True),),
    ...     (FactUnderReview(f, f, None, Span(0, 3, 9)),))
    >>> out = review_html(h)
    >>> "&lt;i&gt;<mark>ACCT-1</mark>&lt;/i&gt;" in out, "<b>" in out, "<i>" in out
    (True, False, False)
    """
    focus_id = focused.fact_id if focused is not None else None
    spans: dict[int, list[tuple[int, int, bool]]] = {}
    for f in h.facts:
        if f.span is not None:
            spans.setdefault(f.span.message_index, []).append(
                (f.span.start, f.span.end, f.fact_id == focus_id))
    colors = agent_colors([h.from_agent, h.to_agent, *(m.speaker for m in h.before
                                                        if not m.is_user)])
    entries = list(h.before)
    # the handoff's own entry (the last one before it) is drawn as the closing marker
    own = None
    if entries and getattr(entries[-1], "kind", "") == "handoff" and \
            entries[-1].speaker == h.from_agent and (entries[-1].tool or "") == h.to_agent:
        own = len(entries) - 1
    msgs = []
    for i, m in enumerate(entries):
        if i == own:
            continue
        # each kind as the judges and the Labeler show it: text, tool call, tool result
        # (where an agent may have learned a value), earlier handoffs with their context
        msgs.append(entry_html(m, colors, body=_marked(m.content, spans.get(i, []))))
    if len(msgs) > _SHOWN:
        early = len(msgs) - _SHOWN
        msgs = [f"<details><summary>{early} earlier messages</summary>{''.join(msgs[:early])}"
                "</details>", *msgs[early:]]
    if not msgs:
        msgs = ['<div class="more">no messages before this handoff</div>']
    rows = []
    for n, f in enumerate(h.facts, 1):
        mine = f.fact_id == focus_id
        color = DECISION_COLORS.get(f.decision, "#6e7781")
        chip = (f'<span class="chip" style="background:{color}">'
                f"{_DECISION_NAMES.get(f.decision, f.decision)}</span>")
        value = (f" · value <code>{_e(f.fact.value)}</code>" if f.fact.value else "")
        if f.fact.value and f.span is None:
            value += " (not found before the handoff)"
        was = ""
        if f.decision == "edit" and f.proposed.text != f.fact.text:
            was = f'<div class="meta">proposed: {_e(f.proposed.text)}</div>'
        rows.append(f'<tr class="{"focus" if mine else ""}" data-fact-id="{_e(f.fact_id)}">'
                    f'<td>{"▶" if mine else ""}{n}</td><td>{chip}</td>'
                    f'<td><span class="text">{_e(f.fact.text)}</span>{was}'
                    f'<div class="meta">{_e(f.fact.kind)} · {_e(f.proposed.proposer)}{value}'
                    f"</div></td></tr>")
    facts = (f'<table class="facts">{"".join(rows)}</table>' if rows else
             '<div class="more">no facts at this handoff: press n to add one</div>')
    pos = f"handoff {position[0]} of {position[1]} · " if position else ""
    fa, ta = h.from_agent, h.to_agent
    closing = f'<div class="ho">⇢ handoff to {_e(ta)}</div>'
    if own is not None:
        m = entries[own]
        closing = (f'<div class="ho" data-kind="handoff">⇢ handoff to {_e(ta)} · context '
                   f'passed: <code class="mono">{_marked(m.content, spans.get(own, []))}</code>'
                   "</div>")
    return (f'<div class="maev-fr"><style>{_CSS}</style>'
            f'<div class="hdr">{pos}{_e(h.conversation_id)} · handoff {h.handoff_index}: '
            f'<span style="color:{colors.get(fa, "#999")}">{_e(fa)}</span> → '
            f'<span style="color:{colors.get(ta, "#999")}">{_e(ta)}</span></div>'
            f"{facts}<div class=\"meta\">messages before the handoff</div>{''.join(msgs)}"
            f"{closing}</div>")


class _ReviewKeys(_KeyHandler):
    """The Labeler's key listener, rooted at the reviewer, with Enter in a text field saving."""

    root_class = traitlets.Unicode("maev-fact-reviewer").tag(sync=True)
    submit_on_enter = traitlets.Bool(True).tag(sync=True)


class FactReviewer(widgets.VBox):
    """Review proposed key facts handoff by handoff: accept, reject, edit, add, undo.

    A view over a :class:`~maev_kit.facts.FactReviewSession` (all logic lives there). Each
    decision is on disk (one fsync-ed line of the decisions file) before the widget shows it
    as saved. Blind: it never shows a judge's verdict.

    Parameters
    ----------
    traces : FactReviewSession, or iterable of MultiAgentTrace
        A session, or the traces to build one from (with the next three arguments).
    proposed_facts : iterable of ProposedFact
    store_path : path to the decisions file (``fact_reviews.jsonl``)
    reviewer : str

    Keys (while the reviewer has the focus — click it once): ``a`` accept, ``r`` reject the
    focused fact, ``e`` edit it, ``n`` add a fact, ``↑`` / ``↓`` move between facts, ``←`` /
    ``→`` between handoffs, ``u`` undo. In the text fields Enter saves, Esc leaves.

    Examples
    --------
    >>> import tempfile, os
    >>> from maev_kit.facts import ProposedFact, fact_id_for
    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["Account ACCT-4471, 2 bags"],
    ...     turns=[AgentTurn("triage", "router", "One moment", turn_index=1)],
    ...     handoffs=[Handoff("triage", "billing", turn_index=2)])
    >>> facts = [ProposedFact("c1", 0, fact_id_for(0, x), x, v, "identifier", 0, "offline")
    ...          for x, v in [("Account is ACCT-4471", "ACCT-4471"), ("2 bags", "2 bags")]]
    >>> path = os.path.join(tempfile.mkdtemp(), "fact_reviews.jsonl")
    >>> w = FactReviewer([t], facts, path, reviewer="ana")
    >>> w.press("a")
    >>> w.press("n"); w.fact_text.value = "Has 2 checked bags"; w.submit()
    >>> [(d.decision, d.text) for d in w.session.decisions()]
    [('accept', 'Account is ACCT-4471'), ('add', 'Has 2 checked bags')]
    """

    def __init__(self, traces: FactReviewSession | Iterable[Any], proposed_facts: Any = None,
                 store_path: str | os.PathLike[str] | None = None, *,
                 reviewer: str | None = None, **kwargs: Any):
        if isinstance(traces, FactReviewSession):
            if proposed_facts is not None or store_path is not None or reviewer is not None:
                raise TypeError("pass either a FactReviewSession or traces, proposed_facts, "
                                "store_path and reviewer, not both")
            self.session = traces
        else:
            if proposed_facts is None or store_path is None or reviewer is None:
                raise TypeError("FactReviewer needs a FactReviewSession, or traces, "
                                "proposed_facts, store_path and reviewer=")
            self.session = FactReviewSession(traces, proposed_facts, store_path,
                                             reviewer=reviewer)
        #: "edit" or "add" while the text fields hold a fact being written, else None.
        self.mode: str | None = None

        def button(description: str, action: str, tip: str, style: str = "",
                   width: str = "96px") -> widgets.Button:
            b = widgets.Button(description=description, button_style=style, tooltip=tip,
                               layout={"width": width})
            b.on_click(lambda _b: self.act(action))
            return b

        self.buttons: dict[str, widgets.Button] = {
            "accept": button("accept", "accept", "keep the focused fact as proposed (a)",
                             "success"),
            "reject": button("reject", "reject", "drop the focused fact (r)", "danger"),
            "edit": button("edit", "edit", "change the focused fact's text or value (e)",
                           "info"),
            "add": button("add", "add", "add a fact the proposers missed (n)"),
            "up": button("↑", "up", "previous fact (↑)", width="40px"),
            "down": button("↓", "down", "next fact (↓)", width="40px"),
            "previous": button("←", "previous", "previous handoff (←)", width="40px"),
            "next": button("→", "next", "next handoff (→)", width="40px"),
            "undo": button("undo", "undo", "undo the last decision (u)"),
        }
        self.buttons["undo"].icon = "undo"
        # Synced when a field loses focus (a click on save), not per keystroke: ipywidgets
        # buffers a model's updates while one is in flight, so a busy kernel could see the
        # click before the last keystrokes (Enter sends the fields' values with its message).
        self.fact_text = widgets.Text(placeholder="fact text — e edits the focused fact, n adds "
                                      "one; Enter saves", continuous_update=False,
                                      layout={"width": "60%"})
        self.fact_value = widgets.Text(placeholder="value: its exact words (optional)",
                                       continuous_update=False, layout={"width": "25%"})
        self.save_button = widgets.Button(description="save", button_style="primary",
                                          tooltip="save the edit or the new fact (Enter)",
                                          layout={"width": "70px"})
        self.cancel_button = widgets.Button(description="cancel", layout={"width": "70px"},
                                            tooltip="forget the text (Esc, then any key)")
        self.save_button.on_click(lambda _b: self.submit())
        self.cancel_button.on_click(lambda _b: self._set_mode(None))
        self.mode_label = widgets.HTML()
        self.progress = widgets.IntProgress(min=0, max=1, value=0, layout={"width": "240px"})
        self.progress_text = widgets.HTML()
        self.handoff_view = widgets.HTML()
        self.status = widgets.HTML()
        self.key_handler = _ReviewKeys(shortcuts=list(KEYMAP), hint=_HINT)
        self.key_handler.on_msg(self._on_key_msg)
        self.editor = widgets.HBox([self.mode_label, self.fact_text, self.fact_value,
                                    self.save_button, self.cancel_button])
        super().__init__([
            widgets.HBox([self.progress, self.progress_text]),
            self.handoff_view,
            widgets.HBox(list(self.buttons.values())),
            self.editor,
            self.status,
            self.key_handler,
        ], **kwargs)
        self.add_class("maev-fact-reviewer")
        self._set_mode(None)

    # ------------------------------------------------------------ actions
    def press(self, key: str) -> None:
        """Act as if ``key`` was pressed (``a r e n u ArrowUp ArrowDown ArrowLeft ArrowRight``)."""
        action = KEYMAP.get(key)
        if action is None:
            raise ValueError(f"`key` must be one of {', '.join(KEYMAP)}; got {key!r}")
        self.act(action)

    def _on_key_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "key" and content.get("key") in KEYMAP:
            self.press(content["key"])
        elif content.get("type") == "submit":
            fields = content.get("fields")
            if isinstance(fields, dict):  # the browser's values: newer than the synced ones
                for w in (self.fact_text, self.fact_value):
                    if isinstance(fields.get(w.placeholder), str):
                        w.value = fields[w.placeholder]
            self.submit()

    def act(self, action: str) -> None:
        """Do one action: a key's action (see :data:`KEYMAP`)."""
        s = self.session
        if action in ("accept", "reject"):
            if s.focused is None:
                return self._set_status("no fact to decide here: press n to add one",
                                        error=True)
            rec = s.accept() if action == "accept" else s.reject()
            self._saved(rec)
        elif action == "edit":
            f = s.focused
            if f is None:
                return self._set_status("no fact to edit here", error=True)
            self.fact_text.value, self.fact_value.value = f.fact.text, f.fact.value or ""
            self._set_mode("edit")
        elif action == "add":
            self.fact_text.value, self.fact_value.value = "", ""
            self._set_mode("add")
        elif action in ("up", "down"):
            s.focus_previous() if action == "up" else s.focus_next()
            self._render()
        elif action in ("previous", "next"):
            s.previous() if action == "previous" else s.next()
            self._set_mode(None)
        elif action == "undo":
            h = s.undo()
            self._set_status("nothing to undo" if h is None else
                             f"undone: back to {h.conversation_id} handoff {h.handoff_index}")
            self._render()
        else:
            raise ValueError(f"unknown action {action!r}; use one of "
                             f"{', '.join(dict.fromkeys(KEYMAP.values()))}")

    def submit(self) -> None:
        """Save what the text fields hold: the edit of the focused fact, or the new fact."""
        if self.mode is None:
            return
        text, value = self.fact_text.value.strip(), self.fact_value.value.strip() or None
        try:
            if self.mode == "edit":
                rec = self.session.edit(text=text, value=value)
            else:
                rec = self.session.add(None, text, value)
        except (ValueError, KeyError) as e:  # shown in the widget; nothing was saved
            return self._set_status(f"NOT saved: {e}", error=True)
        self.mode = None
        self._saved(rec)

    def _saved(self, rec: Any) -> None:
        self._set_status(f"saved ✓ {rec.decision} {rec.fact_id}: {rec.text}")
        self._set_mode(None)

    # ------------------------------------------------------------ view
    def _set_mode(self, mode: str | None) -> None:
        self.mode = mode
        editing = mode is not None
        for w in (self.save_button, self.cancel_button):
            w.disabled = not editing
        self.mode_label.value = (f"<b>{'edit the fact' if mode == 'edit' else 'new fact'}"
                                 "</b>&nbsp;" if editing else "")
        if editing:
            self.fact_text.focus()
        else:
            self.fact_text.value, self.fact_value.value = "", ""
        self._render()

    def _set_status(self, text: str, *, error: bool = False) -> None:
        self.status.value = status_html(text, error=error)

    def _render(self) -> None:
        s = self.session
        p = s.progress
        self.progress.max = max(p["facts"], 1)
        self.progress.value = p["decided"]
        chips = " · ".join(f'<span style="color:{DECISION_COLORS[d]}">{_DECISION_NAMES[d]} '
                           f"{p[k]}</span>" for d, k in (("accept", "accepted"),
                                                         ("edit", "edited"),
                                                         ("add", "added"),
                                                         ("reject", "rejected")))
        done = " — all reviewed ✓" if s.done else ""
        self.progress_text.value = (
            f'<span style="font-size:12.5px">&nbsp;{p["decided"]} of {p["facts"]} facts '
            f'reviewed · {p["handoffs_done"]} of {p["handoffs"]} handoffs{done} · {chips} · '
            f"reviewer <b>{_e(s.reviewer)}</b></span>")
        focused = s.focused
        self.handoff_view.value = review_html(s.current, focused,
                                              position=(s.position + 1, len(s)))
        for name in ("accept", "reject", "edit"):
            self.buttons[name].disabled = focused is None
        self.buttons["previous"].disabled = s.position == 0
        self.buttons["next"].disabled = s.position >= len(s) - 1
        self.buttons["undo"].disabled = not s.can_undo
