"""LabelStore on every backend — labels.jsonl, SQLite, PostgreSQL — with the same semantics.

The PostgreSQL tests run against a real server this session starts (``pg_server`` in
conftest.py: initdb + pg_ctl in a temp folder); nothing is mocked.
"""

from __future__ import annotations

import logging
import itertools
import os
import pickle
import sqlite3
import subprocess
import sys
import time
import traceback

import pytest

from maev_kit.calibration import load_human_labels
from maev_kit.labels import (
    LabelingSession,
    LabelRecord,
    LabelStore,
    LabelStoreError,
    copy_labels,
    open_label_store,
)
from maev_kit.labels._backends import SCHEMA_VERSION, redact_url
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message

BACKENDS = ["jsonl", "sqlite", "postgresql"]
DATABASES = ["sqlite", "postgresql"]
_NEXT = itertools.count(1)  # one number per store made in this session


@pytest.fixture
def make_url(request, tmp_path):
    """``make_url(kind)``: a new, empty store of that kind (a path for jsonl)."""
    def make(kind: str) -> str:
        n = next(_NEXT)
        if kind == "jsonl":
            return str(tmp_path / f"labels{n}.jsonl")
        if kind == "sqlite":
            return f"sqlite:///{tmp_path}/labels{n}.db"  # absolute: sqlite:////tmp/…
        server = request.getfixturevalue("pg_server")
        return server.create_database(f"labels_b{os.getpid()}_{n}")

    return make


@pytest.fixture(params=BACKENDS)
def url(request, make_url):
    return make_url(request.param)


@pytest.fixture(params=DATABASES)
def db_url(request, make_url):
    return make_url(request.param)


def _raw(store: LabelStore):
    """A raw connection to a database store's own database (for what the API refuses)."""
    db = store.database
    assert db is not None
    if db.kind == "sqlite":
        return sqlite3.connect(db.path, isolation_level=None)
    import psycopg

    return psycopg.connect(db._conninfo, autocommit=True)


def test_the_same_semantics_on_every_backend(url):
    store = open_label_store(url)
    assert store.records() == [] and len(store) == 0
    rec = store.add("i1", "lost", annotator="ana", note='says "ACCT" — ünïcode')
    store.add("i1", "retained", annotator="ana")
    store.add("i1", "contradicted", annotator="ben")
    store.add("i2", "skip", annotator="ben")
    store.extend([LabelRecord(item_id="g", annotator="gold", label="lost", source="gold"),
                  LabelRecord(item_id="h", annotator="gold", label="retained")])
    assert rec.created_at.endswith("Z")
    again = LabelStore(url)  # a fresh view reads the same history
    for s in (store, again):
        assert [(r.item_id, r.annotator, r.label) for r in s.labels()] == [
            ("i1", "ana", "lost"), ("i1", "ana", "retained"), ("i1", "ben", "contradicted"),
            ("i2", "ben", "skip"), ("g", "gold", "lost"), ("h", "gold", "retained")]
        assert s.records()[0] == rec
        assert [r.source for r in s.records()[-2:]] == ["gold", None]
        assert {k: r.label for k, r in s.latest().items()} == {
            ("i1", "ana"): "retained", ("i1", "ben"): "contradicted", ("g", "gold"): "lost",
            ("h", "gold"): "retained"}
        assert set(s.latest("ben", include_skip=True)) == {("i1", "ben"), ("i2", "ben")}
        assert s.annotators() == ["ana", "ben", "gold"]
        assert list(s.to_frame()["label"]) == ["retained", "contradicted", "lost", "retained"]
        assert len(s) == 6
    with pytest.raises(ValueError, match="`label` must be one of"):
        store.add("i", "maybe", annotator="a")
    with pytest.raises(TypeError, match="expected a LabelRecord"):
        store.append({"item_id": "c"})  # type: ignore[arg-type]
    assert len(store) == 6
    store.close()


def test_backend_location_and_repr(make_url, tmp_path):
    assert LabelStore(tmp_path / "l.jsonl").backend == "jsonl"
    s = LabelStore(make_url("sqlite"))
    assert s.backend == "sqlite" and s.path is None and repr(s).startswith("LabelStore('sqlite:")
    s = LabelStore("postgresql://ana:s3cret@db.example:5433/labels?sslmode=require")
    assert s.backend == "postgresql" and s.path is None
    assert repr(s) == "LabelStore('postgresql://ana:***@db.example:5433/labels?sslmode=require')"
    assert s.location == "postgresql://ana:***@db.example:5433/labels?sslmode=require"
    assert redact_url("postgres://h/db?user=a&password=s3cret&x=1") == \
        "postgres://h/db?user=a&password=***&x=1"
    assert open_label_store(s) is s


def test_history_round_trips_through_jsonl_idempotently(url, make_url, tmp_path):
    src = LabelStore(tmp_path / "src.jsonl")
    src.add("i1", "lost", annotator="ana", note="n")
    src.add("i1", "retained", annotator="ana")
    src.add("i1", "retained", annotator="ana")  # a repeated line is kept as a line
    src.extend([LabelRecord(item_id="g", annotator="gold", label="lost", source="gold")])
    src.add("i2", "lost", annotator="ana", in_sample=False)  # #36: the sample's marks travel
    src.add("i3", "lost", annotator="ana", in_sample=True)
    assert copy_labels(src, url) == 6
    assert copy_labels(src, url) == 0  # run again: nothing twice
    assert LabelStore(url).records() == src.records()
    assert [r.in_sample for r in LabelStore(url).records()][-3:] == [None, False, True]
    out = tmp_path / "export.jsonl"
    assert copy_labels(url, out) == 6 and copy_labels(url, out) == 0
    assert out.read_bytes() == (tmp_path / "src.jsonl").read_bytes()


def test_a_retry_with_the_same_label_id_stores_the_label_once(db_url):
    store = LabelStore(db_url)
    rec = LabelRecord(item_id="i1", annotator="ana", label="lost", created_at="t1")
    store.append(rec, label_id="click-1")
    store.append(rec, label_id="click-1")  # the acknowledgement was lost: sent again
    store.add("i1", "lost", annotator="ana", label_id="click-1")  # add retried (new created_at)
    assert store.records() == [rec]
    store.extend([rec, rec.model_copy(update={"label": "retained"})],
                 label_ids=["click-1", "click-2"])  # one old, one new: one row added
    assert [r.label for r in store.records()] == ["lost", "retained"]
    with pytest.raises(LabelStoreError, match="label_id 'click-1' is already used") as e:
        store.add("i1", "contradicted", annotator="ana", label_id="click-1")
    assert e.value.cause == "conflict"
    assert len(store) == 2
    with pytest.raises(ValueError, match="one unique, non-blank id per record"):
        store.extend([rec, rec], label_ids=["x", "x"])
    entries = store.database.entries()
    assert [i for i, _ in entries] == ["click-1", "click-2"]


def test_rows_cannot_be_updated_or_deleted(db_url):
    store = LabelStore(db_url)
    store.add("i1", "lost", annotator="ana")
    conn = _raw(store)
    try:
        statements = ["UPDATE maev_labels SET label = 'retained'", "DELETE FROM maev_labels"]
        if store.backend == "postgresql":
            statements.append("TRUNCATE maev_labels")
        for sql in statements:
            with pytest.raises(Exception, match="append-only"):
                conn.execute(sql)
    finally:
        conn.close()
    assert [r.label for r in store.records()] == ["lost"]


def test_schema_is_created_on_first_write_versioned_and_a_newer_one_refused(db_url):
    store = LabelStore(db_url)
    assert store.records() == [] and store.database.schema_version() is None  # reads: nothing
    store.add("i1", "lost", annotator="ana")
    assert store.database.schema_version() == SCHEMA_VERSION == 1
    conn = _raw(store)
    try:
        rows = dict(conn.execute("SELECT key, value FROM maev_meta").fetchall())
        assert rows["schema_version"] == "1" and rows["created_by"].startswith("maev-kit ")
        conn.execute("UPDATE maev_meta SET value = '2' WHERE key = 'schema_version'")
    finally:
        conn.close()
    with pytest.raises(LabelStoreError, match="has schema version 2; this maev-kit .* reads "
                                              "versions up to 1: upgrade maev-kit") as e:
        LabelStore(db_url).records()
    assert e.value.cause == "schema" and "\n" not in str(e.value)


def test_a_store_made_before_the_sample_mark_reads_as_before_and_gains_it(db_url):
    """#36: a store whose table has no in_sample column (made by an older kit) is read with
    no marks, nothing written; the first write adds the column, and the mark is kept."""
    store = LabelStore(db_url)
    store.add("i1", "lost", annotator="ana")
    conn = _raw(store)
    try:
        conn.execute("ALTER TABLE maev_labels DROP COLUMN in_sample")  # as an older kit made it
    finally:
        conn.close()
    old = LabelStore(db_url)
    assert [(r.item_id, r.in_sample) for r in old.records()] == [("i1", None)]
    old.add("i2", "retained", annotator="ana", in_sample=False)
    assert [(r.item_id, r.in_sample) for r in LabelStore(db_url).records()] == \
        [("i1", None), ("i2", False)]


def test_a_foreign_maev_labels_table_is_refused(make_url):
    for kind in DATABASES:
        store = LabelStore(make_url(kind))
        conn = _raw(store)
        try:
            conn.execute("CREATE TABLE maev_labels (x integer)")
        finally:
            conn.close()
        with pytest.raises(LabelStoreError, match="no maev-kit label store made"):
            store.add("i", "lost", annotator="a")


def test_sqlite_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    LabelStore("sqlite:///rel/labels.db").add("i", "lost", annotator="a")  # relative to cwd
    assert (tmp_path / "rel" / "labels.db").is_file()
    LabelStore(f"sqlite:///{tmp_path}/abs.db").add("i", "lost", annotator="a")
    assert (tmp_path / "abs.db").is_file()
    conn = sqlite3.connect(tmp_path / "abs.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    for bad in ("sqlite://", "sqlite:///", "sqlite:///x.db?mode=ro", f"sqlite:///{tmp_path}"):
        with pytest.raises(LabelStoreError, match="sqlite"):
            LabelStore(bad)
    (tmp_path / "not-a-db").write_text("hello, I am text\n" * 100)
    with pytest.raises(LabelStoreError, match="not-a-db is not a SQLite database; nothing was read or written"):
        LabelStore(f"sqlite:///{tmp_path}/not-a-db").records()


def test_an_unreachable_server_fails_fast_with_one_clear_line(pg_server):
    from maev_kit.testing import free_port

    url = f"postgresql://ana:{pg_server.password}@127.0.0.1:{free_port()}/labels"
    store = LabelStore(url)
    t = time.monotonic()
    with pytest.raises(LabelStoreError) as e:
        store.add("i", "lost", annotator="ana")
    assert time.monotonic() - t < 5
    msg = str(e.value)
    assert e.value.cause == "unreachable" and "\n" not in msg
    assert msg.startswith("label store postgresql://ana:***@127.0.0.1:")
    assert "append failed" in msg and "Connection refused" in msg and "not acknowledged" in msg


def test_a_wrong_password_is_an_auth_error_without_the_password(pg_server):
    wrong = pg_server.url.replace(pg_server.password, "wrong-Secret-123")
    t = time.monotonic()
    with pytest.raises(LabelStoreError) as e:
        LabelStore(wrong).records()
    assert time.monotonic() - t < 5
    assert e.value.cause == "auth" and "password authentication failed" in str(e.value)
    assert "wrong-Secret-123" not in str(e.value)


def test_the_password_never_shows(pg_server, pg_url, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    store = LabelStore(pg_url)
    store.add("i1", "lost", annotator="ana", note="a note")
    seen = [repr(store), str(store), store.location, repr(store.database)]
    pg_server.restart()  # a lost connection, retried
    store.add("i2", "lost", annotator="ana")
    password = pg_server.password
    assert password in pg_url
    refused = pg_url.replace(password, password + "x")
    for bad in (refused, pg_url.rsplit("/", 1)[0] + "/no_such_db",
                pg_url.replace(str(pg_server.port), "1")):
        with pytest.raises(LabelStoreError) as e:
            LabelStore(bad).add("i", "lost", annotator="ana")
        seen += [str(e.value), "".join(traceback.format_exception(e.value))]
    out = tmp_path / "export.jsonl"
    copy_labels(store, out)
    seen += [out.read_text(), pickle.dumps(store.records()).decode("latin-1"),
             caplog.text, pg_server.server_log(), store.to_frame(latest=False).to_string()]
    for text in seen:
        assert password not in text
    assert "ana:***@" in seen[0]


def test_the_store_reconnects_after_a_server_restart(pg_server, pg_url):
    store = LabelStore(pg_url, retry_for=20)
    store.add("before", "lost", annotator="ana")
    pg_server.restart()
    store.add("after", "retained", annotator="ana")
    assert [r.item_id for r in store.records()] == ["before", "after"]


WRITER = """
import sys
from maev_kit.labels import LabelStore
store = LabelStore(sys.argv[1])
name = sys.argv[2]
for i in range(int(sys.argv[3])):
    store.add(f"item-{i}", ("retained", "lost", "contradicted")[i % 3], annotator=name,
              note=name * (1 + i % 50))
"""


def test_processes_writing_one_store_at_once(db_url):
    n = 100
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, db_url, name, str(n)])
             for name in ("ana", "ben", "cy")]
    for p in procs:
        assert p.wait(timeout=60) == 0
    recs = LabelStore(db_url).records()
    assert len(recs) == 3 * n
    for name in ("ana", "ben", "cy"):
        mine = [r for r in recs if r.annotator == name]  # each writer's order is kept
        assert [r.item_id for r in mine] == [f"item-{i}" for i in range(n)]
        assert all(r.note == name * (1 + i % 50) for i, r in enumerate(mine))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_opens_its_own_connection(db_url):
    store = LabelStore(db_url)
    store.add("parent-1", "lost", annotator="ana")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            store.add("child", "retained", annotator="ben")
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    store.add("parent-2", "lost", annotator="ana")  # the parent's connection still works
    assert [r.item_id for r in store.records()] == ["parent-1", "child", "parent-2"]


def test_callers_take_a_url_like_a_path(db_url):
    items = [RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", f"fact {i}",
                           (Message("user", f"stated {i}", 0, True),),
                           (Message("b", f"after {i}", 2),), "a", "b") for i in range(3)]
    s = LabelingSession(items, db_url, annotator="ana", order="given")
    s.label("lost")
    s.label("retained")
    assert s.undo().item_id == "c1/h0/f1"
    again = LabelingSession(items, db_url, annotator="ana", order="given")  # resume
    assert again.current.item_id == "c1/h0/f1"
    assert load_human_labels(LabelStore(db_url)) == {"c0/h0/f1": {"ana": "lost"}}


FIRST_USE = """
import sys, time
from maev_kit.labels import LabelStore
store = LabelStore(sys.argv[1])
while time.time() < float(sys.argv[3]):
    time.sleep(0.001)
store.add("first", "lost", annotator=sys.argv[2])
"""


def test_many_processes_using_a_new_store_at_once_create_its_schema_once(db_url):
    at = time.time() + 2.5  # after every interpreter has started
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_USE, db_url, f"a{i}", str(at)],
                              stderr=subprocess.PIPE) for i in range(6)]
    errors = [p.communicate(timeout=60)[1].decode()[-500:] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    store = LabelStore(db_url)
    assert sorted(store.annotators()) == [f"a{i}" for i in range(6)]
    assert store.database.schema_version() == 1
