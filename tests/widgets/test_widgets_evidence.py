"""Every view shows the conversation view judges read, and the evidence a verdict rests on.

Tool calls and results drawn by kind (a call row, a result row — never the agent speaking),
the receiver's entries marked as evidence and the others' as context, a verdict's span marked
character for character in the entry it names, all trace text escaped.
"""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

import pytest

from maev_kit.facts import ProposedFact
from maev_kit.facts._review import FactUnderReview, HandoffUnderReview, Span
from maev_kit.judges import Verdict
from maev_kit.retention import build_retention_items, locate
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.widgets import Labeler
from maev_kit.widgets._fact_reviewer import review_html
from maev_kit.widgets._render import item_html, trace_html

ACCT = "ACCT-4471-9920"
FACT = f"Account number is {ACCT}"


def tool_trace(name: str = "lookup_invoices", key: str = "account_number", value: str = ACCT,
               output: object = None) -> MultiAgentTrace:
    """The receiver (billing) never says the account number: it only calls a tool with it."""
    output = {"invoices": [{"id": "INV-1", "amount": 40}]} if output is None else output
    return MultiAgentTrace(
        "c-tool", user_messages=[f"My account number is {ACCT}, I was charged twice."],
        turns=[AgentTurn("triage", "router", "Let me pass you to billing.", turn_index=1),
               AgentTurn("billing", "specialist", "",
                         [{"name": name, "arguments": {key: value}, "output": output}],
                         turn_index=3),
               AgentTurn("triage", "router", "Triage here: billing has it.", turn_index=4),
               AgentTurn("billing", "specialist", "I found two invoices; refunding one.",
                         turn_index=5)],
        handoffs=[Handoff("triage", "billing", "specialization", {"reason": "billing"},
                          turn_index=2)])


def item_of(trace: MultiAgentTrace, text: str = FACT):
    [item] = build_retention_items([trace], [{"conversation_id": trace.conversation_id,
                                              "key_facts": [{"fact_id": "f1",
                                                             "handoff_index": 0,
                                                             "text": text}]}])
    return item


class Divs(HTMLParser):
    """Each ``<div>`` of a fragment: its attributes and the text inside it (nested included)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.divs: list[dict] = []
        self.stack: list[dict] = []
        self.tags: list[tuple[str, dict]] = []
        self.in_style = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        self.in_style = tag == "style"
        if tag == "div":
            d = {"attrs": a, "text": "", "html_start": self.getpos()}
            self.divs.append(d)
            self.stack.append(d)

    def handle_endtag(self, tag):
        self.in_style = False
        if tag == "div" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if self.in_style:
            return
        for d in self.stack:
            d["text"] += data


def divs(out: str) -> Divs:
    p = Divs()
    p.feed(out)
    p.close()
    return p


def entry_div(out: str, **want: str) -> dict:
    """The one entry ``<div>`` whose attributes include ``want`` (e.g. data_kind="tool_call")."""
    want = {k.replace("_", "-"): v for k, v in want.items()}
    found = [d for d in divs(out).divs
             if all(d["attrs"].get(k) == v for k, v in want.items())]
    assert len(found) == 1, (want, len(found))
    return found[0]


def div_html(out: str, anchor: str) -> str:
    """The raw HTML of the entry ``<div id="anchor">`` (entries hold no nested divs but the
    warning line)."""
    m = re.search(rf'<div [^>]*id="{re.escape(anchor)}"[^>]*>(.*?)</div>', out, re.S)
    assert m, anchor
    return m.group(0)


def call_html(out: str) -> str:
    m = re.search(r'<div [^>]*data-kind="tool_call".*?</div>', out, re.S)
    assert m
    return m.group(0)


# --------------------------------------------------------------------------- tool calls
def test_labeler_item_shows_the_receivers_tool_call_carrying_the_fact(tmp_path):
    item = item_of(tool_trace())
    lab = Labeler([item], tmp_path / "labels.jsonl", annotator="ana", order="given")
    v = lab.item_view.value
    call = entry_div(v, data_kind="tool_call")
    assert "ev" in call["attrs"]["class"].split() and "call" in call["attrs"]["class"].split()
    assert call["attrs"]["data-tool"] == "lookup_invoices"
    assert f'lookup_invoices(account_number="{ACCT}")' in call["text"]
    assert call["attrs"].get("data-side") == "evidence"  # billing's own entry
    # the arguments are shown escaped, monospaced
    plain = re.sub(r"</?mark[^>]*>", "", v)  # the fact's terms are highlighted
    assert f'<code class="mono">lookup_invoices(account_number=&quot;{ACCT}&quot;)' in plain
    assert f'<mark class="">{ACCT}</mark>' in call_html(v)
    # and what the tool returned is a result row, not billing speaking
    res = entry_div(v, data_kind="tool_result")
    assert "result" in res["attrs"]["class"].split() and "turn" not in res["attrs"]["class"]
    assert "INV-1" in res["text"]


def test_tool_results_are_results_not_agent_speech():
    t = tool_trace()
    t.turns.append(AgentTurn("tool", "tool", '{"status": "refunded INV-1"}', turn_index=6))
    out = trace_html(t)
    results = [d for d in divs(out).divs if d["attrs"].get("data-kind") == "tool_result"]
    assert len(results) == 2
    for d in results:
        cls = d["attrs"]["class"].split()
        assert "result" in cls and "turn" not in cls
        assert "RESULT" in d["text"].upper()
    assert "refunded INV-1" in results[1]["text"] and "INV-1" in results[0]["text"]
    # no agent-speech row holds a tool's output
    speech = [d for d in divs(out).divs if d["attrs"].get("data-kind") == "text"]
    assert not any("INV-1" in d["text"] or '"invoices"' in d["text"] for d in speech)
    # the call is a call row with the tool's name and arguments
    call = entry_div(out, data_kind="tool_call")
    assert "call" in call["attrs"]["class"].split()
    assert f'lookup_invoices(account_number="{ACCT}")' in call["text"]


def test_handoff_entries_show_the_context_passed():
    item = item_of(tool_trace())
    out = item_html(item)
    ho = entry_div(out, data_kind="handoff")
    assert "triage → billing" in ho["text"] and "reason" in ho["text"]
    assert "billing" in ho["text"]


# --------------------------------------------------------------------------- evidence / context
def test_receiver_entries_are_evidence_and_others_are_context():
    item = item_of(tool_trace())
    out = item_html(item)
    triage = entry_div(out, data_kind="text", data_turn="4")
    assert triage["attrs"]["data-side"] == "context"
    assert "ctx-entry" in triage["attrs"]["class"] and triage["text"].startswith("context")
    billing = entry_div(out, data_kind="text", data_turn="5")
    assert billing["attrs"]["data-side"] == "evidence"
    assert not billing["text"].startswith("context")
    # the entries before the handoff are neither
    user = entry_div(out, data_kind="user")
    assert "data-side" not in user["attrs"]


# --------------------------------------------------------------------------- evidence span
def test_span_marks_exactly_its_characters_in_the_right_entry():
    item = item_of(tool_trace())
    span = locate(item.evidence, ACCT)
    assert (span.kind, span.field) == ("tool_call", "arguments.account_number")
    out = item_html(item, span=span)
    marks = re.findall(r'<mark class="evidence[^"]*"[^>]*>(.*?)</mark>', out)
    assert marks == [ACCT]
    anchor = f"t{span.turn_index}-p{span.part}"
    entry = div_html(out, anchor)
    assert 'data-kind="tool_call"' in entry and '<mark class="evidence' in entry
    # offsets count: a span of the first 4 characters of the value marks just those
    part = Verdict(item.item_id, "retained", span=type(span)(
        span.turn_index, span.part, span.kind, span.speaker, span.field, span.start,
        span.start + 4, ACCT[:4]))
    out2 = item_html(item, verdict=part)
    assert re.findall(r'<mark class="evidence[^"]*"[^>]*>(.*?)</mark>', out2) == ["ACCT"]
    assert 'class="evidence retained"' in out2


def test_a_span_that_does_not_fit_its_entry_is_flagged_not_hidden():
    item = item_of(tool_trace())
    span = locate(item.evidence, ACCT)
    wrong = type(span)(span.turn_index, span.part, span.kind, span.speaker, span.field,
                       span.start + 1, span.end + 1, span.text)
    out = item_html(item, span=wrong)
    assert '<mark class="evidence' not in out
    assert "is not at characters" in html.unescape(out)


def test_labeler_marks_the_judges_span_only_once_revealed(tmp_path):
    item = item_of(tool_trace())
    span = locate(item.evidence, ACCT)
    v = Verdict(item.item_id, "retained", "billing looked it up", span=span)
    lab = Labeler([item], tmp_path / "labels.jsonl", annotator="ana", order="given",
                  verdicts=[v])
    assert "<mark class=\"evidence" not in lab.item_view.value  # blind
    lab.buttons["lost"].click()
    lab.previous_button.click()  # back to the labeled item
    assert "<mark class=\"evidence" not in lab.item_view.value
    lab.reveal_button.click()
    out = lab.item_view.value
    assert re.findall(r'<mark class="evidence[^"]*"[^>]*>(.*?)</mark>', out) == [ACCT]
    assert '<mark class="evidence' in div_html(out, f"t{span.turn_index}-p{span.part}")
    # the verdict box quotes the entry, the span marked
    vv = lab.verdict_view.value
    assert "judge says" in vv and f'<mark class="evidence retained">{ACCT}</mark>' in vv
    assert "arguments.account_number" in vv


# --------------------------------------------------------------------------- escaping
HOSTILE_NAME = "<script>window.__xss=1</script>"
HOSTILE_KEY = '"><img src=x onerror="window.__xss=2">'
HOSTILE_VALUE = f'{ACCT} "quoted" \'single\' <script>alert(1)</script>'
HOSTILE_OUTPUT = '</div></code><img src=x onerror="window.__xss=3"> "out"'


def assert_safe(out: str) -> None:
    p = divs(out)
    names = {t for t, _ in p.tags}
    assert "script" not in names and "img" not in names
    assert not [k for _, a in p.tags for k in a if k.startswith("on")]
    assert out.count("<div") == out.count("</div>")


def test_hostile_tool_names_arguments_and_outputs_are_escaped(tmp_path):
    t = tool_trace(HOSTILE_NAME, HOSTILE_KEY, HOSTILE_VALUE, HOSTILE_OUTPUT)
    item = item_of(t)
    span = locate(item.evidence, ACCT)
    outs = [trace_html(t, spans=[span]), item_html(item, span=span),
            Labeler([item], tmp_path / "l.jsonl", annotator="ana").item_view.value]
    for out in outs:
        assert_safe(out)
        call = entry_div(out, data_kind="tool_call")
        assert call["attrs"]["data-tool"] == HOSTILE_NAME  # the attribute is escaped
        for s in (HOSTILE_NAME, HOSTILE_KEY, ACCT, "<script>alert(1)</script>"):
            assert s in call["text"]
        res = entry_div(out, data_kind="tool_result")
        assert HOSTILE_OUTPUT in res["text"] and "result" in res["attrs"]["class"]
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in out
        assert "&quot;quoted&quot;" in out and "&#x27;single&#x27;" in out


# --------------------------------------------------------------------------- fact reviewer
def test_fact_reviewer_shows_tool_calls_and_results_before_the_handoff():
    t = MultiAgentTrace(
        "c-fr", user_messages=["Please check my order."],
        turns=[AgentTurn("triage", "router", "Looking it up.",
                         [{"name": "find_order", "arguments": {"email": "a@b.c"},
                           "output": {"order": "ORD-77 <b>"}}], turn_index=1)],
        handoffs=[Handoff("triage", "billing", None, {"order": "ORD-77"}, turn_index=2)])
    before = tuple(t.messages())
    res = next(i for i, m in enumerate(before) if m.kind == "tool_result")
    start = before[res].content.index("ORD-77")
    f = ProposedFact("c-fr", 0, "p-1", "Order is ORD-77", "ORD-77", "identifier", 1, "offline")
    h = HandoffUnderReview("c-fr", 0, "triage", "billing", before,
                           (FactUnderReview(f, f, None, Span(res, start, start + 6)),))
    out = review_html(h, h.facts[0])
    assert_safe(out)
    call = entry_div(out, data_kind="tool_call")
    assert "call" in call["attrs"]["class"].split()
    assert 'find_order(email="a@b.c")' in call["text"]
    result = entry_div(out, data_kind="tool_result")
    assert "result" in result["attrs"]["class"].split() and "ORD-77 <b>" in result["text"]
    # the fact's value is marked where the agent learned it: in the tool's result
    assert re.search(r'data-kind="tool_result".*?<mark class="focus">ORD-77</mark>', out,
                     re.S)
    assert "&lt;b&gt;" in out
    # the handoff closes the view with the context it passed
    assert 'order="ORD-77"' in html.unescape(out.split("messages before the handoff")[1])


@pytest.mark.parametrize("anchors", ["", "cab-"])
def test_trace_entries_have_anchor_ids(anchors):
    t = tool_trace()
    out = trace_html(t, anchors=anchors)
    ids = re.findall(r' id="([^"]+)"', out)
    assert f"{anchors}t3-p0" in ids and f"{anchors}t2-h0" in ids and f"{anchors}t0-p0" in ids
    assert len(ids) == len(set(ids))
    assert ' id="' not in trace_html(t, anchors=None)
