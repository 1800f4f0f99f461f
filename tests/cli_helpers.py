"""Running the ``maev`` CLI in-process from tests (importable as `cli_helpers`: tests/ is on
pytest's pythonpath)."""

from __future__ import annotations

from pathlib import Path

import pytest

from maev_kit.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``maev ARGS`` in-process: (exit code, stdout, stderr)."""
    try:
        got = main(args)  # a command may also return its exit code (click, not standalone)
        code = got if isinstance(got, int) and not isinstance(got, bool) else 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


def small_labeled_set(root: Path, name: str, *, per_split: int = 3, labels: bool = True) -> Path:
    """A copy of the bundled ``support_desk`` set cut to ``per_split`` conversations of each
    split (with their expectations, and their labels unless ``labels`` is false), named
    ``name``, in ``root / name``."""
    import json

    from maev_kit.datasets import bundled_set_path

    bundled = bundled_set_path("support_desk")
    out = root / name
    out.mkdir()
    manifest = json.loads((bundled / "manifest.json").read_text())
    splits = {s: ids[:per_split] for s, ids in manifest["splits"].items()}
    keep = {cid for ids in splits.values() for cid in ids}
    manifest.update(name=name, splits=splits)
    manifest.pop("counts", None)
    (out / "manifest.json").write_text(json.dumps(manifest))
    for file in ("traces.jsonl", "expectations.jsonl"):
        lines = [ln for ln in (bundled / file).read_text().splitlines()
                 if json.loads(ln)["conversation_id"] in keep]
        (out / file).write_text("\n".join(lines) + "\n")
    kept = [ln for ln in (bundled / "labels.jsonl").read_text().splitlines()
            if json.loads(ln)["item_id"].split("/")[0] in keep] if labels else []
    (out / "labels.jsonl").write_text("".join(ln + "\n" for ln in kept))
    return out
