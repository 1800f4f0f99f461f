"""Types for IDEs and type checkers: ``py.typed`` ships, and every lazily loaded name of
``maev_kit`` has a real import under ``TYPE_CHECKING`` (so its type is known statically)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import maev_kit

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PKG = Path(maev_kit.__file__).parent
ROOT = PKG.parent


def _type_checking_imports() -> dict[str, str]:
    """name -> module of each ``from M import name`` under ``if TYPE_CHECKING:``."""
    tree = ast.parse((PKG / "__init__.py").read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.dump(stmt)
                for alias in stmt.names:
                    assert alias.asname is None
                    assert alias.name not in out, f"{alias.name} imported twice"
                    out[alias.name] = stmt.module
    return out


def test_py_typed_ships():
    assert (PKG / "py.typed").is_file()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["maev_kit"]


def test_type_checking_block_lists_exactly_the_lazy_names():
    imports = _type_checking_imports()
    assert imports == maev_kit._LAZY


def test_all_is_the_lazy_names_and_version():
    assert set(maev_kit.__all__) == set(maev_kit._LAZY) | {"__version__"}


def test_every_type_checking_import_resolves_to_the_runtime_object():
    for name, module in _type_checking_imports().items():
        assert getattr(importlib.import_module(module), name) is getattr(maev_kit, name), name
