"""score_handoff_accuracy: the issue's worked examples, both matchings, properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit import Handoff, HandoffExpectation, MultiAgentTrace, score_handoff_accuracy
from maev_kit.traces import HandoffReason

EXPECTED = [HandoffExpectation("billing", "specialization", ["account_number"]),
            HandoffExpectation("tech", "escalation", ["account_number", "error_code"])]

EXTRA_EARLY = [
    Handoff("triage", "general", "fallback", {}),
    Handoff("general", "billing", "specialization", {"account_number": "ACCT-4471"}),
    Handoff("billing", "tech", "escalation", {"account_number": "ACCT-4471", "error_code": "E42"}),
]

MISSING_KEY = [
    Handoff("triage", "billing", "specialization", {"account_number": "ACCT-4471"}),
    Handoff("billing", "tech", "escalation", {"account_number": "ACCT-4471"}),
]


def test_worked_example_extra_early_handoff_positional():
    r = score_handoff_accuracy(EXTRA_EARLY, EXPECTED, matching="positional")
    assert r["target_accuracy"] == 0.0
    assert r["context_completeness"] == 0.0
    assert r["unexpected_handoffs"] == 1
    assert r["missing_handoffs"] == 0
    assert [d["actual_target"] for d in r["handoff_details"]] == ["general", "billing"]


def test_worked_example_extra_early_handoff_aligned():
    r = score_handoff_accuracy(EXTRA_EARLY, EXPECTED)
    assert r["matching"] == "aligned"
    assert (r["target_accuracy"], r["reason_accuracy"], r["context_completeness"]) == (1.0, 1.0, 1.0)
    assert r["unexpected_handoffs"] == 1
    assert r["unexpected_handoff_indices"] == [0]  # the handoff to general
    assert r["missing_handoffs"] == 0
    assert [d["actual_index"] for d in r["handoff_details"]] == [1, 2]
    assert all(d["missing_context_keys"] == [] for d in r["handoff_details"])


@pytest.mark.parametrize("matching", ["aligned", "positional"])
def test_worked_example_missing_context_key(matching):
    r = score_handoff_accuracy(MISSING_KEY, EXPECTED, matching=matching)
    assert r["target_accuracy"] == 1.0
    assert r["context_completeness"] == 0.5
    assert r["reason_accuracy"] == 1.0
    assert r["unexpected_handoffs"] == 0
    assert r["missing_handoffs"] == 0
    details = r["handoff_details"]
    assert [d["missing_context_keys"] for d in details] == [[], ["error_code"]]
    assert [d["context_complete"] for d in details] == [True, False]


def test_details_have_the_documented_keys():
    d = score_handoff_accuracy(MISSING_KEY, EXPECTED)["handoff_details"][1]
    assert d == {"expected_index": 1, "expected_target": "tech", "expected_reason": "escalation",
                 "actual_index": 1, "actual_target": "tech", "actual_reason": "escalation",
                 "target_correct": True, "reason_correct": True, "context_complete": False,
                 "missing_context_keys": ["error_code"]}


@pytest.mark.parametrize("matching", ["aligned", "positional"])
def test_no_expectations_and_no_handoffs_is_perfect(matching):
    r = score_handoff_accuracy([], [], matching=matching)
    assert r["handoff_accuracy"] == 1.0
    assert r["target_accuracy"] == 1.0 and r["context_completeness"] == 1.0
    assert r["unexpected_handoffs"] == 0


def test_no_expectations_but_handoffs_scores_zero():
    r = score_handoff_accuracy(MISSING_KEY, [])
    assert r["handoff_accuracy"] == 0.0
    assert r["target_accuracy"] == 0.0 and r["context_completeness"] == 0.0
    assert r["unexpected_handoffs"] == 2
    assert r["unexpected_handoff_indices"] == [0, 1]


def test_missing_handoff_counts_all_wrong():
    r = score_handoff_accuracy(MISSING_KEY[:1], EXPECTED)
    assert r["target_accuracy"] == 0.5
    assert r["reason_accuracy"] == 0.5
    assert r["context_completeness"] == 0.5
    assert r["missing_handoffs"] == 1
    last = r["handoff_details"][1]
    assert last["actual_index"] is None and last["actual_target"] is None
    assert last["missing_context_keys"] == ["account_number", "error_code"]
    p = score_handoff_accuracy(MISSING_KEY[:1], EXPECTED, matching="positional")
    assert p["missing_handoffs"] == 1 and p["target_accuracy"] == 0.5


def test_missing_middle_handoff_is_aligned_around():
    exp = [HandoffExpectation("a"), HandoffExpectation("b"), HandoffExpectation("c")]
    act = [Handoff("x", "a"), Handoff("a", "c")]
    r = score_handoff_accuracy(act, exp)
    assert r["target_accuracy"] == 0.667
    assert [d["actual_index"] for d in r["handoff_details"]] == [0, None, 1]
    assert r["missing_handoffs"] == 1 and r["unexpected_handoffs"] == 0
    assert score_handoff_accuracy(act, exp, matching="positional")["target_accuracy"] == 0.333


def test_equal_edit_distance_prefers_more_matching_targets():
    # expected a, b; actual b, c: two substitutions or delete a + match b + insert c both cost 2
    r = score_handoff_accuracy([Handoff("x", "b"), Handoff("b", "c")],
                               [HandoffExpectation("a"), HandoffExpectation("b")])
    assert r["target_accuracy"] == 0.5
    assert r["missing_handoffs"] == 1 and r["unexpected_handoffs"] == 1


def test_wrong_target_is_a_substitution_not_missing():
    r = score_handoff_accuracy([Handoff("triage", "general", "specialization",
                                        {"account_number": "1"})], EXPECTED[:1])
    d = r["handoff_details"][0]
    assert (d["target_correct"], d["reason_correct"], d["context_complete"]) == (False, True, True)
    assert r["missing_handoffs"] == 0 and r["unexpected_handoffs"] == 0


def test_expected_reason_none_accepts_any_reason_and_missing_reason_is_wrong():
    act = [Handoff("triage", "billing", None), Handoff("billing", "tech", "fallback")]
    r = score_handoff_accuracy(act, [HandoffExpectation("billing"),
                                     HandoffExpectation("tech", "escalation")])
    assert [d["reason_correct"] for d in r["handoff_details"]] == [True, False]
    assert r["reason_accuracy"] == 0.5
    r = score_handoff_accuracy(act, [HandoffExpectation("billing", "specialization")])
    assert r["handoff_details"][0]["reason_correct"] is False


def test_accepts_a_trace_and_dicts():
    trace = MultiAgentTrace("c-1", handoffs=EXTRA_EARLY)
    exp = [{"expected_target": "billing", "expected_reason": "specialization",
            "required_context_keys": ["account_number"]},
           {"expected_target": "tech", "expected_reason": "escalation",
            "required_context_keys": ["account_number", "error_code"]}]
    assert score_handoff_accuracy(trace, exp) == score_handoff_accuracy(EXTRA_EARLY, EXPECTED)


def test_rejects_unknown_matching():
    with pytest.raises(ValueError, match="`matching` must be 'aligned' or 'positional'"):
        score_handoff_accuracy([], [], matching="greedy")


def test_rejects_wrong_argument_types():
    with pytest.raises(TypeError, match="`actual_handoffs`"):
        score_handoff_accuracy("billing", EXPECTED)
    with pytest.raises(TypeError, match=r"`expected\[0\]`"):
        score_handoff_accuracy([], ["billing"])


# --- properties ---------------------------------------------------------------------------

AGENTS = st.sampled_from(["triage", "billing", "tech", "general"])
REASONS = st.one_of(st.none(), st.sampled_from(list(HandoffReason)))
KEYS = st.lists(st.sampled_from(["account_number", "error_code", "plan"]), unique=True, max_size=3)
HANDOFFS = st.lists(st.builds(lambda f, t, r, ks: Handoff(f, t, r, {k: "v" for k in ks}),
                              AGENTS, AGENTS, REASONS, KEYS), max_size=7)
EXPECTATIONS = st.lists(st.builds(HandoffExpectation, AGENTS, REASONS, KEYS), max_size=7)


@settings(max_examples=100, deadline=None)
@given(HANDOFFS, EXPECTATIONS)
def test_accuracies_stay_in_unit_interval(actual, expected):
    for matching in ("aligned", "positional"):
        r = score_handoff_accuracy(actual, expected, matching=matching)
        for key in ("target_accuracy", "reason_accuracy", "context_completeness"):
            assert 0.0 <= r[key] <= 1.0
        paired = sum(d["actual_index"] is not None for d in r["handoff_details"])
        assert paired + r["missing_handoffs"] == len(expected)
        assert paired + r["unexpected_handoffs"] == len(actual)


@settings(max_examples=100, deadline=None)
@given(HANDOFFS, EXPECTATIONS)
def test_aligned_never_scores_below_positional_on_targets(actual, expected):
    aligned = score_handoff_accuracy(actual, expected)
    positional = score_handoff_accuracy(actual, expected, matching="positional")
    assert aligned["target_accuracy"] >= positional["target_accuracy"]


@settings(max_examples=60, deadline=None)
@given(HANDOFFS, EXPECTATIONS)
def test_aligned_pairs_preserve_order(actual, expected):
    idx = [d["actual_index"] for d in score_handoff_accuracy(actual, expected)["handoff_details"]
           if d["actual_index"] is not None]
    assert idx == sorted(set(idx))


@settings(max_examples=50, deadline=None)
@given(HANDOFFS)
def test_handoffs_matching_their_own_targets_score_one(actual):
    expected = [HandoffExpectation(h.to_agent, h.reason, sorted(h.context_passed)) for h in actual]
    r = score_handoff_accuracy(actual, expected)
    assert r["target_accuracy"] == r["reason_accuracy"] == r["context_completeness"] == 1.0
    assert r["unexpected_handoffs"] == 0 and r["missing_handoffs"] == 0


def test_repeated_target_pairs_the_earliest_handoff():
    r = score_handoff_accuracy([Handoff("a", "billing"), Handoff("billing", "billing")],
                               [HandoffExpectation("billing")])
    assert r["handoff_details"][0]["actual_index"] == 0
    assert r["unexpected_handoff_indices"] == [1]


def test_positional_extra_handoffs_are_the_tail():
    r = score_handoff_accuracy(EXTRA_EARLY, EXPECTED[:1], matching="positional")
    assert r["unexpected_handoff_indices"] == [1, 2]
    assert r["handoff_details"][0]["actual_index"] == 0


def test_no_required_keys_is_complete_context():
    r = score_handoff_accuracy([Handoff("a", "b")], [HandoffExpectation("b")])
    assert r["context_completeness"] == 1.0 and r["handoff_details"][0]["missing_context_keys"] == []


def test_aligned_at_least_positional_exhaustively_on_small_sequences():
    from itertools import product

    seqs = [s for n in range(5) for s in product("abc", repeat=n)]
    for exp in (s for s in seqs if len(s) <= 3):
        expected = [HandoffExpectation(t) for t in exp]
        for act in seqs:
            actual = [Handoff("x", t) for t in act]
            a = score_handoff_accuracy(actual, expected)["target_accuracy"]
            p = score_handoff_accuracy(actual, expected, matching="positional")["target_accuracy"]
            assert a >= p, (exp, act)
