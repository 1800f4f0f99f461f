import json
from pathlib import Path

import pytest

from maev_kit.judges import LearnedJudge, NotFittedError, TrainingOverlapError

from .conftest import make_item


def dataset():
    """Small synthetic train/test sets with a learnable pattern."""
    train, labels = [], []
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
    for i in range(30):
        fact = f"Order ORD-{i} ships on {days[i % 5]}"
        if i % 3 == 0:
            said, y = f"ORD-{i} ships on {days[i % 5]}.", "retained"
        elif i % 3 == 1:
            said, y = "Which order number is it?", "lost"
        else:
            said, y = f"ORD-{i} ships on {days[(i + 1) % 5]}.", "contradicted"
        train.append(make_item(fact, said, conv=f"tr{i}"))
        labels.append(y)
    test = [make_item("Order ORD-90 ships on Friday", "ORD-90 ships on Friday.", conv="te0"),
            make_item("Order ORD-91 ships on Monday", "Which order number is it?", conv="te1"),
            make_item("Order ORD-92 ships on Monday", "ORD-92 ships on Tuesday.", conv="te2")]
    return train, labels, test


def test_learns_and_judges_held_out_items():
    train, labels, test = dataset()
    judge = LearnedJudge().fit(train, labels)
    verdicts = judge.judge_items(test)
    assert [v.label for v in verdicts] == ["retained", "lost", "contradicted"]
    assert all(v.rationale.startswith("p(retained)=") for v in verdicts)
    assert verdicts[2].evidence[0] == verdicts[2].rationale
    assert any("weekday conflict" in e for e in verdicts[2].evidence)
    proba = judge.predict_proba(test)
    assert proba.shape == (3, 3) and abs(proba.sum(axis=1) - 1).max() < 1e-9


def test_refuses_items_it_was_trained_on():
    train, labels, test = dataset()
    judge = LearnedJudge().fit(train, labels)
    with pytest.raises(TrainingOverlapError,
                       match=r"fit on 1 of these 2 items \(e.g. 'tr5/h0/f1'\)"):
        judge.judge_items([test[0], train[5]])
    # the same fact and messages under another id are the same item
    renamed = make_item(train[5].fact, train[5].after[0].content, conv="renamed")
    with pytest.raises(TrainingOverlapError):
        judge.judge_items([renamed])
    assert isinstance(TrainingOverlapError("x"), ValueError)


def test_refuses_to_judge_before_fit():
    with pytest.raises(NotFittedError, match="fit\\(train_items, train_labels\\)"):
        LearnedJudge().judge_items([make_item("x", "y")])


def test_training_is_deterministic_and_order_free():
    train, labels, test = dataset()
    a = LearnedJudge().fit(train, labels)
    b = LearnedJudge().fit(train[::-1], labels[::-1])
    assert a.version == b.version and a.version != LearnedJudge().version
    assert (a.predict_proba(test) == b.predict_proba(test)).all()
    mapping = {it.item_id: y for it, y in zip(train, labels)}
    c = LearnedJudge().fit(train, mapping)
    assert c.version == a.version


@pytest.mark.parametrize("labels, match", [
    (["retained"] * 29, "29 labels for 30 items"),
    (["retained", "skip"] * 15, "'skip'"),
    (["retained"] * 30, "at least two different labels"),
    ({}, "no label for 30 item"),
])
def test_bad_training_labels_are_refused(labels, match):
    train, _, _ = dataset()
    with pytest.raises(ValueError, match=match):
        LearnedJudge().fit(train, labels)


def test_bad_c_is_refused():
    with pytest.raises(ValueError, match="`C`"):
        LearnedJudge(C=0)


def test_beats_chance_on_held_out_snli():
    path = Path(__file__).parents[1] / "data" / "retention_snli_subset.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    dev = [r for r in rows if r["split"] == "dev"][:600]
    test = [r for r in rows if r["split"] == "test"][:300]

    def items(rs):
        return [make_item(r["fact"], r["message"], conv=r["id"]) for r in rs]

    judge = LearnedJudge().fit(items(dev), [r["label"] for r in dev])
    pred = [v.label for v in judge.judge_items(items(test))]
    acc = sum(p == r["label"] for p, r in zip(pred, test)) / len(test)
    assert acc > 0.5  # chance is 1/3


def test_its_inputs_are_the_receivers_entries_so_its_version_follows_them():
    from maev_kit.retention import RetentionItem
    from maev_kit.traces import Message

    train, labels, _ = dataset()

    def with_after(item, *extra):
        return RetentionItem(item.item_id, item.conversation_id, 0, item.fact_id, item.fact,
                             item.before, (*item.after, *extra), item.from_agent,
                             item.to_agent)

    base = LearnedJudge().fit(train, labels).version
    # another agent's entry is no input: same version
    router = Message("triage", "Summary: ORD-0 ships Monday.", 40)
    other = LearnedJudge().fit([with_after(train[0], router), *train[1:]], labels).version
    assert other == base
    # a tool call of the receiving agent is one: another version
    lookup = Message("billing", 'track(order="ORD-0")', 40, kind="tool_call", tool="track",
                     fields=(("arguments.order", 13, 18),))
    mine = LearnedJudge().fit([with_after(train[0], lookup), *train[1:]], labels).version
    assert mine != base
    assert base.startswith("3-C1-")
