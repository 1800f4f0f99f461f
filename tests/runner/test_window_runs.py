"""Runs against servers that say how many requests they work on at once and servers that do
not (see test_window_opening.py): the first requests arrive together or one alone, and a slow
one-slot server gets no more requests than it answers within the timeout. Real HTTP to
FakeOpenAIServer, seconds each: ``slow``."""

from __future__ import annotations

from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.runner import run_judge
from maev_kit.testing import FakeOpenAIServer


def _together(server, n: int, latency: float) -> int:
    """How many of the first requests arrived before the first reply could have come back."""
    first = server.requests[0].received_at
    return sum(1 for r in server.requests[:n] if r.received_at - first < latency / 2)


def test_a_server_that_announces_its_slots_gets_them_from_the_first_request(make_backend,
                                                                         backend_kind):
    latency = 0.3
    with FakeOpenAIServer(echo_responder, slots=6, props={"total_slots": 6},
                          models=["fake-judge"], latency=latency) as server:
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
                          models=["fake-judge"], latency=0.2) as server:
        items = make_items(10, 2)
        run = run_judge(EchoJudge(), items, make_backend(backend_kind, server),
                        max_concurrency=16, cache=False, progress=False)
    assert run.stats["window_start"] == "announced 1"
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["errors"] == 0 and server.peak_in_flight <= 4


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
