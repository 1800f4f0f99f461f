"""Running the ``maev`` CLI in-process from tests (importable as `cli_helpers`: tests/ is on
pytest's pythonpath)."""

from __future__ import annotations

import pytest

from maev_kit.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``maev ARGS`` in-process: (exit code, stdout, stderr)."""
    try:
        main(args)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    got = capsys.readouterr()
    return code, got.out, got.err
