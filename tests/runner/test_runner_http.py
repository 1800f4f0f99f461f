"""The runner through the real openai client and the real litellm, over HTTP to FakeOpenAIServer."""

from __future__ import annotations

import asyncio
import json

import pytest
from runner.runner_helpers import echo_responder, expected_labels, make_items, request_payload

from maev_kit.runner import JudgeCache, arun_judge, run_judge
from maev_kit.testing import hang, http_error, malformed_body, reply, truncated_body


def handoff_of(body: dict) -> str:
    return request_payload(body)["handoff"]


def test_max_concurrency_is_a_ceiling(server, make_backend, backend_kind, judge):
    server.latency = 0.15
    items = make_items(12, 3)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_concurrency=4,
                    cache=False, progress=False)
    assert 2 <= server.peak_in_flight <= 4  # grown from one while the server kept up
    assert len(server.requests) == 12  # one request per handoff, not per fact
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert [v.item_id for v in run.verdicts] == [it.item_id for it in items]
    s = run.stats
    assert (s["requests"], s["cache_hits"], s["errors"], s["handoffs"]) == (12, 0, 0, 12)
    assert s["tokens"] == s["prompt_tokens"] + s["completion_tokens"] > 0
    assert 0.15 <= s["latency_p50"] <= s["latency_p95"]


def test_retries_on_5xx_and_429_are_counted(server, make_backend, backend_kind, judge):
    server.script(http_error(500), http_error(503), http_error(429, retry_after_ms=10))
    items = make_items(3)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_concurrency=1,
                    retry_backoff=0.01, cache=False, progress=False)
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["requests"] == len(server.requests) == 6
    assert run.stats["retries"] == 3
    assert run.stats["failed_attempts"] == {"server": 2, "rate_limit": 1}
    assert run.stats["errors"] == 0


@pytest.mark.parametrize("header", ["retry_after_ms", "retry_after"])
def test_retry_after_is_honoured(server, make_backend, backend_kind, judge, header):
    wait = 0.4 if header == "retry_after_ms" else 1.0
    fault = (http_error(429, retry_after_ms=400) if header == "retry_after_ms"
             else http_error(429, retry_after=1))
    server.script(fault)
    run = run_judge(judge, make_items(1), make_backend(backend_kind, server), max_retries=1,
                    retry_backoff=0.0, cache=False, progress=False)
    assert run.stats["errors"] == 0 and run.stats["retries"] == 1
    first, second = server.requests
    assert first.status == 429
    # With retry_backoff=0 the only reason to wait is the server's header.
    assert second.received_at - first.finished_at >= wait - 0.02


def test_timeouts_become_error_verdicts_and_others_finish(server, make_backend, backend_kind,
                                                          judge):
    server.responder = lambda body: hang(8) if handoff_of(body) == "c1/h0" else echo_responder(body)
    items = make_items(3)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_retries=1,
                    timeout=1.5, retry_backoff=0.01, cache=False, progress=False)
    by_id = {v.item_id: v for v in run.verdicts}
    assert [by_id[i].label for i in ("c0/h0/f0", "c2/h0/f1")] == ["retained", "retained"]
    for fid in ("f0", "f1"):
        v = by_id[f"c1/h0/{fid}"]
        assert v.label is None and "timeout" in v.error and "2 attempts" in v.error
    assert run.stats["failed_attempts"] == {"timeout": 2}
    assert run.stats["errors_by_kind"] == {"timeout": 2}
    assert run.stats["requests"] == 4


def test_malformed_replies_become_error_verdicts(server, make_backend, backend_kind, judge):
    def responder(body):
        h = handoff_of(body)
        if h == "c0/h0":
            return "Sure! Every fact looks retained to me."  # no JSON at all
        if h == "c1/h0":
            return malformed_body()  # a 200 whose HTTP body is not JSON
        if h == "c2/h0":
            return truncated_body()
        if h == "c3/h0":  # readable, but one fact has an invented label
            return json.dumps({"f0": "lost", "f1": "maybe"})
        return echo_responder(body)

    server.responder = responder
    items = make_items(5)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_retries=2,
                    retry_backoff=0.0, cache=False, progress=False)
    by_id = {v.item_id: v for v in run.verdicts}
    assert by_id["c0/h0/f0"].raw == "Sure! Every fact looks retained to me."
    assert all(by_id[f"c{h}/h0/f{f}"].label is None for h in (0, 1, 2) for f in (0, 1))
    assert "bad_response" in by_id["c1/h0/f0"].error
    assert by_id["c3/h0/f0"].label == "lost" and by_id["c3/h0/f1"].label is None
    assert [by_id[f"c4/h0/f{f}"].label for f in (0, 1)] == expected_labels(items)[8:]
    kinds = run.stats["errors_by_kind"]
    assert kinds["unparseable"] == 2 and kinds["bad_response"] == 2 and kinds["parse"] == 1
    # A body cut short: the openai client sees a broken connection, litellm a 500.
    assert kinds.get("connection", 0) + kinds.get("server", 0) == 2
    assert run.stats["errors"] == 7
    # The prose reply got one repair request; the unreadable bodies were retried twice each;
    # two handoffs succeeded at once.
    assert run.stats["requests"] == len(server.requests) == 2 + 3 + 3 + 2


def test_unretryable_errors_are_not_retried(server, make_backend, backend_kind, judge):
    server.script(reply('{"f0": "retained", "f1": "lost"}'), http_error(401, message="bad key"))
    run = run_judge(judge, make_items(2), make_backend(backend_kind, server), max_retries=3,
                    max_concurrency=1, cache=False, progress=False)
    assert run.stats["requests"] == 2 and run.stats["errors_by_kind"] == {"auth": 2}
    assert all("auth" in v.error for v in run.verdicts[2:])


def test_warm_rerun_makes_zero_requests(server, make_backend, backend_kind, judge, tmp_path):
    items = make_items(6)
    backend = make_backend(backend_kind, server)
    cold = run_judge(judge, items, backend, cache=tmp_path, progress=False)
    assert cold.stats["requests"] == 6 and len(JudgeCache(tmp_path)) == 6
    warm = run_judge(judge, items, backend, cache=tmp_path, progress=False)
    assert len(server.requests) == 6
    assert warm.stats["requests"] == 0 and warm.stats["cache_hits"] == 6
    assert warm.stats["tokens"] == 0 and warm.stats["cost"] == 0.0
    assert warm.verdicts == cold.verdicts


def test_cache_key_ignores_concurrency_retries_timeouts_and_keys(server, make_backend,
                                                                 backend_kind, judge, tmp_path):
    items = make_items(4)
    run_judge(judge, items, make_backend(backend_kind, server), max_concurrency=1, max_retries=0,
              timeout=5, cache=tmp_path, progress=False)
    backend = make_backend(backend_kind, server)
    if backend_kind == "litellm":
        backend.params["api_key"] = "another-key"
    again = run_judge(judge, items, backend, max_concurrency=8, max_retries=5, timeout=30,
                      cache=tmp_path, progress=False)
    assert again.stats["requests"] == 0 and len(server.requests) == 4
    # ...but what changes the answer is part of the key.
    other = run_judge(judge, items, make_backend(backend_kind, server, temperature=0.7),
                      cache=tmp_path, progress=False)
    assert other.stats["requests"] == 4
    other_model = run_judge(judge, items, make_backend(backend_kind, server, model="judge-2"),
                            cache=tmp_path, progress=False)
    assert other_model.stats["requests"] == 4 and len(server.requests) == 12


def test_unparseable_replies_are_not_cached(server, make_backend, judge, tmp_path):
    server.responder = lambda body: "no json here"
    run = run_judge(judge, make_items(2), make_backend("openai", server), max_retries=0,
                    cache=tmp_path, progress=False)
    assert run.stats["errors"] == 4 and len(JudgeCache(tmp_path)) == 0
    server.responder = echo_responder
    again = run_judge(judge, make_items(2), make_backend("openai", server), cache=tmp_path,
                      progress=False)
    assert again.stats["requests"] == 2 and again.stats["errors"] == 0


def test_works_inside_a_running_event_loop(server, make_backend, backend_kind, judge):
    items = make_items(3)
    backend = make_backend(backend_kind, server)

    async def notebook_cell():
        # A notebook cell runs inside the kernel's loop: the sync call must still work, twice
        # with the same backend (each call gets its own loop on a worker thread).
        first = run_judge(judge, items, backend, cache=False, progress=False)
        second = run_judge(judge, items, backend, cache=False, progress=False)
        third = await arun_judge(judge, items, backend, cache=False, progress=False)
        return first, second, third

    runs = asyncio.run(notebook_cell())
    assert all([v.label for v in r.verdicts] == expected_labels(items) for r in runs)
    assert len(server.requests) == 9


def test_litellm_reports_its_price_and_never_invents_one(server, make_backend, judge):
    items = make_items(2)
    judge_ = judge
    priced = run_judge(judge_, items, make_backend("litellm", server, model="gpt-4o-mini"),
                       cache=False, progress=False)
    s = priced.stats
    expected = s["prompt_tokens"] * 1.5e-07 + s["completion_tokens"] * 6e-07
    assert s["cost"] == pytest.approx(expected)
    unpriced = run_judge(judge_, items, make_backend("litellm", server, model="my-local-judge"),
                         cache=False, progress=False)
    assert unpriced.stats["cost"] is None
    via_client = run_judge(judge_, items, make_backend("openai", server, model="gpt-4o-mini"),
                           cache=False, progress=False)
    assert via_client.stats["cost"] is None


def test_progress_bar_can_be_shown(server, make_backend, judge, capsys):
    run_judge(judge, make_items(2), make_backend("openai", server), cache=False, progress=True)
    assert "4/4" in capsys.readouterr().err
    run_judge(judge, make_items(2), make_backend("openai", server), cache=False, progress=False)
    assert capsys.readouterr().err == ""


def test_default_cache_is_dot_maev_cache_in_cwd(server, make_backend, judge, tmp_path,
                                                monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_judge(judge, make_items(2), make_backend("openai", server), progress=False)
    assert len(JudgeCache(tmp_path / ".maev_cache")) == 2


def test_the_callers_async_client_keeps_working_on_the_callers_loop(server, judge):
    from openai import AsyncOpenAI

    from maev_kit.backends import OpenAIClientBackend

    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-test")
    backend = OpenAIClientBackend(client, "fake-judge")
    items = make_items(3)

    async def cell():
        before = await client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": json.dumps({"handoff": "x", "facts": {}})}])
        synced = run_judge(judge, items, backend, cache=False, progress=False)  # kit's loop
        awaited = await arun_judge(judge, items, backend, cache=False, progress=False)
        synced_again = run_judge(judge, items, backend, cache=False, progress=False)
        after = await client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": json.dumps({"handoff": "x", "facts": {}})}])
        return before, synced, awaited, synced_again, after

    before, *runs, after = asyncio.run(cell())
    assert before.choices[0].message.content == after.choices[0].message.content == "{}"
    assert all(r.stats["errors"] == 0 for r in runs)
    assert len(server.requests) == 11
