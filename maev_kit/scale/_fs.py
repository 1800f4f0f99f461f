"""Where a Ray run reads and writes: a local path, or a URI (``s3://``, ``gs://``, ``hdfs://``,
``abfs://``, ``file://`` …) that :func:`pyarrow.fs.FileSystem.from_uri` resolves.

- :func:`list_shards`: the trace files of a file, folder or glob (:class:`Shards`);
- :func:`local_file`: an expectations file as a local file (a copy, for another filesystem);
- :class:`Folder`: the output folder (``run.json``, the parts).

A URI is resolved once, on the driver; the filesystem object (which pickles its options, not
its credentials when they came from the environment) is shipped to the workers with the job,
and every file is named by its path on that filesystem. Messages show ``scheme://path``: never
the URI's query (``?endpoint_override=…``) or user information.
"""

from __future__ import annotations

import contextlib
import fnmatch
import glob as _glob
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from maev_kit.errors import InputError

SHARD_SUFFIXES = (".jsonl", ".parquet")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: not C:\ nor C://


def is_uri(source: Any) -> TypeGuard[str]:
    """``source`` is a string naming a filesystem by its scheme (``s3://bucket/key``)."""
    return isinstance(source, str) and bool(_URI.match(source))


@dataclass(frozen=True)
class Shards:
    """The trace files a source names: ``paths`` on ``filesystem`` (None: the local one, where
    the paths are absolute); ``scheme`` is how messages name them (``"s3://"``; "" locally)."""

    paths: list[str]
    filesystem: Any = None
    scheme: str = ""

    def shown(self, path: str) -> str:
        """How messages name ``path``."""
        return self.scheme + path if self.filesystem is not None else path


def list_shards(source: str | os.PathLike[str]) -> Shards:
    """The ``.jsonl`` and ``.parquet`` files of a file, folder or glob (a ``*`` stops at
    ``/``), local or on a filesystem named by a URI; :class:`InputError` when there is none."""
    s = str(source)
    if not is_uri(s):
        return Shards(_local(s))
    import pyarrow.fs as pafs

    filesystem, path = _open_uri(s)
    if isinstance(filesystem, pafs.LocalFileSystem):  # file:///… is a local path
        return Shards(_local(path))
    shards = Shards(_remote(filesystem, path, s), filesystem, _scheme(s))
    if not shards.paths:
        raise InputError(f"{_scheme(s)}{path}: no trace file found (expected .jsonl or "
                         ".parquet files)")
    return shards


def _scheme(uri: str) -> str:
    return uri[:uri.index("://") + 3]


def shown_uri(uri: str) -> str:
    """A URI as messages show it: without its user information and query.

    >>> shown_uri("s3://KEY:SECRET@bucket/traces/*.parquet?region=eu-west-1")
    's3://bucket/traces/*.parquet'
    """
    rest = uri[uri.index("://") + 3:].partition("?")[0]
    host, slash, path = rest.partition("/")
    return _scheme(uri) + host.rpartition("@")[2] + slash + path


def _why(e: BaseException, uri: str) -> str:
    """The first line of an error about ``uri``, without the URI's user information (a key)
    and query (endpoints, options)."""
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    rest = uri[uri.index("://") + 3:]
    secrets = [rest.split("/", 1)[0].rpartition("@")[0], uri.partition("?")[2]]
    for secret in sorted(filter(None, secrets), key=len, reverse=True):
        text = text.replace(secret, "…")
    return text


def _open_uri(uri: str) -> tuple[Any, str]:
    """The filesystem and path of a URI; InputError (with no secret of the URI) when pyarrow
    cannot open it."""
    import pyarrow.fs as pafs

    try:
        return pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as e:  # an unknown scheme, a malformed URI
        raise InputError(f"{_scheme(uri)}…: not a filesystem pyarrow can open "
                         f"({_why(e, uri)})") from None


def _local(s: str) -> list[str]:
    if Path(s).is_dir():
        paths = [str(p) for p in sorted(Path(s).iterdir()) if p.name.endswith(SHARD_SUFFIXES)]
    elif _glob.has_magic(s):
        paths = sorted(p for p in _glob.glob(s) if os.path.isfile(p))  # not the folders
    else:
        paths = [s]
    if not paths or (len(paths) == 1 and not Path(paths[0]).exists()):
        raise InputError(f"{s}: no trace file found (expected .jsonl or .parquet files)")
    return [os.path.abspath(p) for p in paths]


def _remote(filesystem: Any, path: str, uri: str) -> list[str]:
    import pyarrow.fs as pafs

    path = path.rstrip("/")
    try:
        if _glob.has_magic(path):
            parts = path.split("/")
            fixed = next(i for i, part in enumerate(parts) if _glob.has_magic(part))
            base = "/".join(parts[:fixed])
            found = filesystem.get_file_info(pafs.FileSelector(
                base, allow_not_found=True, recursive=fixed < len(parts) - 1))
            return sorted(f.path for f in found if f.type == pafs.FileType.File
                          and _matches(f.path.split("/"), parts))
        info = filesystem.get_file_info(path)
        if info.type == pafs.FileType.Directory:
            found = [f for f in filesystem.get_file_info(pafs.FileSelector(path))
                     if f.type == pafs.FileType.File]
            if {f.base_name for f in found} & {"manifest.json", "manifest.yaml"}:
                raise InputError(f"{shown_uri(uri)}: a labeled set, which is read from a "
                                 "folder on this machine: copy it here, or pass its traces file")
            return sorted(f.path for f in found if f.path.endswith(SHARD_SUFFIXES))
        return [path] if info.type == pafs.FileType.File else []
    except OSError as e:
        raise InputError(f"{_scheme(uri)}{path}: cannot be listed ({_why(e, uri)})") from None


def _matches(parts: list[str], pattern: list[str]) -> bool:
    """A path matches a glob part by part, as :func:`glob.glob` matches (``*`` within one part,
    a hidden name only by a pattern that starts with a dot)."""
    return len(parts) == len(pattern) and all(
        fnmatch.fnmatchcase(p, q) and (not p.startswith(".") or q.startswith("."))
        for p, q in zip(parts, pattern))


@contextlib.contextmanager
def local_file(where: Any) -> Iterator[tuple[Any, bool]]:
    """``where`` as a local file for the block: a URI of another filesystem copied (``(copy,
    True)``, removed after), anything else as it is (``(where, False)``; ``file://`` URIs as
    their path)."""
    if not is_uri(where):
        yield where, False
        return
    import pyarrow.fs as pafs

    filesystem, path = _open_uri(where)
    if isinstance(filesystem, pafs.LocalFileSystem):
        yield path, False
        return
    try:
        found = filesystem.get_file_info(path).type == pafs.FileType.File
    except OSError as e:
        raise InputError(f"{_scheme(where)}{path}: cannot be read ({_why(e, where)})"
                         ) from None
    if not found:
        raise InputError(f"{_scheme(where)}{path}: file not found")
    with local_copy(filesystem, path) as local:
        yield local, True


@contextlib.contextmanager
def local_copy(filesystem: Any, path: str) -> Iterator[str]:
    """A local copy of a file of ``filesystem``, under its own name in a temporary folder
    (messages about it then name the file as the local readers name theirs), removed after."""
    folder = tempfile.mkdtemp(prefix="maev-shard-")
    try:
        local = os.path.join(folder, path.rsplit("/", 1)[-1])
        with filesystem.open_input_stream(path) as src, open(local, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        yield local
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Folder:
    """A run's output folder: a local path, or a URI of another filesystem (where every worker
    of a cluster can write, and a rerun on another machine can resume from).

    Every file is written under a temporary name beside its destination, then moved there: a
    reader never sees half a part (locally a rename; on an object store a copy, which the
    store shows whole).
    """

    filesystem: Any  # a pyarrow FileSystem (LocalFileSystem for a local path)
    path: str  # the folder's path there (absolute locally)
    name: str = ""  # how messages name it: a local path as given, else scheme and path

    @classmethod
    def of(cls, where: str | os.PathLike[str]) -> Folder:
        """The folder a path or URI names."""
        import pyarrow.fs as pafs

        s = str(where)
        if is_uri(s):
            filesystem, path = _open_uri(s)
            if not isinstance(filesystem, pafs.LocalFileSystem):
                path = path.rstrip("/")
                return cls(filesystem, path, _scheme(s) + path)
            return cls(filesystem, os.path.abspath(path), s)
        return cls(pafs.LocalFileSystem(), os.path.abspath(s), s)

    def __str__(self) -> str:
        return self.name

    def child(self, *names: str) -> str:
        """The path of a file or folder inside."""
        return "/".join((self.path, *names))

    def make(self, sub: str) -> None:
        self.filesystem.create_dir(self.child(sub), recursive=True)

    def clear(self, sub: str) -> None:
        """Remove what a folder inside holds (nothing when it does not exist)."""
        self.filesystem.delete_dir_contents(self.child(sub), missing_dir_ok=True)

    def exists(self, *names: str) -> bool:
        import pyarrow.fs as pafs

        return self.filesystem.get_file_info(self.child(*names)).type != pafs.FileType.NotFound

    def read_bytes(self, *names: str) -> bytes:
        with self.filesystem.open_input_stream(self.child(*names)) as f:
            return f.read()

    def write_bytes(self, data: bytes, *names: str) -> None:
        self._write(lambda tmp: self._put(data, tmp), names)

    def write_parquet(self, table: Any, *names: str) -> None:
        import pyarrow.parquet as pq

        self._write(lambda tmp: pq.write_table(table, tmp, filesystem=self.filesystem), names)

    def parts(self, sub: str) -> list[str]:
        """The paths of the ``part-*.parquet`` files of a folder inside, sorted."""
        import pyarrow.fs as pafs

        found = self.filesystem.get_file_info(pafs.FileSelector(self.child(sub),
                                                                allow_not_found=True))
        return sorted(f.path for f in found if f.type == pafs.FileType.File
                      and f.base_name.startswith("part-") and f.base_name.endswith(".parquet"))

    def _put(self, data: bytes, path: str) -> None:
        with self.filesystem.open_output_stream(path) as f:
            f.write(data)

    def _write(self, write: Any, names: tuple[str, ...]) -> None:
        final = self.child(*names)
        head, _, name = final.rpartition("/")
        tmp = f"{head}/.{name}.{os.getpid()}.tmp"
        try:
            write(tmp)
            self.filesystem.move(tmp, final)
        except BaseException:
            with contextlib.suppress(OSError):
                self.filesystem.delete_file(tmp)
            raise
