"""LabelStore: one fsync-ed line per label, torn lines, several annotators and processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest

from maev_kit.errors import LabelValidationError
from maev_kit.labels import LabelRecord, LabelStore, LabelStoreWarning, read_label_file


def test_each_label_is_one_json_line_in_design_format(tmp_path):
    path = tmp_path / "sub" / "labels.jsonl"
    store = LabelStore(path)
    assert store.records() == [] and len(store) == 0
    rec = store.add("c-001/h0/f1", "retained", annotator="ana", note='says "ACCT"')
    store.add("c-001/h0/f2", "skip", annotator="ana")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3  # two complete lines
    first = json.loads(lines[0])
    assert first == {"item_id": "c-001/h0/f1", "annotator": "ana", "label": "retained",
                     "note": 'says "ACCT"', "created_at": rec.created_at}
    assert rec.created_at.endswith("Z")
    assert read_label_file(path).problems == []


def test_latest_wins_skip_not_counted_and_annotators_share(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl")
    store.add("i1", "lost", annotator="ana")
    store.add("i1", "retained", annotator="ana")
    store.add("i1", "contradicted", annotator="ben")
    store.add("i2", "skip", annotator="ben")
    assert [r.label for r in store.labels()] == ["lost", "retained", "contradicted", "skip"]
    assert [r.label for r in store.labels(annotator="ben", include_skip=False)] == [
        "contradicted"]
    latest = store.latest()
    assert {k: r.label for k, r in latest.items()} == {("i1", "ana"): "retained",
                                                       ("i1", "ben"): "contradicted"}
    assert set(store.latest("ben", include_skip=True)) == {("i1", "ben"), ("i2", "ben")}
    assert store.annotators() == ["ana", "ben"]
    df = store.to_frame()
    assert list(df["label"]) == ["retained", "contradicted"]
    assert len(store.to_frame(latest=False)) == 4


@pytest.mark.parametrize("kwargs, match", [
    ({"item_id": "i", "label": "maybe", "annotator": "a"}, "`label` must be one of"),
    ({"item_id": " ", "label": "lost", "annotator": "a"}, "`item_id` must be a non-blank"),
    ({"item_id": "i", "label": "lost", "annotator": ""}, "`annotator` '' is not a valid name"),
    ({"item_id": "i", "label": "lost", "annotator": "../../ben"}, "'../../ben' is not a valid"),
    ({"item_id": "i", "label": "lost", "annotator": "a/b"}, "'a/b' is not a valid name"),
    ({"item_id": "i", "label": "lost", "annotator": "x" * 65}, "is not a valid name: use 1–64"),
])
def test_add_rejects_bad_input_and_writes_nothing(tmp_path, kwargs, match):
    store = LabelStore(tmp_path / "labels.jsonl")
    with pytest.raises(ValueError, match=match):
        store.add(kwargs.pop("item_id"), kwargs.pop("label"), **kwargs)
    assert not (tmp_path / "labels.jsonl").exists()


def test_path_must_be_a_file(tmp_path):
    with pytest.raises(ValueError, match="is a folder"):
        LabelStore(tmp_path)
    with pytest.raises(TypeError, match="`path` must be a file path"):
        LabelStore(42)


def test_torn_last_line_is_reported_once_then_cut_by_next_write(tmp_path):
    path = tmp_path / "labels.jsonl"
    store = LabelStore(path)
    store.add("i1", "lost", annotator="ana")
    with open(path, "ab") as f:
        f.write(b'{"item_id": "i2", "annotator": "ana", "lab')  # a crash mid-write
    with pytest.warns(LabelStoreWarning, match="torn last line"):
        recs = store.records()
    assert [r.item_id for r in recs] == ["i1"]
    assert store.torn_last_line is not None and store.torn_last_line.line == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reported once, not on every read
        store.records()
    store.add("i3", "retained", annotator="ana")
    assert [r.item_id for r in LabelStore(path).records()] == ["i1", "i3"]
    assert store.torn_last_line is None
    lf = read_label_file(path)
    assert lf.problems == [] and lf.torn_last_line is None


def test_torn_file_with_no_complete_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_bytes(b'{"item_id": "i')
    store = LabelStore(path)
    with pytest.warns(LabelStoreWarning):
        assert store.records() == []
    store.add("i1", "lost", annotator="a")
    assert path.read_bytes().count(b"\n") == 1 and b'"i1"' in path.read_bytes()


def test_a_bad_line_in_the_middle_is_an_error(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"item_id": "i1", "annotator": "a", "label": "lost"}\nnot json\n'
                    '{"item_id": "i2", "annotator": "a", "label": "nope"}\n')
    with pytest.raises(LabelValidationError) as e:
        LabelStore(path).records()
    assert "labels.jsonl:2" in str(e.value) and "labels.jsonl:3" in str(e.value)


def test_append_existing_records(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl")
    store.extend([LabelRecord(item_id="a", annotator="gold", label="lost", source="gold"),
                  LabelRecord(item_id="b", annotator="gold", label="retained")])
    assert [(r.item_id, r.source) for r in store.records()] == [("a", "gold"), ("b", None)]
    with pytest.raises(TypeError, match="expected a LabelRecord"):
        store.append({"item_id": "c"})


WRITER = """
import sys
from maev_kit.labels import LabelStore
store = LabelStore(sys.argv[1])
name = sys.argv[2]
for i in range(int(sys.argv[3])):
    store.add(f"item-{i}", ("retained", "lost", "contradicted")[i % 3], annotator=name,
              note=name * (1 + i % 50))
"""


def test_two_processes_writing_one_file_never_corrupt_it(tmp_path):
    path = tmp_path / "labels.jsonl"
    n = 150
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(n)])
             for name in ("ana", "ben")]
    for p in procs:
        assert p.wait(timeout=60) == 0
    lf = read_label_file(path)
    assert lf.problems == [] and lf.torn_last_line is None
    assert len(lf.records) == 2 * n
    for name in ("ana", "ben"):
        mine = [r for r in lf.records if r.annotator == name]
        assert [r.item_id for r in mine] == [f"item-{i}" for i in range(n)]
        assert all(r.note == name * (1 + i % 50) for i, r in enumerate(mine))
    assert os.path.getsize(path) == sum(len(x) for x in path.read_bytes().splitlines(True))
