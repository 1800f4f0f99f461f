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

from maev_kit.errors import ERROR_CAUSES, MaevError

__all__ = ["Backend", "BackendError", "Completion", "ERROR_KINDS", "KIND_TO_CAUSE",
           "classify_error", "completion_from_response", "retry_after_from_headers"]

#: Kinds of failure the runner tells apart. Retried: ``rate_limit`` (429), ``server`` (5xx),
#: ``timeout``, ``connection`` (the connection dropped mid-request), ``bad_response`` (an
#: unreadable HTTP body) and ``unparseable`` (a reply the judge could not read). Never retried:
#: ``unreachable`` (connection refused, unknown host, no route), ``auth`` (401/403, missing
#: key), ``content_filter`` (the provider refused the content), ``bad_request`` and ``other``.
ERROR_KINDS: tuple[str, ...] = ("rate_limit", "server", "timeout", "connection", "bad_response",
                                "unparseable", "unreachable", "auth", "content_filter",
                                "bad_request", "other")
_RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection", "bad_response",
                        "unparseable"})
#: The cause (one of :data:`maev_kit.errors.ERROR_CAUSES`) each kind is counted under. A
#: connection dropped mid-reply counts as ``server`` (the endpoint answered, then failed); an
#: unreadable body as ``unparseable``; a request the provider rejected as malformed as ``other``.
KIND_TO_CAUSE: dict[str, str] = {
    "rate_limit": "rate_limit", "server": "server", "timeout": "timeout", "connection": "server",
    "bad_response": "unparseable", "unparseable": "unparseable", "unreachable": "unreachable",
    "auth": "auth", "content_filter": "content_filter", "bad_request": "other", "other": "other"}
assert set(KIND_TO_CAUSE) == set(ERROR_KINDS) and set(KIND_TO_CAUSE.values()) <= set(ERROR_CAUSES)
#: Event loops the kit owns (the runner's background loop for sync ``run_judge`` calls). A
#: backend holding something of the user's that is bound to one loop (an ``AsyncOpenAI``
#: connection pool) uses a private copy on these, so the user's own loop is never disturbed.
KIT_LOOPS: weakref.WeakSet[Any] = weakref.WeakSet()
_MAX_RETRY_AFTER = 120.0  # seconds: a server asking for longer gets this much
# How litellm words an unreadable 200 body that it re-raises as a 500.
_JSON_ERROR = re.compile(r"JSONDecodeError|Invalid response object|Expecting (value|property name"
                         r"|'.' delimiter)|Unterminated string|Extra data")
_NO_KEY = re.compile(r"missing credentials|missing .{0,20}api.?key|api_key client option must be set"
                     r"|no api.?key", re.I)
_DNS_ERROR = re.compile(r"Name or service not known|nodename nor servname|Temporary failure in "
                        r"name resolution|getaddrinfo failed|No address associated with hostname")
# How providers word a refusal on content grounds (OpenAI/Azure code "content_filter", Azure's
# "content management policy", litellm's ContentPolicyViolationError text).
_CONTENT_FILTER = re.compile(r"content_filter|content management policy|ContentPolicyViolation"
                             r"|content_policy_violation", re.I)


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

    ``cause`` is the kind's cause as counted in run stats and results (:data:`KIND_TO_CAUSE`).

    >>> e = BackendError("rate_limit", "429 Too Many Requests", retry_after=1.5, status=429)
    >>> e.retryable, e.cause, str(e)
    (True, 'rate_limit', 'rate_limit: 429 Too Many Requests')
    >>> BackendError("connection", "reset by peer").cause
    'server'
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

    @property
    def cause(self) -> str:
        """One of :data:`maev_kit.errors.ERROR_CAUSES`."""
        return KIND_TO_CAUSE[self.kind]


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


def kind_for_status(status: int) -> str:
    if status == 429:
        return "rate_limit"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server"
    if status in (401, 403):
        return "auth"
    return "bad_request"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions behind it (``__cause__`` / ``__context__``), outermost first."""
    out: list[BaseException] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen and len(out) < 20:
        seen.add(id(cur))
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _unreachable_reason(chain: list[BaseException]) -> str | None:
    """Why nothing answered, when the failure underneath is a refused connection or an unknown
    host (litellm words both as a 500 "Connection error.", the openai SDK as
    ``APIConnectionError``: only the chain below says which); None otherwise."""
    for e in chain:
        text = str(e)
        if isinstance(e, ConnectionRefusedError) or "Connection refused" in text \
                or "Connect call failed" in text:
            return "connection refused"
        if type(e).__name__ == "gaierror" or _DNS_ERROR.search(text):
            return "unknown host"
        if "No route to host" in text or "Network is unreachable" in text:
            return "no route to host"
    for e in chain:  # httpx's wording when every address refused (the errno may be lost)
        if "All connection attempts failed" in str(e):
            return "connection refused"
    return None


def classify_error(exc: BaseException) -> BackendError:
    """Map an exception from litellm, the openai SDK, httpx or asyncio to a :class:`BackendError`.

    Works by class names, attributes and the chain of exceptions underneath (``__cause__``,
    ``__context__``), so neither litellm nor openai is imported here (litellm's exceptions
    subclass openai's; both carry ``status_code`` and the HTTP ``response``). A refused
    connection or an unknown host is ``unreachable`` whatever the outer exception says.

    >>> classify_error(TimeoutError()).kind
    'timeout'
    >>> import json
    >>> classify_error(json.JSONDecodeError("Expecting value", "{", 1)).kind
    'bad_response'
    >>> try:
    ...     try:
    ...         raise ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    ...     except OSError as low:
    ...         raise RuntimeError("Connection error.") from low
    ... except RuntimeError as high:
    ...     err = classify_error(high)
    >>> err.kind, err.cause, err.retryable
    ('unreachable', 'unreachable', False)
    """
    if isinstance(exc, BackendError):
        return exc
    names = {t.__name__ for t in type(exc).__mro__}
    text = str(exc).strip().replace("\n", " ")[:300] or type(exc).__name__
    message = f"{type(exc).__name__}: {text}"
    if names & {"APITimeoutError", "Timeout", "TimeoutError", "TimeoutException",
                "ReadTimeout", "ConnectTimeout", "PoolTimeout", "WriteTimeout"}:
        return BackendError("timeout", message, status=getattr(exc, "status_code", None))
    chain = _chain(exc)
    reason = _unreachable_reason(chain)
    if reason is not None:
        return BackendError("unreachable", f"{reason} ({message})")
    if names & {"ContentPolicyViolationError"} or _CONTENT_FILTER.search(text):
        return BackendError("content_filter", message,
                            status=getattr(exc, "status_code", None))
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "litellm_response_headers", None)
    if "Missing credentials" in text or "api_key client option must be set" in text:
        return BackendError("auth", message + " (pass an api_key; any string for a local server)",
                            status=status if isinstance(status, int) else None)
    if isinstance(status, int) and status >= 400:
        kind = kind_for_status(status)
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
                "ContextWindowExceededError"}:
        return BackendError("bad_request", message)
    if names & {"InternalServerError", "APIError"}:
        return BackendError("server", message)
    return BackendError("other", message)


def completion_from_response(response: Any, *, latency: float, cost: float | None = None,
                             model: str | None = None) -> Completion:
    """Read text and usage from an OpenAI-shaped chat completion (openai or litellm objects).

    A reply without ``choices`` or a message is a ``bad_response`` error, not an exception; a
    reply whose ``finish_reason`` is ``content_filter`` (the provider withheld the answer) is a
    ``content_filter`` error.
    """
    try:
        choice = response.choices[0]
        message = choice.message
        text = message.content
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise BackendError("bad_response",
                           f"the reply has no choices[0].message ({type(exc).__name__})") from exc
    if getattr(choice, "finish_reason", None) == "content_filter":
        raise BackendError("content_filter", "the provider withheld the reply "
                           "(finish_reason 'content_filter')")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise BackendError("bad_response", f"message content is {type(text).__name__}, not text")
    usage = getattr(response, "usage", None)
    pt = getattr(usage, "prompt_tokens", None) or 0
    ct = getattr(usage, "completion_tokens", None) or 0
    return Completion(text, int(pt), int(ct), cost, latency,
                      model or getattr(response, "model", None))


# -- a judge that cannot answer at all -------------------------------------------------------
#: The key variable litellm reads for a provider (by the model string's prefix).
_KEY_VARS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
             "gemini": "GEMINI_API_KEY", "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
             "azure": "AZURE_API_KEY", "groq": "GROQ_API_KEY", "mistral": "MISTRAL_API_KEY",
             "cohere": "COHERE_API_KEY", "together_ai": "TOGETHERAI_API_KEY",
             "openrouter": "OPENROUTER_API_KEY", "deepseek": "DEEPSEEK_API_KEY",
             "xai": "XAI_API_KEY", "fireworks_ai": "FIREWORKS_AI_API_KEY",
             "perplexity": "PERPLEXITYAI_API_KEY", "huggingface": "HF_TOKEN"}


def provider_of(model: str) -> str:
    """The provider a litellm model string goes to: its prefix, else guessed from the name.

    >>> provider_of("anthropic/claude-3-5-haiku-20241022"), provider_of("gpt-4o-mini")
    ('anthropic', 'openai')
    >>> provider_of("claude-3-5-haiku-20241022")
    'anthropic'
    """
    if "/" in model:
        return model.split("/", 1)[0].lower()
    low = model.lower()
    if low.startswith("claude"):
        return "anthropic"
    if low.startswith("gemini"):
        return "gemini"
    return "openai"


def server_message(text: str, limit: int = 160) -> str:
    """The server's own words in an error text (the ``message`` of a JSON error body, else
    the text without the exception class names litellm puts first), trimmed to ``limit``.

    >>> server_message('NotFoundError: litellm.NotFoundError: OpenAIException - {"error": '
    ...                '{"message": "The model `x` does not exist", "type": "invalid"}}')
    'The model `x` does not exist'
    """
    found = re.search(r'"message"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    if found:
        said = found.group(1)
    else:
        said = re.sub(r"^(\w+(Error|Exception)\s*[-:]\s*|litellm\.\w+:\s*)+", "", text.strip())
    said = " ".join(said.split())
    return said if len(said) <= limit else said[:limit - 1] + "…"


def endpoint_of(backend: Any) -> tuple[str, bool]:
    """Where ``backend`` sends requests: ``(api base URL, True)`` when one is configured, else
    ``(provider name, False)`` (the backend's kind for backends other than litellm / openai)."""
    from maev_kit.backends._local import redact_url

    get = getattr(backend, "endpoint", None)
    if callable(get):
        try:
            own = get()
        except Exception:
            own = None
        if own:
            return redact_url(str(own).rstrip("/")), True
    try:
        identity = backend.cache_identity()
    except Exception:
        identity = {}
    params = identity.get("params") or {}
    base = identity.get("base_url") or params.get("api_base") or params.get("base_url")
    if base:
        return redact_url(str(base).rstrip("/")), True
    kind = str(getattr(backend, "kind", "") or "")
    if kind not in ("litellm", "openai"):
        return kind or type(backend).__name__, False
    return provider_of(str(getattr(backend, "model", "") or "")), False


def unavailable_error(backend: Any, err: BackendError) -> Any:
    """The one-line :class:`~maev_kit.errors.JudgeUnavailableError` for a judge that cannot
    answer at all (``err.cause`` is ``auth`` or ``unreachable``): what failed, where, for which
    model, and what to change.

    >>> class B:
    ...     kind, model = "litellm", "openai/x"
    ...     def cache_identity(self):
    ...         return {"params": {"api_base": "http://127.0.0.1:9/v1"}}
    >>> print(unavailable_error(B(), BackendError("unreachable", "connection refused (...)")))
    nothing answers at http://127.0.0.1:9/v1 for model openai/x (connection refused); start the server or fix --api-base (api_base=)
    >>> print(unavailable_error(B(), BackendError("auth", "401", status=401)))
    authentication failed at http://127.0.0.1:9/v1 for model openai/x (401); pass the server's key with --api-key (api_key=) or set OPENAI_API_KEY
    """
    from maev_kit.errors import JudgeUnavailableError

    model = str(getattr(backend, "model", "") or "?")
    where, is_url = endpoint_of(backend)
    provider = provider_of(model) if getattr(backend, "kind", "") == "litellm" else "openai"
    var = _KEY_VARS.get(provider, f"{provider.upper()}_API_KEY")
    kind = getattr(backend, "kind", "")
    client = kind == "openai"
    at = (f"at {where}" if is_url else f"with provider {where}" if kind in ("litellm", "openai")
          else f"in the {where} backend")
    if err.cause == "auth":
        if _NO_KEY.search(err.message):
            detail = "no API key"
        elif err.status in (401, 403):
            detail = str(err.status)
        else:
            detail = err.message.split(" (")[0][:80]
        message = f"authentication failed {at} for model {model} ({detail})"
        if kind not in ("litellm", "openai"):
            fix = "check the backend's credentials"
        elif client:
            fix = f"give the openai client a valid api_key (or set {var})"
        elif is_url:
            fix = f"pass the server's key with --api-key (api_key=) or set {var}"
        else:
            fix = f"set {var} or pass --api-key (api_key=)"
        return JudgeUnavailableError(message, cause="auth", fix=fix)
    if err.kind == "bad_request":  # a 404 before any reply: the model (or route) is not there
        said = server_message(err.message)
        message = (f"the server {at} does not serve model {model}" if is_url
                   else f"provider {where} does not serve model {model}") + f" ({said})"
        fix = (f"check the model name (the server lists its models at {where}/models)"
               if is_url else "check the model name")
        return JudgeUnavailableError(message, cause="other", fix=fix)
    reason = err.message.split(" (", 1)[0] if err.kind == "unreachable" else err.message[:80]
    message = (f"nothing answers {at}" if is_url or kind not in ("litellm", "openai")
               else f"cannot reach provider {where}") + f" for model {model} ({reason})"
    if kind not in ("litellm", "openai"):
        fix = "check the backend's endpoint"
    elif client:
        fix = "start the server or fix the openai client's base_url"
    elif is_url:
        fix = "start the server or fix --api-base (api_base=)"
    else:
        fix = f"check the network connection to {where} (or point --api-base at a server)"
    return JudgeUnavailableError(message, cause=err.cause, fix=fix)
