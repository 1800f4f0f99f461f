"""The runner against a server of one's own, played by FakeOpenAIServer in a one-slot mode (one
request worked on at a time, the others queued, as on llama.cpp's server): concurrency that
adapts, requests abandoned and cancelled, one repair retry for an unreadable reply, a reply cap
sized to each request, and a model name the server does not serve."""

from __future__ import annotations

import asyncio
import json

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.errors import JudgeUnavailableError
from maev_kit.runner import run_judge
from maev_kit.runner._requests import REPAIR_PROMPT
from maev_kit.testing import FakeOpenAIServer, http_error, reply


def test_a_one_slot_server_loses_no_item_and_is_never_flooded(make_backend, backend_kind):
    with FakeOpenAIServer(echo_responder, slots=1, latency=0.2) as server:
        items = make_items(12, 2)
        run = run_judge(EchoJudge(), items, make_backend(backend_kind, server),
                        max_concurrency=16, cache=False, progress=False)
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["errors"] == 0 and len(server.completed) == 12
    # a queueing server answers n in flight n times slower: the window shrinks from its
    # start (4, grown while the first replies looked unqueued — a client slow to send its
    # first requests makes them so) to one request queued behind the one worked on, never
    # near the ceiling of 16; the later requests each wait for about one other
    assert server.peak_in_flight <= 8 and run.stats["peak_in_flight"] <= 8
    late = [r.finished_at - r.received_at for r in server.completed[8:]]
    assert max(late) < 3.5 * 0.2, late


def test_a_parallel_server_gets_the_whole_ceiling(make_backend, backend_kind):
    with FakeOpenAIServer(echo_responder, latency=0.3) as server:
        run = run_judge(EchoJudge(), make_items(30, 1), make_backend(backend_kind, server),
                        max_concurrency=8, cache=False, progress=False)
    assert server.peak_in_flight == 8 == run.stats["peak_in_flight"]
    assert run.stats["errors"] == 0


def test_requests_abandoned_on_timeout_are_cancelled_and_the_server_stops_work(
        make_backend, backend_kind):
    """A request the kit gives up on closes its connection: the one-slot server notices and
    stops working on it (outcome ``abandoned``) instead of generating a reply nobody reads."""
    with FakeOpenAIServer(echo_responder, slots=1) as server:
        backend = make_backend(backend_kind, server)
        run_judge(EchoJudge(), make_items(1, 1), backend, cache=False, progress=False)  # warm
        server.reset()
        server.latency = 2.0
        run = run_judge(EchoJudge(), make_items(2, 1), backend, timeout=0.5, max_retries=0,
                        cache=False, progress=False)
        asyncio.run(asyncio.sleep(0.3))  # the server notices within ~10 ms of the close
        outcomes = [r.outcome for r in server.requests]
        busy = server.busy_time
    assert run.stats["errors_by_cause"] == {"timeout": 2}
    assert outcomes == ["abandoned", "abandoned"]
    assert busy < 2 * 1.0  # each stopped about 0.5 s in, not after its 2 s of work


def test_an_unreadable_reply_gets_one_repair_retry_never_the_same_prompt(make_backend,
                                                                         backend_kind):
    with FakeOpenAIServer(echo_responder, fail="prose", slots=1) as server:
        run = run_judge(EchoJudge(), make_items(3, 2), make_backend(backend_kind, server),
                        max_retries=3, cache=False, progress=False, retry_backoff=0.01)
        bodies = [r.body for r in server.requests]
    assert len(bodies) == 6  # two per handoff: the prompt, then one repair
    firsts = [b for b in bodies if len(b["messages"]) == 2]
    repairs = [b for b in bodies if len(b["messages"]) == 4]
    assert len(firsts) == len(repairs) == 3
    for first in firsts:
        (second,) = [b for b in repairs if b["messages"][:2] == first["messages"]]
        assert second["messages"][2]["role"] == "assistant"
        assert second["messages"][3] == {"role": "user", "content": REPAIR_PROMPT}
    assert run.stats["errors_by_cause"] == {"unparseable": 6}
    assert run.stats["retries"] == 3


def test_a_repaired_reply_is_the_verdict_and_is_cached(make_backend, backend_kind, tmp_path):
    with FakeOpenAIServer(echo_responder) as server:
        server.script(reply("Sure! Here are the labels you asked for."))
        items = make_items(1, 2)
        backend = make_backend(backend_kind, server)
        run = run_judge(EchoJudge(), items, backend, cache=tmp_path, progress=False)
        again = run_judge(EchoJudge(), items, backend, cache=tmp_path, progress=False)
    assert [v.label for v in run.verdicts] == expected_labels(items) == \
        [v.label for v in again.verdicts]
    assert run.stats["requests"] == 2 and again.stats["cache_hits"] == 1


def test_the_real_cause_is_reported_when_the_repair_times_out(make_backend, backend_kind):
    from maev_kit.testing import hang

    with FakeOpenAIServer(echo_responder) as server:
        server.script(reply("not json"), hang(5), hang(5))
        run = run_judge(EchoJudge(), make_items(1, 1), make_backend(backend_kind, server),
                        timeout=0.5, max_retries=1, cache=False, progress=False,
                        retry_backoff=0.01)
    assert run.stats["errors_by_cause"] == {"unparseable": 1}


def test_timeouts_and_5xx_are_retried_with_backoff(make_backend, backend_kind):
    with FakeOpenAIServer(echo_responder) as server:
        server.script(http_error(503), http_error(500))
        run = run_judge(EchoJudge(), make_items(1, 1), make_backend(backend_kind, server),
                        max_retries=2, retry_backoff=0.01, cache=False, progress=False)
    assert run.stats["errors"] == 0 and run.stats["requests"] == 3


def test_the_reply_cap_is_sized_to_the_handoff_and_temperature_is_zero(make_backend,
                                                                       backend_kind):
    """A small model that does not stop (the server's ``ramble``) is cut at the cap."""
    with FakeOpenAIServer(echo_responder, ramble=3000) as server:
        run = run_judge(EchoJudge(), make_items(2, 3), make_backend(backend_kind, server),
                        cache=False, progress=False, max_retries=0)
        capped = [r.body for r in server.requests]
        server.reset()
        uncapped_run = run_judge(EchoJudge(), make_items(1, 3), make_backend(
            backend_kind, server, max_tokens=None), cache=False, progress=False, max_retries=0)
        uncapped = [r.body for r in server.requests]
    assert [b["max_tokens"] for b in capped] == [200 + 150 * 3] * 2
    assert all(b["temperature"] == 0 for b in capped)
    assert run.stats["completion_tokens"] == 2 * 650  # cut at the cap (finish_reason length)
    assert {"temperature": 0, "max_tokens": "auto"}.items() <= run.stats["generation"].items()
    assert "max_tokens" not in uncapped[0]
    assert uncapped_run.stats["completion_tokens"] == 3000


def test_a_model_the_server_does_not_serve_stops_the_run_before_any_request(make_backend,
                                                                            backend_kind):
    with FakeOpenAIServer(echo_responder, models=["stub-model"], slots=1) as server:
        with pytest.raises(JudgeUnavailableError) as err:
            run_judge(EchoJudge(), make_items(3), make_backend(backend_kind, server,
                                                               model="stub-modle"),
                      cache=False, progress=False)
        assert server.requests == []  # only GET /v1/models was asked
        url = server.base_url
    assert f"stub-modle is not served at {url}; the server serves: stub-model" in str(err.value)


def test_a_404_for_the_model_stops_the_run_with_the_servers_own_words(make_backend,
                                                                      backend_kind):
    """A server without /v1/models (the preflight cannot tell) that refuses the name."""
    with FakeOpenAIServer(echo_responder, models=["stub-model"]) as server:
        backend = make_backend(backend_kind, server, model="stub-modle")

        async def cannot_tell():
            return None

        backend.preflight = cannot_tell
        with pytest.raises(JudgeUnavailableError) as err:
            run_judge(EchoJudge(), make_items(4), backend, cache=False, progress=False)
        # stopped at the first refusal, nothing retried: at most the first window went out
        bodies = [json.dumps(r.body, sort_keys=True) for r in server.requests]
        assert len(bodies) <= 4 and len(set(bodies)) == len(bodies)
        url = server.base_url
    message = str(err.value)
    assert "does not serve model" in message and url in message
    assert "The model `stub-modle` does not exist" in message
    assert "to_frame" not in message


def test_progress_shows_queued_in_flight_and_done(make_backend, backend_kind):
    from maev_kit.runner import _requests

    shown: list[str] = []

    class Bar:
        def update(self, n):
            pass

        def set_postfix_str(self, text, refresh=True):
            shown.append(text)

        def close(self):
            pass

    with FakeOpenAIServer(echo_responder, slots=1) as server:
        from maev_kit.runner._run import _arun
        from maev_kit.runner._requests import RunSettings, run_on_background_loop

        settings = RunSettings(4, 0, 10, False, 0.01, False)
        run_on_background_loop(lambda: _arun(EchoJudge(), make_items(5), make_backend(
            backend_kind, server), settings, Bar()))
    assert shown[0] == "4 queued · 1 in flight · 0 done"  # the first request goes out alone
    assert any(s.endswith("4 done") for s in shown)
    del _requests
