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


def test_undo_takes_back_this_widgets_labels_as_the_retention_labeler_does(tmp_path, criterion):
    """Undo appends a line (the earlier label again, or a skip marked undo when there was
    none), goes back to that item, and leaves every other line — another annotator's, a
    retention label, this annotator's other items — as it was."""
    from maev_kit.calibration import load_human_labels

    items = criterion.items(make_traces(3))
    path = tmp_path / "labels.jsonl"
    store = LabelStore(path)
    store.add("grounded:conv-01", "partly", annotator="ben", criterion="grounded")
    store.add("c1/h0/f1", "lost", annotator="ana")
    lab = Labeler(items, path, annotator="ana")
    assert lab.undo_button.disabled and not lab.can_undo
    assert "u undo" in lab.key_handler.hint and "u" in lab.key_handler.shortcuts
    lab.undo_button.click()
    assert "nothing to undo" in lab.status.value and len(LabelStore(path)) == 2
    lab.buttons["no"].click()                           # conv-00: no
    lab.key_handler._handle_custom_msg({"type": "key", "key": "1"}, [])  # conv-01: yes
    assert lab.position == 2 and not lab.undo_button.disabled
    lab.key_handler._handle_custom_msg({"type": "key", "key": "u"}, [])  # take back conv-01
    assert lab.current.item_id == "grounded:conv-01" and lab.label_of("grounded:conv-01") is None
    assert "undone: grounded:conv-01" in lab.status.value
    assert "1 of 3 labeled" in lab.progress_text.value and "your label" not in lab.item_view.value
    # relabel conv-00 (going back to it), then undo: its earlier label "no" comes back
    lab.press("ArrowLeft")
    lab.note.value = "on second thought"
    lab.press("2")
    assert lab.label_of("grounded:conv-00") == "partly"
    lab.press("u")
    assert lab.current.item_id == "grounded:conv-00" and lab.label_of("grounded:conv-00") == "no"
    lab.press("u")  # and the first label, which had nothing before it
    assert lab.label_of("grounded:conv-00") is None and lab.undo_button.disabled
    lines = [(r.item_id, r.annotator, r.label, r.source, r.note, r.criterion)
             for r in LabelStore(path).labels()]
    assert lines == [
        ("grounded:conv-01", "ben", "partly", None, "", "grounded"),
        ("c1/h0/f1", "ana", "lost", None, "", None),
        ("grounded:conv-00", "ana", "no", None, "", "grounded"),
        ("grounded:conv-01", "ana", "yes", None, "", "grounded"),
        ("grounded:conv-01", "ana", "skip", "undo", "", "grounded"),
        ("grounded:conv-00", "ana", "partly", None, "on second thought", "grounded"),
        ("grounded:conv-00", "ana", "no", None, "", "grounded"),
        ("grounded:conv-00", "ana", "skip", "undo", "", "grounded")]
    # what every reader sees: ana has no label left, ben's and the retention label stand
    assert load_human_labels(path) == {"grounded:conv-01": {"ben": "partly"},
                                       "c1/h0/f1": {"ana": "lost"}}
    again = Labeler(items, path, annotator="ana")  # resumes at the first unlabeled item
    assert again.current.item_id == "grounded:conv-00" and again.label_of("grounded:conv-01") \
        is None and not again.can_undo


def test_undo_in_a_sqlite_store(tmp_path, criterion):
    items = criterion.items(make_traces(2))
    url = f"sqlite:///{tmp_path}/labels.db"
    lab = Labeler(items, LabelStore(url), annotator="ana")
    lab.press("1")
    lab.press("u")
    assert [(r.label, r.source, r.criterion) for r in LabelStore(url).labels()] == [
        ("yes", None, "grounded"), ("skip", "undo", "grounded")]
    assert Labeler(items, url, annotator="ana").current.item_id == "grounded:conv-00"


def test_failure_attribution_shows_one_button_per_agent_of_each_run(tmp_path):
    from maev_kit.criteria import failure_attribution
    from maev_kit.traces import AgentTurn, MultiAgentTrace

    runs = [MultiAgentTrace("r1", turns=[AgentTurn("planner", "", "plan"),
                                         AgentTurn("coder", "", "code")]),
            MultiAgentTrace("r2", turns=[AgentTurn("surfer", "", "search"),
                                         AgentTurn("orchestrator", "", "next"),
                                         AgentTurn("coder", "", "print(1)")])]
    path = tmp_path / "l.jsonl"
    lab = Labeler(failure_attribution().items(runs), path, annotator="ana")
    assert list(lab.buttons) == ["planner", "coder", "skip"]
    assert "key 2" in lab.buttons["coder"].tooltip
    view = lab.item_view.value
    assert "about the whole conversation" in view and "None" not in view
    assert {"1", "2", "3", "s"} <= set(lab.key_handler.shortcuts)
    with pytest.raises(ValueError, match="'failure-attribution:r1'.*'surfer' is not an agent"):
        lab._label("surfer")
    lab.press("2")                      # r1: coder
    assert list(lab.buttons) == ["surfer", "orchestrator", "coder", "skip"]
    assert [b.description for b in lab.button_row.children[:4]] == list(lab.buttons)
    lab._label("orchestrator @ 1")      # a label may carry the decisive step
    assert [(r.item_id, r.label, r.criterion) for r in LabelStore(path).labels()] == [
        ("failure-attribution:r1", "coder", "failure-attribution"),
        ("failure-attribution:r2", "orchestrator@1", "failure-attribution")]
    lab.press("ArrowLeft")
    assert list(lab.buttons) == ["surfer", "orchestrator", "coder", "skip"]
    lab.press("ArrowLeft")
    assert list(lab.buttons) == ["planner", "coder", "skip"]
    lab._on_key_msg(None, {"type": "key", "key": "3"}, None)  # r1 has two agents: no-op
    assert lab.label_of("failure-attribution:r1") == "coder" and lab.position == 0
    with pytest.raises(ValueError, match="must be one of 1, 2, s"):
        lab.press("3")
