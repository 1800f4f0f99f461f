"""The saved result: a folder of Parquet tables and one JSON manifest (``docs/formats.md``).

This module knows files, not :class:`~maev_kit.evaluation.EvaluationResult`: it writes and
reads the parts (tables and JSON values) the result hands it, checks the manifest's format,
version and checksums, and never replaces anything but an earlier saved result.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.internal import OverwriteRefused, write_bytes

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORMAT", "SCHEMA_VERSION", "is_saved_result", "read_parts", "to_plain",
           "write_parts"]

#: The manifest's ``format``: what marks a folder as a saved result.
FORMAT = "maev-kit evaluation result"
#: The version of the saved layout this maev-kit writes and reads.
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
#: Tables whose index is data (the handoff matrix's from-agent rows).
_INDEXED = frozenset({"handoff_matrix", "routing_confusion"})


def to_plain(value: Any) -> Any:
    """``value`` as JSON-ready data: records with ``to_dict()`` and dataclasses as dicts,
    tuples and sets as lists, numpy scalars as Python numbers; NaN stays a float."""
    if hasattr(value, "to_dict") and not hasattr(value, "columns"):
        return to_plain(value.to_dict())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        return value.item()  # a numpy scalar
    return value


def write_parts(path: str | os.PathLike[str], tables: Mapping[str, pd.DataFrame],
                values: Mapping[str, Any], *, kit_version: str) -> Path:
    """Write ``tables`` as ``<name>.parquet`` and ``values`` into ``manifest.json`` in the
    folder ``path`` (created). Each file is written atomically and the manifest last, with
    every table's SHA-256, so a folder whose manifest loads is whole.

    Raises
    ------
    OverwriteRefused
        ``path`` is a file, or a folder that holds anything but an earlier saved result.
    """
    folder = Path(path)
    _check_target(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, frame in tables.items():
        data = _parquet_bytes(frame, index=name in _INDEXED)
        write_bytes(folder / f"{name}.parquet", data)
        files[name] = {"file": f"{name}.parquet", "sha256": hashlib.sha256(data).hexdigest(),
                       "rows": len(frame)}
    manifest = {"format": FORMAT, "schema_version": SCHEMA_VERSION,
                "maev_kit_version": kit_version, "tables": files, **to_plain(dict(values))}
    text = json.dumps(manifest, indent=1, ensure_ascii=False, allow_nan=True) + "\n"
    write_bytes(folder / MANIFEST, text.encode("utf-8"))
    for old in folder.glob("*.parquet"):  # an earlier result's table this one does not have
        if old.stem not in files:
            old.unlink()
    return folder


def _check_target(folder: Path) -> None:
    shown = os.fspath(folder)
    if folder.exists() and not folder.is_dir():
        raise OverwriteRefused(f"{shown}: is a file; a result is saved as a folder — choose a "
                               "new folder name")
    if not folder.is_dir() or not any(folder.iterdir()):
        return
    manifest = folder / MANIFEST
    try:
        earlier = json.loads(manifest.read_text(encoding="utf-8")).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        earlier = False
    if not earlier:
        raise OverwriteRefused(f"{shown}: the folder holds files that are not a saved "
                               "maev-kit result; save into a new or empty folder (nothing "
                               "was written)")


def is_saved_result(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder :meth:`~maev_kit.evaluation.EvaluationResult.save` wrote:
    its ``manifest.json`` names the format, or (a manifest damaged since) it holds the
    result's ``per_conversation.parquet`` and no ``traces.jsonl`` of a labeled set.
    Whether it is whole is :func:`read_parts`' to say.

    >>> import tempfile
    >>> is_saved_result(tempfile.mkdtemp())
    False
    """
    folder = Path(path)
    if not (folder / MANIFEST).is_file():
        return False
    try:
        with (folder / MANIFEST).open(encoding="utf-8") as f:
            head = f.read(4096)
    except (OSError, UnicodeDecodeError):
        head = ""
    if f'"format": "{FORMAT}"' in head:
        return True
    return (folder / "per_conversation.parquet").is_file() and \
        not (folder / "traces.jsonl").exists()


def _parquet_bytes(frame: pd.DataFrame, *, index: bool) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=index, engine="pyarrow")
    return buf.getvalue()


def read_parts(path: str | os.PathLike[str]) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
    """The manifest and the tables of a saved result, each table checked against the
    manifest's checksum.

    Raises
    ------
    InputError
        No manifest, a manifest of another format or of a newer (or unknown) schema
        version, a missing or changed table — each naming the file and the field.
    """
    import pandas as pd

    folder = Path(path)
    manifest_path = folder / MANIFEST
    shown = os.fspath(manifest_path)
    if not folder.is_dir():
        raise InputError(f"{os.fspath(folder)}: no such folder; a saved result is a folder "
                         "written by EvaluationResult.save()")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{shown}: missing; {os.fspath(folder)} is not a saved maev-kit "
                         "result") from None
    except ValueError as e:
        raise InputError(f"{shown}: not valid JSON ({e})") from None
    _check_manifest(manifest, shown)
    tables = {}
    for name, info in manifest["tables"].items():
        file = folder / str(info.get("file", f"{name}.parquet"))
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{shown} › tables.{name}: {file.name} is missing") from None
        if hashlib.sha256(data).hexdigest() != info.get("sha256"):
            raise InputError(f"{shown} › tables.{name}.sha256: {file.name} does not match the "
                             "manifest (changed or half-written); save the result again")
        tables[name] = pd.read_parquet(io.BytesIO(data), engine="pyarrow")
    return manifest, tables


def _check_manifest(manifest: Any, shown: str) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise InputError(f"{shown} › format: not a saved maev-kit result (expected "
                         f"{FORMAT!r})")
    version = manifest.get("schema_version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise InputError(f"{shown} › schema_version: expected an integer, got {version!r}")
    if version > SCHEMA_VERSION:
        raise InputError(f"{shown} › schema_version: {version} is newer than this maev-kit "
                         f"reads ({SCHEMA_VERSION}); it was written by maev-kit "
                         f"{manifest.get('maev_kit_version', '?')} — upgrade maev-kit to "
                         "load it")
    if version < 1:
        raise InputError(f"{shown} › schema_version: {version} is not a version maev-kit "
                         "ever wrote")
    if not isinstance(manifest.get("tables"), dict):
        raise InputError(f"{shown} › tables: expected an object naming the Parquet tables")


def plain_equal(a: Any, b: Any) -> bool:
    """Equality of JSON-ready data where NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(plain_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(plain_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)
