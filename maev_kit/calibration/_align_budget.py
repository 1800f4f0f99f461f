"""The budget of :func:`~maev_kit.calibration.align` and what it is measured in.

This module owns :class:`Budget` (at most so many requests or dollars), the meter that counts
what a search has sent and the backend wrapper that refuses a request past the limit, litellm's
per-token prices and token counts, and the estimate made before anything is sent: requests,
cached replies, tokens and cost of scoring a judge on a list of items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError


#: Output tokens assumed per fact when estimating cost (a label and a one-sentence reason).
OUTPUT_TOKENS_PER_FACT = 50


# --------------------------------------------------------------------------- budget
@dataclass(frozen=True)
class Budget:
    """Limits on what a search may send: ``max_requests`` HTTP requests (retries count) and
    ``max_cost`` USD (litellm's prices; refused for a model litellm has no price for).

    >>> Budget(max_requests=200).max_requests
    200
    """

    max_requests: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        if self.max_requests is not None and (isinstance(self.max_requests, bool) or not
                                              isinstance(self.max_requests, int)
                                              or self.max_requests < 0):
            raise InputError(f"max_requests must be a whole number >= 0, got "
                             f"{self.max_requests!r}")
        if self.max_cost is not None and (isinstance(self.max_cost, bool) or not
                                          isinstance(self.max_cost, (int, float))
                                          or not self.max_cost >= 0):
            raise InputError(f"max_cost must be a number of USD >= 0, got {self.max_cost!r}")


def _budget(budget: Any) -> Budget:
    if budget is None:
        return Budget()
    if isinstance(budget, Budget):
        return budget
    if isinstance(budget, Mapping):
        extra = set(budget) - {"max_requests", "max_cost"}
        if extra:
            raise InputError(f"`budget` takes max_requests and max_cost, not {sorted(extra)}")
        return Budget(**dict(budget))
    raise TypeError(f"`budget` must be a Budget or a dict with max_requests / max_cost, got "
                    f"{type(budget).__name__}")


class _Meter:
    """Counts what is sent; refuses a request that would pass the budget (nothing is sent)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.requests = 0
        self.cost = 0.0
        self.priced = True  # False once a reply came without a price (cost unknown)
        self.tripped = False

    @property
    def spent(self) -> dict[str, Any]:
        return {"requests": self.requests, "cost": self.cost if self.priced else None}

    def fits(self, requests: int, cost: float | None) -> bool:
        b = self.budget
        if b.max_requests is not None and self.requests + requests > b.max_requests:
            return False
        if b.max_cost is not None and cost is not None and self.cost + cost > b.max_cost + 1e-12:
            return False
        return True


class _BudgetedBackend:
    """A backend that asks the meter before each request; past the budget it raises a
    non-retried error instead of sending (so the server never sees the request)."""

    def __init__(self, inner: Any, meter: _Meter, price: _Price | None) -> None:
        self.inner, self.meter, self.price = inner, meter, price
        self.model = inner.model
        self.kind = getattr(inner, "kind", "backend")

    def cache_identity(self) -> dict[str, Any]:
        return self.inner.cache_identity()

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0) -> Any:
        from maev_kit.backends import BackendError

        est = None
        if self.price is not None:
            est = self.price.cost(_count_tokens(self.model, messages), _out_tokens(messages))
        if not self.meter.fits(1, est):
            self.meter.tripped = True
            raise BackendError("other", "not sent: the alignment's budget is spent")
        self.meter.requests += 1
        completion = await self.inner.complete(messages, timeout=timeout)
        spent = completion.cost if completion.cost is not None else est
        if spent is None:
            self.meter.priced = False
        self.meter.cost += spent or 0.0
        return completion


# --------------------------------------------------------------------------- estimate
@dataclass(frozen=True)
class _Price:
    input: float
    output: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in * self.input + tokens_out * self.output


def _litellm() -> Any:
    try:
        from maev_kit.backends.internal import import_litellm

        return import_litellm()
    except ImportError:
        return None


def _price(model: str, backend_params: Mapping[str, Any]) -> _Price | None:
    """USD per token from ``input_cost_per_token`` / ``output_cost_per_token`` in the backend
    parameters, else litellm's price table (``litellm.model_cost``); None when unknown."""
    if "input_cost_per_token" in backend_params:
        return _Price(float(backend_params["input_cost_per_token"]),
                      float(backend_params.get("output_cost_per_token", 0.0)))
    litellm = _litellm()
    table = getattr(litellm, "model_cost", None) or {}
    names = [model] + ([model.split("/", 1)[1]] if "/" in model else [])
    for name in names:
        info = table.get(name)
        if info and info.get("input_cost_per_token") is not None:
            return _Price(float(info["input_cost_per_token"]),
                          float(info.get("output_cost_per_token") or 0.0))
    return None


def _count_tokens(model: str, messages: Sequence[Mapping[str, Any]]) -> int:
    """Prompt tokens: litellm's ``token_counter`` when litellm is importable, else chars / 4."""
    litellm = _litellm()
    if litellm is not None:
        try:
            return int(litellm.token_counter(model=model, messages=[dict(m) for m in messages]))
        except Exception:  # an odd model name: fall back to the rough count
            pass
    chars = sum(len(str(m.get("content", ""))) for m in messages)
    return max(1, (chars + 3) // 4)


def _out_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    text = "".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    facts = max(1, text.count('{"id": "F'))
    return OUTPUT_TOKENS_PER_FACT * facts


def _groups(items: Sequence[Any]) -> list[list[Any]]:
    out: dict[tuple[str, int], list[Any]] = {}
    for it in items:
        out.setdefault((it.conversation_id, it.handoff_index), []).append(it)
    return list(out.values())


@dataclass
class _Estimate:
    requests: int = 0
    cached: int = 0
    tokens: int = 0
    cost: float | None = 0.0

    def add(self, other: _Estimate) -> None:
        self.requests += other.requests
        self.cached += other.cached
        self.tokens += other.tokens
        self.cost = None if self.cost is None or other.cost is None else self.cost + other.cost


def _estimate(judge: Any, backend: Any, items: Sequence[Any], price: _Price | None,
              cache: Any) -> _Estimate:
    """Requests still to send for ``items`` (cached replies subtracted), their prompt tokens
    and cost."""
    from maev_kit.runner import cache_key
    from maev_kit.runner.internal import open_cache as _open_cache

    groups = _groups(items)
    requests = [judge.build_messages(g) for g in groups]
    cached: set[int] = set()
    store = _open_cache(cache) if requests and _cache_exists(cache) else None
    if store is not None:
        try:
            ident = backend.cache_identity()
            keys = [cache_key(ident, judge.name, judge.version, m) for m in requests]
            hits = store.get_many(keys)
            cached = {i for i, k in enumerate(keys) if k in hits}
        finally:
            store.close()
    est = _Estimate(cached=len(cached))
    for i, msgs in enumerate(requests):
        if i in cached:
            continue
        t_in = _count_tokens(backend.model, msgs)
        est.requests += 1
        est.tokens += t_in + _out_tokens(msgs)
        if est.cost is not None:
            est.cost = None if price is None else est.cost + price.cost(t_in, _out_tokens(msgs))
    return est


def _cache_exists(cache: Any) -> bool:
    """True when ``cache`` names a reply cache that already exists (an estimate never creates
    one)."""
    from maev_kit.runner import DEFAULT_CACHE_DIR
    from maev_kit.runner.internal import CACHE_FILENAME

    if cache is False:
        return False
    where = getattr(cache, "directory", None) or (DEFAULT_CACHE_DIR if cache in (None, True)
                                                  else cache)
    return (Path(where) / CACHE_FILENAME).is_file()


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:.4f}"
