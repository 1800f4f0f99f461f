"""No package of the kit imports another package's private name.

A name with a leading underscore is its module's own business; what one top-level package of
``maev_kit`` uses of another is named without one, so a reader can tell what a package promises
the others. Imports written inside functions count too.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIT = ROOT / "maev_kit"


def private_imports(path: Path, package: str, root: Path = ROOT) -> list[str]:
    """``file:line: from maev_kit.X import _name`` for every private name ``path`` (of top-level
    package ``package``) imports from another top-level package of the kit."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
            continue
        parts = node.module.split(".")
        if parts[0] != "maev_kit":
            continue
        for alias in node.names:
            # `from maev_kit import _x` names the top-level module _x itself: a package
            target = parts[1] if len(parts) > 1 else alias.name
            private = alias.name.startswith("_") and not alias.name.startswith("__")
            if private and len(parts) > 1 and target != package:
                found.append(f"{path.relative_to(root)}:{node.lineno}: "
                             f"from {node.module} import {alias.name}")
    return found


def test_no_private_name_crosses_a_package():
    found = []
    for path in sorted(KIT.rglob("*.py")):
        parts = path.relative_to(KIT).parts
        package = parts[0].removesuffix(".py") if len(parts) > 1 else path.stem
        found += private_imports(path, package)
    assert not found, ("private names imported across packages (name them without `_`, in "
                       "the package that owns them):\n" + "\n".join(found))


def test_the_scan_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from maev_kit.judges._registry import resolve_judge\n"
                      "from maev_kit.runner import _requests\n"
                      "def f():\n    from maev_kit.judges._parse import _secret, public\n"
                      "    from maev_kit.metrics._x import _own\n"
                      "    from maev_kit._version import __version__\n")
    # a module of `metrics`: its own private names are its business; judges' and runner's not
    found = [line.split(": ", 1)[1] for line in private_imports(module, "metrics", tmp_path)]
    assert found == ["from maev_kit.runner import _requests",
                     "from maev_kit.judges._parse import _secret"]



# -- private modules: a package's seam is its __init__ or a public module of it ------------------

def _module_name(path: Path, root: Path) -> list[str]:
    """The dotted name of the module at ``path`` (a package is its ``__init__``), as parts."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _is_module(parts: list[str], root: Path) -> bool:
    where = root.joinpath(*parts)
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _imported_modules(node: ast.Import | ast.ImportFrom, path: Path,
                      root: Path) -> list[list[str]]:
    """The modules an import statement reads, as dotted parts: ``import a.b._c`` → ``a.b._c``;
    ``from a.b._c import x`` → ``a.b._c``; ``from a.b import _c`` → ``a.b._c`` when ``_c`` is a
    module; relative imports resolved against ``path``."""
    if isinstance(node, ast.Import):
        return [alias.name.split(".") for alias in node.names]
    base = (node.module or "").split(".") if node.module else []
    if node.level:
        anchor = _module_name(path, root)
        if path.name != "__init__.py":
            anchor = anchor[:-1]
        base = anchor[:len(anchor) - (node.level - 1)] + base
    out = []
    for alias in node.names:
        out.append([*base, alias.name] if _is_module([*base, alias.name], root) else base)
    return out


def private_module_imports(path: Path, package: str, root: Path = ROOT) -> list[str]:
    """``file:line: maev_kit.X._m`` for every module under a private name (a component below the
    top-level package that starts with ``_``) that ``path``, of top-level package ``package``,
    imports from another top-level package of the kit — anywhere in the file: in functions,
    under ``if TYPE_CHECKING:``, relative or absolute.

    The top-level name itself may start with ``_`` (``maev_kit._html``, ``maev_kit._jsonl``):
    that says "the kit's own, not the user's"; such a package is used through itself, its
    ``__init__`` or a public module under it, like any other."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for parts in _imported_modules(node, path, root):
            if len(parts) < 3 or parts[0] != "maev_kit" or parts[1] == package:
                continue
            if any(p.startswith("_") and not p.startswith("__") for p in parts[2:]):
                found.add((node.lineno, ".".join(parts)))
    return [f"{path.relative_to(root)}:{line}: {module}" for line, module in sorted(found)]


def _package_of(path: Path) -> str:
    """The top-level package of a file of the kit: ``maev_kit/judges/_llm.py`` → ``judges``;
    a top-level module is its own (the root ``__init__`` is ``__init__``: every other package
    is another to it)."""
    parts = path.relative_to(KIT).parts
    return parts[0].removesuffix(".py") if len(parts) > 1 else path.stem


def test_no_private_module_crosses_a_package():
    """#39 B: what one package uses of another it reaches through that package's ``__init__``
    or a public module of it (its documented seam, e.g. ``maev_kit.judges.internal``), never
    through one of its private modules."""
    found = []
    for path in sorted(KIT.rglob("*.py")):
        found += private_module_imports(path, _package_of(path))
    assert not found, ("private modules imported across packages (import from the package or "
                       "its seam module instead):\n" + "\n".join(found))


def test_the_module_scan_sees_every_form(tmp_path):
    files = {
        "maev_kit/__init__.py": "",
        "maev_kit/_top.py": "",
        "maev_kit/judges/__init__.py": "",
        "maev_kit/judges/_parse.py": "",
        "maev_kit/judges/internal.py": "",
        "maev_kit/metrics/__init__.py": "",
        "maev_kit/metrics/_x.py": "",
        "maev_kit/metrics/m.py": (
            "import maev_kit.judges._parse\n"
            "from maev_kit.judges._parse import a\n"
            "from maev_kit.judges import _parse, internal, name\n"
            "from maev_kit.judges.internal import b\n"
            "from maev_kit import _top, judges\n"
            "from maev_kit._top import c\n"
            "from maev_kit.metrics._x import own\n"
            "from ._x import own_too\n"
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from ..judges._parse import d\n"
            "def f():\n    from maev_kit.judges._parse import e\n"),
    }
    for name, src in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(src)
    found = private_module_imports(tmp_path / "maev_kit/metrics/m.py", "metrics", tmp_path)
    assert [line.split(":", 1)[1] for line in found] == [
        "1: maev_kit.judges._parse", "2: maev_kit.judges._parse", "3: maev_kit.judges._parse",
        "11: maev_kit.judges._parse", "13: maev_kit.judges._parse"]
    # the root package is another package to every top-level one
    as_root = private_module_imports(tmp_path / "maev_kit/metrics/m.py", "__init__", tmp_path)
    assert {"7: maev_kit.metrics._x", "8: maev_kit.metrics._x"} <= {
        line.split(":", 1)[1] for line in as_root}


def test_architecture_names_each_package_seam():
    """docs/architecture.md's Seams table lists every top-level package once; every
    ``internal`` module on disk is named in its package's row, says it is the seam, and lists
    what it offers in ``__all__``; every module the table names imports."""
    import importlib
    import re

    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("\n## Seams\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, flags=re.M))
    packages = ({p.name for p in KIT.iterdir() if (p / "__init__.py").is_file()}
                | {p.stem for p in KIT.glob("*.py") if p.stem != "__init__"})
    assert set(rows) == packages, (sorted(packages - set(rows)), sorted(set(rows) - packages))
    for seam in sorted(KIT.rglob("internal.py")):
        module = ".".join(seam.relative_to(ROOT).with_suffix("").parts)
        assert f"`{module}`" in rows[seam.relative_to(KIT).parts[0]], f"{module} not in its row"
        mod = importlib.import_module(module)
        text = " ".join((mod.__doc__ or "").split()).lower()
        assert "seam" in text and "not part of the user api" in text, module
        assert mod.__all__ and all(hasattr(mod, name) for name in mod.__all__), module
    named = set(re.findall(r"`(maev_kit(?:\.\w+)+)`", section))
    for module in sorted(named):
        importlib.import_module(module)
