"""Input coercion (and the rounding of shares) shared by the metric functions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


def as_records(value: Any, cls: type[T], arg: str, *, accepts: str | None = None) -> list[T]:
    """``value`` as a list of ``cls``; a mapping item is read as ``cls(**item)``.

    ``arg`` names the argument in errors; ``accepts`` says what it accepts (default "a list of
    <cls> objects"). A plain list of exact ``cls`` instances is returned as is (the fast path).

    >>> from maev_kit.expectations import RoutingTestCase
    >>> as_records([{"user_input": "hi", "correct_agent": "general"}], RoutingTestCase, "cases")
    [RoutingTestCase(user_input='hi', correct_agent='general', acceptable_agents=[], category=None)]
    >>> as_records("billing", RoutingTestCase, "test_cases")
    Traceback (most recent call last):
    ...
    TypeError: `test_cases` must be a list of RoutingTestCase objects, got str
    """
    if type(value) is list:  # the fast, common case: a list of exact cls instances
        for v in value:  # a loop, not all(<generator>): this runs per conversation
            if type(v) is not cls:
                break
        else:
            return value
    name = cls.__name__
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"`{arg}` must be {accepts or f'a list of {name} objects'}, "
                        f"got {type(value).__name__}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, cls):
            out.append(v)
        elif isinstance(v, Mapping):
            out.append(cls(**v))
        else:
            raise TypeError(f"`{arg}[{i}]` must be a {name}, got {type(v).__name__}")
    return out


def share(k: int, n: int) -> float:
    """``round(k / n, 3)`` for counts ``k`` of ``n``: all or none (most shares of one
    conversation) skip ``round``, the slow part, as ``k / n`` is then 1.0 or 0.0 already.

    >>> share(2, 3), share(3, 3), share(0, 3)
    (0.667, 1.0, 0.0)
    """
    q = k / n
    return round(q, 3) if k and k != n else q
