"""The Labeler on criterion items: question, guidelines, one button per label, number keys,
labels recorded in the store with the criterion's name."""

import pytest

from maev_kit.criteria import Criterion
from maev_kit.labels import LabelStore
from maev_kit.widgets import CriterionLabeler, Labeler

from criteria.conftest import make_traces


@pytest.fixture
def criterion():
    return Criterion("grounded", scope="conversation", labels=("yes", "partly", "no"),
                     question="Is the <final> answer grounded?",
                     guidelines="Look for an amount a tool returned.")


def test_conversation_item_shows_question_labels_and_records(tmp_path, criterion):
    traces = make_traces(3)
    items = criterion.items(traces)
    path = tmp_path / "labels.jsonl"
    lab = Labeler(items, path, annotator="ana")
    assert isinstance(lab, CriterionLabeler)
    assert "Is the &lt;final&gt; answer grounded?" in lab.question_view.value  # escaped
    assert "Look for an amount" in lab.question_view.value
    assert list(lab.buttons) == ["yes", "partly", "no", "skip"]
    assert "key 2" in lab.buttons["partly"].tooltip
    # the whole conversation: the user's message and both agents' turns
    view = lab.item_view.value
    assert "I was charged twice." in view and "Let me pass you to billing." in view
    assert "It is sorted, trust me." in view
    lab.buttons["no"].click()
    lab.press("1")
    lab.press("s")
    recs = LabelStore(path).labels()
    assert [(r.item_id, r.label, r.criterion, r.annotator) for r in recs] == [
        ("grounded:conv-00", "no", "grounded", "ana"),
        ("grounded:conv-01", "yes", "grounded", "ana"),
        ("grounded:conv-02", "skip", "grounded", "ana")]
    assert "All 3 items are labeled" in lab.item_view.value
    # a new labeler on the same store resumes after the labeled items
    again = Labeler(items, path, annotator="ana")
    assert again.current is None and again.label_of("grounded:conv-00") == "no"


def test_handoff_item_shows_the_window_with_the_handoff_marked(tmp_path):
    c = Criterion("ok-handoff", scope="handoff", labels=("yes", "no"), question="OK?")
    lab = Labeler(c.items(make_traces(1)), tmp_path / "l.jsonl", annotator="ana")
    assert "hands off" in lab.item_view.value and "#fff8c5" in lab.item_view.value
    with pytest.raises(ValueError, match="must be one of"):
        lab.press("3")
