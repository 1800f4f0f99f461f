"""How many requests a run starts with: a server that says how many it works on at once
(llama.cpp's ``/props`` ``total_slots``, vLLM's ``owned_by``) gets that many from the first
request; one that does not say gets one request alone, then a few, raised while latency holds;
a hosted provider's API gets the ceiling. Played by FakeOpenAIServer over real HTTP."""

from __future__ import annotations

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.backends import VLLM_SLOTS, server_slots
from maev_kit.runner import run_judge
from maev_kit.runner._requests import START_CONCURRENCY, Window, opening
from maev_kit.testing import FakeOpenAIServer


def _together(server, n: int, latency: float) -> int:
    """How many of the first requests arrived before the first reply could have come back."""
    first = server.requests[0].received_at
    return sum(1 for r in server.requests[:n] if r.received_at - first < latency / 2)


@pytest.mark.parametrize("props, expected", [
    ({"total_slots": 3}, 3),
    ({"total_slots": "4"}, None),   # a string is not a count
    ({"total_slots": True}, None),
    ({"total_slots": 0}, None),
    ({"total_slots": 10**9}, None),  # not believed
    ({"slots": 2}, None),
    (None, None),                  # no /props: a 404
])
def test_server_slots_reads_total_slots_defensively(props, expected):
    with FakeOpenAIServer(echo_responder, props=props, models=["m"]) as server:
        assert server_slots(server.base_url) == expected


def test_a_vllm_server_is_known_by_its_model_list():
    with FakeOpenAIServer(echo_responder, models=["m"], owned_by="vllm") as server:
        assert server_slots(server.base_url) == VLLM_SLOTS
    with FakeOpenAIServer(echo_responder, models=["m"], owned_by="library") as server:
        assert server_slots(server.base_url) is None


def test_a_server_that_announces_its_slots_gets_them_from_the_first_request(make_backend,
                                                                         backend_kind):
    latency = 0.3
    with FakeOpenAIServer(echo_responder, slots=6, props={"total_slots": 6},
                          latency=latency) as server:
        items = make_items(18, 1)
        run = run_judge(EchoJudge(), items, make_backend(backend_kind, server),
                        max_concurrency=16, cache=False, progress=False)
        together = _together(server, 10, latency)
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["window_start"] == "announced 6"
    assert together == 6  # six at once, not one probe request and then four
    assert run.stats["errors"] == 0


def test_a_silent_server_gets_one_request_alone_first(make_backend, backend_kind):
    latency = 0.3
    with FakeOpenAIServer(echo_responder, latency=latency) as server:
        run = run_judge(EchoJudge(), make_items(10, 1), make_backend(backend_kind, server),
                        max_concurrency=16, cache=False, progress=False)
        together = _together(server, 10, latency)
        second = server.requests[1].received_at - server.requests[0].received_at
    assert run.stats["window_start"] == "probe"
    assert together == 1 and second >= latency * 0.9
    assert run.stats["errors"] == 0


def test_a_one_slot_server_that_says_so_loses_nothing_and_is_not_flooded(make_backend,
                                                                        backend_kind):
    with FakeOpenAIServer(echo_responder, slots=1, props={"total_slots": 1},
                          latency=0.2) as server:
        items = make_items(10, 2)
        run = run_judge(EchoJudge(), items, make_backend(backend_kind, server),
                        max_concurrency=16, cache=False, progress=False)
    assert run.stats["window_start"] == "announced 1"
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["errors"] == 0 and server.peak_in_flight <= 4


def test_opening_for_each_kind_of_server():
    class Hosted:
        def endpoint(self):
            return None

    class Local:
        slots = None

        def endpoint(self):
            return "http://127.0.0.1:8080/v1"

    w, why = opening(Hosted(), 16)
    assert (w.size, why) == (16, "hosted")
    local = Local()
    w, why = opening(local, 16)
    assert (w.size, why) == (1, "probe")
    w.replied(1.0, 0.0, 1)
    assert w.size == START_CONCURRENCY
    local.slots = 64
    w, why = opening(local, 16)
    assert (w.size, why) == (16, "announced 64")  # the ceiling still caps it


def test_a_window_that_starts_open_still_halves_on_a_queue():
    w = Window(16, 8, probe=False)
    assert w.size == 8
    w.replied(1.0, 0.0, 8)  # the first reply only sets the fastest latency: it grows
    assert w.size == 9
    w.replied(4.0, 0.0, 8)  # four times slower with eight in flight: six were queued
    assert w.size == 4


@pytest.mark.parametrize("latency, timeout, opened", [
    (0.3, 60.0, START_CONCURRENCY),  # fast replies: the usual four
    (10.0, 60.0, 3),                  # three finish in 30 s, half the timeout
    (20.0, 60.0, 1),                  # a slow model: one at a time until latency holds
    (90.0, 60.0, 1),                  # slower than the timeout: never below one
    (20.0, None, START_CONCURRENCY),  # no timeout given: the usual four
])
def test_a_slow_first_reply_opens_the_window_no_wider_than_the_timeout_allows(
        latency, timeout, opened):
    w = Window(16, timeout=timeout)
    assert w.size == 1
    w.replied(latency, 0.0, 1)
    assert w.size == opened


def test_a_slow_one_slot_server_gets_no_more_than_it_answers_within_the_timeout(
        make_backend, backend_kind):
    """0.6 s a reply, 2 s timeout, one slot: four in flight would leave the fourth waiting 2.4 s
    and time out; the window opens at one and grows only while latency holds."""
    with FakeOpenAIServer(echo_responder, slots=1, latency=0.6) as server:
        items = make_items(6, 1)
        run = run_judge(EchoJudge(), items, make_backend(backend_kind, server), timeout=2.0,
                        max_retries=0, max_concurrency=16, cache=False, progress=False)
        outcomes = [r.outcome for r in server.requests]
    assert run.stats["errors"] == 0, run.stats["errors_by_cause"]
    assert "abandoned" not in outcomes and len(outcomes) == 6
