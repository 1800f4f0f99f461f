"""calibrate on criterion items: κ equals scikit-learn's, weighted when ordinal; labels in any
accepted form; a failed call is never a verdict."""

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from maev_kit.calibration import calibrate
from maev_kit.criteria import CallableJudge, Criterion
from maev_kit.errors import InputError
from maev_kit.labels import LabelStore
from maev_kit.testing import FakeOpenAIServer

from criteria.conftest import make_traces, says_amount

GROUNDED = Criterion("grounded", scope="conversation", labels=("yes", "no"), positive="yes",
                     question="Is the final answer grounded in a tool result?")
# people's labels: the callable's answer, with three items flipped
FLIPPED = {1, 4, 9}


def _human(items):
    out = {}
    for i, it in enumerate(items):
        lab = says_amount(it)
        out[it.item_id] = {"ana": ("no" if lab == "yes" else "yes") if i in FLIPPED else lab}
    return out


def test_callable_kappa_equals_sklearn_in_every_label_form(tmp_path):
    items = GROUNDED.items(make_traces(12))
    human = _human(items)
    h = [human[it.item_id]["ana"] for it in items]
    j = [says_amount(it) for it in items]
    expected = cohen_kappa_score(h, j)
    store = LabelStore(tmp_path / "labels.jsonl")
    for it in items:
        store.add(it.item_id, human[it.item_id]["ana"], annotator="ana", criterion="grounded")
    records = [{"item_id": iid, "annotator": "ana", "label": v["ana"]} for iid, v in human.items()]
    for labels in (human, store, str(tmp_path / "labels.jsonl"), records):
        res = calibrate(items, labels, judges=[says_amount], progress=False, n_resamples=300)
        row = res.leaderboard.iloc[0]
        assert row["kappa"] == pytest.approx(expected, abs=1e-12)
        assert row["accuracy"] == pytest.approx(np.mean([a == b for a, b in zip(h, j)]))
        assert row["kappa_low"] <= row["kappa"] <= row["kappa_high"]
        assert res.criterion is GROUNDED and row["n_items"] == 12


def test_ordinal_kappa_is_linearly_weighted_and_ceiling_uses_two_people():
    c = Criterion("quality", scope="turn", labels=("good", "ok", "bad"), ordinal=True,
                  question="How good is this turn?")
    items = c.items(make_traces(10))  # 20 turns
    rng = np.random.default_rng(3)
    truth = rng.choice(c.labels, size=len(items))
    ben = [t if rng.random() < 0.7 else c.labels[(c.labels.index(t) + 1) % 3] for t in truth]
    guess = {it.item_id: t if k % 4 else "ok" for k, (it, t) in enumerate(zip(items, truth))}
    human = {it.item_id: {"ana": str(a), "ben": str(b)} for it, a, b in zip(items, truth, ben)}
    judge = CallableJudge(lambda it: guess[it.item_id], name="guess")
    res = calibrate(items, human, judges=[judge], progress=False, n_resamples=300)
    j = [guess[it.item_id] for it in items]
    weighted = np.mean([cohen_kappa_score(list(map(str, who)), j, labels=list(c.labels),
                                          weights="linear") for who in (truth, ben)])
    assert res.leaderboard.iloc[0]["kappa"] == pytest.approx(weighted, abs=1e-12)
    assert res.ceiling["kappa"] == pytest.approx(cohen_kappa_score(
        list(map(str, truth)), ben, labels=list(c.labels), weights="linear"), abs=1e-12)


def test_two_judges_ranked_and_llm_failures_are_not_verdicts(litellm_module, tmp_path):
    items = GROUNDED.items(make_traces(12))
    human = _human(items)

    def answer(body):
        return json.dumps({"label": "yes", "evidence": None, "reason": "always yes"})

    with FakeOpenAIServer(responder=answer) as srv:
        res = calibrate(items, human, judges=[says_amount, "openai/fake-judge"],
                        backend_params={"api_base": srv.base_url, "api_key": "sk-test"},
                        progress=False, n_resamples=300, cache=False)
    board = res.leaderboard.set_index("key")
    assert list(board.index) == ["criteria.conftest:says_amount", "openai/fake-judge [criterion-v1]"]
    h = [human[it.item_id]["ana"] for it in items]
    assert board.loc["openai/fake-judge [criterion-v1]", "kappa"] == pytest.approx(
        cohen_kappa_score(h, ["yes"] * 12), abs=1e-12)
    with FakeOpenAIServer(fail="prose") as srv:
        res = calibrate(items, human, judges=[says_amount, "openai/fake-judge"],
                        backend_params={"api_base": srv.base_url, "api_key": "sk-test"},
                        progress=False, n_resamples=300, cache=False, max_retries=0)
    failed = res.leaderboard.set_index("key").loc["openai/fake-judge [criterion-v1]"]
    assert failed["status"].startswith("failed") and np.isnan(failed["kappa"])


def test_labels_outside_the_criterion_are_an_input_error():
    items = GROUNDED.items(make_traces(3))
    bad = {items[0].item_id: {"ana": "maybe"}}
    with pytest.raises(InputError, match="'maybe' of 'ana' on item 'grounded:conv-00'"):
        calibrate(items, bad, judges=[says_amount], progress=False)
    with pytest.raises(InputError, match="has a human label"):
        calibrate(items, {"other:x": {"ana": "yes"}}, judges=[says_amount], progress=False)


def says_nothing(item):
    """A judge that drifted: 'no' whatever the conversation."""
    return "no"


def test_card_names_the_function_and_the_drift_gate_reruns_it(tmp_path):
    from maev_kit.calibration import JudgeCard, check_criterion_card

    traces = make_traces(30)
    items = GROUNDED.items(traces)
    human = _human(items)
    res = calibrate(items, human, judges=["criteria.conftest:says_amount"], progress=False,
                    n_resamples=300)
    card = res.card(min_kappa=0.2)
    card.save(tmp_path / "card.json")
    loaded = JudgeCard.load(tmp_path / "card.json")
    assert loaded.judge_name == "criteria.conftest:says_amount" and loaded.model is None
    assert loaded.criterion["labels"] == ["yes", "no"] and loaded.criterion["name"] == "grounded"
    assert set(loaded.criterion_verdicts.values()) == {"yes", "no"}
    assert loaded.item_verdicts is None
    same = check_criterion_card(tmp_path / "card.json", traces, human, n_resamples=300,
                                progress=False)
    assert same.status == "PASS" and same.kappa_now == pytest.approx(loaded.kappa)
    assert same.then_only_correct == same.now_only_correct == 0
    drifted = check_criterion_card(loaded, traces, human, judge=says_nothing,
                                   n_resamples=300, progress=False)
    assert drifted.status == "FAIL" and drifted.exit_code == 1
    assert drifted.then_only_correct > 0 and drifted.p_value < 0.05


def test_card_verdicts_are_checked_against_their_labels():
    from pydantic import ValidationError

    from maev_kit.calibration import JudgeCard

    with pytest.raises(ValidationError):
        JudgeCard(judge_name="h", judge_version="1", item_verdicts={"a": "yes"})
    with pytest.raises(ValidationError, match="not one of the criterion's labels"):
        JudgeCard(judge_name="m:f", judge_version="1", criterion={"labels": ["yes", "no"]},
                  criterion_verdicts={"a": "lost"})
    card = JudgeCard(judge_name="h", judge_version="1", item_verdicts={"a": "lost"})
    assert "criterion" not in card.model_dump_json()  # older cards are written as before


def test_retention_only_options_are_refused_for_criterion_items():
    items = GROUNDED.items(make_traces(3))
    with pytest.raises(InputError, match="examples, prompts: for retention items only"):
        calibrate(items, {}, judges=[says_amount], prompts=["v1"], examples=2)


def blames_triage(item):
    """A failure-attribution judge that drifted: triage, whatever the run."""
    return "triage"


def test_the_drift_gate_of_failure_attribution_compares_agents(tmp_path):
    """People label ``agent@step``; the card and the rerun hold agents. The gate compares on the
    agent: a judge that drifted is caught by McNemar, not passed because no label matched."""
    from maev_kit.calibration import check_criterion_card
    from maev_kit.criteria import failure_attribution

    from criteria.conftest import blames_on_amount

    traces = make_traces(30, handoffs=False)
    items = failure_attribution().items(traces)
    human = {it.item_id: {"ana": blames_on_amount(it)} for it in items}
    res = calibrate(items, human, judges=["criteria.conftest:blames_on_amount"],
                    progress=False, n_resamples=300)
    card = res.card(min_kappa=0.2)
    same = check_criterion_card(card, traces, human, n_resamples=300, progress=False)
    assert same.status == "PASS" and same.then_only_correct == same.now_only_correct == 0
    drifted = check_criterion_card(card, traces, human, judge=blames_triage, n_resamples=300,
                                   progress=False)
    wrong_now = sum(1 for it in items if not blames_on_amount(it).startswith("triage"))
    assert drifted.then_only_correct == wrong_now > 0 and drifted.p_value < 0.05
    assert drifted.status == "FAIL"
