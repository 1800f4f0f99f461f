"""Reading JSONL files defensively: bounded memory, every problem located by file and line."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from maev_kit.errors import InputError, Problem

try:  # POSIX; on other systems O_APPEND alone keeps single-write lines whole
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

_T = TypeVar("_T")

#: The message for JSON nested deeper than the parser can follow (``[[[[...``).
NESTING_TOO_DEEP = ("JSON nesting too deep (arrays or objects nested hundreds of levels); "
                    "no maev-kit record nests more than a few levels")

#: Longest line read into memory. Longer lines are skipped (and reported) in bounded memory.
MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass
class JsonLine:
    """One line of a JSONL file: the parsed object, or the problem that stopped it."""

    line: int
    value: dict[str, Any] | None
    raw: bytes | None
    problem: Problem | None = None
    offset: int = -1  # where the line starts in its file (-1: unknown)


def display_name(path: str | os.PathLike[str]) -> str:
    """The name used in messages: the path as given, never an absolute machine path."""
    p = Path(path)
    return str(p) if not p.is_absolute() else p.name


def read_input_bytes(path: str | os.PathLike[str], what: str, folder_hint: str) -> bytes:
    """The bytes of a file the user named; :class:`~maev_kit.errors.InputError` naming
    ``what`` and the file when it is a folder (with ``folder_hint``: what to pass instead) or
    cannot be read.

    >>> import tempfile
    >>> read_input_bytes(tempfile.mkdtemp(), "judge card", "pass the card's JSON file")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: judge card ... is a folder; pass the card's JSON file
    """
    name = os.fspath(path)
    if os.path.isdir(name):
        raise InputError(f"{what} {name} is a folder; {folder_hint}")
    try:
        with open(name, "rb") as f:
            return f.read()
    except OSError as exc:
        raise InputError(f"{what} {name}: {exc.strerror or exc}") from None


def iter_json_lines(path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES,
                    name: str | None = None) -> Iterator[JsonLine]:
    """Yield each non-blank line of a JSONL file as a :class:`JsonLine`.

    Never raises on content: non-JSON, a JSON value that is not an object, non-UTF-8 bytes, a
    truncated last line and over-long lines each become a located :class:`Problem`.
    """
    name = name or display_name(path)
    for jl in iter_raw_lines(path, max_line_bytes=max_line_bytes, name=name):
        yield jl if jl.problem is not None else parse_json_line(jl, name)


def iter_raw_lines(path: str | os.PathLike[str], *, max_line_bytes: int = MAX_LINE_BYTES,
                   name: str | None = None, start: int = 0, lines_before: int = 0
                   ) -> Iterator[JsonLine]:
    """Each non-blank line of a file, unparsed: a :class:`JsonLine` with ``raw`` and
    ``offset`` (where the line starts in the file), or the problem of a line too long to hold
    (skipped in bounded memory) or of a binary file (the last line yielded).
    :func:`parse_json_line` parses one. ``start``: the offset of a line to begin at, with
    ``lines_before`` lines before it (for the line numbers)."""
    name = name or display_name(path)
    with open(path, "rb") as f:
        f.seek(start)
        lineno, offset = lines_before, start
        while True:
            chunk = f.readline(max_line_bytes + 1)
            if not chunk:
                return
            lineno += 1
            start, offset = offset, offset + len(chunk)
            if len(chunk) > max_line_bytes and not chunk.endswith(b"\n"):
                size = len(chunk)
                while True:  # skip the rest of the line without holding it
                    more = f.readline(1024 * 1024)
                    size += len(more)
                    if not more or more.endswith(b"\n"):
                        break
                offset = start + size
                yield JsonLine(lineno, None, None, Problem(
                    name, lineno, "", f"line too long: {size:,} bytes, over the limit of "
                    f"{max_line_bytes:,} bytes per record; split the record (a trace "
                    "usually needs well under 1 MB)"), start)
                continue
            if not chunk.strip():
                continue
            if b"\x00" in chunk:  # never in JSON text: a binary file, not worth reading on
                column = chunk.index(b"\x00") + 1
                yield JsonLine(lineno, None, chunk, Problem(
                    name, lineno, "", f"binary data (a NUL byte at column {column}): not a "
                    "JSONL text file"), start)
                return
            yield JsonLine(lineno, None, chunk, None, start)


def parse_json_line(jl: JsonLine, name: str) -> JsonLine:
    """Parse the line ``jl.raw`` (as :func:`iter_raw_lines` yields it), in place: ``value``
    set, or the located ``problem`` of a line that is not UTF-8, not JSON or not a JSON
    object. Returns ``jl``."""
    chunk = jl.raw
    assert chunk is not None
    if chunk.startswith(b"\xef\xbb\xbf") and jl.line == 1:  # a byte-order mark is not content
        chunk = chunk[3:]
    try:
        value = json.loads(chunk.decode("utf-8"))
    except UnicodeDecodeError as e:
        message = (f"not valid UTF-8 (byte 0x{chunk[e.start]:02x} at column {e.start + 1}); "
                   "save the file as UTF-8")
    except json.JSONDecodeError as e:
        hint = " (the last line looks truncated)" if not chunk.endswith(b"\n") else ""
        # json says "Invalid control character at": the column follows
        message = f"not valid JSON: {e.msg.removesuffix(' at')} at column {e.colno}{hint}"
    except RecursionError:
        message = NESTING_TOO_DEEP
    else:
        if isinstance(value, dict):
            jl.value = value
            return jl
        message = f"expected a JSON object, got {json_type(value)}"
    jl.problem = Problem(name, jl.line, "", message)
    return jl


def json_type(value: Any) -> str:
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
        elif e["type"] == "value_error":  # our own validator's words, without pydantic's prefix
            msg = str(msg).removeprefix("Value error, ")
        out.append(Problem(file, line, format_loc(loc), msg))
    return out


def validated_lines(lines: Iterable[JsonLine], validate: Callable[[Any], _T], name: str,
                    problems: list[Problem]) -> Iterator[tuple[int, _T]]:
    """``(line, record)`` for each line that parses and passes ``validate`` (a pydantic
    validator); every other line appends its located problems to ``problems`` instead, in file
    order with whatever the caller appends while iterating.

    >>> from pydantic import TypeAdapter
    >>> rows = [JsonLine(1, {"n": 1}, None), JsonLine(2, {"n": "x"}, None)]
    >>> found: list[Problem] = []
    >>> list(validated_lines(rows, TypeAdapter(dict[str, int]).validate_python, "f.jsonl", found))
    [(1, {'n': 1})]
    >>> [str(p) for p in found]
    ['f.jsonl:2 › n: Input should be a valid integer, unable to parse string as an integer']
    """
    for jl in lines:
        if jl.problem is not None:
            problems.append(jl.problem)
            continue
        try:
            rec = validate(jl.value)
        except ValidationError as e:
            problems.extend(pydantic_problems(e, name, jl.line))
            continue
        yield jl.line, rec


def write_jsonl(records: Iterator[dict[str, Any]] | list[dict[str, Any]],
                path: str | os.PathLike[str], *, kind: str | None = None) -> None:
    """Write records as JSONL atomically (a temporary file in the same folder, then
    ``os.replace``; see :mod:`maev_kit._files`).

    An existing file at ``path`` is only replaced once every record is written, and never
    when it holds a person's work of another kind than ``kind`` (labels, review decisions and
    judge cards always; expectations and reviewed facts too when ``kind`` names another kind):
    :class:`~maev_kit._files.OverwriteRefused` then. Errors name ``path`` as given, never the
    temporary file:

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_jsonl([{"a": 1}], folder)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    IsADirectoryError: [Errno 21] is a folder, not a file: '...'
    """
    from maev_kit._files import OverwriteRefused, sniff, write_stream

    shown = os.fspath(path)
    if Path(path).is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", shown)
    found = sniff(path)
    never = {"labels", "reviews", "card"} if kind is None else {"labels", "reviews", "card",
                                                                "expectations",
                                                                "reviewed-facts"} - {kind}
    if found is not None and found.kind in never:
        raise OverwriteRefused(f"{shown}: holds {found.what}, a person's work, which "
                               "maev-kit never replaces; write to another path")

    def fill(f: Any) -> None:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False, separators=(", ", ": ")))
            f.write("\n")

    write_stream(path, fill, make_parents=False)


# --------------------------------------------------------------------------- append-only logs
def read_append_log(path: str | os.PathLike[str], *, name: str | None = None
                    ) -> tuple[list[JsonLine], Problem | None]:
    """Read an append-only JSONL log (labels, review decisions): ``(lines, torn_last_line)``.

    A last line without a newline that does not parse is a *torn write* (a crash mid-write,
    never acknowledged): it is left out of ``lines`` and returned as a warning
    :class:`Problem`. Every other line, problems included, is in ``lines``. Never raises on
    content.
    """
    name = name or display_name(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size:
            f.seek(size - 1)
            ends_with_newline = f.read(1) == b"\n"
        else:
            ends_with_newline = True
    lines = list(iter_json_lines(path, name=name))
    if lines and lines[-1].problem is not None and not ends_with_newline:
        torn = lines.pop()
        return lines, Problem(name, torn.line, "", "torn last line (an interrupted write); "
                              "ignored", "warning")
    return lines, None


def append_lines(path: str | os.PathLike[str], lines: Sequence[bytes]) -> bool:
    """Append whole lines to an append-only log; returns once they are on disk.

    Each line (bytes ending in a newline) is one ``os.write`` on a descriptor opened with
    ``O_APPEND``, under an exclusive ``flock``, and the file is ``fsync``-ed before returning,
    so concurrent writers never interleave and an acknowledged line survives a crash. A torn
    last line left by an earlier crash is cut off first, so the file stays valid JSONL.
    Returns True when such a torn line was cut.
    """
    if not lines:
        return False
    path = Path(path)
    for data in lines:
        if not data.endswith(b"\n") or b"\n" in data[:-1]:
            raise ValueError("each line must be bytes ending in one newline")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            cut = _cut_torn_tail(fd)
            for data in lines:
                written = os.write(fd, data)
                if written != len(data):  # pragma: no cover - disk full and the like
                    raise OSError(f"short write to {display_name(path)}: "
                                  f"{written} of {len(data)} bytes")
            os.fsync(fd)
        finally:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return cut


def _cut_torn_tail(fd: int) -> bool:
    """If the file does not end with a newline, cut the unacknowledged torn fragment.

    A last line that is a whole JSON value (a file saved by an editor without the final
    newline) is no torn write: it gets its newline and stays. Only a fragment that does not
    parse — what an interrupted write leaves — is cut.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return False
    end = size
    while end > 0:  # look back for the last newline, 64 KiB at a time
        start = max(0, end - 65536)
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return _end_line(fd, start + cut + 1, size)
        end = start
    return _end_line(fd, 0, size)


def _end_line(fd: int, start: int, size: int) -> bool:
    """End the last line (from ``start``): a newline after a whole JSON value, else cut it."""
    if size - start <= MAX_LINE_BYTES:
        try:
            json.loads(os.pread(fd, size - start, start))
        except (ValueError, RecursionError):
            pass
        else:
            os.write(fd, b"\n")
            return False
    os.ftruncate(fd, start)
    return True
