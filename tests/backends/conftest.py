from __future__ import annotations

import pytest

from maev_kit.testing import FakeOpenAIServer


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=lambda body: "pong") as s:
        yield s
