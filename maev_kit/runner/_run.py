"""Run a judge over retention items: one request per handoff, bounded concurrency, retries with
backoff, a persistent cache and accounting."""

from __future__ import annotations

import asyncio
import math
import os
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from maev_kit.backends._base import KIT_LOOPS, BackendError, Completion, unavailable_error
from maev_kit.errors import ERROR_CAUSES
from maev_kit.judges._verdict import Verdict
from maev_kit.retention._items import RetentionItem
from maev_kit.runner._cache import DEFAULT_CACHE_DIR, JudgeCache, _request, cache_key

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["JudgeRun", "arun_judge", "run_judge"]

_MAX_BACKOFF = 30.0
# Causes that retrying cannot fix: never retried; before any reply arrived they stop the run.
_FATAL = frozenset({"auth", "unreachable"})
_OFFLINE_BATCH = 256


@dataclass
class JudgeRun:
    """The verdicts of one judge over a list of items, in item order, with the run's accounting.

    ``stats`` holds: ``items``, ``handoffs``, ``requests`` (HTTP requests sent, retries
    included), ``retries``, ``cache_hits`` (handoffs answered from the cache), ``errors`` (items
    whose verdict is an error: no label, left out of every rate), ``errors_by_cause`` (those
    items by cause, one of :data:`maev_kit.errors.ERROR_CAUSES`: ``auth`` — the key was
    missing or refused —, ``unreachable`` — connection refused or unknown host —,
    ``rate_limit`` — still 429 after the retries —, ``timeout``, ``server`` — 5xx or a dropped
    connection after the retries —, ``content_filter`` — the provider refused the content —,
    ``unparseable`` — a reply that could not be read, or that left the fact out —, ``other``;
    the counts add up to ``errors``), ``errors_by_kind`` (the same items by the finer transport
    kind of :data:`maev_kit.backends.ERROR_KINDS`, plus ``parse`` for one fact missing or
    invalid in an otherwise readable reply), ``failed_attempts`` (every failed attempt by kind,
    retried or not), ``prompt_tokens``, ``completion_tokens``, ``tokens``, ``cost`` (USD spent
    by this run; None when a reply came without a price — never estimated), ``latency_p50`` /
    ``latency_p95`` (seconds per answered request; None without requests) and ``wall_time``.
    """

    verdicts: list[Verdict]
    judge_name: str
    judge_version: str
    model: str | None
    stats: dict[str, Any]
    items: tuple[RetentionItem, ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        s = self.stats
        return (f"JudgeRun({self.judge_name}@{self.judge_version}, model={self.model!r}: "
                f"{len(self.verdicts)} verdicts, {s.get('errors', 0)} errors, "
                f"{s.get('requests', 0)} requests, {s.get('cache_hits', 0)} cache hits)")

    def to_frame(self) -> pd.DataFrame:
        """One row per item: ids, label, rationale, evidence, error, cause, judge, version,
        model."""
        import pandas as pd

        by_id = {it.item_id: it for it in self.items}
        rows = []
        for v in self.verdicts:
            it = by_id.get(v.item_id)
            rows.append({
                "item_id": v.item_id,
                "conversation_id": it.conversation_id if it else None,
                "handoff_index": it.handoff_index if it else None,
                "fact_id": it.fact_id if it else None,
                "label": v.label, "rationale": v.rationale, "evidence": list(v.evidence),
                "error": v.error, "cause": v.cause, "judge": self.judge_name,
                "judge_version": self.judge_version, "model": self.model})
        columns = ["item_id", "conversation_id", "handoff_index", "fact_id", "label",
                   "rationale", "evidence", "error", "cause", "judge", "judge_version", "model"]
        return pd.DataFrame(rows, columns=columns)


# -- argument checks ------------------------------------------------------------------------
def _check_args(judge: Any, items: list[Any], max_concurrency: Any, max_retries: Any,
                timeout: Any, retry_backoff: Any) -> None:
    for attr in ("name", "version", "offline"):
        if not hasattr(judge, attr):
            raise TypeError(f"`judge` must be a judge (with name, version and offline), got "
                            f"{type(judge).__name__}; try maev_kit.judges.get_judge('heuristic')")
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ValueError(f"`max_concurrency` must be a positive int, got {max_concurrency!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"`max_retries` must be an int >= 0, got {max_retries!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0 \
            or not math.isfinite(timeout):
        raise ValueError(f"`timeout` must be a positive number of seconds, got {timeout!r}")
    if not isinstance(retry_backoff, (int, float)) or retry_backoff < 0:
        raise ValueError(f"`retry_backoff` must be >= 0 seconds, got {retry_backoff!r}")
    seen: set[str] = set()
    for i, it in enumerate(items):
        if not isinstance(it, RetentionItem):
            raise TypeError(f"`items[{i}]` must be a RetentionItem (see build_retention_items), "
                            f"got {type(it).__name__}")
        if it.item_id in seen:
            raise ValueError(f"`items` holds item id {it.item_id!r} twice; pass each item once")
        seen.add(it.item_id)


def _resolve_backend(judge: Any, backend: Any) -> Any:
    if judge.offline:
        if backend is not None:
            raise ValueError(f"judge {judge.name!r} runs offline: pass backend=None "
                             f"(got {backend!r})")
        return None
    if backend is None:
        raise ValueError(f"judge {judge.name!r} asks a language model: pass `backend`, a litellm "
                         "model string such as 'gpt-4o-mini' or a backend object "
                         "(LiteLLMBackend, OpenAIClientBackend)")
    if isinstance(backend, str):
        from maev_kit.backends._litellm import LiteLLMBackend

        return LiteLLMBackend(backend)
    if not callable(getattr(backend, "complete", None)) or not hasattr(backend, "cache_identity"):
        raise TypeError("`backend` must be a litellm model string or a backend object with "
                        f"`complete` and `cache_identity` (got {type(backend).__name__}); wrap an "
                        "openai client as OpenAIClientBackend(client, model)")
    return backend


def _open_cache(cache: Any) -> JudgeCache | None:
    if cache is False:
        return None
    if cache is None or cache is True:
        return JudgeCache(DEFAULT_CACHE_DIR)
    if isinstance(cache, JudgeCache):
        return JudgeCache(cache.directory)
    if isinstance(cache, (str, os.PathLike)):
        return JudgeCache(cache)
    raise TypeError(f"`cache` must be a directory path, None (the default {DEFAULT_CACHE_DIR}/) "
                    f"or False (no cache), got {type(cache).__name__}")


# -- accounting -----------------------------------------------------------------------------
class _Stats:
    def __init__(self, n_items: int, n_groups: int) -> None:
        self.items, self.handoffs = n_items, n_groups
        self.requests = self.retries = self.cache_hits = self.answered = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.cost: float | None = 0.0
        self.latencies: list[float] = []
        self.failed_attempts: Counter[str] = Counter()
        self.start = time.perf_counter()

    def add(self, completion: Completion) -> None:
        self.answered += 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.latencies.append(completion.latency)
        if self.cost is not None:
            self.cost = None if completion.cost is None else self.cost + completion.cost

    def finish(self, verdicts: list[Verdict], error_kinds: dict[str, str]) -> dict[str, Any]:
        lat = sorted(self.latencies)
        by_kind = Counter(error_kinds.get(v.item_id, "parse") for v in verdicts if v.error)
        by_cause = Counter(v.cause or "other" for v in verdicts if v.error)
        return {
            "items": self.items, "handoffs": self.handoffs, "requests": self.requests,
            "retries": self.retries, "cache_hits": self.cache_hits,
            "errors": sum(1 for v in verdicts if v.error),
            "errors_by_cause": {c: by_cause[c] for c in ERROR_CAUSES if by_cause[c]},
            "errors_by_kind": dict(by_kind),
            "failed_attempts": dict(self.failed_attempts),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "tokens": self.prompt_tokens + self.completion_tokens, "cost": self.cost,
            "latency_p50": _percentile(lat, 50), "latency_p95": _percentile(lat, 95),
            "wall_time": time.perf_counter() - self.start,
        }


def _percentile(sorted_values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of an already sorted list."""
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def _backoff(err: BackendError, attempt: int, base: float) -> float:
    """Wait before retry ``attempt + 1``: the server's Retry-After if it gave one, else
    exponential backoff with jitter (half fixed, half random)."""
    if err.retry_after is not None:  # at least what the server asked, plus up to 10 % so
        return err.retry_after * random.uniform(1.0, 1.1)  # clients told the same don't collide
    step = min(_MAX_BACKOFF, base * 2 ** attempt)
    return step / 2 + random.uniform(0, step / 2)


# -- parsing --------------------------------------------------------------------------------
def _parse(judge: Any, text: str, group: Sequence[RetentionItem]) -> list[Verdict]:
    """The judge's verdicts for ``group``, in group order; a judge bug becomes error verdicts
    (cause ``other``), an error the judge's parser gave without a cause is ``unparseable``."""
    try:
        got = list(judge.parse(text, group))
    except Exception as exc:  # parse must never raise; if it does, lose nothing else
        return [Verdict(it.item_id, None, error=f"judge.parse raised {type(exc).__name__}: {exc}",
                        raw=text, cause="other") for it in group]
    by_id = {v.item_id: v for v in got if isinstance(v, Verdict)}
    out = [by_id.get(it.item_id) or Verdict(it.item_id, None, raw=text,
                                            error="the judge returned no verdict for this item")
           for it in group]
    return [replace(v, cause="unparseable") if v.error and v.cause is None else v for v in out]


def _group(items: Sequence[RetentionItem]) -> list[list[RetentionItem]]:
    groups: dict[tuple[str, int], list[RetentionItem]] = {}
    for it in items:
        groups.setdefault((it.conversation_id, it.handoff_index), []).append(it)
    return list(groups.values())


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="fact", disable=not enabled, leave=True,
                dynamic_ncols=True)


# -- the run --------------------------------------------------------------------------------
async def arun_judge(judge: Any, items: Iterable[RetentionItem], backend: Any = None, *,
                     max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
                     cache: Any = None, progress: bool = True,
                     retry_backoff: float = 0.5) -> JudgeRun:
    """Async :func:`run_judge`: ``await arun_judge(judge, items, backend)`` in a running loop."""
    items = list(items)
    _check_args(judge, items, max_concurrency, max_retries, timeout, retry_backoff)
    backend = _resolve_backend(judge, backend)
    if backend is None:
        return _run_offline(judge, items, progress)
    bar = _progress(len(items), f"{judge.name} · {backend.model}", progress)
    return await _arun(judge, items, backend, max_concurrency, max_retries, timeout, cache,
                       retry_backoff, bar)


async def _arun(judge: Any, items: list[RetentionItem], backend: Any, max_concurrency: int,
                max_retries: int, timeout: float, cache: Any, retry_backoff: float,
                bar: Any) -> JudgeRun:
    try:
        return await _arun_with_bar(judge, items, backend, max_concurrency, max_retries, timeout,
                                    cache, retry_backoff, bar)
    finally:
        bar.close()


async def _arun_with_bar(judge: Any, items: list[RetentionItem], backend: Any,
                         max_concurrency: int, max_retries: int, timeout: float, cache: Any,
                         retry_backoff: float, bar: Any) -> JudgeRun:
    groups = _group(items)
    stats = _Stats(len(items), len(groups))
    requests = [judge.build_messages(g) for g in groups]
    identity = backend.cache_identity()
    keys = [cache_key(identity, judge.name, judge.version, m) for m in requests]
    judge_tag = f"{judge.name}@{judge.version}"
    results: list[list[Verdict] | None] = [None] * len(groups)
    error_kinds: dict[str, str] = {}
    store = _open_cache(cache) if groups else None

    async def one(i: int) -> list[Verdict]:
        group, messages = groups[i], requests[i]
        last: BackendError | None = None
        unparsed: list[Verdict] | None = None
        for attempt in range(max_retries + 1):
            if attempt:
                stats.retries += 1
                await asyncio.sleep(_backoff(last, attempt - 1, retry_backoff))  # type: ignore[arg-type]
            stats.requests += 1
            try:
                completion = await asyncio.wait_for(backend.complete(messages, timeout=timeout),
                                                    timeout)
            except asyncio.TimeoutError:
                last = BackendError("timeout", f"no reply within timeout={timeout} s")
            except BackendError as exc:
                last = exc
            else:
                stats.add(completion)
                verdicts = _parse(judge, completion.text, group)
                if any(v.error is None for v in verdicts):
                    if store is not None:  # committed now: an interrupted run keeps it
                        store.put(keys[i], completion, judge=judge_tag,
                                  request=_request(identity, judge.name, judge.version, messages))
                    return verdicts
                unparsed = verdicts
                last = BackendError("unparseable", verdicts[0].error or "no usable verdict")
            stats.failed_attempts[last.kind] += 1
            if last.cause in _FATAL and not stats.answered:
                # Nothing has answered yet and this will not change by retrying: stop the run.
                raise unavailable_error(backend, last) from last
            if not last.retryable:
                break
        assert last is not None
        for it in group:
            error_kinds[it.item_id] = last.kind
        if last.kind == "unparseable" and unparsed is not None:
            return unparsed  # the parser's own errors, raw reply kept
        n = attempt + 1
        return [Verdict(it.item_id, None, error=f"request failed after {n} attempt"
                        f"{'s' if n > 1 else ''}: {last}", cause=last.cause) for it in group]

    try:
        hits = store.get_many(keys) if store is not None else {}
        todo: deque[int] = deque()
        for i, key in enumerate(keys):
            hit = hits.get(key)
            if hit is None:
                todo.append(i)
                continue
            results[i] = _parse(judge, hit.completion.text, groups[i])
            stats.cache_hits += 1
            bar.update(len(groups[i]))

        async def worker() -> None:
            while todo:
                i = todo.popleft()
                results[i] = await one(i)
                bar.update(len(groups[i]))

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(max_concurrency, len(todo)))]
        try:
            if tasks:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
                for t in done:
                    if t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        if store is not None:
            store.close()

    verdicts = [v for group_verdicts in results for v in group_verdicts or ()]
    order = {it.item_id: k for k, it in enumerate(items)}
    verdicts.sort(key=lambda v: order[v.item_id])
    return JudgeRun(verdicts, judge.name, str(judge.version), backend.model,
                    stats.finish(verdicts, error_kinds), tuple(items))


def _run_offline(judge: Any, items: list[RetentionItem], progress: bool) -> JudgeRun:
    stats = _Stats(len(items), len(_group(items)))
    verdicts: list[Verdict] = []
    bar = _progress(len(items), judge.name, progress)
    try:
        for start in range(0, len(items), _OFFLINE_BATCH):
            batch = items[start:start + _OFFLINE_BATCH]
            got = list(judge.judge_items(batch))
            if len(got) != len(batch):
                raise RuntimeError(f"judge {judge.name!r} returned {len(got)} verdicts for "
                                   f"{len(batch)} items")
            verdicts.extend(got)
            bar.update(len(batch))
    finally:
        bar.close()
    return JudgeRun(verdicts, judge.name, str(judge.version), None, stats.finish(verdicts, {}),
                    tuple(items))


def run_judge(judge: Any, items: Iterable[RetentionItem], backend: Any = None, *,
              max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
              cache: Any = None, progress: bool = True, retry_backoff: float = 0.5) -> JudgeRun:
    """Judge every item: one request per handoff, concurrent, retried, cached.

    Parameters
    ----------
    judge : judge
        An LLM judge (``RetentionJudge("v1")``) or an offline one (``HeuristicJudge()``).
    items : iterable of RetentionItem
        From :func:`~maev_kit.retention.build_retention_items`. Facts of one handoff
        (same ``conversation_id`` and ``handoff_index``) go in one request.
    backend : str, backend object or None
        None for offline judges. For LLM judges a litellm model string (``"gpt-4o-mini"``,
        becomes :class:`~maev_kit.backends.LiteLLMBackend`) or a backend object
        (:class:`~maev_kit.backends.OpenAIClientBackend` wraps an openai client).
    max_concurrency : int
        Requests in flight at once.
    max_retries : int
        Retries per request on rate limits (429), server errors (5xx), timeouts, dropped
        connections, unreadable bodies and replies the judge cannot parse at all. The wait
        honours ``retry-after-ms`` / ``Retry-After``, else doubles from ``retry_backoff`` seconds
        with jitter (at most 30 s). Authentication failures, refused connections, unknown hosts
        and content-filter refusals are never retried.
    timeout : float
        Seconds per request.
    cache : path, None or False
        Directory of the persistent reply cache; None uses ``.maev_cache/`` in the current
        directory; False turns it off. Each reply is stored as soon as it arrives, so a rerun
        after Ctrl-C or a crash sends only the requests that had not finished.
    progress : bool
        Show a progress bar (tqdm; a widget in notebooks).

    Returns
    -------
    JudgeRun
        Verdicts in item order, with ``stats`` (requests, cache hits, errors by cause, tokens,
        cost, latency percentiles). A request that still fails after the retries, or a reply
        that cannot be parsed, gives error verdicts (``label`` None, ``error`` and ``cause``
        set) — the run goes on.

    Raises
    ------
    maev_kit.errors.JudgeUnavailableError
        When a request fails on authentication or finds nothing listening (connection refused,
        unknown host) before any request of the run got a reply: the run is cancelled at once
        (within seconds, no retries) and the one-line message names the cause, the endpoint,
        the model and the fix. Once a reply has arrived, such failures become error verdicts.

    Notes
    -----
    Safe to call from a notebook: the run happens on one long-lived event loop in a worker
    thread (never ``asyncio.run`` on the notebook's running loop), the same loop for every
    call, so an ``AsyncOpenAI`` client can be reused across calls. Ctrl-C cancels the run.
    Use :func:`arun_judge` to ``await`` it on your own loop instead.

    Examples
    --------
    >>> from maev_kit.backends import ScriptedBackend
    >>> from maev_kit.retention import RetentionItem
    >>> class TinyJudge:
    ...     name, version, offline = "tiny", "1", False
    ...     def build_messages(self, items):
    ...         return [{"role": "user", "content": " | ".join(i.fact for i in items)}]
    ...     def parse(self, reply, items):
    ...         return [Verdict(i.item_id, reply) for i in items]
    >>> items = [RetentionItem(f"c1/h0/f{k}", "c1", 0, f"f{k}", f"fact {k}", (), ()) for k in (1, 2)]
    >>> run = run_judge(TinyJudge(), items, ScriptedBackend(["retained"]), cache=False,
    ...                 progress=False)
    >>> [v.label for v in run.verdicts], run.stats["requests"], run.stats["errors"]
    (['retained', 'retained'], 1, 0)
    """

    items = list(items)
    _check_args(judge, items, max_concurrency, max_retries, timeout, retry_backoff)
    resolved = _resolve_backend(judge, backend)
    if resolved is None:
        return _run_offline(judge, items, progress)
    # The bar is made here, in the caller's thread: in a notebook it then shows under the cell
    # that ran this (the run itself happens on the background loop's thread).
    bar = _progress(len(items), f"{judge.name} · {resolved.model}", progress)

    def make() -> Any:
        return _arun(judge, items, resolved, max_concurrency, max_retries, timeout, cache,
                     retry_backoff, bar)

    return _run_on_background_loop(make)


_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _background_loop() -> asyncio.AbstractEventLoop:
    """One event loop on a daemon thread, shared by every sync call.

    Always the same loop, so an ``AsyncOpenAI`` client (whose connection pool belongs to the
    loop that first used it) works across repeated ``run_judge`` calls — and a notebook's own
    running loop is never touched.
    """
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            KIT_LOOPS.add(loop)
            threading.Thread(target=loop.run_forever, name="maev-runner-loop",
                             daemon=True).start()
            _loop = loop
        return _loop


def _run_on_background_loop(make: Any) -> Any:
    loop = _background_loop()
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:  # waiting here would block the very loop that has to do the work
        raise RuntimeError("run_judge was called from inside a running judge run; "
                           "use `await arun_judge(...)` there")
    box: dict[str, Any] = {}
    done = threading.Event()

    async def main() -> None:
        try:
            box["value"] = await make()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    def start() -> None:
        box["task"] = loop.create_task(main())

    loop.call_soon_threadsafe(start)
    try:
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:  # Ctrl-C: cancel the run; finished replies are already cached
        loop.call_soon_threadsafe(lambda: box["task"].cancel())
        done.wait(30)
        raise
    if "error" in box:
        raise box["error"]
    return box["value"]
