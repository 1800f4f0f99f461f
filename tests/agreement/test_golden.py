"""Every applicable value of tests/data/golden/agreement.md, to 1e-9."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from maev_kit.agreement import (
    agreement_report,
    bowker_test,
    cohen_kappa,
    compare_judges,
    fleiss_kappa,
    gwet_ac1,
    judge_vs_humans,
    krippendorff_alpha,
    majority_labels,
    mcnemar_chi2,
    mcnemar_exact,
    mean_pairwise_kappa,
    multi_rater_agreement,
    stuart_maxwell,
)
from maev_kit.agreement._kappa import ac_table_se, agreement_weights, cohen1960_se, fce_se
from maev_kit.errors import UndefinedMetricWarning

from ._golden import LAB, M1, M1_JUDGE, P1_A, P1_B, P1_HUMAN, V1, V2, expand, s

TOL = 1e-9
approx = lambda x: pytest.approx(x, abs=TOL)  # noqa: E731


def _table(a, b, labels=LAB):
    idx = {lab: i for i, lab in enumerate(labels)}
    t = np.zeros((len(labels), len(labels)))
    for x, y in zip(a, b):
        t[idx[x], idx[y]] += 1
    return t


def _alpha2(a, b, level):
    return krippendorff_alpha({"h": a, "j": b}, level=level)


# -- V1 and V2 --------------------------------------------------------------------------------

VECTORS = {
    "V1": dict(data=V1, po=0.75, pe=0.3775, k=0.598393574297, kl=0.620253164557,
               kq=0.644444444444, se=(0.150177404089, 0.150928079250, 0.174193553253),
               se0=(0.164612100389, 0.175191885552, 0.221298078406),
               wald=(0.304051270992, 0.892735877602), kmax=0.919678714859,
               ac1=0.637352674524, ac2=0.735973597360, pi=0.597585513078, pabak=0.625,
               alpha=(0.607645875252, 0.676623376623, 0.651785714286)),
    "V2": dict(data=V2, po=0.825, pe=0.41575, k=0.700470688917, kl=0.734455958549,
               kq=0.769063180828, se=(0.044997352463, 0.043022593010, 0.046086947214),
               se0=(0.052425130235, 0.057236372840, 0.070621613185),
               wald=(0.612277498690, 0.788663879145), kmax=0.965768078733,
               ac1=0.752809583926, ac2=0.840711688156, pi=0.700387356346, pabak=0.7375,
               alpha=(0.701136387956, 0.772412059435, 0.769517498447)),
}


@pytest.mark.parametrize("name", list(VECTORS))
def test_vector_two_rater_statistics(name):
    g = VECTORS[name]
    human, judge = g["data"]
    assert cohen_kappa(human, judge) == approx(g["k"])
    assert cohen_kappa(human, judge, weights="linear") == approx(g["kl"])
    assert cohen_kappa(human, judge, weights="quadratic") == approx(g["kq"])
    assert gwet_ac1(human, judge) == approx(g["ac1"])
    assert gwet_ac1(human, judge, weights="quadratic") == approx(g["ac2"])
    t = _table(human, judge)
    for w, se, se0 in zip((None, "linear", "quadratic"), g["se"], g["se0"]):
        got_se, got_se0 = fce_se(t, agreement_weights(3, w))
        assert got_se == approx(se)
        assert got_se0 == approx(se0)
    for level, alpha in zip(("nominal", "ordinal", "interval"), g["alpha"]):
        assert _alpha2(human, judge, level) == approx(alpha)


@pytest.mark.parametrize("name", list(VECTORS))
def test_vector_report(name):
    g = VECTORS[name]
    r = agreement_report(*g["data"], n_resamples=2000)
    assert r.observed_agreement == approx(g["po"])
    assert r.expected_agreement == approx(g["pe"])
    assert r.kappa == approx(g["k"])
    assert r.kappa_linear == approx(g["kl"])
    assert r.se == approx(g["se"][0]) and r.se_null == approx(g["se0"][0])
    assert r.wald_ci == (approx(g["wald"][0]), approx(g["wald"][1]))
    assert r.kappa_max == approx(g["kmax"])
    assert r.ac1 == approx(g["ac1"])
    assert r.scott_pi == approx(g["pi"])
    assert r.pabak == approx(g["pabak"])
    assert r.n_used == len(g["data"][0]) and r.n_dropped == 0


def test_v1_report_details():
    r = agreement_report(*V1, n_resamples=2000)
    assert r.confusion.values.tolist() == [[8, 1, 1], [1, 5, 1], [0, 1, 2]]
    assert list(r.confusion.index) == list(LAB) == list(r.confusion.columns)
    assert r.human_marginals.tolist() == [10, 7, 3]
    assert r.judge_marginals.tolist() == [9, 7, 4]
    assert r.per_class.loc["retained", "precision"] == approx(8 / 9)
    assert r.per_class.loc["contradicted", "recall"] == approx(2 / 3)
    assert r.per_class.loc["lost", "f1"] == approx(2 * 5 / 14)
    assert r.interpretation == "moderate"
    d = r.to_dict()
    assert d["kappa"] == approx(0.598393574297) and d["n_used"] == 20
    assert d["confusion"] == [[8, 1, 1], [1, 5, 1], [0, 1, 2]]


# -- edge cases E1–E8, n = 1 ---------------------------------------------------------------------

def test_e1_perfect():
    h = j = s("RLCRLC")
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(h, j, weights=w) == 1.0
    assert gwet_ac1(h, j) == 1.0
    assert _alpha2(h, j, "nominal") == approx(1.0)
    assert _alpha2(h, j, "ordinal") == approx(1.0)
    se, se0 = fce_se(_table(h, j), np.eye(3))
    assert se == approx(0.0) and se0 == approx(0.288675134595)
    r = agreement_report(h, j, n_resamples=500)
    assert r.ci == (1.0, 1.0)


def test_e2_one_class_only():
    h = j = s("RRRRR")
    for w in (None, "linear", "quadratic"):
        with pytest.warns(UndefinedMetricWarning):
            assert math.isnan(cohen_kappa(h, j, weights=w))
    with pytest.warns(UndefinedMetricWarning):
        assert cohen_kappa(h, j, replace_undefined_by=0.0) == 0.0
    assert gwet_ac1(h, j) == 1.0
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(_alpha2(h, j, "nominal"))
    with pytest.warns(UndefinedMetricWarning):
        r = agreement_report(h, j, n_resamples=200)
    assert math.isnan(r.kappa) and r.interpretation == "undefined"
    assert r.observed_agreement == 1.0 and r.expected_agreement == 1.0 and r.pabak == 1.0
    assert r.n_undefined_resamples == 200 and all(math.isnan(x) for x in r.ci)


def test_e3_one_rater_constant():
    h, j = s("RRRRRR"), s("RRRLLC")
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(h, j, weights=w) == approx(0.0)
    assert gwet_ac1(h, j) == approx(0.373913043478)
    assert _alpha2(h, j, "nominal") == approx(-0.137931034483)
    assert _alpha2(h, j, "ordinal") == approx(-0.216666666667)
    r = agreement_report(h, j, n_resamples=200)
    assert r.observed_agreement == approx(0.5) and r.expected_agreement == approx(0.5)
    assert r.se == pytest.approx(0.0, abs=1e-6)


def test_e4_three_cycle():
    h, j = s("RLCRLC"), s("LCRLCR")
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(h, j, weights=w) == approx(-0.5)
    assert gwet_ac1(h, j) == approx(-0.5)
    assert _alpha2(h, j, "nominal") == approx(-0.375)
    assert _alpha2(h, j, "ordinal") == approx(-0.375)
    t = _table(h, j)
    assert fce_se(t, agreement_weights(3, "linear"))[0] == approx(0.108253175473)
    assert fce_se(t, agreement_weights(3, "quadratic"))[0] == approx(0.216506350946)


def test_e5_two_label_swap():
    h, j = s("RLRL"), s("LRLR")
    for w in (None, "linear", "quadratic"):
        assert cohen_kappa(h, j, weights=w) == approx(-1.0)
    assert gwet_ac1(h, j) == approx(-0.333333333333)  # q = 3, C unused
    assert gwet_ac1(h, j, labels=LAB[:2]) == approx(-1.0)  # q = 2
    assert _alpha2(h, j, "nominal") == approx(-0.75)
    assert _alpha2(h, j, "ordinal") == approx(-0.75)
    assert fce_se(_table(h, j), np.eye(3))[1] == approx(0.5)


def test_e6_judge_never_uses_contradicted():
    h, j = s("RRRLLCCR"), s("RRLLLLRR")
    assert cohen_kappa(h, j) == approx(0.4)
    assert cohen_kappa(h, j, weights="linear") == approx(0.333333333333)
    assert cohen_kappa(h, j, weights="quadratic") == approx(0.25)
    assert gwet_ac1(h, j) == approx(0.466666666667)
    assert _alpha2(h, j, "nominal") == approx(0.407894736842)
    assert _alpha2(h, j, "ordinal") == approx(0.377232142857)
    r = agreement_report(h, j, n_resamples=200)
    assert r.se == approx(0.214941852602)
    assert r.kappa_max == approx(0.6)
    assert r.confusion.shape == (3, 3)


def test_e7_out_of_vocabulary_label_raises_naming_it():
    h, j = s("RRLLCC"), s("R?LLCR")
    with pytest.raises(ValueError, match="'unsure'"):
        cohen_kappa(h, j)
    with pytest.raises(ValueError, match="'unsure'"):
        agreement_report(h, j)
    assert cohen_kappa(h, j, labels=(*LAB, "unsure")) == approx(0.538461538462)


def test_e8_missing_dropped_pairwise_and_counted():
    h, j = s("RR-LLCCR"), s("RLRLL-CR")
    assert cohen_kappa(h, j) == approx(0.739130434783)
    assert cohen_kappa([np.nan if x is None else x for x in h], j) == approx(0.739130434783)
    assert _alpha2(h, j, "nominal") == approx(0.755555555556)
    r = agreement_report(h, j, n_resamples=200)
    assert r.kappa == approx(0.739130434783)
    assert (r.n_total, r.n_used, r.n_dropped) == (8, 6, 2)
    assert (r.n_missing_human, r.n_missing_judge) == (1, 1)


def test_single_item():
    with pytest.warns(UndefinedMetricWarning):
        assert math.isnan(cohen_kappa(["lost"], ["lost"]))
    assert cohen_kappa(["lost"], ["retained"]) == 0.0


# -- E10: sklearn option checks on V1 ------------------------------------------------------------

def test_e10_sample_weight():
    h, j = V1
    assert cohen_kappa(h, j, sample_weight=[2] * 20) == approx(0.598393574297)
    w = [3] + [1] * 19
    assert cohen_kappa(h, j, sample_weight=w) == approx(0.621993127148)
    assert cohen_kappa(h + [h[0]] * 2, j + [j[0]] * 2) == approx(0.621993127148)


def test_e10_labels_subset_raises_instead_of_dropping():
    # scikit-learn silently drops the items involving C (0.722222222222); we refuse.
    h, j = V1
    with pytest.raises(ValueError, match="'contradicted'"):
        cohen_kappa(h, j, labels=["retained", "lost"])
    with pytest.raises(ValueError, match="'retained'"):
        cohen_kappa(h, j, labels=["contradicted"])
    with pytest.raises(ValueError, match="not one of `labels`"):
        cohen_kappa(h, j, labels=["foo"])
    keep = [i for i in range(20) if "contradicted" not in (h[i], j[i])]
    assert cohen_kappa([h[i] for i in keep], [j[i] for i in keep],
                       labels=["retained", "lost"]) == approx(0.722222222222)


def test_e10_label_order_for_weighted_kappa():
    h, j = V1
    assert cohen_kappa(h, j, weights="linear", labels=LAB[::-1]) == approx(0.620253164557)
    wrong = ("retained", "contradicted", "lost")
    assert cohen_kappa(h, j, weights="linear", labels=wrong) == approx(0.633507853403)


# -- paradox tables ------------------------------------------------------------------------------

PARADOX = [
    ([[40, 9], [6, 45]], 0.85, 0.5008, 0.699519230769, 0.700748129676, 0.7, 0.05, 0.03,
     0.939903846154),
    ([[80, 10], [5, 5]], 0.85, 0.78, 0.318181818182, 0.808, 0.7, 0.75, 0.05, 0.772727272727),
    ([[45, 15], [25, 15]], 0.60, 0.54, 0.130434782609, 0.266055045872, 0.2, 0.30, 0.10,
     0.782608695652),
    ([[25, 35], [5, 35]], 0.60, 0.46, 0.259259259259, 0.207920792079, 0.2, 0.10, 0.30,
     0.444444444444),
    ([[90, 5], [5, 0]], 0.90, 0.905, -0.052631578947, 0.889502762431, 0.8, 0.90, 0.00, 1.0),
]


@pytest.mark.parametrize("row", PARADOX, ids=[str(p[0]) for p in PARADOX])
def test_paradox_tables(row):
    m, po, pe, k, ac1, pabak, pi, bi, kmax = row
    lab2 = LAB[:2]
    h, j = expand(m, lab2)
    r = agreement_report(h, j, labels=lab2, n_resamples=200)
    assert r.observed_agreement == approx(po)
    assert r.expected_agreement == approx(pe)
    assert r.kappa == approx(k)
    assert cohen_kappa(h, j, labels=lab2) == approx(k)
    assert r.ac1 == approx(ac1)
    assert r.pabak == approx(pabak)
    assert r.prevalence_index == approx(pi)
    assert r.bias_index == approx(bi)
    assert r.kappa_max == approx(kmax)


# -- M1: three humans with missing labels ----------------------------------------------------

def test_m1_many_rater_coefficients():
    assert krippendorff_alpha(M1) == approx(0.684824902724)
    assert krippendorff_alpha(M1, level="ordinal") == approx(0.819027611044)
    assert krippendorff_alpha(M1, level="interval") == approx(0.826552462527)
    assert fleiss_kappa(M1) == approx(0.695945945946)
    complete = [i for i in range(10) if all(v[i] is not None for v in M1.values())]
    assert fleiss_kappa({k: [v[i] for i in complete] for k, v in M1.items()}) == \
        approx(0.610810810811)
    assert krippendorff_alpha({**M1, "judge": M1_JUDGE}) == approx(0.611344537815)


def test_m1_pairwise_and_ceiling():
    assert cohen_kappa(M1["a1"], M1["a2"]) == approx(0.809523809524)
    assert cohen_kappa(M1["a1"], M1["a3"]) == approx(0.653846153846)
    assert cohen_kappa(M1["a2"], M1["a3"]) == approx(0.5)
    assert mean_pairwise_kappa(M1) == approx(0.654456654457)
    assert majority_labels(M1) == [LAB[c] for c in [0, 0, 1, 2, 0, 1, 2, 0, 1, 2]]


def test_m1_judge_vs_humans():
    r = judge_vs_humans(M1_JUDGE, M1, n_resamples=1000)
    assert r.judge_kappa == approx(0.577724584624)
    assert r.human_kappa == approx(0.654456654457)
    assert r.kappa_vs_majority == approx(0.696969696970)
    loo = r.leave_one_out.set_index("annotator")
    expected = {"a1": (0.731684981685, 0.451492537313), "a2": (0.654761904762, 0.616586876936),
                "a3": (0.576923076923, 0.665094339623)}
    for name, (human, judge) in expected.items():
        assert loo.loc[name, "human_vs_others"] == approx(human)
        assert loo.loc[name, "judge_vs_same_others"] == approx(judge)
    assert r.per_annotator.set_index("annotator")["n"].to_dict() == {"a1": 9, "a2": 9, "a3": 10}


# -- P1: two judges --------------------------------------------------------------------------

def test_p1_kappas_and_accuracy():
    assert cohen_kappa(P1_HUMAN, P1_A) == approx(0.878542510121)
    assert cohen_kappa(P1_HUMAN, P1_B) == approx(0.56)
    assert cohen_kappa(P1_HUMAN, P1_A, weights="quadratic") == approx(0.936440677966)
    assert cohen_kappa(P1_HUMAN, P1_B, weights="quadratic") == approx(0.648760330579)
    assert agreement_report(P1_HUMAN, P1_A, n_resamples=100).accuracy == approx(0.925)
    assert agreement_report(P1_HUMAN, P1_B, n_resamples=100).accuracy == approx(0.725)


def test_p1_compare_judges():
    c = compare_judges(P1_HUMAN, P1_A, P1_B, names=["A", "B"], n_resamples=10_000)
    row = c.pairs.iloc[0]
    assert row["delta"] == approx(0.318542510121) == c.delta
    assert [[row["both_correct"], row["a_only_correct"]],
            [row["b_only_correct"], row["both_wrong"]]] == [[29, 8], [0, 3]]
    assert row["mcnemar_p"] == approx(0.0078125) and c.mcnemar_p == approx(0.0078125)
    assert row["mcnemar_midp"] == approx(0.00390625)
    m = c.marginals.set_index("judge")
    assert m.loc["A", "stuart_maxwell_chi2"] == approx(1.0)
    assert m.loc["A", "stuart_maxwell_df"] == 2
    assert m.loc["A", "stuart_maxwell_p"] == approx(0.606530659713)
    assert m.loc["B", "stuart_maxwell_chi2"] == approx(0.157894736842)
    assert m.loc["B", "stuart_maxwell_p"] == approx(0.924088559405)
    assert m.loc["A", "bowker_chi2"] == approx(1.0) and m.loc["A", "bowker_df"] == 3
    assert m.loc["A", "bowker_p"] == approx(0.801251956901)
    # Seed-dependent, so only roughly: the golden file reports CI ≈ (0.133, 0.527).
    lo, hi = c.ci
    assert 0.10 < lo < 0.17 and 0.49 < hi < 0.56
    assert c.p_value < 0.01


def test_mcnemar_and_tests_directly():
    assert mcnemar_exact(8, 0) == (approx(0.0078125), approx(0.00390625))
    assert mcnemar_exact(0, 0) == (1.0, 1.0)
    chi2, df, p = stuart_maxwell([[19, 1, 0], [1, 11, 0], [0, 1, 7]])
    assert (chi2, df, p) == (approx(1.0), 2, approx(0.606530659713))
    assert bowker_test([[19, 1, 0], [1, 11, 0], [0, 1, 7]])[2] == approx(0.801251956901)


def test_fleiss_equals_scott_pi_for_two_raters():
    h, j = V1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fleiss_kappa({"h": h, "j": j}) == approx(0.597585513078)


# -- irrCAC raw coefficients (Gwet 2014) ---------------------------------------------------------

def _raw(ratings, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these golden cases is undefined
        return multi_rater_agreement(ratings, **kw)


def test_m1_irrcac_raw_all_ten_items():
    r = _raw(M1)
    assert (r.n_items, r.n_raters) == (10, 3)
    assert r.fleiss_kappa.value == approx(0.695945945946)
    assert r.gwet_ac.value == approx(0.701986754967) and r.gwet_ac.name == "AC1"
    assert r.krippendorff_alpha.value == approx(0.684824902724)
    assert r.conger_kappa.value == approx(0.698324022346)
    assert r.brennan_prediger.value == approx(0.700000000000)
    assert r.fleiss_kappa.se == approx(0.155220104819)
    assert r.gwet_ac.se == approx(0.152049585784)
    assert r.krippendorff_alpha.se == approx(0.162954523387)
    # fleiss_kappa() is the same irrCAC generalisation (not statsmodels' listwise 0.6108)
    assert fleiss_kappa(M1) == r.fleiss_kappa.value


def test_m1_irrcac_raw_ac2_quadratic():
    r = _raw(M1, weights="quadratic")
    assert r.gwet_ac.value == approx(0.853896103896) and r.gwet_ac.name == "AC2"
    # Krippendorff's α with quadratic weights is the interval α of the krippendorff package
    assert r.krippendorff_alpha.value == approx(0.826552462527)


def test_m1_complete_items_and_wrong_missing_codings():
    complete = [i for i in range(10) if all(v[i] is not None for v in M1.values())]
    sub = {k: [v[i] for i in complete] for k, v in M1.items()}
    r = _raw(sub)
    assert r.fleiss_kappa.value == approx(0.610810810811)  # = statsmodels on complete data
    assert r.brennan_prediger.value == approx(0.625)  # Randolph's free-marginal κ
    # Coding missing as label 0 ("retained") is wrong, and gives 0.488054607509.
    as_zero = {k: [LAB[0] if x is None else x for x in v] for k, v in M1.items()}
    assert fleiss_kappa(as_zero) == approx(0.488054607509)


def test_e8_irrcac_raw_missing_aware():
    h, j = s("RR-LLCCR"), s("RLRLL-CR")
    r = _raw({"human": h, "judge": j})
    assert r.n_items == 8 and r.krippendorff_alpha.n_items == 6
    assert r.gwet_ac.value == approx(0.753371868979)
    assert r.conger_kappa.value == approx(0.744791666667)
    assert r.krippendorff_alpha.value == approx(0.755555555556)
    # the pairwise-deleted two-rater AC1 is a different number: items rated once are dropped
    assert gwet_ac1(h, j) != approx(0.753371868979)


def test_e8_missing_as_category_is_wrong():
    h, j = s("RR-LLCCR"), s("RLRLL-CR")
    nan = "nan"
    h2 = [nan if x is None else x for x in h]
    j2 = [nan if x is None else x for x in j]
    assert cohen_kappa(h2, j2, labels=(*LAB, nan)) == approx(0.478260869565)


def test_v1_irrcac_raw_two_raters():
    r = _raw({"human": V1[0], "judge": V1[1]})
    assert r.gwet_ac.value == approx(0.637352674524)
    assert r.gwet_ac.se == approx(0.147596300817)  # irrCAC raw AC1 SE
    assert r.conger_kappa.value == approx(0.598393574297)  # Conger = Cohen for two raters
    assert r.conger_kappa.se == approx(0.154078765567)
    assert r.fleiss_kappa.value == approx(0.597585513078)  # = Scott's π
    assert r.brennan_prediger.value == approx(0.625)  # = PABAK
    assert r.krippendorff_alpha.value == approx(0.607645875252)
    assert _raw({"human": V1[0], "judge": V1[1]}, weights="quadratic").gwet_ac.value == \
        approx(0.735973597360)


def test_v2_irrcac_raw_two_raters():
    r = _raw({"human": V2[0], "judge": V2[1]})
    assert r.gwet_ac.value == approx(0.752809583926)
    assert r.conger_kappa.value == approx(0.700470688917)
    assert r.fleiss_kappa.value == approx(0.700387356346)
    assert r.brennan_prediger.value == approx(0.7375)
    assert r.krippendorff_alpha.value == approx(0.701136387956)
    assert _raw({"human": V2[0], "judge": V2[1]}, weights="quadratic").gwet_ac.value == \
        approx(0.840711688156)


def test_edge_cases_irrcac_raw():
    r = _raw({"h": s("RRRRRR"), "j": s("RRRLLC")})  # E3
    assert r.gwet_ac.value == approx(0.373913043478)
    assert r.fleiss_kappa.value == approx(-0.241379310345)
    assert r.krippendorff_alpha.value == approx(-0.137931034483)
    assert _raw({"h": s("RLCRLC"), "j": s("LCRLCR")}).gwet_ac.value == approx(-0.5)  # E4
    e5 = {"h": s("RLRL"), "j": s("LRLR")}
    assert _raw(e5, labels=LAB[:2]).gwet_ac.value == approx(-1.0)  # q = 2, as irrCAC raw
    assert _raw(e5).gwet_ac.value == approx(-0.333333333333)  # q = 3
    e1 = _raw({"h": s("RLCRLC"), "j": s("RLCRLC")})
    assert all(c.value == approx(1.0) for c in e1.coefficients)


def test_e2_one_class_irrcac_raw():
    # irrCAC: gwet = 1, bp = 1, conger = NaN, fleiss / krippendorff raise ZeroDivisionError.
    # Here the undefined ones are NaN with an UndefinedMetricWarning naming them.
    with pytest.warns(UndefinedMetricWarning, match="Fleiss' kappa, Conger's kappa, "
                                                    "Krippendorff's alpha undefined"):
        r = multi_rater_agreement({"h": s("RRRRR"), "j": s("RRRRR")})
    assert r.gwet_ac.value == 1.0 and r.brennan_prediger.value == 1.0
    assert all(math.isnan(c.value) for c in
               (r.fleiss_kappa, r.conger_kappa, r.krippendorff_alpha))


# -- other standard errors, the t-based CI of irrCAC's table.cohen, McNemar χ² -----------------

@pytest.mark.parametrize("name, cohen1960, t_ci", [
    ("V1", 0.155541499848, (0.284068655111, 0.912718493483)),
    ("V2", 0.045986703595, (0.611737865254, 0.789203512581)),
])
def test_cohen1960_se_and_irrcac_table_ci(name, cohen1960, t_ci):
    from scipy import stats

    human, judge = VECTORS[name]["data"]
    t = _table(human, judge)
    assert cohen1960_se(t) == approx(cohen1960)
    # irrCAC's table.cohen CI is κ ± t(n − 1) · the Fleiss–Cohen–Everitt SE
    r = agreement_report(human, judge, n_resamples=100)
    half = stats.t.ppf(0.975, len(human) - 1) * r.se
    assert (r.kappa - half, r.kappa + half) == (approx(t_ci[0]), approx(t_ci[1]))


def test_v1_ac1_table_se():
    t = _table(*V1)
    assert ac_table_se(t, np.eye(3)) == approx(0.143859079011)
    assert agreement_report(*V1, n_resamples=100).ac1_se == approx(0.143859079011)


def test_p1_mcnemar_chi2():
    assert mcnemar_chi2(8, 0) == (approx(6.125), approx(0.013328328781))
    assert mcnemar_chi2(0, 8, correction=False) == (approx(8.0), approx(0.004677734981))
    assert mcnemar_chi2(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="`b`"):
        mcnemar_chi2(-1, 3)
