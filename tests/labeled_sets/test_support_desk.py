"""labeled_sets/support_desk: coverage of the failure modes, reference labels, README wording."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from maev_kit.retention import LABELS

AGENTS = {"triage", "billing", "technical_support", "account_security", "general_faq",
          "human_escalation"}
VALUE_TYPES = {"str", "int", "float", "bool", "list", "dict"}
PY_TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


def _after_text(item) -> str:
    return " ".join(m.content for m in item.after)


def _agent_after_text(item) -> str:
    return " ".join(m.content for m in item.after if not m.is_user)


def test_minimum_sizes(support_desk):
    assert len(support_desk.traces) >= 70
    assert sum(t.handoff_count() for t in support_desk.traces) >= 160
    assert len(support_desk.items) >= 300


def test_agents_and_manifest(support_desk):
    m = support_desk.manifest
    assert set(m["agents"]) == AGENTS
    assert m["agents"]["triage"] == "router"
    assert m["labelers"]["maev-authors"]["source"] == "reference"
    assert m["generator"] == {"script": "tools/build_labeled_sets.py", "seed": m["generator"]["seed"]}
    assert m["license"] == "MIT"


def test_label_mix_is_roughly_55_30_15(support_desk):
    mix = Counter(r.label for r in support_desk.labels)
    n = sum(mix.values())
    assert 0.48 <= mix["retained"] / n <= 0.62
    assert 0.23 <= mix["lost"] / n <= 0.37
    assert 0.10 <= mix["contradicted"] / n <= 0.20


def test_labels_are_reference_labels_by_the_authors(support_desk):
    for r in support_desk.labels:
        assert r.annotator == "maev-authors"
        assert r.source == "reference"
        assert r.created_at.endswith("Z")
        assert r.note  # says how the fact was treated


def test_each_split_has_every_label(support_desk):
    by_conv = {}
    for r in support_desk.labels:
        by_conv.setdefault(r.item_id.split("/")[0], []).append(r.label)
    for split, ids in support_desk.manifest["splits"].items():
        labels = {lab for cid in ids for lab in by_conv.get(cid, [])}
        assert labels == set(LABELS), split
    n_dev = len(support_desk.manifest["splits"]["dev"])
    assert 0.3 <= n_dev / len(support_desk.traces) <= 0.5


def test_reasons_and_modes_cover_the_enum(support_desk):
    reasons = Counter(None if h.reason is None else h.reason.value
                      for t in support_desk.traces for h in t.handoffs)
    assert set(reasons) == {None, "capability_match", "escalation", "specialization", "fallback"}
    modes = {h.mode for t in support_desk.traces for h in t.handoffs}
    assert modes == {"transfer", "delegate"}


def _routes(support_desk):
    return {t.conversation_id: [h.to_agent for h in t.handoffs] for t in support_desk.traces}


def test_has_ping_pong_between_billing_and_technical_support(support_desk):
    n = 0
    for route in _routes(support_desk).values():
        pairs = list(zip(route, route[1:], route[2:]))
        if any(a == c and {a, b} == {"billing", "technical_support"} for a, b, c in pairs):
            n += 1
    assert n >= 5


def test_has_three_cycles(support_desk):
    n = 0
    for route in _routes(support_desk).values():
        quads = zip(route, route[1:], route[2:], route[3:])
        if any(a == d and len({a, b, c}) == 3 for a, b, c, d in quads):
            n += 1
    assert n >= 4


def test_has_over_long_chains(support_desk):
    assert sum(t.handoff_count() > 5 for t in support_desk.traces) >= 5


def test_has_wrong_targets(support_desk):
    wrong = 0
    for t in support_desk.traces:
        case = support_desk.expectations[t.conversation_id].routing[0]
        if t.handoffs[0].to_agent not in [case.correct_agent, *case.acceptable_agents]:
            wrong += 1
    assert wrong >= 8


def _applies(c, h) -> bool:
    reason = None if h.reason is None else h.reason.value
    return (c["to_agent"] in ("*", h.to_agent) and c["from_agent"] in ("*", h.from_agent)
            and c["reason"] in (None, reason))


def test_has_dropped_context_keys_and_type_violations(support_desk):
    contracts = support_desk.manifest["contracts"]
    dropped = wrong_type = 0
    for t in support_desk.traces:
        for h in t.handoffs:
            for c in contracts:
                if not _applies(c, h):
                    continue
                missing = [k for k in c["required_context_keys"] if k not in h.context_passed]
                dropped += bool(missing)
                wrong_type += any(k in h.context_passed
                                  and not isinstance(h.context_passed[k], PY_TYPES[ty])
                                  for k, ty in c["value_types"].items())
    assert dropped >= 8
    assert wrong_type >= 1
    # most handoffs honour their contracts: the violations are the planted ones
    n_handoffs = sum(t.handoff_count() for t in support_desk.traces)
    assert dropped <= 0.15 * n_handoffs


def test_contracts_work_with_the_metrics_checker(support_desk):
    metrics = pytest.importorskip("maev_kit.metrics")
    check = getattr(metrics, "check_handoff_contracts", None)
    if check is None:
        pytest.skip("maev_kit.metrics has no check_handoff_contracts yet")
    kinds = Counter(v.kind for t in support_desk.traces
                    for v in check(t, support_desk.manifest["contracts"]))
    assert kinds["missing_key"] >= 8 and kinds["wrong_type"] >= 1


def test_contracts_are_well_formed(support_desk):
    for c in support_desk.manifest["contracts"]:
        assert set(c) == {"from_agent", "to_agent", "reason", "required_context_keys",
                          "value_types"}
        assert c["from_agent"] == "*" or c["from_agent"] in AGENTS
        assert c["to_agent"] == "*" or c["to_agent"] in AGENTS
        assert c["reason"] in (None, "capability_match", "escalation", "specialization",
                               "fallback")
        assert set(c["value_types"]) <= set(c["required_context_keys"])
        assert set(c["value_types"].values()) <= VALUE_TYPES


def test_expectations_use_the_contract_keys(support_desk):
    for e in support_desk.expectations.values():
        assert e.handoffs, e.conversation_id
        for h in e.handoffs:
            assert h.expected_target in AGENTS
            assert h.required_context_keys  # every target has a contract


def test_routing_cases_are_the_first_user_message(support_desk):
    for t in support_desk.traces:
        cases = support_desk.expectations[t.conversation_id].routing
        assert len(cases) == 1
        case = cases[0]
        assert case.user_input == t.user_messages[0].content
        assert case.correct_agent in AGENTS - {"triage"}
        assert case.correct_agent not in case.acceptable_agents
        assert case.category in {"money", "tech", "account", "info", "human"}


def test_the_textbook_contradictions_are_there(support_desk):
    wanted = [("Tuesday", "Thursday"), ("ACCT-4471", "ACCT-4417"), ("eu-west-1", "us-east-1"),
              ("$49.99", "$59.99")]
    labels = {r.item_id: r.label for r in support_desk.labels}
    for right, wrong in wanted:
        assert any(right in i.fact and wrong in _agent_after_text(i)
                   and labels[i.item_id] == "contradicted" for i in support_desk.items), right


def test_contradicted_items_state_the_wrong_value_after_the_handoff(support_desk):
    for r in support_desk.labels:
        if r.label != "contradicted":
            continue
        wrong = re.search(r"\((.*) for (.*)\)$", r.note)
        assert wrong, r.note
        item = next(i for i in support_desk.items if i.item_id == r.item_id)
        if wrong.group(1).startswith("has not "):  # "you haven't restarted it yet"
            continue
        assert wrong.group(1).split(" (")[0] in _agent_after_text(item), r.item_id


def test_reasked_items_ask_a_question_and_the_customer_repeats(support_desk):
    reasked = [r for r in support_desk.labels if "re-asked" in r.note]
    assert len(reasked) >= 30
    items = {i.item_id: i for i in support_desk.items}
    for r in reasked:
        item = items[r.item_id]
        assert r.label == "lost"
        assert "?" in _agent_after_text(item)
        assert any(m.is_user for m in item.after), r.item_id  # the customer answers again


def test_retained_facts_are_not_always_verbatim(support_desk):
    notes = Counter(r.note.split(": ", 1)[1] for r in support_desk.labels if r.label == "retained")
    assert notes["paraphrased or clearly used"] >= 0.3 * sum(notes.values())
    assert notes["restated verbatim"] >= 0.3 * sum(notes.values())
    ignored = sum("ignored" in r.note for r in support_desk.labels)
    assert ignored >= 20


def test_wording_varies(support_desk):
    firsts = {t.user_messages[0].content for t in support_desk.traces}
    assert len(firsts) >= 0.7 * len(support_desk.traces)
    closings = {t.turns[-1].message for t in support_desk.traces}
    assert len(closings) >= 0.5 * len(support_desk.traces)


def test_xss_probes_are_present(support_desk):
    messages = [m.content for t in support_desk.traces for m in t.messages()]
    assert any("<script>alert(1)</script>" in m for m in messages)
    assert any("<img src=x onerror=alert(1)>" in m for m in messages)
    facts = [f.text for e in support_desk.expectations.values() for f in e.key_facts]
    assert any("<img src=x onerror=alert(1)>" in f for f in facts)
    n = sum(any("alert(1)" in m.content for m in t.messages()) for t in support_desk.traces)
    assert 3 <= n <= 15  # a few, not everywhere


def test_readme_says_who_labeled_and_how(support_desk):
    r = support_desk.readme
    low = r.lower()
    assert "reference labels written by the maev-kit authors" in low
    assert "maev-authors" in r and '`source: "reference"`' in r
    assert "human label" not in low  # they are never called human labels
    assert "tools/build_labeled_sets.py" in r
    assert str(support_desk.manifest["generator"]["seed"]) in r
    assert "MIT" in r
    assert "dev" in r and "test" in r


def test_readme_counts_match_the_files(support_desk):
    r = support_desk.readme
    mix = Counter(x.label for x in support_desk.labels)
    assert f"| conversations | {len(support_desk.traces)} |" in r
    n_h = sum(t.handoff_count() for t in support_desk.traces)
    assert f"| handoffs | {n_h} " in r
    assert f"retained {mix['retained']} (" in r
    assert f"lost {mix['lost']} (" in r
    assert f"contradicted {mix['contradicted']} (" in r
    # the labeled items: key facts where they are listed (later hops are judged, unlabeled)
    assert support_desk.manifest["counts"]["retention_items"] == sum(
        len(e.key_facts) for e in support_desk.expectations.values())
    assert len(support_desk.items) > support_desk.manifest["counts"]["retention_items"]


@pytest.mark.parametrize("key", ["issue", "scenario"])
def test_trace_metadata(support_desk, key):
    assert all(t.metadata.get(key) for t in support_desk.traces)
