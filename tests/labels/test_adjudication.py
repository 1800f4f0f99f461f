"""Disagreements, the adjudication session and settled labels, on real stores (labels.jsonl,
SQLite): settled labels are their own kind of line and never change an annotator's label."""

from __future__ import annotations

import json

import pytest

from maev_kit.calibration import load_human_labels
from maev_kit.labels import (
    ADJUDICATED_SOURCE,
    AdjudicationSession,
    LabelStore,
    annotator_labels,
    disagreements,
    plan_session,
    settled_human_labels,
    settled_labels,
)
from maev_kit.retention import RetentionItem

IDS = [f"c{i}/h0/f1" for i in range(6)]


def items(ids=IDS):
    return [RetentionItem(iid, iid.split("/")[0], 0, "f1", f"fact {iid}", (), ()) for iid in ids]


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request, tmp_path):
    s = LabelStore(tmp_path / "labels.jsonl" if request.param == "jsonl"
                   else f"sqlite:///{tmp_path / 'labels.db'}")
    yield s
    s.close()


def fill(store):
    """c0: disagree · c1: agree · c2: disagree (3 annotators) · c3: one label ·
    c4: ana changed her mind to agree · c5: ben skipped."""
    store.add(IDS[0], "lost", annotator="ana", note="asked for the account <again>")
    store.add(IDS[0], "retained", annotator="ben", note="used it in turn 4")
    store.add(IDS[1], "lost", annotator="ana")
    store.add(IDS[1], "lost", annotator="ben")
    store.add(IDS[2], "lost", annotator="ana")
    store.add(IDS[2], "lost", annotator="ben")
    store.add(IDS[2], "contradicted", annotator="cleo")
    store.add(IDS[3], "retained", annotator="ana")
    store.add(IDS[4], "lost", annotator="ana")
    store.add(IDS[4], "retained", annotator="ben")
    store.add(IDS[4], "retained", annotator="ana")
    store.add(IDS[5], "lost", annotator="ana")
    store.add(IDS[5], "skip", annotator="ben")


def test_disagreements_are_items_whose_latest_labels_differ(store):
    fill(store)
    found = disagreements(store)
    assert [d.item_id for d in found] == [IDS[0], IDS[2]]
    assert found[0].labels == {"ana": "lost", "ben": "retained"}
    assert found[0].records["ana"].note == "asked for the account <again>"
    assert found[1].labels == {"ana": "lost", "ben": "lost", "cleo": "contradicted"}
    assert [d.item_id for d in disagreements(store.records())] == [IDS[0], IDS[2]]


def test_with_a_plan_only_the_assigned_annotators_count(store):
    plan = plan_session(IDS, ["ana", "ben"], overlap=1.0, seed=0)  # every item: ana and ben
    fill(store)
    found = disagreements(store, plan)
    assert {d.item_id for d in found} == {IDS[0]}  # cleo is not planned on c2
    assert all(set(d.records) <= set(plan.annotators_of(d.item_id)) for d in found)


def test_a_labels_file_path_works_too(tmp_path):
    s = LabelStore(tmp_path / "labels.jsonl")
    fill(s)
    assert [d.item_id for d in disagreements(tmp_path / "labels.jsonl")] == [IDS[0], IDS[2]]


def test_settling_appends_an_adjudicated_line_and_keeps_everyone_s_label(store):
    fill(store)
    before = annotator_labels(store)
    s = AdjudicationSession(items(), store, "dana")
    assert s.order == [IDS[0], IDS[2]] and s.current.item_id == IDS[0]
    assert s.disagreement().labels == {"ana": "lost", "ben": "retained"}
    assert s.progress() == {"settled": 0, "total": 2}
    rec = s.settle("retained", note="turn 4 uses it")
    assert (rec.item_id, rec.annotator, rec.source) == (IDS[0], "dana", ADJUDICATED_SOURCE)
    assert s.current.item_id == IDS[2]
    last = store.records()[-1]
    assert last == rec
    assert settled_labels(store) == {IDS[0]: "retained"}
    assert annotator_labels(store) == before  # nobody's own label changed
    assert [d.item_id for d in disagreements(store)] == [IDS[0], IDS[2]]  # still a disagreement
    s.settle("contradicted")
    assert s.done and s.progress() == {"settled": 2, "total": 2}
    with pytest.raises(ValueError, match="every item is done"):
        s.settle("lost")


def test_the_latest_settled_label_wins_and_a_new_session_resumes(store):
    fill(store)
    s = AdjudicationSession(items(), store, "dana")
    s.settle("lost")
    again = AdjudicationSession(items(), store, "eve")
    assert again.current.item_id == IDS[2]  # resumes at the first unsettled item
    again.go_to(IDS[0])
    assert again.settled().label == "lost"
    again.settle("retained")
    assert settled_labels(store) == {IDS[0]: "retained"}
    assert again.current.item_id == IDS[2]


def test_skip_and_bad_labels_are_refused(store):
    fill(store)
    s = AdjudicationSession(items(), store, "dana")
    for bad in ("skip", "maybe"):
        with pytest.raises(ValueError, match="must be one of"):
            s.settle(bad)
    assert settled_labels(store) == {}


def test_an_annotator_of_a_queued_item_must_settle_under_another_name(store):
    fill(store)
    with pytest.raises(ValueError, match="ana.adjudicator"):
        AdjudicationSession(items(), store, "ana")
    s = AdjudicationSession(items(), store, "ana.adjudicator")
    s.settle("lost")
    # ana's own label survives the settled line, in the calibration reader too
    human = load_human_labels(store, exclude_sources=("gold", ADJUDICATED_SOURCE))
    assert human[IDS[0]] == {"ana": "lost", "ben": "retained"}


def test_refresh_picks_up_new_disagreements_and_keeps_the_position(store):
    fill(store)
    s = AdjudicationSession(items(), store, "dana")
    s.next()
    assert s.current.item_id == IDS[2]
    store.add(IDS[1], "retained", annotator="ben")  # c1 is now a disagreement
    s.refresh()
    assert s.order == [IDS[0], IDS[1], IDS[2]] and s.current.item_id == IDS[2]


def test_nothing_to_settle_is_an_empty_done_session(store):
    store.add(IDS[0], "lost", annotator="ana")
    store.add(IDS[0], "lost", annotator="ben")
    s = AdjudicationSession(items(), store, "dana")
    assert s.done and len(s) == 0 and s.current is None and s.disagreement() is None


def test_only_given_items_are_queued(store):
    fill(store)
    s = AdjudicationSession(items([IDS[2]]), store, "dana")
    assert s.order == [IDS[2]]
    with pytest.raises(KeyError):
        s.go_to(IDS[0])


def test_settled_labels_as_human_labels_for_calibrate(tmp_path):
    from maev_kit.calibration import calibrate
    from maev_kit.datasets import load_labeled_set

    ls = load_labeled_set("labeled_sets/support_desk")
    its = ls.items[:12]
    store = LabelStore(tmp_path / "labels.jsonl")
    for k, it in enumerate(its):
        store.add(it.item_id, "lost", annotator="ana")
        store.add(it.item_id, "retained" if k % 2 else "lost", annotator="ben")
    s = AdjudicationSession(its, store, "dana")
    while not s.done:
        s.settle("retained" if s.position % 3 else "lost")
    human = settled_human_labels(store)
    assert set(human) == set(settled_labels(store)) and len(human) == len(s)
    assert all(list(v) == ["settled"] for v in human.values())
    assert load_human_labels(human) == human
    res = calibrate([it for it in its if it.item_id in human], human, judges=["heuristic"],
                    progress=False, n_resamples=200)
    assert len(res.leaderboard) == 1
    json.dumps(human)  # plain data
