"""The runner's contract without HTTP: arguments, offline judges, ordering, the article's function."""

from __future__ import annotations

import asyncio
import json

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.backends import BackendError, ScriptedBackend
from maev_kit.judges import HeuristicJudge, RetentionJudge
from maev_kit.retention import RetentionItem
from maev_kit.runner import JudgeRun, arun_judge, run_judge, score_information_retention
from maev_kit.traces import Message


def answer(msgs):
    return echo_responder({"messages": msgs})


def test_verdicts_come_back_in_item_order_even_when_handoffs_interleave():
    items = make_items(3)
    shuffled = [items[5], items[0], items[3], items[1], items[4], items[2]]
    with ScriptedBackend([answer] * 3) as backend:
        run = run_judge(EchoJudge(), shuffled, backend, cache=False, progress=False)
    assert [v.item_id for v in run.verdicts] == [it.item_id for it in shuffled]
    assert [v.label for v in run.verdicts] == expected_labels(shuffled)
    assert len(backend.requests) == 3


def test_scripted_errors_are_retried_with_backoff():
    backend = ScriptedBackend([BackendError("rate_limit", "slow down", retry_after=0.01),
                               BackendError("connection", "reset"), answer])
    with backend:
        run = run_judge(EchoJudge(), make_items(1), backend, retry_backoff=0.001, cache=False,
                        progress=False)
    assert run.stats["retries"] == 2 and run.stats["errors"] == 0
    assert run.stats["failed_attempts"] == {"rate_limit": 1, "connection": 1}


def test_max_retries_zero_gives_up_after_one_attempt():
    with ScriptedBackend([BackendError("server", "boom")]) as backend:
        run = run_judge(EchoJudge(), make_items(1), backend, max_retries=0, cache=False,
                        progress=False)
    assert run.stats["errors_by_kind"] == {"server": 2}
    assert run.verdicts[0].error == "request failed after 1 attempt: server: boom"


def test_offline_judge_runs_in_process_with_stats():
    after = (Message("billing", "Refund for ACCT-4471 is on its way.", 3),)
    items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account number is ACCT-4471", (), after),
             RetentionItem("c1/h0/f2", "c1", 0, "f2", "Account number is ACCT-9999", (), after)]
    run = run_judge(HeuristicJudge(), items, progress=False)
    assert isinstance(run, JudgeRun) and run.model is None
    assert [v.item_id for v in run.verdicts] == ["c1/h0/f1", "c1/h0/f2"]
    assert run.verdicts[0].label == "retained"
    assert run.stats["requests"] == 0 and run.stats["errors"] == 0 and run.stats["handoffs"] == 1
    frame = run.to_frame()
    assert list(frame["item_id"]) == ["c1/h0/f1", "c1/h0/f2"]
    assert set(frame["judge"]) == {"heuristic"} and frame.loc[0, "conversation_id"] == "c1"


def test_clear_errors_for_wrong_arguments(tmp_path):
    items = make_items(1)
    with pytest.raises(ValueError, match="pass `backend`"):
        run_judge(EchoJudge(), items, progress=False)
    with pytest.raises(ValueError, match="backend=None"):
        run_judge(HeuristicJudge(), items, "gpt-4o-mini", progress=False)
    with pytest.raises(ValueError, match="max_concurrency"):
        run_judge(EchoJudge(), items, ScriptedBackend([]), max_concurrency=0)
    with pytest.raises(ValueError, match="timeout"):
        run_judge(EchoJudge(), items, ScriptedBackend([]), timeout=0)
    with pytest.raises(ValueError, match="max_retries"):
        run_judge(EchoJudge(), items, ScriptedBackend([]), max_retries=-1)
    with pytest.raises(TypeError, match="cache"):
        run_judge(EchoJudge(), items, ScriptedBackend([]), cache=3.5, progress=False)
    with pytest.raises(TypeError, match="items\\[0\\]"):
        run_judge(EchoJudge(), [{"item_id": "x"}], ScriptedBackend([]))
    with pytest.raises(ValueError, match="twice"):
        run_judge(EchoJudge(), items + items[:1], ScriptedBackend([]))
    with pytest.raises(TypeError, match="OpenAIClientBackend"):
        run_judge(EchoJudge(), items, object(), progress=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="directory"):
        run_judge(EchoJudge(), items, ScriptedBackend([]), cache=tmp_path / "file",
                  progress=False)


def test_a_model_string_becomes_a_litellm_backend_and_no_items_send_nothing():
    run = run_judge(EchoJudge(), [], "openai/whatever", cache=False, progress=False)
    assert run.verdicts == [] and run.model == "openai/whatever"
    assert run.stats["requests"] == 0 and run.stats["cost"] == 0.0


def test_a_parse_that_raises_becomes_error_verdicts():
    class Broken(EchoJudge):
        def parse(self, reply, items):
            raise KeyError("oops")

    with ScriptedBackend(["{}"] * 2) as backend:  # the request and its one repair
        run = run_judge(Broken(), make_items(1), backend, retry_backoff=0, cache=False,
                        progress=False)
    assert all("judge.parse raised KeyError" in v.error for v in run.verdicts)
    assert run.stats["errors_by_kind"] == {"unparseable": 2}


def test_real_retention_judge_against_the_fake_servers_default_responder(make_backend, tmp_path):
    from maev_kit.testing import FakeOpenAIServer

    after = (Message("billing", "I see account ACCT-4471. Which city do you live in?", 3),)
    items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account number is ACCT-4471", (), after,
                           "triage", "billing"),
             RetentionItem("c1/h0/f2", "c1", 0, "f2", "The customer lives in Lyon", (), after,
                           "triage", "billing")]
    with FakeOpenAIServer() as server:  # default responder: the heuristic judge
        run = run_judge(RetentionJudge("v2"), items, make_backend("openai", server),
                        cache=tmp_path, progress=False)
    assert [v.label for v in run.verdicts] == ["retained", "lost"]
    assert run.judge_name == "retention-v2" and run.judge_version == RetentionJudge("v2").version


def test_score_information_retention_keeps_the_articles_keys(make_backend):
    from openai import AsyncOpenAI, OpenAI

    from maev_kit.testing import FakeOpenAIServer

    pre = [{"role": "user", "content": "My account is ACCT-4471 and I was charged twice."}]
    post = ["Billing here. Which account number is it?"]
    facts = ["Account number is ACCT-4471", "The customer was charged twice"]
    with FakeOpenAIServer() as server:
        aclient = AsyncOpenAI(base_url=server.base_url, api_key="x")
        result = asyncio.run(score_information_retention(aclient, pre, post, facts))
        sync = asyncio.run(score_information_retention(
            OpenAI(base_url=server.base_url, api_key="x"), pre, post, facts))
        assert len(server.requests) == 2
    assert set(result) >= {"retention_rate", "retained", "lost", "contradicted", "details"}
    n = result["retained"] + result["lost"] + result["contradicted"] + result["errors"]
    assert n == 2 and result["retention_rate"] == round(result["retained"] / 2, 3)
    assert result["details"][0]["fact"] == facts[0] and result["details"][0]["status"] == "lost"
    assert sync == result


def test_score_information_retention_with_no_facts_is_undefined():
    # Nothing judged is not "everything retained": the rate is NaN (issue 10, part B).
    result = asyncio.run(score_information_retention(ScriptedBackend([]), ["a"], ["b"], []))
    rate = result.pop("retention_rate")
    assert rate != rate and result == {"retained": 0, "lost": 0, "contradicted": 0,
                                       "errors": 0, "details": []}


def test_arun_judge_awaits_on_the_callers_loop():
    async def main():
        with ScriptedBackend([answer] * 2) as backend:
            return await arun_judge(EchoJudge(), make_items(2), backend, cache=False,
                                    progress=False)

    run = asyncio.run(main())
    assert [v.label for v in run.verdicts] == expected_labels(make_items(2))
    assert "2 requests" in repr(run) and json.dumps(run.stats)
