"""The report says where each key fact came from (a ledger column, counts by source in the
Retention section, a warning when machine-proposed facts were not reviewed) and what a trace
file cannot measure (n/a with the reason)."""

from __future__ import annotations

import dataclasses
import re
import warnings

import pytest

from maev_kit import evaluate
from maev_kit.facts import propose_facts
from maev_kit.reporting import report
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace


def run(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(source, judge="heuristic", progress=False, n_resamples=100, **kw)


def section(page: str, anchor: str) -> str:
    m = re.search(rf'<section[^>]*id="{anchor}".*?</section>', page, re.S)
    assert m, f"no {anchor} section"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", m.group(0)))


def conv(cid: str, user: str, context: dict | None = None) -> MultiAgentTrace:
    return MultiAgentTrace(cid, user_messages=[user], turns=[
        AgentTurn("triage", "router", "Passing you on.", turn_index=1),
        AgentTurn("billing", "specialist", "Let me check.", turn_index=3)],
        handoffs=[Handoff("triage", "billing", None, dict(context or {}), turn_index=2)])


@pytest.fixture(scope="module")
def support_desk():
    from maev_kit.datasets import load_labeled_set

    return load_labeled_set("support_desk")


@pytest.fixture(scope="module")
def mixed():
    """Three conversations whose facts come from a person's review, the offline proposer and
    a handoff's context."""
    traces = [conv("c1", "My account is ACCT-4471."), conv("c2", "Order ORD-5512 is late."),
              conv("c3", "Hello.", context={"plan": "Pro"})]
    facts = list(propose_facts(traces[:2], method="offline"))
    facts += list(propose_facts(traces[2:], method="context"))
    facts = [dataclasses.replace(f, reviewed=True) if f.conversation_id == "c1" else f
             for f in facts]
    return run(traces, facts=facts)


def test_ledger_and_retention_section_name_each_source(mixed):
    counts = dict(mixed.ledger["fact_source"].value_counts())
    assert counts == {"reviewed": 1, "offline": 1, "context": 1}
    page = report(mixed).html
    text = section(page, "retention")
    assert "3 key facts, each judged at the handoff where it was stated" in text
    for source in counts:
        # source, facts, verdicts, conversations
        assert re.search(rf"{source} 1 1 1 ", text), source
    assert "proposed, then accepted, edited or added by a person" in text
    assert "2 of 3 facts were proposed by a machine and not reviewed" in text
    # the ledger tables carry the column
    ledger = section(page, "coordination")
    assert "fact_source" in ledger and "reviewed" in ledger
    assert page.index('id="retention"') < page.index('id="calibration"')
    assert 'href="#retention"' in page


def test_written_facts_raise_no_review_warning(support_desk):
    r = run(support_desk)
    text = section(report(r, labeled_set=support_desk).html, "retention")
    # the set's facts (each judged at several handoffs), by where they were first stated
    assert f"expectations {len(r.fact_ledger)}" in text
    assert "written by hand in expectations.jsonl" in text
    assert "not reviewed" not in text
    assert "cannot measure" not in text  # support_desk has expected handoffs and routing


def test_a_trace_file_shows_what_it_cannot_measure(mixed):
    text = section(report(mixed).html, "retention")
    assert "What this run cannot measure (n/a)" in text
    assert "Handoff quality 3 of 3 conversations no expected handoffs" in text
    assert "Routing quality 3 of 3 conversations no routing case" in text
    assert "never counted as 0 or 1" in text


def test_no_fact_at_all_says_why():
    r = run([conv("c1", "Hello there.")])
    assert len(r.ledger) == 0
    text = section(report(r).html, "retention")
    assert "No key fact to judge: no key facts. Information retention is n/a." in text
    assert "Information retention 1 of 1 conversations no key facts" in text


def test_an_older_ledger_without_the_column_reads_as_expectations(mixed):
    old = dataclasses.replace(mixed, ledger=mixed.ledger.drop(columns=["fact_source"]))
    text = section(report(old).html, "retention")
    assert "expectations 3" in text
