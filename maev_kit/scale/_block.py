"""One block of conversations scored on a Ray worker, and its results written.

This module owns what runs on the workers: the :class:`_Job` shipped to them once, the
objects fetched from the object store once per worker, a block of Dataset rows (or a shard
piece, read where it is scored) turned into traces, their key facts resolved, judged, scored
and summarized by the stages of ``evaluate``, and the block's ledger and conversations parts
written under ``output_dir`` (the conversations part's metadata holds the block's
``ScoreSummary`` and facts provenance). Each block returns one small summary row to the
driver: its stats, its results pickled, or the one error that stops the run.
"""

from __future__ import annotations

import json
import pickle
import uuid
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, LabelValidationError, MaevError, Problem
from maev_kit.internal import paused_gc
from maev_kit.scale._fs import Folder, Shards, local_copy
from maev_kit.scale._plan import _ORDER_SHIFT, _Lines

if TYPE_CHECKING:
    import pyarrow as pa


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
    # (path, name) of the expectations file whose lines the pieces are shipped (see _plan._ship)
    expectation_file: tuple[str, str] | None = None
    shards: Shards | None = None  # where the pieces' paths are (their filesystem; no paths)
    run_kwargs: dict[str, Any] = field(default_factory=dict)
    score_kwargs: dict[str, Any] = field(default_factory=dict)


def _first_line(e: BaseException) -> str:
    """The error's first problem (``file:line › field: message``), and how many more."""
    problems = getattr(e, "problems", None)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return f"{problems[0]}{more}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


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
        from maev_kit.traces.internal import table_to_traces

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
    """Read shard pieces (see :func:`._plan._pieces`) and score their traces ``batch_size`` at a
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
    from maev_kit.traces.internal import read_row_groups

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
