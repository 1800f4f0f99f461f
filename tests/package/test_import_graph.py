"""The layers of the kit, checked on the source: no import cycle between ``maev_kit``
subpackages, and the data model never imports a view (widgets, reporting).

Only module-level imports count — imports inside functions (lazy, e.g. ``_repr_html_``) and
under ``if TYPE_CHECKING:`` do not run at import time, so they cannot form a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import maev_kit

PKG = Path(maev_kit.__file__).parent

#: The views: what draws the data. Nothing below may import them at module level.
VIEWS = {"widgets", "reporting"}
#: The data model and the computations on it.
DATA_LAYER = {"traces", "expectations", "retention", "metrics", "judges", "runner", "backends",
              "labels", "agreement", "errors", "datasets", "facts", "evaluation", "calibration",
              "_jsonl", "_html"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports executed when the module is imported: not in functions, not under TYPE_CHECKING."""
    out: list[ast.Import | ast.ImportFrom] = []

    def walk(stmts: list[ast.stmt]) -> None:
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                out.append(s)
            elif isinstance(s, ast.If):
                if not _is_type_checking(s.test):
                    walk(s.body)
                walk(s.orelse)
            elif isinstance(s, ast.Try):
                walk(s.body)
                for hnd in s.handlers:
                    walk(hnd.body)
                walk(s.orelse)
                walk(s.finalbody)
            elif isinstance(s, (ast.With, ast.ClassDef)):
                walk(s.body)

    walk(tree.body)
    return out


def _is_module(name: str) -> bool:
    return (PKG / name).is_dir() or (PKG / f"{name}.py").is_file()


def _subpackage(module: str) -> str | None:
    """``maev_kit.metrics._contracts`` → ``metrics``; None for ``maev_kit`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "maev_kit" else None


def import_graph() -> dict[str, dict[str, list[str]]]:
    """subpackage → {imported subpackage: [the modules whose import creates the edge]}."""
    graph: dict[str, dict[str, list[str]]] = {}
    for path in sorted(PKG.rglob("*.py")):
        module = _module_name(path)
        src = _subpackage(module)
        if src is None:
            continue
        graph.setdefault(src, {})
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _module_level_imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = _resolve(module, path.name == "__init__.py", node)
                # `from maev_kit import x`: an edge only when x is a module of the kit
                targets = [base] if base != "maev_kit" else \
                    [f"maev_kit.{a.name}" for a in node.names if _is_module(a.name)]
            for t in targets:
                dst = _subpackage(t)
                if dst is not None and dst != src:
                    graph[src].setdefault(dst, []).append(module)
    return graph


def _find_cycle(graph: dict[str, dict[str, list[str]]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, {})):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_graph_sees_the_kit():
    graph = import_graph()
    assert {"traces", "metrics", "reporting", "widgets", "evaluation"} <= set(graph)
    assert "traces" in graph["metrics"]  # the metrics read traces: an edge the test must see


def test_no_import_cycle_between_subpackages():
    graph = import_graph()
    cycle = _find_cycle(graph)
    if cycle:
        steps = [f"{a} → {b} (in {', '.join(sorted(set(graph[a][b])))})"
                 for a, b in zip(cycle, cycle[1:])]
        raise AssertionError("import cycle between maev_kit subpackages:\n  " + "\n  ".join(steps))


def test_data_layer_imports_no_view():
    graph = import_graph()
    bad = [f"{src} → {dst} (in {', '.join(sorted(set(mods)))})"
           for src, deps in graph.items() if src in DATA_LAYER
           for dst, mods in deps.items() if dst in VIEWS]
    assert not bad, "the data layer imports a view at module level:\n  " + "\n  ".join(bad)


def test_widgets_and_reporting_do_not_import_each_other():
    """Not even lazily: the two views share maev_kit._html instead."""
    for src, dst in (("widgets", "reporting"), ("reporting", "widgets")):
        for path in sorted((PKG / src).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(n == f"maev_kit.{dst}" or n.startswith(f"maev_kit.{dst}.")
                               for n in names), f"{path.name} imports maev_kit.{dst}"


def test_data_model_draws_itself_through_the_shared_html_module():
    """``MultiAgentTrace._repr_html_`` imports the shared renderer, not a view."""
    src = (PKG / "traces" / "_model.py").read_text(encoding="utf-8")
    assert "maev_kit._html" in src and "maev_kit.widgets" not in src


def test_cycle_finder_finds_a_cycle():
    assert _find_cycle({"a": {"b": ["m"]}, "b": {"a": ["n"]}}) == ["a", "b", "a"]
    assert _find_cycle({"a": {"b": ["m"]}, "b": {}}) is None


def test_lazy_and_type_checking_imports_do_not_count():
    tree = ast.parse("import os\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                     "    import maev_kit.widgets\ndef f():\n    import maev_kit.reporting\n")
    assert [ast.unparse(n) for n in _module_level_imports(tree)] == [
        "import os", "from typing import TYPE_CHECKING"]
