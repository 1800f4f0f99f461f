"""LiteLLMBackend and OpenAIClientBackend over real HTTP to the local fake server."""

from __future__ import annotations

import asyncio
import os

import pytest

from maev_kit.backends import BackendError, Completion, LiteLLMBackend, OpenAIClientBackend
from maev_kit.testing import hang, http_error, malformed_body


def litellm_backend(server, model="fake-judge", **params):
    return LiteLLMBackend(f"openai/{model}", api_base=server.base_url, api_key="sk-test",
                          **params)


def openai_backend(server, sync=False, **params):
    from openai import AsyncOpenAI, OpenAI

    cls = OpenAI if sync else AsyncOpenAI
    return OpenAIClientBackend(cls(base_url=server.base_url, api_key="sk-test"), "fake-judge",
                               **params)


MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "ping"}]
_LOOP = asyncio.new_event_loop()  # one loop: an AsyncOpenAI client's pool belongs to its loop


def complete(backend, timeout=10.0):
    return _LOOP.run_until_complete(backend.complete(MESSAGES, timeout=timeout))


def error_of(backend, timeout=10.0):
    with pytest.raises(BackendError) as info:
        complete(backend, timeout)
    return info.value


@pytest.fixture(params=["litellm", "openai-async", "openai-sync"])
def backend(request, server):
    if request.param == "litellm":
        request.getfixturevalue("litellm_module")
        return litellm_backend(server, temperature=0)
    return openai_backend(server, sync=request.param == "openai-sync", temperature=0)


def test_completion_text_usage_and_latency(backend, server):
    server.latency = 0.05
    c = complete(backend)
    assert isinstance(c, Completion) and c.text == "pong"
    assert c.prompt_tokens > 0 and c.completion_tokens == 1
    assert c.latency >= 0.05
    body = server.requests[0].body
    assert body["messages"] == MESSAGES and body["temperature"] == 0
    assert body["model"] == "fake-judge"


def test_no_retries_below_the_runner(backend, server):
    server.script(http_error(500), http_error(500), http_error(500))
    err = error_of(backend)
    assert err.kind == "server" and err.retryable
    assert len(server.requests) == 1  # neither litellm nor the SDK retried on its own


def test_rate_limit_carries_retry_after(backend, server):
    server.script(http_error(429, retry_after=7, retry_after_ms=1500))
    err = error_of(backend)
    assert (err.kind, err.status, err.retry_after) == ("rate_limit", 429, 1.5)


def test_503_and_malformed_body_and_timeout(backend, server):
    server.script(http_error(503), malformed_body(), hang(3))
    assert error_of(backend).kind == "server"
    assert error_of(backend).kind == "bad_response"  # openai: bare JSONDecodeError; litellm: a 500
    assert error_of(backend, timeout=0.3).kind == "timeout"
    assert len(server.requests) == 3


def test_auth_error_is_not_retryable(backend, server):
    server.script(http_error(401, message="invalid api key"))
    err = error_of(backend)
    assert err.kind == "auth" and not err.retryable


def test_sync_client_requests_overlap(server):
    server.latency = 0.2
    backend = openai_backend(server, sync=True)

    async def many():
        return await asyncio.gather(*(backend.complete(MESSAGES, timeout=5) for _ in range(6)))

    assert [c.text for c in _LOOP.run_until_complete(many())] == ["pong"] * 6
    assert server.peak_in_flight == 6  # threads, not one at a time


def test_litellm_prices_known_models_only(server, litellm_module):
    priced = complete(litellm_backend(server, model="gpt-4o-mini"))
    assert priced.cost == pytest.approx(priced.prompt_tokens * 1.5e-07
                                        + priced.completion_tokens * 6e-07)
    assert complete(litellm_backend(server, model="my-local-judge")).cost is None


def test_litellm_is_configured_quiet_and_offline(litellm_module, server, capsys):
    assert os.environ["LITELLM_LOCAL_MODEL_COST_MAP"]
    assert litellm_module.suppress_debug_info is True
    server.script(http_error(500))
    error_of(litellm_backend(server))
    out = capsys.readouterr()
    assert "Give Feedback" not in out.out + out.err


def test_cache_identity_keeps_answer_changing_params_only():
    b = LiteLLMBackend("gpt-4o-mini", api_key="sk-secret", temperature=0, seed=7,
                       extra_headers={"x": "y"})
    assert b.cache_identity() == {"kind": "litellm", "model": "gpt-4o-mini",
                                  "params": {"max_tokens": "auto", "seed": 7,
                                             "temperature": 0}}
    assert "sk-secret" not in repr(b)


@pytest.mark.parametrize("name", ["timeout", "num_retries", "max_retries"])
def test_runner_owned_params_are_refused(name):
    with pytest.raises(ValueError, match="run_judge"):
        LiteLLMBackend("gpt-4o-mini", **{name: 1})


def test_openai_backend_refuses_non_clients_and_runner_params():
    from openai import AsyncOpenAI

    with pytest.raises(TypeError, match="openai client"):
        OpenAIClientBackend("gpt-4o-mini", "gpt-4o-mini")
    with pytest.raises(ValueError, match="run_judge"):
        OpenAIClientBackend(AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9/v1"),
                            "m", timeout=3)


def test_openai_backend_turns_client_retries_off():
    from openai import AsyncOpenAI

    client = AsyncOpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=5)
    backend = OpenAIClientBackend(client, "m")
    assert backend.client.max_retries == 0 and client.max_retries == 5
    assert backend.is_async


def dead_backend(kind, url):
    from openai import AsyncOpenAI, OpenAI

    if kind == "litellm":
        return LiteLLMBackend("openai/fake-judge", api_base=url, api_key="sk-test")
    cls = OpenAI if kind == "openai-sync" else AsyncOpenAI
    return OpenAIClientBackend(cls(base_url=url, api_key="sk-test"), "fake-judge")


@pytest.mark.parametrize("kind", ["litellm", "openai-async", "openai-sync"])
@pytest.mark.parametrize(("host", "reason"), [("127.0.0.1:{port}", "connection refused"),
                                              ("no-such-host.invalid", "unknown host")])
def test_nothing_listening_is_unreachable_not_a_server_error(kind, host, reason, request):
    """litellm reports a refused connection as a 500 "Connection error.", the SDK as
    APIConnectionError: the cause underneath decides."""
    from maev_kit.testing import free_port

    if kind == "litellm":
        request.getfixturevalue("litellm_module")
    url = "http://" + host.format(port=free_port()) + "/v1"
    err = error_of(dead_backend(kind, url), timeout=5)
    assert (err.kind, err.cause, err.retryable) == ("unreachable", "unreachable", False)
    assert err.message.startswith(reason)


def test_content_filter_finish_reason_is_a_content_filter_error(backend, server):
    from maev_kit.testing import reply

    server.script(reply("", finish_reason="content_filter"))
    err = error_of(backend)
    assert (err.kind, err.cause, err.retryable) == ("content_filter", "content_filter", False)
