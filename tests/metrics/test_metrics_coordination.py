"""coordination_score and weight_sensitivity."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit import coordination_score, score_handoff_accuracy, weight_sensitivity
from maev_kit.metrics import DEFAULT_WEIGHTS

HANDOFF = {"target_accuracy": 1.0, "context_completeness": 0.5}
RETENTION = {"retention_rate": 0.75, "contradicted": 1}
ROUTING = {"acceptable_routing_accuracy": 0.75}


def test_worked_example():
    article = coordination_score(HANDOFF, RETENTION, ROUTING, not_applicable="article")
    assert article.to_dict() == {
        "handoff_quality": 0.75, "information_retention": 0.55, "routing_quality": 0.75,
        "composite_coordination": 0.67}
    # With every component applicable the default gives the same numbers, and says so.
    assert coordination_score(HANDOFF, RETENTION, ROUTING).to_dict() == {
        **article, "components_used": ("handoff", "retention", "routing")}


def test_missing_keys_count_as_zero_in_article_mode():
    article = {"not_applicable": "article"}
    assert coordination_score({}, {}, {}, **article).to_dict() == {
        "handoff_quality": 0.0, "information_retention": 0.0, "routing_quality": 0.0,
        "composite_coordination": 0.0}
    r = coordination_score({"target_accuracy": 1.0}, {"retention_rate": 1.0}, {}, **article)
    assert r["handoff_quality"] == 0.5 and r["information_retention"] == 1.0
    assert r["composite_coordination"] == 0.55
    assert coordination_score({"target_accuracy": None}, {}, {}, **article)[
        "handoff_quality"] == 0.0


def test_missing_keys_are_errors_by_default():
    with pytest.raises(ValueError, match="`routing_report` has no key 'acceptable_routing_accuracy'"):
        coordination_score(HANDOFF, RETENTION, {})
    with pytest.raises(ValueError, match="`retention_report` has no key 'contradicted'.*"
                                         "score_information_retention"):
        coordination_score(HANDOFF, {"retention_rate": 1.0}, ROUTING)


@pytest.mark.parametrize("mode", ["na", "article"])
@pytest.mark.parametrize(("arg", "report", "bad", "good"), [
    (0, {"target_accuracy": 1.0, "context_completness": 0.5}, "context_completness",
     "context_completeness"),
    (0, {"target_acuracy": 1.0, "context_completeness": 0.5}, "target_acuracy", "target_accuracy"),
    (1, {"retention_rte": 0.75, "contradicted": 1}, "retention_rte", "retention_rate"),
    (1, {"retention_rate": 0.75, "contradictd": 1}, "contradictd", "contradicted"),
    (2, {"acceptable_routing_acuracy": 0.75}, "acceptable_routing_acuracy",
     "acceptable_routing_accuracy"),
])
def test_misspelt_report_keys_are_rejected_by_name(mode, arg, report, bad, good):
    reports = [HANDOFF, RETENTION, ROUTING]
    reports[arg] = report
    with pytest.raises(ValueError, match=f"'{bad}' where '{good}' is expected"):
        coordination_score(*reports, not_applicable=mode)
    with pytest.raises(ValueError, match=f"'{bad}' where '{good}' is expected"):
        weight_sensitivity(*reports)


def test_the_score_functions_reports_are_accepted_whole():
    from maev_kit import RoutingTestCase, score_routing

    handoffs = score_handoff_accuracy([], [{"expected_target": "billing"}])
    routing = score_routing([RoutingTestCase("refund", "billing", category="money")], ["billing"])
    retention = {"retention_rate": 0.5, "retained": 1, "lost": 1, "contradicted": 0,
                 "errors": 0, "details": []}
    r = coordination_score(handoffs, retention, routing)
    assert r["components_used"] == ("handoff", "retention", "routing")
    assert r["handoff_quality"] == 0.0 and r["routing_quality"] == 1.0


def test_not_applicable_components_are_left_out_and_the_weights_renormalised():
    r = coordination_score(HANDOFF, RETENTION, None)
    assert math.isnan(r["routing_quality"]) and r["components_used"] == ("handoff", "retention")
    assert r["composite_coordination"] == round((0.3 * 0.75 + 0.4 * 0.55) / 0.7, 3)
    # The forms "nothing to measure" takes in the score_* reports:
    no_handoffs = score_handoff_accuracy([], [])  # no expectation
    no_cases = {"exact_routing_accuracy": 0.0, "acceptable_routing_accuracy": 0.0,
                "total_cases": 0, "misrouted": 0}
    nothing_judged = {"retention_rate": float("nan"), "contradicted": 0}
    r = coordination_score(no_handoffs, RETENTION, no_cases)
    assert r["components_used"] == ("retention",) and r["composite_coordination"] == 0.55
    r = coordination_score({"target_accuracy": None, "context_completeness": None},
                           nothing_judged, ROUTING)
    assert r["components_used"] == ("routing",) and r["composite_coordination"] == 0.75
    r = coordination_score(no_handoffs, nothing_judged, None)
    assert r["components_used"] == () and math.isnan(r["composite_coordination"])
    assert all(math.isnan(r[k]) for k in ("handoff_quality", "information_retention",
                                          "routing_quality"))
    # A zero-weight component is not used even when it applies.
    r = coordination_score(HANDOFF, nothing_judged, ROUTING,
                           weights={"handoff": 0.0, "retention": 1.0, "routing": 0.0})
    assert r["components_used"] == () and math.isnan(r["composite_coordination"])


def test_article_mode_keeps_the_articles_numbers_for_empty_reports():
    no_handoffs = score_handoff_accuracy([], [])
    r = coordination_score(no_handoffs, RETENTION, {}, not_applicable="article")
    assert r["handoff_quality"] == 1.0 and r["routing_quality"] == 0.0
    assert r["composite_coordination"] == round(0.3 * 1.0 + 0.4 * 0.55, 3)
    with pytest.raises(TypeError, match="`routing_report` must be a mapping"):
        coordination_score(HANDOFF, RETENTION, None, not_applicable="article")
    with pytest.raises(ValueError, match="`not_applicable` must be 'na' or 'article'"):
        coordination_score(HANDOFF, RETENTION, ROUTING, not_applicable="zero")


def test_retention_is_floored_at_zero():
    r = coordination_score(HANDOFF, {"retention_rate": 0.5, "contradicted": 4}, ROUTING)
    assert r["information_retention"] == 0.0


def test_contradiction_penalty_option():
    r = coordination_score(HANDOFF, RETENTION, ROUTING, contradiction_penalty=0.0)
    assert r["information_retention"] == 0.75 and r["composite_coordination"] == 0.75
    with pytest.raises(ValueError, match="`contradiction_penalty` must be a non-negative"):
        coordination_score(HANDOFF, RETENTION, ROUTING, contradiction_penalty=-0.1)


def test_perfect_no_handoff_conversation_is_not_scored_zero():
    # The article read target_accuracy, which its no-expectation report lacked.
    handoffs = score_handoff_accuracy([], [])
    r = coordination_score(handoffs, {"retention_rate": 1.0, "contradicted": 0},
                           {"acceptable_routing_accuracy": 1.0})
    assert r["composite_coordination"] == 1.0


def test_custom_weights():
    r = coordination_score(HANDOFF, RETENTION, ROUTING,
                           weights={"handoff": 0.0, "retention": 1.0, "routing": 0.0})
    assert r["composite_coordination"] == 0.55
    r = coordination_score(HANDOFF, RETENTION, ROUTING,
                           weights={"handoff": 0.5, "retention": 0, "routing": 0.5})
    assert r["composite_coordination"] == 0.75


@pytest.mark.parametrize(("weights", "needle"), [
    ({"handoff": 0.5, "retention": 0.5, "routing": 0.5}, "must sum to 1, they sum to 1.5"),
    ({"handoff": -0.2, "retention": 0.6, "routing": 0.6}, r"`weights\['handoff'\]` must be a non-negative"),
    ({"handoff": 0.5, "retention": 0.5}, "missing routing"),
    ({"handoff": 0.3, "retention": 0.4, "routing": 0.3, "loops": 0.0}, "unknown loops"),
    ({"handoff": float("nan"), "retention": 0.5, "routing": 0.5}, "non-negative number"),
    ({"handoff": "0.3", "retention": 0.4, "routing": 0.3}, "non-negative number"),
])
def test_weights_are_validated(weights, needle):
    with pytest.raises(ValueError, match=needle):
        coordination_score(HANDOFF, RETENTION, ROUTING, weights=weights)
    with pytest.raises(ValueError, match=needle):
        weight_sensitivity(HANDOFF, RETENTION, ROUTING, weights=weights)


def test_weights_must_be_a_mapping_and_reports_mappings():
    with pytest.raises(TypeError, match="`weights` must be a mapping"):
        coordination_score(HANDOFF, RETENTION, ROUTING, weights=[0.3, 0.4, 0.3])
    with pytest.raises(TypeError, match="`routing_report` must be a mapping"):
        coordination_score(HANDOFF, RETENTION, 0.75)


UNIT = st.floats(0, 1, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(UNIT, UNIT, UNIT, st.integers(0, 5), UNIT,
       st.tuples(UNIT, UNIT, UNIT).filter(lambda w: sum(w) > 0.01))
def test_scores_in_unit_interval(t, c, rate, contradicted, routing, raw):
    total = sum(raw)
    w = dict(zip(("handoff", "retention", "routing"), (x / total for x in raw)))
    w["routing"] = 1.0 - w["handoff"] - w["retention"]
    if w["routing"] < 0:
        w["routing"] = 0.0
    reports = ({"target_accuracy": t, "context_completeness": c},
               {"retention_rate": rate, "contradicted": contradicted},
               {"acceptable_routing_accuracy": routing})
    r = coordination_score(*reports, weights=w, not_applicable="article")
    assert all(0.0 <= v <= 1.0 for v in r.values())
    na = coordination_score(*reports, weights=w)
    assert 0.0 <= na["composite_coordination"] <= 1.0
    assert na["components_used"] == tuple(k for k in ("handoff", "retention", "routing")
                                          if w[k] > 0)


def test_weight_sensitivity_frame():
    df = weight_sensitivity(HANDOFF, RETENTION, ROUTING)
    assert list(df.columns) == ["component", "shift", "weight_handoff", "weight_retention",
                                "weight_routing", "composite_coordination", "change"]
    assert df["component"].tolist() == ["base", "handoff", "handoff", "retention", "retention",
                                        "routing", "routing"]
    assert df["shift"].tolist() == [0.0, -0.1, 0.1, -0.1, 0.1, -0.1, 0.1]
    assert df.loc[0, "composite_coordination"] == 0.67
    # retention +0.1 → 0.5; handoff and routing share the remaining 0.5 in proportion 0.3:0.3
    row = df.iloc[4]
    assert (row["weight_handoff"], row["weight_retention"], row["weight_routing"]) == (
        0.25, 0.5, 0.25)
    assert row["composite_coordination"] == 0.65 and row["change"] == -0.02
    sums = df[["weight_handoff", "weight_retention", "weight_routing"]].sum(axis=1)
    assert all(math.isclose(s, 1.0, abs_tol=2e-3) for s in sums)


def test_weight_sensitivity_clips_at_zero_and_splits_evenly():
    df = weight_sensitivity(HANDOFF, RETENTION, ROUTING,
                            weights={"handoff": 0.0, "retention": 1.0, "routing": 0.0})
    down = df[(df["component"] == "handoff") & (df["shift"] < 0)].iloc[0]
    assert down["weight_handoff"] == 0.0 and down["weight_retention"] == 1.0
    down = df[(df["component"] == "retention") & (df["shift"] < 0)].iloc[0]
    assert (down["weight_handoff"], down["weight_retention"], down["weight_routing"]) == (
        0.05, 0.9, 0.05)


def test_weight_sensitivity_delta_option_and_validation():
    df = weight_sensitivity(HANDOFF, RETENTION, ROUTING, delta=0.2)
    assert df["shift"].abs().max() == 0.2
    with pytest.raises(ValueError, match="`delta`"):
        weight_sensitivity(HANDOFF, RETENTION, ROUTING, delta=0)


def test_default_weights_are_the_articles():
    assert dict(DEFAULT_WEIGHTS) == {"handoff": 0.3, "retention": 0.4, "routing": 0.3}
