"""tools/build_labeled_sets.py: deterministic, no machine paths, writes the committed bytes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from .conftest import SETS_DIR

TOOL = SETS_DIR.parent / "tools" / "build_labeled_sets.py"
FILES = ("README.md", "manifest.json", "traces.jsonl", "expectations.jsonl", "labels.jsonl")


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("build_labeled_sets", TOOL)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["build_labeled_sets"] = mod
    spec.loader.exec_module(mod)
    yield mod
    sys.modules.pop("build_labeled_sets", None)


def _assert_same(built: Path, name: str) -> None:
    for f in FILES:
        assert (built / name / f).read_bytes() == (SETS_DIR / name / f).read_bytes(), \
            f"{name}/{f} differs from a fresh build: run `python tools/build_labeled_sets.py`"


def test_support_desk_is_reproducible(tool, tmp_path):
    assert tool.main(["--out", str(tmp_path), "--only", "support_desk"]) == 0
    _assert_same(tmp_path, "support_desk")


def test_snli_calibration_is_reproducible(tool, tmp_path, data_dir):
    src = data_dir / "retention_snli_subset.jsonl"
    assert tool.main(["--out", str(tmp_path), "--only", "snli_calibration", "--snli", str(src)]) == 0
    _assert_same(tmp_path, "snli_calibration")


def test_default_snli_path_is_relative_to_the_repo(tool):
    assert tool.DEFAULT_SNLI == Path("..") / "shared" / "data" / "retention_snli_subset.jsonl"
    source = TOOL.read_text(encoding="utf-8")
    for needle in ("/work/", "/home/", "/tmp/", "/Users/"):
        assert needle not in source


def test_another_seed_gives_other_conversations(tool, tmp_path):
    tool.main(["--out", str(tmp_path), "--only", "support_desk", "--seed", "7"])
    other = (tmp_path / "support_desk" / "traces.jsonl").read_bytes()
    assert other != (SETS_DIR / "support_desk" / "traces.jsonl").read_bytes()


def test_missing_snli_file_is_a_clear_error(tool, tmp_path, capsys):
    rc = tool.main(["--out", str(tmp_path), "--only", "snli_calibration",
                    "--snli", str(tmp_path / "nope.jsonl")])
    assert rc == 2
    assert "--snli" in capsys.readouterr().err


def test_fleiss_kappa_of_the_tool(tool):
    assert tool.fleiss_kappa([["a", "a"], ["b", "b"], ["a", "b"]], ["a", "b"]) \
        == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="same number"):
        tool.fleiss_kappa([["a", "a"], ["a"]], ["a"])
