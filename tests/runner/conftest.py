"""Shared pieces for runner tests: a tiny LLM judge whose prompt the fake server can answer,
items whose expected labels are known, and backends over real HTTP."""

from __future__ import annotations

import pytest
from runner.runner_helpers import EchoJudge, echo_responder

from maev_kit.testing import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=echo_responder) as s:
        yield s


@pytest.fixture(params=["openai", "litellm"])
def backend_kind(request):
    return request.param


@pytest.fixture
def make_backend(request):
    """``make_backend(kind, server, model=...)`` → a backend over real HTTP to ``server``."""

    def make(kind: str, srv: FakeOpenAIServer, model: str = "fake-judge", **params):
        if kind == "litellm":
            request.getfixturevalue("litellm_module")
            from maev_kit.backends import LiteLLMBackend

            return LiteLLMBackend(f"openai/{model}", api_base=srv.base_url, api_key="sk-test",
                                  **params)
        from openai import AsyncOpenAI

        from maev_kit.backends import OpenAIClientBackend

        return OpenAIClientBackend(AsyncOpenAI(base_url=srv.base_url, api_key="sk-test"), model,
                                   **params)

    return make


@pytest.fixture
def judge():
    return EchoJudge()
