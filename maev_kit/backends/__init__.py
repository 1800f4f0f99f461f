"""Backends: one coroutine each, request → :class:`Completion` (text, usage, cost, latency).

- :class:`LiteLLMBackend` — the default; any provider litellm reaches by model string.
- :class:`OpenAIClientBackend` — an ``openai`` client object (async or sync), as in the article.
- :class:`ScriptedBackend` — a test double that replays scripted replies.

Every failure is a :class:`BackendError` with a ``kind``; the runner retries the retryable ones.
Neither litellm nor openai is imported by this package until a request is made.
"""

from maev_kit.backends._base import (
    ERROR_KINDS,
    Backend,
    BackendError,
    Completion,
    classify_error,
    retry_after_from_headers,
)
from maev_kit.backends._litellm import LiteLLMBackend
from maev_kit.backends._openai import OpenAIClientBackend
from maev_kit.backends._scripted import ScriptedBackend, ScriptError

__all__ = [
    "ERROR_KINDS",
    "Backend",
    "BackendError",
    "Completion",
    "LiteLLMBackend",
    "OpenAIClientBackend",
    "ScriptError",
    "ScriptedBackend",
    "classify_error",
    "retry_after_from_headers",
]
