"""The blocks' results gathered on the driver and aggregated into one ``EvaluationResult``.

This module owns the end of a run: the parts of an earlier run read back for a resume, the
blocks' tables put in input order (a block written twice by a retried task kept once), their
score summaries added up, the ledger concatenated in conversation order, and the aggregate
stage of ``evaluate`` called once over them, with the judge's stats summed over the blocks,
the facts provenance merged and ``evaluate``'s warnings given once.
"""

from __future__ import annotations

import json
import pickle
import warnings
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, MaevError
from maev_kit.scale._block import _FACTS_KEY, _SUMMARY_KEY, _Unit
from maev_kit.scale._fs import Folder
from maev_kit.scale._plan import ShardFailure, _Plan

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from maev_kit.evaluation import EvaluationResult


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
