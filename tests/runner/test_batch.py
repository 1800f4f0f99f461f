"""run_judge(mode="batch"): real litellm over HTTP to the fake server's batch API."""

from __future__ import annotations

import time

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.errors import InputError, JudgeUnavailableError
from maev_kit.runner import BatchPendingError, run_judge
from maev_kit.testing import FakeOpenAIServer, free_port

FAST = {"poll_interval": 0.05, "progress": False}


@pytest.fixture
def batch_server(litellm_module):
    with FakeOpenAIServer(responder=echo_responder, batch_delay=0.2) as s:
        yield s


def backend(server, model="fake-judge", **params):
    from maev_kit.backends import LiteLLMBackend

    return LiteLLMBackend(f"openai/{model}", api_base=server.base_url, api_key="sk-test",
                          **params)


def ids(items):
    return [f"c{h}#0" for h in sorted({int(it.conversation_id[1:]) for it in items})]


def test_batch_gives_the_verdicts_of_a_sync_run(batch_server, tmp_path):
    items = make_items(6)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path / "b",
                    mode="batch", **FAST)
    chat_requests = [r for r in batch_server.requests if r.path.endswith("/chat/completions")]
    sync = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path / "s",
                     progress=False)
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert [(v.item_id, v.label, v.error) for v in run.verdicts] == \
        [(v.item_id, v.label, v.error) for v in sync.verdicts]
    assert chat_requests == []  # everything went through the batch
    assert [b.custom_ids for b in batch_server.batches] == [ids(items)]
    s = run.stats
    assert (s["mode"], s["batches"], s["batch_ids"]) == ("batch", 1, [batch_server.batches[0].id])
    assert (s["requests"], s["retries"], s["cache_hits"], s["errors"]) == (6, 0, 0, 0)
    assert s["prompt_tokens"] == sync.stats["prompt_tokens"] > 0


def test_nothing_is_paid_twice(batch_server, tmp_path):
    items = make_items(4)
    first = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                      **FAST)
    batch_server.reset()
    again = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                      **FAST)
    sync = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, progress=False)
    assert batch_server.requests == [] and len(batch_server.batches) == 1
    assert (again.stats["batches"], again.stats["requests"], again.stats["cache_hits"]) == (0, 0, 4)
    assert again.stats["cost"] == 0 and again.stats["tokens"] == 0
    assert sync.stats["requests"] == 0 and sync.stats["cache_hits"] == 4  # same cache keys
    assert [v.label for v in again.verdicts] == [v.label for v in first.verdicts]
    # more items later: only the new handoffs go out
    more = make_items(6)
    grown = run_judge(EchoJudge(), more, backend(batch_server), cache=tmp_path, mode="batch",
                      **FAST)
    assert batch_server.batches[-1].custom_ids == ["c4#0", "c5#0"]
    assert (grown.stats["requests"], grown.stats["cache_hits"]) == (2, 4)
    assert [v.label for v in grown.verdicts] == expected_labels(more)


def test_a_restarted_run_picks_up_the_batch_it_already_submitted(batch_server, tmp_path):
    batch_server.batch_delay = 1.0
    items = make_items(5)
    started = time.monotonic()
    with pytest.raises(BatchPendingError, match="run again later") as info:
        run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                  batch_timeout=0.2, **FAST)
    assert time.monotonic() - started < 5
    assert len(batch_server.batches) == 1
    submitted = batch_server.batches[0].id
    assert info.value.batch_ids == [submitted]
    # a new process: nothing in memory, only the cache directory
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    assert len(batch_server.batches) == 1  # no second submission
    assert run.stats["batch_ids"] == [submitted]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert [r.path for r in batch_server.requests].count("/v1/batches") == 1


def test_failed_lines_are_resent_alone(batch_server, tmp_path):
    batch_server.batch_fail_ids = {"c1#0", "c3#0"}
    items = make_items(5)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    assert [b.custom_ids for b in batch_server.batches] == [ids(items), ["c1#0", "c3#0"]]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    s = run.stats
    assert (s["batches"], s["requests"], s["retries"], s["errors"]) == (2, 7, 2, 0)
    assert s["failed_attempts"] == {"server": 2}


def test_an_expired_batch_resends_only_what_it_left_unanswered(batch_server, tmp_path):
    batch_server.batch_expire = 1
    items = make_items(6)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    first, second = batch_server.batches
    assert first.status == "expired" and second.status == "completed"
    assert second.custom_ids == ["c3#0", "c4#0", "c5#0"]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["failed_attempts"] == {"timeout": 3}


def test_a_failed_batch_is_resent_whole(batch_server, tmp_path):
    batch_server.batch_fail = 1
    items = make_items(3)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    assert [b.status for b in batch_server.batches] == ["failed", "completed"]
    assert batch_server.batches[1].custom_ids == ids(items)
    assert run.stats["errors"] == 0 and run.stats["requests"] == 6


def test_lines_that_keep_failing_become_error_verdicts_with_a_cause(batch_server, tmp_path):
    from maev_kit.runner._batch import MAX_ROUNDS

    batch_server.batch_fail_rate = 1.0
    items = make_items(2)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    assert len(batch_server.batches) == MAX_ROUNDS
    assert all(b.custom_ids == ids(items) for b in batch_server.batches)
    assert all(v.label is None and v.cause == "server" and "batch line failed" in v.error
               for v in run.verdicts)
    assert run.stats["errors_by_cause"] == {"server": 4}
    assert run.stats["requests"] == 2 * MAX_ROUNDS and run.stats["cost"] is not None


def test_unreadable_replies_are_resent_then_reported_by_the_judge(batch_server, tmp_path):
    from maev_kit.runner._batch import MAX_ROUNDS

    batch_server.fail = "prose"
    items = make_items(1)
    run = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                    **FAST)
    assert len(batch_server.batches) == MAX_ROUNDS
    assert all(v.cause == "unparseable" and v.raw for v in run.verdicts)
    batch_server.fail = None
    fixed = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                      **FAST)
    assert [v.label for v in fixed.verdicts] == expected_labels(items)  # nothing bad was cached


def test_cost_at_batch_prices_is_half_the_sync_cost(batch_server, tmp_path):
    items = make_items(4)
    batch = run_judge(EchoJudge(), items, backend(batch_server, "gpt-4o-mini"),
                      cache=tmp_path / "b", mode="batch", **FAST)
    sync = run_judge(EchoJudge(), items, backend(batch_server, "gpt-4o-mini"),
                     cache=tmp_path / "s", progress=False)
    assert sync.stats["cost"] > 0
    assert batch.stats["tokens"] == sync.stats["tokens"]
    assert batch.stats["cost"] == pytest.approx(sync.stats["cost"] / 2, rel=1e-9)
    unpriced = run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path / "u",
                         mode="batch", **FAST)
    assert unpriced.stats["cost"] is None  # unknown, never guessed


def test_batch_prices_fall_back_to_half_the_sync_price(litellm_module):
    from maev_kit.runner._batch import batch_prices

    info = litellm_module.get_model_info("gpt-4o-mini")
    assert batch_prices(litellm_module, "gpt-4o-mini") == (
        info["input_cost_per_token_batches"], info["output_cost_per_token_batches"])
    unbatched = next(m for m, v in litellm_module.model_cost.items()
                     if v.get("input_cost_per_token") and v.get("output_cost_per_token")
                     and v.get("input_cost_per_token_batches") is None
                     and v.get("litellm_provider") == "openai" and v.get("mode") == "chat")
    i = litellm_module.get_model_info(unbatched)
    assert batch_prices(litellm_module, unbatched) == pytest.approx(
        (i["input_cost_per_token"] / 2, i["output_cost_per_token"] / 2))
    assert batch_prices(litellm_module, "openai/no-such-model-xyz") is None


def test_a_judge_that_cannot_answer_stops_at_once(litellm_module, tmp_path):
    items = make_items(2)
    with FakeOpenAIServer(fail="401") as server:
        with pytest.raises(JudgeUnavailableError, match="authentication failed"):
            run_judge(EchoJudge(), items, backend(server), cache=tmp_path, mode="batch", **FAST)
    from maev_kit.backends import LiteLLMBackend

    nowhere = LiteLLMBackend("openai/x", api_base=f"http://127.0.0.1:{free_port()}/v1",
                             api_key="sk-test")
    started = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match="nothing answers"):
        run_judge(EchoJudge(), items, nowhere, cache=tmp_path, mode="batch", **FAST)
    assert time.monotonic() - started < 10


def test_bad_batch_arguments(batch_server, tmp_path):
    from openai import AsyncOpenAI

    from maev_kit.backends import OpenAIClientBackend

    items = make_items(1)
    with pytest.raises(ValueError, match="cache=False"):
        run_judge(EchoJudge(), items, backend(batch_server), cache=False, mode="batch", **FAST)
    client = OpenAIClientBackend(AsyncOpenAI(base_url=batch_server.base_url, api_key="x"), "m")
    with pytest.raises(ValueError, match="litellm"):
        run_judge(EchoJudge(), items, client, cache=tmp_path, mode="batch", **FAST)
    with pytest.raises(ValueError, match="mode"):
        run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="bulk")
    with pytest.raises(ValueError, match="poll_interval"):
        run_judge(EchoJudge(), items, backend(batch_server), cache=tmp_path, mode="batch",
                  poll_interval=0, progress=False)


def test_maev_score_batch_gives_the_numbers_of_a_sync_run(litellm_module, tmp_path,
                                                         monkeypatch):
    import json

    from click.testing import CliRunner

    from maev_kit.cli import cli

    monkeypatch.chdir(tmp_path)  # the default cache lands here
    with FakeOpenAIServer(batch_delay=0.2) as server:  # answers the retention prompt
        common = ["score", "support_desk", "--judge", "openai/fake-judge", "--api-base",
                  server.base_url, "--api-key", "sk-test", "--json"]
        batch = CliRunner().invoke(cli, [*common, "--batch"])
        assert batch.exit_code == 0, batch.output
        chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
        n_batches = len(server.batches)
        sync = CliRunner().invoke(cli, [*common, "--no-cache"])
        assert sync.exit_code == 0, sync.output
        refused = CliRunner().invoke(cli, [*common, "--batch", "--no-cache"])
        offline = CliRunner().invoke(cli, ["score", "support_desk", "--batch"])
    got, want = json.loads(batch.output), json.loads(sync.output)
    assert chat == [] and n_batches == 1
    assert got["aggregates"] == want["aggregates"]
    stats = got["judge"]["stats"]
    assert (stats["mode"], stats["batches"], stats["requests"]) == ("batch", 1, stats["handoffs"])
    assert isinstance(refused.exception, InputError) and "--no-cache" in str(refused.exception)
    assert isinstance(offline.exception, InputError)
    assert "--batch only applies to a model judge" in str(offline.exception)


def test_a_batch_the_provider_no_longer_knows_is_sent_again(litellm_module, tmp_path):
    items = make_items(3)
    with FakeOpenAIServer(responder=echo_responder, batch_delay=30) as first:
        port = first.port
        with pytest.raises(BatchPendingError):
            run_judge(EchoJudge(), items, backend(first), cache=tmp_path, mode="batch",
                      batch_timeout=0.2, **FAST)
    with FakeOpenAIServer(responder=echo_responder, batch_delay=0.2, port=port) as second:
        run = run_judge(EchoJudge(), items, backend(second), cache=tmp_path, mode="batch",
                        **FAST)
        assert [b.custom_ids for b in second.batches] == [ids(items)]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["errors"] == 0
