"""``load_traces``: any file of traces the kit reads, as trace objects."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from maev_kit.errors import InputError, Problem, TraceValidationError, TraceWarning
from maev_kit.internal import display_name
from maev_kit.traces._model import MultiAgentTrace

__all__ = ["load_traces"]


def load_traces(path: str | os.PathLike[str]) -> list[MultiAgentTrace]:
    """Load a trace JSONL file (one conversation per line, docs/formats.md), a Parquet file
    when ``path`` ends in ``.parquet`` (one row per conversation), or any export the importers
    read — a chat JSONL file, an OpenAI Agents SDK trace … (detected as ``maev import auto``,
    ``maev score`` and ``maev validate`` detect it, docs/importers.md).

    All problems of the file are collected and raised together as one
    :class:`~maev_kit.errors.TraceValidationError` (a file of no known shape: one problem
    naming the shapes the kit reads); non-fatal findings and what an import could not map are
    issued as one :class:`~maev_kit.errors.TraceWarning`.

    >>> import tempfile, os
    >>> from maev_kit.traces import save_traces
    >>> p = os.path.join(tempfile.mkdtemp(), "t.jsonl")
    >>> save_traces([MultiAgentTrace("c-1")], p)
    >>> [t.conversation_id for t in load_traces(p)]
    ['c-1']
    """
    if str(path).endswith(".parquet"):  # columnar traces (docs/formats.md), needs pyarrow
        from maev_kit.traces._parquet import load_parquet

        return load_parquet(path)
    from maev_kit.traces.importers import load_any

    name = display_name(path)
    if not Path(path).exists():
        raise TraceValidationError([Problem(name, None, "", "file not found")])
    try:
        traces, warns = load_any(path)
    except TraceValidationError:
        raise
    except InputError as e:  # one problem of the whole file, named as the others are
        message = str(e)
        for prefix in (f"{name}: ", f"{Path(path).name}: "):
            message = message.removeprefix(prefix)
        raise TraceValidationError([Problem(name, None, "", message)]) from None
    if warns:
        shown = "\n".join(f"  {w}" for w in warns[:10])
        more = f"\n  … and {len(warns) - 10} more" if len(warns) > 10 else ""
        warnings.warn(f"{len(warns)} warning(s) in {name}:\n{shown}{more}",
                      TraceWarning, stacklevel=2)
    return traces
