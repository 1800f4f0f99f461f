"""Not applicable is neither 0 nor 1: n/a components, the composite over what applies, parity."""

import math
import warnings

import pandas as pd
import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace, evaluate, load_labeled_set
from maev_kit.errors import InputError, NotApplicableWarning
from maev_kit.metrics import DEFAULT_WEIGHTS

from ._cases import two_conversations

COMPONENTS = ("handoff_quality", "information_retention", "routing_quality")


def bare_traces():
    """Traces with no expectations at all: one with a handoff, one without."""
    routed = MultiAgentTrace("routed", turns=[
        AgentTurn("triage", "router", "Billing will help.", turn_index=1),
        AgentTurn("billing", "specialist", "Refund sent.", turn_index=3)],
        handoffs=[Handoff("triage", "billing", "specialization", {}, 2)],
        user_messages=["refund please"])
    alone = MultiAgentTrace("alone", turns=[
        AgentTurn("triage", "router", "Our hours are 9 to 5.", turn_index=1)],
        user_messages=["when are you open?"])
    return [routed, alone]


def run(traces, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate(traces, progress=False, cache=False, n_resamples=200, **kw)
    return result, [w for w in caught if issubclass(w.category, NotApplicableWarning)]


def test_traces_without_expectations_are_na_with_one_warning():
    result, caught = run(bare_traces())
    pc = result.per_conversation
    for col in COMPONENTS + ("composite", "target_accuracy", "context_completeness",
                             "retention_rate", "routing_exact"):
        assert pc[col].isna().all(), col
    assert (pc["composite_components"] == "").all()
    assert pc["unexpected_handoffs"].tolist() == [1, 0]  # still counted, not scored
    assert len(caught) == 1
    assert str(caught[0].message).startswith(
        "2 of 2 conversations have no expected handoffs, 2 no key facts, 2 no routing case: "
        "those components are n/a")
    assert result.not_applicable == {
        "handoff": {"conversations": 2, "reason": "no expected handoffs"},
        "retention": {"conversations": 2, "reason": "no key facts"},
        "routing": {"conversations": 2, "reason": "no routing case"}}
    summary = result.summary()
    assert list(summary.columns) == ["mean", "ci_low", "ci_high", "n", "note"]
    assert math.isnan(summary.loc["composite", "mean"]) and summary.loc["composite", "n"] == 0
    assert summary.loc["composite", "note"] == "n/a: no component applies to any conversation"
    assert summary.loc["handoff_quality", "note"] == "n/a: no expected handoffs"
    assert summary.loc["routing_exact", "note"] == "n/a: no routing case"


def test_warning_reads_as_a_sentence_when_retention_was_not_judged():
    traces, exps = two_conversations()
    result, caught = run(traces, judge=None, expectations=list(exps.values()))
    assert result.not_applicable["retention"]["reason"] == "not judged (judge=None)"
    assert len(caught) == 1
    assert str(caught[0].message).startswith(
        "2 of 2 conversations were not judged (judge=None): those components are n/a")


def test_composite_is_over_the_applicable_components_renormalised():
    traces, exps = two_conversations()
    partial = [{"conversation_id": e.conversation_id,
                "key_facts": [kf.to_dict() if hasattr(kf, "to_dict") else kf
                              for kf in exps[e.conversation_id].key_facts],
                "routing": [{"user_input": "refund", "correct_agent": "billing"}]}
               for e in exps.values()]
    result, caught = run(traces, expectations=partial)
    pc = result.per_conversation.set_index("conversation_id")
    assert len(caught) == 1 and "2 of 2 conversations have no expected handoffs" in str(
        caught[0].message)
    w = DEFAULT_WEIGHTS
    for cid in ("good", "bad"):
        row = pc.loc[cid]
        assert math.isnan(row["handoff_quality"])
        assert row["composite_components"] == "retention+routing"
        want = (w["retention"] * row["information_retention"]
                + w["routing"] * row["routing_quality"]) / (w["retention"] + w["routing"])
        assert row["composite"] == pytest.approx(want, abs=1e-3)
    n = result.summary().loc["handoff_quality"]
    assert n["n"] == 0 and math.isnan(n["mean"])
    assert result.summary().loc["composite", "n"] == 2


def test_partly_applicable_components_count_only_where_they_apply():
    traces, exps = two_conversations()
    result, caught = run(traces + bare_traces(), expectations=list(exps.values()))
    summary = result.summary()
    assert summary.loc["handoff_quality", "n"] == 2 and summary.loc["composite", "n"] == 2
    assert summary.loc["handoff_quality", "note"] == (
        "n/a for 2 of 4 conversations: no expected handoffs; "
        "no interval: 2 conversations, fewer than 20")
    pc = result.per_conversation.set_index("conversation_id")
    assert summary.loc["handoff_quality", "mean"] == pytest.approx(
        pc.loc[["good", "bad"], "handoff_quality"].mean(), abs=1e-4)
    assert len(caught) == 1
    # worst(): NaN composites last
    assert list(result.worst(4)["conversation_id"]) == ["bad", "good", "routed", "alone"]


def test_article_mode_keeps_the_articles_numbers_and_does_not_warn():
    result, caught = run(bare_traces(), not_applicable="article")
    assert caught == [] and result.not_applicable == {}
    pc = result.per_conversation.set_index("conversation_id")
    w = DEFAULT_WEIGHTS
    # the article: no expectation and a handoff made -> 0; none made -> 1; routing and
    # retention with nothing to check -> 1
    assert pc.loc["routed", "handoff_quality"] == 0.0 and pc.loc["alone", "handoff_quality"] == 1.0
    assert (pc["information_retention"] == 1.0).all() and (pc["routing_quality"] == 1.0).all()
    for cid in ("routed", "alone"):
        row = pc.loc[cid]
        assert row["composite"] == round(w["handoff"] * row["handoff_quality"]
                                         + w["retention"] + w["routing"], 3)
        assert row["composite_components"] == "handoff+retention+routing"
    assert result.provenance["not_applicable"] == "article"


def test_both_modes_agree_where_everything_applies():
    # On support_desk every conversation has expected handoffs, key facts and a routing case:
    # the article's numbers are the n/a-aware numbers.
    ls = load_labeled_set("support_desk")
    na, caught = run(ls, split="test")
    article, _ = run(ls, split="test", not_applicable="article")
    assert caught == [] and na.not_applicable == {}
    pd.testing.assert_frame_equal(na.per_conversation, article.per_conversation)
    pd.testing.assert_frame_equal(na.aggregates, article.aggregates)


def test_bad_not_applicable_option_and_unknown_split():
    with pytest.raises(InputError, match="`not_applicable` must be 'na' or 'article'"):
        evaluate(bare_traces(), not_applicable="zero", progress=False)
    with pytest.raises(InputError, match=r"no split 'tset' \(splits: .*test"):
        evaluate("support_desk", split="tset", progress=False)
