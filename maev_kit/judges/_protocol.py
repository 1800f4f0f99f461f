"""What a judge is: a named, versioned object that turns retention items into verdicts.

Two kinds share ``name``, ``version`` and ``offline``:

- an **LLM judge** (``offline=False``) builds one chat request per handoff and parses the reply;
  it does no I/O itself — :func:`maev_kit.runner.run_judge` sends the request;
- an **offline judge** (``offline=True``) answers directly with ``judge_items`` (no network).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from maev_kit.judges._verdict import Verdict
from maev_kit.retention import RetentionItem

__all__ = ["Judge", "LLMJudge", "OfflineJudge"]


@runtime_checkable
class Judge(Protocol):
    """Anything with ``name``, ``version`` (changes whenever its behaviour does) and ``offline``."""

    name: str
    version: str
    offline: bool


@runtime_checkable
class LLMJudge(Judge, Protocol):
    """A judge that asks a language model (``offline`` is False)."""

    def build_messages(self, items: Sequence[RetentionItem]) -> list[dict[str, str]]:
        """One chat request (``[{"role", "content"}, ...]``) for all facts of one handoff."""
        ...

    def parse(self, reply: str, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in item order; never raises."""
        ...


@runtime_checkable
class OfflineJudge(Judge, Protocol):
    """A judge that needs no network (``offline`` is True)."""

    def judge_items(self, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in item order."""
        ...
