"""``evaluate_dataset``: the per-conversation stage of ``evaluate`` mapped over Ray Data blocks.

This module owns the run as the driver sees it: the options checked, Ray started (and warmed
up while the driver plans), the judge resolved, the run's fingerprint and ``output_dir``
prepared for a resume, the blocks mapped and their results gathered as they finish. Where
the traces come from is :mod:`._plan`, what a block does on a worker :mod:`._block`, and the
aggregate over the blocks' results :mod:`._collect`.

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

import json
import logging
import os
import pickle
import tempfile
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.internal import frozen_heap, paused_gc
from maev_kit.scale._block import _Job, _ScoreBlock, _ScorePieces, _Unit
from maev_kit.scale._collect import _add_stats, _collect, _read_old_parts, _read_parts
from maev_kit.scale._fs import Folder, local_file
from maev_kit.scale._plan import ShardFailure, _Plan, _plan, _ship

if TYPE_CHECKING:
    import pyarrow as pa

    from maev_kit.evaluation import EvaluationResult

__all__ = ["ShardFailure", "evaluate_dataset"]


_SCORE_KWARGS = ("triage_agent", "max_handoffs", "weights", "not_applicable")
_OTHER_KWARGS = ("n_resamples", "confidence", "seed", "backend", "prompt", "cache",
                 "max_concurrency", "timeout", "split", "progress", "human_labels",
                 "label_sample", "target_half_width")


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
    import maev_kit.traces.internal  # noqa: F401


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
