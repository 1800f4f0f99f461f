from __future__ import annotations

import asyncio

import pytest

from maev_kit.backends import BackendError, Completion, ScriptedBackend, ScriptError

MSG = [{"role": "user", "content": "hi"}]


def call(backend):
    return asyncio.run(backend.complete(MSG))


def test_steps_are_replayed_in_order_and_requests_recorded():
    backend = ScriptedBackend(["a", Completion("b", 5, 1, 0.01, 0.2),
                               lambda msgs: msgs[0]["content"].upper()])
    assert [call(backend).text for _ in range(3)] == ["a", "b", "HI"]
    assert backend.requests == [MSG] * 3
    backend.assert_consumed()


def test_exceptions_are_raised():
    backend = ScriptedBackend([BackendError("rate_limit", "429", retry_after=0.5)])
    with pytest.raises(BackendError) as info:
        call(backend)
    assert info.value.retry_after == 0.5


def test_unused_steps_fail_loudly():
    with pytest.raises(ScriptError, match="1 scripted step"):
        with ScriptedBackend(["a", "b"]) as backend:
            call(backend)


def test_a_request_beyond_the_script_fails():
    backend = ScriptedBackend([])
    with pytest.raises(ScriptError, match="used up"):
        call(backend)


def test_an_error_inside_the_with_block_is_not_masked():
    with pytest.raises(KeyError):
        with ScriptedBackend(["unused"]):
            raise KeyError("the real problem")
