"""No function in maev_kit/ is over 80 lines, unless its docstring says why (at most three)."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "maev_kit"
LIMIT = 80
#: What a long function's docstring must contain to be let through.
REASON = "Long because"


def _long_functions(package=PACKAGE):
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > LIMIT:
                    yield path.relative_to(package.parent), node, length


def test_no_function_is_over_80_lines_without_a_reason():
    long = list(_long_functions())
    unexplained = [f"{p}:{n.lineno} {n.name} ({length} lines)" for p, n, length in long
                   if REASON not in (ast.get_docstring(n) or "")]
    assert not unexplained, "split these (or say in the docstring why not): " + \
        "; ".join(unexplained)
    assert len(long) <= 3, f"{len(long)} long functions; at most three may explain themselves"


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "maev_kit").mkdir()
    (tmp_path / "maev_kit" / "m.py").write_text(f"def f():\n{body}\n")
    found = [(n.name, length) for _, n, length in _long_functions(tmp_path / "maev_kit")]
    assert found == [("f", LIMIT + 1)]
