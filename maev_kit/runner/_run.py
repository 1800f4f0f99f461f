"""Run a judge over retention items: one request per handoff, bounded concurrency, retries with
backoff, a persistent cache and accounting (on the engine of :mod:`maev_kit.runner._requests`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from maev_kit.judges import Verdict
from maev_kit.retention import LABELS, RetentionItem
from maev_kit.runner._requests import (
    RunSettings,
    Stats,
    execute_to_end,
    progress_bar,
    resolve_backend,
    run_on_background_loop,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["BaseRun", "JudgeRun", "arun_judge", "run_judge"]

_OFFLINE_BATCH = 256
#: The reply cap ``max_tokens="auto"`` asks for one handoff: a base plus a share per fact
#: (at most :data:`maev_kit.backends._local.MAX_REPLY_TOKENS`).
REPLY_BASE_TOKENS, REPLY_TOKENS_PER_FACT = 200, 150


VerdictT = TypeVar("VerdictT")
ItemT = TypeVar("ItemT")


@dataclass
class BaseRun(Generic[VerdictT, ItemT]):
    """What every run of a judge holds, over retention items (:class:`JudgeRun`) or criterion
    items (:class:`maev_kit.criteria.CriterionRun`): the verdicts in item order, the judge's
    name, version and model, the run's accounting (``stats``) and the items judged."""

    verdicts: list[VerdictT]
    judge_name: str
    judge_version: str
    model: str | None
    stats: dict[str, Any]
    items: tuple[ItemT, ...] = field(default=(), repr=False)


@dataclass
class JudgeRun(BaseRun[Verdict, RetentionItem]):
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
    ``latency_p95`` (seconds per answered request; None without requests), ``peak_in_flight``
    (the most requests in flight at once), ``window_start`` (how the number in flight opened:
    ``hosted``, ``announced N`` — the server said it works on N at once — or ``probe``; see
    :func:`~maev_kit.runner.internal.opening`) and ``wall_time``.
    """

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
def _check_args(judge: Any, items: list[Any], settings: RunSettings) -> None:
    for attr in ("name", "version", "offline"):
        if not hasattr(judge, attr):
            raise TypeError(f"`judge` must be a judge (with name, version and offline), got "
                            f"{type(judge).__name__}; try maev_kit.judges.get_judge('heuristic')")
    settings.check()
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
    return resolve_backend(backend, f"judge {judge.name!r}")


# -- the judge as a request task ------------------------------------------------------------
class _JudgeTask:
    """A retention judge seen by the request engine: a group is the facts of one handoff."""

    unit = "fact"

    def __init__(self, judge: Any) -> None:
        self.judge = judge
        self.name, self.version = judge.name, str(judge.version)

    def build_messages(self, group: Sequence[RetentionItem]) -> list[dict[str, Any]]:
        return self.judge.build_messages(list(group))

    def parse(self, text: str, group: Sequence[RetentionItem]) -> list[Verdict]:
        """The judge's verdicts for ``group``, in group order; a judge bug becomes error
        verdicts (cause ``other``), an error the judge's parser gave without a cause is
        ``unparseable``."""
        group = list(group)
        try:
            got = list(self.judge.parse(text, group))
        except Exception as exc:  # parse must never raise; if it does, lose nothing else
            return [Verdict(it.item_id, None, raw=text, cause="other",
                            error=f"judge.parse raised {type(exc).__name__}: {exc}")
                    for it in group]
        by_id = {v.item_id: v for v in got if isinstance(v, Verdict)}
        out = [by_id.get(it.item_id) or Verdict(it.item_id, None, raw=text,
                                                error="the judge returned no verdict for this item")
               for it in group]
        return [replace(v, cause="unparseable") if v.error and v.cause is None else v
                for v in out]

    def error_result(self, member: RetentionItem, error: str, cause: str) -> Verdict:
        return Verdict(member.item_id, None, error=error, cause=cause)

    def reply_tokens(self, group: Sequence[RetentionItem]) -> int:
        """The reply this handoff needs at most, in tokens: a base plus a share per fact."""
        return REPLY_BASE_TOKENS + REPLY_TOKENS_PER_FACT * len(group)

    def reply_schema(self, group: Sequence[RetentionItem]) -> dict[str, Any] | None:
        """The JSON schema of this handoff's reply, for servers that hold replies to one
        (``response_format``): the judge's own ``reply_schema(items)`` when it has one, else,
        for a judge with a prompt template (RetentionJudge), one status object per fact id
        (``F1``, ``F2``, ...), its status one of the labels and a short reason first; the
        evidence where the template's view asks for it. None: no schema."""
        own = getattr(self.judge, "reply_schema", None)
        if callable(own):
            return cast("dict[str, Any] | None", own(list(group)))
        view = getattr(getattr(self.judge, "template", None), "view", None)
        if view is None:
            return None
        return retention_schema(len(group), evidence=view == "conversation")

    def is_ok(self, result: Verdict) -> bool:
        return result.error is None


def retention_schema(n_facts: int, evidence: bool = False) -> dict[str, Any]:
    """The JSON schema of a retention judge's reply for ``n_facts`` facts.

    >>> s = retention_schema(2)
    >>> s["required"], s["properties"]["F1"]["properties"]["status"]["enum"]
    (['F1', 'F2'], ['retained', 'lost', 'contradicted'])
    """
    fact: dict[str, Any] = {
        "type": "object",
        "properties": {"status": {"type": "string", "enum": list(LABELS)},
                       "reason": {"type": "string", "maxLength": 200}},
        "required": ["status", "reason"], "additionalProperties": False}
    if evidence:
        fact["properties"]["evidence"] = {
            "type": "object", "properties": {"n": {"type": "integer"},
                                             "quote": {"type": "string", "maxLength": 120}},
            "required": ["n", "quote"], "additionalProperties": False}
    keys = [f"F{k + 1}" for k in range(n_facts)]
    return {"type": "object", "properties": {k: fact for k in keys}, "required": keys,
            "additionalProperties": False}


def _group(items: Sequence[RetentionItem]) -> list[list[RetentionItem]]:
    groups: dict[tuple[str, int], list[RetentionItem]] = {}
    for it in items:
        groups.setdefault((it.conversation_id, it.handoff_index), []).append(it)
    return list(groups.values())


def _judge_stats(n_items: int, n_groups: int, run_stats: dict[str, Any],
                 backend: Any = None) -> dict[str, Any]:
    out = {"items": n_items, "handoffs": n_groups, **run_stats}
    if backend is not None:
        out.update(backend_facts(backend))
    return out


def backend_facts(backend: Any) -> dict[str, Any]:
    """Where a backend sends requests (``endpoint``, a URL without password, for a server of
    one's own) and the generation parameters it sends (``generation``: temperature,
    max_tokens, ...), for run stats, reports and messages."""
    from maev_kit.backends.internal import endpoint_of

    where, is_url = endpoint_of(backend)
    try:
        params = dict(backend.cache_identity().get("params") or {})
    except Exception:
        params = {}
    gen = {k: params[k] for k in ("temperature", "max_tokens", "top_p", "seed",
                                  "response_format", "fold_system") if k in params}
    settled = getattr(backend, "settled", None)
    if callable(settled):  # what "auto" settled on for this server
        gen.update({k: v for k, v in settled().items() if k in gen})
    return {"endpoint": where if is_url else None, "generation": gen}


# -- the run --------------------------------------------------------------------------------
async def arun_judge(judge: Any, items: Iterable[RetentionItem], backend: Any = None, *,
                     max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
                     cache: Any = None, progress: bool = True,
                     retry_backoff: float = 0.5) -> JudgeRun:
    """Async :func:`run_judge`: ``await arun_judge(judge, items, backend)`` in a running loop."""
    items = list(items)
    settings = RunSettings(max_concurrency, max_retries, timeout, cache, retry_backoff, progress)
    _check_args(judge, items, settings)
    backend = _resolve_backend(judge, backend)
    if backend is None:
        return _run_offline(judge, items, progress)
    bar = progress_bar(len(items), f"{judge.name} · {backend.model}", progress, "fact")
    return await _arun(judge, items, backend, settings, bar)


async def _arun(judge: Any, items: list[RetentionItem], backend: Any, settings: RunSettings,
                bar: Any) -> JudgeRun:
    task = _JudgeTask(judge)
    groups = [tuple(g) for g in _group(items)]
    results, run_stats = await execute_to_end(task, groups, backend, settings, bar)
    verdicts = [v for got in results for v in got]
    order = {it.item_id: k for k, it in enumerate(items)}
    verdicts.sort(key=lambda v: order[v.item_id])
    return JudgeRun(verdicts, judge.name, str(judge.version), backend.model,
                    _judge_stats(len(items), len(groups), run_stats, backend), tuple(items))


def _run_offline(judge: Any, items: list[RetentionItem], progress: bool) -> JudgeRun:
    stats = Stats()
    verdicts: list[Verdict] = []
    bar = progress_bar(len(items), judge.name, progress, "fact")
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
    errors = [(v.cause or "other", "parse") for v in verdicts if v.error]
    return JudgeRun(verdicts, judge.name, str(judge.version), None,
                    _judge_stats(len(items), len(_group(items)), stats.finish(errors)),
                    tuple(items))


def run_judge(judge: Any, items: Iterable[RetentionItem], backend: Any = None, *,
              max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
              cache: Any = None, progress: bool = True, retry_backoff: float = 0.5,
              mode: str = "sync", poll_interval: float = 30.0,
              batch_timeout: float | None = None) -> JudgeRun:
    """Judge every item: one request per handoff, concurrent, retried, cached.

    Safe in a notebook: runs on one long-lived event loop in a worker thread, the same every call
    (an ``AsyncOpenAI`` client is reusable); Ctrl-C cancels it. To ``await`` it: :func:`arun_judge`.

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
    mode : {"sync", "batch"}
        ``"batch"`` sends the requests not already cached through the provider's batch API
        (litellm backends; about half price, answers within the provider's 24 h window), into
        the same cache, then reads every verdict from it: see :mod:`maev_kit.runner._batch`.
        ``stats`` then has ``mode``, ``batches``, ``batch_ids`` and the cost at batch prices.
    poll_interval, batch_timeout : float
        Batch mode: the longest wait between status checks, and how long to wait for the
        batches (None: until they end) before raising :class:`BatchPendingError`; a rerun
        picks the same batches up.

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
        unknown host) before any reply: the run is cancelled at once (within seconds, no retries);
        the message names the cause, endpoint, model and fix. After a reply: error verdicts.

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
    settings = RunSettings(max_concurrency, max_retries, timeout, cache, retry_backoff, progress)
    return _run_judge(judge, list(items), backend, settings, mode, poll_interval, batch_timeout)


def _run_judge(judge: Any, items: list[RetentionItem], backend: Any, settings: RunSettings,
               mode: str, poll_interval: float, batch_timeout: float | None) -> JudgeRun:
    """:func:`run_judge` on its gathered arguments: check them, then judge offline, or on the
    background loop in ``mode`` (``"batch"`` fills the cache through the batch API first)."""
    _check_args(judge, items, settings)
    if mode not in ("sync", "batch"):
        raise ValueError(f"`mode` must be 'sync' or 'batch', got {mode!r}")
    resolved = _resolve_backend(judge, backend)
    if resolved is None:
        return _run_offline(judge, items, settings.progress)
    # The bar is made here, in the caller's thread: in a notebook it then shows under the cell
    # that ran this (the run itself happens on the background loop's thread).
    bar = progress_bar(len(items), f"{judge.name} · {resolved.model}", settings.progress, "fact")
    if mode == "batch":  # fills the cache through the batch API; the same path then reads it
        from maev_kit.runner._batch import arun_batch

        no_retries = replace(settings, max_retries=0)  # the ordinary run only reads the cache
        return run_on_background_loop(lambda: arun_batch(
            judge, items, resolved, ordinary=lambda b: _arun(judge, items, b, no_retries, bar),
            cache=settings.cache, timeout=settings.timeout, max_retries=settings.max_retries,
            poll_interval=poll_interval, batch_timeout=batch_timeout, bar=bar))
    return run_on_background_loop(lambda: _arun(judge, items, resolved, settings, bar))
