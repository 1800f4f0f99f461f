"""A judge error is never a verdict: evaluate, pair_stats and the article's function agree."""

import asyncio
import math
import warnings

import pandas as pd
import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace, evaluate
from maev_kit.backends import LiteLLMBackend
from maev_kit.errors import ERROR_CAUSES, JudgeErrorsExceeded, JudgeErrorWarning
from maev_kit.evaluation import EvaluationResult, JudgeErrorSummary
from maev_kit.expectations import load_expectations
from maev_kit.judges import answer_retention_prompt
from maev_kit.runner import score_information_retention
from maev_kit.testing import FakeOpenAIServer, http_error

MARKER = "What is your account number?"  # the judge's endpoint fails every handoff that shows it


def responder(body):
    messages = list(body.get("messages") or [])
    if any(MARKER in str(m.get("content")) for m in messages):  # refused, not retried
        return http_error(400, message="The response was filtered due to the prompt "
                                       "triggering the content management policy")
    return answer_retention_prompt(messages)


def conversations():
    """ok: one handoff, judged. failed: one handoff, its judge call fails. mixed: one of each."""
    user = ["I was double charged $49.99 on ACCT-4471"]
    ok = MultiAgentTrace("ok", turns=[
        AgentTurn("triage", "router", "Sending you to billing.", turn_index=1),
        AgentTurn("billing", "specialist", "Account ACCT-4471: the refund is on its way.", turn_index=3)],
        handoffs=[Handoff("triage", "billing", "specialization", {"account_number": "ACCT-4471"}, 2)],
        user_messages=user)
    failed = MultiAgentTrace("failed", turns=[
        AgentTurn("triage", "router", "Sending you to tech.", turn_index=1),
        AgentTurn("tech", "specialist", MARKER, turn_index=3)],
        handoffs=[Handoff("triage", "tech", "fallback", {}, 2)], user_messages=user)
    mixed = MultiAgentTrace("mixed", turns=[
        AgentTurn("triage", "router", "Sending you to billing.", turn_index=1),
        AgentTurn("billing", "specialist", "Account ACCT-4471 found; passing you on.", turn_index=3),
        AgentTurn("tech", "specialist", MARKER, turn_index=5)],
        handoffs=[Handoff("triage", "billing", "specialization", {}, 2),
                  Handoff("billing", "tech", "escalation", {}, 4)], user_messages=user)
    fact = "Account number is ACCT-4471"
    exps = load_expectations([
        {"conversation_id": cid, "handoffs": [{"expected_target": "billing"}],
         "key_facts": [{"fact_id": f"f{h}", "handoff_index": h, "text": fact} for h in hs],
         "routing": [{"user_input": "double charged", "correct_agent": "billing"}]}
        for cid, hs in (("ok", [0]), ("failed", [0]), ("mixed", [0, 1]))])
    return [ok, failed, mixed], exps


@pytest.fixture(scope="module")
def server():
    with FakeOpenAIServer(responder=responder) as s:
        yield s


def backend(server):
    return LiteLLMBackend("openai/judge", api_base=server.base_url, api_key="sk-test")


@pytest.fixture(scope="module")
def run(server):
    traces, exps = conversations()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate(traces, expectations=list(exps.values()), judge="openai/judge",
                          backend=backend(server), cache=False, progress=False, n_resamples=200)
    return result, caught


def test_errored_facts_are_left_out_of_every_rate(run):
    result, _ = run
    pc = result.per_conversation.set_index("conversation_id")
    assert pc.loc["ok", "retention_rate"] == 1.0 and pc.loc["ok", "judge_errors"] == 0
    # every fact failed: no rate, and the composite is over what applies
    assert pc.loc["failed", "judge_errors"] == 1 and pc.loc["failed", "n_facts"] == 1
    assert math.isnan(pc.loc["failed", "retention_rate"])
    assert math.isnan(pc.loc["failed", "information_retention"])
    assert pc.loc["failed", "composite_components"] == "handoff+routing"
    # one of two facts failed: the rate is over the judged one only
    assert pc.loc["mixed", "judge_errors"] == 1 and pc.loc["mixed", "retained"] == 1
    assert pc.loc["mixed", "retention_rate"] == 1.0


def test_ledger_and_summary_count_the_failures_by_cause(run):
    result, _ = run
    led = result.ledger.set_index("item_id")
    failed = led[led["error"].notna()]
    assert sorted(failed.index) == ["failed/h0/f0", "mixed/h1/f1"]
    assert failed["label"].isna().all() and failed["error_cause"].isin(ERROR_CAUSES).all()
    assert pd.isna(led.loc["ok/h0/f0", "error_cause"])
    assert set(failed["error_cause"]) == {"content_filter"}  # as the runner classified it
    s = result.judge_errors
    assert (s.total, s.judged, s.failed) == (4, 2, 2) and sum(s.by_cause.values()) == 2
    assert s.by_cause == {"content_filter": 2} and s.share == 0.5
    assert str(s) == "retention over 2 of 4 facts; 2 failed (content_filter 2)"
    note = result.summary().loc["retention_rate", "note"]
    assert note.startswith("over 2 of 4 facts; 2 failed (") and result.summary().loc[
        "retention_rate", "n"] == 2


def test_one_judge_error_warning_with_counts(run):
    _, caught = run
    judge_warnings = [w for w in caught if issubclass(w.category, JudgeErrorWarning)]
    assert len(judge_warnings) == 1
    assert str(judge_warnings[0].message).startswith(
        "2 of 4 facts could not be judged (content_filter 2): they are left out of every rate")


def test_raise_for_judge_errors(run):
    result, _ = run
    with pytest.raises(JudgeErrorsExceeded) as exc:
        result.raise_for_judge_errors()
    message = str(exc.value)
    assert "\n" not in message and message.startswith("2 of 4 facts could not be judged (50.0% "
                                                      "> 5.0% allowed; ")
    assert result.raise_for_judge_errors(max_share=0.5) is result
    with pytest.raises(ValueError, match="`max_share`"):
        result.raise_for_judge_errors(max_share=5)


def test_pair_stats_and_the_articles_function_agree_with_evaluate(run, server):
    result, _ = run
    pairs = result.pair_stats.set_index(["from_agent", "to_agent"])
    assert math.isnan(pairs.loc[("triage", "tech"), "retention_rate"])
    assert pairs.loc[("triage", "tech"), "judge_errors"] == 1
    assert math.isnan(pairs.loc[("billing", "tech"), "retention_rate"])
    assert pairs.loc[("triage", "billing"), "retention_rate"] == 1.0

    traces = {t.conversation_id: t for t in conversations()[0]}

    def article(cid):
        t = traces[cid]
        pre = list(t.user_messages) + [t.turns[0].message]
        post = [t.turns[-1].message]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = asyncio.run(score_information_retention(
                backend(server), pre, post, ["Account number is ACCT-4471"]))
        return out, caught

    out, caught = article("failed")
    assert math.isnan(out["retention_rate"]) and out["errors"] == 1
    assert out["details"][0]["error_cause"] == "content_filter"
    assert any(issubclass(w.category, JudgeErrorWarning) for w in caught)
    out, _ = article("ok")
    assert out["retention_rate"] == 1.0 and out["errors"] == 0


def test_score_summary_strings_and_share():
    s = JudgeErrorSummary(10, 7, 3, {"timeout": 1, "auth": 2})
    assert str(s) == "retention over 7 of 10 facts; 3 failed (auth 2, timeout 1)"
    assert s.note() == "over 7 of 10 facts; 3 failed (auth 2, timeout 1)"
    assert str(JudgeErrorSummary(5, 5, 0, {})) == "retention over 5 of 5 facts; 0 failed"
    assert math.isnan(JudgeErrorSummary().share)


def test_no_failure_no_raise():
    e = pd.DataFrame()
    r = EvaluationResult(e, e, e, e, e, [], [], None, {}, {},
                         judge_errors=JudgeErrorSummary(100, 96, 4, {"timeout": 4}))
    assert r.raise_for_judge_errors() is r  # 4 % <= 5 %
    with pytest.raises(JudgeErrorsExceeded, match="4 of 100 facts .*timeout 4"):
        r.raise_for_judge_errors(max_share=0.03)
