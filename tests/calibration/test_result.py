"""CalibrationResult from hand-made judge runs (no runner, no network)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from maev_kit.agreement import cohen_kappa, judge_vs_humans, majority_labels
from maev_kit.calibration import JudgeMeta, calibration_from_runs, load_human_labels

from ._fakes import corrupt, label_dicts, make_items, run_of, truth

N = 120


@pytest.fixture(scope="module")
def two_humans():
    items = make_items(N, facts_per_handoff=3)
    gold = truth(N)
    ana = gold
    ben = corrupt(gold, set(range(0, N, 20)))  # ben differs on 6 items
    labels = label_dicts(items, ana, "ana") + label_dicts(items, ben, "ben")
    return items, gold, ana, ben, labels


@pytest.fixture(scope="module")
def result(two_humans):
    items, gold, ana, ben, labels = two_humans
    good = corrupt(gold, set(range(3, N, 10)))          # 90 % agree with ana
    poor = corrupt(gold, {i for i in range(N) if i % 5 in (1, 2)})  # 60 %
    runs = {"poor [v1]": run_of(items, poor, "retention-v1", model="poor",
                                errors={7}),
            "good [v1]": run_of(items, good, "retention-v1", model="good")}
    meta = {"poor [v1]": JudgeMeta("poor", "v1"), "good [v1]": JudgeMeta("good", "v1")}
    return calibration_from_runs(runs, labels, meta=meta, n_resamples=2000), good, poor


def test_leaderboard_ranks_and_matches_agreement_module(result, two_humans):
    res, good, poor = result
    items, gold, ana, ben, _ = two_humans
    board = res.leaderboard
    assert list(board["key"]) == ["good [v1]", "poor [v1]"]
    assert list(board["judge"]) == ["good", "poor"] and list(board["prompt"]) == ["v1", "v1"]
    expected = judge_vs_humans(good, {"ana": ana, "ben": ben}, n_resamples=2000)
    assert board.loc[0, "kappa"] == pytest.approx(expected.judge_kappa, abs=1e-12)
    assert (board.loc[0, "kappa_low"], board.loc[0, "kappa_high"]) == \
        pytest.approx(expected.judge_ci, abs=1e-12)
    assert board.loc[0, "delta_kappa"] == 0.0 and math.isnan(board.loc[0, "p_value"])
    assert board.loc[1, "delta_kappa"] < -0.2
    assert board.loc[1, "p_value"] < 0.01
    assert board.loc[1, "parse_failure_rate"] == pytest.approx(1 / N)
    assert board.loc[1, "n_items"] == N - 1
    for col in ("judge", "prompt", "kappa", "kappa_low", "kappa_high", "delta_kappa", "p_value",
                "ac1", "accuracy", "parse_failure_rate", "recall_contradicted", "cost",
                "tokens", "latency_p50", "latency_p95", "requests", "cache_hits"):
        assert col in board.columns


def test_accuracy_and_contradicted_recall_are_pooled_over_annotators(result, two_humans):
    res, good, _ = result
    _, _, ana, ben, _ = two_humans
    pairs = [(h, j) for hs in (ana, ben) for h, j in zip(hs, good)]
    acc = sum(h == j for h, j in pairs) / len(pairs)
    c = [(h, j) for h, j in pairs if h == "contradicted"]
    row = res.leaderboard.set_index("key").loc["good [v1]"]
    assert row["accuracy"] == pytest.approx(acc)
    assert row["recall_contradicted"] == pytest.approx(sum(j == "contradicted" for _, j in c)
                                                       / len(c))


def test_ceiling_and_confusions(result, two_humans):
    res, good, _ = result
    _, _, ana, ben, _ = two_humans
    assert res.ceiling["kappa"] == pytest.approx(cohen_kappa(ana, ben), abs=1e-12)
    assert res.ceiling["kappa_low"] <= res.ceiling["kappa"] <= res.ceiling["kappa_high"]
    conf = res.confusions["good [v1]"]
    assert conf.values.sum() == N and list(conf.index) == ["retained", "lost", "contradicted"]
    majority = majority_labels({"ana": ana, "ben": ben})
    assert np.trace(conf.values) == sum(m == g for m, g in zip(majority, good))
    assert conf.loc["contradicted", "retained"] == sum(
        m == "contradicted" and g == "retained" for m, g in zip(majority, good))


def test_disagreements_list_texts(result):
    res, good, poor = result
    d = res.disagreements
    assert set(d["judge"]) == {"good [v1]", "poor [v1]"}
    row = d[d["judge"] == "good [v1]"].iloc[0]
    assert row["fact"].startswith("Fact ") and "ACCT-" in row["after_text"]
    assert set(row["human_labels"]) == {"ana", "ben"}
    assert row["judge_label"] != row["human_majority"]
    err = d[d["error"].notna()]
    assert len(err) == 1 and pd.isna(err.iloc[0]["judge_label"])


def test_recommendation_and_card(result):
    res, _, _ = result
    assert res.recommended == "good [v1]"
    assert res.recommendation.startswith("Use good [v1]")
    card = res.card()
    assert card.judge_name == "retention-v1" and card.model == "good"
    assert card.kappa == pytest.approx(res.leaderboard.loc[0, "kappa"])
    assert card.annotators == ["ana", "ben"] and len(card.labels_hash) == 64
    json.dumps(res.to_dict())
    assert "good [v1]" in str(res)


def test_single_annotator_uses_kappa_against_that_annotator():
    items = make_items(60)
    gold = truth(60)
    judge = corrupt(gold, set(range(0, 60, 6)))
    res = calibration_from_runs({"h": run_of(items, judge, "heuristic")},
                                label_dicts(items, gold, "ana"), n_resamples=500)
    assert res.ceiling is None
    assert res.leaderboard.loc[0, "kappa"] == pytest.approx(cohen_kappa(gold, judge), abs=1e-12)


def test_no_trustworthy_judge_says_what_to_do():
    items = make_items(40)
    gold = truth(40)
    judge = corrupt(gold, set(range(0, 40, 4)))  # κ ≈ 0.6: CI too wide at n = 40
    res = calibration_from_runs({"m [v1]": run_of(items, judge, "retention-v1", model="m")},
                                label_dicts(items, gold, "ana"), n_resamples=1000,
                                meta={"m [v1]": JudgeMeta("m", "v1")}, threshold=0.5)
    assert res.recommended is None
    text = res.recommendation
    assert text.startswith("No judge is trustworthy yet")
    assert "label ~" in text and "more items" in text
    assert "prompt v2" in text


def test_items_without_labels_are_not_scored_and_bad_ids_raise():
    items = make_items(30)
    gold = truth(30)
    labels = label_dicts(items[:20], gold[:20], "ana")
    res = calibration_from_runs({"h": run_of(items, gold, "heuristic")}, labels, n_resamples=200)
    assert len(res.item_ids) == 20
    with pytest.raises(ValueError, match="same item ids"):
        calibration_from_runs({"h": run_of(items, gold, "heuristic")},
                              [{"item_id": "x/h0/f1", "annotator": "a", "label": "lost"}])


def test_load_human_labels_forms(tmp_path):
    from maev_kit.labels import LabelStore

    store = LabelStore(tmp_path / "labels.jsonl")
    store.add("c1/h0/f1", "lost", annotator="ana")
    store.add("c1/h0/f1", "retained", annotator="gold_panel")
    store.add("c1/h0/f2", "retained", annotator="gold", source="gold")
    expected = {"c1/h0/f1": {"ana": "lost", "gold_panel": "retained"}}
    assert load_human_labels(store) == expected
    assert load_human_labels(tmp_path / "labels.jsonl") == expected
    assert load_human_labels(str(tmp_path)) == expected
    with pytest.raises(ValueError, match=r"human_labels\[0\]"):
        load_human_labels([{"item_id": "a", "annotator": "b", "label": "unsure"}])
    with pytest.raises(TypeError):
        load_human_labels(42)
