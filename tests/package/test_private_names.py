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

