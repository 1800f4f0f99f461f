"""The report shows the conversation view by kind, the per-fact ledger, and links each verdict
to the exact characters of the entry it rests on (the real pipeline, the heuristic judge)."""

from __future__ import annotations

import html
import re
import warnings
from html.parser import HTMLParser

import pytest

from maev_kit.evaluation import evaluate
from maev_kit.reporting import report
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace

ACCT = "ACCT-4471-9920"


def tool_trace(cid: str = "c-tool", name: str = "lookup_invoices",
               key: str = "account_number", value: str = ACCT,
               output: object = None) -> MultiAgentTrace:
    """billing never says the account number: it only calls a tool with it."""
    output = {"invoices": [{"id": "INV-1", "amount": 40}]} if output is None else output
    return MultiAgentTrace(
        cid, user_messages=[f"My account number is {ACCT}, I was charged twice."],
        turns=[AgentTurn("triage", "router", "Let me pass you to billing.", turn_index=1),
               AgentTurn("billing", "specialist", "",
                         [{"name": name, "arguments": {key: value}, "output": output}],
                         turn_index=3),
               AgentTurn("billing", "specialist", "I found two invoices; refunding one.",
                         turn_index=4)],
        handoffs=[Handoff("triage", "billing", "specialization", {}, turn_index=2)])


def run(traces):
    exp = [{"conversation_id": t.conversation_id,
            "key_facts": [{"fact_id": "f1", "handoff_index": 0,
                           "text": f"Account number is {ACCT}"}]} for t in traces]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(traces, expectations=exp, judge="heuristic", progress=False,
                        n_resamples=50)


@pytest.fixture(scope="module")
def result():
    return run([tool_trace()])


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict]]:
    p = Tags()
    p.feed(page)
    return p.tags


def entry(page: str, anchor: str) -> str:
    m = re.search(rf'<div [^>]*id="{re.escape(anchor)}"[^>]*>.*?</div>', page, re.S)
    assert m, anchor
    return m.group(0)


def test_verdict_links_to_the_marked_tool_argument(result):
    from maev_kit.rendering._trace import anchor_prefix

    row = result.ledger.iloc[0]
    assert row["label"] == "retained" and row["evidence_field"] == "arguments.account_number"
    page = report(result, max_worst=1).html
    anchor = f"{anchor_prefix('c-tool')}t{int(row['evidence_turn'])}-p{int(row['evidence_part'])}"
    # the ledger row links to the entry …
    links = re.findall(r'<a class="ev-link" href="#([^"]+)">([^<]*)</a>', page)
    assert (anchor, html.escape(row["evidence_at"])) in links
    # … which is the tool call, drawn as a call, the span marked exactly
    e = entry(page, anchor)
    assert 'data-kind="tool_call"' in e and 'class="ev call"' in e
    assert re.findall(r'<mark class="evidence[^"]*"[^>]*>(.*?)</mark>', e) == [ACCT]
    assert 'class="evidence retained"' in e
    # every link has its target, and ids stay unique
    ids = [a["id"] for _, a in tags(page) if a.get("id")]
    assert len(ids) == len(set(ids))
    assert all(href in ids for href, _ in links)


def test_without_the_trace_drawn_the_row_quotes_the_entry(result):
    page = report(result, max_worst=0).html
    assert 'class="ev-link"' not in page
    m = re.search(r'<span class="excerpt">.*?</span> (<code class="mono">.*?</code>)', page, re.S)
    assert m and f'<mark class="evidence retained">{ACCT}</mark>' in m.group(1)
    assert "lookup_invoices(account_number=&quot;" in m.group(1)


def test_per_fact_ledger_shows_the_path(result):
    t = tool_trace("c-two")
    t.turns.append(AgentTurn("tech", "specialist", "Tech here, what is the issue?",
                             turn_index=6))
    t.handoffs.append(Handoff("billing", "tech", "escalation", {}, turn_index=5))
    r = run([t])
    assert list(r.fact_ledger["path"]) == ["RL"]
    page = report(r).html
    sec = page.split("Per-fact retention ledger", 1)[1]
    assert "Per fact: each key fact across its handoffs" in sec
    row = re.search(r"<tr><td>c-two</td>.*?</tr>", sec, re.S).group(0)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
    assert "RL" in cells and "first lost at" in sec and "re-acquired" in sec
    assert "Full ledger: one verdict per fact per handoff" in sec


def test_hostile_tool_text_is_escaped_in_the_report():
    name = '<script>window.__p=1</script>'
    key = '"><img src=x onerror="window.__p=2">'
    out = '</div><svg onload="window.__p=3"> "x"'
    r = run([tool_trace("c-<b>", name, key, f'{ACCT} "q" <script>x</script>', out)])
    page = report(r, max_worst=1).html
    found = tags(page)
    assert not {t for t, _ in found} & {"script", "img"}
    assert "c-&lt;b&gt;" in page and "<summary>c-<b>" not in page
    assert not [k for _, a in found for k in a if k.startswith("on")]
    call = re.search(r'<div class="ev call"[^>]*>.*?</div>', page, re.S).group(0)
    assert "&lt;script&gt;window.__p=1&lt;/script&gt;" in call
    assert 'data-tool="&lt;script&gt;window.__p=1&lt;/script&gt;"' in call
    res = re.search(r'<div class="ev result"[^>]*>.*?</div>', page, re.S).group(0)
    assert "&lt;svg onload=&quot;window.__p=3&quot;&gt;" in res


def test_fallback_transcript_draws_kinds(result, monkeypatch):
    def broken(*args, **kwargs):
        raise ValueError("an odd trace")

    monkeypatch.setattr("maev_kit.reporting._report.trace_html", broken)
    page = report(result, max_worst=1).html
    assert 'class="transcript"' in page
    assert re.search(r'<div class="ev call"><span class="tag">call</span>.*?lookup_invoices',
                     page)
    assert re.search(r'<div class="ev result"><span class="tag">result</span>.*?INV-1', page)
