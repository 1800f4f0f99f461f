"""The kit touches only what is its own (issue #35): wrong input to any command gives one clear
line, exit 2, no traceback — and no existing file changes.

Each row runs ``maev`` in-process inside one folder of prepared inputs (a label store, another
application's SQLite database, a newer-schema store, a text file named ``.db``, an empty file,
a judge card, a saved result, Parquet traces…) and compares the bytes of every file in the
folder (and the bundled set) before and after: nothing changed, appeared or vanished.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import warnings
from pathlib import Path

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.labels import LabelStore

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "labeled_sets" / "support_desk"


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file under ``roots`` → its sha256 (the bytes, compared before and after)."""
    return {str(p): hashlib.sha256(p.read_bytes()).digest()
            for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def _at_rest(db: Path) -> None:
    """One file, as a store at rest (no -wal / -shm beside it)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = tmp_path_factory.mktemp("own_files")
    small_labeled_set(w, "set", per_split=4)
    (w / "labels.jsonl").write_bytes((w / "set" / "labels.jsonl").read_bytes())
    with LabelStore(f"sqlite:///{w / 'store.db'}") as store:
        store.add("c-001/h0/f1", "lost", annotator="ana")
    _at_rest(w / "store.db")
    with LabelStore(f"sqlite:///{w / 'newer.db'}") as store:
        store.add("c-001/h0/f1", "lost", annotator="ana")
    conn = sqlite3.connect(w / "newer.db", isolation_level=None)
    conn.execute("DROP TRIGGER maev_labels_no_update")
    conn.execute("UPDATE maev_meta SET value = '7' WHERE key = 'schema_version'")
    conn.close()
    _at_rest(w / "newer.db")
    conn = sqlite3.connect(w / "c5.db")
    for t in ("users", "orders", "invoices"):
        conn.execute(f"CREATE TABLE {t} (id INTEGER)")
    conn.commit()
    conn.close()
    (w / "notes.db").write_text("a shopping list\n")
    (w / "empty.db").write_bytes(b"")
    (w / "bad_names.jsonl").write_text(
        json.dumps({"item_id": "c-001/h0/f1", "annotator": "ana", "label": "lost"}) + "\n"
        + json.dumps({"item_id": "c-001/h0/f1", "annotator": "../../ben", "label": "lost"})
        + "\n")
    other = shutil.copytree(w / "set", w / "other")
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "name": "other"}))
    from maev_kit.evaluation import evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluate(w / "set", judge=None, progress=False, n_resamples=100).save(w / "result")
    bad = shutil.copytree(w / "result", w / "result_bad")
    (bad / "ledger.parquet").write_bytes((bad / "ledger.parquet").read_bytes()[:-30])
    run_plain(["convert", str(w / "set" / "traces.jsonl"), str(w / "t.parquet")])
    (w / "cut.parquet").write_bytes((w / "t.parquet").read_bytes()[:200])
    code = run_plain(["calibrate", str(w / "set"), "--judge", "heuristic", "--resamples", "200",
                      "--no-progress", "--card", str(w / "card.json")])
    assert code == 0
    return w


def run_plain(args: list[str]) -> int:
    from maev_kit.cli import main

    try:
        got = main(args)
        return got if isinstance(got, int) and not isinstance(got, bool) else 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1


# (args, a piece of text the message must contain)
ROWS: list[tuple[list[str], str]] = [
    # A. label stores: a read never writes; what is not the kit's is refused, untouched
    (["agree", "sqlite:///c5.db"], "c5.db has 3 tables that are not a maev label store"),
    (["agree", "sqlite:///newer.db"], "has schema version 7; this maev-kit"),
    (["agree", "sqlite:///notes.db"], "notes.db is not a SQLite database"),
    (["agree", "sqlite:///empty.db"], "no labels"),
    (["agree", "c5.db"], "c5.db has 3 tables that are not a maev label store"),
    (["agree", "sqlite:///missing.db"], "no SQLite label store"),
    (["labels", "export", "sqlite:///c5.db", "--to", "out.jsonl"], "c5.db has 3 tables"),
    (["labels", "export", "sqlite:///newer.db", "--to", "out.jsonl"], "schema version 7"),
    (["labels", "export", "sqlite:///missing.db", "--to", "out.jsonl"], "no SQLite label store"),
    (["labels", "import", "labels.jsonl", "--to", "sqlite:///c5.db"], "c5.db has 3 tables"),
    (["labels", "import", "labels.jsonl", "--to", "sqlite:///newer.db"], "schema version 7"),
    (["labels", "import", "labels.jsonl", "--to", "sqlite:///notes.db"], "not a SQLite database"),
    # B. MLflow: checked before anything runs
    (["score", "set", "--no-progress", "--mlflow=sqlite:///store.db"],
     "store.db is a maev label store"),
    (["report", "set", "--no-progress", "--mlflow=sqlite:///c5.db"],
     "c5.db has 3 tables and is not an MLflow tracking store"),
    (["score", "set", "--no-progress", "--mlflow=sqlite:///notes.db"], "not a SQLite database"),
    (["score", "set", "--no-progress", "--mlflow=gopher://x/y"], "does not take the scheme"),
    # C. the drift gate cannot judge
    (["check", "card.json", "--set", "other", "--no-progress", "--resamples", "200"],
     "the card was made on labeled set 'set', not 'other'"),
    # D. what the kit wrote, read back: a changed table or a cut file is named
    (["validate", "result_bad"], "result_bad/manifest.json › tables.ledger.sha256: "
                                 "ledger.parquet does not match the manifest"),
    (["report", "result_bad", "--out", "r.html"], "tables.ledger.sha256"),
    (["score", "result_bad"], "tables.ledger.sha256"),
    (["score", "result", "--judge-card", "card.json"], "result is a saved result"),
    (["score", "cut.parquet", "--no-progress"], "cut.parquet: not a readable Parquet file"),
    (["validate", "cut.parquet"], "cut.parquet: not a readable Parquet file"),
    # E. names and messages for people
    (["agree", "bad_names.jsonl"], "bad_names.jsonl:2 › annotator: annotator '../../ben' is "
                                   "not a valid name"),
    (["session", "plan", "set", "--annotator", "ana", "--annotator", "a/b"],
     "'a/b' is not a valid name"),
]


@pytest.mark.parametrize("args, expected", ROWS, ids=[" ".join(r[0])[:60] for r in ROWS])
def test_wrong_input_changes_no_file(args: list[str], expected: str, world: Path,
                                     capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world)
    before = snapshot(world, BUNDLED)
    code, out, err = run_cli(args, capsys)
    assert code == 2, err
    assert "Traceback" not in err and "errors.pydantic.dev" not in err and "type=" not in err
    assert expected in err, err
    assert len(err.strip().splitlines()) == (2 if args[0] == "validate" else 1), err
    assert snapshot(world, BUNDLED) == before


def test_reads_of_an_empty_file_leave_it_as_it_was(world: Path, capsys, monkeypatch) -> None:
    """An empty file is an empty store to a read: nothing to export, nothing written."""
    monkeypatch.chdir(world)
    before = snapshot(world)
    code, out, err = run_cli(["labels", "export", "sqlite:///empty.db", "--to", "e.jsonl"],
                             capsys)
    assert code == 0, err
    assert "0 label line(s) copied" in out
    assert snapshot(world) == before  # neither the empty file nor a new e.jsonl


def test_a_missing_output_folder_is_created_by_labels_export(world: Path, capsys,
                                                             monkeypatch) -> None:
    monkeypatch.chdir(world)
    code, out, err = run_cli(["labels", "export", "sqlite:///store.db", "--to",
                              "new/dir/x.jsonl"], capsys)
    assert code == 0, err
    assert [json.loads(ln)["annotator"] for ln in
            (world / "new" / "dir" / "x.jsonl").read_text().splitlines()] == ["ana"]
    shutil.rmtree(world / "new")
