"""HTML for traces and retention items — plain strings, no widget library.

Every piece of trace text (messages, agent ids, context keys and values, tool calls, facts,
rationales) goes through :func:`maev_kit._html.esc` before it reaches the page: trace text is
untrusted, and the notebook's HTML output runs scripts and ``onerror`` handlers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit._html import esc as _e

__all__ = ["DEFAULT_PAGE_SIZE", "PALETTE", "agent_colors", "fact_terms", "item_html", "trace_html"]

#: Events per page of a long trace.
DEFAULT_PAGE_SIZE = 200

#: One colour per agent lane (colour-blind-friendly order, Okabe–Ito then Tableau).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7F7F7F",
           "#BCBD22", "#8C564B", "#17BECF")

LABEL_COLORS = {"retained": "#1a7f37", "lost": "#b35900", "contradicted": "#cf222e",
                "skip": "#6e7781", "re-asked": "#8250df", "stated": "#0969da"}

_CSS = """
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
"""


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
    out = {}
    for iid, v in pairs:
        if iid is None:
            continue
        if v is None or isinstance(v, str):
            out[iid] = (v, ())
        else:
            out[iid] = (getattr(v, "label", None), tuple(getattr(v, "evidence", ()) or ()))
    return out


def _highlight(text: str, terms: Sequence[tuple[str, str]]) -> str:
    """Escape ``text``, wrapping each occurrence of a term in ``<mark class=...>``."""
    if not terms:
        return _e(text)
    pattern = re.compile("|".join(re.escape(t) for t, _ in sorted(terms, key=lambda x: -len(x[0]))),
                         re.IGNORECASE)
    cls = {t.lower(): c for t, c in terms}
    out, pos = [], 0
    for m in pattern.finditer(text):
        out.append(_e(text[pos:m.start()]))
        out.append(f'<mark class="{cls.get(m.group(0).lower(), "")}">{_e(m.group(0))}</mark>')
        pos = m.end()
    out.append(_e(text[pos:]))
    return "".join(out)


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
    details = score_handoff_accuracy(trace, exps)["handoff_details"]
    out: dict[int, list[_Problem]] = {}
    never_made = []
    for d in details:
        if d["actual_index"] is None:
            never_made.append(d)
            continue
        for key in d["missing_context_keys"]:
            out.setdefault(d["actual_index"], []).append(_Problem(
                "missing_key", key, f"missing (required by expected handoff "
                f"{d['expected_index']} to {d['expected_target']})"))
    return out, never_made


def _as_contract_list(contracts: Any) -> Any:
    """``{(from_agent, to_agent) or to_agent: [keys]}`` → HandoffContracts; others unchanged."""
    if not isinstance(contracts, Mapping):
        return contracts
    from maev_kit.metrics import HandoffContract

    out = []
    for k, keys in contracts.items():
        src, dst = k if isinstance(k, tuple) else ("*", k)
        out.append(HandoffContract(src, dst, required_context_keys=list(keys)))
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
                why = f"missing (required by contract {v.contract.label()!r})"
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
    loops = found.get("loops", []) if isinstance(found, Mapping) else found
    return {int(i) for loop in loops or [] for i in loop.get("handoff_indices", [])}


# --------------------------------------------------------------------------- trace
def _events(trace: Any) -> list[tuple[str, Any, int]]:
    hidx = {id(h): i for i, h in enumerate(trace.handoffs)}
    out = []
    for e in trace.timeline():
        kind = type(e).__name__
        out.append((kind, e, hidx.get(id(e), -1)))
    return out


def _tool_calls_html(calls: Sequence[Any]) -> str:
    parts = []
    for c in calls:
        name = None
        if isinstance(c, Mapping):
            fn = c.get("function")
            name = c.get("name") or (fn.get("name") if isinstance(fn, Mapping) else None)
        try:
            body = json.dumps(c, indent=1, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            body = repr(c)
        parts.append(f'<details class="tool"><summary>tool call {_e(name or "")}</summary>'
                     f"<pre>{_e(body)}</pre></details>")
    return "".join(parts)


def trace_html(trace: Any, *, facts: Any = None, verdicts: Any = None, contracts: Any = None,
               page: int | None = None, page_size: int = DEFAULT_PAGE_SIZE) -> str:
    """A multi-agent conversation as one self-contained, escaped HTML fragment.

    One lane and colour per agent, user messages set apart, tool calls collapsed, each handoff
    a marker (from → to, reason, mode, the context passed), missing contract keys and
    circular handoffs in red, key facts highlighted where stated and — given judge
    ``verdicts`` — where they were retained, re-asked or contradicted.

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
    events = _events(trace)
    n = len(events)
    if page_size < 1:
        raise ValueError(f"`page_size` must be at least 1, got {page_size!r}")
    n_pages = max(1, -(-n // page_size))
    if page is not None and not 0 <= page < n_pages:
        raise ValueError(f"`page` must be between 0 and {n_pages - 1}, got {page!r}")

    cid = trace.conversation_id
    agents = list(dict.fromkeys([*trace.agents_involved(),
                                 *(a for h in trace.handoffs for a in (h.from_agent, h.to_agent))]))
    colors = agent_colors(agents)
    lane = {a: i for i, a in enumerate(agents)}
    fact_list = _normalize_facts(facts, cid, verdicts)
    problems, never_made = _contract_problems(contracts, trace)
    loops = _loop_handoffs(trace)

    # handoff boundaries (turn_index) in order, to place each fact's before/after window
    h_order = sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index)
    next_ti = {i: (trace.handoffs[h_order[r + 1]].turn_index if r + 1 < len(h_order)
                   else float("inf")) for r, i in enumerate(h_order)}

    def marks_for(ti: int, text: str, is_user: bool) -> tuple[list[tuple[str, str]], list[str]]:
        terms: list[tuple[str, str]] = []
        badges: list[str] = []
        for f in fact_list:
            h = trace.handoffs[f.handoff_index] if f.handoff_index is not None and \
                0 <= f.handoff_index < len(trace.handoffs) else None
            low = text.lower()
            hit = any(t.lower() in low for t in f.terms)
            if h is None or ti <= h.turn_index:
                if hit:
                    terms += [(t, "") for t in f.terms]
                    badges.append(_chip(f"{f.fact_id} stated", LABEL_COLORS["stated"], f.text))
                continue
            if not ti <= next_ti[f.handoff_index] or is_user:
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

    def render_event(kind: str, e: Any, hi: int) -> str:
        if kind == "UserMessage":
            terms, badges = marks_for(e.turn_index, e.content, True)
            return (f'<div class="ev user"><span class="who">user</span>{"".join(badges)}'
                    f'<span class="ti">#{_e(e.turn_index)}</span>\n'
                    f"{_highlight(e.content, terms)}</div>")
        if kind == "AgentTurn":
            color = colors.get(e.agent_id, "#999")
            terms, badges = marks_for(e.turn_index, e.message, False)
            return (f'<div class="ev turn" style="border-left-color:{color};margin-left:'
                    f'{min(lane.get(e.agent_id, 0), 8) * 22}px">'
                    f'<span class="who" style="color:{color}">{_e(e.agent_id)}</span>'
                    f'<span class="badge">{_e(e.agent_role)}</span>{"".join(badges)}'
                    f'<span class="ti">#{_e(e.turn_index)}</span>\n'
                    f"{_highlight(e.message, terms)}{_tool_calls_html(e.tool_calls)}</div>")
        # Handoff
        reason = e.reason.value if e.reason is not None else "—"
        cls = "ho loop" if hi in loops else "ho"
        rows = []
        for k, v in e.context_passed.items():
            val = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            rows.append(f"<tr><td><code>{_e(k)}</code></td><td>{_e(val)}</td></tr>")
        miss = problems.get(hi, [])
        for p in miss:
            rows.append(f'<tr class="missing" data-kind="{_e(p.kind)}" data-key="{_e(p.key)}">'
                        f"<td><code>{_e(p.key)}</code></td><td>{_e(p.why)}</td></tr>")
        ctx = f"<table>{''.join(rows)}</table>" if rows else \
            '<div class="badge">no context passed</div>'
        facts_here = [f for f in fact_list if f.handoff_index == hi]
        fact_chips = "".join(
            _chip(f"{f.fact_id}: {f.label}" if f.label else f.fact_id,
                  LABEL_COLORS.get(f.label or "stated", "#0969da"), f.text) + " "
            for f in facts_here)
        loop = " " + _chip("circular handoff", "#cf222e") if hi in loops else ""
        missing = " " + _chip(f"contract: {_plural(len(miss), 'problem')}", "#cf222e") \
            if miss else ""
        fc, tc = colors.get(e.from_agent, "#999"), colors.get(e.to_agent, "#999")
        return (f'<div class="{cls}" data-handoff="{hi}"><span class="arrow">⇢ handoff {hi}: '
                f'<span style="color:{fc}">{_e(e.from_agent)}</span> → '
                f'<span style="color:{tc}">{_e(e.to_agent)}</span></span>'
                f' <span class="badge">reason: {_e(reason)} · mode: {_e(e.mode)} · '
                f"#{_e(e.turn_index)}</span>{loop}{missing}"
                f'{"<div>" + fact_chips + "</div>" if fact_chips else ""}{ctx}</div>')

    legend = " ".join(_chip(a, colors[a]) for a in agents)
    head = (f'<div class="hdr"><span class="cid">{_e(cid)}</span>'
            f"<span>{len(trace.turns)} turns · {len(trace.handoffs)} handoffs · "
            f"{len(trace.user_messages)} user messages</span>{legend}</div>")
    if fact_list:
        items = "".join(
            f"<li>{_e(f.fact_id)}"
            + (f" (handoff {_e(f.handoff_index)})" if f.handoff_index is not None else "")
            + f": {_e(f.text)}"
            + (" " + _chip(f.label, LABEL_COLORS.get(f.label, '#6e7781')) if f.label else "")
            + "</li>" for f in fact_list)
        head += f'<ul class="facts">{items}</ul>'
    for d in never_made:
        reason = f" ({d['expected_reason']})" if d["expected_reason"] else ""
        head += (f'<div class="missing" data-expected="{_e(d["expected_index"])}">expected '
                 f"handoff {_e(d['expected_index'])} to {_e(d['expected_target'])}{_e(reason)} "
                 "was never made</div>")

    if page is not None:
        lo, hi_ = page * page_size, min(n, (page + 1) * page_size)
        body = "".join(render_event(*ev) for ev in events[lo:hi_])
        if n_pages > 1:
            body = (f'<div class="more">events {lo + 1}–{hi_} of {n} (page {page + 1} of '
                    f"{n_pages})</div>{body}")
    else:
        chunks = []
        for p in range(n_pages):
            lo, hi_ = p * page_size, min(n, (p + 1) * page_size)
            inner = "".join(render_event(*ev) for ev in events[lo:hi_])
            chunks.append(inner if p == 0 else
                          f'<details><summary class="more">events {lo + 1}–{hi_} of {n}'
                          f"</summary>{inner}</details>")
        body = "".join(chunks)
    return f'<div class="maev-tv"><style>{_CSS}</style>{head}{body}</div>'


# --------------------------------------------------------------------------- items
def _message_html(m: Any, colors: Mapping[str, str], terms: Sequence[tuple[str, str]]) -> str:
    if m.is_user:
        return (f'<div class="ev user"><span class="who">user</span>'
                f'<span class="ti">#{_e(m.turn_index)}</span>\n'
                f"{_highlight(m.content, terms)}</div>")
    color = colors.get(m.speaker, "#999")
    return (f'<div class="ev turn" style="border-left-color:{color}">'
            f'<span class="who" style="color:{color}">{_e(m.speaker)}</span>'
            f'<span class="ti">#{_e(m.turn_index)}</span>\n{_highlight(m.content, terms)}</div>')


def item_html(item: Any, *, label: str | None = None, verdict: Any = None,
              position: tuple[int, int] | None = None) -> str:
    """One retention item for labeling: the fact, the messages before (collapsed), after.

    ``verdict`` (a Verdict or ShownVerdict) is shown when given — the caller decides when
    (the Labeler only passes it after the annotator has labeled the item).

    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> it = RetentionItem("c/h0/f1", "c", 0, "f1", "Account is ACCT-1",
    ...     (Message("user", "ACCT-1 </div>", 0, True),), (Message("billing", "Hi", 2),),
    ...     "triage", "billing")
    >>> out = item_html(it)
    >>> "&lt;/div&gt;" in out, out.count("<details") == 1
    (True, True)
    """
    speakers = [m.speaker for m in (*item.before, *item.after) if not m.is_user]
    colors = agent_colors([getattr(item, "from_agent", ""), getattr(item, "to_agent", ""),
                           *speakers])
    terms = [(t, "") for t in fact_terms(item.fact)]
    pos = f"item {position[0]} of {position[1]} · " if position else ""
    derived = " (derived from context)" if getattr(item, "derived", False) else ""
    before = "".join(_message_html(m, colors, terms) for m in item.before)
    after = "".join(_message_html(m, colors, terms) for m in item.after) or \
        '<div class="more">no messages after the handoff</div>'
    fa, ta = getattr(item, "from_agent", ""), getattr(item, "to_agent", "")
    ho = (f'<div class="ho"><span class="arrow">⇢ handoff {_e(item.handoff_index)}: '
          f'<span style="color:{colors.get(fa, "#999")}">{_e(fa)}</span> → '
          f'<span style="color:{colors.get(ta, "#999")}">{_e(ta)}</span></span></div>')
    lab = ""
    if label:
        lab = " " + _chip(f"your label: {label}", LABEL_COLORS.get(label, "#6e7781"))
    ver = ""
    if verdict is not None:
        vl = getattr(verdict, "label", None)
        err = getattr(verdict, "error", None)
        text = f"judge: {vl}" if vl else f"judge error: {err or 'no label'}"
        judge = getattr(verdict, "judge", "")
        ver = (f'<div class="ev" style="border-left-color:{LABEL_COLORS.get(vl or "", "#6e7781")}">'
               f'{_chip(text, LABEL_COLORS.get(vl or "", "#6e7781"), judge)}'
               f'{" " + _e(verdict.rationale) if getattr(verdict, "rationale", "") else ""}'
               "</div>")
    return (f'<div class="maev-tv"><style>{_CSS}</style>'
            f'<div class="hdr"><span>{pos}<span class="cid">{_e(item.item_id)}</span>{derived}'
            f"</span>{lab}</div>"
            f'<div class="fact">{_e(item.fact)}</div>'
            f"<details><summary>before the handoff ({len(item.before)} messages)</summary>"
            f"{before}</details>{ho}{after}{ver}</div>")
