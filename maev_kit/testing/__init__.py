"""Test doubles that ship with the kit: a local OpenAI-compatible server and a scripted backend.

``FakeOpenAIServer`` speaks real HTTP, so code under test goes through the real litellm and the
real openai client; ``ScriptedBackend`` skips HTTP and fails when scripted replies are left unused.
"""

from maev_kit.backends._scripted import ScriptedBackend
from maev_kit.testing._server import (
    FakeOpenAIServer,
    FakeReply,
    LoggedRequest,
    Responder,
    hang,
    http_error,
    malformed_body,
    reply,
    truncated_body,
)

__all__ = [
    "FakeOpenAIServer",
    "FakeReply",
    "LoggedRequest",
    "Responder",
    "ScriptedBackend",
    "hang",
    "http_error",
    "malformed_body",
    "reply",
    "truncated_body",
]
