"""`maev labels export/import`: a database store and a set's labels.jsonl kept in sync.

The round trip labels.jsonl → sqlite:/// (or postgresql://) → labels.jsonl gives the same label
lines; both directions only append what is missing (idempotent), a labels file holding other
labels keeps them, bad input exits 2 with one line, and the password never shows.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run_cli

from maev_kit.datasets import bundled_set_path
from maev_kit.labels import LabelStore

run = run_cli  # maev ARGS in-process: (exit code, stdout, stderr)

# The PostgreSQL server fixture of tests/labels (a real server from this machine's binaries),
# loaded under its own name: the same session fixture, usable from tests/cli.
_spec = importlib.util.spec_from_file_location(
    "_labels_pg_conftest", Path(__file__).resolve().parents[1] / "labels" / "conftest.py")
assert _spec is not None and _spec.loader is not None
_pg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_pg)
pg_server = _pg.pg_server
pg_url = _pg.pg_url


@pytest.fixture
def set_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "sd"
    shutil.copytree(bundled_set_path("support_desk"), dst)
    return dst


def _records(path: Path | str) -> list:
    return LabelStore(str(path) if isinstance(path, Path) else path).records()


def _round_trip(set_copy: Path, url: str, capsys, tmp_path: Path) -> tuple[str, str]:
    """Import the set's labels into ``url``, twice; export them to a new file and into the set,
    twice. Returns every output of the six commands."""
    original = set_copy / "labels.jsonl"
    before = original.read_bytes()
    n = len(_records(original))
    shown: list[str] = []

    code, out, err = run(["labels", "import", str(set_copy), "--to", url], capsys)
    assert code == 0, err
    assert out.startswith(f"{n} label line(s) copied from ")
    shown += [out, err]
    code, out, err = run(["labels", "import", str(original), "--to", url], capsys)
    assert code == 0, err
    assert out.startswith("0 label line(s) copied") and "(already in sync)" in out
    shown += [out, err]
    assert _records(url) == _records(original)

    exported = tmp_path / "export" / "labels.jsonl"
    exported.parent.mkdir()
    code, out, err = run(["labels", "export", url, "--to", str(exported)], capsys)
    assert code == 0, err
    assert out.startswith(f"{n} label line(s) copied")
    shown += [out, err]
    assert _records(exported) == _records(original)  # the round trip is equal

    for _ in range(2):  # into the set itself: already there, the file is untouched
        code, out, err = run(["labels", "export", url, "--to", str(set_copy)], capsys)
        assert code == 0, err
        assert out.startswith("0 label line(s) copied")
        shown += [out, err]
    assert original.read_bytes() == before
    return "\n".join(shown), str(exported)


def test_round_trip_jsonl_sqlite_jsonl_is_equal(set_copy: Path, tmp_path: Path, capsys):
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    text, _ = _round_trip(set_copy, url, capsys, tmp_path)
    assert url in text  # nothing to hide in a SQLite URL


def test_round_trip_through_postgresql_never_shows_the_password(
        set_copy: Path, tmp_path: Path, capsys, pg_server, pg_url: str):
    text, exported = _round_trip(set_copy, pg_url, capsys, tmp_path)
    assert pg_server.password not in text
    assert ":***@" in text
    assert pg_server.password not in Path(exported).read_text()
    assert "postgresql" not in Path(exported).read_text()


def test_export_appends_only_the_missing_lines(set_copy: Path, tmp_path: Path, capsys):
    """A labels file that holds other labels keeps them, line for line: nothing rewritten."""
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    db = LabelStore(url)
    db.add("sd-001/h0/f1", "lost", annotator="zoe", note="from the database")
    db.add("sd-002/h0/f1", "retained", annotator="zoe")
    labels = set_copy / "labels.jsonl"
    theirs = LabelStore(labels)
    theirs.append(_records(url)[0])  # the file already holds the first database line
    theirs.add("sd-003/h0/f1", "contradicted", annotator="yan")  # and one the database lacks
    before = labels.read_bytes()
    held = len(_records(labels))  # the set's own labels, the database's first, yan's

    code, out, err = run(["labels", "export", url, "--to", str(set_copy)], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == f"1 label line(s) copied from {url} to labels.jsonl"
    assert out.splitlines()[1] == (f"labels.jsonl now holds {held + 1} line(s); {held - 1} "
                                   "line(s) it held that the source lacks were kept")
    after = labels.read_bytes()
    assert after.startswith(before)
    added = [json.loads(line) for line in after[len(before):].decode().splitlines()]
    assert [(r["item_id"], r["label"]) for r in added] == [("sd-002/h0/f1", "retained")]
    code, out, _ = run(["labels", "export", url, "--to", str(set_copy)], capsys)
    assert code == 0 and out.startswith("0 label line(s) copied")
    assert labels.read_bytes() == after


@pytest.mark.parametrize("args, says", [
    (["export", "labels.jsonl", "--to", "out.jsonl"], "not a label store URL"),
    (["export", "postgresql://ana:pw-XY@h/db", "--to", "x.jsonl"], None),  # see below
    (["import", "nope.jsonl", "--to", "sqlite:///l.db"], "no such labels file"),
    (["import", "labels.jsonl", "--to", "labels2.jsonl"], "not a label store URL"),
    (["export", "sqlite:///l.db", "--to", "support_desk"], "bundled with maev-kit"),
    (["export", "sqlite:///l.db", "--to", "folder"], "without manifest.json"),
    (["export", "sqlite:///l.db", "--to", "out.csv"], "ending in .jsonl"),
    (["import", "sqlite:///l.db", "--to", "sqlite:///m.db"], "not a store URL"),
    (["import", "bad.jsonl", "--to", "sqlite:///l.db"], "bad.jsonl"),
])
def test_bad_input_exits_2_with_one_line(args, says, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "labels.jsonl").write_text("")
    (tmp_path / "bad.jsonl").write_text('{"item_id": "a", "label": "maybe"}\n{}\n')
    if says is None:  # an unreachable server: exit 2, the password hidden
        args = ["export", "postgresql://ana:pw-XY@127.0.0.1:1/db?connect_timeout=2",
                "--to", "x.jsonl"]
    code, out, err = run(["labels", *args], capsys)
    assert code == 2, (out, err)
    assert out == ""
    if says is None:
        assert "pw-XY" not in err and ":***@" in err
        assert len(err.strip().splitlines()) == 1
    else:
        assert says in err, err
        if "bad.jsonl" not in says:
            assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "l.db").exists() or says != "bundled with maev-kit"


def test_the_labels_help_lists_export_and_import(capsys):
    code, out, _ = run(["labels", "--help"], capsys)
    assert code == 0
    assert "maev labels export STORE_URL --to SET" in out
    assert "maev labels import SET --to STORE_URL" in out
