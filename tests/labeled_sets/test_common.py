"""Contract checks that hold for every bundled labeled set (../shared/DESIGN.md §3)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from maev_kit.retention import LABELS
from maev_kit.traces import HandoffReason

from .conftest import SET_NAMES, SETS_DIR


@pytest.mark.parametrize("name", SET_NAMES)
def test_folder_has_the_contract_files(name):
    files = {p.name for p in (SETS_DIR / name).iterdir()}
    assert {"README.md", "manifest.json", "traces.jsonl", "expectations.jsonl",
            "labels.jsonl"} <= files


def test_manifest_has_the_contract_keys(labeled_set):
    m = labeled_set.manifest
    assert m["name"] == labeled_set.path.name
    assert re.fullmatch(r"\d+\.\d+\.\d+", m["version"])
    assert m["description"].strip()
    assert m["labels"] == list(LABELS)
    assert set(m["splits"]) == {"dev", "test"}
    assert isinstance(m["contracts"], list)
    assert m["labelers"]


def test_agents_in_traces_are_declared_with_their_roles(labeled_set):
    agents = labeled_set.manifest["agents"]
    for t in labeled_set.traces:
        for turn in t.turns:
            assert agents.get(turn.agent_id) == turn.agent_role, (t.conversation_id, turn.agent_id)
        for h in t.handoffs:
            assert h.from_agent in agents and h.to_agent in agents


def test_every_conversation_has_expectations(labeled_set):
    assert {t.conversation_id for t in labeled_set.traces} == set(labeled_set.expectations)


def test_every_key_fact_has_a_label_and_every_label_points_at_an_item(labeled_set):
    item_ids = [i.item_id for i in labeled_set.items]
    assert len(item_ids) == len(set(item_ids))
    # every key fact, at the handoff it is listed at, is an item with a label; a fact is also
    # judged at every later handoff (those items have no reference label)
    listed = {f"{cid}/h{f.handoff_index}/{f.fact_id}"
              for cid, e in labeled_set.expectations.items() for f in e.key_facts}
    assert listed <= set(item_ids)
    labelled = {r.item_id for r in labeled_set.labels}
    assert labelled == listed


def test_labels_are_retention_labels_and_not_duplicated(labeled_set):
    assert {r.label for r in labeled_set.labels} == set(LABELS)  # all three occur, no skip
    pairs = Counter((r.item_id, r.annotator) for r in labeled_set.labels)
    assert max(pairs.values()) == 1


def test_splits_partition_the_conversations(labeled_set):
    splits = labeled_set.manifest["splits"]
    dev, test = splits["dev"], splits["test"]
    assert len(set(dev)) == len(dev) and len(set(test)) == len(test)
    assert not set(dev) & set(test)
    assert set(dev) | set(test) == {t.conversation_id for t in labeled_set.traces}


def test_handoff_reasons_are_the_enum_or_null(labeled_set):
    for t in labeled_set.traces:
        for h in t.handoffs:
            assert h.reason is None or isinstance(h.reason, HandoffReason)


def test_no_machine_paths_in_the_files(labeled_set):
    for p in labeled_set.path.iterdir():
        text = p.read_text(encoding="utf-8")
        for needle in ("/work/", "/home/", "/tmp/", "/Users/", "C:\\"):
            assert needle not in text, (p.name, needle)


def test_validates_with_the_labeled_set_loader(labeled_set):
    datasets = pytest.importorskip("maev_kit.datasets")
    report, loaded = datasets.validate_path(labeled_set.path)
    assert report.ok, [str(p) for p in report.errors[:5]]
    assert not report.warnings, [str(p) for p in report.warnings[:5]]
    assert len(loaded.items) == len(labeled_set.items)
