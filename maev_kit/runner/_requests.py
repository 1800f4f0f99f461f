"""The request engine: groups of work, one chat request per group, bounded concurrency, retries
with backoff, fail-fast on a model that cannot answer, a persistent cache and accounting.

Judging (:func:`~maev_kit.runner.run_judge`) and the LLM fact proposer both run on it; what
differs between them is a small *task* object (:class:`RequestTask`) that builds the messages
for a group and reads the reply.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from maev_kit.backends import BackendError, Completion
from maev_kit.backends.internal import KIT_LOOPS, unavailable_error
from maev_kit.errors import ERROR_CAUSES
from maev_kit.runner._cache import DEFAULT_CACHE_DIR, JudgeCache, _request, cache_key

__all__ = ["RequestRun", "RequestTask", "arun_requests", "run_requests"]

_MAX_BACKOFF = 30.0
# Causes that retrying cannot fix: never retried; before any reply arrived they stop the run.
_FATAL = frozenset({"auth", "unreachable"})
#: The message that follows a reply that could not be read, in the one repair attempt.
REPAIR_PROMPT = ("Your reply could not be read. Reply with the JSON object only, exactly in the "
                 "format asked for: no other text, no code fence.")
_REPAIR_ECHO = 4000  # characters of the unreadable reply shown back in the repair request
#: Requests in flight at the start of a run (then raised while latency holds): four — enough
#: that a parallel server is not left waiting for the ramp, few enough that on a server that
#: works one request at a time the last of them is answered long before a sensible timeout.
START_CONCURRENCY = 4
_CUT = 1.5  # requests seen waiting in the server's queue above which the window is halved
@runtime_checkable
class RequestTask(Protocol):
    """What :func:`run_requests` needs to know about one kind of request.

    ``name`` and ``version`` go into the cache key (change the version whenever the prompt or
    the reading of replies changes). ``build_messages(group)`` makes the chat messages for one
    group; ``parse(text, group)`` turns the reply into a list of results and must never raise
    (a reply it cannot read becomes error results); ``error_result(member, error, cause)`` is
    the result standing for ``member`` of a group whose request failed (``cause`` one of
    :data:`maev_kit.errors.ERROR_CAUSES`); ``is_ok(result)`` tells results from error results.
    An error result's cause is read from its ``cause`` attribute (``unparseable`` when unset).
    """

    name: str
    version: str

    def build_messages(self, group: Sequence[Any]) -> list[dict[str, Any]]: ...

    def parse(self, text: str, group: Sequence[Any]) -> list[Any]: ...

    def error_result(self, member: Any, error: str, cause: str) -> Any: ...

    def is_ok(self, result: Any) -> bool: ...


@dataclass
class RequestRun:
    """The results of one task over its groups, with the run's accounting.

    ``results[i]`` is the list of results for ``groups[i]`` (what the task's ``parse`` returned,
    or one error result per member when the request failed). ``stats`` holds: ``groups``,
    ``members``, ``results``, ``requests`` (HTTP requests sent, retries included), ``retries``,
    ``cache_hits`` (groups answered from the cache), ``errors`` (error results),
    ``errors_by_cause`` (those by cause, one of :data:`maev_kit.errors.ERROR_CAUSES`),
    ``errors_by_kind`` (by the finer transport kind of :data:`maev_kit.backends.ERROR_KINDS`,
    ``parse`` for an error the parser reported in an otherwise readable reply),
    ``failed_attempts`` (every failed attempt by kind, retried or not), ``prompt_tokens``,
    ``completion_tokens``, ``tokens``, ``cost`` (USD; None when a reply came without a price),
    ``latency_p50`` / ``latency_p95`` (seconds per answered request; None without requests) and
    ``wall_time``.
    """

    results: list[list[Any]]
    stats: dict[str, Any]
    model: str | None
    name: str = ""
    version: str = ""
    groups: tuple[tuple[Any, ...], ...] = field(default=(), repr=False)

    def __repr__(self) -> str:
        s = self.stats
        return (f"RequestRun({self.name}@{self.version}, model={self.model!r}: "
                f"{s.get('groups', 0)} groups, {s.get('errors', 0)} errors, "
                f"{s.get('requests', 0)} requests, {s.get('cache_hits', 0)} cache hits)")


# -- argument checks ------------------------------------------------------------------------
def check_run_args(max_concurrency: Any, max_retries: Any, timeout: Any,
                   retry_backoff: Any) -> None:
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ValueError(f"`max_concurrency` must be a positive int, got {max_concurrency!r}")
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ValueError(f"`max_retries` must be an int >= 0, got {max_retries!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0 \
            or not math.isfinite(timeout):
        raise ValueError(f"`timeout` must be a positive number of seconds, got {timeout!r}")
    if not isinstance(retry_backoff, (int, float)) or retry_backoff < 0:
        raise ValueError(f"`retry_backoff` must be >= 0 seconds, got {retry_backoff!r}")


def _check_task(task: Any, groups: list[Any]) -> list[tuple[Any, ...]]:
    missing = [a for a in ("name", "version", "build_messages", "parse", "error_result", "is_ok")
               if not hasattr(task, a)]
    if missing:
        raise TypeError(f"`task` must have name, version, build_messages, parse, error_result "
                        f"and is_ok (see maev_kit.runner.RequestTask); "
                        f"{type(task).__name__} lacks {', '.join(missing)}")
    out = []
    for i, g in enumerate(groups):
        if isinstance(g, (str, bytes)) or not isinstance(g, Iterable):
            raise TypeError(f"`groups[{i}]` must be a sequence of members (one request per "
                            f"group), got {type(g).__name__}")
        g = tuple(g)
        if not g:
            raise ValueError(f"`groups[{i}]` is empty: every group needs at least one member")
        out.append(g)
    return out


def resolve_backend(backend: Any, who: str) -> Any:
    """A backend object for ``backend`` (a litellm model string becomes a LiteLLMBackend)."""
    if backend is None:
        raise ValueError(f"{who} asks a language model: pass `backend`, a litellm model string "
                         "such as 'gpt-4o-mini' or a backend object (LiteLLMBackend, "
                         "OpenAIClientBackend)")
    if isinstance(backend, str):
        from maev_kit.backends import LiteLLMBackend

        return LiteLLMBackend(backend)
    if not callable(getattr(backend, "complete", None)) or not hasattr(backend, "cache_identity"):
        raise TypeError("`backend` must be a litellm model string or a backend object with "
                        f"`complete` and `cache_identity` (got {type(backend).__name__}); wrap an "
                        "openai client as OpenAIClientBackend(client, model)")
    return backend


def open_cache(cache: Any) -> JudgeCache | None:
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
class Stats:
    """Counters of one run; :meth:`finish` turns them into the ``stats`` dict."""

    def __init__(self) -> None:
        self.requests = self.retries = self.cache_hits = self.answered = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.cost: float | None = 0.0
        self.latencies: list[float] = []
        self.failed_attempts: Counter[str] = Counter()
        self.peak_in_flight = 0
        self.window_start = ""  # how the window opened (see opening())
        self.cache = False
        self.start = time.perf_counter()

    def add(self, completion: Completion) -> None:
        self.answered += 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        self.latencies.append(completion.latency)
        if self.cost is not None:
            self.cost = None if completion.cost is None else self.cost + completion.cost

    def finish(self, errors: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The accounting, given ``(cause, kind)`` for every error result."""
        lat = sorted(self.latencies)
        by_cause = Counter(c for c, _ in errors)
        return {
            "requests": self.requests, "retries": self.retries, "cache_hits": self.cache_hits,
            "errors": len(errors),
            "errors_by_cause": {c: by_cause[c] for c in ERROR_CAUSES if by_cause[c]},
            "errors_by_kind": dict(Counter(k for _, k in errors)),
            "failed_attempts": dict(self.failed_attempts),
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "tokens": self.prompt_tokens + self.completion_tokens, "cost": self.cost,
            "latency_p50": _percentile(lat, 50), "latency_p95": _percentile(lat, 95),
            "peak_in_flight": self.peak_in_flight, "window_start": self.window_start,
            "cache": self.cache,
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


def progress_bar(total: int, desc: str, enabled: bool, unit: str = "item") -> Any:
    """A tqdm bar on stderr; cleared when done under ``MAEV_CLEAR_BARS=1`` (the ``maev``
    command line sets it: its notes and results follow on a clean screen), kept in a
    notebook."""
    import os

    from tqdm.auto import tqdm

    # smoothing 0.05: the rate (and so the ETA) is an average over many replies, not the
    # last one's — replies of a local model vary from seconds to minutes.
    leave = os.environ.get("MAEV_CLEAR_BARS") != "1"
    return tqdm(total=total, desc=desc, unit=unit, disable=not enabled, leave=leave,
                dynamic_ncols=True, smoothing=0.05)


def cause_of(result: Any) -> str:
    cause = getattr(result, "cause", None)
    return cause if cause in ERROR_CAUSES else "unparseable"


# -- parsing --------------------------------------------------------------------------------
def _parse(task: Any, text: str, group: tuple[Any, ...]) -> list[Any]:
    """The task's results for ``group``; a parser that raises (a bug: parse must not) gives one
    error result per member, cause ``other``, so nothing else of the run is lost."""
    try:
        return list(task.parse(text, group))
    except Exception as exc:
        return [task.error_result(m, f"{task.name}.parse raised {type(exc).__name__}: {exc}",
                                  "other") for m in group]


def _usable(task: Any, results: list[Any]) -> bool:
    """A reply worth keeping: the parser found something, or said there was nothing to find."""
    return not results or any(task.is_ok(r) for r in results)


# -- concurrency ------------------------------------------------------------------------------
class Window:
    """How many requests may be in flight: slow start, then additive increase, multiplicative
    decrease, steered by latency (TCP Vegas's estimate of the server's queue).

    Opens at ``start`` (at most ``ceiling``) — after one request alone when probing, see
    below. Each reply says how many of the
    requests in flight when it was sent were waiting in the server's queue rather than being
    worked on: ``n × (1 − fastest / latency)``, where ``n`` was the number in flight and
    ``fastest`` the quickest reply so far. A server that works on one request at a time answers
    ``n`` in flight ``n`` times slower (``n − 1`` queued); a parallel one about as fast (none
    queued). While fewer than one (or a quarter of those in flight) are queued, latency holds
    and the window grows: by one per reply in slow start (doubling every round trip), then by
    one per window of replies. More than 1.5 (or half of those in flight) queued, or a timeout,
    a 429, a 5xx or a dropped connection, halves it (never below one) and ends slow start; in
    between it holds. A request sent before the last decrease does not decrease it again. On a
    one-slot server this settles at two: one request worked on, one queued behind it, so the
    server is never idle between two requests and none waits long.

    With ``probe=True`` (a server that has not said how many requests it works on at once) the
    first request goes out alone: a server that refuses the key, does not serve the model or is
    not there is found with one request, and no request is abandoned behind it. Its reply opens
    the window at ``start`` — or, given the run's ``timeout``, at fewer when a server working
    on one request at a time would not finish ``start`` of them in half the timeout at that
    reply's pace (a model taking 20 s a reply, 60 s timeout: one), so that no request of a slow
    model times out in the queue. With ``probe=False`` (the server said: see :func:`opening`)
    the window is ``start`` from the first request.

    >>> w = Window(16)
    >>> w.size, w.replied(1.0, 0.0, 1) or w.size, w.replied(1.0, 0.0, 4) or w.size
    (1, 4, 5)
    >>> w.replied(1.0, 0.0, 4) or w.size
    6
    >>> w.replied(4.0, 0.0, 4) or w.size  # 4 in flight, 4 times slower: three were queued
    3
    >>> w.failed(0.0) or w.size  # sent before that decrease: no second halving
    3
    >>> w.replied(2.0, 9e9, 2) or w.size  # one queued behind one: hold
    3
    """

    def __init__(self, ceiling: int, start: int = START_CONCURRENCY, probe: bool = True,
                 timeout: float | None = None) -> None:
        self.ceiling = ceiling
        opened = float(max(1, min(start, ceiling)))
        #: the size the first reply opens a probing window at (None: open)
        self._opening: float | None = opened if probe else None
        self._timeout = timeout
        self.limit = 1.0 if probe else opened
        self.fastest: float | None = None  # None until the first reply
        self.slow_start = True
        self.last_cut = -math.inf

    @property
    def size(self) -> int:
        return max(1, int(self.limit))

    def replied(self, latency: float, sent_at: float, in_flight: int) -> None:
        """A reply that took ``latency`` seconds, for a request sent at ``sent_at`` with
        ``in_flight`` requests in flight (itself included)."""
        if self._opening is not None:  # the probe's reply: open the window
            self.fastest, self.limit = latency, self._opening
            if self._timeout is not None and latency > 0:  # no more than one slot finishes
                fits = math.floor(self._timeout / (2 * latency))  # in half the timeout
                self.limit = float(max(1, min(self._opening, fits)))
            self._opening = None
            return
        self.fastest = latency if self.fastest is None else min(self.fastest, latency)
        queued = in_flight * (1.0 - self.fastest / latency) if latency > 0 else 0.0
        if queued > max(_CUT, in_flight / 2):
            self._cut(sent_at)
        elif queued < max(1.0, in_flight / 4):
            self.limit = min(float(self.ceiling),
                             self.limit + (1.0 if self.slow_start else 1.0 / self.limit))
        else:
            self.slow_start = False  # the queue has started to grow: no more doubling

    def failed(self, sent_at: float) -> None:
        """A timeout, 429, 5xx or dropped connection for a request sent at ``sent_at``."""
        self._cut(sent_at)

    def _cut(self, sent_at: float) -> None:
        if sent_at <= self.last_cut:
            return
        self.slow_start = False
        self.limit = max(1.0, self.limit / 2)
        self.last_cut = time.monotonic()


_OVERLOAD = frozenset({"timeout", "rate_limit", "server", "connection"})


def opening(backend: Any, ceiling: int, timeout: float | None = None) -> tuple[Window, str]:
    """The window a run against ``backend`` starts with, and why (for the run's stats).

    - A hosted provider's API (the backend has no server of the user's own: its
      ``endpoint()`` is None) answers many requests at once: the ceiling from the first one.
    - A server that said how many requests it works on at once (``backend.slots``, asked by
      the preflight: llama.cpp's ``total_slots``, vLLM): that many from the first one.
    - Any other server — Ollama, LM Studio, llama-cpp-python's, a backend object that cannot
      tell — may work on one request at a time: the first request alone; its reply opens
      the window at :data:`START_CONCURRENCY` (fewer when one slot would not finish them in
      half of ``timeout``), raised while latency holds.

    >>> class Hosted:
    ...     def endpoint(self): return None
    >>> w, why = opening(Hosted(), 16); (w.size, why)
    (16, 'hosted')
    >>> class LlamaCpp:
    ...     slots = 4
    ...     def endpoint(self): return "http://127.0.0.1:8080/v1"
    >>> w, why = opening(LlamaCpp(), 16); (w.size, why)
    (4, 'announced 4')
    >>> w, why = opening(object(), 16); (w.size, why)
    (1, 'probe')
    """
    endpoint = getattr(backend, "endpoint", None)
    if callable(endpoint) and endpoint() is None:
        return Window(ceiling, ceiling, probe=False), "hosted"
    slots = getattr(backend, "slots", None)
    if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
        return Window(ceiling, slots, probe=False), f"announced {slots}"
    return Window(ceiling, timeout=timeout), "probe"


def _takes(backend: Any, name: str) -> bool:
    """Whether ``backend.complete`` accepts the keyword ``name`` (the runner's ``max_tokens``
    estimate, the reply's ``response_schema``)."""
    try:
        params = inspect.signature(backend.complete).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def repair_messages(task: Any, messages: list[dict[str, Any]], text: str
                    ) -> list[dict[str, Any]] | None:
    """The one repair request after a reply ``text`` that could not be read: the request, the
    reply, and the task's ``repair_prompt`` (default :data:`REPAIR_PROMPT`); None when the task
    sets ``repair_prompt = None`` (no repair: an unreadable reply is final)."""
    prompt = getattr(task, "repair_prompt", REPAIR_PROMPT)
    if not prompt:
        return None
    shown = text if len(text) <= _REPAIR_ECHO else text[:_REPAIR_ECHO] + " …"
    return [*messages, {"role": "assistant", "content": shown},
            {"role": "user", "content": str(prompt)}]


# -- the run --------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSettings:
    """How a run sends its requests: requests in flight, retries, seconds per request, the reply
    cache, the first backoff and whether a progress bar shows (the keyword arguments of
    :func:`run_requests` and :func:`~maev_kit.runner.run_judge`, same names)."""

    max_concurrency: int
    max_retries: int
    timeout: float
    cache: Any
    retry_backoff: float
    progress: bool = True

    def check(self) -> None:
        """Raise ValueError on a setting out of range (:func:`check_run_args`)."""
        check_run_args(self.max_concurrency, self.max_retries, self.timeout, self.retry_backoff)


class _Execution:
    """One run of ``task`` over ``groups``: each group's request and cache key, the reply cache,
    the results and failure kinds per group as they come, and the counters.

    Built in the order the run needs: the counters start, every request is built, then the
    cache opens (none without groups). :meth:`close` closes the cache.
    """

    def __init__(self, task: Any, groups: list[tuple[Any, ...]], backend: Any, *,
                 max_retries: int, timeout: float, cache: Any, retry_backoff: float,
                 bar: Any) -> None:
        self.stats = Stats()
        self.task, self.groups, self.backend, self.bar = task, groups, backend, bar
        self.max_retries, self.timeout, self.retry_backoff = max_retries, timeout, retry_backoff
        self.requests = [task.build_messages(g) for g in groups]
        self.identity = backend.cache_identity()
        self.keys = [cache_key(self.identity, task.name, str(task.version), m)
                     for m in self.requests]
        self.tag = f"{task.name}@{task.version}"
        self.results: list[list[Any]] = [[] for _ in groups]
        self.kinds: list[list[str | None]] = [[] for _ in groups]
        self.window = Window(1)
        self.cap_hint = callable(getattr(task, "reply_tokens", None)) and _takes(backend,
                                                                                 "max_tokens")
        self.schema_hint = callable(getattr(task, "reply_schema", None)) and _takes(
            backend, "response_schema")
        self.queued = self.in_flight = self.done = self.peak = 0
        self.store = open_cache(cache) if groups else None

    def close(self) -> None:
        """Close the reply cache."""
        if self.store is not None:
            self.store.close()

    def record(self, i: int, got: list[Any], kind: str | None) -> None:
        """Keep group ``i``'s results, each error's failure kind (``parse`` when the request
        did not fail), and move the progress bar."""
        self.results[i] = got
        self.kinds[i] = [None if self.task.is_ok(r) else (kind or "parse") for r in got]
        self.done += 1
        self.bar.update(len(self.groups[i]))  # the bar counts facts: all of this request's
        self.show()

    def show(self) -> None:
        """The requests queued, in flight and done, beside the progress bar."""
        if self.queued or self.in_flight:
            self.bar.set_postfix_str(f"{self.queued} queued · {self.in_flight} in flight · "
                                     f"{self.done} done", refresh=False)

    def start_clock(self) -> None:
        """Restart the bar's clock after the cache hits: what the cache answered shows as
        done, but counts as the bar's ``initial`` — outside its rate, so the ETA is the
        server's pace, not the cache's."""
        restart = getattr(self.bar, "reset", None)
        if not callable(restart) or not self.bar.n:
            return
        done = self.bar.n
        restart(total=self.bar.total)
        self.bar.n = self.bar.last_print_n = self.bar.initial = done
        self.bar.refresh()

    def answer_from_cache(self) -> deque[int]:
        """Record the groups whose reply is cached; the indices of the others, in order."""
        hits = self.store.get_many(self.keys) if self.store is not None else {}
        todo: deque[int] = deque()
        for i, key in enumerate(self.keys):
            hit = hits.get(key)
            if hit is None:
                todo.append(i)
                continue
            self.stats.cache_hits += 1
            self.record(i, _parse(self.task, hit.completion.text, self.groups[i]), None)
        return todo

    async def send_all(self, todo: deque[int], max_concurrency: int) -> None:
        """Send the requests of ``todo``, as many in flight as the :class:`Window` allows (at
        most ``max_concurrency``); the first exception of any request cancels the others (their
        connections close) and is raised."""
        self.window, self.stats.window_start = opening(self.backend, max_concurrency,
                                                         self.timeout)
        self.queued = len(todo)
        running: set[asyncio.Task[None]] = set()
        try:
            while todo or running:
                while todo and len(running) < self.window.size:
                    running.add(asyncio.ensure_future(self._one(todo.popleft())))
                    self.queued, self.in_flight = len(todo), len(running)
                    self.peak = max(self.peak, len(running))
                self.show()
                done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                self.in_flight = len(running)
                for t in done:
                    if t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
        finally:
            for t in running:
                t.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            self.queued = self.in_flight = 0

    async def _one(self, i: int) -> None:
        self.record(i, *await self._send(i))

    async def _send(self, i: int) -> tuple[list[Any], str | None]:
        """Group ``i``'s results: the parsed results and None; else, after the retries, the
        parser's own results for a reply that could not be read (cause ``unparseable``, even
        when a later attempt failed otherwise), or one error result per member, and the
        failure's kind. A reply that cannot be read is retried once, with a repair message,
        never as the same request; timeouts, 429s, 5xx and dropped connections up to
        ``max_retries`` times with backoff. Raises JudgeUnavailableError on a fatal failure
        before anything has answered."""
        messages = self.requests[i]
        last: BackendError | None = None
        unparsed: list[Any] | None = None
        repaired = False
        waits = 0
        n = 0
        while True:
            n += 1
            got, last, text = await self._attempt(i, messages)
            if last is None:
                return cast("list[Any]", got), None
            self.stats.failed_attempts[last.kind] += 1
            if self._fatal(last):  # nothing has answered and retrying will not change that
                raise unavailable_error(self.backend, last) from last
            if last.kind == "unparseable":
                unparsed = got
                repair = (repair_messages(self.task, messages, text or "")
                          if not repaired and self.max_retries else None)
                if repair is None:
                    break
                repaired, messages = True, repair
                self.stats.retries += 1
                continue
            if not last.retryable or waits >= self.max_retries:
                break
            self.stats.retries += 1
            await asyncio.sleep(_backoff(last, waits, self.retry_backoff))
            waits += 1
        if unparsed is not None:
            return unparsed, "unparseable"  # the parser's own errors, raw reply kept
        return [self.task.error_result(m, f"request failed after {n} attempt"
                                       f"{'s' if n > 1 else ''}: {last}", last.cause)
                for m in self.groups[i]], last.kind

    def _fatal(self, err: BackendError) -> bool:
        """A failure that stops the run: before any reply, a refused key, nothing listening,
        or a 404 (the model or the route is not there)."""
        if self.stats.answered:
            return False
        return err.cause in _FATAL or (err.kind == "bad_request" and err.status == 404)

    async def _attempt(self, i: int, messages: list[dict[str, Any]]
                       ) -> tuple[list[Any] | None, BackendError | None, str | None]:
        """Send ``messages`` for group ``i`` once: its usable results (stored in the cache at
        once, under the group's own key), None and the reply; a reply's unusable results, an
        ``unparseable`` error and the reply; or None, the request's failure and None."""
        group, task = self.groups[i], self.task
        self.stats.requests += 1
        extra: dict[str, Any] = {"max_tokens": int(task.reply_tokens(group))} \
            if self.cap_hint else {}
        if self.schema_hint:
            schema = task.reply_schema(group)
            if schema is not None:
                extra["response_schema"] = schema
        sent_at, in_flight = time.monotonic(), max(1, self.in_flight)
        try:
            completion = await asyncio.wait_for(
                self.backend.complete(messages, timeout=self.timeout, **extra), self.timeout)
        except asyncio.TimeoutError:
            self.window.failed(sent_at)
            return None, BackendError("timeout", f"no reply within timeout={self.timeout} s"), None
        except BackendError as exc:
            if exc.kind in _OVERLOAD:
                self.window.failed(sent_at)
            return None, exc, None
        self.window.replied(time.monotonic() - sent_at, sent_at, in_flight)
        self.stats.add(completion)
        got = _parse(task, completion.text, group)
        if _usable(task, got):
            if self.store is not None:  # committed now: an interrupted run keeps it
                self.store.put(self.keys[i], completion, judge=self.tag,
                               request=_request(self.identity, task.name, str(task.version),
                                                self.requests[i]))
            return got, None, completion.text
        first = next((r for r in got if not task.is_ok(r)), None)
        return got, BackendError("unparseable",
                                 str(getattr(first, "error", None) or "no usable result")), \
            completion.text


async def execute(task: Any, groups: list[tuple[Any, ...]], backend: Any, *,
                  max_concurrency: int, max_retries: int, timeout: float, cache: Any,
                  retry_backoff: float, bar: Any
                  ) -> tuple[list[list[Any]], list[list[str | None]], Stats]:
    """Run ``task`` over ``groups``: the results per group, the failure kind per result (None
    unless the request failed) and the counters. Closes nothing; raises
    :class:`~maev_kit.errors.JudgeUnavailableError` when nothing can answer."""
    run = _Execution(task, groups, backend, max_retries=max_retries, timeout=timeout,
                     cache=cache, retry_backoff=retry_backoff, bar=bar)
    try:
        todo = run.answer_from_cache()
        run.start_clock()
        if todo:
            await check_served(backend)
        await run.send_all(todo, max_concurrency)
    finally:
        run.close()
    run.stats.peak_in_flight = run.peak
    run.stats.cache = cache is not False
    return run.results, run.kinds, run.stats


async def check_served(backend: Any) -> None:
    """The backend's preflight, when it has one (a server of the user's own is asked which
    models it serves): raises JudgeUnavailableError, naming the address, when nothing listens
    there, the key is refused or the model is not served."""
    check = getattr(backend, "preflight", None)
    if not callable(check):
        return
    from maev_kit.backends.internal import PreflightError
    from maev_kit.errors import JudgeUnavailableError

    try:
        await check()
    except PreflightError as exc:
        fix = {"unreachable": "start the server or fix --api-base (api_base=)",
               "auth": "pass the server's key with --api-key (api_key=)"}.get(
            exc.cause, "pass one of those names as the model (--judge openai/<name>)")
        raise JudgeUnavailableError(str(exc), cause=exc.cause, fix=fix) from None


def error_causes(task: Any, results: list[list[Any]],
                 kinds: list[list[str | None]]) -> list[tuple[str, str]]:
    """``(cause, kind)`` for every error result, in order."""
    return [(cause_of(r), k or "parse") for got, ks in zip(results, kinds)
            for r, k in zip(got, ks) if not task.is_ok(r)]


async def execute_to_end(task: Any, groups: list[tuple[Any, ...]], backend: Any,
                         settings: RunSettings, bar: Any
                         ) -> tuple[list[list[Any]], dict[str, Any]]:
    """:func:`execute` with ``settings``, then close ``bar`` and finish the accounting: the
    results per group and the run's stats (requests, retries, errors by cause and kind, tokens,
    cost, latency)."""
    try:
        results, kinds, stats = await execute(
            task, groups, backend, max_concurrency=settings.max_concurrency,
            max_retries=settings.max_retries, timeout=settings.timeout, cache=settings.cache,
            retry_backoff=settings.retry_backoff, bar=bar)
    finally:
        bar.close()
    return results, stats.finish(error_causes(task, results, kinds))


async def _arun_requests(task: Any, groups: list[tuple[Any, ...]], backend: Any,
                         settings: RunSettings, bar: Any) -> RequestRun:
    results, run_stats = await execute_to_end(task, groups, backend, settings, bar)
    s = {"groups": len(groups), "members": sum(len(g) for g in groups),
         "results": sum(len(r) for r in results), **run_stats}
    return RequestRun(results, s, backend.model, task.name, str(task.version), tuple(groups))


def _prepare(task: Any, groups: Iterable[Sequence[Any]], backend: Any, settings: RunSettings,
             desc: str | None) -> tuple[list[tuple[Any, ...]], Any, Any]:
    """Check the task, its groups and the settings; the groups, the backend and the progress
    bar (made in the caller's thread: in a notebook it shows under the calling cell)."""
    groups = _check_task(task, list(groups))
    settings.check()
    resolved = resolve_backend(backend, f"task {task.name!r}")
    bar = progress_bar(sum(len(g) for g in groups), desc or f"{task.name} · {resolved.model}",
                       settings.progress, getattr(task, "unit", "item"))
    return groups, resolved, bar


async def arun_requests(task: Any, groups: Iterable[Sequence[Any]], backend: Any, *,
                        max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
                        cache: Any = None, progress: bool = True, retry_backoff: float = 0.5,
                        desc: str | None = None) -> RequestRun:
    """Async :func:`run_requests`: ``await arun_requests(task, groups, backend)`` in a running
    loop."""
    settings = RunSettings(max_concurrency, max_retries, timeout, cache, retry_backoff, progress)
    groups, resolved, bar = _prepare(task, groups, backend, settings, desc)
    return await _arun_requests(task, groups, resolved, settings, bar)


def run_requests(task: Any, groups: Iterable[Sequence[Any]], backend: Any, *,
                 max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
                 cache: Any = None, progress: bool = True, retry_backoff: float = 0.5,
                 desc: str | None = None) -> RequestRun:
    """Send one chat request per group of ``task``'s work: concurrent, retried, cached.

    The engine under :func:`run_judge` and the LLM fact proposer, for any kind of request
    described by a :class:`RequestTask`.

    Parameters
    ----------
    task : RequestTask
        Has ``name`` and ``version`` (both part of the cache key), ``build_messages(group)``,
        ``parse(text, group) -> list`` (never raises), ``error_result(member, error, cause)``
        and ``is_ok(result)``. An optional ``unit`` names a member in the progress bar.
    groups : iterable of sequences
        One request per group, each with at least one member.
    backend : str or backend object
        A litellm model string (becomes :class:`~maev_kit.backends.LiteLLMBackend`) or a backend
        object (:class:`~maev_kit.backends.OpenAIClientBackend` wraps an openai client).
    max_concurrency, max_retries, timeout, cache, progress, retry_backoff
        As in :func:`run_judge`: requests in flight; retries on 429, 5xx, timeouts, dropped
        connections and replies the parser cannot read at all (authentication failures, refused
        connections and content-filter refusals are never retried); seconds per request; the
        reply cache directory (None: ``.maev_cache/``, False: none); a progress bar; the first
        backoff in seconds.
    desc : str, optional
        The progress bar's label (default ``"<task name> · <model>"``).

    Returns
    -------
    RequestRun
        ``results[i]`` for ``groups[i]``, ``stats`` (requests, retries, cache hits, errors by
        cause, tokens, cost, latency percentiles, wall time) and ``model``. A request that still
        fails after the retries gives ``task.error_result(member, error, cause)`` for each
        member of its group; a reply the parser could not read keeps the parser's own error
        results. A group is cached when its reply gave at least one usable result, or none at
        all (the parser found nothing to report).

    Raises
    ------
    maev_kit.errors.JudgeUnavailableError
        When a request fails on authentication or finds nothing listening before any request
        of the run got a reply (within seconds, no retries).

    Notes
    -----
    Safe in a notebook: the run happens on the kit's long-lived background event loop (the same
    one :func:`run_judge` uses); use :func:`arun_requests` to ``await`` it on your own loop.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> from maev_kit.backends import ScriptedBackend
    >>> @dataclass
    ... class Word:
    ...     text: str
    ...     error: str | None = None
    ...     cause: str | None = None
    >>> class Upper:
    ...     name, version = "upper", "1"
    ...     def build_messages(self, group):
    ...         return [{"role": "user", "content": "Shout: " + " ".join(group)}]
    ...     def parse(self, text, group):
    ...         return [Word(w) for w in text.split()] if text else [Word("", "empty")]
    ...     def error_result(self, member, error, cause):
    ...         return Word(member, error, cause)
    ...     def is_ok(self, result):
    ...         return result.error is None
    >>> run = run_requests(Upper(), [["a", "b"], ["c"]], ScriptedBackend(["A B", "C"]),
    ...                    max_concurrency=1, cache=False, progress=False)
    >>> [[w.text for w in got] for got in run.results], run.stats["requests"]
    ([['A', 'B'], ['C']], 2)
    """
    settings = RunSettings(max_concurrency, max_retries, timeout, cache, retry_backoff, progress)
    groups, resolved, bar = _prepare(task, groups, backend, settings, desc)
    return run_on_background_loop(lambda: _arun_requests(task, groups, resolved, settings, bar))


# -- the background loop --------------------------------------------------------------------
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


def run_on_background_loop(make: Any) -> Any:
    """Run the coroutine ``make()`` on the background loop and wait for it (Ctrl-C cancels)."""
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
            try:  # litellm's clients and logging callbacks end on this loop, not at exit
                from maev_kit.backends.internal import release_litellm

                await release_litellm()
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
