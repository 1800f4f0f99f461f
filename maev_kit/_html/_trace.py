"""HTML for traces and retention items — plain strings, no widget library.

Both render the conversation view judges read (:func:`maev_kit.traces.conversation_view`),
entry by entry and by kind: user text, agent text, tool calls (a monospaced "call" row: the
tool's name and arguments), tool results (a "result" row, never drawn as the agent speaking)
and handoffs with the context they passed. Each entry carries an anchor
(:func:`entry_anchor`, ``id="t5-p1"``) and, given a verdict's evidence span, the exact
characters it names are wrapped in ``<mark class="evidence ...">`` — so what a page shows and
what a verdict rests on cannot silently differ. In a retention item the receiving agent's
entries are the evidence; the user's and other agents' are marked as context.

Every piece of trace text (messages, agent ids, context keys and values, tool names and
arguments, tool results, facts, rationales) goes through :func:`maev_kit._html.esc` before it
reaches the page: trace text is untrusted, and the notebook's HTML output runs scripts and
``onerror`` handlers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from maev_kit._html import esc as _e
from maev_kit.traces._model import register_html_view
from maev_kit.traces._view import Message, conversation_view

if TYPE_CHECKING:
    from maev_kit.metrics import HandoffContract

__all__ = ["DEFAULT_PAGE_SIZE", "ENTRY_KIND_NAMES", "PALETTE", "agent_colors", "anchor_prefix",
           "entry_anchor", "entry_anchors", "entry_css", "entry_html", "evidence_excerpt_html",
           "fact_terms", "find_entry", "item_html", "trace_html"]

#: Events per page of a long trace.
DEFAULT_PAGE_SIZE = 200

#: One colour per agent lane (colour-blind-friendly order, Okabe–Ito then Tableau).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7F7F7F",
           "#BCBD22", "#8C564B", "#17BECF")

LABEL_COLORS = {"retained": "#1a7f37", "lost": "#b35900", "contradicted": "#cf222e",
                "skip": "#6e7781", "re-asked": "#8250df", "stated": "#0969da"}

def entry_css(scope: str) -> str:
    """The CSS of view entries that every drawing shares (a tool call's row, monospaced
    arguments, the kind tags), under the class ``scope`` (``"maev-tv"``, ``"maev-fr"``)."""
    return (f".{scope} .ev.call{{background:#eef1f4}}\n"
            f".{scope} .mono{{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,"
            "Consolas,monospace;\n font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;"
            "margin-top:1px}\n"
            f".{scope} .tag{{display:inline-block;font-size:10.5px;font-weight:600;"
            "text-transform:uppercase;\n letter-spacing:.3px;padding:0 5px;border-radius:3px;"
            "margin-right:6px;border:1px solid #d0d7de;\n color:#57606a;background:#fff}\n"
            f".{scope} .tag.call{{color:#0550ae;border-color:#0550ae}}\n")


TRACE_CSS = """
.maev-tv{font-family:system-ui,-apple-system,Segoe UI,sans-serif;font-size:13px;line-height:1.4;
 color:#1f2328;max-width:980px}
.maev-tv .hdr{display:flex;flex-wrap:wrap;gap:6px 14px;align-items:center;margin:4px 0 8px}
.maev-tv .cid{font-weight:600}
.maev-tv .chip{display:inline-block;padding:0 7px;border-radius:9px;font-size:11.5px;
 color:#fff;white-space:nowrap}
.maev-tv .ev{margin:3px 0;padding:4px 8px;border-left:4px solid #ccc;border-radius:3px;
 background:#f6f8fa;white-space:pre-wrap;overflow-wrap:anywhere}
.maev-tv .ev .who{font-weight:600;font-size:11.5px;margin-right:6px}
.maev-tv .ev .ti{color:#6e7781;font-size:11px;float:right}
.maev-tv .ev.user{background:#fff8c5;border-left-color:#9a6700;margin-left:0!important}
.maev-tv .ho{margin:6px 0;padding:4px 8px;border:1px dashed #57606a;border-radius:4px;
 background:#fff;white-space:normal}
.maev-tv .ho.loop{border:2px solid #cf222e;background:#fff0f0}
.maev-tv .ho .arrow{font-weight:600}
.maev-tv .ho table{border-collapse:collapse;margin-top:3px;font-size:12px}
.maev-tv .ho td{padding:0 8px 0 0;vertical-align:top}
.maev-tv .missing{color:#cf222e;font-weight:600}
.maev-tv details.tool{margin-top:3px;font-size:12px}
.maev-tv details.tool pre,.maev-tv pre{margin:2px 0;white-space:pre-wrap}
.maev-tv mark{background:#ddf4ff;padding:0 1px;border-radius:2px}
.maev-tv mark.retained{background:#dafbe1}.maev-tv mark.contradicted{background:#ffebe9}
.maev-tv .badge{font-size:11px;margin-left:6px}
.maev-tv .fact{font-size:15px;padding:6px 10px;background:#ddf4ff;border-radius:4px;margin:4px 0}
.maev-tv .more{color:#57606a;font-style:italic;margin:6px 0}
.maev-tv .facts{margin:2px 0 6px;padding-left:18px}
.maev-tv .ev.result{background:#fff;border-left-style:dotted;border-left-color:#8c959f;
 color:#24292f}
.maev-tv .tag.result{color:#57606a;border-style:dotted}
.maev-tv .tag.ctx{color:#6e7781}
.maev-tv .src{font-size:11.5px;color:#57606a;margin-right:6px}
.maev-tv .ctx-entry{opacity:.6}
.maev-tv .evid-entry{box-shadow:inset 0 0 0 1px #d0d7de}
.maev-tv mark.evidence{background:#ffd33d;outline:2px solid #bf8700;border-radius:2px}
.maev-tv mark.evidence.retained{background:#aceebb;outline-color:#1a7f37}
.maev-tv mark.evidence.contradicted{background:#ffcecb;outline-color:#cf222e}
.maev-tv .warn{color:#9a6700;font-size:11.5px}
.maev-tv .legend{color:#57606a;font-size:11.5px;margin:4px 0}
.maev-tv :target{box-shadow:0 0 0 3px #0969da}
""" + entry_css("maev-tv")


def agent_colors(agents: Sequence[str]) -> dict[str, str]:
    """One colour per agent, in the order given (cycling through :data:`PALETTE`)."""
    return {a: PALETTE[i % len(PALETTE)] for i, a in enumerate(dict.fromkeys(agents))}


def _plural(n: int, word: str) -> str:
    """``1 problem``, ``2 problems``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _chip(text: str, color: str, title: str = "") -> str:
    t = f' title="{_e(title)}"' if title else ""
    return f'<span class="chip" style="background:{color}"{t}>{_e(text)}</span>'


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


# --------------------------------------------------------------------------- contracts, loops
@dataclass(frozen=True)
class _Problem:
    """One thing wrong with a handoff's context, as the metrics found it."""

    kind: str  # "missing_key", "wrong_type" or "no_contract"
    key: str
    why: str


def _is_expectations(contracts: Any) -> bool:
    if hasattr(contracts, "handoffs") and hasattr(contracts, "key_facts"):
        return True  # ConversationExpectations
    return (isinstance(contracts, Sequence) and not isinstance(contracts, (str, bytes))
            and bool(contracts)
            and all(hasattr(c, "expected_target") for c in contracts))


def _expectation_problems(expected: Any, trace: Any
                          ) -> tuple[dict[int, list[_Problem]], list[dict[str, Any]]]:
    """Missing keys per handoff and the expected handoffs never made, paired with the actual
    handoffs exactly as :func:`maev_kit.metrics.score_handoff_accuracy` pairs them."""
    from maev_kit.metrics import score_handoff_accuracy

    exps = list(getattr(expected, "handoffs", expected))
    if not exps:
        return {}, []
    details = score_handoff_accuracy(trace, exps).handoff_details
    out: dict[int, list[_Problem]] = {}
    never_made = []
    for d in details:
        if d.actual_index is None:
            never_made.append(d.to_dict())
            continue
        for key in d.missing_context_keys:
            out.setdefault(d.actual_index, []).append(_Problem(
                "missing_key", key, f"missing (required by expected handoff "
                f"{d.expected_index} to {d.expected_target})"))
    return out, never_made


def _as_contract_list(contracts: Any) -> Any:
    """``{(from_agent, to_agent) or to_agent: [keys]}`` → HandoffContracts; others unchanged."""
    if not isinstance(contracts, Mapping):
        return contracts
    from maev_kit.metrics import HandoffContract

    out = []
    for k, keys in contracts.items():
        src, dst = k if isinstance(k, tuple) else ("*", k)
        out.append(HandoffContract(src, dst, required_context_keys=cast("tuple[str, ...]", list(keys))))  # __post_init__ tuples it
    return out


def _contract_problems(contracts: Any, trace: Any
                       ) -> tuple[dict[int, list[_Problem]], list[dict[str, Any]]]:
    """Per handoff index, what is wrong with its context; and the expected handoffs never made.

    Expectations are paired with the handoffs by
    :func:`~maev_kit.metrics.score_handoff_accuracy`; contracts are checked by
    :func:`~maev_kit.metrics.contract_violations_by_handoff`: the view marks exactly what the
    metrics count.
    """
    if contracts is None:
        return {}, []
    if _is_expectations(contracts):
        return _expectation_problems(contracts, trace)
    from maev_kit.metrics import contract_violations_by_handoff

    out: dict[int, list[_Problem]] = {}
    for i, found in contract_violations_by_handoff(trace, _as_contract_list(contracts)).items():
        for v in found:
            if v.kind == "missing_key":
                broken = cast("HandoffContract", v.contract)  # only "no_contract" has none
                why = f"missing (required by contract {broken.label()!r})"
            elif v.kind == "wrong_type":
                why = f"should be {' or '.join(v.expected_types)}, got {v.actual_type}"
            else:
                why = "no contract covers this handoff"
            out.setdefault(i, []).append(_Problem(v.kind, v.key or "", why))
    return out, []


def _loop_handoffs(trace: Any) -> set[int]:
    """Indices of handoffs in a circular handoff (ping-pong or cycle), per
    :func:`maev_kit.metrics.detect_circular_handoffs`."""
    try:
        from maev_kit.metrics import detect_circular_handoffs
    except ImportError:  # pragma: no cover - the metrics area is part of the kit
        return set()
    try:
        found = detect_circular_handoffs(trace)
    except Exception:  # noqa: BLE001 - a metric must never break the view
        return set()
    return {int(i) for loop in found.loops for i in loop.handoff_indices}


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


# ``MultiAgentTrace._repr_html_`` draws with this view: the model asks, never imports it.
register_html_view(trace_html)
