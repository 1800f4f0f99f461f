"""The per-conversation fast paths of the metrics agree with their general paths and specs.

The metric functions take shortcuts for the common case (lists of exact record types, integer
edit-distance costs, shares of all/none without ``round``, violations built without the frozen
dataclass ``__init__``, ping-pong search skipped without a repeated target); these properties
check each shortcut against the general path or a brute-force reading of the rule.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from itertools import combinations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from maev_kit import Handoff, HandoffExpectation, MultiAgentTrace, score_handoff_accuracy
from maev_kit.metrics import (
    ContractViolation,
    HandoffContract,
    check_handoff_contracts,
    coordination_score,
    detect_circular_handoffs,
)
from maev_kit.metrics._coerce import share
from maev_kit.metrics._contracts import _violation

AGENTS = st.sampled_from(["a", "b", "c"])
REASONS = st.sampled_from([None, "escalation", "fallback"])
KEYS = st.lists(st.sampled_from(["k1", "k2", "k3"]), max_size=3, unique=True)
HANDOFFS = st.lists(st.builds(Handoff, AGENTS, AGENTS, REASONS,
                              st.dictionaries(st.sampled_from(["k1", "k2", "k3"]), st.integers(),
                                              max_size=3)), max_size=6)
EXPECTATIONS = st.lists(st.builds(HandoffExpectation, AGENTS, REASONS, KEYS), max_size=6)


@settings(max_examples=150, deadline=None)
@given(HANDOFFS, EXPECTATIONS, st.sampled_from(["aligned", "positional"]))
def test_handoff_objects_score_as_their_records(actual, expected, matching):
    fast = score_handoff_accuracy(actual, expected, matching=matching)  # lists of exact types
    as_dicts = score_handoff_accuracy([dataclasses.asdict(h) for h in actual],
                                      [dataclasses.asdict(e) for e in expected], matching=matching)
    as_tuples = score_handoff_accuracy(tuple(actual), tuple(expected), matching=matching)
    trace = score_handoff_accuracy(MultiAgentTrace("c", handoffs=actual), expected,
                                   matching=matching)
    assert repr(fast) == repr(as_dicts) == repr(as_tuples) == repr(trace)


def _cost(expected: list[str], actual: list[str], pairs: list[int | None]) -> tuple[int, int]:
    """(edits, -matches) of a pairing: substitutions, unpaired expectations and handoffs."""
    paired = [(i, j) for i, j in enumerate(pairs) if j is not None]
    matches = sum(expected[i] == actual[j] for i, j in paired)
    edits = (len(paired) - matches) + (len(expected) - len(paired)) + (len(actual) - len(paired))
    return edits, -matches


def _best_cost(expected: list[str], actual: list[str]) -> tuple[int, int]:
    """The least (edits, -matches) over every order-preserving pairing, by brute force."""
    best = None
    m, n = len(expected), len(actual)
    for k in range(min(m, n) + 1):
        for exp_idx in combinations(range(m), k):
            for act_idx in combinations(range(n), k):
                pairs: list[int | None] = [None] * m
                for i, j in zip(exp_idx, act_idx):
                    pairs[i] = j
                cost = _cost(expected, actual, pairs)
                best = cost if best is None else min(best, cost)
    assert best is not None
    return best


@settings(max_examples=300, deadline=None)
@given(st.lists(AGENTS, max_size=5), st.lists(AGENTS, max_size=5))
def test_aligned_pairing_has_the_least_edit_cost(expected, actual):
    r = score_handoff_accuracy([Handoff("x", t) for t in actual],
                               [HandoffExpectation(t) for t in expected])
    pairs = [d["actual_index"] for d in r["handoff_details"]]
    best = _best_cost(expected, actual)
    assert _cost(expected, actual, pairs) == best
    if expected:
        assert r["target_accuracy"] == round(-best[1] / len(expected), 3)


def test_share_is_round_of_the_ratio():
    for n in range(1, 120):
        for k in range(n + 1):
            got, want = share(k, n), round(k / n, 3)
            assert type(got) is float and repr(got) == repr(want), (k, n)
    with pytest.raises(ZeroDivisionError):
        share(0, 0)


def test_fast_violation_is_the_dataclass():
    names = [f.name for f in dataclasses.fields(ContractViolation)]
    assert list(inspect.signature(_violation).parameters) == names  # no field forgotten
    c = HandoffContract("*", "billing", required_context_keys=["account_number"])
    for values in (("c1", 0, 2, "triage", "billing", 0, c, "missing_key", "account_number", (),
                    None),
                   ("c1", 3, 9, "a", "b", 1, c, "wrong_type", "k", ("string",), "integer"),
                   ("c2", 1, 4, "a", "b", None, None, "no_contract", None, (), None)):
        fast, slow = _violation(*values), ContractViolation(*values)
        assert fast == slow and repr(fast) == repr(slow) and hash(fast) == hash(slow)
        assert list(vars(fast).items()) == list(vars(slow).items())
        assert fast.to_dict() == slow.to_dict()
        with pytest.raises(dataclasses.FrozenInstanceError):
            fast.key = "other"  # type: ignore[misc]


@settings(max_examples=100, deadline=None)
@given(HANDOFFS, st.booleans())
def test_violations_are_those_of_each_applicable_contract(actual, require):
    contracts = [HandoffContract("*", "b", required_context_keys=["k1"],
                                 value_types={"k2": "string"}),
                 HandoffContract("a", "*", "escalation", ["k3"]),
                 HandoffContract("c", "a", value_types={"k1": ["integer", "null"]})]
    t = MultiAgentTrace("c", handoffs=actual)
    got = check_handoff_contracts(t, contracts, require_contract=require)
    want = []
    for hi, h in enumerate(actual):
        rules = [(ci, c) for ci, c in enumerate(contracts) if c.applies_to(h)]
        for ci, c in rules:
            want += [(hi, ci, "missing_key", k) for k in c.required_context_keys
                     if k not in h.context_passed]
            # the values are ints: only a "string" key is of the wrong type
            want += [(hi, ci, "wrong_type", k) for k in c.value_types
                     if k in h.context_passed and c.value_types[k] == ("string",)]
        if require and not rules:
            want.append((hi, None, "no_contract", None))
    assert [(v.handoff_index, v.contract_index, v.kind, v.key) for v in got] == want
    assert all(type(v) is ContractViolation for v in got)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.lists(st.tuples(st.sampled_from("abcdef"), st.sampled_from("abcdef")),
                          max_size=6),
                 st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), max_size=10)))
@example([("a", "b"), ("b", "a"), ("a", "b")])  # one repeated target: the least for a ping-pong
@example([("x", "a"), ("a", "b"), ("b", "a"), ("a", "c"), ("c", "b")])
def test_ping_pongs_are_every_pair_with_both_directions_and_three_handoffs(pairs):
    t = MultiAgentTrace("c", handoffs=[Handoff(f, to, turn_index=i)
                                       for i, (f, to) in enumerate(pairs)])
    found = {frozenset(lp["agents"]): lp["handoff_indices"]
             for lp in detect_circular_handoffs(t)["loops"] if lp["kind"] == "ping_pong"}
    want = {}
    for f, to in {(f, to) for f, to in pairs if f != to}:
        idx = [i for i, p in enumerate(pairs) if set(p) == {f, to}]
        if len(idx) >= 3 and (to, f) in pairs:
            want[frozenset((f, to))] = idx
    assert found == want


UNIT = st.floats(0, 1)


@settings(max_examples=150, deadline=None)
@given(UNIT, UNIT, UNIT, st.integers(0, 3), UNIT, st.sampled_from([
    {"handoff": 0.3, "retention": 0.4, "routing": 0.3},
    {"handoff": 0.5, "retention": 0.5, "routing": 0.0},
    {"handoff": 0.0, "retention": 0.0, "routing": 1.0}]),
    st.tuples(st.booleans(), st.booleans(), st.booleans()))
def test_composite_is_the_renormalised_weighted_mean(t, c, rate, contradicted, routing, w, present):
    reports = ({"target_accuracy": t, "context_completeness": c},
               {"retention_rate": rate, "contradicted": contradicted},
               {"acceptable_routing_accuracy": routing})
    reports = tuple(r if keep else None for r, keep in zip(reports, present))
    got = coordination_score(*reports, weights=w)
    comps = {"handoff": 0.5 * t + 0.5 * c, "retention": max(0.0, rate - 0.2 * contradicted),
             "routing": float(routing)}
    used = tuple(name for name, keep in zip(("handoff", "retention", "routing"), present)
                 if keep and w[name] > 0)
    assert got["components_used"] == used
    if used:
        want = sum(w[u] * comps[u] for u in used) / sum(w[u] for u in used)
        assert math.isclose(got["composite_coordination"], round(want, 3), abs_tol=1e-12)
    else:
        assert math.isnan(got["composite_coordination"])
    for key, name, keep in (("handoff_quality", "handoff", present[0]),
                            ("information_retention", "retention", present[1]),
                            ("routing_quality", "routing", present[2])):
        assert (got[key] == round(comps[name], 3)) if keep else math.isnan(got[key])
