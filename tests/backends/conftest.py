from __future__ import annotations

import pytest

from maev_kit.testing import FakeOpenAIServer


@pytest.fixture(scope="session")
def litellm_module():
    """litellm imported once per test session (the import takes seconds)."""
    from maev_kit.backends._litellm import import_litellm

    return import_litellm()


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=lambda body: "pong") as s:
        yield s
