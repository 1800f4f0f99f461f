"""How many requests a run starts with: a server that says how many it works on at once
(llama.cpp's ``/props`` ``total_slots``, vLLM's ``owned_by``) gets that many from the first
request; one that does not say gets one request alone, then a few, raised while latency holds;
a hosted provider's API gets the ceiling. What the server says is read over real HTTP from
FakeOpenAIServer; whole runs are in test_window_runs.py."""

from __future__ import annotations

import pytest
from runner.runner_helpers import echo_responder

from maev_kit.backends.internal import VLLM_SLOTS, preflight
from maev_kit.runner._requests import START_CONCURRENCY, Window, opening
from maev_kit.testing import FakeOpenAIServer


@pytest.mark.parametrize("props, expected", [
    ({"total_slots": 3}, 3),
    ({"total_slots": "4"}, None),   # a string is not a count
    ({"total_slots": True}, None),
    ({"total_slots": 0}, None),
    ({"total_slots": 10**9}, None),  # not believed
    ({"slots": 2}, None),
    (None, None),                  # no /props: a 404
])
def test_the_preflight_reads_total_slots_defensively(props, expected):
    with FakeOpenAIServer(echo_responder, props=props, models=["m"]) as server:
        assert preflight("m", server.base_url) == (["m"], expected)


def test_a_vllm_server_is_known_by_its_model_list():
    with FakeOpenAIServer(echo_responder, models=["m"], owned_by="vllm") as server:
        assert preflight("m", server.base_url)[1] == VLLM_SLOTS
    with FakeOpenAIServer(echo_responder, models=["m"], owned_by="library") as server:
        assert preflight("m", server.base_url)[1] is None


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
