"""A backend over an ``openai`` client object (``AsyncOpenAI`` or ``OpenAI``), as in the article."""

from __future__ import annotations

import asyncio
import inspect
import sys
import time
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from maev_kit.backends._base import (
    KIT_LOOPS,
    BackendError,
    Completion,
    classify_error,
    completion_from_response,
    reject_runner_params,
)
from maev_kit.backends._local import (
    fold_system,
    generation_defaults,
    preflight,
    request_params,
)

__all__ = ["OpenAIClientBackend"]

_NOT_IN_KEY = frozenset({"extra_headers", "extra_query", "metadata", "user", "store"})
_OWNED_BY_RUNNER = {"timeout": "timeout", "max_retries": "max_retries"}
_SYNC_THREADS = 256  # threads for a sync client are made on demand, up to this many


def _is_async_client(client: Any) -> bool:
    if any(t.__name__.startswith("Async") for t in type(client).__mro__):
        return True  # AsyncOpenAI, AsyncAzureOpenAI (their create is wrapped, not a coroutine fn)
    return inspect.iscoroutinefunction(client.chat.completions.create)


class OpenAIClientBackend:
    """Send requests with an ``openai`` client: ``client.chat.completions.create(model=..., ...)``.

    An ``AsyncOpenAI`` client is awaited directly; a sync ``OpenAI`` client runs in worker
    threads so requests still overlap. The client is used with ``max_retries=0`` (through
    ``client.with_options``) and the runner's timeout: the runner owns retries and timeouts.
    A 200 reply whose body is not JSON (the SDK raises a bare ``json.JSONDecodeError``) becomes
    a retryable ``bad_response`` error. ``cost`` is None: the client does not price calls.

    ``params`` (``temperature``, ``response_format``, ...) are sent on every call and are part
    of the cache key, as are the model and the client's ``base_url``. A judge's defaults are
    filled in as for :class:`~maev_kit.backends.LiteLLMBackend`: ``temperature=0`` and
    ``max_tokens="auto"`` (a reply cap sized to each request, never above 2,048 tokens).

    Examples
    --------
    >>> from openai import AsyncOpenAI
    >>> client = AsyncOpenAI(base_url="http://127.0.0.1:8000/v1", api_key="sk-local")
    >>> OpenAIClientBackend(client, "gpt-4o-mini", temperature=0).cache_identity()
    {'kind': 'openai', 'model': 'gpt-4o-mini', 'base_url': 'http://127.0.0.1:8000/v1/', 'params': {'max_tokens': 'auto', 'temperature': 0}}
    """

    kind = "openai"

    def __init__(self, client: Any, model: str, **params: Any) -> None:
        create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
        if create is None:
            raise TypeError("`client` must be an openai client (openai.AsyncOpenAI() or "
                            f"openai.OpenAI()), got {type(client).__name__}")
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"`model` must be a model name such as 'gpt-4o-mini', got {model!r}")
        reject_runner_params("OpenAIClientBackend", params, _OWNED_BY_RUNNER)
        with_options = getattr(client, "with_options", None)
        self.client = with_options(max_retries=0) if callable(with_options) else client
        self.model = model
        self.params = generation_defaults(params)
        self.is_async = _is_async_client(client)
        self._executor: ThreadPoolExecutor | None = None
        self._per_loop: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        #: requests the server says it works on at once (asked by :meth:`preflight`), or None
        self.slots: int | None = None

    def __repr__(self) -> str:
        return f"OpenAIClientBackend({type(self.client).__name__}, {self.model!r})"

    def _client(self) -> Any:
        """The client to use on the running loop.

        An async client's connection pool belongs to the loop that opened its connections. On
        the kit's own loop (sync ``run_judge`` calls run there) requests go through a copy of the
        client with its own pool — same endpoint, key and headers — so the caller's client keeps
        working on the caller's loop (a notebook's, say).
        """
        if not self.is_async:
            return self.client
        loop = asyncio.get_running_loop()
        if loop not in KIT_LOOPS:
            return self.client
        private = self._per_loop.get(loop)
        if private is None:
            package = sys.modules.get(type(self.client).__module__.split(".")[0])
            make_pool = getattr(package, "DefaultAsyncHttpxClient", None)
            copy = getattr(self.client, "copy", None)
            private = (copy(max_retries=0, http_client=make_pool())
                       if callable(make_pool) and callable(copy) else self.client)
            self._per_loop[loop] = private
        return private

    def cache_identity(self) -> dict[str, Any]:
        """Model, endpoint and answer-changing parameters (never the api key or timeouts)."""
        params = {k: v for k, v in sorted(self.params.items()) if k not in _NOT_IN_KEY}
        base_url = getattr(self.client, "base_url", None)
        return {"kind": self.kind, "model": self.model,
                "base_url": None if base_url is None else str(base_url), "params": params}

    def endpoint(self) -> str | None:
        """The client's ``base_url`` when it is not OpenAI's own API, else None."""
        base = str(getattr(self.client, "base_url", "") or "").rstrip("/")
        return base if base and "api.openai.com" not in base else None

    async def preflight(self) -> list[str] | None:
        """Ask the server at the client's ``base_url`` which models it serves (see
        :meth:`LiteLLMBackend.preflight <maev_kit.backends.LiteLLMBackend.preflight>`)."""
        base = self.endpoint()
        if base is None:
            return None
        key = getattr(self.client, "api_key", None)
        served, self.slots = await asyncio.to_thread(
            preflight, self.model, base, key if isinstance(key, str) else None)
        return served

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0, max_tokens: int | None = None) -> Completion:
        """One chat completion; raises :class:`~maev_kit.backends.BackendError` on failure.
        ``max_tokens`` is the runner's estimate of the reply, sent when ``max_tokens`` is
        ``"auto"``."""
        msgs = [dict(m) for m in messages]
        kwargs = dict(request_params(self.params, max_tokens), model=self.model,
                      messages=fold_system(msgs) if self.params.get("fold_system") else msgs,
                      timeout=timeout)
        create = self._client().chat.completions.create
        start = time.perf_counter()
        try:
            if self.is_async:
                response = await create(**kwargs)
            else:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(_SYNC_THREADS, "maev-openai-sync")
                loop = asyncio.get_running_loop()
                response = await loop.run_in_executor(self._executor, lambda: create(**kwargs))
        except BackendError:
            raise
        except Exception as exc:
            raise classify_error(exc) from exc
        return completion_from_response(response, latency=time.perf_counter() - start,
                                        model=self.model)
