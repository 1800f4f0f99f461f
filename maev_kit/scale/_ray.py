"""``evaluate_dataset``: the per-conversation stage of ``evaluate`` mapped over Ray Data blocks.

Layout of ``output_dir``::

    run.json                         what was run (checked on resume)
    conversations/part-<block>.parquet   one row per conversation: the per-conversation columns
                                     of EvaluationResult, ``_order``, ``_block`` and ``_extra``
                                     (what the aggregate stage needs beyond the columns)
    ledger/part-<block>.parquet      the retention ledger rows of the same conversations

A block's ledger part is written before its conversations part, each to a temporary name then
renamed, so a conversation is finished exactly when it is in a conversations part; a ledger part
without its conversations part (a crash between the two) is ignored.
"""

from __future__ import annotations

import glob as _glob
import json
import logging
import os
import pickle
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, MaevError

if TYPE_CHECKING:
    import pyarrow as pa

    from maev_kit.evaluation import EvaluationResult

__all__ = ["ShardFailure", "evaluate_dataset"]

_SCORE_KWARGS = ("triage_agent", "max_handoffs", "weights", "not_applicable")
_OTHER_KWARGS = ("n_resamples", "confidence", "seed", "backend", "prompt", "cache",
                 "max_concurrency", "timeout", "split", "progress")
_SHARD_SUFFIXES = (".jsonl", ".parquet")
_ORDER_SHIFT = 32  # _order = shard index << 32 | row: rows of one shard stay together, in order


@dataclass(frozen=True)
class ShardFailure:
    """A shard (or a block of a Dataset) that could not be read: left out, the run goes on."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass
class _Job:
    """Everything a block needs, shipped to the workers once."""

    out: str
    judge: Any
    backend: Any
    expectations: Any  # dict, or an ObjectRef to it
    contracts: Any
    splits: dict[str, str | None]
    done: Any  # finished conversation ids (a pyarrow array, its ObjectRef, or None)
    retention: bool
    run_kwargs: dict[str, Any] = field(default_factory=dict)
    score_kwargs: dict[str, Any] = field(default_factory=dict)


def evaluate_dataset(
    source: Any,
    *,
    judge: Any = "heuristic",
    facts: Any = None,
    expectations: Any = None,
    contracts: Any = None,
    output_dir: str | os.PathLike[str] | None = None,
    resume: bool = True,
    num_cpus: int | None = None,
    address: str | None = None,
    batch_size: int = 2000,
    **evaluate_kwargs: Any,
) -> EvaluationResult:
    """:func:`~maev_kit.evaluation.evaluate` on Ray Data: same stages, same numbers.

    Parameters
    ----------
    source : ray.data.Dataset, path, glob, labeled set or list of traces
        A Dataset with the trace Parquet columns (``docs/formats.md``; results are then
        ordered by ``conversation_id``); a trace file (``.jsonl`` / ``.parquet``), a folder of
        them or a glob (``"traces/*.parquet"``), each file a shard; a labeled-set folder, a
        bundled set's name or a ``LabeledSet``; or a list of traces.
    judge : as in ``evaluate``; None scores the deterministic metrics only.
    facts : facts file or list of ``ProposedFact`` (:mod:`maev_kit.facts`), optional
        Key facts to judge; they replace the key facts of ``expectations``.
    expectations, contracts : as in ``evaluate`` (a labeled set brings its own).
    output_dir : folder for the Parquet results (a temporary one when None: no resume).
    resume : skip conversations already in ``output_dir`` (after a crash or a preemption);
        False starts over.
    num_cpus : CPUs of the local Ray started when none is running (default: all).
    address : a Ray cluster to connect to (``"ray://host:10001"``, ``"auto"``).
    batch_size : conversations per block: the unit of work, of judging and of resume.
    **evaluate_kwargs : ``split``, ``triage_agent``, ``max_handoffs``, ``weights``,
        ``not_applicable``, ``n_resamples``, ``confidence``, ``seed``, ``backend``,
        ``prompt``, ``cache``, ``max_concurrency`` (per block), ``timeout``, ``progress``.

    Returns
    -------
    EvaluationResult
        As ``evaluate`` returns, with ``traces`` empty (they stay in the shards),
        ``provenance["output_dir"]`` and ``provenance["failed_shards"]`` (list of
        :class:`ShardFailure`).

    Examples
    --------
    >>> from maev_kit.scale import evaluate_dataset
    >>> result = evaluate_dataset("traces/*.parquet", judge=None,
    ...                           expectations="expectations.jsonl")  # doctest: +SKIP
    """
    unknown = set(evaluate_kwargs) - set(_SCORE_KWARGS) - set(_OTHER_KWARGS)
    if unknown:
        raise TypeError(f"evaluate_dataset() got unexpected keyword argument(s) "
                        f"{', '.join(sorted(unknown))}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"`batch_size` must be a positive integer, got {batch_size!r}")
    kw = dict(evaluate_kwargs)
    not_applicable = kw.get("not_applicable", "na")
    if not_applicable not in ("na", "article"):
        raise InputError(f"`not_applicable` must be 'na' or 'article', got {not_applicable!r}")
    if judge is None and not_applicable == "article":
        raise InputError("judge=None scores no retention, which the article's composite needs: "
                         "pass not_applicable='na' or name a judge")
    ray = _start_ray(num_cpus=num_cpus, address=address, progress=kw.get("progress", False))

    plan = _plan(source, expectations=expectations, facts=facts, contracts=contracts,
                 split=kw.get("split"), batch_size=batch_size, ray=ray)
    judge_obj, backend = _judge_for(judge, plan, kw)
    out = Path(output_dir) if output_dir is not None else Path(tempfile.mkdtemp(prefix="maev-"))
    fingerprint = _fingerprint(judge, judge_obj, kw, plan)
    done = _prepare_output(out, fingerprint, resume=resume)

    cache = kw.get("cache")
    if cache is None:
        cache = os.path.abspath(".maev_cache")  # the driver's, not each worker's directory
    job = _Job(out=str(out.resolve()), judge=judge_obj, backend=backend,
               expectations=ray.put(plan.expectations), contracts=plan.contracts,
               splits=plan.splits, retention=judge is not None,
               done=ray.put(frozenset(done)) if done else None,
               run_kwargs={"cache": cache, "max_concurrency": kw.get("max_concurrency", 16),
                           "timeout": kw.get("timeout", 60.0)},
               score_kwargs={k: kw[k] for k in _SCORE_KWARGS if k in kw})
    if plan.pieces:  # each task reads its piece and scores the traces it built
        summaries = plan.dataset.map_batches(_ScorePieces(job, batch_size), batch_size=1,
                                             batch_format="pyarrow")
    else:
        summaries = plan.dataset.map_batches(_ScoreBlock(job), batch_size=batch_size,
                                             batch_format="pyarrow", zero_copy_batch=True)
    failures: list[ShardFailure] = list(plan.failures)
    stats: dict[str, Any] = {}
    for batch in summaries.iter_batches(batch_format="pyarrow", batch_size=None):
        for row in batch.to_pylist():
            if row["error_source"] is not None:
                failures.append(ShardFailure(row["error_source"], row["error"]))
            if row["stats"]:
                _add_stats(stats, json.loads(row["stats"]))
    return _collect(out, plan, judge, judge_obj, stats, failures, kw)


# -- ray --------------------------------------------------------------------------------------

def _start_ray(*, num_cpus: int | None, address: str | None, progress: bool) -> Any:
    """Import Ray and connect (a local cluster unless ``address``), with quiet logs."""
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise InputError("evaluate_dataset needs Ray Data: pip install \"maev-kit[scale]\""
                         ) from e
    if not ray.is_initialized():
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                  "ignore_reinit_error": True, "logging_level": logging.WARNING}
        if address:
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = num_cpus
        ray.init(**kwargs)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = bool(progress)
    ctx.print_on_execution_start = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


# -- plan: where the traces come from and what they are scored against ----------------------

@dataclass
class _Plan:
    dataset: Any
    expectations: dict[str, Any]
    contracts: Any
    splits: dict[str, str | None]
    labeled_set: Any = None
    split: str | None = None
    failures: list[ShardFailure] = field(default_factory=list)
    by_id: bool = False  # results ordered by conversation_id (a Dataset source)
    pieces: bool = False  # rows are shard pieces (path, row groups), read where scored


def _plan(source: Any, *, expectations: Any, facts: Any, contracts: Any, split: str | None,
          batch_size: int, ray: Any) -> _Plan:
    from maev_kit.datasets import LabeledSet, load_labeled_set
    from maev_kit.evaluation._pipeline import _load
    from maev_kit.expectations import load_expectations
    from maev_kit.traces._parquet import traces_to_table

    labeled_set = None
    if isinstance(source, LabeledSet):
        labeled_set = source
    elif isinstance(source, (str, os.PathLike)) and not _is_shards(source):
        labeled_set = load_labeled_set(source)
    if labeled_set is not None or isinstance(source, (list, tuple)):
        inputs = _load(labeled_set if labeled_set is not None else source,
                       expectations=expectations, contracts=contracts, split=split,
                       retention=False)
        table = _with_order(traces_to_table(inputs.traces), 0)
        chunks = [table.slice(i, batch_size) for i in range(0, table.num_rows, batch_size)]
        exp = _with_facts(inputs.expectations, facts)
        return _Plan(ray.data.from_arrow(chunks), exp, inputs.contracts, inputs.splits,
                     inputs.labeled_set, inputs.split)
    if split is not None:
        raise InputError("`split` needs a labeled set; got traces")
    exp = load_expectations(expectations) if expectations is not None else {}
    exp = _with_facts(exp, facts)
    from maev_kit import metrics

    if contracts is not None and not isinstance(contracts, (list, tuple)):
        contracts = metrics.load_contracts(contracts)
    elif contracts:
        contracts = metrics.parse_contracts(contracts)
    if isinstance(source, (str, os.PathLike)):
        pieces = _pieces(_shards(source), batch_size)
        ds = ray.data.from_items(pieces, override_num_blocks=len(pieces))
        return _Plan(ds, exp, list(contracts) if contracts else None, {}, pieces=True)
    if hasattr(source, "map_batches"):  # a ray.data.Dataset
        return _Plan(source, exp, list(contracts) if contracts else None, {}, by_id=True)
    raise InputError(f"`source` must be a ray.data.Dataset, a trace file, folder or glob, a "
                     f"labeled set or a list of traces; got {type(source).__name__}")


def _with_facts(expectations: dict[str, Any], facts: Any) -> dict[str, Any]:
    """The expectations with their key facts replaced by ``facts`` (a file or ProposedFacts)."""
    if facts is None:
        return dict(expectations)
    import dataclasses

    from maev_kit.facts import facts_to_expectations, load_facts

    proposed = load_facts(facts) if isinstance(facts, (str, os.PathLike)) else list(facts)
    out = dict(expectations)
    for cid, exp in facts_to_expectations(proposed).items():
        out[cid] = (dataclasses.replace(out[cid], key_facts=exp.key_facts) if cid in out
                    else exp)
    return out


def _is_shards(source: str | os.PathLike[str]) -> bool:
    """A trace file, a glob or a folder of trace files (not a labeled-set folder)."""
    s = str(source)
    if _glob.has_magic(s) or s.endswith(_SHARD_SUFFIXES):
        return True
    p = Path(s)
    return p.is_dir() and not (p / "manifest.json").exists() and not (p / "manifest.yaml"
                                                                       ).exists()


def _shards(source: str | os.PathLike[str]) -> list[str]:
    s = str(source)
    if Path(s).is_dir():
        paths = [str(p) for p in sorted(Path(s).iterdir()) if p.name.endswith(_SHARD_SUFFIXES)]
    elif _glob.has_magic(s):
        paths = sorted(_glob.glob(s))
    else:
        paths = [s]
    if not paths or (len(paths) == 1 and not Path(paths[0]).exists()):
        raise InputError(f"{s}: no trace file found (expected .jsonl or .parquet files)")
    return [os.path.abspath(p) for p in paths]


def _pieces(shards: list[str], batch_size: int) -> list[dict[str, Any]]:
    """The units of work: a Parquet shard's row groups in runs of at least ``batch_size`` rows
    (so both a big file and many small ones keep every worker busy), a JSONL shard whole.

    ``row_groups`` is "" for a whole file (a JSONL shard, or a Parquet file whose footer cannot
    be read: the worker then reports why); ``first_row`` numbers the piece's first row.
    """
    import pyarrow.parquet as pq

    out: list[dict[str, Any]] = []
    for shard, path in enumerate(shards):
        groups: list[tuple[int, int]] = []
        if path.endswith(".parquet"):
            try:
                meta = pq.ParquetFile(path).metadata
                groups = [(g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
            except Exception:  # noqa: BLE001 - reported by the worker that reads it
                groups = []
        if not groups:
            out.append({"path": path, "shard": shard, "row_groups": "", "first_row": 1})
            continue
        run: list[int] = []
        rows = first = 0
        for g, n in groups:
            run.append(g)
            rows += n
            if rows - first >= batch_size or g == groups[-1][0]:
                out.append({"path": path, "shard": shard, "first_row": first + 1,
                            "row_groups": ",".join(map(str, run))})
                run, first = [], rows
    return out


def _with_order(table: pa.Table, shard: int) -> pa.Table:
    import pyarrow as pa

    order = pa.array([(shard << _ORDER_SHIFT) | i for i in range(table.num_rows)], pa.int64())
    return table.append_column("_order", order)


def _first_line(e: BaseException) -> str:
    """The error's first problem (``file:line › field: message``), and how many more."""
    problems = getattr(e, "problems", None)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"{problems[0]}{more}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


# -- judge ------------------------------------------------------------------------------------

def _judge_for(judge: Any, plan: _Plan, kw: dict[str, Any]) -> tuple[Any, Any]:
    """The judge object and backend as ``evaluate`` resolves them (fit on other splits)."""
    if judge is None:
        return None, None
    from maev_kit.evaluation._pipeline import _Inputs, _resolve

    inputs = _Inputs([], plan.expectations, plan.contracts, [], plan.labeled_set, plan.split)
    return _resolve(judge, kw.get("backend"), kw.get("prompt"), None, inputs)


def _fingerprint(judge: Any, judge_obj: Any, kw: dict[str, Any], plan: _Plan) -> dict[str, Any]:
    """What must not change between a run and its resume."""
    ls = plan.labeled_set
    return {"judge": None if judge is None else [getattr(judge_obj, "name", str(judge)),
                                                 getattr(judge_obj, "version", "")],
            "model": None if kw.get("backend") is None else str(kw["backend"]),
            "prompt": kw.get("prompt"), "labeled_set": ls.content_hash if ls else None,
            "split": plan.split, **{k: kw.get(k) for k in _SCORE_KWARGS}}


def _prepare_output(out: Path, fingerprint: dict[str, Any], *, resume: bool) -> set[str]:
    """Create the folders; the conversation ids already finished (empty unless resuming)."""
    import shutil

    run_file = out / "run.json"
    if not resume:
        for sub in ("conversations", "ledger"):
            shutil.rmtree(out / sub, ignore_errors=True)
    elif run_file.exists():
        before = json.loads(run_file.read_text())
        if before != json.loads(json.dumps(fingerprint)):
            changed = sorted(k for k in fingerprint if before.get(k) != fingerprint[k])
            raise InputError(f"{out} holds results of a different run (changed: "
                             f"{', '.join(changed)}): pass resume=False to start over, or "
                             "another output_dir")
    for sub in ("conversations", "ledger"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    run_file.write_text(json.dumps(fingerprint, indent=1, sort_keys=True))
    done = _read_parts(out / "conversations", ["conversation_id"])
    return set(done.column("conversation_id").to_pylist()) if done is not None else set()


# -- per block (runs on the workers) ----------------------------------------------------------

_SUMMARY_FIELDS = ("n", "error_source", "error", "stats")
_CACHE: dict[str, Any] = {}


def _get(ref: Any) -> Any:
    """An object shipped through the object store, fetched once per worker process."""
    if not hasattr(ref, "hex"):
        return ref
    key = ref.hex()
    if key not in _CACHE:
        import ray

        if len(_CACHE) >= 4:  # a job ships two (expectations, done ids); older jobs go
            _CACHE.clear()
        _CACHE[key] = ray.get(ref)
    return _CACHE[key]


class _ScoreBlock:
    """Score one block of conversations and write its results (a callable shipped to tasks)."""

    def __init__(self, job: _Job):
        self.job = job

    def __call__(self, batch: pa.Table) -> pa.Table:
        from maev_kit.traces._parquet import table_to_traces

        summaries: list[dict[str, Any]] = []
        if batch.num_rows:
            orders = (batch.column("_order").to_pylist() if "_order" in batch.column_names
                      else [-1] * batch.num_rows)
            traces_table = batch.drop_columns([c for c in ("_order",)
                                               if c in batch.column_names])
            traces, problems = table_to_traces(traces_table, file="<dataset block>")
            for p in problems:
                summaries.append({"n": 0, "error_source": p.file, "error": f"{p.path}: "
                                  f"{p.message}", "stats": None})
            order_of = dict(zip(traces_table.column("conversation_id").to_pylist(), orders))
            summaries.append(self._score(traces, order_of))
        return _summary_table(summaries)

    def _score(self, traces: list[Any], order_of: dict[str, int]) -> dict[str, Any]:
        """Score the traces not finished yet, write their parts; the block's summary row."""
        done = _get(self.job.done)
        if done:
            traces = [t for t in traces if t.conversation_id not in done]
        stats = self._score_traces(traces, order_of) if traces else {}
        return {"n": len(traces), "error_source": None, "error": None,
                "stats": json.dumps(stats, default=str) if traces else None}

    def _score_traces(self, traces: list[Any], order_of: dict[str, int]) -> dict[str, Any]:
        from maev_kit.evaluation._pipeline import (
            _judge,
            _ledger,
            _verdicts_by_conversation,
            score_traces,
        )
        from maev_kit.retention import build_retention_items

        job = self.job
        expectations = _get(job.expectations)
        items = build_retention_items(traces, expectations) if job.retention else []
        run = _judge(items, job.judge, job.backend, progress=False, **job.run_kwargs)
        verdicts = _verdicts_by_conversation(items, run)
        scores = score_traces(traces, expectations, verdicts, job.contracts, job.splits,
                              retention=job.retention, **job.score_kwargs)
        handoffs = {t.conversation_id: [(h.from_agent, h.to_agent) for h in t.handoffs]
                    for t in traces}
        block = uuid.uuid4().hex
        _write_block(Path(job.out), block, scores, _ledger(items, run), handoffs, order_of)
        return dict(run.stats) if run else {}


def _summary_table(summaries: list[dict[str, Any]]) -> pa.Table:
    import pyarrow as pa

    return pa.Table.from_pylist(summaries, schema=pa.schema(
        [("n", pa.int64()), ("error_source", pa.string()), ("error", pa.string()),
         ("stats", pa.string())]))


class _ScorePieces(_ScoreBlock):
    """Read shard pieces (see :func:`_pieces`) and score their traces ``batch_size`` at a
    time: the traces are built once, where they are scored, and never cross the object
    store."""

    def __init__(self, job: _Job, batch_size: int):
        super().__init__(job)
        self.batch_size = batch_size

    def __call__(self, batch: pa.Table) -> pa.Table:
        summaries: list[dict[str, Any]] = []
        for piece in batch.to_pylist():
            try:
                traces = _read_piece(piece["path"], piece["row_groups"], piece["first_row"])
            except (MaevError, OSError, ValueError) as e:
                summaries.append({"n": 0, "error_source": piece["path"],
                                  "error": _first_line(e), "stats": None})
                continue
            base = (piece["shard"] << _ORDER_SHIFT) | (piece["first_row"] - 1)
            for start in range(0, len(traces), self.batch_size):
                chunk = traces[start:start + self.batch_size]
                order_of = {t.conversation_id: base + start + i for i, t in enumerate(chunk)}
                summaries.append(self._score(chunk, order_of))
        return _summary_table(summaries)


def _read_piece(path: str, row_groups: str, first_row: int) -> list[Any]:
    """The traces of a piece; a TraceValidationError naming the file, row and field."""
    import warnings

    from maev_kit.errors import TraceValidationError
    from maev_kit.traces import load_traces

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # findings are load_traces' to show, not a run's
        if not row_groups:
            return load_traces(path)
    import pyarrow.parquet as pq

    from maev_kit._jsonl import display_name
    from maev_kit.traces._parquet import table_to_traces

    table = pq.ParquetFile(path).read_row_groups([int(g) for g in row_groups.split(",")])
    traces, problems = table_to_traces(table, file=display_name(path), first_row=first_row)
    if problems:
        raise TraceValidationError(problems)
    return traces


def _write_block(out: Path, block: str, scores: Sequence[Any], ledger: Any,
                 handoffs: dict[str, list[tuple[str, str]]], order_of: dict[str, int]) -> None:
    """The block's ledger part, then its conversations part (each renamed into place)."""
    import pyarrow as pa

    from maev_kit.evaluation._score import COLUMNS

    led = pa.Table.from_pandas(ledger, preserve_index=False) if len(ledger) else None
    if led is not None:
        led = led.append_column("_order", pa.array(
            [order_of[c] for c in ledger["conversation_id"]], pa.int64()))
        led = led.append_column("_block", pa.array([block] * len(ledger), pa.string()))
        _write_part(led, out / "ledger" / f"part-{block}.parquet")
    rows = [s.to_row() for s in scores]
    cols = {c: [r[c] for r in rows] for c in COLUMNS}
    cols["_order"] = [order_of[s.conversation_id] for s in scores]
    cols["_block"] = [block] * len(scores)
    # the routing cases are the expectations' (the driver has them): not stored, as unpickling
    # them was most of the driver's read-back
    cols["_extra"] = [pickle.dumps((s.loops, s.violations, s.route, s.pair_context,
                                    dict(s.errors_by_cause), dict(s.not_applicable),
                                    handoffs[s.conversation_id]))
                      for s in scores]
    table = pa.Table.from_pydict(cols)
    _write_part(table, out / "conversations" / f"part-{block}.parquet")


def _write_part(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


# -- collect: read the parts back, aggregate ----------------------------------------------

def _read_parts(folder: Path, columns: list[str] | None = None) -> pa.Table | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    parts = sorted(p for p in folder.glob("part-*.parquet"))
    if not parts:
        return None
    return pa.concat_tables([pq.read_table(p, columns=columns) for p in parts],
                            promote_options="permissive")


def _collect(out: Path, plan: _Plan, judge: Any, judge_obj: Any, stats: dict[str, Any],
             failures: list[ShardFailure], kw: dict[str, Any]) -> EvaluationResult:
    import pandas as pd

    from maev_kit.evaluation._pipeline import _LEDGER, _judge_info, _warn, aggregate_scores
    from maev_kit.evaluation._score import COLUMNS, ConversationScore

    table = _read_parts(out / "conversations")
    if table is None:
        raise InputError("nothing to evaluate: no conversation could be scored"
                         + "".join(f"\n  {f}" for f in failures[:10]))
    rows = _rows(table)
    if plan.by_id:
        rows.sort(key=lambda r: r["conversation_id"])
    else:
        rows.sort(key=lambda r: r["_order"])
    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in rows:  # a block retried after it was written appears twice: keep one
        if r["conversation_id"] not in seen:
            seen.add(r["conversation_id"])
            kept.append(r)
    scores, handoffs = [], []
    for r in kept:
        extra = pickle.loads(r["_extra"])
        if len(extra) == 8:  # written before the cases were left out
            loops, viols, cases, route, pair_ctx, by_cause, na, hf = extra
        else:
            loops, viols, route, pair_ctx, by_cause, na, hf = extra
            exp = plan.expectations.get(r["conversation_id"])
            cases = tuple(exp.routing) if exp is not None else ()
        scores.append(ConversationScore(**{c: r[c] for c in COLUMNS}, loops=loops,
                                        violations=viols, cases=cases, route=route,
                                        pair_context=pair_ctx, errors_by_cause=by_cause,
                                        not_applicable=na))
        handoffs.extend(hf)
    ledger = pd.DataFrame(_ledger_rows(out, {(r["_block"], r["conversation_id"]) for r in kept},
                                       {r["conversation_id"]: i for i, r in enumerate(kept)}),
                          columns=list(_LEDGER))
    result = aggregate_scores(scores, ledger, handoffs, labeled_set=plan.labeled_set,
                              split=plan.split, n_resamples=kw.get("n_resamples", 2000),
                              confidence=kw.get("confidence", 0.95), seed=kw.get("seed", 0))
    result.weights = kw.get("weights")
    info = _judge_info(judge_obj, judge, None)
    info["model"] = (kw.get("backend") if isinstance(kw.get("backend"), str)
                     else getattr(kw.get("backend"), "model", None))
    info["stats"] = stats
    result.judge = info
    result.provenance.update(judge_card=None, not_applicable=kw.get("not_applicable", "na"),
                             engine="ray", output_dir=str(out), failed_shards=failures)
    _warn(result)
    return result


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, column by column (several times faster)."""
    names = table.column_names
    columns = [table.column(c).to_pylist() for c in names]
    return [dict(zip(names, values)) for values in zip(*columns)]


def _ledger_rows(out: Path, kept: set[tuple[str, str]], position: dict[str, int]
                 ) -> list[tuple[Any, ...]]:
    """The ledger rows of the kept conversations, in conversation order, then part order."""
    from maev_kit.evaluation._pipeline import _LEDGER

    table = _read_parts(out / "ledger")
    if table is None:
        return []
    rows = [r for r in _rows(table) if (r["_block"], r["conversation_id"]) in kept]
    rows.sort(key=lambda r: position[r["conversation_id"]])  # stable: item order within one
    return [tuple(r.get(c) for c in _LEDGER) for r in rows]


def _add_stats(total: dict[str, Any], stats: dict[str, Any]) -> None:
    """Sum the additive counters of the blocks' judge runs (latency percentiles are not)."""
    for k, v in stats.items():
        if isinstance(v, dict):
            _add_stats(total.setdefault(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and "latency" not in k:
            total[k] = total.get(k, 0) + v
