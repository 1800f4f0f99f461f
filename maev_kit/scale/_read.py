"""Traces from any file ``maev convert`` reads: maev JSONL, Parquet or a framework export."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError


def _looks_like_maev_jsonl(path: Path) -> bool:
    """The first non-empty line is a maev-kit trace object (has ``conversation_id``)."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if raw.strip():
                    value = json.loads(raw)
                    return isinstance(value, dict) and "conversation_id" in value
    except (OSError, ValueError):
        return False
    return False


def read_any(path: str | os.PathLike[str], fmt: str = "auto") -> tuple[list[Any], list[str]]:
    """Traces from maev JSONL, Parquet or a framework export; and the import's warnings."""
    from maev_kit.traces import load_traces

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if fmt == "parquet" or (fmt == "auto" and p.suffix == ".parquet"):
        return load_traces(p), []
    if fmt == "maev" or (fmt == "auto" and _looks_like_maev_jsonl(p)):
        return load_traces(p), []
    from maev_kit.traces.importers import import_traces

    result = import_traces(p, format=fmt)
    return list(result.traces), [str(w) for w in result.warnings]
