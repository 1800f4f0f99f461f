"""`maev agree` reads a label store URL as it reads a labels.jsonl file.

A sqlite:/// store copied from a labels file with `copy_labels` gives the same numbers (human
ceiling, judge vs humans) as the file; every output line shows the store's redacted URL; a
SQLite file that is not there is refused (exit 2), never created.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from cli_helpers import run_cli

from maev_kit.labels import LabelStore, copy_labels

CLASSES = ("retained", "lost", "contradicted")


@pytest.fixture
def labels_file(tmp_path: Path) -> Path:
    """Two annotators on 40 items who mostly agree, a skip and a gold line, and a judge run."""
    rng = random.Random(7)
    path = tmp_path / "labels.jsonl"
    judge_rows = ["item_id,label"]
    with LabelStore(path) as store:
        for i in range(40):
            iid = f"c{i:02d}/h0/f1"
            ref = CLASSES[i % 3]
            store.add(iid, ref, annotator="ana")
            other = ref if rng.random() < 0.8 else rng.choice(CLASSES)
            store.add(iid, other, annotator="ben")
            judge_rows.append(f"{iid},{ref if rng.random() < 0.7 else CLASSES[(i + 1) % 3]}")
        store.add("c00/h0/f1", "skip", annotator="cleo")
        store.add("c01/h0/f1", "lost", annotator="gold", source="gold")
    (tmp_path / "judge.csv").write_text("\n".join(judge_rows) + "\n", encoding="utf-8")
    return path


def _agree_json(source: str, judge: Path, capsys) -> dict:
    code, out, err = run_cli(["agree", source, "--judge-run", str(judge), "--resamples", "300",
                              "--json"], capsys)
    assert code == 0, err
    return json.loads(out)


def test_a_sqlite_store_gives_the_numbers_of_the_file_it_was_copied_from(labels_file, tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'labels.db'}"
    assert copy_labels(labels_file, url) == 82
    from_file = _agree_json(str(labels_file), tmp_path / "judge.csv", capsys)
    from_store = _agree_json(url, tmp_path / "judge.csv", capsys)
    assert from_store.pop("labels_file") == url
    assert from_file.pop("labels_file") == str(labels_file)
    assert from_store == from_file
    assert from_store["items"] == 40 and from_store["annotators"] == ["ana", "ben"]
    assert "human_ceiling" in from_store and "judge_vs_humans" in from_store

    code, out, err = run_cli(["agree", url, "--resamples", "300"], capsys)
    assert code == 0, err
    assert out.splitlines()[0] == f"{url}: 40 items, annotators: ana, ben"


def test_a_missing_sqlite_store_is_refused_not_created(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'nothing.db'}"
    code, out, err = run_cli(["agree", url], capsys)
    assert code == 2
    assert "no SQLite label store" in err and url in err
    assert not (tmp_path / "nothing.db").exists()


def test_an_empty_store_says_so_with_its_url(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    with LabelStore(url) as store:
        store.add("c1/h0/f1", "skip", annotator="ana")
    code, out, err = run_cli(["agree", url], capsys)
    assert code == 2 and f"{url}: no labels" in err


def test_the_password_of_a_store_url_is_never_shown():
    from maev_kit.cli._score import _shown_labels

    shown = _shown_labels("postgresql://ana:s3cret@db.example/labels")
    assert shown == "postgresql://ana:***@db.example/labels"
    assert _shown_labels("labels.jsonl") == "labels.jsonl"
