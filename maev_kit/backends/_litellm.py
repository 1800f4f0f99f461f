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

__all__ = ["LiteLLMBackend", "import_litellm"]

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


class LiteLLMBackend:
    """Send requests through ``litellm.acompletion``: ``gpt-4o-mini``,
    ``anthropic/claude-3-5-haiku-20241022``, ``ollama/llama3.1``, ``openai/<name>`` + ``api_base``...

    ``params`` go to litellm on every call (``temperature``, ``api_base``, ``api_key``,
    ``response_format``, ...). Timeouts and retries belong to the runner: litellm is always
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
    {'kind': 'litellm', 'model': 'openai/my-judge', 'params': {'api_base': 'http://127.0.0.1:8000/v1', 'temperature': 0}}
    """

    kind = "litellm"

    def __init__(self, model: str, **params: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"`model` must be a litellm model string such as 'gpt-4o-mini', "
                             f"got {model!r}")
        reject_runner_params("LiteLLMBackend", params, _OWNED_BY_RUNNER)
        self.model = model
        self.params = dict(params)

    def __repr__(self) -> str:
        shown = {k: v for k, v in self.params.items() if k != "api_key"}
        extra = "".join(f", {k}={v!r}" for k, v in shown.items())
        return f"LiteLLMBackend({self.model!r}{extra})"

    def cache_identity(self) -> dict[str, Any]:
        """Model and the parameters that change the answer (no keys, headers or timeouts)."""
        params = {k: v for k, v in sorted(self.params.items()) if k not in _NOT_IN_KEY}
        return {"kind": self.kind, "model": self.model, "params": params}

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0) -> Completion:
        """One chat completion; raises :class:`~maev_kit.backends.BackendError` on failure."""
        litellm = import_litellm()
        start = time.perf_counter()
        try:
            response = await litellm.acompletion(
                model=self.model, messages=[dict(m) for m in messages], timeout=timeout,
                num_retries=0, max_retries=0, **self.params)
        except BackendError:
            raise
        except Exception as exc:
            raise classify_error(exc) from exc
        latency = time.perf_counter() - start
        return completion_from_response(response, latency=latency, cost=self._cost(litellm, response))

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
