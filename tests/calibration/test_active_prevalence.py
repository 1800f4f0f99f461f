"""next_items_to_label (vote entropy) and corrected_prevalence."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from maev_kit.calibration import corrected_prevalence, next_items_to_label
from maev_kit.calibration._prevalence import project_to_simplex

from ._fakes import make_items, run_of


def test_vote_entropy_ranks_split_votes_first():
    items = make_items(4)
    a = run_of(items, ["lost", "lost", "retained", "lost"], "a", errors={3})
    b = run_of(items, ["lost", "retained", "contradicted", "lost"], "b")
    c = run_of(items, ["lost", "retained", "lost", "retained"], "c")
    out = next_items_to_label(items, {"A": a, "B": b, "C": c}, k=4)
    # item 3: one judge failed, the other two split 1-1 (log 2 beats a 2-1 split of 3 votes)
    assert out["item_id"].tolist() == [items[i].item_id for i in (2, 3, 1, 0)]
    assert out.loc[0, "vote_entropy"] == pytest.approx(math.log(3))
    assert out.loc[1, "vote_entropy"] == pytest.approx(math.log(2)) and out.loc[1, "n_votes"] == 2
    assert out.loc[2, "vote_entropy"] == pytest.approx(-(1 / 3 * math.log(1 / 3)
                                                         + 2 / 3 * math.log(2 / 3)))
    assert out.loc[3, "vote_entropy"] == 0.0
    assert list(out.columns[-3:]) == ["A", "B", "C"]


def test_next_items_excludes_labeled_and_validates():
    items = make_items(3)
    a = run_of(items, ["lost", "lost", "lost"], "a")
    b = run_of(items, ["retained", "lost", "retained"], "b")
    out = next_items_to_label(items, [a, b], k=5, exclude=[items[0].item_id])
    assert out["item_id"].tolist() == [items[2].item_id, items[1].item_id]
    with pytest.raises(ValueError, match="two or more"):
        next_items_to_label(items, [a], k=1)
    with pytest.raises(ValueError, match="`k`"):
        next_items_to_label(items, [a, b], k=0)


def test_perfect_judge_is_not_corrected():
    conf = np.diag([50, 30, 20])
    judge = ["retained"] * 6 + ["lost"] * 3 + ["contradicted"]
    out = corrected_prevalence(judge, conf, n_resamples=300)
    assert out["corrected"].tolist() == pytest.approx([0.6, 0.3, 0.1])
    assert out["raw"].tolist() == pytest.approx([0.6, 0.3, 0.1])


def test_correction_recovers_true_shares_in_expectation():
    m = np.array([[0.8, 0.15, 0.05], [0.1, 0.85, 0.05], [0.0, 0.1, 0.9]])
    p = np.array([0.5, 0.3, 0.2])
    q = m.T @ p  # the judge's expected shares
    counts = np.round(q * 10_000).astype(int)
    judge = sum(([lab] * int(c) for lab, c in zip(["retained", "lost", "contradicted"], counts)),
                [])
    conf = pd.DataFrame((m * 1000).round(), index=["retained", "lost", "contradicted"],
                        columns=["retained", "lost", "contradicted"])
    out = corrected_prevalence(judge, conf, n_resamples=500)
    assert out["corrected"].to_numpy() == pytest.approx(p, abs=2e-3)
    assert ((out["low"] <= out["corrected"]) & (out["corrected"] <= out["high"])).all()
    assert out["corrected"].sum() == pytest.approx(1.0)


def test_correction_is_clipped_to_the_simplex():
    out = corrected_prevalence(["lost"] * 10, [[90, 10, 0], [0, 100, 0], [0, 0, 10]],
                               n_resamples=200)
    assert (out["corrected"] >= 0).all() and out["corrected"].sum() == pytest.approx(1.0)
    assert project_to_simplex(np.array([0.2, 0.2, 0.2])).tolist() == pytest.approx([1 / 3] * 3)


def test_prevalence_validates_inputs():
    with pytest.raises(ValueError, match="`confusion`"):
        corrected_prevalence(["lost"], [[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="no labels"):
        corrected_prevalence([None], np.eye(3) * 5)
    with pytest.warns(UserWarning, match="contradicted"):
        corrected_prevalence(["lost"], [[5, 1, 0], [1, 5, 0], [0, 0, 0]], n_resamples=50)
