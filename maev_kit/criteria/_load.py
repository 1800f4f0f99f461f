"""Criteria from a TOML file, and the registry of built-in criteria by name.

A file holds ``[[criterion]]`` tables (or one ``[criterion]`` table)::

    [[criterion]]
    name = "escalation-policy"
    scope = "conversation"
    labels = ["yes", "no"]
    positive = "yes"
    question = "Did the agents follow the escalation policy?"
    guidelines = "Escalate refunds above 500 EUR to a human."

An agent-scope criterion with labels asks its question of each agent; one with ``labels = []``
asks "which agent?" once per conversation, its answers the agents of that conversation (as
the built-in ``failure-attribution`` does; an answer may be ``agent@step``)::

    [[criterion]]
    name = "ignored-policy-by"
    scope = "agent"
    labels = []
    question = "Which agent broke the escalation policy first?"
"""

from __future__ import annotations

import os
import sys
from importlib import resources
from typing import Any

from maev_kit.criteria._criterion import Criterion
from maev_kit.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["builtin", "builtins", "load", "register", "resolve"]

_FIELDS = {"name": str, "scope": str, "labels": list, "question": str, "positive": str,
           "guidelines": str, "ordinal": bool}
_REQUIRED = ("name", "scope", "labels", "question")

_REGISTRY: dict[str, Criterion] = {}


def load(path: str | os.PathLike[str]) -> list[Criterion]:
    """The criteria of a TOML file, in file order.

    A bad file raises :class:`~maev_kit.errors.InputError` naming the file, the table and the
    field (``criteria.toml › criterion[2] › labels: …``).

    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "c.toml"
    >>> _ = p.write_text('[[criterion]]\\nname = "grounded"\\nscope = "conversation"\\n'
    ...                  'labels = ["yes", "no"]\\nquestion = "Grounded?"\\n')
    >>> [c.name for c in load(p)]
    ['grounded']
    """
    where = os.fspath(path)
    try:
        with open(where, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise InputError(f"{where}: no such criteria file") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{where}: not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: cannot read: {e}") from None
    tables = data.get("criterion")
    if isinstance(tables, dict):
        tables = [tables]
    if not isinstance(tables, list) or not tables:
        raise InputError(f"{where}: no [[criterion]] table (each criterion is a "
                         "[[criterion]] table with name, scope, labels and question)")
    unknown = sorted(set(data) - {"criterion"})
    if unknown:
        raise InputError(f"{where}: unknown top-level key(s) {unknown}; "
                         "criteria go in [[criterion]] tables")
    out = [_criterion(t, f"{where} › criterion[{i}]") for i, t in enumerate(tables)]
    names = [c.name for c in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InputError(f"{where}: criterion name(s) {dupes} appear more than once")
    return out


def _criterion(table: Any, where: str) -> Criterion:
    """One ``[[criterion]]`` table as a :class:`Criterion`; errors name ``where`` and the field."""
    if not isinstance(table, dict):
        raise InputError(f"{where}: must be a table")
    for key in table:
        if key not in _FIELDS:
            raise InputError(f"{where} › {key}: unknown field (fields: {', '.join(_FIELDS)})")
    for key in _REQUIRED:
        if key not in table:
            raise InputError(f"{where} › {key}: field required")
    for key, kind in _FIELDS.items():
        if key in table and not isinstance(table[key], kind):
            raise InputError(f"{where} › {key}: must be a {kind.__name__}, "
                             f"not {type(table[key]).__name__}")
    try:
        return Criterion(**{**table, "labels": tuple(table["labels"])})
    except InputError as e:
        raise InputError(f"{where}: {e}") from None


def register(criterion: Criterion, *, replace: bool = False) -> Criterion:
    """Add ``criterion`` to the built-in criteria under its name (for :func:`builtin`, the
    CLI's ``--criterion NAME``); a name already taken raises unless ``replace=True``."""
    if not isinstance(criterion, Criterion):
        raise TypeError(f"register takes a Criterion, not {type(criterion).__name__}")
    if criterion.name in _REGISTRY and not replace and _REGISTRY[criterion.name] != criterion:
        raise InputError(f"a built-in criterion named {criterion.name!r} exists already")
    _REGISTRY[criterion.name] = criterion
    return criterion


def builtin(name: str) -> Criterion:
    """The built-in criterion named ``name``.

    >>> builtin("final-answer-grounded").scope
    'conversation'
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise InputError(f"no built-in criterion named {name!r} (built in: {known})") from None


def builtins() -> list[str]:
    """The names of the built-in criteria, sorted."""
    return sorted(_REGISTRY)


def resolve(spec: str | os.PathLike[str] | Criterion) -> list[Criterion]:
    """A criterion, a built-in name or a TOML file → criteria (what ``--criterion`` takes)."""
    if isinstance(spec, Criterion):
        return [spec]
    text = os.fspath(spec)
    if text in _REGISTRY:
        return [_REGISTRY[text]]
    if text.endswith(".toml") or os.path.sep in text or os.path.exists(text):
        return load(text)
    return [builtin(text)]


def _register_builtins() -> None:
    """Register the criteria of ``builtin.toml`` (shipped with the package)."""
    with resources.as_file(resources.files("maev_kit.criteria") / "builtin.toml") as path:
        for c in load(path):
            register(c)


_register_builtins()
