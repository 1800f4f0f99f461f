"""Judge at provider-batch prices: send the requests a run still needs through the provider's
batch API (litellm's ``acreate_file`` / ``acreate_batch`` / ``aretrieve_batch`` /
``afile_content``) and put the answers in the ordinary reply cache.

The batch path only fills the cache, under the same keys the synchronous path uses; then the
ordinary run reads every answer from the cache, so parsing, verdicts and accounting stay one
code path and nothing is paid twice. Each submitted batch is recorded (batch id and the
``custom_id`` → cache key of each line) in ``judge_batches.sqlite3`` beside the cache, the
moment the provider accepts it, so a process that stops while a batch runs picks the same batch
up when started again instead of submitting (and paying for) it again. Lines that failed, that
an expired, cancelled or failed batch left unanswered, or whose reply the judge could not read
are sent again, only those, in a new batch, up to :data:`MAX_ROUNDS` batches per request; what
still fails becomes error verdicts with their cause.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maev_kit.backends import BackendError, Completion, classify_error
from maev_kit.backends.internal import kind_for_status, unavailable_error
from maev_kit.errors import MaevError
from maev_kit.runner._cache import (
    DEFAULT_CACHE_DIR,
    JudgeCache,
    _request,
    cache_key,
    connect_wal,
)

__all__ = ["MAX_ROUNDS", "BatchPendingError", "arun_batch"]

#: Batches sent per request at most: the first, then resends of what is still missing.
MAX_ROUNDS = 3
_MAX_LINES = 50_000  # the providers' limit of requests per batch
_TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})
_FILENAME = "judge_batches.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    key_set TEXT NOT NULL,
    lines TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
# Backend parameters that say where and how to connect, not what to answer.
_CONNECTION = frozenset({"api_base", "base_url", "api_key", "api_version", "organization",
                         "extra_headers", "headers"})
_NOT_SENT = frozenset({"metadata", "logger_fn", "drop_params", "custom_llm_provider",
                       "fold_system"})


class BatchPendingError(MaevError):
    """The batches of a run did not finish within ``batch_timeout``. They are recorded next to
    the cache: run the same command again later and it picks them up (nothing is sent twice).
    ``batch_ids`` lists them."""

    def __init__(self, message: str, batch_ids: Sequence[str]) -> None:
        super().__init__(message)
        self.batch_ids = list(batch_ids)


@dataclass
class _Tally:
    """What the batches of one run cost and did."""

    batch_ids: list[str] = field(default_factory=list)
    lines_sent: int = 0
    lines_resent: int = 0
    answered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    failed_lines: dict[str, int] = field(default_factory=dict)

    def add(self, completion: Completion) -> None:
        self.answered += 1
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens
        if self.cost is not None:
            self.cost = None if completion.cost is None else self.cost + completion.cost

    def fail(self, kind: str) -> None:
        self.failed_lines[kind] = self.failed_lines.get(kind, 0) + 1


# -- the record of submitted batches ----------------------------------------------------------
class _BatchLog:
    """Submitted batches (id, custom_id → cache key) in a small SQLite file beside the cache."""

    def __init__(self, directory: Path) -> None:
        self._db = connect_wal(directory / _FILENAME)
        self._db.execute(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def add(self, batch_id: str, lines: Mapping[str, str], model: str) -> None:
        key_set = hashlib.sha256("\n".join(sorted(lines.values())).encode()).hexdigest()
        self._db.execute("INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?,?)",
                         (batch_id, key_set, json.dumps(dict(lines)), model, "open", time.time()))

    def close_batch(self, batch_id: str, status: str) -> None:
        self._db.execute("UPDATE batches SET status = ? WHERE batch_id = ?", (status, batch_id))

    def open_for(self, keys: set[str]) -> list[tuple[str, dict[str, str]]]:
        """Open batches (submitted, not yet collected) holding any of ``keys``, oldest first."""
        out = []
        for batch_id, lines in self._db.execute(
                "SELECT batch_id, lines FROM batches WHERE status = 'open' ORDER BY created_at"):
            mapping = json.loads(lines)
            if keys.intersection(mapping.values()):
                out.append((batch_id, mapping))
        return out


# -- talking to the provider ------------------------------------------------------------------
@dataclass
class _Provider:
    """litellm's batch calls for one backend: provider, endpoint, key and batch prices."""

    litellm: Any
    backend: Any
    body_model: str
    connection: dict[str, Any]
    body_params: dict[str, Any]
    prices: tuple[float, float] | None
    timeout: float
    max_retries: int

    @classmethod
    def of(cls, backend: Any, timeout: float, max_retries: int) -> _Provider:
        if getattr(backend, "kind", None) != "litellm":
            raise ValueError("batch mode sends requests through litellm's batch API: pass a "
                             "litellm model string or a LiteLLMBackend as `backend` (got "
                             f"{type(backend).__name__}), or use mode='sync'")
        from maev_kit.backends.internal import import_litellm

        litellm = import_litellm()
        params = dict(backend.params)
        try:
            name, provider, _, _ = litellm.get_llm_provider(
                model=backend.model, custom_llm_provider=params.get("custom_llm_provider"))
        except Exception as exc:
            raise ValueError(f"batch mode: litellm does not know the provider of model "
                             f"{backend.model!r} ({exc})") from exc
        connection = {"custom_llm_provider": provider}
        for k in ("api_base", "base_url", "api_key", "api_version", "organization",
                  "extra_headers"):
            if params.get(k) is not None:
                connection["api_base" if k == "base_url" else k] = params[k]
        from maev_kit.backends.internal import request_params

        body = request_params({k: v for k, v in params.items()
                               if k not in _CONNECTION | _NOT_SENT})
        return cls(litellm, backend, name, connection, body, batch_prices(litellm, backend.model),
                   timeout, max_retries)

    async def call(self, what: str, fn: str, **kwargs: Any) -> Any:
        """One batch-API call, retried like a chat request; a key refused or nothing listening
        stops the run at once (JudgeUnavailableError)."""
        last: BackendError | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(min(30.0, 0.5 * 2 ** (attempt - 1)))
            try:
                return await asyncio.wait_for(
                    getattr(self.litellm, fn)(**kwargs, **self.connection, timeout=self.timeout),
                    self.timeout)
            except asyncio.TimeoutError:
                last = BackendError("timeout", f"{what}: no reply within timeout={self.timeout} s")
            except Exception as exc:
                last = classify_error(exc)
            if last.cause in ("auth", "unreachable"):
                raise unavailable_error(self.backend, last) from last
            if not last.retryable:
                break
        assert last is not None
        raise last

    def line(self, custom_id: str, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        body = {"model": self.body_model, "messages": [dict(m) for m in messages],
                **self.body_params}
        return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
                "body": body}

    async def submit(self, lines: list[dict[str, Any]]) -> str:
        data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode("utf-8")
        upload = await self.call("uploading the batch file", "acreate_file",
                                 file=("maev_batch.jsonl", data), purpose="batch")
        batch = await self.call("creating the batch", "acreate_batch", completion_window="24h",
                                endpoint="/v1/chat/completions", input_file_id=upload.id,
                                metadata={"created_by": "maev-kit"})
        return str(batch.id)

    async def content(self, file_id: str) -> str:
        got = await self.call("downloading batch results", "afile_content", file_id=file_id)
        raw = getattr(got, "content", got)
        if isinstance(raw, bytes):
            return raw.decode("utf-8")
        return str(getattr(got, "text", raw))

    def completion(self, body: Mapping[str, Any]) -> Completion:
        """A reply body (an OpenAI chat.completion) as a Completion priced at batch rates."""
        try:
            choice = body["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError("bad_response", "the batch line has no choices[0].message "
                               f"({type(exc).__name__})") from exc
        if choice.get("finish_reason") == "content_filter":
            raise BackendError("content_filter", "the provider withheld the reply "
                               "(finish_reason 'content_filter')")
        if not isinstance(text, str):
            raise BackendError("bad_response", f"message content is {type(text).__name__}")
        usage = body.get("usage") or {}
        pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        cost = None if self.prices is None else pt * self.prices[0] + ct * self.prices[1]
        return Completion(text, pt, ct, cost, 0.0, body.get("model"))


def batch_prices(litellm: Any, model: str) -> tuple[float, float] | None:
    """USD per (prompt, completion) token in batch mode: litellm's batch prices for ``model``
    when it has them, else half its synchronous prices; None when the model is unpriced."""
    try:
        info = litellm.get_model_info(model=model)
    except Exception:
        return None
    out = []
    for side in ("input", "output"):
        price = info.get(f"{side}_cost_per_token_batches")
        if price is None:
            sync = info.get(f"{side}_cost_per_token")
            if sync is None:
                return None
            price = 0.5 * sync
        out.append(float(price))
    return out[0], out[1]


# -- reading results --------------------------------------------------------------------------
def _line_error(line: Mapping[str, Any]) -> BackendError:
    """The failure one error-file (or non-200 output) line reports."""
    response = line.get("response") or {}
    status = response.get("status_code") if isinstance(response, dict) else None
    error = line.get("error") or {}
    if not error and isinstance(response, dict):
        error = (response.get("body") or {}).get("error") or {}
    code = str(error.get("code") or error.get("type") or "")
    message = str(error.get("message") or code or f"status {status}")
    if code == "batch_expired":
        return BackendError("timeout", f"the batch expired before this request ran ({message})")
    if isinstance(status, int) and status >= 400:
        kind = kind_for_status(status)
    elif "rate_limit" in code:
        kind = "rate_limit"
    elif "server" in code or "internal" in code:
        kind = "server"
    elif "content" in code and "filter" in code:
        kind = "content_filter"
    else:
        kind = "other"
    if kind in ("auth", "unreachable"):
        kind = "other"  # a line refused inside an accepted batch: the key itself works
    return BackendError(kind, f"batch line failed: {message}", status=status)


def _jsonl(text: str) -> list[dict[str, Any]]:
    out = []
    for raw in text.splitlines():
        if raw.strip():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # an unreadable line counts as missing: it is sent again
            if isinstance(obj, dict) and isinstance(obj.get("custom_id"), str):
                out.append(obj)
    return out


# -- the run ----------------------------------------------------------------------------------
def _groups(items: Sequence[Any]) -> list[list[Any]]:
    """Items grouped per handoff, in first-seen order: the ordinary path's request groups."""
    groups: dict[tuple[str, int], list[Any]] = {}
    for it in items:
        groups.setdefault((it.conversation_id, it.handoff_index), []).append(it)
    return list(groups.values())


class _Replay:
    """The backend the ordinary path runs on after the batches: it never sends anything. A
    request the batches answered is found in the cache before this is asked; for the rest it
    returns the unreadable reply the batch gave (so the judge reports its own parse errors) or
    raises the line's last failure."""

    kind = "batch"

    def __init__(self, backend: Any, failures: dict[str, BackendError],
                 unusable: dict[str, Completion], key_of: Callable[[Any], str]) -> None:
        self.model = backend.model
        self._identity = backend.cache_identity()
        self._failures, self._unusable, self._key_of = failures, unusable, key_of

    def cache_identity(self) -> dict[str, Any]:
        return self._identity

    async def complete(self, messages: Sequence[Mapping[str, Any]], *,
                       timeout: float = 60.0) -> Completion:
        key = self._key_of(messages)
        if key in self._unusable:
            return self._unusable[key]
        raise self._failures.get(key) or BackendError(
            "other", "the batches gave no result for this request")


async def arun_batch(judge: Any, items: Sequence[Any], backend: Any, *,
                     ordinary: Callable[[Any], Awaitable[Any]], cache: Any, timeout: float,
                     max_retries: int, poll_interval: float = 30.0,
                     batch_timeout: float | None = None, bar: Any = None) -> Any:
    """Fill the cache through the batch API, then run ``ordinary(replay_backend)`` — the
    ordinary judge run (with no retries) — and return its JudgeRun with batch accounting.

    ``poll_interval`` is the longest wait between status checks (the first come sooner); ``batch_timeout`` the longest wait
    (seconds) for the batches of this call (None: until they end), after which
    :class:`BatchPendingError` is raised and a later run resumes them.
    """
    try:
        return await _arun_batch(judge, items, backend, ordinary, cache, timeout, max_retries,
                                 poll_interval, batch_timeout, bar)
    except BaseException:
        if bar is not None:  # the ordinary run closes it when it gets that far
            bar.close()
        raise


async def _arun_batch(judge: Any, items: Sequence[Any], backend: Any,
                      ordinary: Callable[[Any], Awaitable[Any]], cache: Any, timeout: float,
                      max_retries: int, poll_interval: float, batch_timeout: float | None,
                      bar: Any) -> Any:
    if cache is False:
        raise ValueError("batch mode keeps its answers and batch ids in the reply cache: pass "
                         "a cache directory (or None for the default), not cache=False")
    if not (isinstance(poll_interval, (int, float)) and poll_interval > 0):
        raise ValueError(f"`poll_interval` must be a positive number of seconds, "
                         f"got {poll_interval!r}")
    if batch_timeout is not None and not (isinstance(batch_timeout, (int, float))
                                          and batch_timeout > 0):
        raise ValueError(f"`batch_timeout` must be a positive number of seconds or None, "
                         f"got {batch_timeout!r}")
    start = time.perf_counter()
    directory = Path(DEFAULT_CACHE_DIR if cache is None or cache is True
                     else getattr(cache, "directory", cache))
    identity = backend.cache_identity()
    name, version = judge.name, str(judge.version)

    def key_of(messages: Sequence[Mapping[str, Any]]) -> str:
        return cache_key(identity, name, version, messages)

    groups = _groups(items)
    requests: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {}
    for g in groups:
        messages = judge.build_messages(g)
        requests.setdefault(key_of(messages), (g, messages))
    tally = _Tally()
    failures: dict[str, BackendError] = {}
    unusable: dict[str, Completion] = {}
    store = JudgeCache(directory)
    log = _BatchLog(directory)
    try:
        cached_before = set(store.get_many(requests))
        if len(cached_before) < len(requests):
            provider = _Provider.of(backend, timeout, max_retries)
            await _rounds(provider, store, log, judge, requests, cached_before, tally, failures,
                          unusable, poll_interval,
                          None if batch_timeout is None else start + batch_timeout, bar)
    finally:
        store.close()
        log.close()

    run = await ordinary(_Replay(backend, failures, unusable, key_of))
    hits_before = sum(1 for g in groups if key_of(judge.build_messages(g)) in cached_before)
    failed_attempts = dict(tally.failed_lines)
    run.stats.update({
        "mode": "batch", "batches": len(tally.batch_ids), "batch_ids": list(tally.batch_ids),
        "requests": tally.lines_sent, "retries": tally.lines_resent, "cache_hits": hits_before,
        "failed_attempts": failed_attempts, "prompt_tokens": tally.prompt_tokens,
        "completion_tokens": tally.completion_tokens,
        "tokens": tally.prompt_tokens + tally.completion_tokens,
        "cost": tally.cost if tally.answered else 0.0,
        "latency_p50": None, "latency_p95": None,
        "wall_time": time.perf_counter() - start})
    return run


class _Answers:
    """Where the batch lines' answers go. A reply the judge can read is stored in the cache and
    its request is done; an unreadable reply or a failure is kept for the replay (until a later
    round answers it) and counted in the tally."""

    def __init__(self, store: JudgeCache, judge: Any,
                 requests: dict[str, tuple[list[Any], list[dict[str, Any]]]], done: set[str],
                 tally: _Tally, failures: dict[str, BackendError],
                 unusable: dict[str, Completion], identity: dict[str, Any]) -> None:
        self.tag = f"{judge.name}@{judge.version}"
        self.store, self.judge, self.requests, self.done = store, judge, requests, done
        self.tally, self.failures, self.unusable = tally, failures, unusable
        self.identity = identity

    def accept(self, key: str, completion: Completion) -> None:
        """The reply of the line for ``key``."""
        self.tally.add(completion)
        entry = self.requests.get(key)
        if entry is None:  # a line of a resumed batch this run does not need: keep it anyway
            self.store.put(key, completion, judge=self.tag, request={"from_batch": True})
            return
        group, messages = entry
        try:
            usable = any(getattr(v, "error", None) is None
                         for v in self.judge.parse(completion.text, group))
        except Exception:
            usable = False
        if usable:
            self.store.put(key, completion, judge=self.tag,
                           request=_request(self.identity, self.judge.name,
                                            str(self.judge.version), messages))
            self.done.add(key)
            self.failures.pop(key, None)
            self.unusable.pop(key, None)
        else:
            self.unusable[key] = completion
            self.tally.fail("unparseable")

    def fail(self, key: str, err: BackendError) -> None:
        """The failure of the line for ``key`` (ignored for a request already done)."""
        if key in self.requests and key not in self.done:
            self.failures[key] = err
            self.unusable.pop(key, None)
            self.tally.fail(err.kind)


async def _rounds(provider: _Provider, store: JudgeCache, log: _BatchLog, judge: Any,
                  requests: dict[str, tuple[list[Any], list[dict[str, Any]]]],
                  cached: set[str], tally: _Tally, failures: dict[str, BackendError],
                  unusable: dict[str, Completion], poll_interval: float,
                  deadline: float | None, bar: Any) -> None:
    """Send, in rounds of batches, the requests not yet answered (not ``cached``), each at most
    :data:`MAX_ROUNDS` times: a round first picks up the open batches that hold any of them,
    submits the rest, then collects every batch of the round."""
    answers = _Answers(store, judge, requests, set(cached), tally, failures, unusable,
                       provider.backend.cache_identity())
    sent: dict[str, int] = {}  # key -> batches it went out in (this run or a resumed one)
    while True:
        missing = [k for k in requests if k not in answers.done and sent.get(k, 0) < MAX_ROUNDS]
        if not missing:
            return
        resumed = log.open_for(set(missing))
        covered = {k for _, mapping in resumed for k in mapping.values()}
        todo = [k for k in missing if k not in covered]
        batches = [*resumed, *await _submit(provider, log, requests, todo, sent, answers)]
        _count_sent(batches, requests, sent, tally)
        if not batches:
            continue
        results = await asyncio.gather(*(
            _collect(provider, log, b, m, answers.accept, answers.fail, poll_interval, deadline,
                     bar)
            for b, m in batches), return_exceptions=True)
        _raise_unfinished(batches, results, deadline, store)


async def _submit(provider: _Provider, log: _BatchLog,
                  requests: Mapping[str, tuple[list[Any], list[dict[str, Any]]]],
                  todo: list[str], sent: dict[str, int],
                  answers: _Answers) -> list[tuple[str, dict[str, str]]]:
    """Submit the requests ``todo`` in batches of at most ``_MAX_LINES`` lines, each recorded in
    the log the moment the provider accepts it; a batch the provider refuses counts as sent
    and fails its lines. The accepted batches: id and custom_id → cache key."""
    batches: list[tuple[str, dict[str, str]]] = []
    for chunk_start in range(0, len(todo), _MAX_LINES):
        chunk = todo[chunk_start:chunk_start + _MAX_LINES]
        mapping = _custom_ids(chunk, requests)
        lines = [provider.line(cid, requests[k][1]) for cid, k in mapping.items()]
        try:
            batch_id = await provider.submit(lines)
        except BackendError as err:
            for k in chunk:
                sent[k] = sent.get(k, 0) + 1
                answers.fail(k, err)
            continue
        log.add(batch_id, mapping, provider.backend.model)  # before anything can stop us
        batches.append((batch_id, mapping))
    return batches


def _count_sent(batches: Sequence[tuple[str, dict[str, str]]], requests: Mapping[str, Any],
                sent: dict[str, int], tally: _Tally) -> None:
    """Count the round's batches and the lines this run needs (resent ones apart) in the tally,
    and each of those lines as sent once more."""
    for batch_id, mapping in batches:
        tally.batch_ids.append(batch_id)
        for k in mapping.values():
            if k in requests:
                tally.lines_sent += 1
                tally.lines_resent += 1 if sent.get(k, 0) else 0
                sent[k] = sent.get(k, 0) + 1


def _raise_unfinished(batches: Sequence[tuple[str, dict[str, str]]],
                      results: Sequence[BaseException | None], deadline: float | None,
                      store: JudgeCache) -> None:
    """After collecting a round: raise BatchPendingError naming every batch that did not finish
    in time, else the first other error a batch's collection raised."""
    pending = [b for (b, _), r in zip(batches, results) if isinstance(r, BatchPendingError)]
    if pending:
        waited = "" if deadline is None else " within batch_timeout"
        raise BatchPendingError(
            f"batch {', '.join(pending)} did not finish{waited}; run again later to pick "
            f"{'it' if len(pending) == 1 else 'them'} up (recorded in "
            f"{store.directory / _FILENAME}; nothing is sent twice)", pending)
    for r in results:
        if isinstance(r, BaseException):
            raise r


def _custom_ids(keys: list[str], requests: Mapping[str, tuple[list[Any], Any]]
                ) -> dict[str, str]:
    """Readable, unique custom ids (``conversation#handoff``) for the lines of one batch."""
    out: dict[str, str] = {}
    for k in keys:
        first = requests[k][0][0]
        cid = f"{first.conversation_id}#{first.handoff_index}"
        if cid in out or len(cid) > 64:
            cid = k[:32]
        out[cid] = k
    return out


async def _collect(provider: _Provider, log: _BatchLog, batch_id: str, mapping: dict[str, str],
                   accept: Callable[[str, Completion], None],
                   fail: Callable[[str, BackendError], None], poll_interval: float,
                   deadline: float | None, bar: Any) -> None:
    """Poll one batch to its end, then read its output and error files."""
    polls = 0
    status = "submitted"
    while True:
        try:
            batch = await provider.call("checking the batch", "aretrieve_batch",
                                        batch_id=batch_id)
        except BackendError as err:  # already retried
            if not err.retryable:  # the provider does not know it (any more): send again
                log.close_batch(batch_id, "lost")
            for k in mapping.values():  # else it stays recorded: a later run asks again
                fail(k, err)
            return
        else:
            status = str(batch.status)
            if bar is not None:
                bar.set_postfix_str(f"batch {batch.status}", refresh=True)
            if batch.status in _TERMINAL:
                break
        # Soon at first (a small batch may be done in seconds), then every poll_interval.
        wait = min(poll_interval, 0.5 * 1.5 ** polls)
        polls += 1
        if deadline is not None and time.perf_counter() + wait > deadline:
            raise BatchPendingError(f"batch {batch_id} is {status}", [batch_id])
        await asyncio.sleep(wait)

    seen: set[str] = set()
    for file_id in (batch.output_file_id, batch.error_file_id):
        if not file_id:
            continue
        for line in _jsonl(await provider.content(file_id)):
            key = mapping.get(line["custom_id"])
            if key is None or line["custom_id"] in seen:
                continue
            seen.add(line["custom_id"])
            response = line.get("response") or {}
            if not line.get("error") and isinstance(response, dict) \
                    and response.get("status_code") == 200:
                try:
                    accept(key, provider.completion(response.get("body") or {}))
                except BackendError as err:
                    fail(key, err)
            else:
                fail(key, _line_error(line))
    why = {"expired": ("timeout", "the batch expired before this request ran"),
           "failed": ("other", "the provider failed the batch: " + _batch_errors(batch)),
           "cancelled": ("other", "the batch was cancelled before this request ran")}.get(
        batch.status, ("other", "the batch returned no result for this request"))
    for cid, key in mapping.items():
        if cid not in seen:
            fail(key, BackendError(why[0], f"{why[1]} (batch {batch_id})"))
    log.close_batch(batch_id, batch.status)


def _batch_errors(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = errors.get("data") if isinstance(errors, dict) else getattr(errors, "data", None)
    messages = [str(e.get("message") if isinstance(e, dict) else getattr(e, "message", e))
                for e in data or []]
    return "; ".join(messages) or "no reason given"
