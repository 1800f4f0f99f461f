"""trace_html / item_html: escaping, lanes, handoff markers, facts, contracts, loops, pages."""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from maev_kit.expectations import ConversationExpectations, HandoffExpectation, KeyFact
from maev_kit.metrics import HandoffContract
from maev_kit.retention import RetentionItem
from maev_kit.traces import AgentTurn, Handoff, Message, MultiAgentTrace, UserMessage
from maev_kit.widgets._render import PALETTE, fact_terms, item_html, trace_html

HOSTILE = ["<script>window.__xss=1</script>", '<img src=x onerror="window.__xss=1">', "</div>"]


class TagCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.depth = 0
        self.min_depth = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "div":
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "div":
            self.depth -= 1
            self.min_depth = min(self.min_depth, self.depth)


def assert_safe(out: str) -> None:
    """No tag or attribute came from trace text; every <div> closes where it should."""
    p = TagCollector()
    p.feed(out)
    assert "script" not in p.tags and "img" not in p.tags
    assert not [a for a, _ in p.attrs if a.startswith("on")]
    assert p.depth == 0 and p.min_depth == 0


def text_of(out: str) -> str:
    import html
    return html.unescape(re.sub(r"<style>.*?</style>|<[^>]*>", "", out, flags=re.S))


def hostile_trace() -> MultiAgentTrace:
    bad = " ".join(HOSTILE)
    return MultiAgentTrace(
        f"c-{HOSTILE[2]}",
        turns=[AgentTurn("triage" + HOSTILE[0], "router" + HOSTILE[1], "hello " + bad,
                         [{"name": HOSTILE[1], "arguments": {"q": HOSTILE[0]}}], 1),
               AgentTurn("billing", "specialist", bad, turn_index=3)],
        handoffs=[Handoff("triage" + HOSTILE[0], "billing", "escalation",
                          {HOSTILE[2]: HOSTILE[1], "n": [1, HOSTILE[0]]}, 2)],
        user_messages=[UserMessage(bad, 0)])


def test_trace_text_is_escaped_everywhere():
    t = hostile_trace()
    facts = [KeyFact("f" + HOSTILE[0], 0, "Code is " + HOSTILE[1])]
    contracts = {("*", "billing"): [HOSTILE[0]]}
    verdicts = {f"{t.conversation_id}/h0/f{HOSTILE[0]}": "contradicted"}
    out = trace_html(t, facts=facts, verdicts=verdicts, contracts=contracts)
    assert_safe(out)
    shown = text_of(out)
    for s in HOSTILE:
        assert s in shown  # shown as text
    assert "&lt;script&gt;" in out and "&lt;img src=x onerror=" in out


def test_item_text_is_escaped():
    bad = " ".join(HOSTILE)
    it = RetentionItem("c/h0/" + HOSTILE[0], "c", 0, "f", "fact " + bad,
                       (Message("user", bad, 0, True),), (Message("b" + HOSTILE[1], bad, 2),),
                       "a" + HOSTILE[2], "b" + HOSTILE[1])
    from maev_kit.labels import ShownVerdict
    out = item_html(it, label="lost", verdict=ShownVerdict(it.item_id, "lost", bad),
                    position=(1, 2))
    assert_safe(out)
    assert text_of(out).count(HOSTILE[1]) >= 4


def test_lanes_user_messages_tool_calls_and_handoff_marker(sample_trace):
    t = sample_trace
    t.turns[0].tool_calls = [{"name": "lookup_account", "arguments": {"id": 7}}]
    out = trace_html(t)
    assert_safe(out)
    # one colour per agent, in order of appearance
    assert f"border-left-color:{PALETTE[0]}" in out and f"border-left-color:{PALETTE[2]}" in out
    assert out.count('class="ev user"') == 1
    # a tool call is a row of its own, as the judge reads it (it was a collapsed JSON dump)
    assert re.search(r'<div class="ev call" [^>]*data-tool="lookup_account"[^>]*>.*?'
                     r'<code class="mono">lookup_account\(id=&quot;7&quot;\)</code>', out, re.S)
    text = text_of(out)
    assert "handoff 1: billing → tech" in text
    assert "reason: escalation · mode: transfer" in text
    assert "error_code" in text and "E42" in text
    assert "reason: — · mode: transfer" in text  # handoff 2 records no reason
    # 3 handoffs, 4 turns, 1 user message, in timeline order
    assert text.index("My bill is wrong") < text.index("Routing you") < text.index(
        "handoff 0") < text.index("Billing here")


def test_circular_handoffs_are_highlighted():
    t = MultiAgentTrace("c", handoffs=[Handoff("a", "b", turn_index=1),
                                       Handoff("b", "c", turn_index=2),
                                       Handoff("c", "a", turn_index=3)])
    out = trace_html(t)
    assert out.count('class="ho loop"') == 3 and "circular handoff" in out
    t2 = MultiAgentTrace("c", handoffs=[Handoff("a", "b", turn_index=1)])
    assert "ho loop" not in trace_html(t2) and "circular" not in trace_html(t2)


@pytest.mark.parametrize("contracts", [
    [HandoffContract("triage", "billing", required_context_keys=["account_number"])],
    {("triage", "billing"): ["account_number"]},
    ConversationExpectations("c-1", handoffs=[HandoffExpectation(
        "billing", required_context_keys=["account_number"])]),
])
def test_missing_contract_keys_are_highlighted(sample_trace, contracts):
    out = trace_html(sample_trace, contracts=contracts)
    assert out.count('class="missing"') == 1
    m = re.search(r'data-handoff="0".*?</div>', out, re.S)
    assert "account_number" in m.group(0) and "missing" in m.group(0)


def test_wrong_type_from_contract_check():
    t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "x", turn_index=0)],
                        handoffs=[Handoff("a", "b", None, {"amount": "12"}, 1)])
    out = trace_html(t, contracts=[HandoffContract(value_types={"amount": "number"})])
    assert "should be number, got string" in out


def test_facts_stated_retained_contradicted_and_reasked():
    t = MultiAgentTrace(
        "c1",
        user_messages=[UserMessage("My account number is ACCT-4471 and order 5512", 0)],
        turns=[AgentTurn("triage", "r", "Passing ACCT-4471 on", turn_index=1),
               AgentTurn("billing", "s", "Looking at ACCT-4471 now", turn_index=3),
               AgentTurn("billing", "s", "What is your order number?", turn_index=4),
               AgentTurn("billing", "s", "Your order 5521 shipped", turn_index=5)],
        handoffs=[Handoff("triage", "billing", None, {}, 2)])
    facts = [KeyFact("acct", 0, "Account number is ACCT-4471"),
             KeyFact("order", 0, "Order number is 5512")]
    verdicts = [type("V", (), {"item_id": "c1/h0/acct", "label": "retained", "evidence": ()})(),
                type("V", (), {"item_id": "c1/h0/order", "label": "contradicted",
                               "evidence": ("order 5521 shipped",)})()]
    plain = trace_html(t, facts=facts)
    assert plain.count("acct stated") == 2 and "<mark" in plain
    assert "retained" not in text_of(plain)
    out = trace_html(t, facts=facts, verdicts=verdicts)
    assert "acct retained" in out and 'mark class="retained"' in out
    assert "order re-asked" in out and "order contradicted" in out
    assert "order: contradicted" in text_of(out)  # on the handoff marker


def test_fact_terms():
    assert fact_terms("Account number is ACCT-4471") == ("ACCT-4471",)
    assert fact_terms("The user prefers email") == ("email",)
    assert fact_terms("Name is Dana Smith") == ("Dana Smith",)


def test_pages():
    t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", f"msg {i}", turn_index=i)
                                    for i in range(450)])
    p1 = trace_html(t, page=1, page_size=200)
    assert "msg 200" in p1 and "msg 399" in p1 and "msg 199<" not in p1 and "msg 400" not in p1
    assert "events 201–400 of 450 (page 2 of 3)" in p1
    allp = trace_html(t, page_size=200)
    assert allp.count("<details><summary") == 2 and "msg 449" in allp
    with pytest.raises(ValueError, match="`page` must be between 0 and 2"):
        trace_html(t, page=3, page_size=200)
    with pytest.raises(ValueError, match="`page_size`"):
        trace_html(t, page_size=0)


def test_bad_facts_argument(sample_trace):
    with pytest.raises(TypeError, match="`facts` must be a list"):
        trace_html(sample_trace, facts="Account is 1")
    with pytest.raises(TypeError, match=r"`facts\[0\]`"):
        trace_html(sample_trace, facts=[3])


def test_repr_html_needs_no_widget_library():
    code = ("import sys\n"
            "from maev_kit.traces import MultiAgentTrace, AgentTurn\n"
            "t = MultiAgentTrace('c', turns=[AgentTurn('a', 'r', '<b>x</b>', turn_index=0)])\n"
            "out = t._repr_html_()\n"
            "assert '&lt;b&gt;x&lt;/b&gt;' in out, out\n"
            "print([m for m in ('ipywidgets', 'anywidget', 'matplotlib') if m in sys.modules])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_facts_as_dicts_from_a_dataframe(sample_trace):
    # the HTML report passes facts as dicts whose handoff_index may be a float or numpy int
    import numpy as np
    facts = [{"fact_id": "f1", "handoff_index": 1.0, "text": "Error code is E42"},
             {"fact_id": "f2", "handoff_index": np.int64(0), "text": "Bill is wrong"},
             {"fact_id": "f3", "handoff_index": float("nan"), "text": "Unplaced"}]
    out = trace_html(sample_trace, facts=facts, verdicts={"c-1/h1/f1": "lost",
                                                          "c-1/h0/f2": None})
    text = text_of(out)
    assert "f1 (handoff 1): Error code is E42 lost" in text
    assert "f2 (handoff 0)" in text and "f3: Unplaced" in text
