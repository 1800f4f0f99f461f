"""score_routing and routing_confusion."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit import RoutingTestCase, routing_confusion, score_routing
from maev_kit.errors import InputError, UndefinedMetricWarning

CASES = [RoutingTestCase("Refund my card fee", "billing", ["general"]),
         RoutingTestCase("Why was I charged twice?", "billing", ["general"]),
         RoutingTestCase("The app crashes on login", "tech", []),
         RoutingTestCase("What are your opening hours?", "general", [])]
ROUTES = ["billing", "general", "billing", "general"]


def test_worked_example():
    assert score_routing(CASES, ROUTES).to_dict() == {"exact_routing_accuracy": 0.5,
                                                      "acceptable_routing_accuracy": 0.75,
                                                      "total_cases": 4, "misrouted": 1}


@pytest.mark.parametrize("routes", [ROUTES[:3], ROUTES + ["tech"]])
def test_length_mismatch_names_both_lengths(routes):
    with pytest.raises(ValueError) as e:
        score_routing(CASES, routes)
    assert isinstance(e.value, InputError)
    msg = str(e.value)
    assert "`test_cases` has 4" in msg and f"`actual_routes` has {len(routes)}" in msg
    with pytest.raises(ValueError, match=f"`actual_routes` has {len(routes)}"):
        routing_confusion(CASES, routes)


@pytest.mark.parametrize("zero_division", [0.0, 1.0])
def test_empty_input_warns_and_returns_zero_division(zero_division):
    with pytest.warns(UndefinedMetricWarning, match="no test cases"):
        r = score_routing([], [], zero_division=zero_division)
    assert r.to_dict() == {"exact_routing_accuracy": zero_division,
                           "acceptable_routing_accuracy": zero_division, "total_cases": 0,
                           "misrouted": 0}


def test_empty_input_nan_zero_division():
    with pytest.warns(UndefinedMetricWarning):
        r = score_routing([], [], zero_division=float("nan"))
    assert math.isnan(r["exact_routing_accuracy"]) and math.isnan(r["acceptable_routing_accuracy"])


def test_non_empty_input_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        score_routing(CASES, ROUTES)


@pytest.mark.parametrize("bad", [0.5, "warn", True, None])
def test_rejects_bad_zero_division(bad):
    with pytest.raises(ValueError, match="`zero_division`"):
        score_routing(CASES, ROUTES, zero_division=bad)


def test_unrouted_input_is_misrouted():
    r = score_routing(CASES[:2], [None, "billing"])
    assert r["exact_routing_accuracy"] == 0.5 and r["misrouted"] == 1


def test_rejects_non_string_route():
    with pytest.raises(TypeError, match=r"`actual_routes\[1\]`"):
        score_routing(CASES[:2], ["billing", 3])
    with pytest.raises(TypeError, match="`actual_routes` must be a list"):
        score_routing(CASES[:1], "billing")


def test_accepts_dict_cases_and_generators():
    cases = [{"user_input": "x", "correct_agent": "billing", "acceptable_agents": ["general"]}]
    assert score_routing(cases, (r for r in ["general"]))["acceptable_routing_accuracy"] == 1.0


def test_no_category_keys_without_categories():
    assert "category_routing_accuracy" not in score_routing(CASES, ROUTES)


HIER = [RoutingTestCase("refund", "refunds", category="billing"),
        RoutingTestCase("invoice copy", "invoices", category="billing"),
        RoutingTestCase("crash", "mobile_support", category="tech"),
        RoutingTestCase("api error", "api_support", category="tech"),
        RoutingTestCase("hours?", "general")]


def test_category_level_accuracy_beside_specialist_level():
    # refunds→invoices: wrong specialist, right category; api→refunds: wrong category
    routes = ["invoices", "invoices", "mobile_support", "refunds", "general"]
    r = score_routing(HIER, routes)
    assert r["exact_routing_accuracy"] == 0.6
    assert r["category_cases"] == 4
    assert r["category_routing_accuracy"] == 0.75
    assert r["per_category"] == {
        "billing": {"exact_routing_accuracy": 0.5, "acceptable_routing_accuracy": 0.5,
                    "category_routing_accuracy": 1.0, "total_cases": 2, "misrouted": 1},
        "tech": {"exact_routing_accuracy": 0.5, "acceptable_routing_accuracy": 0.5,
                 "category_routing_accuracy": 0.5, "total_cases": 2, "misrouted": 1}}


def test_categories_mapping_overrides_and_unknown_agent_is_wrong():
    routes = ["invoices", "invoices", "mobile_support", "web_support", "general"]
    assert score_routing(HIER, routes)["category_routing_accuracy"] == 0.75  # web_support unknown
    r = score_routing(HIER, routes, categories={"refunds": "billing", "invoices": "billing",
                                                "mobile_support": "tech", "api_support": "tech",
                                                "web_support": "tech"})
    assert r["category_routing_accuracy"] == 1.0


def test_conflicting_categories_raise():
    cases = [RoutingTestCase("a", "refunds", category="billing"),
             RoutingTestCase("b", "refunds", category="tech")]
    with pytest.raises(InputError, match=r"`test_cases\[1\]`.*'refunds'.*`categories="):
        score_routing(cases, ["refunds", "refunds"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcd"), st.lists(st.sampled_from("abcd"), max_size=2),
                          st.one_of(st.none(), st.sampled_from("abcd")),
                          st.one_of(st.none(), st.sampled_from("xy"))), min_size=1, max_size=20))
def test_routing_accuracies_in_unit_interval_and_ordered(rows):
    cases = [RoutingTestCase("u", c, acc, cat) for c, acc, _, cat in rows]
    routes = [r for _, _, r, _ in rows]
    try:
        r = score_routing(cases, routes)
    except InputError:  # conflicting categories drawn
        return
    assert 0.0 <= r["exact_routing_accuracy"] <= r["acceptable_routing_accuracy"] <= 1.0
    assert 0 <= r["misrouted"] <= r["total_cases"] == len(rows)
    if "category_routing_accuracy" in r:
        assert 0.0 <= r["category_routing_accuracy"] <= 1.0
    frame = routing_confusion(cases, routes)
    assert int(frame.to_numpy().sum()) == len(rows)
    assert sum(frame.at[a, a] for a in frame.index if a in frame.columns) == \
        round(r["exact_routing_accuracy"] * len(rows))


def test_confusion_frame():
    df = routing_confusion(CASES, ROUTES)
    assert df.index.name == "expected" and df.columns.name == "actual"
    assert list(df.index) == list(df.columns) == ["billing", "general", "tech"]
    assert df.loc["billing"].tolist() == [1, 1, 0]
    assert df.loc["tech"].tolist() == [1, 0, 0]
    assert df.loc["general"].tolist() == [0, 1, 0]


def test_confusion_unrouted_column_last_and_labels_option():
    df = routing_confusion(CASES[:2], [None, "billing"])
    assert list(df.columns) == ["billing", "(unrouted)"]
    assert df.loc["billing", "(unrouted)"] == 1
    df = routing_confusion(CASES, ROUTES, labels=["tech", "billing"])
    assert list(df.index) == ["tech", "billing"]
    assert df.loc["tech", "billing"] == 1 and int(df.to_numpy().sum()) == 2
    with pytest.raises(ValueError, match="`labels` contains duplicates"):
        routing_confusion(CASES, ROUTES, labels=["tech", "tech"])


def test_confusion_empty():
    df = routing_confusion([], [])
    assert df.shape == (0, 0)
