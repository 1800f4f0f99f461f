"""Test doubles that ship with the kit: a local OpenAI-compatible server and a scripted backend.

``FakeOpenAIServer`` speaks real HTTP, so code under test goes through the real litellm and the
real openai client; ``FakeOpenAIServer(fail="401")`` (or ``"429"``, ``"500"``, ``"timeout"``,
``"garbage"``, ``"prose"``) fails every request one way, and :func:`free_port` gives a port where
nothing listens (a refused connection). The server also speaks the provider batch API
(``/v1/files``, ``/v1/batches``) with a completion delay and injected faults.
``ScriptedBackend`` skips HTTP and fails when scripted replies are left unused.
"""

from maev_kit.backends import ScriptedBackend
from maev_kit.testing._server import (
    FAIL_MODES,
    FakeBatch,
    FakeOpenAIServer,
    FakeReply,
    LoggedRequest,
    Responder,
    hang,
    http_error,
    malformed_body,
    free_port,
    reply,
    truncated_body,
)

__all__ = [
    "FAIL_MODES",
    "FakeBatch",
    "FakeOpenAIServer",
    "FakeReply",
    "LoggedRequest",
    "Responder",
    "ScriptedBackend",
    "free_port",
    "hang",
    "http_error",
    "malformed_body",
    "reply",
    "truncated_body",
]
