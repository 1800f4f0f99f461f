"""Labels on a retired fact are set aside, never blocking, never lost; `maev labels` lists and
re-attaches them by appending lines. Through the CLI, on a copy of the bundled set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_helpers import run_cli

from maev_kit.datasets import bundled_set_path, load_labeled_set
from maev_kit.facts._model import ProposedFact
from maev_kit.facts._review import FactReviewSession


run = run_cli  # maev ARGS in-process: (exit code, stdout, stderr)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    dst = tmp_path / "sd"
    shutil.copytree(bundled_set_path("support_desk"), dst)
    return dst


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _reject_a_labeled_fact(folder: Path) -> str:
    """In review, reject the hand-written fact sd-001/f3_router (which has labels) and export:
    its labels now point at no item."""
    ls = load_labeled_set(folder)
    hand = [ProposedFact("sd-001", k.handoff_index, k.fact_id, k.text, None, "other", None,
                         "expectations") for k in ls.expectations["sd-001"].key_facts]
    s = FactReviewSession(ls.traces, hand, folder / "fact_reviews.jsonl", reviewer="ana")
    s.accept("f1_appointment")
    s.accept("f2_account_number")
    s.reject("f3_router")
    s.export_expectations(folder / "expectations.jsonl")
    return "sd-001/h0/f3_router"


def test_labels_of_a_rejected_fact_are_set_aside_and_calibrate_runs(folder, capsys):
    labels = folder / "labels.jsonl"
    before = _lines(labels)
    old = _reject_a_labeled_fact(folder)
    assert any(json.loads(ln)["item_id"] == old for ln in before)
    code, out, err = run(["calibrate", str(folder), "--judge", "heuristic", "--resamples",
                          "200", "--no-progress"], capsys)
    assert code == 0, err
    assert "1 label(s) set aside, not counted" in out
    assert "1 × fact rejected in review" in out and "maev labels" in out
    code, out, err = run(["validate", str(folder)], capsys)
    assert code == 0 and "points at no key fact" in err and "set aside" in err
    code, out, _ = run(["labels", str(folder)], capsys)
    assert code == 0
    assert "381 label(s) attached" in out and "1 set aside" in out
    assert f"{old}  maev-authors  lost  — fact 'f3_router' was rejected in review (by ana)" \
        in out
    assert _lines(labels) == before  # nothing rewritten, nothing lost


def test_report_runs_and_says_labels_were_set_aside(folder, tmp_path, capsys):
    _reject_a_labeled_fact(folder)
    html = tmp_path / "r.html"
    code, _, err = run(["report", str(folder), "--out", str(html), "--no-progress"], capsys)
    assert code == 0, err
    text = html.read_text()
    assert "1 label(s) set aside, not counted" in text and "fact rejected in review" in text


def test_reattach_appends_lines_and_the_label_counts_again(folder, capsys):
    labels = folder / "labels.jsonl"
    old = _reject_a_labeled_fact(folder)
    before = _lines(labels)
    # the reviewer re-words the router fact by hand: a new fact id at handoff 0
    exp = folder / "expectations.jsonl"
    rows = [json.loads(ln) for ln in exp.read_text().splitlines()]
    rows[0]["key_facts"].append({"fact_id": "f4_router", "handoff_index": 0,
                                 "text": "The customer's router is an AX-1800."})
    exp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    new = "sd-001/h0/f4_router"
    code, out, err = run(["labels", "reattach", str(folder), old, new], capsys)
    assert code == 0, err
    after = _lines(labels)
    assert after[:len(before)] == before and len(after) == len(before) + 1
    added = json.loads(after[-1])
    assert added["item_id"] == new and added["label"] == "lost"
    assert added["annotator"] == "maev-authors" and added["source"] == "reference"
    assert added["note"].startswith(f"re-attached from {old}")
    code, out, _ = run(["labels", str(folder)], capsys)
    assert "382 label(s) attached" in out and f"re-attached to {new}" in out
    code, out, _ = run(["calibrate", str(folder), "--judge", "heuristic", "--resamples", "200",
                        "--no-progress"], capsys)
    assert code == 0 and "label(s) set aside" not in out  # re-attached: nothing left aside
    assert ", 0 set aside" in out  # where every label went
    # again: the same label is there already, nothing is written
    code, out, _ = run(["labels", "reattach", str(folder), old, new], capsys)
    assert code == 0 and "nothing to write" in out and len(_lines(labels)) == len(after)


def test_reattach_never_overwrites_a_label_and_refuses_bad_ids(folder, capsys):
    labels = folder / "labels.jsonl"
    old = _reject_a_labeled_fact(folder)
    before = _lines(labels)
    taken = "sd-001/h0/f1_appointment"  # labeled contradicted by the same annotator
    for args, message in (
            ([old, taken], "a person's label is never overwritten"),
            ([old, "sd-001/h0/nope"], "is not an item of support_desk"),
            ([taken, "sd-001/h0/f2_account_number"], "its labels are attached"),
            (["sd-002/h0/zz", taken], "no set-aside label")):
        code, out, err = run(["labels", "reattach", str(folder), *args], capsys)
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run(["labels", "reattach", "support_desk", old, taken], capsys)
    assert code == 2 and "bundled" in err
    assert _lines(labels) == before


def test_a_set_without_labels_says_to_label_with_the_labeler(folder, tmp_path, capsys):
    labels = folder / "labels.jsonl"
    for content, extra in (("", ""), (None, "every label is skip")):
        if content is None:
            recs = [json.loads(ln) for ln in _lines(bundled_set_path("support_desk")
                                                     / "labels.jsonl")]
            content = "".join(json.dumps({**r, "label": "skip"}) + "\n" for r in recs)
        labels.write_text(content)
        code, _, err = run(["calibrate", str(folder), "--judge", "heuristic", "--no-progress"],
                           capsys)
        assert code == 2 and "no human labels yet" in err and "Labeler" in err and extra in err
        assert "item ids" not in err
        html = tmp_path / "r.html"
        code, _, err = run(["report", str(folder), "--out", str(html), "--no-progress"], capsys)
        assert code == 0, err
        assert "No human labels yet" in html.read_text()
        html.unlink()
        code, out, _ = run(["labels", str(folder)], capsys)
        assert code == 0 and "0 label(s) attached" in out
