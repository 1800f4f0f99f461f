"""The default backend: any model litellm can reach, by model string."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from maev_kit.backends._base import (
    BackendError,
    Completion,
    classify_error,
    completion_from_response,
    reject_runner_params,
)
from maev_kit.backends._local import (
    AUTO,
    PROBE_MESSAGES,
    SCHEMA_FORMS,
    fold_system,
    generation_defaults,
    keyless_params,
    local_defaults,
    local_endpoint,
    preflight,
    probe_kept_system,
    request_params,
    response_format,
)

__all__ = ["LiteLLMBackend", "import_litellm", "release_litellm"]

# Parameters that never change the answer: left out of the cache key.
_NOT_IN_KEY = frozenset({"api_key", "metadata", "extra_headers", "headers", "user",
                         "organization", "logger_fn", "drop_params"})
# Parameters the runner owns (one place for timeouts and retries).
_OWNED_BY_RUNNER = {"timeout": "timeout", "request_timeout": "timeout",
                    "num_retries": "max_retries", "max_retries": "max_retries"}

_import_lock = threading.Lock()
_litellm: Any = None


def import_litellm() -> Any:
    """Import litellm once, quietly and offline.

    Sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` first unless the user set it (else litellm fetches
    its price map over the network at import), turns off its "Give Feedback" banner and quiets
    its loggers. The import takes several seconds, which is why nothing imports it eagerly.
    """
    global _litellm
    if _litellm is not None:
        return _litellm
    with _import_lock:
        if _litellm is None:
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            try:
                import litellm
            except ImportError as exc:  # pragma: no cover - depends on the install
                raise ImportError("LiteLLMBackend needs litellm, which comes with maev-kit: "
                                  "pip install --force-reinstall maev-kit") from exc
            litellm.suppress_debug_info = True
            for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
                logging.getLogger(name).setLevel(logging.ERROR)
            _litellm = litellm
    return _litellm


#: litellm calls still running (a caller stopped waiting for them): awaited by release_litellm.
_IN_FLIGHT: set[Any] = set()
#: whether release_litellm found litellm's logging worker stuck (bound to another event loop):
#: then never waited for again in this process, so it costs one wait, not one per run.
_worker_stuck = False


def _forget(call: Any) -> None:
    """Done callback of a litellm call: drop it and retrieve its outcome, so an abandoned
    call that failed is never reported as "Task exception was never retrieved"."""
    _IN_FLIGHT.discard(call)
    if not call.cancelled():
        call.exception()


def _abandon(call: Any) -> None:
    """Cancel a litellm call its caller gave up on, closing its connection.

    litellm prepares each call in a worker thread (``run_in_executor``) and only then awaits
    the HTTP request; cancelled during that preparation the coroutine it made would never be
    awaited. So the call is cancelled once it has entered its HTTP request (at the latest a
    moment later, from the loop), never mid-preparation: until then it is left to finish
    by litellm's own timeout, and release_litellm waits for it.
    """
    loop = call.get_loop()

    def cancel_when_sending(tries: int = 0) -> None:
        if call.done():
            return
        if _sending(call) or tries >= 200:
            call.cancel()
            return
        loop.call_later(0.01, cancel_when_sending, tries + 1)

    try:
        loop.call_soon(cancel_when_sending)
    except RuntimeError:  # the loop is closing: nothing left to cancel on
        pass


def _sending(call: Any) -> bool:
    """Whether a litellm call is inside its HTTP request (httpx sending or reading), not in
    its preparation thread: read from the chain of coroutines it awaits."""
    coro: Any = call.get_coro()
    for _ in range(200):
        name = getattr(coro, "__qualname__", "") or ""
        if name.endswith(("AsyncClient.send", "handle_async_request", "_send_single_request")):
            return True
        nxt = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None)
        if nxt is None or not (hasattr(nxt, "cr_await") or hasattr(nxt, "ag_await")):
            return False
        coro = nxt
    return False


async def release_litellm(timeout: float = 5.0) -> None:
    """Let litellm finish and close what it started on the running loop, in order: its
    logging worker's queued callbacks (success/failure logging) run and the worker stops, then
    its cached async HTTP clients close and leave its client cache. Calls a caller stopped
    waiting for are given ``timeout`` seconds to end first.

    Called by the runner at the end of every run on the kit's background loop, while that
    loop still runs. Otherwise litellm's own ``atexit`` handlers do this at interpreter exit
    on a fresh event loop, with clients and callbacks bound to the kit's loop — which prints
    "Task exception was never retrieved … RuntimeError('Event loop is closed')" and "coroutine
    … was never awaited" after a run whose replies failed. A no-op when litellm was never
    imported; never raises.
    """
    import asyncio

    litellm = _litellm
    if litellm is None:
        return
    loop = asyncio.get_running_loop()
    pending = [c for c in _IN_FLIGHT if not c.done() and c.get_loop() is loop]
    if pending:  # calls a caller gave up on end by litellm's own timeout
        await asyncio.wait(pending, timeout=timeout)
        for call in pending:  # still running: cancelled and forgotten, so that no later run
            if not call.done():  # of this process waits for them again
                call.cancel()
                _IN_FLIGHT.discard(call)
    worker: Any
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER as worker
    except Exception:  # noqa: BLE001 - another litellm version: nothing of this shape to stop
        worker = None
    global _worker_stuck
    if worker is not None and not _worker_stuck:
        for step in (worker.flush, lambda: worker.stop(discard_pending=True, timeout=timeout)):
            try:
                await asyncio.wait_for(step(), timeout)
            except asyncio.TimeoutError:  # a worker that never ends (bound to another event
                _worker_stuck = True  # loop): not waited for again, nor stopped, in this process
                break
            except Exception:  # noqa: BLE001 - best effort
                pass
    close = getattr(litellm, "close_litellm_async_clients", None)
    if close is not None:
        try:
            await asyncio.wait_for(close(), timeout)
        except (Exception, asyncio.TimeoutError):  # noqa: BLE001 - best effort
            pass
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    for name in ("flush_cache", "clear"):
        fn = getattr(cache, name, None)
        if callable(fn):
            try:
                fn()
            except Exception:  # noqa: BLE001 - best effort
                continue
            break
    await asyncio.sleep(0)  # let the transports' close callbacks run on this loop


class LiteLLMBackend:
    """Send requests through ``litellm.acompletion``: ``gpt-4o-mini``,
    ``anthropic/claude-3-5-haiku-20241022``, ``ollama/llama3.1``, ``openai/<name>`` + ``api_base``...

    ``params`` go to litellm on every call (``temperature``, ``api_base``, ``api_key``,
    ``response_format``, ...). A judge's defaults are filled in: ``temperature=0`` and
    ``max_tokens="auto"`` — a reply cap sized to each request by the runner (a base plus a share
    per fact for a judge, never above 2,048 tokens); ``max_tokens=None`` sends no cap,
    ``temperature=None`` no temperature. A model served on the user's own machine (``api_base``,
    ``OPENAI_BASE_URL``, ``ollama/``, ``hosted_vllm/``, ``lm_studio/``) needs no key: a
    placeholder is sent when none is set. Timeouts and retries belong to the runner: litellm is always
    called with the runner's ``timeout`` and ``num_retries=0`` (litellm's own default timeout is
    6,000 s and the openai SDK under it would retry twice more). litellm is imported on the
    first request, not here.

    ``cost`` in each :class:`~maev_kit.backends.Completion` is litellm's price for the call when
    it knows the model, else None.

    Examples
    --------
    >>> b = LiteLLMBackend("openai/my-judge", api_base="http://127.0.0.1:8000/v1",
    ...                    api_key="sk-local", temperature=0)
    >>> b.cache_identity()
    {'kind': 'litellm', 'model': 'openai/my-judge', 'params': {'api_base': 'http://127.0.0.1:8000/v1', 'fold_system': 'auto', 'max_tokens': 'auto', 'response_format': 'auto', 'temperature': 0}}
    """

    kind = "litellm"

    def __init__(self, model: str, **params: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"`model` must be a litellm model string such as 'gpt-4o-mini', "
                             f"got {model!r}")
        reject_runner_params("LiteLLMBackend", params, _OWNED_BY_RUNNER)
        self.model = model
        self.params = keyless_params(model, local_defaults(model, generation_defaults(params)))
        # what "auto" settled on for this server: the structured-output form that works
        # (SCHEMA_FORMS, then None: none does) and whether the system message is folded
        self._forms: tuple[str, ...] = SCHEMA_FORMS
        self._used: str | None = None  # the form a reply came back in
        fold = self.params.get("fold_system")
        self._fold: bool | None = None if fold == AUTO else bool(fold)
        #: requests the server says it works on at once (asked by :meth:`preflight`), or None
        self.slots: int | None = None

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.params.items() if k != "api_key"}
        extra = "".join(f", {k}={v!r}" for k, v in shown.items())
        return f"LiteLLMBackend({self.model!r}{extra})"

    def cache_identity(self) -> dict[str, Any]:
        """Model and the parameters that change the answer (no keys, headers or timeouts)."""
        params = {k: v for k, v in sorted(self.params.items()) if k not in _NOT_IN_KEY}
        return {"kind": self.kind, "model": self.model, "params": params}

    def _messages(self, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        msgs = [dict(m) for m in messages]
        return fold_system(msgs) if self._fold else msgs

    def settled(self) -> dict[str, Any]:
        """What ``"auto"`` settled on for this server, for the run's stats: ``fold_system``
        (the probe's finding) and ``response_format`` (the structured-output form the replies
        came back in, or ``"none"`` when the server refused every form)."""
        out: dict[str, Any] = {}
        if self.params.get("fold_system") == AUTO and self._fold is not None:
            out["fold_system"] = self._fold
        if self.params.get("response_format") == AUTO and (self._used or not self._forms):
            out["response_format"] = self._used or "none"
        return out

    async def probe_system(self, timeout: float = 120.0) -> bool:
        """Whether the server's chat template keeps the system message: one tiny request
        with a code word given only there (:data:`~maev_kit.backends._local.PROBE_MESSAGES`).
        With ``fold_system="auto"`` the preflight asks it, and the rules are folded into the
        user message when the word does not come back. A failed probe folds too (folding
        loses nothing)."""
        litellm = import_litellm()
        params = request_params({k: v for k, v in self.params.items()
                                 if k not in ("response_format", "max_tokens")})
        try:
            response = await litellm.acompletion(
                model=self.model, messages=[dict(m) for m in PROBE_MESSAGES], timeout=timeout,
                num_retries=0, max_retries=0, max_tokens=16, **params)
            text = str(response.choices[0].message.content or "")
        except Exception:  # noqa: BLE001 - a probe that fails tells nothing: fold
            return False
        return probe_kept_system(text)

    def endpoint(self) -> str | None:
        """The address of the server this model is served from when it is not a hosted
        provider's (``api_base``, ``OPENAI_BASE_URL``, a local prefix's default), else None."""
        return local_endpoint(self.model, self.params)[0]

    async def preflight(self) -> list[str] | None:
        """Ask a server of the user's own (see :meth:`endpoint`) which models it serves: the
        ids, or None when it cannot tell or the model is a hosted provider's. Raises an error
        with a ``cause`` (``unreachable``, ``auth``, ``other``) when nothing listens, the key
        is refused or the model is not among those served; the runner turns it into a
        JudgeUnavailableError naming the address. Also asks how many requests the server
        works on at once (:attr:`slots`, see :func:`~maev_kit.backends.internal.preflight`)."""
        import asyncio

        base = self.endpoint()
        if base is None:
            return None
        name = self.model.split("/", 1)[1] if "/" in self.model else self.model
        key = self.params.get("api_key")
        served, self.slots = await asyncio.to_thread(
            preflight, name, base, key if isinstance(key, str) else None)
        if self._fold is None:  # fold_system="auto": ask the chat template once
            self._fold = not await self.probe_system()
        return served

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0, max_tokens: int | None = None,
                       response_schema: Mapping[str, Any] | None = None) -> Completion:
        """One chat completion; raises :class:`~maev_kit.backends.BackendError` on failure.

        ``max_tokens`` is the runner's estimate of the reply's length, the cap sent when the
        backend's own ``max_tokens`` is ``"auto"``; ``response_schema`` the JSON schema of the
        reply, sent as ``response_format`` when the backend's is ``"auto"`` (a server that
        refuses that form is asked in the next form, then without, and not sent it again). A
        caller that stops waiting (the runner's
        timeout, a cancelled run) cancels the request: its connection closes, so a server that
        notices stops working on it.
        """
        litellm = import_litellm()
        start = time.perf_counter()
        params = request_params(self.params, max_tokens)
        while True:
            form = self._schema_form(response_schema)
            if form is not None and response_schema is not None:
                params["response_format"] = response_format(response_schema, form)
            try:
                response = await self._call(litellm, messages, timeout, params)
                self._used = form or self._used
                break
            except BackendError as err:
                # a server that refuses this form of structured output (a 400 or 422, or —
                # llama-cpp-python's — a 500 naming response_format): the next form, then
                # none; once per server, remembered
                said = str(err).lower()
                refused = "response_format" in said or (err.kind == "bad_request" and (
                    err.status == 422 or "schema" in said))
                if form is None or not refused:
                    raise
                self._forms = tuple(f for f in self._forms if f != form)
                params.pop("response_format", None)
        latency = time.perf_counter() - start
        return completion_from_response(response, latency=latency, cost=self._cost(litellm, response))

    def _schema_form(self, schema: Mapping[str, Any] | None) -> str | None:
        """The structured-output form to send with a request whose reply has ``schema``:
        None unless ``response_format`` is ``"auto"`` and the server has not refused them
        all."""
        if schema is None or self.params.get("response_format") != AUTO or not self._forms:
            return None
        return self._forms[0]

    async def _call(self, litellm: Any, messages: Sequence[Mapping[str, Any]],
                    timeout: float, params: dict[str, Any]) -> Any:
        """One litellm call; cancelling it closes its connection (see :func:`_abandon`)."""
        import asyncio

        call = asyncio.ensure_future(litellm.acompletion(
            model=self.model, messages=self._messages(messages), timeout=timeout,
            num_retries=0, max_retries=0, **params))
        _IN_FLIGHT.add(call)
        call.add_done_callback(_forget)
        try:
            return await asyncio.shield(call)
        except asyncio.CancelledError:
            _abandon(call)
            raise
        except BackendError:
            raise
        except Exception as exc:
            raise classify_error(exc) from exc

    @staticmethod
    def _cost(litellm: Any, response: Any) -> float | None:
        hidden = getattr(response, "_hidden_params", None) or {}
        if "response_cost" in hidden:
            cost = hidden["response_cost"]
            return float(cost) if isinstance(cost, (int, float)) else None
        try:  # an unpriced model raises here: the cost is unknown, never guessed
            return float(litellm.completion_cost(completion_response=response))
        except Exception:
            return None
