"""The typed reports of the metrics: frozen, slotted dataclasses whose ``to_dict()`` is the
article's dict (the JSON is pinned byte for byte) and which read as that mapping, never equal
to it."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import math
import pickle
import warnings
from collections.abc import Mapping

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit import (
    Handoff,
    HandoffExpectation,
    MultiAgentTrace,
    RoutingTestCase,
    coordination_score,
    detect_circular_handoffs,
    score_handoff_accuracy,
    score_routing,
    weight_sensitivity,
)
from maev_kit.metrics import (
    CategoryRouting,
    CircularHandoff,
    CoordinationReport,
    HandoffDetail,
    HandoffReport,
    LoopReport,
    RoutingReport,
)
from maev_kit.errors import UndefinedMetricWarning
from maev_kit.metrics import _reports

EXPECTED = [HandoffExpectation("billing", "specialization", ["account_number"]),
            HandoffExpectation("tech", "escalation", ["account_number", "error_code"])]
ACTUAL = [Handoff("triage", "general", "fallback", {}, 1),
          Handoff("general", "billing", "specialization", {"account_number": "A-1"}, 3),
          Handoff("billing", "tech", "capability_match", {"account_number": "A-1"}, 5)]
CASES = [RoutingTestCase("Refund my fee", "billing", ["general"], "money"),
         RoutingTestCase("App crashes", "tech", category="it"),
         RoutingTestCase("Opening hours?", "general")]
ROUTES = ["general", "billing", "general"]
PING_PONG = MultiAgentTrace("c-1", handoffs=[Handoff("triage", "billing", turn_index=2),
                                             Handoff("billing", "tech", turn_index=4),
                                             Handoff("tech", "billing", turn_index=6),
                                             Handoff("billing", "tech", turn_index=8)])
RETENTION = {"retention_rate": 0.75, "contradicted": 1}


def _reports_of_every_kind():
    handoffs = score_handoff_accuracy(ACTUAL, EXPECTED)
    routing = score_routing(CASES, ROUTES)
    return [handoffs, score_handoff_accuracy(ACTUAL, []), routing, score_routing(CASES[:1], ["x"]),
            detect_circular_handoffs(PING_PONG, max_handoffs=3),
            coordination_score(handoffs, RETENTION, routing),
            coordination_score(handoffs, RETENTION, routing, not_applicable="article")]


# --------------------------------------------------------------- to_dict is the article's dict
def test_handoff_report_json_is_pinned():
    r = score_handoff_accuracy(ACTUAL, EXPECTED)
    assert type(r) is HandoffReport and all(type(d) is HandoffDetail for d in r.handoff_details)
    assert json.dumps(r.to_dict()) == (
        '{"target_accuracy": 1.0, "reason_accuracy": 0.5, "context_completeness": 0.5, '
        '"missing_handoffs": 0, "unexpected_handoffs": 1, "matching": "aligned", '
        '"handoff_details": [{"expected_index": 0, "expected_target": "billing", '
        '"expected_reason": "specialization", "actual_index": 1, "actual_target": "billing", '
        '"actual_reason": "specialization", "target_correct": true, "reason_correct": true, '
        '"context_complete": true, "missing_context_keys": []}, {"expected_index": 1, '
        '"expected_target": "tech", "expected_reason": "escalation", "actual_index": 2, '
        '"actual_target": "tech", "actual_reason": "capability_match", "target_correct": true, '
        '"reason_correct": false, "context_complete": false, '
        '"missing_context_keys": ["error_code"]}], "unexpected_handoff_indices": [0]}')
    assert r.handoff_details[1].missing_context_keys == ("error_code",)
    assert r.unexpected_handoff_indices == (0,) and r.handoff_accuracy is None


def test_handoff_accuracy_key_only_when_nothing_is_expected():
    r = score_handoff_accuracy(ACTUAL, [])
    assert r.handoff_accuracy == 0.0
    assert r.to_dict() == {"handoff_accuracy": 0.0, "target_accuracy": 0.0,
                           "reason_accuracy": 0.0, "context_completeness": 0.0,
                           "missing_handoffs": 0, "unexpected_handoffs": 3,
                           "matching": "aligned", "handoff_details": [],
                           "unexpected_handoff_indices": [0, 1, 2]}
    assert list(r)[0] == "handoff_accuracy"  # first, as the article had it
    assert "handoff_accuracy" not in score_handoff_accuracy(ACTUAL, EXPECTED)


def test_missing_handoff_detail():
    r = score_handoff_accuracy([], EXPECTED[:1])
    assert r.handoff_details[0] == HandoffDetail(0, "billing", "specialization", None, None, None,
                                                 False, False, False, ("account_number",))
    assert r.to_dict()["handoff_details"][0]["missing_context_keys"] == ["account_number"]


def test_routing_report_json_is_pinned_and_category_keys_are_optional():
    r = score_routing(CASES, ROUTES)
    assert type(r) is RoutingReport and type(r.per_category["money"]) is CategoryRouting
    assert json.dumps(r.to_dict()) == (
        '{"exact_routing_accuracy": 0.333, "acceptable_routing_accuracy": 0.667, '
        '"total_cases": 3, "misrouted": 1, "category_routing_accuracy": 0.0, '
        '"category_cases": 2, "per_category": {"it": {"exact_routing_accuracy": 0.0, '
        '"acceptable_routing_accuracy": 0.0, "category_routing_accuracy": 0.0, '
        '"total_cases": 1, "misrouted": 1}, "money": {"exact_routing_accuracy": 0.0, '
        '"acceptable_routing_accuracy": 1.0, "category_routing_accuracy": 0.0, '
        '"total_cases": 1, "misrouted": 0}}}')
    plain = score_routing(CASES[2:], ["general"])
    assert plain.per_category is None and plain.category_routing_accuracy is None
    assert list(plain.to_dict()) == ["exact_routing_accuracy", "acceptable_routing_accuracy",
                                     "total_cases", "misrouted"]


def test_loop_report_json_is_pinned():
    r = detect_circular_handoffs(PING_PONG, max_handoffs=3)
    assert type(r) is LoopReport and type(r.loops[0]) is CircularHandoff
    assert r.loops[0].agents == ("billing", "tech") and r.loops[0].handoff_indices == (1, 2, 3)
    assert json.dumps(r.to_dict()) == (
        '{"conversation_id": "c-1", "loops": [{"kind": "ping_pong", "agents": ["billing", '
        '"tech"], "turn_indices": [4, 6, 8], "handoff_indices": [1, 2, 3]}], "has_loops": true, '
        '"total_handoffs": 4, "max_handoffs": 3, "exceeds_limit": true, "should_escalate": true}')


def test_components_used_only_in_na_mode():
    h = score_handoff_accuracy(ACTUAL, EXPECTED)
    na = coordination_score(h, RETENTION, None)
    article = coordination_score(h, RETENTION, {}, not_applicable="article")
    assert type(na) is type(article) is CoordinationReport
    assert na.components_used == ("handoff", "retention")
    assert na.to_dict()["components_used"] == ("handoff", "retention")  # a tuple, as before
    assert article.components_used is None and "components_used" not in article.to_dict()
    assert list(article.to_dict()) == ["handoff_quality", "information_retention",
                                       "routing_quality", "composite_coordination"]


# ------------------------------------------------------------------------ the mapping view
@pytest.mark.parametrize("r", _reports_of_every_kind(), ids=lambda r: type(r).__name__)
def test_reports_read_as_the_dict_and_never_equal_it(r):
    d = r.to_dict()
    assert isinstance(r, Mapping)
    assert list(r) == list(r.keys()) == list(d) and len(r) == len(d)
    assert list(r.items()) == list(d.items()) and list(r.values()) == list(d.values())
    for key, value in d.items():
        assert key in r and r.get(key) == value
        assert repr(r[key]) == repr(value)  # nested records as dicts and lists, as before
    assert "nope" not in r and r.get("nope") is None and r.get("nope", 7) == 7
    with pytest.raises(KeyError):
        r["nope"]
    assert dict(r) == d and {**r} == d
    assert r != d and d != r  # attributes are the API: compare to_dict()
    with pytest.raises(TypeError):
        r["total_cases"] = 1  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(r, next(iter(d)), 1)
    assert not hasattr(r, "__dict__")  # slotted


def test_a_list_of_reports_makes_a_frame():
    rows = [detect_circular_handoffs(PING_PONG), detect_circular_handoffs(MultiAgentTrace("c-2"))]
    df = pd.DataFrame(rows)
    assert list(df.columns) == list(rows[0].to_dict()) and list(df["has_loops"]) == [True, False]


def test_docstrings_say_attributes_are_the_api():
    for cls in (HandoffReport, RoutingReport, LoopReport, CoordinationReport):
        doc = inspect.getdoc(cls) or ""
        assert "attributes are the API" in doc and "never equals a dict" in doc, cls


# ------------------------------------------------------------------ the fast constructors
BUILT = {
    HandoffDetail: (1, "tech", "escalation", 2, "tech", None, True, False, False, ("k",)),
    HandoffReport: (0.5, 1.0, 0.5, 1, 0, "aligned",
                    (HandoffDetail(0, "a", None, None, None, None, False, False, False),),
                    (3,), None),
    CategoryRouting: (0.5, 1.0, 0.5, 2, 0),
    RoutingReport: (0.5, 0.75, 4, 1, 0.5, 2, {"money": CategoryRouting(0.5, 1.0, 0.5, 2, 0)}),
    CircularHandoff: ("cycle", ("a", "b", "c"), (1, 2, 3), (0, 1, 2)),
    LoopReport: ("c-1", (CircularHandoff("cycle", ("a", "b", "c"), (1, 2, 3), (0, 1, 2)),),
                 True, 3, 5, False, True),
    CoordinationReport: (0.75, math.nan, 0.5, 0.6, ("handoff", "routing")),
}
BUILDERS = {HandoffDetail: _reports.new_handoff_detail, HandoffReport: _reports.new_handoff_report,
            CategoryRouting: _reports.new_category_routing,
            RoutingReport: _reports.new_routing_report,
            CircularHandoff: _reports.new_circular_handoff, LoopReport: _reports.new_loop_report,
            CoordinationReport: _reports.new_coordination_report}


def test_every_report_type_is_exported_and_built_fast():
    assert set(BUILT) == set(BUILDERS) == {getattr(_reports, n) for n in _reports.__all__}


@pytest.mark.parametrize("cls", list(BUILT), ids=lambda c: c.__name__)
def test_fast_constructor_builds_the_dataclass(cls):
    values = BUILT[cls]
    assert len(values) == len(dataclasses.fields(cls))  # no field forgotten
    fast, slow = BUILDERS[cls](*values), cls(*values)
    assert type(fast) is cls
    assert fast == slow and repr(fast) == repr(slow) and hash(fast) == hash(slow)
    assert fast.to_dict() == slow.to_dict() or cls is CoordinationReport  # NaN != NaN
    assert repr(fast.to_dict()) == repr(slow.to_dict())
    for again in (pickle.loads(pickle.dumps(fast)), copy.deepcopy(fast), copy.copy(fast)):
        assert type(again) is cls and repr(again) == repr(fast)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.__setattr__(dataclasses.fields(cls)[0].name, None)
    assert not hasattr(fast, "__dict__")


def test_record_builder_refuses_a_class_without_slots():
    @dataclasses.dataclass(frozen=True)
    class Plain:
        x: int

    with pytest.raises(TypeError, match="slotted dataclass"):
        _reports.record_builder(Plain)


# ----------------------------------------------------- typed reports in, as the dicts did
AGENTS = st.sampled_from(["a", "b", "c"])
HANDOFFS = st.lists(st.builds(Handoff, AGENTS, AGENTS, st.sampled_from([None, "escalation"]),
                              st.dictionaries(st.sampled_from(["k1", "k2"]), st.integers(),
                                              max_size=2)), max_size=5)
EXPECTATIONS = st.lists(st.builds(HandoffExpectation, AGENTS,
                                  st.sampled_from([None, "escalation"]),
                                  st.lists(st.sampled_from(["k1", "k2"]), max_size=2,
                                           unique=True)), max_size=4)


@settings(max_examples=100, deadline=None)
@given(HANDOFFS, EXPECTATIONS, st.lists(st.sampled_from(["a", "b", None]), max_size=3),
       st.floats(0, 1), st.integers(0, 2))
def test_coordination_reads_typed_reports_as_their_dicts(actual, expected, routes, rate, bad):
    h = score_handoff_accuracy(actual, expected)
    cases = [RoutingTestCase("x", "a", ["b"], "cat") for _ in routes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)  # no case: routing is n/a
        ro = score_routing(cases, routes)
    ret = {"retention_rate": rate, "contradicted": bad}
    for mode in ("na", "article"):
        for routing in (ro, None) if mode == "na" else (ro,):
            typed = coordination_score(h, ret, routing, not_applicable=mode)
            plain = coordination_score(h.to_dict(), ret,
                                       None if routing is None else routing.to_dict(),
                                       not_applicable=mode)
            assert repr(typed) == repr(plain)
    frame = weight_sensitivity(h, ret, ro)
    assert frame.equals(weight_sensitivity(h.to_dict(), ret, ro.to_dict()))


def test_a_typed_report_in_the_wrong_place_is_checked_by_its_keys():
    routing = score_routing(CASES, ROUTES)
    with pytest.raises(ValueError, match="`handoff_report` has no key 'target_accuracy'"):
        coordination_score(routing, RETENTION, routing)
    handoffs = score_handoff_accuracy(ACTUAL, EXPECTED)
    with pytest.raises(ValueError, match="`routing_report` has no key"):
        coordination_score(handoffs, RETENTION, handoffs)
    # the article's mode reads a missing key as 0, from a typed report too
    assert coordination_score(handoffs, RETENTION, handoffs,
                              not_applicable="article").routing_quality == 0.0
