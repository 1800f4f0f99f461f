"""The one rule for every file the kit writes.

Two kinds of file:

- **A person's work**: labels, fact-review decisions, expectations (a person wrote them or
  reviewed their facts), judge cards, proposed facts a person reviewed. No command ever
  replaces one: an output path that holds one is refused (exit 2), ``--force`` or not.
  Re-initialising a labeled set carries them over and keeps the old files in a backup folder
  (``<set>/.maev-backup/<timestamp>/``).
- **Derived output**: reports, scores and ledgers (CSV, JSONL, Parquet), imported or converted
  traces, calibration tables. A command replaces one only when the file there is one the kit
  itself wrote *of the same kind* (recognised by its content: an HTML report's footer, a scores
  table's columns, trace lines with ``conversation_id`` and ``turns`` …) and then says so
  (``replaced: PATH``). Anything else at the path — another kind of kit file, or a file the kit
  does not recognise — is refused with exit 2 unless the command is given ``--force``.

Every write is atomic: the content goes to a temporary file in the same folder, is flushed to
disk, then renamed over the target (``os.replace``), so a crash leaves either the old file or
the new one, never half of either.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> labels = os.path.join(folder, "labels.jsonl")
>>> _ = open(labels, "w").write('{"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost"}\\n')
>>> sniff(labels).what
'a labels file (1 label)'
>>> check_output(labels, "scores", "--out")
Traceback (most recent call last):
...
maev_kit._files.OverwriteRefused: --out ...labels.jsonl: holds a labels file (1 label), a person's work, which maev-kit never replaces; write to another path
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from maev_kit.errors import InputError

__all__ = [
    "BACKUP_DIR",
    "DERIVED_KINDS",
    "HUMAN_KINDS",
    "Existing",
    "OverwriteRefused",
    "atomic_write",
    "backup_folder",
    "check_output",
    "output_line",
    "sniff",
    "write_bytes",
    "write_text",
]

#: The folder inside a labeled set where re-initialising keeps the previous human work.
BACKUP_DIR = ".maev-backup"

#: Kinds of file that hold a person's work: never replaced by any command.
HUMAN_KINDS: dict[str, str] = {
    "labels": "a labels file",
    "reviews": "a fact-review decisions file",
    "expectations": "an expectations file",
    "card": "a judge card",
    "reviewed-facts": "a facts file with facts a person reviewed",
}

#: Kinds of file the kit derives from its inputs: replaceable by a command of the same kind.
DERIVED_KINDS: dict[str, str] = {
    "report": "an HTML report",
    "scores": "a scores table",
    "ledger": "a retention ledger",
    "traces": "a trace file",
    "facts": "a proposed-facts file",
    "calibration": "a calibration table",
}

#: Names a labeled set gives its human files: even empty, they are a person's (future) work.
_HUMAN_NAMES = {"labels.jsonl": "labels", "fact_reviews.jsonl": "reviews",
                "expectations.jsonl": "expectations", "judge_card.json": "card"}

#: How :func:`sniff` describes an empty file (not a labeled set's human file): replaceable.
EMPTY = "an empty file"

#: How much of a file is read to recognise it.
_PEEK_BYTES = 1 << 20


class OverwriteRefused(InputError):
    """A command or call would replace a file it must not (a person's work, or a file that
    is not the kit's output of the same kind)."""


@dataclass(frozen=True)
class Existing:
    """What an existing file is, as far as the kit can tell from its content."""

    kind: str | None  #: a key of HUMAN_KINDS or DERIVED_KINDS; None: not recognised
    what: str  #: for messages: "a labels file (40 labels)"

    @property
    def human(self) -> bool:
        """True when the file holds a person's work."""
        return self.kind in HUMAN_KINDS


def kind_of_keys(keys: set[str]) -> str | None:
    """The kind of a JSON record / table with these top-level keys or columns."""
    if {"item_id", "annotator", "label"} <= keys:
        return "labels"
    if {"fact_id", "reviewer", "decision"} <= keys:
        return "reviews"
    if {"judge_name", "judge_version"} <= keys:
        return "card"
    if "conversation_id" in keys and "turns" in keys:
        return "traces"
    if {"conversation_id", "composite"} <= keys or {"conversation_id", "n_handoffs",
                                                   "retention_rate"} <= keys:
        return "scores"
    if {"item_id", "fact_id", "label"} <= keys:
        return "ledger"
    if {"fact_id", "proposer", "conversation_id"} <= keys:
        return "facts"
    if "conversation_id" in keys and keys & {"key_facts", "handoffs", "routing"}:
        return "expectations"
    if {"judge", "kappa"} <= keys:
        return "calibration"
    return None


def _peek(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(_PEEK_BYTES)


def _first_json(text: str) -> Any:
    """The first JSON value of a JSONL text (its first non-blank line), else the whole text as
    one JSON document, else None."""
    for line in text.splitlines():
        if line.strip():
            try:
                return json.loads(line)
            except (ValueError, RecursionError):
                break
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def sniff(path: str | os.PathLike[str]) -> Existing | None:
    """What the file at ``path`` is (None when nothing is there).

    Recognised by content, never by name alone: an HTML report by the kit's footer, a table by
    its columns (CSV header, Parquet schema, JSONL keys), a judge card by its fields. A file
    named like a labeled set's human file (``labels.jsonl``, ``fact_reviews.jsonl``,
    ``expectations.jsonl``, ``judge_card.json``) that is empty counts as that human file.
    """
    p = Path(path)
    if not p.exists() or p.is_dir():
        return None
    try:
        head = _peek(p)
    except OSError:
        return Existing(None, "a file that cannot be read")
    if not head.strip():
        named = _HUMAN_NAMES.get(p.name)
        if named is not None:
            return Existing(named, f"{HUMAN_KINDS[named]} (empty, waiting for a person's work)")
        return Existing(None, EMPTY)
    if head.startswith(b"PAR1"):
        return _sniff_parquet(p)
    text = head.decode("utf-8-sig", errors="replace")
    lower = text.lstrip().lower()
    if lower.startswith(("<!doctype html", "<html")):
        tail = _tail(p)
        if "maev-kit" in tail and "self-contained report" in tail:
            return Existing("report", DERIVED_KINDS["report"] + " written by maev-kit")
        return Existing(None, "an HTML page not written by maev-kit")
    value = _first_json(text)
    if isinstance(value, dict):
        kind = kind_of_keys(set(value))
    elif value is None and "," in text.split("\n", 1)[0]:
        header = text.split("\n", 1)[0].strip().strip("\r")
        kind = kind_of_keys({c.strip().strip('"') for c in header.split(",")})
    else:
        kind = None
    if kind is None:
        return Existing(None, "a file maev-kit did not write")
    return _described(p, kind, text)


def _tail(p: Path, size: int = 4096) -> str:
    with open(p, "rb") as f:
        f.seek(max(0, p.stat().st_size - size))
        return f.read().decode("utf-8", errors="replace")


def _sniff_parquet(p: Path) -> Existing:
    try:
        import pyarrow.parquet as pq

        names = set(pq.read_schema(p).names)
    except Exception:  # noqa: BLE001 - an unreadable Parquet file is simply not recognised
        return Existing(None, "a Parquet file maev-kit cannot read")
    kind = kind_of_keys(names)
    if kind is None:
        return Existing(None, "a Parquet file maev-kit did not write")
    return Existing(kind, (HUMAN_KINDS | DERIVED_KINDS)[kind] + " (Parquet)")


def _described(p: Path, kind: str, text: str) -> Existing:
    if kind == "labels":
        return Existing(kind, f"a labels file ({_plural(_count_lines(p), 'label')})")
    if kind == "reviews":
        return Existing(kind, f"a fact-review decisions file "
                              f"({_plural(_count_lines(p), 'decision')})")
    if kind == "expectations":
        return Existing(kind, f"an expectations file "
                              f"({_plural(_count_lines(p), 'conversation')})")
    if kind == "facts":
        with open(p, encoding="utf-8", errors="replace") as f:
            reviewed = sum('"reviewed": true' in line for line in f)
        if reviewed:
            return Existing("reviewed-facts", f"a facts file with "
                                              f"{_plural(reviewed, 'fact')} a person reviewed")
    if kind == "traces":
        return Existing(kind, f"a trace file ({_plural(_count_lines(p), 'conversation')})")
    return Existing(kind, (HUMAN_KINDS | DERIVED_KINDS)[kind])


def check_output(path: str | os.PathLike[str] | None, kind: str, option: str, *,
                 force: bool = False) -> bool:
    """Decide, before any work, whether ``path`` may receive a new file of ``kind``.

    Returns True when a file is there and will be replaced (the command then says
    ``replaced: PATH``), False when nothing is there. Raises :class:`OverwriteRefused` (exit 2,
    one line) when the file holds a person's work (always), or when it is not the kit's output
    of ``kind`` and ``force`` is false (the message spells ``--force``).
    """
    if path is None:
        return False
    found = sniff(path)
    if found is None:
        return False
    shown = f"{option} {os.fspath(path)}" if option else os.fspath(path)
    if found.human:
        raise OverwriteRefused(f"{shown}: holds {found.what}, a person's work, which maev-kit "
                               "never replaces; write to another path")
    if found.kind == kind or force or found.what == EMPTY:
        return True  # (an empty file holds nothing to lose)
    want = DERIVED_KINDS.get(kind, kind)
    raise OverwriteRefused(f"{shown}: already exists and is {found.what}, not {want} this "
                           f"command writes; pass --force to replace it, or write to another "
                           "path")


def output_line(path: str | os.PathLike[str], replaced: bool) -> str:
    """``written: PATH`` or ``replaced: PATH`` — how every command names what it wrote."""
    return f"{'replaced' if replaced else 'written'}: {os.fspath(path)}"


def _tmp_name(p: Path) -> Path:
    return p.with_name(f".{p.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}{p.suffix}")


def atomic_write(path: str | os.PathLike[str], write: Callable[[Path], object], *,
                 make_parents: bool = True) -> Path:
    """Write ``path`` atomically: ``write(tmp)`` fills a temporary file in the same folder,
    which is flushed to disk and renamed over ``path``. Parent folders are created (unless
    ``make_parents`` is false). On any
    error the temporary file is removed and ``path`` is untouched; OS errors name ``path``.

    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "sub" / "a.txt"
    >>> atomic_write(p, lambda tmp: tmp.write_text("hi")).read_text()
    'hi'
    """
    shown = os.fspath(path)
    p = Path(path)
    if p.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", shown)
    tmp = _tmp_name(p)
    try:
        if make_parents:
            p.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        _fsync(tmp)
        os.replace(tmp, p)
    except OSError as e:
        _remove_quietly(tmp)
        raise type(e)(e.errno, e.strerror or str(e), shown) from None
    except BaseException:
        _remove_quietly(tmp)
        raise
    return p


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` as UTF-8 with ``\\n`` line ends, atomically."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    return atomic_write(path, write)


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` atomically."""
    return atomic_write(path, lambda tmp: tmp.write_bytes(data))


def write_stream(path: str | os.PathLike[str], fill: Callable[[IO[str]], None], *,
                 make_parents: bool = True) -> Path:
    """Write text atomically through ``fill(file)`` (UTF-8, ``\\n`` line ends)."""
    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            fill(f)
    return atomic_write(path, write, make_parents=make_parents)


def _fsync(p: Path) -> None:
    try:
        fd = os.open(p, os.O_RDONLY)
    except OSError:  # pragma: no cover - the file was just written
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse fsync
        pass
    finally:
        os.close(fd)


def _remove_quietly(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass


def backup_folder(root: str | os.PathLike[str]) -> Path:
    """A new, empty ``<root>/.maev-backup/<timestamp>/`` folder (a suffix keeps it unique)."""
    base = Path(root) / BACKUP_DIR
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        p = base / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            p.mkdir(parents=True)
            return p
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "too many backups in one second", str(base))
