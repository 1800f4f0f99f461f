"""What every backend shares: the :class:`Completion` it returns, the :class:`Backend` seam and
the one error type (:class:`BackendError`) the runner retries on or records."""

from __future__ import annotations

import email.utils
import json
import re
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from maev_kit.errors import MaevError

__all__ = ["Backend", "BackendError", "Completion", "ERROR_KINDS", "classify_error",
           "completion_from_response",
           "retry_after_from_headers"]

#: Kinds of failure the runner counts. ``rate_limit``, ``server``, ``timeout``, ``connection``,
#: ``bad_response`` (an unreadable HTTP body) and ``unparseable`` (a reply the judge could not
#: read) are retried; the others are not.
ERROR_KINDS: tuple[str, ...] = ("rate_limit", "server", "timeout", "connection", "bad_response",
                                "unparseable", "auth", "bad_request", "other")
_RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response",
                        "unparseable"})
#: Event loops the kit owns (the runner's background loop for sync ``run_judge`` calls). A
#: backend holding something of the user's that is bound to one loop (an ``AsyncOpenAI``
#: connection pool) uses a private copy on these, so the user's own loop is never disturbed.
KIT_LOOPS: weakref.WeakSet[Any] = weakref.WeakSet()
_MAX_RETRY_AFTER = 120.0
# How litellm words an unreadable 200 body that it re-raises as a 500.
_JSON_ERROR = re.compile(r"JSONDecodeError|Invalid response object|Expecting (value|property name"
                         r"|'.' delimiter)|Unterminated string|Extra data")  # seconds: a server asking for longer gets this much


@dataclass(frozen=True)
class Completion:
    """One model reply: its text, token usage, cost in USD (None when unknown) and latency in seconds.

    >>> c = Completion("{}", prompt_tokens=12, completion_tokens=3, cost=None, latency=0.41)
    >>> c.total_tokens, c.cost is None
    (15, True)
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    latency: float = 0.0
    model: str | None = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class BackendError(MaevError):
    """A request failed. ``kind`` is one of :data:`ERROR_KINDS`; ``retry_after`` is the wait (s)
    the server asked for, if any.

    >>> e = BackendError("rate_limit", "429 Too Many Requests", retry_after=1.5, status=429)
    >>> e.retryable, str(e)
    (True, 'rate_limit: 429 Too Many Requests')
    """

    def __init__(self, kind: str, message: str, *, retry_after: float | None = None,
                 status: int | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"`kind` must be one of {ERROR_KINDS}, got {kind!r}")
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.kind in _RETRYABLE


@runtime_checkable
class Backend(Protocol):
    """The seam between the runner and a model provider: one coroutine, request → :class:`Completion`.

    ``kind`` and ``model`` name the backend; ``cache_identity()`` returns everything about it that
    changes the answer (model, sampling parameters, endpoint) and nothing that does not (keys,
    timeouts, retries) — the runner hashes it into the cache key. ``complete`` raises
    :class:`BackendError` for a failed request.
    """

    kind: str
    model: str

    def cache_identity(self) -> dict[str, Any]: ...

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float) -> Completion: ...


def reject_runner_params(owner: str, params: Mapping[str, Any],
                         owned: Mapping[str, str]) -> None:
    """Refuse backend parameters the runner owns (``owned``: name -> run_judge argument) and
    ``stream=True``; ``owner`` names the backend class in the error.

    >>> reject_runner_params("MyBackend", {"timeout": 5}, {"timeout": "timeout"})
    Traceback (most recent call last):
    ...
    ValueError: MyBackend: do not pass `timeout`; the runner owns it — use run_judge(..., timeout=...)
    """
    for name, instead in owned.items():
        if name in params:
            raise ValueError(f"{owner}: do not pass `{name}`; the runner owns it — "
                             f"use run_judge(..., {instead}=...)")
    if params.get("stream"):
        raise ValueError(f"{owner}: `stream=True` is not supported; judges read whole replies")


def retry_after_from_headers(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (preferred) or ``Retry-After`` (seconds or a date).

    >>> retry_after_from_headers({"retry-after-ms": "250", "retry-after": "3"})
    0.25
    >>> retry_after_from_headers({"Retry-After": "2"}), retry_after_from_headers({})
    (2.0, None)
    """
    if not headers:
        return None
    lower = {str(k).lower(): str(v) for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return min(max(float(ms) / 1000.0, 0.0), _MAX_RETRY_AFTER)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _kind_for_status(status: int) -> str:
    if status == 429:
        return "rate_limit"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    return "bad_request"


def classify_error(exc: BaseException) -> BackendError:
    """Map an exception from litellm, the openai SDK, httpx or asyncio to a :class:`BackendError`.

    Works by class names and attributes, so neither litellm nor openai is imported here (litellm's
    exceptions subclass openai's; both carry ``status_code`` and the HTTP ``response``).

    >>> classify_error(TimeoutError()).kind
    'timeout'
    >>> import json
    >>> classify_error(json.JSONDecodeError("Expecting value", "{", 1)).kind
    'bad_response'
    """
    if isinstance(exc, BackendError):
        return exc
    names = {t.__name__ for t in type(exc).__mro__}
    text = str(exc).strip().replace("\n", " ")[:300] or type(exc).__name__
    message = f"{type(exc).__name__}: {text}"
    if names & {"APITimeoutError", "Timeout", "TimeoutError", "TimeoutException",
                "ReadTimeout", "ConnectTimeout", "PoolTimeout", "WriteTimeout"}:
        return BackendError("timeout", message, status=getattr(exc, "status_code", None))
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None)
    if "Missing credentials" in text or "api_key client option must be set" in text:
        return BackendError("auth", message + " (pass an api_key; any string for a local server)",
                            status=status if isinstance(status, int) else None)
    if isinstance(status, int) and status >= 400:
        kind = _kind_for_status(status)
        # litellm reports an unreadable 200 body as a 500 "Invalid response object" / JSON error.
        if kind == "server" and _JSON_ERROR.search(text):
            kind = "bad_response"
        try:
            retry_after = retry_after_from_headers(dict(headers.items()) if headers else None)
        except Exception:
            retry_after = None
        return BackendError(kind, message, retry_after=retry_after, status=status)
    if isinstance(exc, json.JSONDecodeError) or names & {"ValidationError", "DecodingError"}:
        return BackendError("bad_response", message)
    if names & {"APIConnectionError", "ConnectError", "RemoteProtocolError", "ReadError",
                "WriteError", "NetworkError", "TransportError", "ProtocolError",
                "ServiceUnavailableError"} or isinstance(exc, ConnectionError):
        return BackendError("connection", message)
    if names & {"AuthenticationError", "PermissionDeniedError"}:
        return BackendError("auth", message)
    if names & {"BadRequestError", "NotFoundError", "UnprocessableEntityError",
                "ContextWindowExceededError", "ContentPolicyViolationError"}:
        return BackendError("bad_request", message)
    if names & {"InternalServerError", "APIError"}:
        return BackendError("server", message)
    return BackendError("other", message)


def completion_from_response(response: Any, *, latency: float, cost: float | None = None,
                             model: str | None = None) -> Completion:
    """Read text and usage from an OpenAI-shaped chat completion (openai or litellm objects).

    A reply without ``choices`` or a message is a ``bad_response`` error, not an exception.
    """
    try:
        message = response.choices[0].message
        text = message.content
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise BackendError("bad_response",
                           f"the reply has no choices[0].message ({type(exc).__name__})") from exc
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise BackendError("bad_response", f"message content is {type(text).__name__}, not text")
    usage = getattr(response, "usage", None)
    pt = getattr(usage, "prompt_tokens", None) or 0
    ct = getattr(usage, "completion_tokens", None) or 0
    return Completion(text, int(pt), int(ct), cost, latency,
                      model or getattr(response, "model", None))
