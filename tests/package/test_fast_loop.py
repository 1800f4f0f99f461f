"""The quick loop, ``pytest -m "not slow"`` (README, Contributing), still covers the whole kit.

Tests that start a server, a cluster, a browser or a notebook kernel are ``slow`` (marked in
their module, or by ``tests/conftest.py`` for every test that uses one of
:data:`conftest.SLOW_FIXTURES`). What is left must still exercise every package of
``maev_kit``: for each one, some test that is not slow imports it (or is one of its doctests).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import SLOW_FIXTURES, mark_slow

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: import-linter brings tomli
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


def kit_packages() -> set[str]:
    """The top-level packages and modules of ``maev_kit``, as the layers contract lists them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    layers = next(c for c in config["tool"]["importlinter"]["contracts"]
                  if c["id"] == "layers")["layers"]
    return {name.strip() for layer in layers for name in layer.replace("|", ":").split(":")}


@cache
def packages_used_by(path: Path) -> frozenset[str]:
    """The top-level ``maev_kit`` packages a test file imports, anywhere in the file; for a
    module of the kit (its doctests), its own package."""
    if ROOT / "maev_kit" in path.parents:
        return frozenset({path.relative_to(ROOT / "maev_kit").parts[0].removesuffix(".py")})
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(n.split(".")[1] for n in names
                     if n.startswith("maev_kit.") and n.count(".") >= 1)


def fast_test_files(config: pytest.Config, items: list[pytest.Item]) -> set[Path]:
    """The files of the tests ``-m "not slow"`` runs: this session's, when it collected the
    whole suite; else collected in a subprocess (~20 s)."""
    whole = (config.args_source == pytest.Config.ArgsSource.TESTPATHS
             and not config.option.keyword and config.option.markexpr in ("", "not slow")
             and not config.getoption("deselect"))
    if whole:
        return {Path(i.path) for i in items if i.get_closest_marker("slow") is None}
    got = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-m", "not slow", "-p", "no:cacheprovider"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout[-3000:] + got.stderr[-3000:]
    return {ROOT / line.split("::")[0] for line in got.stdout.splitlines() if "::" in line}


def test_the_quick_loop_covers_every_package(request: pytest.FixtureRequest):
    files = fast_test_files(request.config, request.session.items)
    assert len(files) > 50, sorted(files)
    covered = set().union(*(packages_used_by(f) for f in files))
    missing = kit_packages() - covered
    assert not missing, f"no test outside `slow` imports maev_kit.{{{', '.join(sorted(missing))}}}"


def test_a_test_that_starts_a_server_is_slow():
    """By the fixtures it uses (the closure: through another fixture too), whatever its
    module says; others keep their marks."""
    marked: dict[str, list[str]] = {}

    def item(name: str, *fixtures: str) -> SimpleNamespace:
        marked[name] = []
        return SimpleNamespace(fixturenames=["tmp_path", *fixtures],
                               add_marker=lambda m: marked[name].append(m.name))

    items = [item("pg", "pg_url", "pg_server"), item("ray", "ray_cluster"),
             item("plain", "sample_trace"), item("browser", "jupyterlab")]
    mark_slow(items)  # type: ignore[arg-type]
    assert marked == {"pg": ["slow"], "ray": ["slow"], "plain": [], "browser": ["slow"]}
    assert {"pg_server", "ray_cluster", "jupyterlab"} <= SLOW_FIXTURES.keys()


def test_packages_used_by_reads_imports_anywhere_in_a_file(tmp_path):
    test = tmp_path / "test_x.py"
    test.write_text("import maev_kit.metrics\nfrom maev_kit.traces import load_traces\n"
                    "def test():\n    from maev_kit.scale._fs import is_uri\n"
                    "    from maev_kit import errors\n    import json\n")
    assert packages_used_by(test) == {"metrics", "traces", "scale", "errors"}
    assert packages_used_by(ROOT / "maev_kit" / "scale" / "_fs.py") == {"scale"}


def test_the_version_is_the_one_pyproject_states():
    """``maev_kit.__version__`` (recorded in reports, cards and saved results) is read from
    ``maev_kit._version``, which must say what the package is built as."""
    import maev_kit
    from maev_kit._version import __version__

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert __version__ == maev_kit.__version__ == config["project"]["version"]


def test_the_slow_modules_exist():
    """A module renamed or deleted leaves the list (else its successor would be fast)."""
    from conftest import SLOW_MODULES

    tests = ROOT / "tests"
    assert sorted(m for m in SLOW_MODULES if not (tests / m).is_file()) == []
