"""Routing from counts: what maev_kit.scale adds up block by block is score_routing's report."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit.errors import InputError
from maev_kit.expectations import RoutingTestCase
from maev_kit.metrics import routing_confusion, score_routing
from maev_kit.metrics._routing import (
    confusion_from_counts,
    count_routes,
    report_from_counts,
)

AGENTS = ["billing", "tech", "general", "human"]
CATEGORY = {"billing": "money", "tech": "it", "general": None, "human": "it"}


@st.composite
def cases_and_routes(draw):
    n = draw(st.integers(1, 40))
    cases, routes = [], []
    with_categories = draw(st.booleans())
    for _ in range(n):
        correct = draw(st.sampled_from(AGENTS))
        acceptable = draw(st.lists(st.sampled_from(AGENTS), max_size=2, unique=True))
        cases.append(RoutingTestCase("input", correct, acceptable,
                                     CATEGORY[correct] if with_categories else None))
        routes.append(draw(st.sampled_from(AGENTS + [None, "elsewhere"])))
    return cases, routes


@settings(max_examples=150, deadline=None)
@given(cases_and_routes(), st.data())
def test_counts_of_blocks_add_up_to_the_report_of_all(cr, data):
    cases, routes = cr
    cut = data.draw(st.integers(0, len(cases)))
    merged = count_routes(cases[:cut], routes[:cut])
    for key, n in count_routes(cases[cut:], routes[cut:]).items():
        merged[key] = merged.get(key, 0) + n
    whole = score_routing(cases, routes)
    assert report_from_counts(merged) == whole
    assert report_from_counts(merged).to_dict() == whole.to_dict()
    assert confusion_from_counts(merged).equals(routing_confusion(cases, routes))
    # the rule itself, read case by case
    exact = sum(r == c.correct_agent for c, r in zip(cases, routes))
    ok = sum(r is not None and (r == c.correct_agent or r in c.acceptable_agents)
             for c, r in zip(cases, routes))
    assert whole["exact_routing_accuracy"] == round(exact / len(cases), 3)
    assert whole["acceptable_routing_accuracy"] == round(ok / len(cases), 3)
    assert whole["misrouted"] == len(cases) - ok


def test_a_category_conflict_is_an_error_both_ways():
    cases = [RoutingTestCase("a", "billing", category="money"),
             RoutingTestCase("b", "billing", category="it")]
    with pytest.raises(InputError, match=r"`test_cases\[1\]` puts agent 'billing'"):
        score_routing(cases, ["billing", "tech"])
    with pytest.raises(InputError, match="agent 'billing' in categories 'money' and 'it'"):
        report_from_counts(count_routes(cases, ["billing", "tech"]))
