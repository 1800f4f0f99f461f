"""The notebooks run top to bottom, offline, are committed without outputs, write only under
their working folder (never into ``notebooks/``) and never record a label on their own."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
# What Run All must leave in the working folder (proof that outputs go there).
WRITES = {"01_explore_traces": {"chat.json"}, "02_label_retention": set(),
          "03_calibrate_judges": {"judge_card.json", "cache", "myset"},
          "04_coordination_report": {"report.html"},
          "05_team_session": {"team-session"},
          "06_criteria": {"criteria"}}


def test_the_six_notebooks_exist():
    assert [p.stem for p in NOTEBOOKS] == sorted(WRITES)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, path.name


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` → sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def label_annotators(folder: Path) -> list[str]:
    """The annotator of every label line in any JSONL file under ``folder``."""
    out = []
    for p in folder.rglob("*.jsonl"):
        for line in p.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip().startswith("{") else {}
            if "annotator" in row and "label" in row:
                out.append(row["annotator"])
    return out


def test_snapshot_and_label_scan_see_what_a_careless_notebook_would_do(tmp_path):
    """The checks below can fail: a new file, a changed file and a person's label all show."""
    (tmp_path / "a.txt").write_text("a")
    before = snapshot(tmp_path)
    (tmp_path / "a.txt").write_text("b")
    (tmp_path / "labels.jsonl").write_text(
        '{"item_id": "c/h0/f1", "annotator": "me", "label": "retained"}\n')
    after = snapshot(tmp_path)
    assert after != before and set(after) - set(before) == {"labels.jsonl"}
    assert label_annotators(tmp_path) == ["me"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline_and_writes_only_to_its_working_folder(path, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    real_before = snapshot(NOTEBOOK_DIR)
    # a copy of the notebooks folder, run as Jupyter does: the kernel starts in the folder
    copy = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOK_DIR, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    before = snapshot(copy)
    nb = nbformat.read(copy / path.name, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(copy)}})
    client.execute()

    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert snapshot(copy) == before, "Run All created or changed files inside notebooks/"
    assert snapshot(NOTEBOOK_DIR) == real_before
    work = tmp_path / "maev-work"
    assert {p.name for p in work.iterdir()} == WRITES[path.stem]
    assert set(p.name for p in tmp_path.iterdir()) == {"notebooks", "maev-work"}
    # no label is ever recorded by running a notebook; a demo label would have to say so
    people = [a for a in label_annotators(tmp_path) if "simulated" not in a.lower()]
    assert people == [], f"labels recorded under a person's name: {sorted(set(people))}"
