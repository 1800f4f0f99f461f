"""The seam of the kit's root package for its other packages (not part of the user API): the
defensive JSONL reading and append-only logs (``_jsonl``), the one rule for written files
(``_files``), the pause of the cyclic garbage collector (``_gc``), the registry through which a
data model reaches its view (``views``, from ``_views``) and the version string.

The modules behind it are the root package's own; every other package of maev_kit takes what
it needs of them from here, so what they promise the rest of the kit is named in one place.
Light: the standard library only until a JSONL name is first used (``_jsonl`` needs
pydantic; its names load on first access, so a package that imports this stays light).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from maev_kit import _views as views
from maev_kit._files import (
    BACKUP_DIR,
    HUMAN_KINDS,
    OverwriteRefused,
    atomic_write,
    backup_folder,
    check_output,
    kind_of_keys,
    output_line,
    sniff,
    write_bytes,
    write_stream,
    write_text,
)
from maev_kit._gc import frozen_heap, paused_gc
from maev_kit._version import __version__

__all__ = [
    "BACKUP_DIR", "HUMAN_KINDS", "NESTING_TOO_DEEP", "JsonLine", "OverwriteRefused",
    "__version__", "append_lines", "atomic_write", "backup_folder", "check_output",
    "display_name", "format_loc", "frozen_heap", "iter_json_lines", "kind_of_keys",
    "output_line", "paused_gc", "pydantic_problems", "read_append_log", "read_input_bytes",
    "sniff", "validated_lines", "views", "write_bytes", "write_jsonl", "write_stream",
    "write_text",
]

#: the names of ``_jsonl``, loaded on first use (it imports pydantic)
_JSONL = frozenset({"NESTING_TOO_DEEP", "JsonLine", "append_lines", "display_name", "format_loc",
                    "iter_json_lines", "pydantic_problems", "read_append_log",
                    "read_input_bytes", "validated_lines", "write_jsonl"})

if TYPE_CHECKING:
    from maev_kit._jsonl import (
        NESTING_TOO_DEEP,
        JsonLine,
        append_lines,
        display_name,
        format_loc,
        iter_json_lines,
        pydantic_problems,
        read_append_log,
        read_input_bytes,
        validated_lines,
        write_jsonl,
    )


def __getattr__(name: str) -> Any:
    if name in _JSONL:
        return getattr(importlib.import_module("maev_kit._jsonl"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
