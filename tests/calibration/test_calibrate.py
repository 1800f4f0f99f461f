"""calibrate() with offline judges: judge names, labeled-set folders, dev/test splits."""

from __future__ import annotations

import json

import pytest

from maev_kit.calibration import calibrate
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message

from ._fakes import label_dicts

FACTS = [  # (fact, what the next agent said, label)
    ("Order ORD-{n} ships on Monday", "Order ORD-{n} ships on Monday as planned.", "retained"),
    ("Order ORD-{n} ships on Monday", "Which order number is it?", "lost"),
    ("Order ORD-{n} ships on Monday", "Order ORD-{n} ships on Friday.", "contradicted"),
    ("The refund for ORD-{n} is 40 dollars", "Refund of 40 dollars for ORD-{n} is done.",
     "retained"),
]


def _rows(n: int):
    return [(f"conv{k:02d}", *(s.format(n=k) for s in FACTS[k % 4][:2]), FACTS[k % 4][2])
            for k in range(n)]


def write_labeled_set(folder, n=40):
    folder.mkdir()
    rows = _rows(n)
    traces, exps, labels = [], [], []
    for cid, fact, said, label in rows:
        traces.append({"schema_version": 1, "conversation_id": cid,
                       "turns": [{"agent_id": "intake", "agent_role": "intake", "message": fact,
                                  "tool_calls": [], "turn_index": 1},
                                 {"agent_id": "shipping", "agent_role": "shipping",
                                  "message": said, "tool_calls": [], "turn_index": 3}],
                       "handoffs": [{"from_agent": "intake", "to_agent": "shipping",
                                     "reason": None, "context_passed": {}, "turn_index": 2,
                                     "mode": "transfer"}],
                       "user_messages": [{"content": "Where is my order?", "turn_index": 0}],
                       "metadata": {}})
        exps.append({"conversation_id": cid, "handoffs": [], "routing": [],
                     "key_facts": [{"fact_id": "f1", "handoff_index": 0, "text": fact}]})
        for ann in ("ana", "ben"):
            labels.append({"item_id": f"{cid}/h0/f1", "annotator": ann, "label": label})
        labels.append({"item_id": f"{cid}/h0/f1", "annotator": "gold", "label": label,
                       "source": "gold"})
    ids = [r[0] for r in rows]
    manifest = {"name": "tiny_orders", "version": "0.1.0", "description": "test fixture",
                "agents": {"intake": "intake", "shipping": "shipping"},
                "labels": ["retained", "lost", "contradicted"],
                "splits": {"dev": ids[: n // 2], "test": ids[n // 2:]}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for name, data in (("traces", traces), ("expectations", exps), ("labels", labels)):
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(d) + "\n" for d in data))
    return folder


def _items(n=40):
    return [RetentionItem(f"{cid}/h0/f1", cid, 0, "f1", fact, (), (Message("shipping", said, 3),),
                          "intake", "shipping") for cid, fact, said, _ in _rows(n)]


def test_labeled_set_folder_reports_on_test_and_fits_learners_on_dev(tmp_path):
    folder = write_labeled_set(tmp_path / "tiny_orders")
    res = calibrate(folder, judges=["heuristic", "tfidf-logreg"], progress=False, cache=False,
                    n_resamples=300)
    assert res.split == "test"
    assert len(res.item_ids) == 20 and all(int(i[4:6]) >= 20 for i in res.item_ids)
    assert set(res.leaderboard["judge"]) == {"heuristic", "tfidf-logreg"}
    assert res.leaderboard["prompt"].isna().all()
    assert res.annotators == ("ana", "ben")  # the gold record is not a person
    learned = res.runs["tfidf-logreg"]
    assert {it.item_id for it in learned.items} == set(res.item_ids)
    assert "untrained" not in learned.judge_version
    card = res.card("heuristic")
    assert (card.labeled_set, card.labeled_set_version, card.split) == \
        ("tiny_orders", "0.1.0", "test")
    assert len(card.labeled_set_hash) == 64


def test_explicit_split_mapping_with_items():
    items = _items()
    labels = label_dicts(items, [r[3] for r in _rows(40)], "ana")
    ids = [it.conversation_id for it in items]
    res = calibrate(items, labels, judges=["tfidf-logreg"], split={"dev": ids[:30],
                                                                   "test": ids[30:]},
                    progress=False, cache=False, n_resamples=200)
    assert len(res.item_ids) == 10 and res.split == "test"


def test_learning_judge_without_a_dev_split_is_refused():
    items = _items()
    labels = label_dicts(items, [r[3] for r in _rows(40)], "ana")
    with pytest.raises(ValueError, match="dev split"):
        calibrate(items, labels, judges=["tfidf-logreg"], progress=False, cache=False)


@pytest.mark.parametrize("judges, match", [
    (["retention-v1"], "prompt variant"),
    (["heuristic", "heuristic"], "more than once"),
    ("heuristic", "non-empty list"),
    ([42], "offline judge name"),
])
def test_bad_judge_specs_explain_the_fix(judges, match):
    items = _items(4)
    labels = label_dicts(items, ["retained"] * 4, "ana")
    with pytest.raises((ValueError, TypeError), match=match):
        calibrate(items, labels, judges=judges, progress=False, cache=False)


def test_other_argument_errors():
    items = _items(4)
    labels = label_dicts(items, ["retained"] * 4, "ana")
    with pytest.raises(ValueError, match="`threshold`"):
        calibrate(items, labels, judges=["heuristic"], threshold=2)
    with pytest.raises(ValueError, match="`human_labels` is required"):
        calibrate(items, judges=["heuristic"])
    with pytest.raises(ValueError, match="needs a labeled set"):
        calibrate(items, labels, judges=["heuristic"], split="test")
    with pytest.raises(ValueError, match="`prompts`"):
        calibrate(items, labels, judges=["heuristic"], prompts="v1")


def test_cli_calibrate_prints_leaderboard_and_writes_card(tmp_path):
    from click.testing import CliRunner

    from maev_kit.calibration import JudgeCard
    from maev_kit.cli._calibrate import calibrate_command

    folder = write_labeled_set(tmp_path / "tiny_orders")
    card = tmp_path / "card.json"
    out = CliRunner().invoke(calibrate_command, [str(folder), "--judge", "heuristic",
                                                 "--no-cache", "--resamples", "200",
                                                 "--card", str(card)])
    assert out.exit_code == 0, out.output
    assert "heuristic" in out.output and "human–human κ" in out.output
    assert JudgeCard.load(card).judge_name == "heuristic"
    out = CliRunner().invoke(calibrate_command, [str(folder), "--judge", "heuristic",
                                                 "--no-cache", "--resamples", "200", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["leaderboard"][0]["judge"] == "heuristic" and data["split"] == "test"
