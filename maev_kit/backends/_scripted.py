"""A backend that replays scripted replies: a test double with no HTTP at all."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Union

from maev_kit.backends._base import BackendError, Completion

__all__ = ["ScriptError", "ScriptedBackend"]

Step = Union[str, Completion, BaseException, Callable[[list[dict[str, Any]]], Any]]


class ScriptError(AssertionError):
    """The script and the calls made did not match (a reply left unused, or too few replies)."""


class ScriptedBackend:
    """Answer each request with the next scripted step; fail loudly when the script and the calls
    disagree.

    A step is a reply text, a :class:`~maev_kit.backends.Completion`, an exception to raise
    (e.g. ``BackendError("rate_limit", "slow down", retry_after=0.01)``) or a callable
    ``step(messages) -> str | Completion``. A request beyond the script raises
    :class:`ScriptError`; so does :meth:`assert_consumed` (and leaving a ``with`` block) while
    steps are left. Requests received are kept in :attr:`requests`.

    Examples
    --------
    >>> import asyncio
    >>> backend = ScriptedBackend(["one", BackendError("server", "503"), "two"])
    >>> asyncio.run(backend.complete([{"role": "user", "content": "hi"}])).text
    'one'
    >>> backend.pending
    2
    >>> backend.assert_consumed()
    Traceback (most recent call last):
    ...
    maev_kit.backends._scripted.ScriptError: ScriptedBackend: 2 scripted step(s) left unused ...
    """

    kind = "scripted"

    def __init__(self, steps: Iterable[Step], *, model: str = "scripted", latency: float = 0.0) -> None:
        self.steps: list[Step] = list(steps)
        self.model = model
        self.latency = float(latency)
        self.requests: list[list[dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ScriptedBackend({self.pending} step(s) left, model={self.model!r})"

    @property
    def pending(self) -> int:
        """Steps not used yet."""
        return len(self.steps)

    def cache_identity(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model}

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0) -> Completion:
        msgs = [dict(m) for m in messages]
        with self._lock:
            self.requests.append(msgs)
            if not self.steps:
                raise ScriptError(f"ScriptedBackend: request {len(self.requests)} arrived but the "
                                  "script is used up; add more steps")
            step = self.steps.pop(0)
        if self.latency:
            await asyncio.sleep(self.latency)
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, (str, Completion)):
            step = step(msgs)
        if isinstance(step, Completion):
            return step
        if not isinstance(step, str):
            raise TypeError(f"ScriptedBackend: a step must give a str or Completion, got {step!r}")
        return Completion(step, prompt_tokens=sum(len(str(m.get("content", ""))) // 4 for m in msgs),
                          completion_tokens=len(step) // 4, cost=None, latency=self.latency,
                          model=self.model)

    def assert_consumed(self) -> None:
        """Raise :class:`ScriptError` if scripted steps are left unused."""
        if self.steps:
            raise ScriptError(f"ScriptedBackend: {len(self.steps)} scripted step(s) left unused "
                              f"after {len(self.requests)} request(s): {self.steps[:3]!r}")

    def __enter__(self) -> ScriptedBackend:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is None:
            self.assert_consumed()


