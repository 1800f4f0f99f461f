"""Reading JSONL files defensively: bounded memory, every problem located by file and line."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from maev_kit.errors import Problem

#: Longest line read into memory. Longer lines are skipped (and reported) in bounded memory.
MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass
class JsonLine:
    """One line of a JSONL file: the parsed object, or the problem that stopped it."""

    line: int
    value: dict[str, Any] | None
    raw: bytes | None
    problem: Problem | None = None


def display_name(path: str | os.PathLike[str]) -> str:
    """The name used in messages: the path as given, never an absolute machine path."""
    p = Path(path)
    return str(p) if not p.is_absolute() else p.name


def iter_json_lines(path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES,
                    name: str | None = None) -> Iterator[JsonLine]:
    """Yield each non-blank line of a JSONL file as a :class:`JsonLine`.

    Never raises on content: non-JSON, a JSON value that is not an object, non-UTF-8 bytes, a
    truncated last line and over-long lines each become a located :class:`Problem`.
    """
    name = name or display_name(path)
    with open(path, "rb") as f:
        lineno = 0
        while True:
            chunk = f.readline(max_line_bytes + 1)
            if not chunk:
                return
            lineno += 1
            if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                size = len(chunk)
                while True:  # skip the rest of the line without holding it
                    more = f.readline(1024 * 1024)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                yield JsonLine(lineno, None, None, Problem(
                    name, lineno, "", f"line is {size:,} bytes, over the limit of "
                    f"{max_line_bytes:,} bytes; split the record or raise `max_line_bytes`"))
                continue
            last_unterminated = not chunk.endswith(b"\n")
            if not chunk.strip():
                continue
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError as e:
                yield JsonLine(lineno, None, chunk, Problem(
                    name, lineno, "", f"not valid UTF-8 (byte 0x{chunk[e.start]:02x} at column "
                    f"{e.start + 1}); save the file as UTF-8"))
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as e:
                hint = " (the last line looks truncated)" if last_unterminated else ""
                yield JsonLine(lineno, None, chunk, Problem(
                    name, lineno, "", f"not valid JSON: {e.msg} at column {e.colno}{hint}"))
                continue
            if not isinstance(value, dict):
                yield JsonLine(lineno, None, chunk, Problem(
                    name, lineno, "", f"expected a JSON object, got {_json_type(value)}"))
                continue
            yield JsonLine(lineno, value, chunk)


def _json_type(value: Any) -> str:
    return {list: "an array", str: "a string", int: "a number", float: "a number",
            bool: "a boolean", type(None): "null"}.get(type(value), type(value).__name__)


def format_loc(loc: tuple[Any, ...]) -> str:
    """``('handoffs', 2, 'to_agent')`` → ``handoffs[2] › to_agent``."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int) and parts:
            parts[-1] += f"[{item}]"
        elif isinstance(item, str) and item.startswith(("function-", "json-or-python")):
            continue  # pydantic's internal validator names
        else:
            parts.append(str(item))
    return " › ".join(parts)


def pydantic_problems(err: ValidationError, file: str, line: int | None,
                      prefix: tuple[Any, ...] = ()) -> list[Problem]:
    """Turn a pydantic ``ValidationError`` into located problems with readable messages."""
    out = []
    for e in err.errors(include_url=False):
        loc = prefix + tuple(e["loc"])
        msg = e["msg"]
        if e["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            msg = "unknown field (remove it, or put it under `metadata`)"
        elif e["type"] == "missing":
            msg = "field required"
        out.append(Problem(file, line, format_loc(loc), msg))
    return out


def write_jsonl(records: Iterator[dict[str, Any]] | list[dict[str, Any]],
                path: str | os.PathLike[str]) -> None:
    """Write records as JSONL atomically (write to a temporary file, then rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(", ", ": ")))
            f.write("\n")
    os.replace(tmp, path)
