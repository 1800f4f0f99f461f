"""load_who_and_when: a small folder in the benchmark's shape (written here), and the real
benchmark when its mirror is on this machine (skipped otherwise)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from maev_kit.criteria import ATTRIBUTION, attribution_leaderboard, failure_attribution
from maev_kit.datasets import ATTRIBUTION as DATASETS_ATTRIBUTION
from maev_kit.datasets import WHO_AND_WHEN_ANNOTATOR, load_who_and_when
from maev_kit.errors import InputError, LabelValidationError, TraceWarning

# a git clone of the Who&When repository (github.com/ag2ai/Agents_Failure_Attribution), when
# MAEV_WHO_AND_WHEN_GIT names one: the data are not bundled (GAIA answers)
MIRROR = Path(os.environ.get("MAEV_WHO_AND_WHEN_GIT") or "/nonexistent")

HAND_CRAFTED = {  # Magentic-One: roles name the speaker, delegations are recorded
    "history": [
        {"content": "Find the opening hours of the museum.", "role": "human"},
        {"content": "Plan: ask WebSurfer.", "role": "Orchestrator (thought)"},
        {"content": "Please search the museum's site.", "role": "Orchestrator (-> WebSurfer)"},
        {"content": "I clicked an unrelated page.", "role": "WebSurfer"},
        {"content": "Please read the file.", "role": "Orchestrator (-> FileSurfer)"},
        {"content": "The file says 9-5.", "role": "FileSurfer"},
        {"content": "Done.", "role": "Orchestrator (termination condition)"}],
    "question": "Find the opening hours of the museum.", "ground_truth": "10-6",
    "is_corrected": False, "question_ID": "q1", "mistake_agent": "WebSurfer",
    "mistake_step": "3", "mistake_reason": "Clicked an irrelevant page."}

ALGORITHM_GENERATED = {  # AutoGen group chat: the speaker is `name`, no delegation recorded
    "history": [
        {"content": "Plan the count.", "role": "assistant", "name": "Excel_Expert"},
        {"content": "exitcode: 0", "role": "user", "name": "Computer_terminal"},
        {"content": "Counted 4.", "role": "user", "name": "Excel_Expert"},
        {"content": "Verified.", "role": "user", "name": "Verification_Expert"}],
    "question": "How many?", "ground_truth": "8", "is_correct": False, "question_ID": "q2",
    "level": "2", "mistake_agent": "Excel_Expert", "mistake_step": "2",
    "mistake_reason": "Miscounted.", "system_prompt": {"Excel_Expert": "You count."}}


def write_set(root: Path, files: dict[str, object]) -> Path:
    for rel, data in files.items():
        p = root / "Who&When" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return root


@pytest.fixture
def clone(tmp_path):
    return write_set(tmp_path, {"Hand-Crafted/1.json": HAND_CRAFTED,
                                "Algorithm-Generated/10.json": ALGORITHM_GENERATED,
                                "Algorithm-Generated/2.json": {**ALGORITHM_GENERATED,
                                                               "mistake_step": "0"}})


def test_reads_a_clone_or_its_who_and_when_folder(clone):
    ws = load_who_and_when(clone)
    assert [t.conversation_id for t in ws.traces] == [
        "hand-crafted-1", "algorithm-generated-2", "algorithm-generated-10"]
    assert ws.manifest.splits == {"hand-crafted": ["hand-crafted-1"], "algorithm-generated": [
        "algorithm-generated-2", "algorithm-generated-10"]}
    again = load_who_and_when(clone / "Who&When")
    assert [t.conversation_id for t in again.traces] == [t.conversation_id for t in ws.traces]
    assert again.version == ws.version and len(ws.version) == 12
    assert ws.content_hash.startswith(ws.version) and len(ws.labels_hash) == 64
    # a changed run file changes the set's hashes (its provenance in cards and reports)
    changed = {**HAND_CRAFTED, "mistake_step": "5"}
    (clone / "Who&When" / "Hand-Crafted" / "1.json").write_text(json.dumps(changed))
    other = load_who_and_when(clone)
    assert (other.content_hash, other.labels_hash) != (ws.content_hash, ws.labels_hash)


def test_turns_handoffs_and_labels(clone):
    ws = load_who_and_when(clone)
    hc, ag = ws.traces[0], ws.traces[2]
    # the user's message is a user message; every other entry an agent turn at its step
    assert [u.turn_index for u in hc.user_messages] == [0]
    assert [(t.agent_id, t.turn_index) for t in hc.turns] == [
        ("Orchestrator", 1), ("Orchestrator", 2), ("WebSurfer", 3), ("Orchestrator", 4),
        ("FileSurfer", 5), ("Orchestrator", 6)]
    assert hc.turns[1].agent_role == "-> WebSurfer"
    # recorded delegations are the handoffs of a Magentic-One run ...
    assert hc.metadata["handoffs"] == "explicit delegations"
    assert [(h.from_agent, h.to_agent, h.mode, h.turn_index) for h in hc.handoffs] == [
        ("Orchestrator", "WebSurfer", "delegate", 2), ("Orchestrator", "FileSurfer", "delegate", 4)]
    # ... speaker changes those of a group chat that records none
    assert ag.metadata["handoffs"] == "speaker changes"
    assert [(h.from_agent, h.to_agent, h.turn_index) for h in ag.handoffs] == [
        ("Excel_Expert", "Computer_terminal", 0), ("Computer_terminal", "Excel_Expert", 1),
        ("Excel_Expert", "Verification_Expert", 2)]
    assert ag.metadata["system_prompts"] == {"Excel_Expert": "You count."}
    assert hc.metadata["question"].startswith("Find") and hc.metadata["ground_truth"] == "10-6"
    # the label never enters the trace a judge reads
    assert "Clicked an irrelevant" not in json.dumps(hc.metadata)
    assert not any("mistake" in k for t in ws.traces for k in t.metadata)
    labels = {r.item_id: r.label for r in ws.label_records}
    # the step is the decisive turn's position in trace.turns (history step 3 → turn 2)
    assert labels == {"failure-attribution:hand-crafted-1": "WebSurfer@2",
                      "failure-attribution:algorithm-generated-2": "Excel_Expert@0",
                      "failure-attribution:algorithm-generated-10": "Excel_Expert@2"}
    assert hc.turns[2].agent_id == "WebSurfer"
    assert {r.annotator for r in ws.label_records} == {WHO_AND_WHEN_ANNOTATOR}
    assert {r.criterion for r in ws.label_records} == {ATTRIBUTION}
    assert "mistake_step 3" in ws.label_records[0].note


def test_labels_fit_the_criterion_and_the_leaderboard(clone):
    assert DATASETS_ATTRIBUTION == ATTRIBUTION  # spelled in both layers: kept equal
    ws = load_who_and_when(clone)
    c = failure_attribution()
    items = c.items(ws.traces)
    assert {i.item_id for i in items} == {r.item_id for r in ws.label_records}
    assert set(ws.manifest.labels) == {a for i in items for a in i.labels}
    by_id = {i.item_id: i for i in items}  # every label is an answer to its own run
    assert all(by_id[r.item_id].answer(r.label) == r.label for r in ws.label_records)
    board = attribution_leaderboard(c.items(ws.traces), ws)
    # first agent: Orchestrator (wrong), Excel_Expert@0 (right, right), Excel_Expert@0 (right,
    # step 0 vs 2: wrong)
    first = board.loc["baseline: first agent"]
    assert (first.n, first.accuracy, first.step_accuracy) == (3, 2 / 3, 1 / 3)


def test_a_step_on_the_users_message_keeps_the_agent(tmp_path):
    root = write_set(tmp_path, {"Hand-Crafted/1.json": {**HAND_CRAFTED, "mistake_step": "0"}})
    with pytest.warns(TraceWarning, match="Hand-Crafted/1.json: mistake_step: 0 is no agent"):
        ws = load_who_and_when(root)
    assert ws.label_records[0].label == "WebSurfer"


def test_bad_files_are_named_with_their_field(tmp_path):
    root = write_set(tmp_path, {
        "Hand-Crafted/1.json": "{not json",
        "Hand-Crafted/2.json": {**HAND_CRAFTED, "mistake_step": "three"},
        "Hand-Crafted/3.json": {**HAND_CRAFTED, "mistake_agent": "Nobody"},
        "Hand-Crafted/4.json": {**HAND_CRAFTED, "history": []},
        "Hand-Crafted/5.json": HAND_CRAFTED})
    with pytest.raises(LabelValidationError) as e:
        load_who_and_when(root)
    shown = {(p.file, p.path) for p in e.value.problems}
    assert ("Hand-Crafted/1.json", "") in shown
    assert ("Hand-Crafted/2.json", "mistake_step") in shown
    assert ("Hand-Crafted/3.json", "mistake_agent") in shown
    assert ("Hand-Crafted/4.json", "history") in shown
    assert not any(f == "Hand-Crafted/5.json" for f, _ in shown)
    assert "'Nobody' has no turn in history" in str(e.value)


def test_a_folder_that_is_not_who_and_when(tmp_path):
    with pytest.raises(InputError, match="not a Who&When folder"):
        load_who_and_when(tmp_path)
    with pytest.raises(InputError, match="not a Who&When folder"):
        load_who_and_when(tmp_path / "missing")
    (tmp_path / "Who&When" / "Hand-Crafted").mkdir(parents=True)
    with pytest.raises(InputError, match="holds no run file"):
        load_who_and_when(tmp_path)


@pytest.mark.skipif(not MIRROR.is_dir(), reason="set MAEV_WHO_AND_WHEN_GIT to a clone of the Who&When repository")
def test_the_real_benchmark(tmp_path):
    """184 runs; the first-agent baseline equals a count over the raw files."""
    archive = subprocess.run(["git", "-C", str(MIRROR), "archive", "HEAD", "Who&When"],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive, check=True)
    ws = load_who_and_when(tmp_path)
    assert len(ws.traces) == 184
    assert {k: len(v) for k, v in ws.manifest.splits.items()} == {
        "hand-crafted": 58, "algorithm-generated": 126}
    right = 0
    for f in sorted((tmp_path / "Who&When").glob("*/*.json")):
        d = json.loads(f.read_text(encoding="utf-8"))
        first = next(e for e in d["history"] if e["role"] != "human" or e.get("name"))
        right += (first.get("name") or first["role"]).split(" (")[0] == d["mistake_agent"]
    c = failure_attribution()
    board = attribution_leaderboard(c.items(ws.traces), ws)
    assert board.loc["baseline: first agent", "accuracy"] == pytest.approx(right / 184)
