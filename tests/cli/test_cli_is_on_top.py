"""The CLI sits on top of the house: every argument parser, print and exit code lives in
``maev_kit.cli``, and no other module of maev-kit imports it (not even inside a function)."""

from __future__ import annotations

import ast
from pathlib import Path

import grimp

import maev_kit

PACKAGE = Path(maev_kit.__file__).parent


def _outside_cli(module: str) -> bool:
    return module != "maev_kit.cli" and not module.startswith("maev_kit.cli.")


def test_no_module_outside_the_cli_imports_it():
    """grimp's graph holds every import, those written inside functions included."""
    graph = grimp.build_graph("maev_kit", cache_dir=None)
    cli = {"maev_kit.cli", *graph.find_descendants("maev_kit.cli")}
    found = sorted(
        f"{d['importer']}:{d['line_number']} imports {d['imported']}"
        for imported in cli
        for importer in graph.find_modules_that_directly_import(imported)
        if _outside_cli(importer)
        for d in graph.get_import_details(importer=importer, imported=imported))
    assert found == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    """Every module an ``import`` or ``from … import`` anywhere in ``tree`` names (relative
    ones resolved), with its line; ``from X import a`` also yields ``X.a``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[:len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, *([base] if base else [])])
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def test_no_module_outside_the_cli_imports_it_ast():
    """The same rule read from the source (independent of grimp), and the lazy command table
    (import strings) names CLI modules only."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        if not _outside_cli(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, name in _imported(tree, module, path.name == "__init__.py"):
            if not _outside_cli(name):
                found.append(f"{module}:{line} imports {name}")
        for node in ast.walk(tree):  # importlib.import_module("maev_kit.cli...")
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and node.value.startswith("maev_kit.cli")):
                found.append(f"{module}:{node.lineno} names {node.value!r}")
    assert found == []


def test_the_old_cli_modules_are_gone():
    old = ["_cli_main.py", "cli.py", "calibration/_cli.py", "calibration/_align_cli.py",
           "facts/_cli.py", "traces/importers/_cli.py", "scale/_cli.py", "testing/_cli.py",
           "labels/_cli.py"]
    assert [p for p in old if (PACKAGE / p).exists()] == []
    assert (PACKAGE / "cli" / "__init__.py").is_file()


def test_every_lazy_command_resolves_to_a_cli_module():
    from maev_kit.cli._main import _LAZY_COMMANDS

    for name, target in _LAZY_COMMANDS.items():
        module, _, attr = target.partition(":")
        assert not _outside_cli(module), name
        import importlib

        assert getattr(importlib.import_module(module), attr).name == name
