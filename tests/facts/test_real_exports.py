"""Real framework exports: every handoff after a user message holding an identifier gets a fact.

The samples are the trace exports of ``tests/data/trace_samples`` (OpenAI Agents SDK, LangGraph,
AutoGen, CrewAI, OTel GenAI, OpenInference; the same customer-support story) and a fresh, offline
run of the OpenAI Agents SDK (the run of ``tests/importers/test_real_openai_agents.py``).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from maev_kit.facts import propose_facts
from maev_kit.traces.importers import import_traces

# A token with letters and digits (ACCT-4471-9920, RF5521): what "holds an identifier" means
# here, independent of the extractor's own rules.
IDENTIFIER = re.compile(r"(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]{3,}\w")


def sample_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "trace_samples").rglob("*.json"))


def check(traces) -> tuple[int, int]:
    """Assert the rule on every handoff; return (handoffs checked, handoffs with facts).

    A value is proposed once, at the first handoff after it was said, and judged at every
    later one: what the user said before a handoff is among the facts proposed up to it."""
    facts = propose_facts(traces)
    checked = with_facts = 0
    for t in traces:
        for hi, h in enumerate(t.handoffs):
            upto = {i for i, g in enumerate(t.handoffs) if g.turn_index <= h.turn_index}
            proposed = [f.value for f in facts if f.conversation_id == t.conversation_id
                        and f.handoff_index in upto]
            with_facts += bool(proposed)
            user_ids = [m.group() for m in t.messages()
                        if m.is_user and m.turn_index <= h.turn_index
                        for m in IDENTIFIER.finditer(m.content)]
            if not user_ids:
                continue
            checked += 1
            assert proposed, (t.conversation_id, hi)
            assert set(user_ids) <= set(proposed), (t.conversation_id, hi, user_ids, proposed)
    return checked, with_facts


def test_every_shared_sample(data_dir):
    files = sample_files(data_dir)
    assert len(files) >= 25
    total = 0
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces, _ = import_traces(path)
        checked, _ = check(traces)
        total += checked
        notes = propose_facts(traces).notes
        # a sample without user text before a handoff says so instead of failing
        for t in traces:
            if t.handoffs and not any(m.is_user for m in t.messages()):
                assert any(n.conversation_id == t.conversation_id for n in notes), path.name
    assert total >= 40  # two handoffs in each of the 20-odd samples with the user's message


def test_the_shared_samples_propose_the_account_number(data_dir):
    traces, _ = import_traces(data_dir / "trace_samples" / "openai_agents_trace.json")
    facts = propose_facts(traces)
    # each value once, at the first handoff after it was said (judged at every later one)
    assert [(f.handoff_index, f.text) for f in facts if f.kind == "identifier"] == [
        (0, "Account number is ACCT-4471-9920"),
        (1, "Invoice number is INV-88213"), (1, "Refund reference is RF-5521")]


agents = pytest.importorskip("agents")
from importers.test_real_openai_agents import (  # noqa: E402
    ACCT,
    collector,  # noqa: F401  (fixture)
    exports,
    network_attempts,  # noqa: F401  (fixture)
)


def test_a_fresh_openai_agents_run(collector, network_attempts, tmp_path):  # noqa: F811
    paths = exports(False, collector, tmp_path)
    assert network_attempts == []
    for kind, path in paths.items():
        traces, _ = import_traces(path)
        checked, _ = check(traces)
        assert checked == 2, kind
        facts = propose_facts(traces)
        # the month the user named ("charged twice for my March invoice") is a fact too
        assert [f.value for f in facts if f.handoff_index == 0] == ["March", ACCT], kind
