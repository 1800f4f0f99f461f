"""What a command's SOURCE is when the kit itself wrote it: the one place ``maev score``,
``maev report`` and ``maev validate`` recognise a saved result folder
(:meth:`~maev_kit.evaluation.EvaluationResult.save`, docs/formats.md).

Trace files the kit wrote as Parquet (``maev convert``, ``save_traces``) are recognised where
every trace file is, by the one trace reader
(:func:`~maev_kit.traces.importers.load_any`, with
:func:`~maev_kit.traces._parquet.is_parquet_file`), so ``score``, ``report``, ``init-set``,
``sample`` and ``evaluate`` take them as they take JSONL; ``validate`` checks them row by row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from maev_kit.errors import InputError, Problem

__all__ = ["is_saved_result", "load_saved_result", "validate_saved_result"]


def is_saved_result(path: str) -> bool:
    """Whether ``path`` is a saved result folder (whole or not)."""
    from maev_kit.evaluation.internal import is_saved_result as _is

    return Path(path).is_dir() and _is(path)


def load_saved_result(path: str) -> Any:
    """The :class:`~maev_kit.evaluation.EvaluationResult` saved in ``path``; a missing,
    changed or newer table is an :class:`InputError` naming the table (exit 2)."""
    from maev_kit.evaluation import load_result

    return load_result(path)


def validate_saved_result(path: str) -> Any:
    """``maev validate``'s report on a saved result: its format and version, every table
    against the manifest's checksum, the traces it holds; counts of conversations and items."""
    from maev_kit.datasets import ValidationReport

    report = ValidationReport(path)
    try:
        result = load_saved_result(path)
    except InputError as e:
        report.errors.append(_problem(str(e)))
        return report
    report.counts = {"conversations": len(result.per_conversation),
                     "retention items": len(result.ledger), "traces": len(result.traces)}
    return report


def _problem(message: str) -> Problem:
    """``FILE › FIELD: message`` (as read_parts words it) as a located problem."""
    head, sep, rest = message.partition(": ")
    if not sep:
        return Problem(message, None, "", "invalid")
    file, _, field = head.partition(" › ")
    return Problem(file, None, field, rest)
