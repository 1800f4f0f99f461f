"""Labeler built headless: click buttons, press keys, type a note; assert on labels.jsonl."""

from __future__ import annotations

import json
from dataclasses import dataclass

import ipywidgets as widgets
import pytest

from maev_kit.labels import LabelStore
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message
from maev_kit.widgets import Labeler

XSS = '<img src=x onerror="window.__xss=1"> <script>alert(1)</script> </div>'


def make_items(n=4):
    return [RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", f"Account is ACCT-{i}",
                          (Message("user", f"my account ACCT-{i}", 0, True),),
                          (Message("billing", f"{XSS} which account?", 2),), "triage",
                          "billing") for i in range(n)]


@dataclass(frozen=True)
class FakeVerdict:
    item_id: str
    label: str | None
    rationale: str = ""
    evidence: tuple = ()
    error: str | None = None


def lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_buttons_are_ipywidgets_and_clicks_reach_the_file(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeler(make_items(), LabelStore(path), annotator="ana", order="given")
    assert set(lab.buttons) == {"retained", "lost", "contradicted", "skip"}
    assert all(isinstance(b, widgets.Button) for b in lab.buttons.values())
    assert "item 1 of 4" in lab.item_view.value
    lab.buttons["contradicted"].click()
    assert [(x["item_id"], x["label"]) for x in lines(path)] == [("c0/h0/f1", "contradicted")]
    assert "saved ✓ c0/h0/f1 → contradicted" in lab.status.value
    assert "item 2 of 4" in lab.item_view.value
    lab.note.value = "said ACCT-1 <b>twice</b>"
    lab.buttons["retained"].click()
    assert lines(path)[-1]["note"] == "said ACCT-1 <b>twice</b>" and lab.note.value == ""
    lab.buttons["skip"].click()
    lab.buttons["lost"].click()
    assert [x["label"] for x in lines(path)] == ["contradicted", "retained", "skip", "lost"]
    assert lab.progress.value == 4 and lab.progress.max == 4
    assert "4 of 4 labeled" in lab.progress_text.value
    assert "All 4 items are labeled" in lab.item_view.value
    assert all(b.disabled for b in lab.buttons.values())


def test_keyboard_shortcuts_from_the_front_end(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeler(make_items(), path, annotator="ana", order="given")

    def send(key):  # what the front end's key handler sends
        lab.key_handler._handle_custom_msg({"type": "key", "key": key}, [])

    send("3")
    send("2")
    send("ArrowLeft")
    assert lab.session.current.item_id == "c1/h0/f1" and "your label: lost" in lab.item_view.value
    send("1")  # relabel c1 → moves to the next unlabeled (c2)
    send("s")
    send("u")  # undo the skip of c2
    assert lab.session.current.item_id == "c2/h0/f1"
    send("ArrowRight")
    assert lab.session.current.item_id == "c3/h0/f1"
    send("x")  # unknown keys are ignored
    lab.key_handler._handle_custom_msg({"type": "other"}, [])
    assert [(x["item_id"], x["label"], x.get("source")) for x in lines(path)] == [
        ("c0/h0/f1", "contradicted", None), ("c1/h0/f1", "lost", None),
        ("c1/h0/f1", "retained", None), ("c2/h0/f1", "skip", None),
        ("c2/h0/f1", "skip", "undo")]
    assert lab.key_handler.shortcuts == ["1", "2", "3", "s", "ArrowLeft", "ArrowRight", "u"]
    with pytest.raises(ValueError, match="`key` must be one of"):
        lab.press("9")


def test_undo_and_navigation_buttons(tmp_path):
    lab = Labeler(make_items(3), tmp_path / "l.jsonl", annotator="ana", order="given")
    assert lab.undo_button.disabled and lab.previous_button.disabled
    lab.buttons["lost"].click()
    assert not lab.undo_button.disabled
    lab.undo_button.click()
    assert lab.session.current.item_id == "c0/h0/f1" and lab.session.progress()["done"] == 0
    assert "undone: c0/h0/f1" in lab.status.value
    lab.undo_button.click()
    assert "nothing to undo" in lab.status.value
    lab.next_button.click()
    lab.next_button.click()
    lab.next_button.click()
    assert lab.session.done and lab.next_button.disabled
    lab.press("1")
    assert "every item is labeled" in lab.status.value or lab.session.done
    lab.previous_button.click()
    assert lab.session.current.item_id == "c2/h0/f1"


def test_trace_text_is_escaped_in_the_widget(tmp_path):
    lab = Labeler(make_items(1), tmp_path / "l.jsonl", annotator="ana")
    v = lab.item_view.value
    assert "<img" not in v and "<script>" not in v.replace("<style>", "")
    assert "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in v
    assert "&lt;/div&gt;" in v


def test_blind_verdict_revealed_only_after_labeling(tmp_path):
    verdicts = [FakeVerdict("c0/h0/f1", "lost", "asked again <b>"),
                FakeVerdict("c1/h0/f1", "retained")]
    lab = Labeler(make_items(3), tmp_path / "l.jsonl", annotator="ana", order="given",
                  verdicts=verdicts)
    assert lab.reveal_button.disabled
    lab.reveal_button.click()
    assert lab.verdict_view.value == ""
    assert "lost" not in lab.item_view.value and "judge" not in lab.item_view.value
    lab.buttons["retained"].click()  # c0 labeled → its verdict may be revealed
    assert not lab.reveal_button.disabled and lab.verdict_view.value == ""
    lab.reveal_button.click()
    v = lab.verdict_view.value
    assert "judge says" in v and "lost" in v and "you said retained" in v
    assert "asked again &lt;b&gt;" in v
    lab.buttons["retained"].click()  # c1: agrees; the reveal resets
    assert lab.verdict_view.value == ""
    lab.reveal_button.click()
    assert "agrees with you" in lab.verdict_view.value


def test_no_verdicts_hides_reveal_and_resume_and_annotators(tmp_path):
    path = tmp_path / "l.jsonl"
    lab = Labeler(make_items(3), path, annotator="ana", order="given")
    assert lab.reveal_button.layout.display == "none"
    lab.buttons["lost"].click()
    again = Labeler(make_items(3), path, annotator="ana", order="given")
    assert again.session.current.item_id == "c1/h0/f1" and again.progress.value == 1
    ben = Labeler(make_items(3), path, annotator="ben", order="given")
    assert ben.session.current.item_id == "c0/h0/f1" and ben.progress.value == 0
    ben.buttons["retained"].click()
    assert {(x["annotator"], x["label"]) for x in lines(path)} == {("ana", "lost"),
                                                                  ("ben", "retained")}


def test_a_failed_write_is_shown_and_not_acknowledged(tmp_path):
    path = tmp_path / "l.jsonl"
    lab = Labeler(make_items(2), path, annotator="ana", order="given")
    path.mkdir()  # the file cannot be opened for writing any more
    lab.buttons["lost"].click()  # ipywidgets logs the callback's OSError
    assert "NOT saved" in lab.status.value and "Is a directory" in lab.status.value
    with pytest.raises(OSError):
        lab.press("2")
    assert lab.session.current.item_id == "c0/h0/f1" and lab.session.progress()["done"] == 0
