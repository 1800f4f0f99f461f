"""A label store is the kit's, or it is not touched (issue #35 A).

A read never creates a schema; a SQLite file that is not a store (empty, another application's
database, a newer schema, not SQLite at all) comes out of a read byte for byte, with no journal
file left beside it; a write refuses a database holding tables that are not the kit's.
``LabelStore("x.db")`` on a SQLite file is a SQLite store, never a JSONL file to truncate.
Real SQLite files and a real PostgreSQL server (tests/labels/conftest.py).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from maev_kit.errors import InputError
from maev_kit.labels import LabelStore, LabelStoreError
from maev_kit.labels._backends import SCHEMA_VERSION


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` → sha256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _other_app_db(path: Path, *, wal: bool = False) -> Path:
    conn = sqlite3.connect(path, isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    for t in ("users", "orders", "invoices"):
        conn.execute(f"CREATE TABLE {t} (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute(f"INSERT INTO {t} (name) VALUES ('x')")
    conn.close()
    return path


def _newer_store(path: Path) -> Path:
    with LabelStore(f"sqlite:///{path}") as store:
        store.add("i1", "lost", annotator="ana")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER maev_labels_no_update")  # (a newer kit's own migration)
    conn.execute("UPDATE maev_meta SET value = '9' WHERE key = 'schema_version'")
    conn.execute("PRAGMA journal_mode = DELETE")  # no -wal/-shm left: one file to compare
    conn.close()
    return path


def test_a_read_of_a_store_not_there_yet_is_empty_and_creates_nothing(tmp_path):
    store = LabelStore(f"sqlite:///{tmp_path}/new.db")
    assert store.records() == [] and len(store) == 0 and store.annotators() == []
    assert store.database.schema_version() is None
    assert list(tmp_path.iterdir()) == []
    store.add("i1", "lost", annotator="ana")  # the first write creates it
    assert store.database.schema_version() == SCHEMA_VERSION
    assert [r.label for r in LabelStore(f"sqlite:///{tmp_path}/new.db").records()] == ["lost"]


def test_an_empty_file_reads_as_empty_and_stays_byte_for_byte(tmp_path):
    (tmp_path / "empty.db").write_bytes(b"")
    before = snapshot(tmp_path)
    assert LabelStore(f"sqlite:///{tmp_path}/empty.db").records() == []
    assert LabelStore(tmp_path / "empty.db").records() == []
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_another_applications_database_is_refused_and_left_unchanged(tmp_path, wal):
    db = _other_app_db(tmp_path / "c5.db", wal=wal)
    before = snapshot(tmp_path)
    for target in (f"sqlite:///{db}", db):
        store = LabelStore(target)
        for act in (store.records, lambda: store.add("i1", "lost", annotator="ana")):
            with pytest.raises(LabelStoreError, match=r"c5.db has 3 tables that are not a "
                                                      r"maev label store \(invoices, orders, "
                                                      r"users\)") as e:
                act()
            assert e.value.cause == "schema" and "\n" not in str(e.value)
        assert snapshot(tmp_path) == before


def test_a_newer_schema_store_is_refused_by_reads_and_writes_unchanged(tmp_path):
    db = _newer_store(tmp_path / "labels.db")
    before = snapshot(tmp_path)
    for act in (lambda s: s.records(), lambda s: s.add("i2", "lost", annotator="ben")):
        with pytest.raises(LabelStoreError, match="has schema version 9; this maev-kit"):
            act(LabelStore(f"sqlite:///{db}"))
    assert snapshot(tmp_path) == before


def test_a_file_that_is_not_sqlite_is_refused_through_a_url(tmp_path):
    (tmp_path / "notes.db").write_text("shopping list\n")
    before = snapshot(tmp_path)
    store = LabelStore(f"sqlite:///{tmp_path}/notes.db")
    for act in (store.records, lambda: store.add("i", "lost", annotator="a")):
        with pytest.raises(LabelStoreError, match="notes.db is not a SQLite database"):
            act()
    assert snapshot(tmp_path) == before


def test_a_sqlite_file_given_as_a_plain_path_is_a_sqlite_store(tmp_path):
    url = f"sqlite:///{tmp_path}/labels.db"
    LabelStore(url).add("i1", "lost", annotator="ana")
    LabelStore(url).close()
    plain = LabelStore(str(tmp_path / "labels.db"))
    assert plain.backend == "sqlite"
    assert [(r.item_id, r.label) for r in plain.records()] == [("i1", "lost")]
    plain.add("i2", "retained", annotator="ana")  # keeps what was there
    assert [r.item_id for r in LabelStore(url).records()] == ["i1", "i2"]
    assert LabelStore(tmp_path / "new.sqlite").backend == "sqlite"  # not there yet: by suffix
    assert LabelStore(tmp_path / "new.jsonl").backend == "jsonl"


def test_a_path_that_is_neither_labels_nor_sqlite_is_refused_untouched(tmp_path):
    (tmp_path / "photo.jsonl").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (tmp_path / "notes.txt").write_text("not labels at all\n")
    before = snapshot(tmp_path)
    for name in ("photo.jsonl", "notes.txt"):
        with pytest.raises(InputError, match=f"{name}: neither a labels file"):
            LabelStore(tmp_path / name)
    assert snapshot(tmp_path) == before


def test_a_last_label_line_without_its_newline_is_kept_not_cut(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"item_id": "i1", "annotator": "ana", "label": "lost"}')  # an editor's save
    store = LabelStore(path)
    store.add("i2", "retained", annotator="ana")
    assert [r.item_id for r in store.records()] == ["i1", "i2"]
    path.write_text('{"item_id": "i1", "annotator": "ana", "label": "lost"}\n{"item_id": "i')
    store.add("i3", "lost", annotator="ana")  # an interrupted write's fragment: cut
    assert [r.item_id for r in store.records()] == ["i1", "i3"]


# ------------------------------------------------------------------------- PostgreSQL
def _psql(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(sql)
        return cur.fetchall() if cur.description else []


def test_postgres_reads_create_nothing_and_foreign_tables_are_refused(pg_url):
    store = LabelStore(pg_url)
    assert store.records() == [] and store.database.schema_version() is None
    tables = "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
    assert _psql(pg_url, tables) == []  # the read created no table
    _psql(pg_url, "CREATE TABLE invoices (id int)")
    for act in (store.records, lambda: store.add("i1", "lost", annotator="ana")):
        with pytest.raises(LabelStoreError, match="schema 'public' has 1 table that is not a "
                                                  r"maev label store \(invoices\)"):
            act()
    assert _psql(pg_url, tables) == [("invoices",)]


def test_mlflow_is_refused_a_postgres_label_store(pg_url):
    pytest.importorskip("mlflow")
    from maev_kit.reporting._mlflow import check_tracking_uri

    url = pg_url.replace("postgresql://", "postgresql+psycopg://", 1)
    check_tracking_uri(url)  # an empty database: MLflow may make its tables there
    LabelStore(pg_url).add("i1", "lost", annotator="ana")
    with pytest.raises(InputError, match="the database is a maev label store"):
        check_tracking_uri(url)


def test_a_trace_file_is_never_a_label_store(tmp_path):
    """LabelStore on a file the kit knows as something else (here a trace file) refuses it,
    and the file is left byte for byte."""
    import shutil

    from maev_kit.datasets import bundled_set_path
    from maev_kit.errors import InputError
    from maev_kit.labels import LabelStore

    traces = tmp_path / "traces.jsonl"
    shutil.copy(bundled_set_path("support_desk") / "traces.jsonl", traces)
    before = traces.read_bytes()
    with pytest.raises(InputError, match="traces.jsonl: this is .*not a labels file"):
        LabelStore(traces)
    assert traces.read_bytes() == before
