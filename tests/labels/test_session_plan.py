"""SessionPlan: balanced, reproducible assignments with an overlap; session_plan.json; progress
over real label stores (labels.jsonl and SQLite)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from maev_kit._files import OverwriteRefused
from maev_kit.errors import InputError
from maev_kit.labels import (
    PLAN_FILE,
    LabelingSession,
    LabelStore,
    SessionPlan,
    load_session_plan,
    plan_session,
)
from maev_kit.retention import RetentionItem

IDS = [f"c{i // 3}/h0/f{i % 3}" for i in range(40)]


def store_of(kind, tmp_path):
    return LabelStore(tmp_path / "labels.jsonl" if kind == "jsonl"
                      else f"sqlite:///{tmp_path / 'labels.db'}")


@pytest.mark.parametrize("n", [1, 2, 7, 40, 101])
@pytest.mark.parametrize("annotators", [["ana", "ben"], ["ana", "ben", "cleo"],
                                        ["a", "b", "c", "d", "e"]])
@pytest.mark.parametrize("overlap", [0.0, 0.2, 0.5, 1.0])
def test_every_item_once_an_overlap_twice_and_counts_balanced(n, annotators, overlap):
    ids = [f"i{k}" for k in range(n)]
    plan = plan_session(ids, annotators, overlap=overlap, seed=7)
    assert sorted(plan.item_ids) == sorted(ids)
    for iid in ids:
        anns = plan.annotators_of(iid)
        assert len(anns) in (1, 2) and len(set(anns)) == len(anns)
    assert len(plan.overlap_items()) == int(overlap * n + 0.5)
    counts = plan.counts()
    assert max(counts.values()) - min(counts.values()) <= 1
    assert sum(counts.values()) == n + len(plan.overlap_items())
    twice = Counter(a for iid in plan.overlap_items() for a in plan.annotators_of(iid))
    assert max(twice[a] for a in annotators) - min(twice[a] for a in annotators) <= 1
    for a in annotators:  # the queue is the plan's order, restricted to the annotator
        assert plan.queue(a) == [i for i in plan.item_ids if a in plan.annotators_of(i)]


def test_the_same_seed_gives_the_same_plan_another_seed_another():
    a = plan_session(IDS, ["ana", "ben", "cleo"], overlap=0.2, seed=3)
    b = plan_session(list(IDS), ("ana", "ben", "cleo"), overlap=0.2, seed=3)
    c = plan_session(IDS, ["ana", "ben", "cleo"], overlap=0.2, seed=4)
    assert a.assignments == b.assignments
    assert list(a.assignments) == list(b.assignments)  # the order too
    assert a.assignments != c.assignments


@pytest.mark.parametrize("kwargs, match", [
    ({"item_ids": ["a", "a"]}, "twice"),
    ({"item_ids": []}, "empty"),
    ({"item_ids": ["a", " "]}, "non-blank"),
    ({"annotators": ["ana", "ana"]}, "twice"),
    ({"annotators": ["ana"]}, "two annotators"),
    ({"overlap": 1.5}, r"\[0, 1\]"),
    ({"overlap": -0.1}, r"\[0, 1\]"),
])
def test_bad_arguments_are_refused(kwargs, match):
    args = {"item_ids": IDS, "annotators": ["ana", "ben"], "overlap": 0.2, **kwargs}
    with pytest.raises(ValueError, match=match):
        plan_session(args.pop("item_ids"), args.pop("annotators"), **args)


def test_one_annotator_without_overlap_gets_everything():
    plan = plan_session(IDS, ["ana"], overlap=0)
    assert sorted(plan.queue("ana")) == sorted(IDS)
    with pytest.raises(KeyError, match="not an annotator"):
        plan.queue("ben")


def test_save_and_load_round_trip_with_format_and_version(tmp_path):
    plan = plan_session(IDS, ["ana", "ben"], overlap=0.25, seed=2)
    path = plan.save(tmp_path)
    assert path == tmp_path / PLAN_FILE
    d = json.loads(path.read_text())
    assert d["format"] == "maev-session-plan" and d["schema_version"] == 1
    assert d["seed"] == 2 and d["overlap"] == 0.25 and d["annotators"] == ["ana", "ben"]
    back = load_session_plan(tmp_path)
    assert back.assignments == plan.assignments and list(back.assignments) == plan.item_ids
    assert SessionPlan.load(path).annotators == ("ana", "ben")
    assert [p.name for p in tmp_path.iterdir()] == [PLAN_FILE]  # no temporary file left


def test_an_existing_plan_is_never_replaced(tmp_path):
    first = plan_session(IDS, ["ana", "ben"], seed=0)
    path = first.save(tmp_path / "set" / PLAN_FILE)
    before = path.read_bytes()
    with pytest.raises(OverwriteRefused, match="never replaced"):
        plan_session(IDS, ["ana", "ben"], seed=1).save(tmp_path / "set")
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [PLAN_FILE]


@pytest.mark.parametrize("content, match", [
    ("{not json", "not valid JSON"),
    ('{"format": "other"}', "not a session plan"),
    ('{"format": "maev-session-plan", "schema_version": 99}', "newer"),
    ('{"format": "maev-session-plan", "schema_version": 1, "annotators": ["ana"], '
     '"seed": 0, "overlap": 0, "items": [{"item_id": "a", "annotators": ["zed"]}]}',
     "plan's annotators"),
    ('{"format": "maev-session-plan", "schema_version": 1, "annotators": ["ana"], '
     '"seed": 0, "overlap": 0, "items": [{"item_id": "a", "annotators": ["ana"]}, '
     '{"item_id": "a", "annotators": ["ana"]}]}', "repeated"),
])
def test_a_bad_plan_file_is_one_input_error(tmp_path, content, match):
    (tmp_path / PLAN_FILE).write_text(content)
    with pytest.raises(InputError, match=match):
        SessionPlan.load(tmp_path)


def test_no_plan_file_says_how_to_make_one(tmp_path):
    with pytest.raises(InputError, match="maev session plan"):
        SessionPlan.load(tmp_path)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_progress_counts_only_own_labels_on_own_queue(tmp_path, kind):
    plan = plan_session(IDS[:10], ["ana", "ben"], overlap=0.2, seed=0)
    store = store_of(kind, tmp_path)
    ana, ben = plan.queue("ana"), plan.queue("ben")
    not_ana = next(i for i in IDS[:10] if i not in ana)
    store.add(ana[0], "lost", annotator="ana")
    store.add(ana[1], "retained", annotator="ana")
    store.add(ana[2], "skip", annotator="ana")                      # skip: not labeled
    store.add(not_ana, "lost", annotator="ana")                      # not her queue
    store.add(ana[3], "lost", annotator="cleo", source="adjudicated")  # not an annotator's
    store.add(ben[0], "retained", annotator="ben")
    assert plan.progress(store) == {
        "ana": {"assigned": len(ana), "labeled": 2, "left": len(ana) - 2},
        "ben": {"assigned": len(ben), "labeled": 1, "left": len(ben) - 1}}
    assert plan.progress(store.records()) == plan.progress(store)


def _items(ids):
    return [RetentionItem(iid, iid.split("/")[0], 0, iid.split("/")[-1], f"fact {iid}", (), ())
            for iid in ids]


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_labeling_session_on_a_queue_sees_only_that_queue_and_own_labels(tmp_path, kind):
    plan = plan_session(IDS[:12], ["ana", "ben"], overlap=0.5, seed=1)
    store = store_of(kind, tmp_path)
    shared = plan.overlap_items()[0]
    store.add(shared, "contradicted", annotator="ben", note="ben's view")
    s = LabelingSession(_items(IDS[:12]), store, annotator="ana", order=plan.queue("ana"))
    assert len(s) == len(plan.queue("ana"))
    assert s.label_of(shared) is None  # ben's label is not shown to ana
    seen = []
    while not s.done:
        seen.append(s.current.item_id)
        s.label("retained")
    assert seen == plan.queue("ana")
    assert plan.progress(store)["ana"]["left"] == 0
    assert plan.progress(store)["ben"]["labeled"] == 1
