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
    """``file:line: maev_kit.X._m`` for every module under a private name (a component that
    starts with ``_``) that ``path``, of top-level package ``package``, imports from outside
    its own package — anywhere in the file: in functions, under ``if TYPE_CHECKING:``, relative
    or absolute.

    A top-level package's own modules are its business, whatever their names. The top-level
    modules (``errors.py``, ``_jsonl.py``, …; ``package`` is then their stem) make up the root
    package: they may import its private modules (``maev_kit._jsonl``), and every other
    package reaches those through ``maev_kit.internal``."""
    root_package = not (root / "maev_kit" / package / "__init__.py").is_file()
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for parts in _imported_modules(node, path, root):
            if len(parts) < 2 or parts[0] != "maev_kit" or parts[1] == package:
                continue
            # the root package's own private modules are a direct child of maev_kit
            below = parts[2:] if root_package else parts[1:]
            if any(p.startswith("_") and not p.startswith("__") for p in below):
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
        "5: maev_kit._top", "6: maev_kit._top",  # the root package's own: not metrics'
        "11: maev_kit.judges._parse", "13: maev_kit.judges._parse"]
    # the root package is another package to every top-level one
    as_root = private_module_imports(tmp_path / "maev_kit/metrics/m.py", "__init__", tmp_path)
    assert {"7: maev_kit.metrics._x", "8: maev_kit.metrics._x"} <= {
        line.split(":", 1)[1] for line in as_root}
    # a top-level module may use the root package's private modules, not another package's
    (tmp_path / "maev_kit/top.py").write_text("from maev_kit._top import c\n"
                                               "from maev_kit.judges._parse import a\n")
    found = private_module_imports(tmp_path / "maev_kit/top.py", "top", tmp_path)
    assert [line.split(":", 1)[1] for line in found] == ["2: maev_kit.judges._parse"]


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
        row = seam.relative_to(KIT).parts[0].removesuffix(".py")  # maev_kit/internal.py: its own
        assert f"`{module}`" in rows[row], f"{module} not in its row"
        mod = importlib.import_module(module)
        text = " ".join((mod.__doc__ or "").split()).lower()
        assert "seam" in text and "not part of the user api" in text, module
        assert mod.__all__ and all(hasattr(mod, name) for name in mod.__all__), module
    named = set(re.findall(r"`(maev_kit(?:\.\w+)+)`", section))
    for module in sorted(named):
        importlib.import_module(module)


def test_the_root_seam_hands_on_the_root_modules_own_objects():
    """``maev_kit.internal`` re-exports, never copies: each name is the very object its private
    module defines, so a change there reaches every package."""
    import importlib

    from maev_kit import internal

    homes = [importlib.import_module(f"maev_kit.{m}")
             for m in ("_jsonl", "_files", "_gc", "_version")]
    for name in internal.__all__:
        if name == "views":
            assert internal.views is importlib.import_module("maev_kit._views")
            continue
        owners = [m for m in homes if getattr(m, name, None) is getattr(internal, name)]
        assert owners, f"maev_kit.internal.{name} is not the object of a root module"
