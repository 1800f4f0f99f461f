"""Argument checking, result objects, and import hygiene of ``maev_kit.agreement``."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import maev_kit.agreement as agreement
from maev_kit.agreement import (
    agreement_report,
    cohen_kappa,
    compare_judges,
    holm,
    human_ceiling,
    judge_vs_humans,
    krippendorff_alpha,
    labels_needed,
)
from maev_kit.errors import UndefinedMetricWarning

from ._golden import M1, M1_JUDGE, P1_A, P1_B, P1_HUMAN, V1


def test_all_is_sorted_and_complete():
    assert agreement.__all__ == sorted(agreement.__all__, key=lambda n: (not n.isupper(), n))
    for name in ("cohen_kappa", "agreement_report", "krippendorff_alpha", "fleiss_kappa",
                 "human_ceiling", "judge_vs_humans", "compare_judges", "labels_needed"):
        assert name in agreement.__all__


def test_import_does_not_pull_heavy_dependencies():
    code = ("import sys, maev_kit.agreement, maev_kit; "
            "print(sorted(m for m in ('sklearn', 'scipy', 'krippendorff', 'litellm') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("bad, match", [
    (dict(weights="cubic"), "`weights`"),
    (dict(labels="retained"), "`labels`"),
    (dict(labels=("retained", "retained", "lost", "contradicted")), "repeated"),
    (dict(labels=()), "must not be empty"),
])
def test_bad_options_name_the_argument(bad, match):
    with pytest.raises(ValueError, match=match):
        cohen_kappa(*V1, **bad)


def test_length_mismatch_and_bad_resamples():
    with pytest.raises(ValueError, match="same length"):
        cohen_kappa(["lost"], ["lost", "lost"])
    with pytest.raises(ValueError, match="`n_resamples`"):
        agreement_report(*V1, n_resamples=0)
    with pytest.raises(ValueError, match="`confidence`"):
        agreement_report(*V1, confidence=95)
    with pytest.raises(ValueError, match="single string"):
        cohen_kappa("lost", "lost")


def test_report_all_missing_warns_and_is_nan():
    with pytest.warns(UndefinedMetricWarning):
        r = agreement_report([None, "lost"], ["lost", None], n_resamples=50)
    assert math.isnan(r.kappa) and r.n_used == 0 and r.n_dropped == 2


def test_report_to_dict_is_json_and_str_reads_well():
    r = agreement_report(*V1, n_resamples=500)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["ci"][0] < d["kappa"] < d["ci"][1]
    assert d["interpretation"] == "moderate"
    assert "κ = 0.598 (moderate)" in str(r)
    assert isinstance(r.confusion, pd.DataFrame)
    assert r.ci == agreement_report(*V1, n_resamples=500).ci  # seeded
    assert r.wald_ci[0] < r.kappa < r.wald_ci[1]


def test_bootstrap_ci_agrees_roughly_with_wald_on_large_n():
    from ._golden import V2

    r = agreement_report(*V2, n_resamples=4000)
    assert abs(r.ci[0] - r.wald_ci[0]) < 0.03 and abs(r.ci[1] - r.wald_ci[1]) < 0.03


def test_human_ceiling_m1():
    c = human_ceiling(M1, n_resamples=1000)
    assert c.kappa == pytest.approx(0.654456654457, abs=1e-9)
    assert c.fleiss_kappa == pytest.approx(0.695945945946, abs=1e-9)
    assert c.krippendorff_alpha == pytest.approx(0.684824902724, abs=1e-9)
    assert c.ci[0] <= c.kappa <= c.ci[1]
    assert len(c.pairwise) == 3 and c.pairwise["n"].tolist() == [8, 9, 9]
    json.dumps(c.to_dict())
    with pytest.raises(ValueError, match="at least two annotators"):
        human_ceiling({"a1": M1["a1"]})


def test_judge_vs_humans_accepts_dataframe_and_lists():
    r1 = judge_vs_humans(M1_JUDGE, M1, n_resamples=300)
    r2 = judge_vs_humans(M1_JUDGE, pd.DataFrame(M1), n_resamples=300)
    r3 = judge_vs_humans(M1_JUDGE, list(M1.values()), n_resamples=300)
    assert r1.judge_kappa == r2.judge_kappa == r3.judge_kappa
    assert r1.judge_ci[0] <= r1.judge_kappa <= r1.judge_ci[1]
    assert r1.difference == pytest.approx(r1.judge_kappa - r1.human_kappa)
    json.dumps(r1.to_dict())
    with pytest.raises(ValueError, match="aligned by item"):
        judge_vs_humans(M1_JUDGE[:5], M1)


def test_krippendorff_level_checked():
    with pytest.raises(ValueError, match="`level`"):
        krippendorff_alpha(M1, level="ratio")


def test_compare_three_judges_uses_holm():
    c = compare_judges(P1_HUMAN, {"A": P1_A, "B": P1_B, "A2": list(P1_A)}, n_resamples=2000)
    assert len(c.pairs) == 3
    assert c.pairs["p_holm"].tolist() == holm(c.pairs["p_value"].tolist())
    assert (c.pairs["p_holm"] >= c.pairs["p_value"]).all()
    assert set(c.kappas.index) == {"A", "B", "A2"}
    json.dumps(c.to_dict())


def test_compare_with_several_humans_uses_mean_kappa_and_majority():
    humans = {"h1": P1_HUMAN, "h2": P1_HUMAN[:-1] + ["lost"]}
    c = compare_judges(humans, P1_A, P1_B, n_resamples=500)
    assert c.reference == "majority"
    expected = (cohen_kappa(humans["h1"], P1_A) + cohen_kappa(humans["h2"], P1_A)) / 2
    assert c.kappas.iloc[0] == pytest.approx(expected, abs=1e-12)


def test_compare_needs_two_judges_and_aligned_names():
    with pytest.raises(ValueError, match="at least two judges"):
        compare_judges(P1_HUMAN, P1_A)
    with pytest.raises(ValueError, match="`names`"):
        compare_judges(P1_HUMAN, P1_A, P1_B, names=["A"])


def test_compare_drops_items_missing_for_any_judge():
    a = list(P1_A)
    a[0] = None
    c = compare_judges(P1_HUMAN, a, P1_B, n_resamples=200)
    assert c.n_used == 39


def test_labels_needed_validates_and_shrinks_with_halfwidth():
    m = {"retained": 60, "lost": 30, "contradicted": 10}
    assert labels_needed(target_halfwidth=0.05, kappa=0.7, marginals=m) > \
        labels_needed(target_halfwidth=0.1, kappa=0.7, marginals=m)
    with pytest.raises(ValueError, match="`target_halfwidth`"):
        labels_needed(target_halfwidth=0, kappa=0.7, marginals=m)
    with pytest.raises(ValueError, match="`marginals`"):
        labels_needed(kappa=0.7, marginals=[1.0])
    with pytest.raises(ValueError, match="impossible"):
        labels_needed(kappa=-0.9, marginals=[0.9, 0.1])


@pytest.mark.parametrize("second", [[None] * 6, ["retained", None, "lost", None, None, None]])
def test_compare_with_no_item_judged_by_every_judge_is_nan_not_an_exception(second):
    from maev_kit.errors import UndefinedMetricWarning

    human = ["retained", "lost", "contradicted", "retained", "lost", "retained"]
    first = [None, "lost", None, "retained", "lost", "retained"] if second[0] else human
    with pytest.warns(UndefinedMetricWarning, match="nothing to compare"):
        c = compare_judges(human, first, second, n_resamples=200)
    assert c.n_used == 0
    row = c.pairs.iloc[0]
    for col in ("delta", "delta_low", "delta_high", "p_value", "p_holm", "mcnemar_p"):
        assert np.isnan(row[col]), col
    assert np.isnan(c.delta) and np.isnan(c.p_value)


def test_ci_labels_come_from_the_confidence():
    from maev_kit.agreement import ci_label

    human = ["retained", "lost", "contradicted", "retained"] * 5
    rep = agreement_report(human, human[::-1], confidence=0.8, n_resamples=200)
    assert "80% CI" in str(rep) and "95" not in str(rep)
    assert ci_label(0.9) == "90% CI"
