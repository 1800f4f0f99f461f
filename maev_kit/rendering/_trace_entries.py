"""Entries of the conversation view, drawn one by one, with facts and evidence marked.

This module owns what a single entry of the view becomes in HTML (:func:`entry_html`: user and
agent text, tool calls and results, handoffs with the context they passed), its anchor
(:func:`entry_anchor`, ``id="t5-p1"``) and how an anchor is found again (:func:`find_entry`),
evidence spans (:func:`span_of`) and the ``<mark>`` around the exact characters a verdict
names, and the facts of a trace: their terms (:func:`fact_terms`), their verdicts, and the
highlighting of those terms in the text. All trace text is escaped here before it is drawn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from maev_kit.rendering import esc as _e
from maev_kit.rendering._trace_style import LABEL_COLORS
from maev_kit.traces import Message  # the doctests draw Message entries


# --------------------------------------------------------------------------- facts
@dataclass
class _Fact:
    fact_id: str
    handoff_index: int | None
    text: str
    terms: tuple[str, ...]
    label: str | None = None  # judge verdict
    evidence: tuple[str, ...] = ()


_TOKEN = re.compile(r"[A-Za-z0-9][\w\-./@:#+]*[A-Za-z0-9]|\d")
_STOP = {"the", "a", "an", "is", "are", "was", "of", "to", "and", "or", "for", "in", "on",
         "with", "has", "have", "their", "his", "her", "customer", "user"}


def fact_terms(text: str) -> tuple[str, ...]:
    """The words of a fact worth highlighting in a trace: identifiers, numbers, the value.

    >>> fact_terms("Account number is ACCT-4471")
    ('ACCT-4471',)
    >>> fact_terms("Prefers contact by email")
    ('email',)
    """
    terms = [t for t in _TOKEN.findall(text) if len(t) > 1
             and (any(c.isdigit() for c in t) or t.isupper())]
    if not terms and " is " in text:
        value = text.rsplit(" is ", 1)[1].strip(" .")
        terms = [value] if value else []
    if not terms:
        words = [w for w in _TOKEN.findall(text) if w.lower() not in _STOP and len(w) >= 4]
        terms = words[-1:]
    return tuple(dict.fromkeys(terms))


def _subject_words(text: str) -> list[str]:
    head = text.split(" is ", 1)[0] if " is " in text else text
    return [w.lower() for w in re.findall(r"[A-Za-z]{4,}", head) if w.lower() not in _STOP]


def _normalize_facts(facts: Any, conversation_id: str, verdicts: Any) -> list[_Fact]:
    if facts is None:
        return []
    if hasattr(facts, "key_facts"):  # ConversationExpectations
        facts = facts.key_facts
    if isinstance(facts, (str, bytes)) or not isinstance(facts, Sequence):
        raise TypeError("`facts` must be a list of KeyFacts, RetentionItems or strings; got "
                        f"{type(facts).__name__}")
    vmap = _verdict_map(verdicts)
    out = []
    for i, f in enumerate(facts):
        if isinstance(f, str):
            fid, hi, text = f"fact{i + 1}", None, f
        elif hasattr(f, "fact") and hasattr(f, "item_id"):  # RetentionItem
            fid, hi, text = f.fact_id, f.handoff_index, f.fact
        elif hasattr(f, "text") and hasattr(f, "fact_id"):  # KeyFact
            fid, hi, text = f.fact_id, f.handoff_index, f.text
        elif isinstance(f, Mapping) and "text" in f:
            fid, hi, text = f.get("fact_id", f"fact{i + 1}"), f.get("handoff_index"), f["text"]
        else:
            raise TypeError(f"`facts[{i}]` must be a KeyFact, RetentionItem or string; got "
                            f"{type(f).__name__}")
        hi = _as_index(hi)
        label: str | None
        evidence: tuple[str, ...]
        label, evidence = None, ()
        v = vmap.get(f"{conversation_id}/h{hi}/{fid}") if hi is not None else None
        if v is not None:
            label, evidence = v
        out.append(_Fact(str(fid), hi, str(text), fact_terms(str(text)), label, evidence))
    return out


def _as_index(value: Any) -> int | None:
    """A handoff index from an int, a numpy integer or an integral float (DataFrame cells)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return int(f) if f.is_integer() else None


def _verdict_map(verdicts: Any) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    if verdicts is None:
        return {}
    verdicts = getattr(verdicts, "verdicts", verdicts)  # a JudgeRun
    pairs = verdicts.items() if isinstance(verdicts, Mapping) else (
        (getattr(v, "item_id", None), v) for v in verdicts)
    out: dict[str, tuple[str | None, tuple[str, ...]]] = {}
    for iid, v in pairs:
        if iid is None:
            continue
        if v is None or isinstance(v, str):
            out[iid] = (v, ())
        else:
            out[iid] = (getattr(v, "label", None), tuple(getattr(v, "evidence", ()) or ()))
    return out


def _verdict_spans(verdicts: Any) -> list[_Span]:
    """The evidence spans of the verdicts that carry one (``Verdict.span``)."""
    if verdicts is None:
        return []
    verdicts = getattr(verdicts, "verdicts", verdicts)
    vals = verdicts.values() if isinstance(verdicts, Mapping) else verdicts
    out = []
    for v in vals:
        if v is None or isinstance(v, str) or getattr(v, "span", None) is None:
            continue
        sp = span_of(v)
        if sp is not None:
            out.append(sp)
    return out


def _highlight_terms(text: str, terms: Sequence[tuple[str, str]]) -> str:
    """Escape ``text``, wrapping each occurrence of a term in ``<mark class=...>``."""
    if not terms:
        return _e(text)
    pattern = re.compile("|".join(re.escape(t) for t, _ in sorted(terms, key=lambda x: -len(x[0]))),
                         re.IGNORECASE)
    cls = {t.lower(): c for t, c in terms}
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(_e(text[pos:m.start()]))
        out.append(f'<mark class="{_e(cls.get(m.group(0).lower(), ""))}">{_e(m.group(0))}</mark>')
        pos = m.end()
    out.append(_e(text[pos:]))
    return "".join(out)


def _highlight(text: str, terms: Sequence[tuple[str, str]],
               spans: Sequence[tuple[int, int, str, str]] = ()) -> str:
    """Escape ``text``: each evidence span ``(start, end, label, title)`` exactly in a
    ``<mark class="evidence label">``, each occurrence of a fact term elsewhere in a
    ``<mark class=...>`` (a span that overlaps an earlier one is left out)."""
    out, pos = [], 0
    for start, end, label, title in sorted(spans):
        if start < pos or not 0 <= start < end <= len(text):
            continue
        out.append(_highlight_terms(text[pos:start], terms))
        cls = f"evidence {label}" if label in LABEL_COLORS else "evidence"
        t = f' title="{_e(title)}"' if title else ""
        out.append(f'<mark class="{cls}"{t}>{_e(text[start:end])}</mark>')
        pos = end
    out.append(_highlight_terms(text[pos:], terms))
    return "".join(out)


# --------------------------------------------------------------------------- entries, spans
#: How each kind of entry is named on the page.
ENTRY_KIND_NAMES = {"user": "user", "text": "agent text", "tool_call": "tool call",
                    "tool_result": "tool result", "handoff": "handoff"}


def anchor_prefix(key: str) -> str:
    """A prefix for the anchors of one conversation (or item) on a page holding several:
    ``c`` and 10 hex digits of its sha1, safe in an ``id`` whatever the key holds.

    >>> anchor_prefix("c-1")
    'ce788f49363-'
    """
    return "c" + hashlib.sha1(str(key).encode("utf-8")).hexdigest()[:10] + "-"


def entry_anchor(turn_index: Any, part: Any = 0, kind: str | None = None,
                 prefix: str = "") -> str:
    """The anchor id of one entry of the conversation view: ``t{turn}-p{part}`` (``t{turn}-h{part}``
    for a handoff, which may share its turn index with the turn spoken before it).

    >>> entry_anchor(5, 1), entry_anchor(2, 0, "handoff"), entry_anchor(3, 0, prefix="cab-")
    ('t5-p1', 't2-h0', 'cab-t3-p0')
    """
    sep = "h" if kind == "handoff" else "p"
    return f"{prefix}t{int(turn_index)}-{sep}{int(part or 0)}"


def entry_anchors(entries: Sequence[Any], prefix: str | None = "") -> list[str | None]:
    """The anchor id of each entry, in order: :func:`entry_anchor`, and ``-2``, ``-3``… on an
    entry whose name an earlier one already took (None for each when ``prefix`` is None).

    >>> ms = [Message("user", "hi", 2, True), Message("a", "yo", 2), Message("a", "→ b()", 2,
    ...       kind="handoff", tool="b")]
    >>> entry_anchors(ms, "x-")
    ['x-t2-p0', 'x-t2-p0-2', 'x-t2-h0']
    """
    out: list[str | None] = []
    seen: dict[str, int] = {}
    for m in entries:
        if prefix is None:
            out.append(None)
            continue
        base = entry_anchor(m.turn_index, getattr(m, "part", 0), getattr(m, "kind", None),
                            prefix)
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return out


@dataclass(frozen=True)
class _Span:
    """An evidence span to mark: the entry ``(turn_index, part, kind)`` and ``[start, end)``."""

    turn_index: int
    part: int
    start: int
    end: int
    kind: str | None = None
    text: str | None = None
    label: str | None = None
    title: str = ""


def span_of(obj: Any, label: str | None = None, title: str = "") -> _Span | None:
    """A :class:`_Span` from an EvidenceSpan, a Verdict with ``.span``, a mapping or a tuple
    ``(turn_index, part, start, end)``; None for anything else."""
    if obj is None:
        return None
    inner = getattr(obj, "span", None)
    if inner is not None and not isinstance(obj, Mapping):  # a Verdict
        lab = getattr(obj, "label", None)
        who = getattr(obj, "judge", "") or ""
        return span_of(inner, label or lab,
                        title or (f"judge{' ' + who if who else ''}: {lab}" if lab else ""))
    get: Callable[..., Any]
    if isinstance(obj, Mapping):
        get = cast("Callable[..., Any]", obj.get)  # int(None) is caught below
    elif isinstance(obj, tuple) and len(obj) >= 4:
        vals = dict(zip(("turn_index", "part", "start", "end", "label"), obj))
        get = cast("Callable[..., Any]", vals.get)
    else:
        def get(k: str, d: Any = None) -> Any:
            return getattr(obj, k, d)
    try:
        ti, part, start, end = (int(get("turn_index")), int(get("part", 0) or 0),
                                int(get("start")), int(get("end")))
    except (TypeError, ValueError):
        return None
    kind = get("kind")
    text = get("text")
    lab = label or get("label")
    given = get("title")
    return _Span(ti, part, start, end, str(kind) if kind else None,
                 str(text) if text is not None else None,
                 str(lab) if isinstance(lab, str) else None,
                 title or (str(given) if given else "")
                 or (f"judge: {lab}" if isinstance(lab, str) else "evidence"))


def _spans(spans: Any) -> list[_Span]:
    if spans is None:
        return []
    if isinstance(spans, (str, bytes)):
        raise TypeError("`spans` must be a list of EvidenceSpans or Verdicts, not a string")
    if not isinstance(spans, Iterable) or isinstance(spans, tuple) and spans and \
            isinstance(spans[0], int):
        spans = [spans]
    return [sp for sp in (span_of(x) for x in spans) if sp is not None]


def find_entry(entries: Sequence[Any], turn_index: int, part: int = 0,
               kind: str | None = None) -> Any:
    """The first entry of ``entries`` named by ``(turn_index, part)`` (and ``kind`` when given),
    or None — the same entry :func:`entry_anchor` names on the page."""
    for m in entries:
        if m.turn_index == turn_index and getattr(m, "part", 0) == part and \
                (kind is None or getattr(m, "kind", None) == kind):
            return m
    return None


def _spans_by_entry(entries: Sequence[Any], spans: Sequence[_Span]
                    ) -> tuple[dict[int, list[tuple[int, int, str, str]]], dict[int, list[str]]]:
    """Per entry (by position in ``entries``): the spans to mark, and the warnings of spans whose
    text is not where they say (shown, never hidden: the view and the verdict must agree)."""
    marks: dict[int, list[tuple[int, int, str, str]]] = {}
    warns: dict[int, list[str]] = {}
    for sp in spans:
        at = next((i for i, m in enumerate(entries) if m.turn_index == sp.turn_index
                   and getattr(m, "part", 0) == sp.part
                   and (sp.kind is None or getattr(m, "kind", None) == sp.kind)), None)
        if at is None:
            continue
        content = entries[at].content
        ok = 0 <= sp.start < sp.end <= len(content)
        if ok and sp.text is not None and content[sp.start:sp.end] != sp.text:
            ok = False
        if ok:
            marks.setdefault(at, []).append((sp.start, sp.end, sp.label or "", sp.title))
        else:
            warns.setdefault(at, []).append(
                f"the verdict's evidence {sp.text!r} is not at characters {sp.start}–{sp.end} "
                "of this entry" if sp.text is not None else
                f"the verdict's evidence span {sp.start}–{sp.end} lies outside this entry")
    return marks, warns


def _context_rows(m: Any, terms: Sequence[tuple[str, str]],
                  marks: Sequence[tuple[int, int, str, str]]) -> list[str]:
    """A handoff entry's context, one row per ``context.<key>`` field, each value as the view
    shows it (cut to the budget), evidence marks shifted into the value."""
    rows = []
    for name, a, b in getattr(m, "fields", ()) or ():
        key = name.split(".", 1)[1] if "." in name else name
        local = [(s - a, e - a, lab, t) for s, e, lab, t in marks if a <= s and e <= b]
        rows.append(f"<tr><td><code>{_e(key)}</code></td>"
                    f"<td>{_highlight(m.content[a:b], terms, local)}</td></tr>")
    return rows


def _context_table(rows: Sequence[str]) -> str:
    """A handoff's context rows as a table, or a "no context passed" badge when there are none."""
    return f"<table>{''.join(rows)}</table>" if rows else \
        '<div class="badge">no context passed</div>'


def _warnings_html(warnings: Iterable[str]) -> str:
    """One ``⚠`` line per warning (an evidence span that is not where it says)."""
    return "".join(f'<div class="warn">⚠ {_e(w)}</div>' for w in warnings)


def _agents_arrow(from_agent: str, to_agent: str, colors: Mapping[str, str]) -> str:
    """``from → to`` of a handoff, each agent in its colour."""
    return (f'<span style="color:{colors.get(from_agent, "#999")}">{_e(from_agent)}</span> → '
            f'<span style="color:{colors.get(to_agent, "#999")}">{_e(to_agent)}</span>')


def entry_html(m: Any, colors: Mapping[str, str], *, terms: Sequence[tuple[str, str]] = (),
               marks: Sequence[tuple[int, int, str, str]] = (), warnings: Sequence[str] = (),
               anchor: str | None = None, role: str = "", badges: str = "", lane: int = 0,
               side: str | None = None, body: str | None = None) -> str:
    """One entry of the conversation view as an escaped ``<div>``, drawn by its kind.

    ``side`` is ``"evidence"`` (the receiving agent's own entry) or ``"context"`` (the user's
    or another agent's; dimmed, tagged "context") in a retention item, None elsewhere.
    ``body`` replaces the rendered content (already escaped HTML of ``m.content``: a caller
    with marks of its own).

    >>> m = Message("billing", 'pay(ref="<b>")', 3, kind="tool_call", tool="pay", part=1,
    ...             fields=(("arguments.ref", 9, 12),))
    >>> out = entry_html(m, {}, anchor="t3-p1")
    >>> 'class="ev call"' in out, 'id="t3-p1"' in out, "&lt;b&gt;" in out, "<b>" in out
    (True, True, True, False)
    """
    kind = getattr(m, "kind", "user" if m.is_user else "text")
    ti = int(m.turn_index)
    part = int(getattr(m, "part", 0) or 0)
    attrs = f' id="{_e(anchor)}"' if anchor else ""
    attrs += f' data-kind="{_e(kind)}" data-turn="{ti}" data-part="{part}"'
    extra, tag = "", ""
    if side == "context":
        extra, tag = " ctx-entry", '<span class="tag ctx">context</span>'
        attrs += ' data-side="context"'
    elif side == "evidence":
        extra = " evid-entry"
        attrs += ' data-side="evidence"'
    warn = _warnings_html(warnings)
    when = f'<span class="ti">#{_e(ti)}</span>'
    margin = f"margin-left:{min(lane, 8) * 22}px"
    text = body if body is not None else _highlight(m.content, terms, marks)
    if kind == "user" or m.is_user:
        return (f'<div class="ev user{extra}"{attrs}>{tag}<span class="who">user</span>'
                f"{badges}{when}\n{text}{warn}</div>")
    color = colors.get(m.speaker, "#999")
    who = f'<span class="who" style="color:{color}">{_e(m.speaker)}</span>'
    if kind == "tool_call":
        attrs += f' data-tool="{_e(m.tool or "")}"'
        return (f'<div class="ev call{extra}"{attrs} style="border-left-color:{color};{margin}">'
                f'{tag}<span class="tag call">call</span>{who}{badges}{when}'
                f'<code class="mono">{text}</code>{warn}</div>')
    if kind == "tool_result":
        attrs += f' data-tool="{_e(m.tool or "")}"'
        src = (f"{_e(m.tool)} returned" if m.tool else "tool output") + \
            f" (to {_e(m.speaker)})"
        return (f'<div class="ev result{extra}"{attrs} style="{margin}">'
                f'{tag}<span class="tag result">result</span><span class="src">{src}</span>'
                f'{badges}{when}<code class="mono">{text}</code>{warn}</div>')
    if kind == "handoff":
        ctx = _context_table(_context_rows(m, terms, marks))
        if body is not None:
            ctx = f'<code class="mono">{body}</code>'
        return (f'<div class="ho{extra}"{attrs}>{tag}<span class="arrow">⇢ handoff: '
                f'{_agents_arrow(m.speaker, m.tool or "", colors)}</span>{badges}'
                f' <span class="badge">#{_e(ti)}</span>{ctx}{warn}</div>')
    r = f'<span class="badge">{_e(role)}</span>' if role else ""
    return (f'<div class="ev turn{extra}"{attrs} style="border-left-color:{color};{margin}">'
            f"{tag}{who}{r}{badges}{when}\n{text}{warn}</div>")


def evidence_excerpt_html(m: Any, start: int, end: int, *, width: int = 60,
                          label: str | None = None) -> str:
    """A compact, escaped excerpt of one entry around ``content[start:end]``, the span in a
    ``<mark class="evidence">`` — for a table row or a verdict box.

    >>> m = Message("billing", "Your ref <BK-1> is booked", 3)
    >>> evidence_excerpt_html(m, 9, 15)
    '<span class="excerpt"><span class="src">billing · turn 3 · text</span> Your ref <mark class="evidence">&lt;BK-1&gt;</mark> is booked</span>'
    """
    text = m.content
    start, end = max(0, start), min(len(text), end)
    lo, hi = max(0, start - width), min(len(text), end + width)
    head = ("…" if lo else "") + _e(text[lo:start])
    tail = _e(text[end:hi]) + ("…" if hi < len(text) else "")
    cls = f"evidence {label}" if label in LABEL_COLORS else "evidence"
    kind = getattr(m, "kind", "text")
    where = f"{_e(m.speaker)} · turn {_e(m.turn_index)} · {_e(kind)}"
    field = m.field_at(start, end) if hasattr(m, "field_at") else ""
    if field and field != "text":
        where += f" › {_e(field)}"
    body = f'{head}<mark class="{cls}">{_e(text[start:end])}</mark>{tail}'
    if kind in ("tool_call", "tool_result"):
        body = f'<code class="mono">{body}</code>'
    return f'<span class="excerpt"><span class="src">{where}</span> {body}</span>'
