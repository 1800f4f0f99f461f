"""Backends: one coroutine each, request → :class:`Completion` (text, usage, cost, latency).

- :class:`LiteLLMBackend` — the default; any provider litellm reaches by model string.
- :class:`OpenAIClientBackend` — an ``openai`` client object (async or sync), as in the article.
- :class:`ScriptedBackend` — a test double that replays scripted replies.

Every failure is a :class:`BackendError` with a ``kind`` (which decides retries) and a ``cause``
(one of :data:`maev_kit.errors.ERROR_CAUSES`, what run stats and results count); the runner
retries the retryable kinds and never ``auth`` or ``unreachable``.
Neither litellm nor openai is imported by this package until a request is made.
"""

from maev_kit.backends._base import (
    ERROR_KINDS,
    KIND_TO_CAUSE,
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
    "KIND_TO_CAUSE",
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
