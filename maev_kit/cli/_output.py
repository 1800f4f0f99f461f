"""What the ``maev`` commands print and write: JSON and tables on stdout, the judge and facts
lines, and the checks that an output path can be written before any work starts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from maev_kit.errors import InputError

FRAME_SUFFIXES = (".csv", ".jsonl", ".parquet")


def _echo_json(obj: Any) -> None:
    """``obj`` as standard JSON: NaN (n/a, no interval) is ``null``, never the ``NaN`` token
    that strict JSON readers refuse. A JSON object gets the command's notes so far as its
    ``warnings`` list (they are printed on stderr too)."""
    from maev_kit.cli._notes import collected

    if isinstance(obj, dict) and "warnings" not in obj:
        obj = {**obj, "warnings": collected()}
    click.echo(json.dumps(_nan_to_none(obj), indent=2, default=_json_default,
                          allow_nan=False))


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if np.isnan(o) else float(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _frame_text(df: Any, max_rows: int = 30) -> str:
    import pandas as pd

    with pd.option_context("display.max_columns", 20, "display.width", 120,
                           "display.float_format", "{:.3f}".format):
        return df.to_string(max_rows=max_rows)


def _causes(stats: dict[str, Any]) -> str:
    by = stats.get("errors_by_cause") or stats.get("errors_by_kind") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(by.items(), key=lambda kv: -kv[1]))


def _judge_line(judge: dict[str, Any]) -> str:
    """``judge: heuristic (1-…), offline: 0 requests, 0 cache hits, 0 errors``."""
    stats = judge.get("stats") or {}
    model = f"model {judge['model']}" if judge.get("model") else "offline"
    gen = ", ".join(f"{k} {v}" for k, v in (stats.get("generation") or {}).items())
    where = f" at {stats['endpoint']}" if stats.get("endpoint") else ""
    model += f"{where} ({gen})" if gen else where
    n_err = stats.get("errors") or 0
    errors = f"{n_err} error{'s' if n_err != 1 else ''}" + (
        f" ({_causes(stats)})" if n_err and _causes(stats) else "")
    version = f" ({judge['version']})" if judge.get("version") else ""
    requests, hits = stats.get("requests") or 0, stats.get("cache_hits") or 0
    return (f"judge: {judge.get('name')}{version}, {model}: {requests} requests, "
            f"{hits} cache hits, {errors}")


def _error_summary_line(result: Any) -> str | None:
    """The result's "retention over N of M facts; K failed (...)" line when something failed."""
    summary = getattr(result, "judge_errors", None)
    # (bool(): in a condition mypy infers getattr's bool overload and rejects the int default)
    if summary is not None and bool(getattr(summary, "failed", 0)):
        return f"warning: {summary}"
    return None


def _failed_judges(result: Any) -> dict[str, str]:
    """Leaderboard key → ``"failed: auth (6 of 6 items) — what to do"`` for each judge whose
    calls failed (the leaderboard's ``status``): their κ is not a result."""
    from collections import Counter

    from maev_kit.calibration.internal import CAUSE_FIXES, lost_items_note

    out: dict[str, str] = {}
    board = result.leaderboard
    if "status" not in board.columns:
        return out
    for key, status in zip(board["key"], board["status"]):
        if status == "ok":
            continue
        if key not in result.runs:  # not run: the status says why and what to do
            out[str(key)] = str(status)
            continue
        stats = getattr(result.runs.get(key), "stats", None) or {}
        by_cause = Counter(stats.get("errors_by_cause") or {})
        top = by_cause.most_common(1)[0][0] if by_cause else "other"
        fix = stats.get("unavailable") or "; ".join(
            x for x in (lost_items_note(stats), CAUSE_FIXES.get(top, "")) if x)
        out[str(key)] = f"{status} — {fix}" if fix else str(status)
    return out


def _over_threshold(result: Any, max_share: float) -> dict[str, str]:
    """Judges ranked (status ok) whose share of failed items still exceeds ``max_share``."""
    out: dict[str, str] = {}
    failed = _failed_judges(result)
    for key, run in result.runs.items():
        stats = getattr(run, "stats", None) or {}
        n, errors = stats.get("items", 0), stats.get("errors", 0)
        if key not in failed and n and errors / n > max_share:
            out[str(key)] = (f"{errors} of {n} items failed ({_causes(stats)}), over "
                             f"--max-judge-errors {max_share:g}; its κ covers the others")
    return out


def _best_working(result: Any, failed: dict[str, str]) -> str | None:
    """The recommended judge, else the best ranked one that did not fail."""
    if result.recommended is not None and result.recommended not in failed:
        return result.recommended
    keys = [k for k in result.leaderboard["key"] if k not in failed]
    return keys[0] if keys else None


def _output_file(path: str | None, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """Fail before any work when ``path`` cannot be written as a file of one of ``suffixes``."""
    if path is None:
        return
    p = Path(path)
    if not path.strip():
        raise InputError(f"{option} is empty; give a file path")
    if p.is_dir():
        example = p / ("report.html" if ".html" in suffixes else f"out{suffixes[0]}"
                       if suffixes else "out")
        raise InputError(f"{option} {path}: is a folder; give a file path such as {example}")
    if suffixes and p.suffix.lower() not in suffixes:
        raise InputError(f"{option} {path}: unknown output type {p.suffix or '(none)'!r}; use "
                         + ", ".join(suffixes))
    if p.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(f"{option} {path}: writing parquet needs pyarrow "
                             "(pip install pyarrow); or use .csv") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{option} {path}: permission denied; cannot overwrite it")
    _writable_parent(p.parent, option, path)


def _output_folder(path: str | None, option: str) -> None:
    """Fail before any work when ``path`` cannot be (or become) a writable folder."""
    if path is None:
        return
    p = Path(path)
    if not path.strip():
        raise InputError(f"{option} is empty; give a folder")
    if p.exists() and not p.is_dir():
        raise InputError(f"{option} {path}: is a file, not a folder; give a folder to write into")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError(f"{option} {path}: permission denied; cannot write into it")
        return
    _writable_parent(p.parent, option, path)


def _writable_parent(parent: Path, option: str, path: str) -> None:
    """The nearest existing ancestor must be a writable folder (missing ones are created)."""
    anc = parent if str(parent) else Path(".")
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"{option} {path}: {anc} is a file, not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: permission denied; cannot write in {anc}")


def _input_file(path: str, option: str, what: str) -> Path:
    """``path`` as a Path when it is a file; else one error naming the option and the path."""
    p = Path(path)
    where = f"{option} {path}" if option else path
    if p.is_dir():
        raise InputError(f"{where}: is a folder; give the {what} file")
    if not p.is_file():
        raise InputError(f"{where}: no such file")
    return p


def _facts_line(result: Any) -> str | None:
    """``facts: 12 offline, 2 context; 1 conversation without any`` (None without facts)."""
    info = (result.provenance or {}).get("facts")
    if not info:
        return None
    by = ", ".join(f"{n} {src}" for src, n in info["by_source"].items()) or "none"
    none = info.get("conversations_without_facts", 0)
    return (f"facts ({info['mode']}): {by}"
            + (f"; {none} conversation{'s' if none != 1 else ''} without any" if none else ""))


def _echo_run_lines(result: Any) -> None:
    """Echo how the result was judged: the judge line, the facts line (when there are facts)
    and, on stderr, the warning when judge calls failed."""
    click.echo(_judge_line(result.judge))
    facts_line = _facts_line(result)
    if facts_line:
        click.echo(facts_line)
    warn = _error_summary_line(result)
    if warn:
        from maev_kit.cli._notes import note

        note(warn)


def _na(df: Any) -> Any:
    """Show NaN as n/a in text tables."""
    return df.astype(object).where(df.notna(), "n/a")


def _write_frame(df: Any, path: str | Path) -> bool:
    """Write a table atomically (see :mod:`maev_kit._files`) as Parquet, JSONL or CSV by
    the suffix of ``path``."""
    from maev_kit.internal import atomic_write

    suffix = Path(path).suffix.lower()

    def write(tmp: Path) -> None:
        if suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        elif suffix == ".jsonl":
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            df.to_csv(tmp, index=False)

    atomic_write(path, write)
    return True


def rows_on_disk(path: str | Path) -> int:
    """How many rows the table file at ``path`` holds, read back (Parquet's metadata, JSONL's
    lines, CSV's records), so what a command says it wrote is what is on disk."""
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return int(pq.ParquetFile(path).metadata.num_rows)
    if suffix == ".jsonl":
        with open(path, "rb") as fh:
            return sum(1 for line in fh if line.strip())
    import pandas as pd

    return len(pd.read_csv(path))


def _estimates_text(estimates: Any) -> str:
    """The retention rates over all handoffs, judge-only beside human-only and PPI++ (each
    with its interval), or the one line saying they are judge-only and why."""
    if estimates is None or not len(estimates):
        return ""
    rows = estimates[estimates["scope"] == "all"]
    methods = list(dict.fromkeys(rows["method"]))
    if methods == ["judge-only"]:
        note = str(rows["note"].iloc[0])
        return "retention rates: " + note
    conf = "95 %"
    lines = [f"retention rates over all handoffs ({conf} CI; n labeled items of a random "
             "sample, N judged only; docs/estimates.md):"]
    width = 22
    lines.append(" " * 14 + "".join(m.ljust(width) for m in methods) + "n / N")
    for rate, part in rows.groupby("rate", sort=False):
        cells = []
        for m in methods:
            got = part[part["method"] == m]
            cells.append(_estimate_cell(got.iloc[0]) if len(got) else "—")
        ppi = part[part["method"] == "ppi++"]
        nn = f"{int(ppi['n'].iloc[0])} / {int(ppi['N'].iloc[0])}" if len(ppi) else ""
        lines.append(f"{rate:<14}" + "".join(c.ljust(width) for c in cells) + nn)
    notes = sorted({str(n) for n in rows["note"] if n and "not corrected" not in str(n)})
    lines.extend(f"  note: {n}" for n in notes)
    return "\n".join(lines)


def _estimate_cell(row: Any) -> str:
    import math

    est, lo, hi = row["estimate"], row["ci_low"], row["ci_high"]
    if est is None or (isinstance(est, float) and math.isnan(est)):
        return "n/a"
    if lo is None or (isinstance(lo, float) and math.isnan(lo)):
        return f"{est:.3f} (no CI)"
    return f"{est:.3f} ({lo:.3f}–{hi:.3f})"


def _budget_text(budget: Any) -> str:
    """``label budget for ± 0.05 …``: the labels each rate needs, from the labels so far."""
    if budget is None or not len(budget):
        return ""
    first = budget.iloc[0]
    parts = []
    for row in budget.to_dict("records"):
        if row["labels_needed"] is None or row["labels_needed"] != row["labels_needed"]:
            parts.append(f"{row['rate']} n/a ({row['note']})")
        else:
            parts.append(f"{row['rate']} {int(row['labels_needed'])} "
                         f"({int(row['more_labels'])} more; people alone "
                         f"{int(row['labels_needed_without_judge'])})")
    return (f"label budget for ± {first['target_half_width']:.2f} (PPI++, planned from the "
            f"{int(first['labeled_now'])} sampled labels so far): " + "; ".join(parts))
