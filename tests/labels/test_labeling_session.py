"""LabelingSession: order, resume, undo, blind verdicts, several annotators — no widgets."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from maev_kit.labels import LabelingSession, LabelStore
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message


def make_items(n=5):
    return [RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", f"fact {i}",
                          (Message("user", f"stated {i}", 0, True),),
                          (Message("b", f"after {i}", 2),), "a", "b") for i in range(n)]


@dataclass(frozen=True)
class FakeVerdict:  # the shape of maev_kit.judges.Verdict
    item_id: str
    label: str | None
    rationale: str = ""
    evidence: tuple = ()
    error: str | None = None


def test_given_order_labels_advance_and_write_through(tmp_path):
    store = LabelStore(tmp_path / "labels.jsonl")
    s = LabelingSession(make_items(3), store, annotator="ana", order="given")
    assert [s.current.item_id, len(s), s.done] == ["c0/h0/f1", 3, False]
    rec = s.label("lost", note="asked again")
    assert (rec.item_id, rec.label, rec.note) == ("c0/h0/f1", "lost", "asked again")
    assert [(r.item_id, r.label) for r in store.labels()] == [("c0/h0/f1", "lost")]
    s.label("skip")
    s.label("retained")
    assert s.done and s.current is None
    assert s.progress() == {"done": 3, "total": 3, "retained": 1, "lost": 1,
                            "contradicted": 0, "skip": 1}
    with pytest.raises(ValueError, match="every item is done"):
        s.label("lost")
    with pytest.raises(ValueError, match="`value` must be one of"):
        s.previous() and s.label("kept")


def test_random_order_is_seeded_and_a_list_order_is_kept(tmp_path):
    items = make_items(8)
    ids = [it.item_id for it in items]
    a = LabelingSession(items, tmp_path / "a.jsonl", annotator="x", order="random", seed=3)
    b = LabelingSession(items, tmp_path / "b.jsonl", annotator="y", order="random", seed=3)
    c = LabelingSession(items, tmp_path / "c.jsonl", annotator="z", order="random", seed=4)
    assert a.order == b.order and sorted(a.order) == sorted(ids)
    assert a.order != ids and c.order != a.order
    d = LabelingSession(items, tmp_path / "d.jsonl", annotator="x", order=[ids[5], ids[1]])
    assert d.order == [ids[5], ids[1]] and d.current.item_id == ids[5]


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"order": "sorted"}, ValueError, "`order` must be 'random', 'given'"),
    ({"order": ["nope"]}, ValueError, "not in `items`"),
    ({"order": ["c0/h0/f1", "c0/h0/f1"]}, ValueError, "twice"),
    ({"order": []}, ValueError, "empty list"),
    ({"annotator": " "}, ValueError, "`annotator` ' ' is not a valid name"),
    ({"verdicts": 3}, TypeError, "`verdicts` must be"),
    ({"verdicts": [object()]}, TypeError, r"`verdicts\[0\]` must be a Verdict"),
])
def test_bad_arguments_name_the_argument(tmp_path, kwargs, exc, match):
    kw = {"annotator": "ana", **kwargs}
    with pytest.raises(exc, match=match):
        LabelingSession(make_items(2), tmp_path / "l.jsonl", **kw)


def test_bad_items_and_store(tmp_path):
    with pytest.raises(ValueError, match="`items` is empty"):
        LabelingSession([], tmp_path / "l.jsonl", annotator="a")
    with pytest.raises(ValueError, match="twice"):
        LabelingSession(make_items(1) * 2, tmp_path / "l.jsonl", annotator="a")
    with pytest.raises(TypeError, match=r"`items\[0\]` has no `item_id`"):
        LabelingSession(["x"], tmp_path / "l.jsonl", annotator="a")
    with pytest.raises(TypeError, match="`store` must be a LabelStore"):
        LabelingSession(make_items(1), 3, annotator="a")


def test_resumes_where_the_annotator_stopped_and_annotators_are_independent(tmp_path):
    path = tmp_path / "labels.jsonl"
    s = LabelingSession(make_items(4), path, annotator="ana", order="given")
    s.label("retained")
    s.label("skip")  # a skip counts as seen
    again = LabelingSession(make_items(4), path, annotator="ana", order="given")
    assert again.current.item_id == "c2/h0/f1" and again.progress()["done"] == 2
    ben = LabelingSession(make_items(4), path, annotator="ben", order="given")
    assert ben.current.item_id == "c0/h0/f1" and ben.progress()["done"] == 0
    ben.label("lost")
    assert {(r.annotator, r.item_id): r.label for r in LabelStore(path).latest().values()} == {
        ("ana", "c0/h0/f1"): "retained", ("ben", "c0/h0/f1"): "lost"}
    # labels of items outside this session do not count
    LabelStore(path).add("other/h0/f1", "lost", annotator="ana")
    assert LabelingSession(make_items(4), path, annotator="ana").progress()["done"] == 2


def test_labeling_jumps_to_the_next_unlabeled_item(tmp_path):
    s = LabelingSession(make_items(4), tmp_path / "l.jsonl", annotator="a", order="given")
    s.go_to("c1/h0/f1")
    s.label("lost")
    assert s.current.item_id == "c2/h0/f1"
    s.label("lost")
    s.label("lost")
    assert s.current.item_id == "c0/h0/f1"  # wraps round to the one left
    s.go_to("c2/h0/f1")
    s.label("retained")  # relabel; the only unlabeled item is before it
    assert s.current.item_id == "c0/h0/f1" and s.label_of("c2/h0/f1").label == "retained"
    with pytest.raises(KeyError):
        s.go_to("nope")


def test_next_previous_are_clamped(tmp_path):
    s = LabelingSession(make_items(2), tmp_path / "l.jsonl", annotator="a", order="given")
    assert s.previous().item_id == "c0/h0/f1"
    assert s.next().item_id == "c1/h0/f1"
    assert s.next() is None and s.done
    assert s.next() is None and s.position == 2
    assert s.previous().item_id == "c1/h0/f1"


def test_undo_appends_and_restores(tmp_path):
    path = tmp_path / "l.jsonl"
    s = LabelingSession(make_items(3), path, annotator="a", order="given")
    assert s.undo() is None and not s.can_undo
    s.label("lost", note="n1")
    s.previous()
    s.label("contradicted")  # relabel c0
    assert s.undo().item_id == "c0/h0/f1"
    assert s.label_of().label == "lost" and s.label_of().note == "n1"
    assert s.undo().item_id == "c0/h0/f1"
    assert s.label_of() is None and s.progress()["done"] == 0
    lines = LabelStore(path).labels()
    assert [(r.label, r.source) for r in lines] == [
        ("lost", None), ("contradicted", None), ("lost", None), ("skip", "undo")]
    # the undo line means "no label": a new session starts at c0 again and counts nothing
    fresh = LabelingSession(make_items(3), path, annotator="a", order="given")
    assert fresh.current.item_id == "c0/h0/f1" and fresh.progress()["done"] == 0
    assert LabelStore(path).latest() == {}


def test_verdicts_are_blind_until_labeled(tmp_path):
    verdicts = [FakeVerdict("c0/h0/f1", "lost", "never mentioned"),
                FakeVerdict("c1/h0/f1", None, error="unparseable")]
    s = LabelingSession(make_items(3), tmp_path / "l.jsonl", annotator="a", order="given",
                        verdicts=verdicts)
    assert s.has_verdict() and s.verdict() is None and s.verdict("c0/h0/f1") is None
    s.label("retained")
    v = s.verdict("c0/h0/f1")
    assert (v.label, v.rationale) == ("lost", "never mentioned")
    assert s.verdict() is None  # c1 is not labeled yet
    s.label("lost")
    assert s.verdict("c1/h0/f1").error == "unparseable"
    assert not s.has_verdict("c2/h0/f1") and s.verdict("c2/h0/f1") is None
    open_ = LabelingSession(make_items(3), tmp_path / "m.jsonl", annotator="a",
                            verdicts={"c0/h0/f1": "lost"}, blind=False, order="given")
    assert open_.verdict().label == "lost"


def test_session_imports_no_widget_library():
    code = ("import sys, tempfile, os\n"
            "from maev_kit.labels import LabelingSession\n"
            "from maev_kit.retention import RetentionItem\n"
            "it = RetentionItem('c/h0/f', 'c', 0, 'f', 'x', (), ())\n"
            "s = LabelingSession([it], os.path.join(tempfile.mkdtemp(), 'l.jsonl'), "
            "annotator='a')\n"
            "s.label('lost'); s.undo()\n"
            "bad = [m for m in ('ipywidgets', 'anywidget', 'traitlets', 'IPython', 'matplotlib',"
            " 'comm') if m in sys.modules]\n"
            "print(bad)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_order_from_a_dataframe_of_item_ids(tmp_path):
    import pandas as pd

    items = make_items(4)
    df = pd.DataFrame({"item_id": ["c3/h0/f1", "c0/h0/f1"], "vote_entropy": [1.0, 0.5]})
    s = LabelingSession(items, tmp_path / "l.jsonl", annotator="a", order=df)
    assert s.order == ["c3/h0/f1", "c0/h0/f1"]
    with pytest.raises(ValueError, match="without an `item_id` column"):
        LabelingSession(items, tmp_path / "l.jsonl", annotator="a", order=df[["vote_entropy"]])


def test_refresh_sees_labels_written_elsewhere(tmp_path):
    path = tmp_path / "l.jsonl"
    s = LabelingSession(make_items(3), path, annotator="ana", order="given")
    LabelStore(path).add("c2/h0/f1", "contradicted", annotator="ana")  # another process
    LabelStore(path).add("c1/h0/f1", "lost", annotator="ben")
    assert s.progress()["done"] == 0
    s.refresh()
    assert s.progress()["done"] == 1 and s.label_of("c2/h0/f1").label == "contradicted"
    s.label("retained")
    assert s.current.item_id == "c1/h0/f1"  # c2 is labeled: skipped over


def test_the_sample_next_to_the_labels_is_served_first_in_its_order(tmp_path):
    """#36 A: with a label_sample.json beside labels.jsonl the session serves the sample first,
    in its order, then the rest; order='sample' without one is refused, saying what to do."""
    from maev_kit.labels import SAMPLE_FILE, draw_label_sample, plan_session

    items = make_items(12)
    ids = [it.item_id for it in items]
    sample = draw_label_sample(ids, 4, seed=5)
    sample.save(tmp_path / SAMPLE_FILE)
    s = LabelingSession(items, tmp_path / "labels.jsonl", annotator="ana")
    assert s.order[:4] == list(sample.item_ids) and sorted(s.order) == sorted(ids)
    assert [s.sample_position(i) for i in sample.item_ids] == [1, 2, 3, 4]
    assert s.sample_size == 4 and s.sample_position(s.order[4]) is None
    for _ in range(4):
        s.label("retained")
    assert s.sample_position() is None  # past the sample: the session says it is outside
    s.label("lost")  # a label outside the sample: kept, and marked so in the file
    import json
    lines = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [x["in_sample"] for x in lines] == [True] * 4 + [False]
    # a given order still knows the sample's places; a subset of the items keeps its order
    sub = [it for it in items if it.item_id not in sample.item_ids[:1]]
    t = LabelingSession(sub, tmp_path / "labels.jsonl", annotator="ben", order="sample")
    assert t.order[:3] == list(sample.item_ids[1:]) and t.sample_size == 3
    with pytest.raises(ValueError, match="maev sample"):
        LabelingSession(items, tmp_path / "other" / "labels.jsonl", annotator="ana",
                        order="sample")
    # a team plan puts the sample first in every queue, the overlap still drawn at random
    plan = plan_session(ids, ["ana", "ben"], overlap=0.25, seed=1, first=sample.item_ids)
    assert plan.item_ids[:4] == list(sample.item_ids)
    for ann in ("ana", "ben"):
        queue = plan.queue(ann)
        mine = [i for i in sample.item_ids if ann in plan.annotators_of(i)]
        assert queue[:len(mine)] == mine
