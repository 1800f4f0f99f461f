"""Where a run's traces come from and what they are scored against, planned on the driver.

This module owns the plan: a source (a Dataset, a labeled set, a list of traces, or trace
files, folders, globs and URIs as shards) turned into the units of work Ray Data maps (a
Parquet shard's row groups in runs of ``batch_size`` rows, a JSONL shard whole), each row's
``_order`` (shard index and row), the expectations and contracts they are scored against,
and what each piece is shipped of them (its own expectations, routed from a file line by
line without building records, its given facts and finished ids). A shard that cannot be
read is a :class:`ShardFailure`, left out while the run goes on.
"""

from __future__ import annotations

import glob as _glob
import os
import pickle
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, LabelValidationError
from maev_kit.internal import JsonLine, display_name
from maev_kit.scale._fs import SHARD_SUFFIXES, Shards, is_uri, list_shards

if TYPE_CHECKING:
    import pyarrow as pa


_ORDER_SHIFT = 32  # _order = shard index << 32 | row: rows of one shard stay together, in order


@dataclass(frozen=True)
class ShardFailure:
    """A shard (or a block of a Dataset) that could not be read: left out, the run goes on."""

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


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
    from maev_kit.datasets import LabeledSet, file_sha256, load_labeled_set
    from maev_kit.evaluation.stages import load_inputs, read_contracts
    from maev_kit.expectations import load_expectations
    from maev_kit.traces.internal import traces_to_table

    labeled_set = None
    if isinstance(source, LabeledSet):
        labeled_set = source
    elif isinstance(source, (str, os.PathLike)) and not _is_shards(source):
        labeled_set = load_labeled_set(source)
    # an expectations file is compared on resume by its digest (~0.8 s for a million lines;
    # expectations given as objects are digested by _ray._fingerprint)
    digest = (file_sha256(Path(expectations))[:16] if isinstance(expectations, (str, os.PathLike))
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
