"""Label records of a criterion: free labels with the criterion's name; retention files read
unchanged."""

import json

import pytest
from pydantic import ValidationError

from maev_kit.labels import LabelRecord, LabelStore, read_label_file


def test_old_retention_lines_read_and_write_byte_for_byte(tmp_path):
    path = tmp_path / "labels.jsonl"
    line = {"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost", "note": "",
            "created_at": "2026-01-01T00:00:00Z"}
    path.write_text(json.dumps(line) + "\n")
    (rec,) = read_label_file(path).records
    assert rec.criterion is None and rec.label == "lost"
    assert LabelStore._encode(rec).decode() == json.dumps(line) + "\n"  # no criterion key


def test_criterion_labels_round_trip(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl")
    store.add("grounded:c1", "yes", annotator="ana", criterion="grounded")
    store.add("c1/h0/f1", "retained", annotator="ana")
    got = read_label_file(tmp_path / "labels.jsonl").records
    assert [(r.item_id, r.label, r.criterion) for r in got] == [
        ("grounded:c1", "yes", "grounded"), ("c1/h0/f1", "retained", None)]


@pytest.mark.parametrize("fields, message", [
    ({"label": "yes"}, "must be one of retained"),  # a free label needs its criterion
    ({"label": "yes", "criterion": "Not A Name"}, "criterion name"),
    ({"label": " ", "criterion": "grounded"}, "blank"),
])
def test_bad_records(fields, message):
    with pytest.raises(ValidationError, match=message):
        LabelRecord(item_id="x", annotator="ana", **fields)


def test_store_add_checks(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl")
    with pytest.raises(ValueError, match="must be one of"):
        store.add("x", "yes", annotator="ana")
    db = LabelStore(f"sqlite:///{tmp_path}/labels.db")
    with pytest.raises(ValueError, match="must be one of"):
        db.add("x", "yes", annotator="ana")  # a free label needs its criterion there too
    assert db.records() == []
