"""``evaluate_dataset``: the per-conversation stage of ``evaluate`` mapped over Ray Data blocks.

Layout of ``output_dir``::

    run.json                         what was run (checked on resume)
    conversations/part-<block>.parquet   one row per conversation: the per-conversation columns
                                     of EvaluationResult, ``_order`` and ``_block``; in the
                                     schema metadata the block's ScoreSummary (what the
                                     aggregate stage needs beyond the columns: n/a reasons,
                                     handoff pairs, loops, violations, routing counts) and
                                     its ``provenance["facts"]``
    ledger/part-<block>.parquet      the retention ledger rows of the same conversations

A block's ledger part is written before its conversations part, each to a temporary name then
renamed, so a conversation is finished exactly when it is in a conversations part; a ledger part
without its conversations part (a crash between the two) is ignored.

The parts are what a resume reads. The run itself never reads its own parts back: each block
also returns its table, summary and ledger rows (pickled) with its stats, and the driver
gathers them as the blocks finish, while the others still run. Nothing crosses per
conversation as a Python object: the driver's aggregate reads the columns from Arrow and adds
the summaries up.
"""

from __future__ import annotations

import glob as _glob
import json
import logging
import os
import pickle
import tempfile
import threading
import uuid
import warnings
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit._gc import frozen_heap, paused_gc
from maev_kit._jsonl import JsonLine, display_name
from maev_kit.errors import InputError, LabelValidationError, MaevError, Problem
from maev_kit.scale._fs import (
    SHARD_SUFFIXES,
    Folder,
    Shards,
    is_uri,
    list_shards,
    local_copy,
    local_file,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from maev_kit.evaluation import EvaluationResult

__all__ = ["ShardFailure", "evaluate_dataset"]

_SCORE_KWARGS = ("triage_agent", "max_handoffs", "weights", "not_applicable")
_OTHER_KWARGS = ("n_resamples", "confidence", "seed", "backend", "prompt", "cache",
                 "max_concurrency", "timeout", "split", "progress", "human_labels",
                 "label_sample", "target_half_width")
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

    out: Folder
    judge: Any
    backend: Any
    expectations: Any  # all of them (an ObjectRef) for the blocks not shipped their own
    contracts: Any
    splits: dict[str, str | None]
    done: Any  # finished conversation ids (a frozenset, its ObjectRef, or None)
    retention: bool
    facts: Any = None  # a FactPlan (or its ObjectRef); None: the expectations' key facts
    # (path, name) of the expectations file whose lines the pieces are shipped (see _ship)
    expectation_file: tuple[str, str] | None = None
    shards: Shards | None = None  # where the pieces' paths are (their filesystem; no paths)
    run_kwargs: dict[str, Any] = field(default_factory=dict)
    score_kwargs: dict[str, Any] = field(default_factory=dict)


def evaluate_dataset(
    source: Any,
    *,
    judge: Any = "heuristic",
    facts: Any = "auto",
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
    source : ray.data.Dataset, path, glob, URI, labeled set or list of traces
        A Dataset with the trace Parquet columns (``docs/formats.md``; results are then
        ordered by ``conversation_id``); a trace file (``.jsonl`` / ``.parquet``), a folder of
        them or a glob (``"traces/*.parquet"``), each file a shard, on this machine or on any
        filesystem pyarrow opens by URI (``"s3://bucket/traces/*.parquet"``, ``gs://``,
        ``hdfs://``, ``abfs://``; options such as ``?region=…`` in the URI, credentials as
        that filesystem finds them); a labeled-set folder, a bundled set's name or a
        ``LabeledSet``; or a list of traces.
    judge : as in ``evaluate``; None scores the deterministic metrics only.
    facts : as in ``evaluate``, default "auto"
        ``"auto"`` (per conversation: the expectations' key facts, else the handoffs'
        ``context_passed``, else the offline proposer), a proposer (``"context"``,
        ``"offline"``, ``"llm"``; several joined by commas, or a list of names), a facts or
        expectations JSONL file, or a list of ``ProposedFact`` (:mod:`maev_kit.facts`). Each
        block resolves the facts of its conversations as ``evaluate`` does for all, so the
        ledger's ``fact_source`` and ``provenance["facts"]`` are ``evaluate``'s. A file is
        read once on the driver; a fact on a conversation that was not scored is an error
        after the run (unless a shard failed). None: the expectations' key facts as they
        are, with no proposer.
    expectations, contracts : as in ``evaluate`` (a labeled set brings its own). An
        expectations file may also be a URI: the driver reads a copy and ships each block
        its lines.
    output_dir : folder for the Parquet results, a path or a URI (a temporary local folder
        when None: no resume). On a cluster, give a URI (or a folder every node shares): the
        workers write the parts, and a resume reads them back.
    resume : skip conversations already in ``output_dir`` (after a crash or a preemption);
        False starts over.
    num_cpus : CPUs of the local Ray started when none is running (default: all).
    address : a Ray cluster to connect to (``"ray://host:10001"``, ``"host:6379"``,
        ``"auto"``); an address where nothing answers is an InputError at once.
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

    Raises
    ------
    InputError
        Bad arguments, an unreadable facts file, or a given fact that does not fit the
        traces (``file:line › field``), as ``evaluate`` raises them.

    Examples
    --------
    >>> from maev_kit.scale import evaluate_dataset
    >>> result = evaluate_dataset("traces/*.parquet", judge=None,
    ...                           expectations="expectations.jsonl")  # doctest: +SKIP
    """
    kw = _checked_options(judge, batch_size, evaluate_kwargs)
    with frozen_heap():  # the caller's heap (a million expectations?) out of the collections
        return _evaluate_dataset(source, judge=judge, facts=facts, expectations=expectations,
                                 contracts=contracts, output_dir=output_dir, resume=resume,
                                 num_cpus=num_cpus, address=address, batch_size=batch_size,
                                 kw=kw)


def _checked_options(judge: Any, batch_size: int, evaluate_kwargs: dict[str, Any]
                     ) -> dict[str, Any]:
    """``evaluate_dataset``'s other keyword arguments, checked as ``evaluate`` checks them."""
    unknown = set(evaluate_kwargs) - set(_SCORE_KWARGS) - set(_OTHER_KWARGS)
    if unknown:
        raise TypeError(f"evaluate_dataset() got unexpected keyword argument(s) "
                        f"{', '.join(sorted(unknown))}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"`batch_size` must be a positive integer, got {batch_size!r}")
    # the options evaluate would take: not_applicable and the judge checked together
    from maev_kit.evaluation import EvaluationOptions

    EvaluationOptions(judge=judge, not_applicable=evaluate_kwargs.get("not_applicable", "na"))
    return dict(evaluate_kwargs)


def _evaluate_dataset(source: Any, *, judge: Any, facts: Any, expectations: Any,
                      contracts: Any, output_dir: str | os.PathLike[str] | None, resume: bool,
                      num_cpus: int | None, address: str | None, batch_size: int,
                      kw: dict[str, Any]) -> EvaluationResult:
    ray = _start_ray(num_cpus=num_cpus, address=address, progress=kw.get("progress", False))
    warming = _warm_up(ray)  # the workers and Ray Data start while the driver plans
    try:
        # an expectations file of another filesystem is read here from a copy, and its lines
        # are shipped to the pieces (the workers may not see the copy)
        with local_file(expectations) as (local, copied):
            plan = _plan(source, expectations=local, contracts=contracts,
                         split=kw.get("split"), batch_size=batch_size, ray=ray,
                         ship_lines=copied)
            return _run(ray, warming, plan, judge=judge, facts=facts,
                        given_expectations=expectations is not None, output_dir=output_dir,
                        resume=resume, batch_size=batch_size, kw=kw)
    except BaseException:
        # A run that stops early (a bad source, a bad line) waits for the warm-up's Ray Data
        # execution: left running, it went on while the caller exited and shut Ray down,
        # printed Ray Data's traceback after the error, and started Ray again.
        warming.ray_data.join(timeout=_WARM_UP_WAIT_S)
        raise


def _run(ray: Any, warming: _Warming, plan: _Plan, *, judge: Any, facts: Any,
         given_expectations: bool, output_dir: str | os.PathLike[str] | None, resume: bool,
         batch_size: int, kw: dict[str, Any]) -> EvaluationResult:
    """The run, once planned: judge, score and write each block, gather, aggregate."""
    from maev_kit.scale._facts import plan_facts

    judge_obj, backend = _judge_for(judge, plan, kw)
    out = Folder.of(output_dir if output_dir is not None else tempfile.mkdtemp(prefix="maev-"))
    cache = kw.get("cache")
    if cache is None:
        cache = os.path.abspath(".maev_cache")  # the driver's, not each worker's directory
    run_kwargs = {"cache": cache, "max_concurrency": kw.get("max_concurrency", 16),
                  "timeout": kw.get("timeout", 60.0)}
    fact_plan = (plan_facts(facts, judge=judge, backend=kw.get("backend"),
                            options={**run_kwargs, "progress": False})
                 if judge is not None else None)  # as evaluate: no judge, no facts
    fingerprint = _fingerprint(judge, judge_obj, kw, plan, fact_plan,
                               objects=output_dir is not None and given_expectations)
    done, old_parts = _prepare_output(out, fingerprint, resume=resume)

    dataset, shared = _ship(plan, fact_plan, done, ray)
    job = _Job(out=out, judge=judge_obj, backend=backend,
               expectations=ray.put(plan.expectations) if shared else None,
               contracts=plan.contracts, splits=plan.splits, retention=judge is not None,
               done=ray.put(frozenset(done)) if done and shared else None,
               facts=ray.put(fact_plan) if fact_plan is not None and shared else None,
               expectation_file=None if plan.ship_lines else plan.expectation_file,
               shards=replace(plan.shards, paths=[]) if plan.shards is not None else None,
               run_kwargs=run_kwargs,
               score_kwargs={k: kw[k] for k in _SCORE_KWARGS if k in kw})
    # its own execution, done before this one starts (bounded: a busy cluster may hold it)
    warming.ray_data.join(timeout=_WARM_UP_WAIT_S)
    if plan.pieces:  # each task reads its piece and scores the traces it built
        summaries = dataset.map_batches(_ScorePieces(job, batch_size), batch_size=1,
                                        batch_format="pyarrow")
    else:
        summaries = dataset.map_batches(_ScoreBlock(job), batch_size=batch_size,
                                        batch_format="pyarrow", zero_copy_batch=True)
    # Paused for the gathering and the aggregate: the blocks' summaries hold small objects
    # without cycles (a dict per loop and per contract violation: hundreds of thousands at a
    # million conversations), and collections while gathering would walk all of them. They
    # are freed when _gather returns, before the collector is back.
    with paused_gc():
        result = _gather(summaries, out, plan, judge, judge_obj, kw, old_parts, fact_plan)
    del warming
    return result


def _gather(summaries: Any, out: Folder, plan: _Plan, judge: Any, judge_obj: Any,
            kw: dict[str, Any], old_parts: list[str], fact_plan: Any) -> EvaluationResult:
    """The blocks' summaries gathered as each block finishes, while the others still run;
    then the aggregate over them and the parts of an earlier run."""
    failures: list[ShardFailure] = list(plan.failures)
    stats: dict[str, Any] = {}
    units: list[_Unit] = []
    for batch in summaries.iter_batches(batch_format="pyarrow", batch_size=None):
        for row in batch.to_pylist():
            if row["fatal"] is not None:
                raise InputError(row["fatal"])
            if row["error_source"] is not None:
                failures.append(ShardFailure(row["error_source"], row["error"]))
            if row["stats"]:
                _add_stats(stats, json.loads(row["stats"]))
            if row["result"] is not None:
                units.append(_Unit(**pickle.loads(row["result"])))
    return _collect(out, plan, judge, judge_obj, stats, failures, kw,
                    _read_old_parts(out, old_parts) + units, fact_plan)


_WARM_UP_TASKS = 64  # at most: a big cluster's other workers warm up with their first block
_WARM_UP_WAIT_S = 30.0  # for the one-row Ray Data execution; seconds on an idle cluster


@dataclass
class _Warming:
    tasks: list[Any]  # the import tasks, kept referenced until the run ends
    ray_data: threading.Thread  # a one-row Ray Data execution


def _warm_up(ray: Any) -> _Warming:
    """Start what a run waits for, so it starts while the driver plans and ships the pieces
    instead of after (measured on 2 cores, a million traces: the first piece started 2.6 s
    after the pieces were shipped, the second worker's 4.4 s):

    - one task per CPU (up to :data:`_WARM_UP_TASKS`) that imports what a block needs (about
      2 s each), not waited for;
    - a one-row Ray Data execution in a thread, which starts the actors Ray Data runs beside
      any execution (its stats actor and autoscaling coordinator: new processes that import
      pandas and Ray Data, ~2.3 s of CPU each, which took both cores at the run's start).
    """
    cpus = int(ray.cluster_resources().get("CPU", 1))
    task = ray.remote(num_cpus=1, max_retries=0)(_imports)
    tasks = [task.remote() for _ in range(max(1, min(cpus, _WARM_UP_TASKS)))]
    thread = threading.Thread(target=_start_ray_data, args=(ray,), name="maev-warm-up",
                              daemon=True)
    thread.start()
    return _Warming(tasks, thread)


def _start_ray_data(ray: Any) -> None:
    try:
        ray.data.from_items([{"x": 0}]).map_batches(_same_batch, batch_format="pyarrow"
                                                    ).take_all()
    except Exception:  # noqa: BLE001 - a warm-up only: the run itself reports what fails
        logging.getLogger(__name__).debug("Ray Data warm-up failed", exc_info=True)


def _same_batch(batch: pa.Table) -> pa.Table:
    return batch


def _imports() -> None:
    # the package imports pandas and pyarrow where they are used, and Ray Data's map task
    # imports ray.data (pandas, pyarrow) when a worker first runs one: ~2 s of imports that
    # each worker otherwise paid in its first piece, after the driver had shipped the pieces
    import pandas  # noqa: F401
    import pyarrow.parquet  # noqa: F401
    import ray.data  # noqa: F401

    import maev_kit.evaluation.stages  # noqa: F401  (the metrics)
    import maev_kit.retention  # noqa: F401
    import maev_kit.traces._parquet  # noqa: F401


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
            _check_reachable(address)
            kwargs["address"] = address
        else:
            kwargs["num_cpus"] = num_cpus
        ray.init(**kwargs)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = bool(progress)
    ctx.print_on_execution_start = False
    ctx.memory_usage_poll_interval_s = None  # a task's memory, read each second: unused here
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    return ray


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """InputError when nothing listens at a ``host:port`` (or ``ray://host:port``) address:
    Ray itself retries such an address for minutes, printing a warning every few seconds.
    Other forms (``"auto"``) are left to Ray."""
    import socket

    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as e:
        raise InputError(f"no Ray cluster answers at {address} ({e.strerror or e}): check the "
                         "address, or start one there with `ray start --head`") from None


# -- plan: where the traces come from and what they are scored against ----------------------

@dataclass
class _Plan:
    dataset: Any  # a ray.data.Dataset, or the list of pieces (see _pieces)
    expectations: dict[str, Any]
    contracts: Any
    splits: dict[str, str | None]
    labeled_set: Any = None
    split: str | None = None
    failures: list[ShardFailure] = field(default_factory=list)
    pieces: bool = False  # rows are shard pieces (path, row groups), read where scored
    # (path, name): an expectations file read where its lines are scored (see _ship)
    expectation_file: tuple[str, str] | None = None
    expectations_digest: str | None = None  # of an expectations file, compared on resume
    shards: Shards | None = None  # the trace files of a path, folder, glob or URI source
    ship_lines: bool = False  # the expectation file's lines go to the pieces, not its spans


def _plan(source: Any, *, expectations: Any, contracts: Any, split: str | None,
          batch_size: int, ray: Any, ship_lines: bool = False) -> _Plan:
    from maev_kit.datasets import LabeledSet, _sha256, load_labeled_set
    from maev_kit.evaluation.stages import load_inputs, read_contracts
    from maev_kit.expectations import load_expectations
    from maev_kit.traces._parquet import traces_to_table

    labeled_set = None
    if isinstance(source, LabeledSet):
        labeled_set = source
    elif isinstance(source, (str, os.PathLike)) and not _is_shards(source):
        labeled_set = load_labeled_set(source)
    # an expectations file is compared on resume by its digest (~0.8 s for a million lines;
    # expectations given as objects are digested by _fingerprint)
    digest = (_sha256(Path(expectations))[:16] if isinstance(expectations, (str, os.PathLike))
              and Path(expectations).is_file() else None)
    if labeled_set is not None or isinstance(source, (list, tuple)):
        inputs = load_inputs(labeled_set if labeled_set is not None else source,
                             expectations=expectations, contracts=contracts, split=split)
        table = _with_order(traces_to_table(inputs.traces), 0)
        chunks = [table.slice(i, batch_size) for i in range(0, table.num_rows, batch_size)]
        return _Plan(_scheduled(ray.data.from_arrow(chunks)), dict(inputs.expectations),
                     inputs.contracts, inputs.splits, inputs.labeled_set, inputs.split,
                     expectations_digest=digest)
    if split is not None:
        raise InputError("`split` needs a labeled set; got traces")
    contracts = read_contracts(contracts)
    if not isinstance(source, (str, os.PathLike)):
        if not hasattr(source, "map_batches"):  # a ray.data.Dataset
            raise InputError(f"`source` must be a ray.data.Dataset, a trace file, folder or "
                             f"glob, a labeled set or a list of traces; got "
                             f"{type(source).__name__}")
        exp = dict(load_expectations(expectations)) if expectations is not None else {}
        return _Plan(source, exp, contracts, {}, expectations_digest=digest)
    shards = list_shards(source)
    pieces = _pieces(shards, batch_size)
    file = None
    if digest is not None and all(piece["ids"] is not None for piece in pieces):
        # routed to the pieces by _ship; else (a JSONL shard) loaded here, whole
        file, expectations = (os.path.abspath(expectations), display_name(expectations)), None
    exp = dict(load_expectations(expectations)) if expectations is not None else {}
    return _Plan(pieces, exp, contracts, {}, pieces=True, expectation_file=file,
                 expectations_digest=digest, shards=shards, ship_lines=ship_lines)


def _is_shards(source: str | os.PathLike[str]) -> bool:
    """A trace file, a glob, a folder of trace files (not a labeled-set folder) or a URI."""
    s = str(source)
    if is_uri(s) or _glob.has_magic(s) or s.endswith(SHARD_SUFFIXES):
        return True
    p = Path(s)
    return p.is_dir() and not (p / "manifest.json").exists() and not (p / "manifest.yaml"
                                                                       ).exists()


def _pieces(shards: Shards, batch_size: int) -> list[dict[str, Any]]:
    """The units of work: a Parquet shard's row groups in runs of at least ``batch_size`` rows
    (so both a big file and many small ones keep every worker busy), a JSONL shard whole.

    ``row_groups`` is "" for a whole file (a JSONL shard, or a Parquet file whose footer cannot
    be read: the worker then reports why); ``first_row`` numbers the piece's first row;
    ``ids`` lists a Parquet piece's conversation ids (its ``conversation_id`` column, cheap to
    read alone), None when unknown (a JSONL shard, an unreadable column).
    """
    import pyarrow.parquet as pq

    out: list[dict[str, Any]] = []
    for shard, path in enumerate(shards.paths):
        groups: list[tuple[int, int]] = []
        file = None
        if path.endswith(".parquet"):
            try:
                file = pq.ParquetFile(path, filesystem=shards.filesystem)
                meta = file.metadata
                groups = [(g, meta.row_group(g).num_rows) for g in range(meta.num_row_groups)]
            except Exception:  # noqa: BLE001 - reported by the worker that reads it
                groups = []
        if not groups:
            out.append({"path": path, "shard": shard, "row_groups": "", "first_row": 1,
                        "ids": None})
            continue
        run: list[int] = []
        rows = first = 0
        for g, n in groups:
            run.append(g)
            rows += n
            if rows - first >= batch_size or g == groups[-1][0]:
                out.append({"path": path, "shard": shard, "first_row": first + 1,
                            "row_groups": ",".join(map(str, run)),
                            "ids": _piece_ids(file, run)})
                run, first = [], rows
    return out


def _piece_ids(file: Any, row_groups: list[int]) -> list[str] | None:
    try:
        return file.read_row_groups(row_groups, columns=["conversation_id"]).column(
            "conversation_id").to_pylist()
    except Exception:  # noqa: BLE001 - the worker that reads the piece reports what is wrong
        return None


def _ship(plan: _Plan, fact_plan: Any, done: set[str], ray: Any
          ) -> tuple[Any, bool]:
    """The Dataset to map, and whether some block needs the whole expectations (and facts,
    done ids) from the object store.

    A piece whose conversation ids are known is shipped only its own expectations, given
    facts and finished ids (pickled in its row), so a worker unpickles the expectations of
    the conversations it scores, not all of them.
    """
    if not plan.pieces:
        return plan.dataset, True
    spans = _route_expectations(plan)
    lines = (_lines_of(plan.expectation_file, spans) if plan.ship_lines and spans is not None
             else None)
    rows = []
    shared = False
    for k, piece in enumerate(plan.dataset):
        ids = piece.pop("ids")
        if ids is None:
            shared = True
            rows.append({**piece, "own": None})
            continue
        exp = plan.expectations
        own = {"expectations": ({c: exp[c] for c in ids if c in exp} if spans is None
                                else lines(k) if lines is not None
                                else spans.get(k, array("q"))),
               "done": frozenset(c for c in ids if c in done) if done else None,
               "facts": fact_plan.subset(ids) if fact_plan is not None else None}
        rows.append({**piece, "own": pickle.dumps(own, protocol=pickle.HIGHEST_PROTOCOL)})
    return _scheduled(ray.data.from_items(rows, override_num_blocks=len(rows))), shared


def _scheduled(dataset: Any) -> Any:
    """A Dataset this module made, set to start its blocks' tasks without Ray Data's
    per-operator resource reservation. The reservation holds an operator to one task until
    the first one finished, then to as many tasks as CPUs, each next one started by the
    driver's executor loop after it saw one finish (it polls every 0.1 s). Measured on 2 CPUs
    (200,000 traces, pieces of 10,000): the second worker started ~1.2 s after the first, and
    each worker waited ~170 ms between pieces (9 s of each worker's time at a million
    traces). Without it, tasks queue in Ray past the CPUs, and a worker starts the next piece
    as it finishes one: ~10 ms. This run is one operator reading small input rows and
    returning small tables, which is what the reservation does not protect. A Dataset passed
    in by the caller is left as it is."""
    dataset.context.op_resource_reservation_enabled = False
    return dataset


def _route_expectations(plan: _Plan) -> dict[int, Any] | None:
    """An expectations file's lines by the piece whose conversation they expect (as
    :func:`~maev_kit.expectations.route_expectation_lines` spans), so each worker builds and
    validates the records of its own conversations: the driver reads the file without
    building a record (about 3 µs a line against 10 to build, 10 to pickle and 7 to unpickle
    each). The lines of no piece are validated here. Their problems, and those of lines too
    long or binary, are one LabelValidationError before the run. None when the expectations
    are not such a file (objects, or a file :func:`_plan` loaded whole)."""
    from maev_kit.expectations import read_expectation_lines, route_expectation_lines

    if plan.expectation_file is None:
        return None
    path, name = plan.expectation_file
    where = {c: k for k, piece in enumerate(plan.dataset) for c in piece["ids"]}
    spans, rest, problems = route_expectation_lines(path, where, name=name)
    del where
    problems += read_expectation_lines(rest, name=name)[1]
    if problems:
        raise LabelValidationError(sorted(problems, key=lambda p: p.line or 0))
    return spans


@dataclass
class _Lines:
    """Some lines of an expectations file, unparsed, shipped to the piece they expect."""

    name: str  # the file, as problems name it
    data: bytes  # the lines, in file order
    index: array  # (line number, length) of each

    def json_lines(self) -> Iterator[JsonLine]:
        start = 0
        for i in range(0, len(self.index), 2):
            end = start + self.index[i + 1]
            yield JsonLine(self.index[i], None, self.data[start:end], None, start)
            start = end


def _lines_of(file: tuple[str, str] | None, spans: dict[int, Any]) -> Any:
    """``k -> _Lines`` of piece ``k``'s spans, read from the (local) file."""
    import mmap

    assert file is not None
    path, name = file
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def lines(k: int) -> _Lines:
        got = spans.get(k, array("q"))
        offsets, lengths, numbers = got[0::3], got[1::3], got[2::3]
        index = array("q", [0]) * (2 * len(lengths))
        index[0::2], index[1::2] = numbers, lengths
        return _Lines(name, b"".join(view[o:o + n] for o, n in zip(offsets, lengths)), index)

    return lines


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
    from maev_kit.evaluation.stages import resolve_evaluation_judge

    return resolve_evaluation_judge(judge, backend=kw.get("backend"), prompt=kw.get("prompt"),
                                    labeled_set=plan.labeled_set, split=plan.split)


def _fingerprint(judge: Any, judge_obj: Any, kw: dict[str, Any], plan: _Plan,
                 fact_plan: Any, *, objects: bool) -> dict[str, Any]:
    """What must not change between a run and its resume: the judge and scoring options, the
    labeled set's content, the contracts, the expectations given (a digest of the file's
    bytes; with ``objects``, given as objects and resumable, of their ``repr`` in
    conversation id order: ~10 µs a conversation) and the key facts when judged (their mode,
    or a digest of the file or list)."""
    from maev_kit.scale._facts import _digest

    ls = plan.labeled_set
    out = {"judge": None if judge is None else [getattr(judge_obj, "name", str(judge)),
                                                getattr(judge_obj, "version", "")],
           "model": None if kw.get("backend") is None else str(kw["backend"]),
           "prompt": kw.get("prompt"), "labeled_set": ls.content_hash if ls else None,
           "split": plan.split, **{k: kw.get(k) for k in _SCORE_KWARGS},
           "contracts": _digest(repr(plan.contracts).encode())}
    if plan.expectations_digest is not None:
        out["expectations"] = plan.expectations_digest
    elif objects:
        exp = plan.expectations
        with paused_gc():
            out["expectations"] = _digest(repr([exp[c] for c in sorted(exp)]).encode())
    if fact_plan is not None:
        out["facts"] = fact_plan.fingerprint
    return out


def _prepare_output(out: Folder, fingerprint: dict[str, Any], *, resume: bool
                    ) -> tuple[set[str], list[str]]:
    """Create the folders; the conversation ids already finished and the conversations parts
    that hold them (empty unless resuming)."""
    if not resume:
        for sub in ("conversations", "ledger"):
            out.clear(sub)
    elif out.exists("run.json"):
        before = json.loads(out.read_bytes("run.json"))
        if before != json.loads(json.dumps(fingerprint)):
            changed = sorted(k for k in fingerprint if before.get(k) != fingerprint[k])
            raise InputError(f"{out} holds results of a different run (changed: "
                             f"{', '.join(changed)}): pass resume=False to start over, or "
                             "another output_dir")
    for sub in ("conversations", "ledger"):
        out.make(sub)
    out.write_bytes(json.dumps(fingerprint, indent=1, sort_keys=True).encode(), "run.json")
    parts = out.parts("conversations")
    done = _read_parts(out, parts, ["conversation_id"])
    return (set(done.column("conversation_id").to_pylist()) if done is not None else set(),
            parts)


# -- per block (runs on the workers) ----------------------------------------------------------

_CACHE: dict[str, Any] = {}


def _get(ref: Any) -> Any:
    """An object shipped through the object store, fetched once per worker process."""
    if not hasattr(ref, "hex"):
        return ref
    key = ref.hex()
    if key not in _CACHE:
        import ray

        if len(_CACHE) >= 6:  # a job ships up to three (expectations, done ids, facts)
            _CACHE.clear()
        _CACHE[key] = ray.get(ref)
    return _CACHE[key]


@dataclass
class _Own:
    """What one block is scored against: its expectations, finished ids and key facts."""

    expectations: dict[str, Any]
    done: Any
    facts: Any


@dataclass
class _Unit:
    """One block's results, as the driver gathers them: the per-conversation table (the
    columns and ``_order``), the scores'
    :class:`~maev_kit.evaluation.stages.ScoreSummary` (keyed by ``(_order,
    conversation_id)``), the ledger rows (a DataFrame, or None), ``provenance["facts"]``
    and the facts warnings. No object per conversation: the driver gathers a million
    conversations as a few hundred tables."""

    block: str
    table: Any
    summary: Any
    ledger: Any = None
    facts: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def first(self) -> tuple[int, str]:
        """The sort key of the unit's first conversation."""
        return min(zip(self.table.column("_order").to_pylist(),
                       self.table.column("conversation_id").to_pylist()))


class _ScoreBlock:
    """Score one block of conversations and write its results (a callable shipped to tasks)."""

    def __init__(self, job: _Job):
        self.job = job

    def _shared(self) -> _Own:
        job = self.job
        return _Own(_get(job.expectations), _get(job.done), _get(job.facts))

    def __call__(self, batch: pa.Table) -> pa.Table:
        with paused_gc():
            return self._call(batch)

    def _call(self, batch: pa.Table) -> pa.Table:
        from maev_kit.traces._parquet import table_to_traces

        summaries: list[dict[str, Any]] = []
        if batch.num_rows:
            orders = (batch.column("_order").to_pylist() if "_order" in batch.column_names
                      else [-1] * batch.num_rows)
            traces_table = batch.drop_columns([c for c in ("_order",)
                                               if c in batch.column_names])
            traces, problems = table_to_traces(traces_table, file="<dataset block>")
            for p in problems:
                summaries.append({"error_source": p.file, "error": f"{p.path}: {p.message}"})
            order_of = dict(zip(traces_table.column("conversation_id").to_pylist(), orders))
            summaries.append(self._score(traces, order_of, self._shared()))
        return _summary_table(summaries)

    def _score(self, traces: list[Any], order_of: dict[str, int], own: _Own
               ) -> dict[str, Any]:
        """Score the traces not finished yet, write their parts; the block's summary row
        (with its results pickled, or the one line of a given fact that does not fit)."""
        if own.done:
            traces = [t for t in traces if t.conversation_id not in own.done]
        if not traces:
            return {"n": 0}
        try:
            stats, unit = self._score_traces(traces, order_of, own)
        except InputError as e:
            return {"n": 0, "fatal": _first_line(e)}
        return {"n": len(traces), "stats": json.dumps(stats, default=str),
                "result": pickle.dumps(vars(unit), protocol=pickle.HIGHEST_PROTOCOL)}

    def _score_traces(self, traces: list[Any], order_of: dict[str, int], own: _Own
                      ) -> tuple[dict[str, Any], _Unit]:
        from maev_kit.evaluation.stages import (
            build_retention_items,
            facts_by_source,
            judge_items,
            ledger_frame,
            score_traces,
            summarize_scores,
            verdicts_by_conversation,
        )

        job = self.job
        notes: list[str]
        expectations, sources, info, notes = own.expectations, None, None, []
        if job.retention and own.facts is not None:
            from maev_kit.scale._facts import apply_facts

            expectations, sources, info, notes = apply_facts(own.facts, traces, expectations)
        items = build_retention_items(traces, expectations) if job.retention else []
        if info is not None:
            info = {**info, "by_source": facts_by_source(items, sources)}
        run = judge_items(items, job.judge, job.backend, progress=False, **job.run_kwargs)
        verdicts = verdicts_by_conversation(items, run)
        scores = score_traces(traces, expectations, verdicts, job.contracts, job.splits,
                              retention=job.retention, **job.score_kwargs)
        keys = [(order_of[t.conversation_id], t.conversation_id) for t in traces]
        summary = summarize_scores(scores, keys, (((*key, j), (h.from_agent, h.to_agent))
                                                  for key, t in zip(keys, traces)
                                                  for j, h in enumerate(t.handoffs)))
        unit = _Unit(uuid.uuid4().hex, _score_table(scores, [k[0] for k in keys]), summary,
                     ledger_frame(items, run, sources) if items else None, info, notes)
        _write_block(job.out, unit)
        return (dict(run.stats) if run else {}), unit


def _summary_table(summaries: list[dict[str, Any]]) -> pa.Table:
    import pyarrow as pa

    schema = pa.schema([("n", pa.int64()), ("error_source", pa.string()),
                        ("error", pa.string()), ("fatal", pa.string()), ("stats", pa.string()),
                        ("result", pa.large_binary())])
    return pa.Table.from_pylist([{f: s.get(f) for f in schema.names} for s in summaries],
                                schema=schema)


class _ScorePieces(_ScoreBlock):
    """Read shard pieces (see :func:`_pieces`) and score their traces ``batch_size`` at a
    time: the traces are built once, where they are scored, and never cross the object
    store."""

    def __init__(self, job: _Job, batch_size: int):
        super().__init__(job)
        self.batch_size = batch_size

    def _call(self, batch: pa.Table) -> pa.Table:
        summaries: list[dict[str, Any]] = []
        shards = self.job.shards
        assert shards is not None  # pieces are read from the shards of a path or URI
        for piece in batch.to_pylist():
            try:
                traces = _read_piece(shards, piece["path"], piece["row_groups"],
                                     piece["first_row"], turns=self.job.retention)
            except (MaevError, OSError, ValueError) as e:
                summaries.append({"n": 0, "error_source": shards.shown(piece["path"]),
                                  "error": _first_line(e)})
                continue
            try:
                own = (self._own(pickle.loads(piece["own"]), traces)
                       if piece["own"] is not None else self._shared())
            except InputError as e:
                summaries.append({"n": 0, "fatal": _first_line(e)})
                continue
            base = (piece["shard"] << _ORDER_SHIFT) | (piece["first_row"] - 1)
            for start in range(0, len(traces), self.batch_size):
                chunk = traces[start:start + self.batch_size]
                order_of = {t.conversation_id: base + start + i for i, t in enumerate(chunk)}
                summaries.append(self._score(chunk, order_of, own))
        return _summary_table(summaries)

    def _own(self, own: dict[str, Any], traces: list[Any]) -> _Own:
        """What a piece was shipped; the records of its expectations file lines built and
        validated (problems raise LabelValidationError; a record of a conversation not in the
        piece means the file changed since the driver read it)."""
        file = self.job.expectation_file
        shipped = own["expectations"]
        if file is not None or isinstance(shipped, _Lines):
            from maev_kit.expectations import read_expectation_lines, read_expectation_spans

            if isinstance(shipped, _Lines):
                name = shipped.name
                recs, problems, lines = read_expectation_lines(shipped.json_lines(), name=name)
            else:
                assert file is not None
                name = file[1]
                try:
                    recs, problems, lines = read_expectation_spans(file[0], shipped, name=name)
                except OSError as e:
                    raise InputError(f"{name}: cannot be read where the shards are scored "
                                     f"({e.strerror or e}); put it where the workers read "
                                     "the shards, or pass its URI (s3://…)") from None
            ids = {t.conversation_id for t in traces}
            problems += [Problem(name, lines[r.conversation_id], "conversation_id",
                                 f"{r.conversation_id!r} is not the id this line had when the "
                                 "run started: was the file changed during the run?")
                         for r in recs if r.conversation_id not in ids]
            if problems:
                raise LabelValidationError(problems)
            own["expectations"] = {r.conversation_id: r for r in recs}
        return _Own(**own)


def _read_piece(shards: Shards, path: str, row_groups: str, first_row: int, turns: bool
                ) -> list[Any]:
    """The traces of a piece; a TraceValidationError naming the file, row and field.
    ``turns=False`` (no judge): a Parquet piece is read without the turns' contents
    (:func:`~maev_kit.traces._parquet.read_row_groups`), which no deterministic metric reads.
    A whole file (JSONL) of another filesystem is copied here first and read as a local one."""
    from maev_kit.errors import TraceValidationError
    from maev_kit.traces import load_traces

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # findings are load_traces' to show, not a run's
        if not row_groups and shards.filesystem is None:
            return load_traces(path)
        if not row_groups:
            with local_copy(shards.filesystem, path) as local:
                return load_traces(local)
    from maev_kit.traces._parquet import read_row_groups

    traces, problems = read_row_groups(path, [int(g) for g in row_groups.split(",")],
                                       first_row=first_row, turns=turns,
                                       filesystem=shards.filesystem)
    if problems:
        raise TraceValidationError(problems)
    return traces


def _score_table(scores: list[Any], orders: list[int]) -> pa.Table:
    """The per-conversation columns of some scores and their ``_order``."""
    import pyarrow as pa

    from maev_kit.evaluation.stages import score_columns

    cols: dict[str, Any] = score_columns(scores)
    cols["_order"] = pa.array(orders, pa.int64())
    return pa.Table.from_pydict(cols)


def _write_block(out: Folder, unit: _Unit) -> None:
    """The block's ledger part, then its conversations part (each renamed into place); the
    conversations part's metadata holds the block's score summary and facts provenance."""
    import base64

    import pyarrow as pa

    block, table = unit.block, unit.table
    if unit.ledger is not None and len(unit.ledger):
        ledger = unit.ledger
        order_of = dict(zip(table.column("conversation_id").to_pylist(),
                            table.column("_order").to_pylist()))
        led = pa.Table.from_pandas(ledger, preserve_index=False)
        led = led.append_column("_order", pa.array(
            [order_of[c] for c in ledger["conversation_id"]], pa.int64()))
        led = led.append_column("_block", pa.array([block] * len(ledger), pa.string()))
        out.write_parquet(led, "ledger", f"part-{block}.parquet")
    meta = {_SUMMARY_KEY: base64.b64encode(pickle.dumps(unit.summary,
                                                        protocol=pickle.HIGHEST_PROTOCOL))}
    if unit.facts is not None:
        meta[_FACTS_KEY.encode()] = json.dumps({"facts": unit.facts,
                                                "notes": unit.notes}).encode()
    table = table.append_column("_block", pa.array([block] * table.num_rows, pa.string()))
    out.write_parquet(table.replace_schema_metadata(meta), "conversations",
                      f"part-{block}.parquet")


_SUMMARY_KEY = b"maev_summary"  # a conversations part's metadata: the block's ScoreSummary
_FACTS_KEY = "maev_facts"  # a conversations part's metadata: the block's provenance["facts"]


# -- collect: the blocks' results (and a resumed run's parts), aggregate ---------------------

def _read_parts(out: Folder, parts: list[str], columns: list[str] | None = None
                ) -> pa.Table | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not parts:
        return None
    return pa.concat_tables([pq.read_table(p, columns=columns, filesystem=out.filesystem)
                             for p in parts], promote_options="permissive")


def _read_old_parts(out: Folder, parts: list[str]) -> list[_Unit]:
    """The results of the blocks finished before this run (a resume), from their parts."""
    import base64

    import pandas as pd
    import pyarrow.parquet as pq

    from maev_kit.evaluation.stages import LEDGER_COLUMNS

    units = []
    ledgers = set(out.parts("ledger")) if parts else set()  # one listing, not a look per part
    for path in parts:
        table = pq.read_table(path, filesystem=out.filesystem)
        if not table.num_rows:
            continue
        meta = table.schema.metadata or {}
        if _SUMMARY_KEY not in meta:
            part = f"{str(out).rstrip('/')}/conversations/{path.rsplit('/', 1)[-1]}"
            raise InputError(f"{part}: written by another version of maev-kit; pass "
                             "resume=False to start over, or another output_dir")
        block = table.column("_block")[0].as_py()
        summary = pickle.loads(base64.b64decode(meta[_SUMMARY_KEY]))
        ledger = None
        led_path = out.child("ledger", f"part-{block}.parquet")
        if led_path in ledgers:
            led = pq.read_table(led_path, filesystem=out.filesystem)
            ledger = pd.DataFrame([tuple(r.get(c) for c in LEDGER_COLUMNS)
                                   for r in _rows(led)], columns=list(LEDGER_COLUMNS))
        facts = json.loads(meta.get(_FACTS_KEY.encode(), b"{}"))
        units.append(_Unit(block, table.drop_columns(["_block"]).replace_schema_metadata(None),
                           summary, ledger, facts.get("facts"), facts.get("notes") or []))
    return units


def _merge(units: list[_Unit]) -> tuple[pd.DataFrame, Any, pd.DataFrame, list[_Unit]]:
    """The per-conversation frame in input order (by conversation id for a Dataset source,
    whose rows have no order), the summaries added up, the ledger in conversation order then
    item order, and the units kept: a block retried after it was written appears twice, one
    copy is kept."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    from maev_kit.evaluation.stages import (
        SCORE_COLUMNS,
        ScoreSummary,
        ledger_dtypes,
        ledger_frame,
    )

    units = sorted((u for u in units if u.table.num_rows), key=_Unit.first)
    ids = pa.chunked_array([u.table.column("conversation_id") for u in units])
    if pc.count_distinct(ids).as_py() != len(ids):
        units = _without_copies(units)
    # permissive: a block whose conversations have no split holds a column of nulls
    table = pa.concat_tables([u.table for u in units], promote_options="permissive")
    order = table.column("_order").to_numpy()
    if not (order[1:] > order[:-1]).all():  # pieces come whole and in order; Dataset rows not
        table = table.take(pc.sort_indices(table, [("_order", "ascending"),
                                                  ("conversation_id", "ascending")]))
    # one to_pandas of the columns: the same frame (dtypes too) as a column at a time put
    # together by pandas, which copies every column once more (0.6 s against 3.1 s at 1M)
    per_conv = table.select(list(SCORE_COLUMNS)).to_pandas()
    summary = ScoreSummary()
    for u in units:
        summary.add(u.summary)
    frames = [u.ledger for u in units if u.ledger is not None and len(u.ledger)]
    if frames:
        ledger = pd.concat(frames, ignore_index=True)
        position = dict(zip(per_conv["conversation_id"], range(len(per_conv))))
        at = ledger["conversation_id"].map(position).to_numpy()
        ledger = ledger_dtypes(ledger.iloc[np.argsort(at, kind="stable")].reset_index(drop=True))
    else:
        ledger = ledger_frame([], None)
    return per_conv, summary, ledger, units


def _without_copies(units: list[_Unit]) -> list[_Unit]:
    """The units, each conversation in one: a unit whose conversations were all seen is a
    copy (a block written again by a retried task) and left out."""
    seen: set[str] = set()
    kept = []
    for u in units:
        ids = u.table.column("conversation_id").to_pylist()
        new = [c for c in ids if c not in seen]
        if not new:
            continue
        if len(new) != len(ids):
            raise MaevError(f"block {u.block} holds {len(ids) - len(new)} conversation(s) "
                            "another block also holds: the output folder mixes runs; "
                            "pass resume=False to start over")
        seen.update(ids)
        kept.append(u)
    return kept


def _collect(out: Folder, plan: _Plan, judge: Any, judge_obj: Any, stats: dict[str, Any],
             failures: list[ShardFailure], kw: dict[str, Any], units: list[_Unit],
             fact_plan: Any) -> EvaluationResult:
    from maev_kit.evaluation.stages import aggregate_summary, judge_info, warn_result
    from maev_kit.scale._facts import check_all_known, merge_fact_infos

    if not any(u.table.num_rows for u in units):
        raise InputError("nothing to evaluate: no conversation could be scored"
                         + "".join(f"\n  {f}" for f in failures[:10]))
    per_conv, summary, ledger, used = _merge(units)
    if not failures:  # else the conversations of a given fact may be in a failed shard
        check_all_known(fact_plan, per_conv["conversation_id"])
    result = aggregate_summary(per_conv, summary, ledger, labeled_set=plan.labeled_set,
                               split=plan.split, n_resamples=kw.get("n_resamples", 2000),
                               confidence=kw.get("confidence", 0.95), seed=kw.get("seed", 0))
    result.weights = kw.get("weights")
    info = judge_info(judge_obj, judge, None)
    info["model"] = (kw.get("backend") if isinstance(kw.get("backend"), str)
                     else getattr(kw.get("backend"), "model", None))
    info["stats"] = stats
    result.judge = info
    result.provenance.update(judge_card=None, not_applicable=kw.get("not_applicable", "na"),
                             engine="ray", output_dir=str(out), failed_shards=failures)
    facts = merge_fact_infos([u.facts for u in used if u.facts is not None])
    if facts is not None:
        result.provenance["facts"] = facts
        _warn_notes(facts["notes"], [n for u in used for n in u.notes])
    if judge is not None:  # as evaluate: the rates judge-only, or corrected with a sample
        from maev_kit.evaluation.stages import estimates_for

        result.estimates, result.label_budget = estimates_for(
            ledger, labeled_set=plan.labeled_set, human_labels=kw.get("human_labels"),
            label_sample=kw.get("label_sample"), confidence=kw.get("confidence", 0.95),
            half_width=kw.get("target_half_width", 0.05))
    warn_result(result)
    return result


def _warn_notes(total: int, messages: list[str]) -> None:
    """``evaluate``'s one warning for the conversations and handoffs that got no fact."""
    if not total or not messages:
        return
    from maev_kit.errors import TraceWarning

    message = messages[0]
    if len(messages) > 1:
        message = (f"no key fact proposed for {total} conversation(s) or handoff(s), in "
                   f"{len(messages)} blocks; the first block's: {message.split(': ', 1)[-1]}")
    warnings.warn(message, TraceWarning, stacklevel=3)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, column by column (several times faster)."""
    names = table.column_names
    columns = [table.column(c).to_pylist() for c in names]
    return [dict(zip(names, values)) for values in zip(*columns)]


def _add_stats(total: dict[str, Any], stats: dict[str, Any]) -> None:
    """Sum the additive counters of the blocks' judge runs (latency percentiles are not)."""
    for k, v in stats.items():
        if isinstance(v, dict):
            _add_stats(total.setdefault(k, {}), v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and "latency" not in k:
            total[k] = total.get(k, 0) + v
