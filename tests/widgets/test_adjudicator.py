"""Adjudicator and SessionProgress built headless: click; assert on the label store; all text
escaped."""

from __future__ import annotations

import ipywidgets as widgets
import pytest

from maev_kit.labels import ADJUDICATED_SOURCE, LabelStore, plan_session, settled_labels
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message
from maev_kit.widgets import Adjudicator, SessionProgress

XSS = '<img src=x onerror="window.__xss=1"> <script>alert(1)</script> </div>'
IDS = [f"c{i}/h0/f1" for i in range(4)]


def make_items():
    return [RetentionItem(iid, iid.split("/")[0], 0, "f1", f"Account is ACCT-{k}",
                          (Message("user", f"my account ACCT-{k}", 0, True),),
                          (Message("billing", f"{XSS} which account?", 2),), "triage",
                          "billing") for k, iid in enumerate(IDS)]


@pytest.fixture(params=["jsonl", "sqlite"])
def store(request, tmp_path):
    s = LabelStore(tmp_path / "labels.jsonl" if request.param == "jsonl"
                   else f"sqlite:///{tmp_path / 'labels.db'}")
    s.add(IDS[0], "lost", annotator="ana", note=f"note {XSS}")
    s.add(IDS[0], "retained", annotator="carl", note=XSS)  # names cannot hold markup; notes can
    s.add(IDS[1], "lost", annotator="ana")
    s.add(IDS[1], "lost", annotator="ben")
    s.add(IDS[2], "contradicted", annotator="ana")
    s.add(IDS[2], "retained", annotator="ben")
    yield s
    s.close()


def test_clicks_settle_through_the_store_and_move_on(store):
    adj = Adjudicator(make_items(), store, adjudicator="dana")
    assert isinstance(adj, widgets.VBox)
    assert all(isinstance(b, widgets.Button) for b in adj.buttons.values())
    assert set(adj.buttons) == {"retained", "lost", "contradicted"}
    assert "0 of 2 disagreements settled" in adj.progress_text.value
    adj.note.value = "turn 4 uses it"
    adj.buttons["retained"].click()
    last = store.records()[-1]
    assert (last.item_id, last.label, last.annotator, last.source, last.note) == (
        IDS[0], "retained", "dana", ADJUDICATED_SOURCE, "turn 4 uses it")
    assert adj.note.value == "" and "saved ✓" in adj.status.value
    assert adj.session.current.item_id == IDS[2]
    adj.buttons["lost"].click()
    assert settled_labels(store) == {IDS[0]: "retained", IDS[2]: "lost"}
    assert "All 2 of 2 disagreements are settled" in adj.item_view.value
    assert all(b.disabled for b in adj.buttons.values())
    adj.previous_button.click()
    assert "settled by dana" in adj.labels_view.value


def test_every_label_and_note_is_shown_escaped(store):
    adj = Adjudicator(make_items(), store, adjudicator="dana")
    shown = adj.labels_view.value + adj.item_view.value + adj.progress_text.value
    assert "<script>" not in shown and "<img" not in shown
    assert "&lt;script&gt;" in adj.labels_view.value  # the notes
    assert "ana" in adj.labels_view.value and "lost" in adj.labels_view.value
    assert "ACCT-0" in adj.item_view.value


def test_an_adjudicator_name_with_markup_is_refused(store):
    """Names are checked once (labels.check_annotator): markup never becomes a name."""
    with pytest.raises(ValueError, match="is not a valid name"):
        Adjudicator(make_items(), store, adjudicator=XSS)
    adj = Adjudicator(make_items(), store, adjudicator="dana.lee@example.org")
    adj.buttons["lost"].click()
    assert "<script>" not in adj.labels_view.value + adj.status.value


def test_nothing_to_settle(tmp_path):
    s = LabelStore(tmp_path / "labels.jsonl")
    adj = Adjudicator(make_items(), s, adjudicator="dana")
    assert "Nothing to settle" in adj.item_view.value
    s.add(IDS[3], "lost", annotator="ana")
    s.add(IDS[3], "retained", annotator="ben")
    adj.refresh_button.click()
    assert adj.session.current.item_id == IDS[3]
    assert not adj.buttons["lost"].disabled


def test_session_progress_per_annotator(store):
    plan = plan_session(IDS, ["ana", "ben"], overlap=1.0, seed=0)
    w = SessionProgress(plan, store)
    assert isinstance(w, widgets.VBox)
    assert "3 / 4" in w.view.value  # ana labeled 3 of her 4 items
    # c0's other label is by "carl", no planned annotator: only c2 disagrees
    assert "1 disagreement ·" in w.view.value and "0 settled" in w.view.value
    store.add(IDS[3], "lost", annotator="ana")
    store.add(IDS[0], "retained", annotator="ben")
    store.add(IDS[0], "lost", annotator="dana", source=ADJUDICATED_SOURCE)
    w.refresh_button.click()
    assert "4 / 4" in w.view.value and "2 disagreements" in w.view.value
    assert "1 settled" in w.view.value


def test_session_progress_refuses_names_with_markup(tmp_path):
    with pytest.raises(ValueError, match="is not a valid name"):
        plan_session(IDS, ["ana", XSS], overlap=0.5, seed=0)
    with pytest.raises(TypeError):
        SessionProgress({"not": "a plan"}, tmp_path / "labels.jsonl")
