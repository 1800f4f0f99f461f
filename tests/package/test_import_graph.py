"""The layers of the kit (STYLE.md, "Layers"), checked by a tool: the import-linter contracts of
``pyproject.toml`` (``[tool.importlinter]``: ``acyclic`` and ``layers``) are run here, and grimp's
module graph is searched for cycles.

Every import counts, wherever it is written: at module level, inside a function (a lazy import
still ties the two modules together and can close a cycle) and under ``if TYPE_CHECKING:``
(checked separately, so a cycle only a type checker sees is named as such).

grimp does not count the package ``__init__`` that Python runs before any of its modules, so the
graph is also read from the source with :mod:`ast` (:func:`ast_import_graph`), with that edge.
"""

from __future__ import annotations

import ast
import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


def find_cycles(package: str, *, exclude_type_checking_imports: bool) -> list[list[str]]:
    """The import cycles of ``package``'s modules: one shortest cycle (a list of modules, first
    = last) per strongly connected group of modules, sorted. ``[]`` when the graph is acyclic."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=exclude_type_checking_imports,
                              cache_dir=None)
    succ = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    return _cycles(succ)


def _cycles(succ: dict[str, list[str]]) -> list[list[str]]:
    """One shortest cycle (first = last) per strongly connected group of the graph ``succ``
    (module → the modules it imports), sorted; ``[]`` when it is acyclic."""
    cycles = []
    for group in _strong_groups(succ):
        head, members = group[0], set(group)
        chains = [_shortest_path(succ, s, head, members) for s in succ[head] if s in members]
        cycles.append([head, *min((c for c in chains if c), key=len)])
    return sorted(cycles)


def _shortest_path(succ: dict[str, list[str]], start: str, goal: str,
                   within: set[str]) -> list[str] | None:
    """The shortest chain of imports from ``start`` to ``goal`` through ``within`` (BFS)."""
    prev: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        node = todo.pop(0)
        if node == goal:
            path = [node]
            while prev[path[-1]] is not None:
                path.append(prev[path[-1]])  # type: ignore[arg-type]
            return path[::-1]
        for nxt in succ[node]:
            if nxt in within and nxt not in prev:
                prev[nxt] = node
                todo.append(nxt)
    return None


def _strong_groups(succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module, iterative (the kit has
    hundreds of modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(succ):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    group.append(m)
                    if m == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return groups


# -- the module graph read from the source, as Python runs it ---------------------------------

def _modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a folder under ``root``) by dotted name; a package is its
    ``__init__.py``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every ``import`` / ``from … import`` anywhere in ``tree`` — module level, in functions,
    in methods, in ``try`` — except in the body of an ``if TYPE_CHECKING:``."""
    out: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
             modules: dict[str, Path]) -> list[str]:
    """The modules an import statement in ``module`` names (``from p import name`` names the
    submodule ``p.name`` when there is one, else ``p``); relative imports resolved."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def ast_import_graph(root: Path, package: str) -> dict[str, list[str]]:
    """module → the modules of ``package`` it imports, read from the source with :mod:`ast`:
    imports inside functions count, ``if TYPE_CHECKING:`` ones do not. As Python runs it,
    importing ``a.b.c`` first runs the packages ``a`` and ``a.b``: those are imported too
    (but a module's own packages are not: they ran before it)."""
    modules = _modules(root, package)
    succ: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _import_nodes(tree):
            for target in _targets(node, module, path.name == "__init__.py", modules):
                parts = target.split(".")
                for k in range(1, len(parts) + 1):
                    name = ".".join(parts[:k])
                    if name in modules and name != module and not module.startswith(name + "."):
                        succ[module].add(name)
    return {m: sorted(t) for m, t in succ.items()}


def _explain(package: str, cycles: list[list[str]], *, exclude_type_checking_imports: bool) -> str:
    graph = grimp.build_graph(package, exclude_type_checking_imports=exclude_type_checking_imports,
                              cache_dir=None)
    out = []
    for cycle in cycles:
        out.append(" → ".join(cycle))
        for a, b in zip(cycle, cycle[1:]):
            for d in graph.get_import_details(importer=a, imported=b):
                out.append(f"    {a}:{d['line_number']}: {d['line_contents']}")
    return "\n".join(out)


def lint_imports(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``lint-imports`` of this venv run in ``cwd`` (where it reads ``pyproject.toml``)."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-c",
                             "from importlinter.cli import lint_imports_command as c; c()"]
    return subprocess.run([*cmd, "--no-cache", "--no-logo"], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env=env)


# -- the kit ---------------------------------------------------------------------------------

def test_pyproject_states_the_acyclic_and_layers_contracts():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    linter = config["tool"]["importlinter"]
    assert linter["root_package"] == "maev_kit"
    types = {c["id"]: c["type"] for c in linter["contracts"]}
    assert types == {"acyclic": "acyclic_siblings", "layers": "layers"}
    layers = next(c for c in linter["contracts"] if c["id"] == "layers")["layers"]
    assert "reporting | widgets | scale | testing" in layers  # the views never import each other
    assert layers[-1].startswith("errors")  # the ground floor


def test_import_contracts_are_kept():
    """``lint-imports`` on the kit: no upward import, no cycle between sibling packages."""
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout, run.stdout


# -- docs/architecture.md is the map of these layers --------------------------------------------

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _fenced_after(doc: str, marker: str) -> list[str]:
    """The lines of the fenced block that follows ``marker`` in ``doc``."""
    assert marker in doc, f"docs/architecture.md lost its {marker!r} block"
    block = doc.split(marker, 1)[1].split("```", 2)[1]
    return [line.strip() for line in block.splitlines()[1:] if line.strip()]


def _layers_contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")


def _top_level_modules() -> set[str]:
    """Every package and module directly under ``maev_kit/`` (the root ``__init__`` aside)."""
    pkg = ROOT / "maev_kit"
    return ({p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()}
            | {p.stem for p in pkg.glob("*.py") if p.stem != "__init__"})


def test_architecture_doc_states_the_layers_of_the_contract():
    """The map's layer block is the contract's, its table lists every package of maev_kit once
    on its floor (a new package must be placed, a deleted one leaves), and the contract's
    ignored imports are the ones the map names."""
    doc = ARCHITECTURE.read_text(encoding="utf-8")
    contract = _layers_contract()
    layers = contract["layers"]
    assert _fenced_after(doc, "<!-- layers ") == layers
    floor_of = {name.strip(): len(layers) - i for i, layer in enumerate(layers)
                for name in layer.replace("|", ":").split(":")}
    rows = re.findall(r"^\| (\d+) \| `([\w.]+)` \| (.+?) \|$", doc, flags=re.M)
    table = [(name, int(floor)) for floor, name, _ in rows]
    names = [name for name, _ in table]
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"listed twice in docs/architecture.md: {twice}"
    assert dict(table) == floor_of, "docs/architecture.md's Layers table differs from pyproject"
    assert set(floor_of) == _top_level_modules(), (
        "packages of maev_kit not in the layers contract: "
        f"{sorted(_top_level_modules() - set(floor_of))}; in it but gone: "
        f"{sorted(set(floor_of) - _top_level_modules())}")
    assert all(len(line) > 20 for *_, line in rows), "each package gets its line"
    ignored = _fenced_after(doc, "<!-- ignored imports ")
    assert ignored == list(contract.get("ignore_imports", [])), (
        "the ignored imports of docs/architecture.md and pyproject.toml differ")


def test_architecture_doc_data_flows_name_real_functions():
    """Every ``maev_kit.…`` name in the map's data flows (``maev score``, a calibration) is
    imported: a renamed or moved function fails here, not in a reader's head."""
    doc = ARCHITECTURE.read_text(encoding="utf-8")
    flows = doc.split("## Where the data goes", 1)[1].split("\n## ", 1)[0]
    names = sorted(set(re.findall(r"`(maev_kit(?:\.\w+)+)`", flows)))
    assert len(names) >= 30, names  # both flows, step by step
    missing = []
    for name in names:
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            try:
                for attr in parts[i:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(name)
            break
    assert not missing, f"docs/architecture.md names what is not in the code: {missing}"


@pytest.mark.parametrize("exclude_type_checking_imports", [False, True],
                         ids=["with-TYPE_CHECKING-imports", "runtime-imports"])
def test_no_import_cycle_between_modules(exclude_type_checking_imports):
    """Module by module, lazy imports included: a cycle through a package ``__init__`` or inside
    one package counts too (the acyclic contract compares sibling packages)."""
    cycles = find_cycles("maev_kit", exclude_type_checking_imports=exclude_type_checking_imports)
    assert not cycles, "import cycle(s) in maev_kit:\n" + _explain(
        "maev_kit", cycles, exclude_type_checking_imports=exclude_type_checking_imports)


def test_no_import_cycle_as_python_runs_the_imports():
    """#39 A: the graph read from the source with ast, imports inside functions included and a
    package's ``__init__`` run by every import of one of its modules (grimp leaves that edge
    out: ``datasets → labels._attach → facts → facts._labeled_set → datasets`` hid there)."""
    graph = ast_import_graph(ROOT, "maev_kit")
    assert len(graph) > 100 and "maev_kit.facts._labeled_set" in graph["maev_kit.facts"]
    cycles = _cycles(graph)
    assert not cycles, "import cycle(s) in maev_kit:\n" + "\n".join(" → ".join(c)
                                                                    for c in cycles)


def test_graph_sees_the_kit_and_its_lazy_imports():
    graph = grimp.build_graph("maev_kit", cache_dir=None)
    assert {"maev_kit.traces", "maev_kit.metrics", "maev_kit.reporting", "maev_kit.widgets",
            "maev_kit.evaluation"} <= graph.modules
    assert graph.direct_import_exists(importer="maev_kit.metrics._loops",
                                      imported="maev_kit.traces")
    # imported inside `load_traces` only: the graph sees imports written in functions
    assert graph.direct_import_exists(importer="maev_kit.traces._io",
                                      imported="maev_kit.traces._parquet")


def test_data_never_imports_a_view_or_the_metrics():
    """Not even lazily: the data model draws itself through a renderer the view registers."""
    graph = grimp.build_graph("maev_kit", cache_dir=None)
    for data in ("maev_kit.traces", "maev_kit.expectations", "maev_kit.labels",
                 "maev_kit.backends"):
        for above in ("maev_kit.widgets", "maev_kit.reporting", "maev_kit.rendering",
                      "maev_kit.metrics"):
            chain = graph.find_shortest_chain(importer=data, imported=above, as_packages=True)
            assert chain is None, f"{data} imports {above}: {' → '.join(chain or ())}"


def test_widgets_and_reporting_do_not_import_each_other():
    """Not even lazily: the two views share maev_kit.rendering instead."""
    graph = grimp.build_graph("maev_kit", cache_dir=None)
    for a, b in (("maev_kit.widgets", "maev_kit.reporting"),
                 ("maev_kit.reporting", "maev_kit.widgets")):
        assert graph.find_shortest_chain(importer=a, imported=b, as_packages=True) is None


def test_the_view_registers_the_html_of_a_trace():
    """``MultiAgentTrace._repr_html_`` asks :mod:`maev_kit._views`: the package root registers
    the timeline (loaded on first use, so a trace shown bare in a notebook draws it and
    ``import maev_kit`` stays light); without a renderer it is an escaped ``<pre>``."""
    import subprocess
    import sys

    from maev_kit import _views
    from maev_kit.traces import AgentTurn, MultiAgentTrace

    t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "<b>x</b>", turn_index=0)])
    assert 'class="maev-tv"' in t._repr_html_()
    registered = _views._RENDERERS["trace"]
    try:
        _views.register("trace", None)
        out = t._repr_html_()
        assert out.startswith("<pre>") and "&lt;b&gt;x&lt;/b&gt;" in out and "<b>" not in out
    finally:
        _views.register("trace", registered)
    # in a fresh interpreter: nothing but the trace imported, the timeline is drawn, and the
    # view was loaded only when it was asked for
    code = ("import sys; from maev_kit.traces import MultiAgentTrace as T; "
            "assert 'maev_kit.rendering._trace' not in sys.modules; "
            "print('maev-tv' in T('c')._repr_html_())")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert got.stdout.strip() == "True", got.stderr


# -- the check itself, on a synthetic package -------------------------------------------------

def _write_package(root: Path, name: str, files: dict[str, str]) -> None:
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, src in files.items():
        (root / name / f"{module}.py").write_text(textwrap.dedent(src))


@pytest.fixture
def synthetic(tmp_path, monkeypatch):
    """Two packages under ``tmp_path`` (on ``sys.path``): ``lazycycle``, whose only cycle is an
    import written inside a function, and ``tccycle``, whose only cycle is closed under
    ``if TYPE_CHECKING:``."""
    _write_package(tmp_path, "lazycycle", {
        "model": "from lazycycle import util\n\n\ndef draw():\n    from lazycycle import view\n"
                 "    return view.render()\n",
        "view": "import lazycycle.model\n\n\ndef render():\n    return 'x'\n",
        "util": "X = 1\n",
    })
    _write_package(tmp_path, "tccycle", {
        "a": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from tccycle import b\n",
        "b": "import tccycle.a\n",
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def test_cycle_check_reports_an_import_inside_a_function(synthetic):
    for exclude in (False, True):
        assert find_cycles("lazycycle", exclude_type_checking_imports=exclude) == [
            ["lazycycle.model", "lazycycle.view", "lazycycle.model"]]


def test_cycle_check_counts_type_checking_imports_separately(synthetic):
    assert find_cycles("tccycle", exclude_type_checking_imports=False) == [
        ["tccycle.a", "tccycle.b", "tccycle.a"]]
    assert find_cycles("tccycle", exclude_type_checking_imports=True) == []


def test_acyclic_contract_reports_an_import_inside_a_function(synthetic):
    """The kit's acyclic contract, run by lint-imports on ``lazycycle``, breaks on the lazy
    import; the same package without it keeps the contract."""
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    acyclic = next(c for c in contract["tool"]["importlinter"]["contracts"]
                   if c["type"] == "acyclic_siblings")
    (synthetic / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [tool.importlinter]
        root_package = "lazycycle"

        [[tool.importlinter.contracts]]
        id = "acyclic"
        name = "acyclic"
        type = "{acyclic["type"]}"
        ancestors = ["lazycycle"]
        depth = {acyclic["depth"]}
        """))
    env = {**os.environ, "PYTHONPATH": str(synthetic)}
    run = lint_imports(synthetic, env)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "BROKEN" in run.stdout and ".model" in run.stdout and ".view" in run.stdout, run.stdout

    model = synthetic / "lazycycle" / "model.py"
    model.write_text(model.read_text().replace("from lazycycle import view", "pass  #"))
    run = lint_imports(synthetic, env)
    assert run.returncode == 0, run.stdout + run.stderr


def test_ast_graph_sees_a_cycle_through_a_package_init(tmp_path):
    """The kit's old cycle in miniature: ``data`` imports ``low.attach`` in a function, which
    imports ``up.review`` — running ``up/__init__``, which imports ``up.make`` lazily, which
    imports ``data``. Under ``if TYPE_CHECKING:`` the same import closes no cycle."""
    files = {"__init__": "", "data": "def h():\n    from .low.attach import g\n",
             "up/__init__": "def __getattr__(name):\n    from pkg.up.make import f\n"
                            "    return f\n",
             "up/review": "X = 1\n", "up/make": "def f():\n    from pkg import data\n",
             "low/__init__": "", "low/attach": "def g():\n    from pkg.up.review import X\n"}
    for name, src in files.items():
        path = tmp_path / "pkg" / f"{name}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src)
    assert _cycles(ast_import_graph(tmp_path, "pkg")) == [
        ["pkg.data", "pkg.low.attach", "pkg.up", "pkg.up.make", "pkg.data"]]
    (tmp_path / "pkg" / "low" / "attach.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.up.review import X\n")
    assert _cycles(ast_import_graph(tmp_path, "pkg")) == []
