"""Criterion labels in the SQLite and PostgreSQL stores, as in labels.jsonl; stores made before
(by the schema below, copied literally from the kit that made them) keep every row and gain
the table of criterion labels on their first criterion label.

Real SQLite files and a real PostgreSQL server (``pg_server``: those tests are ``slow``).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from maev_kit.calibration import calibrate
from maev_kit.criteria import Criterion
from maev_kit.labels import LabelRecord, LabelStore, LabelStoreError, copy_labels

from criteria.conftest import make_traces, says_amount

#: The schema of a store made by maev-kit before criterion labels (schema version 1, with the
#: ``in_sample`` column), kept as it was in data files, so the migration is tested against what
#: exists.
_DATA = Path(__file__).parent / "data"


def _statements(name: str) -> tuple[str, ...]:
    text = (_DATA / name).read_text(encoding="utf-8")
    body = "\n".join(ln for ln in text.splitlines() if not ln.startswith("--"))
    return tuple(s.strip() for s in body.split(";\n") if s.strip())


OLD_SQLITE = _statements("labels_v1.sqlite.sql")
OLD_PG = _statements("labels_v1.postgresql.sql")
OLD_META = ("INSERT INTO maev_meta (key, value) VALUES ('schema_version', '1'), "
            "('created_by', 'maev-kit 0.1.0')")
#: What an older kit inserted (its own statement; ``{p}`` its placeholder).
OLD_INSERT = ("INSERT INTO maev_labels (label_id, item_id, annotator, label, note, created_at, "
              "source, in_sample) VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p})")
OLD_ROWS = [("old-1", "c1/h0/f1", "ana", "lost", "asked again", "2026-01-01T00:00:00.000Z",
             None, None),
            ("old-2", "c1/h0/f1", "ben", "retained", "", "2026-01-01T00:00:01.000Z", None, True),
            ("old-3", "c2/h0/f1", "ana", "skip", "", "2026-01-01T00:00:02.000Z", "undo", False)]
GROUNDED = Criterion("grounded", scope="conversation", labels=("yes", "no"), positive="yes",
                     question="Is the final answer grounded in a tool result?")
_N = itertools.count(1)


def _connect(kind: str, url: str):
    if kind == "sqlite":
        return sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None), "?"
    import psycopg

    return psycopg.connect(url, autocommit=True), "%s"


def _old_kit(kind: str, url: str, rows=OLD_ROWS) -> None:
    """A store as the kit before criterion labels made it, holding ``rows``."""
    conn, p = _connect(kind, url)
    try:
        for sql in OLD_SQLITE if kind == "sqlite" else OLD_PG:
            conn.execute(sql)
        conn.execute(OLD_META)
        for row in rows:
            conn.execute(OLD_INSERT.format(p=p), row)
    finally:
        conn.close()


def _tables(kind: str, url: str) -> dict[str, int]:
    conn, _ = _connect(kind, url)
    try:
        if kind == "sqlite":
            names = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite%'").fetchall()]
        else:
            names = [r[0] for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()]
        return {n: conn.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names}
    finally:
        conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def store_url(request, tmp_path):
    """(kind, URL) of a new, empty database store (PostgreSQL: ``slow``, as every test on the
    server is — it is reached through ``getfixturevalue``, which the marker cannot see)."""
    n = next(_N)
    if request.param == "sqlite":
        return "sqlite", f"sqlite:///{tmp_path}/labels{n}.db"
    server = request.getfixturevalue("pg_server")
    return "postgresql", server.create_database(f"labels_c{os.getpid()}_{n}")


def _view(records):
    return [(r.item_id, r.annotator, r.label, r.criterion) for r in records]


def test_criterion_labels_read_back_as_from_labels_jsonl(store_url, tmp_path):
    kind, url = store_url
    db, jsonl = LabelStore(url), LabelStore(tmp_path / "same.jsonl")
    for store in (db, jsonl):
        store.add("c1/h0/f1", "lost", annotator="ana")
        store.add("grounded:c1", "yes", annotator="ana", criterion="grounded", note="a tool said")
        store.add("grounded:c1", "no", annotator="ben", criterion="grounded", in_sample=True)
        store.extend([LabelRecord(item_id="c1/h0/f1", annotator="ben", label="retained"),
                      LabelRecord(item_id="grounded:c2", annotator="ana", label="skip",
                                  criterion="grounded"),
                      LabelRecord(item_id="grounded:c1", annotator="ana", label="no",
                                  criterion="grounded", source="gold")])
    got, want = LabelStore(url).records(), jsonl.records()
    assert _view(got) == _view(want) == [
        ("c1/h0/f1", "ana", "lost", None), ("grounded:c1", "ana", "yes", "grounded"),
        ("grounded:c1", "ben", "no", "grounded"), ("c1/h0/f1", "ben", "retained", None),
        ("grounded:c2", "ana", "skip", "grounded"), ("grounded:c1", "ana", "no", "grounded")]
    # the same record shape, field for field (created_at aside: written at different times)
    strip = [r.model_dump(exclude={"created_at"}) for r in got]
    assert strip == [r.model_dump(exclude={"created_at"}) for r in want]
    assert {k: r.label for k, r in LabelStore(url).latest().items()} == {
        ("c1/h0/f1", "ana"): "lost", ("c1/h0/f1", "ben"): "retained",
        ("grounded:c1", "ana"): "no", ("grounded:c1", "ben"): "no"}
    assert _tables(kind, url)["maev_criterion_labels"] == 4  # its own table
    with pytest.raises(ValueError, match="must be one of"):
        db.add("x", "yes", annotator="ana")  # a free label still needs its criterion


def test_an_older_store_keeps_every_row_and_gains_criterion_labels(store_url):
    kind, url = store_url
    _old_kit(kind, url)
    store = LabelStore(url)
    old = [(r.item_id, r.annotator, r.label, r.note, r.source, r.in_sample, r.criterion)
           for r in store.records()]
    assert old == [("c1/h0/f1", "ana", "lost", "asked again", None, None, None),
                   ("c1/h0/f1", "ben", "retained", "", None, True, None),
                   ("c2/h0/f1", "ana", "skip", "", "undo", False, None)]
    store.add("c3/h0/f1", "contradicted", annotator="ana")  # a retention label changes nothing
    assert _tables(kind, url) == {"maev_meta": 2, "maev_labels": 4}
    store.add("grounded:c1", "yes", annotator="ana", criterion="grounded")  # the migration
    assert _tables(kind, url) == {"maev_meta": 2, "maev_labels": 4, "maev_criterion_labels": 1}
    # an older kit, still in use, writes its retention label by its own statement: after it
    conn, p = _connect(kind, url)
    try:
        conn.execute(OLD_INSERT.format(p=p), ("old-4", "c4/h0/f1", "ben", "lost", "", "", None,
                                             None))
        assert conn.execute("SELECT value FROM maev_meta WHERE key = 'schema_version'"
                            ).fetchone()[0] == "1"  # older kits still open it
        for sql in ("UPDATE maev_criterion_labels SET label = 'no'",
                    "DELETE FROM maev_criterion_labels"):
            with pytest.raises(Exception, match="maev_criterion_labels is append-only"):
                conn.execute(sql)
    finally:
        conn.close()
    store.add("grounded:c2", "no", annotator="ben", criterion="grounded")
    assert [(r.item_id, r.label, r.criterion) for r in LabelStore(url).records()] == [
        ("c1/h0/f1", "lost", None), ("c1/h0/f1", "retained", None), ("c2/h0/f1", "skip", None),
        ("c3/h0/f1", "contradicted", None), ("grounded:c1", "yes", "grounded"),
        ("c4/h0/f1", "lost", None), ("grounded:c2", "no", "grounded")]
    assert [i for i, _ in store.database.entries()][:3] == ["old-1", "old-2", "old-3"]


def test_label_ids_are_unique_across_both_tables_and_retries_store_once(store_url):
    kind, url = store_url
    store = LabelStore(url)
    store.add("grounded:c1", "yes", annotator="ana", criterion="grounded", label_id="k1")
    store.add("grounded:c1", "yes", annotator="ana", criterion="grounded", label_id="k1")  # retry
    assert len(store) == 1
    with pytest.raises(LabelStoreError, match="label_id 'k1' is already used") as e:
        store.add("c1/h0/f1", "lost", annotator="ana", label_id="k1")
    assert e.value.cause == "conflict"
    store.add("c1/h0/f1", "lost", annotator="ana", label_id="k2")
    with pytest.raises(LabelStoreError, match="label_id 'k2' is already used"):
        store.add("grounded:c2", "no", annotator="ana", criterion="grounded", label_id="k2")
    with pytest.raises(LabelStoreError, match="label_id 'k1' is already used"):
        store.add("grounded:c1", "no", annotator="ana", criterion="grounded", label_id="k1")
    assert _view(LabelStore(url).records()) == [("grounded:c1", "ana", "yes", "grounded"),
                                               ("c1/h0/f1", "ana", "lost", None)]


def test_criterion_labels_round_trip_through_jsonl_idempotently(store_url, tmp_path):
    kind, url = store_url
    src = LabelStore(tmp_path / "labels.jsonl")
    src.add("c1/h0/f1", "lost", annotator="ana")
    src.add("grounded:c1", "yes", annotator="ana", criterion="grounded", in_sample=False)
    src.add("c1/h0/f1", "retained", annotator="ana")
    src.add("grounded:c1", "no", annotator="ana", criterion="grounded")
    assert copy_labels(src, url) == 4 and copy_labels(src, url) == 0
    assert copy_labels(url, tmp_path / "back.jsonl") == 4
    assert (tmp_path / "back.jsonl").read_bytes() == (tmp_path / "labels.jsonl").read_bytes()


def test_calibrate_reads_criterion_labels_from_a_store_as_from_records(store_url, tmp_path):
    kind, url = store_url
    items = GROUNDED.items(make_traces(12))
    records = []
    for i, it in enumerate(items):
        lab = says_amount(it)
        if i in (1, 4, 9):  # people disagree with the judge on three items
            lab = "no" if lab == "yes" else "yes"
        records.append({"item_id": it.item_id, "annotator": "ana", "label": lab,
                        "criterion": "grounded"})
    store = LabelStore(url)
    store.add("c1/h0/f1", "lost", annotator="ana")  # a retention label in the same store
    store.extend([LabelRecord.model_validate(r) for r in records])
    expected = cohen_kappa_score([r["label"] for r in records], [says_amount(it) for it in items])
    kappas = []
    for labels in (records, store, url):
        res = calibrate(items, labels, judges=[says_amount], progress=False, n_resamples=300)
        kappas.append(res.leaderboard.iloc[0]["kappa"])
        assert res.leaderboard.iloc[0]["n_items"] == 12
    assert kappas == [pytest.approx(expected, abs=1e-12)] * 3
    assert kappas[0] == kappas[1] == kappas[2]


def test_a_foreign_sqlite_file_is_still_refused_untouched(tmp_path):
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE maev_criterion_labels (x integer)")  # someone else's table
    conn.commit()
    conn.close()
    before = path.read_bytes()
    store = LabelStore(path)
    with pytest.raises(LabelStoreError, match="not a maev label store"):
        store.add("grounded:c1", "yes", annotator="ana", criterion="grounded")
    with pytest.raises(LabelStoreError, match="not a maev label store"):
        store.records()
    assert path.read_bytes() == before


def test_the_documented_grants_let_an_annotator_role_label_both_kinds(pg_server):
    """docs/label-stores.md "Roles": a role that does not own the tables, with the grants the
    page lists, writes and reads retention and criterion labels; without USAGE on the
    sequence a criterion label is refused and nothing is stored."""
    name = f"labels_roles{os.getpid()}"
    owner_url = pg_server.create_database(name)
    LabelStore(owner_url).add("c1/h0/f1", "lost", annotator="ana")  # the owner makes the store
    pg_server.psql("CREATE ROLE annotator LOGIN PASSWORD 'annotator-pw'")
    grants = ["GRANT SELECT, INSERT ON maev_labels, maev_criterion_labels TO annotator",
              "GRANT SELECT ON maev_meta TO annotator"]
    for sql in grants:
        pg_server.psql(sql, db=name)
    url = f"postgresql://annotator:annotator-pw@127.0.0.1:{pg_server.port}/{name}"
    store = LabelStore(url, retry_for=0)
    store.add("c1/h0/f1", "retained", annotator="ben")
    with pytest.raises(LabelStoreError, match="permission denied for sequence"):
        store.add("grounded:c1", "yes", annotator="ben", criterion="grounded")
    pg_server.psql("GRANT USAGE ON SEQUENCE maev_labels_id_seq TO annotator", db=name)
    LabelStore(url).add("grounded:c1", "yes", annotator="ben", criterion="grounded")
    assert _view(LabelStore(url).records()) == [("c1/h0/f1", "ana", "lost", None),
                                               ("c1/h0/f1", "ben", "retained", None),
                                               ("grounded:c1", "ben", "yes", "grounded")]
