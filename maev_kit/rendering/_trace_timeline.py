"""The trace timeline: a multi-agent conversation as one self-contained HTML fragment.

This module owns :func:`trace_html` and what it is built from: the events of a trace in order
(:func:`trace_events`), the view of one drawing (colours, facts, problems, spans, anchors), the
header with its counts, each handoff with its facts and problems, and paging of long traces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from maev_kit.rendering import esc as _e
from maev_kit.rendering._trace_checks import _Problem, _contract_problems, _loop_handoffs
from maev_kit.rendering._trace_entries import (
    _Fact, _agents_arrow, _context_rows, _context_table, _normalize_facts, _spans, _spans_by_entry,
    _subject_words, _verdict_spans, _warnings_html, entry_anchors, entry_html,
)
from maev_kit.rendering._trace_style import (
    DEFAULT_PAGE_SIZE, LABEL_COLORS, TRACE_CSS, _chip, _plural, agent_colors,
)
from maev_kit.traces.internal import conversation_view


# --------------------------------------------------------------------------- trace
def trace_events(trace: Any) -> list[tuple[str, Any, int, Any]]:
    """The trace's conversation view as events ``(kind, entry, handoff_index, handoff)``: one
    per entry (:func:`~maev_kit.traces.conversation_view`), a handoff's entry paired with its
    :class:`~maev_kit.traces.Handoff` and index (-1 and None for other entries)."""
    hidx = {id(h): i for i, h in enumerate(trace.handoffs)}
    hoffs = iter([e for e in trace.timeline() if hasattr(e, "from_agent")])
    out: list[tuple[str, Any, int, Any]] = []
    for m in conversation_view(trace):
        if m.kind == "handoff":
            h = next(hoffs, None)
            out.append(("handoff", m, hidx.get(id(h), -1), h))
        else:
            out.append((m.kind, m, -1, None))
    return out


@dataclass(frozen=True)
class _TraceView:
    """One trace laid out for drawing: its events and what each needs (colours, lanes, roles,
    facts with their verdicts, contract problems, circular handoffs, evidence marks, anchors).
    """

    trace: Any
    events: list[tuple[str, Any, int, Any]]
    agents: list[str]
    colors: dict[str, str]
    lane: dict[str, int]
    roles: dict[tuple[int, str], str]
    facts: list[_Fact]
    problems: dict[int, list[_Problem]]
    never_made: list[dict[str, Any]]
    loops: set[int]
    marks: dict[int, list[tuple[int, int, str, str]]]
    warns: dict[int, list[str]]
    ids: list[str | None]
    #: Per handoff index, the turn index of the next handoff in turn order (inf after the last):
    #: where the window of a fact passed at that handoff ends.
    next_turn: dict[int, float]


def _page_count(n: int, page: int | None, page_size: int) -> int:
    """How many pages of ``page_size`` events ``n`` events make (at least one), checking
    ``page_size`` and ``page``."""
    if page_size < 1:
        raise ValueError(f"`page_size` must be at least 1, got {page_size!r}")
    n_pages = max(1, -(-n // page_size))
    if page is not None and not 0 <= page < n_pages:
        raise ValueError(f"`page` must be between 0 and {n_pages - 1}, got {page!r}")
    return n_pages


def _next_handoff_turns(trace: Any) -> dict[int, float]:
    """Per handoff index, the turn index of the handoff after it in turn order (inf for the
    last): the end of the window a fact passed at that handoff is looked for in."""
    order = sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index)
    return {i: (trace.handoffs[order[r + 1]].turn_index if r + 1 < len(order)
                else float("inf")) for r, i in enumerate(order)}


def _trace_view(trace: Any, events: list[tuple[str, Any, int, Any]], facts: Any,
                verdicts: Any, contracts: Any, spans: Any, anchors: str | None) -> _TraceView:
    """Lay ``trace`` out for drawing (see :func:`trace_html` for the arguments)."""
    agents = list(dict.fromkeys([*trace.agents_involved(),
                                 *(a for h in trace.handoffs for a in (h.from_agent, h.to_agent))]))
    colors = agent_colors(agents)
    lane = {a: i for i, a in enumerate(agents)}
    roles = {(t.turn_index, t.agent_id): t.agent_role for t in trace.turns}
    fact_list = _normalize_facts(facts, trace.conversation_id, verdicts)
    problems, never_made = _contract_problems(contracts, trace)
    loops = _loop_handoffs(trace)
    entries = [ev[1] for ev in events]
    marks, warns = _spans_by_entry(entries, [*_verdict_spans(verdicts), *_spans(spans)])
    ids = entry_anchors(entries, anchors)
    return _TraceView(trace, events, agents, colors, lane, roles, fact_list, problems,
                      never_made, loops, marks, warns, ids, _next_handoff_turns(trace))


def _fact_marks(view: _TraceView, ti: int, text: str,
                is_user: bool) -> tuple[list[tuple[str, str]], list[str]]:
    """The fact terms to highlight in one entry (turn ``ti``, ``text``) and its badges: a fact
    stated up to its handoff; after it (until the next handoff, agents only) retained or
    contradicted per its verdict, or re-asked (a question about the fact's subject)."""
    handoffs = view.trace.handoffs
    terms: list[tuple[str, str]] = []
    badges: list[str] = []
    for f in view.facts:
        h = handoffs[f.handoff_index] if f.handoff_index is not None and \
            0 <= f.handoff_index < len(handoffs) else None
        low = text.lower()
        hit = any(t.lower() in low for t in f.terms)
        if h is None or ti <= h.turn_index:
            if hit:
                terms += [(t, "") for t in f.terms]
                badges.append(_chip(f"{f.fact_id} stated", LABEL_COLORS["stated"], f.text))
            continue
        if not ti <= view.next_turn[cast(int, f.handoff_index)] or is_user:  # h: not None
            continue
        cls = f.label if f.label in ("retained", "contradicted") else ""
        in_evidence = any(q and q.lower() in low for q in f.evidence)
        if hit or in_evidence:
            terms += [(t, cls) for t in f.terms]
            if f.label in ("retained", "contradicted"):
                badges.append(_chip(f"{f.fact_id} {f.label}", LABEL_COLORS[f.label], f.text))
        if f.label and text.rstrip().endswith("?") and not hit:
            subj = _subject_words(f.text)
            if subj and any(w in low for w in subj):
                badges.append(_chip(f"{f.fact_id} re-asked", LABEL_COLORS["re-asked"],
                                    f.text))
    return terms, badges


def _problem_row(p: _Problem) -> str:
    """A context-table row for one thing wrong with a handoff's context."""
    return (f'<tr class="missing" data-kind="{_e(p.kind)}" data-key="{_e(p.key)}">'
            f"<td><code>{_e(p.key)}</code></td><td>{_e(p.why)}</td></tr>")


def _handoff_fact_chips(facts: Sequence[_Fact], hi: int) -> str:
    """One chip per fact passed at handoff ``hi`` (with its verdict when there is one)."""
    return "".join(
        _chip(f"{f.fact_id}: {f.label}" if f.label else f.fact_id,
              LABEL_COLORS.get(f.label or "stated", "#0969da"), f.text) + " "
        for f in facts if f.handoff_index == hi)


def _handoff_event_html(view: _TraceView, pos: int) -> str:
    """The handoff event ``pos`` as a marker: from → to, reason, mode, turn, the context passed
    (with what the contracts find wrong in it), the facts passed and a circular-handoff flag."""
    _, m, hi, e = view.events[pos]
    reason = e.reason.value if e is not None and e.reason is not None else "—"
    mode = e.mode if e is not None else ""
    cls = "ho loop" if hi in view.loops else "ho"
    miss = view.problems.get(hi, [])
    ctx = _context_table([*_context_rows(m, [], view.marks.get(pos, [])),
                          *(_problem_row(p) for p in miss)])
    fact_chips = _handoff_fact_chips(view.facts, hi)
    loop = " " + _chip("circular handoff", "#cf222e") if hi in view.loops else ""
    missing = " " + _chip(f"contract: {_plural(len(miss), 'problem')}", "#cf222e") \
        if miss else ""
    anchor = view.ids[pos]
    idattr = f' id="{_e(anchor)}"' if anchor else ""
    absent = "" if any(t.agent_id == m.tool for t in getattr(view.trace, "turns", ())) else (
        " " + _chip("receiver not in this trace: retention judges what was handed over",
                    "#6e7781"))
    return (f'<div class="{cls}"{idattr} data-handoff="{hi}" data-kind="handoff" '
            f'data-turn="{int(m.turn_index)}" data-part="{int(m.part)}">'
            f'<span class="arrow">⇢ handoff {hi}: '
            f'{_agents_arrow(m.speaker, m.tool or "", view.colors)}</span>'
            f' <span class="badge">reason: {_e(reason)} · mode: {_e(mode)} · '
            f"#{_e(m.turn_index)}</span>{loop}{missing}{absent}"
            f'{"<div>" + fact_chips + "</div>" if fact_chips else ""}{ctx}'
            f"{_warnings_html(view.warns.get(pos, []))}</div>")


def _event_html(view: _TraceView, pos: int) -> str:
    """Event ``pos`` of the trace: an entry with its fact marks and badges, or a handoff."""
    kind, m, _, _ = view.events[pos]
    if kind == "handoff":
        return _handoff_event_html(view, pos)
    terms, badges = _fact_marks(view, m.turn_index, m.content, m.is_user)
    return entry_html(m, view.colors, terms=terms, marks=view.marks.get(pos, []),
                      warnings=view.warns.get(pos, []), anchor=view.ids[pos],
                      role=view.roles.get((m.turn_index, m.speaker), ""),
                      badges="".join(badges), lane=view.lane.get(m.speaker, 0))


def _trace_header(view: _TraceView) -> str:
    """The trace's header: id, counts and agent legend, then the facts list and the expected
    handoffs never made."""
    trace = view.trace
    legend = " ".join(_chip(a, view.colors[a]) for a in view.agents)
    head = (f'<div class="hdr"><span class="cid">{_e(trace.conversation_id)}</span>'
            f"<span>{len(trace.turns)} turns · {len(trace.handoffs)} handoffs · "
            f"{len(trace.user_messages)} user messages</span>{legend}</div>")
    if view.facts:
        items = "".join(
            f"<li>{_e(f.fact_id)}"
            + (f" (handoff {_e(f.handoff_index)})" if f.handoff_index is not None else "")
            + f": {_e(f.text)}"
            + (" " + _chip(f.label, LABEL_COLORS.get(f.label, '#6e7781')) if f.label else "")
            + "</li>" for f in view.facts)
        head += f'<ul class="facts">{items}</ul>'
    for d in view.never_made:
        reason = f" ({d['expected_reason']})" if d["expected_reason"] else ""
        head += (f'<div class="missing" data-expected="{_e(d["expected_index"])}">expected '
                 f"handoff {_e(d['expected_index'])} to {_e(d['expected_target'])}{_e(reason)} "
                 "was never made</div>")
    return head


def _page_html(view: _TraceView, p: int, page_size: int) -> tuple[int, int, str]:
    """Page ``p`` of the events: its range ``[lo, hi)`` and their HTML."""
    lo, hi = p * page_size, min(len(view.events), (p + 1) * page_size)
    return lo, hi, "".join(_event_html(view, i) for i in range(lo, hi))


def _trace_body(view: _TraceView, page: int | None, page_size: int, n_pages: int) -> str:
    """The events: page ``page`` only when given (headed "events x–y of n" when there are
    several pages), else every page, those after the first in collapsed ``<details>``."""
    n = len(view.events)
    if page is not None:
        lo, hi, body = _page_html(view, page, page_size)
        if n_pages > 1:
            body = (f'<div class="more">events {lo + 1}–{hi} of {n} (page {page + 1} of '
                    f"{n_pages})</div>{body}")
        return body
    chunks = []
    for p in range(n_pages):
        lo, hi, inner = _page_html(view, p, page_size)
        chunks.append(inner if p == 0 else
                      f'<details><summary class="more">events {lo + 1}–{hi} of {n}'
                      f"</summary>{inner}</details>")
    return "".join(chunks)


def trace_html(trace: Any, *, facts: Any = None, verdicts: Any = None, contracts: Any = None,
               page: int | None = None, page_size: int = DEFAULT_PAGE_SIZE,
               spans: Any = None, anchors: str | None = "") -> str:
    """A multi-agent conversation as one self-contained, escaped HTML fragment.

    The conversation view judges read, entry by entry: one lane and colour per agent, user
    messages set apart, each tool call a monospaced "call" row (name and arguments), each
    tool result a "result" row, each handoff a marker (from → to, reason, mode, the context
    passed), missing contract keys and circular handoffs in red, key facts highlighted where
    stated and — given judge ``verdicts`` — where they were retained, re-asked or
    contradicted. A verdict's evidence span (``spans``, or the ``.span`` of the ``verdicts``)
    marks the exact characters in ``<mark class="evidence ...">``.

    Parameters
    ----------
    trace : MultiAgentTrace
    facts : list of KeyFact, RetentionItem or str, or ConversationExpectations, optional
    verdicts : list of Verdict, JudgeRun or dict item_id -> label, optional
    contracts : ConversationExpectations, list of HandoffContract-like objects or dict
        ``(from_agent, to_agent) -> required keys``, optional
    page : int, optional
        Render only this page (0-based) of ``page_size`` events. By default every event is
        rendered, pages after the first inside collapsed ``<details>``.
    spans : list of EvidenceSpan or Verdict (or dicts with turn_index, part, start, end), optional
        Evidence to mark, in addition to the spans of ``verdicts``.
    anchors : str or None
        Prefix of each entry's ``id`` (:func:`entry_anchor`): ``""`` gives ``id="t5-p1"``; a
        page with several traces passes :func:`anchor_prefix` of each; None: no ids.

    Examples
    --------
    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c-1", user_messages=["My account is ACCT-1 <b>"],
    ...     turns=[AgentTurn("triage", "router", "Routing you", turn_index=1)],
    ...     handoffs=[Handoff("triage", "billing", "specialization", {"account": "ACCT-1"},
    ...                       turn_index=2)])
    >>> out = trace_html(t, facts=["Account is ACCT-1"])
    >>> import re; text = re.sub("<[^>]*>", "", out)
    >>> "triage → billing" in text, "&lt;b&gt;" in out, "<b>" in out
    (True, True, False)
    """
    events = trace_events(trace)
    n_pages = _page_count(len(events), page, page_size)
    view = _trace_view(trace, events, facts, verdicts, contracts, spans, anchors)
    head = _trace_header(view)
    body = _trace_body(view, page, page_size, n_pages)
    return f'<div class="maev-tv"><style>{TRACE_CSS}</style>{head}{body}</div>'
