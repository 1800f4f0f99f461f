"""``multi_rater_agreement``: invariants, cross-checks with the other functions, argument checks."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit.agreement import (
    AgreementCoefficient,
    MultiRaterAgreement,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    krippendorff_alpha,
    multi_rater_agreement,
)
from maev_kit.errors import UndefinedMetricWarning

from ._golden import LAB, M1, V1

label = st.sampled_from(LAB)
maybe_label = st.one_of(st.none(), label)
weights_st = st.sampled_from([None, "linear", "quadratic"])
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def raters(draw, missing=True, min_raters=2, max_raters=6, max_items=30):
    r = draw(st.integers(min_raters, max_raters))
    n = draw(st.integers(1, max_items))
    elem = maybe_label if missing else label
    return [draw(st.lists(elem, min_size=n, max_size=n)) for _ in range(r)]


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kw)


def same(x, y, tol=1e-10):
    return (math.isnan(x) and math.isnan(y)) or abs(x - y) <= tol


def values(r):
    return [(c.value, c.se) for c in r.coefficients]


@FAST
@given(raters())
def test_fleiss_value_is_fleiss_kappa(data):
    r = quiet(multi_rater_agreement, data)
    assert same(r.fleiss_kappa.value, quiet(fleiss_kappa, data))


@FAST
@given(raters(), weights_st)
def test_alpha_equals_the_krippendorff_package(data, weights):
    r = quiet(multi_rater_agreement, data, weights=weights)
    level = {None: "nominal", "quadratic": "interval"}.get(weights)
    if level is None:  # linear weights have no counterpart in the package
        return
    assert same(r.krippendorff_alpha.value, quiet(krippendorff_alpha, data, level=level), 1e-9)


@FAST
@given(raters(missing=False, max_raters=2), weights_st)
def test_two_complete_raters_reduce_to_the_two_rater_statistics(data, weights):
    a, b = data
    r = quiet(multi_rater_agreement, data, weights=weights)
    assert same(r.conger_kappa.value, quiet(cohen_kappa, a, b, weights=weights))
    assert same(r.gwet_ac.value, quiet(gwet_ac1, a, b, weights=weights))
    if weights is None:
        po = sum(x == y for x, y in zip(a, b)) / len(a)
        assert same(r.brennan_prediger.value, (3 * po - 1) / 2)  # PABAK


@FAST
@given(raters(), weights_st, st.randoms(use_true_random=False))
def test_invariant_to_item_and_rater_order(data, weights, rnd):
    idx = list(range(len(data[0])))
    rnd.shuffle(idx)
    shuffled = [[row[i] for i in idx] for row in data[::-1]]
    r1 = quiet(multi_rater_agreement, data, weights=weights)
    r2 = quiet(multi_rater_agreement, shuffled, weights=weights)
    for (v1, s1), (v2, s2) in zip(values(r1), values(r2)):
        assert same(v1, v2) and same(s1, s2)


@FAST
@given(raters(), weights_st)
def test_bounded_se_nonnegative_ci_contains_value(data, weights):
    r = quiet(multi_rater_agreement, data, weights=weights)
    for c in r.coefficients:
        assert math.isnan(c.value) or c.value <= 1 + 1e-12
        assert math.isnan(c.se) or c.se >= 0
        lo, hi = c.ci()
        if not math.isnan(lo):
            assert lo <= c.value + 1e-12 and hi <= 1.0
            assert hi >= min(c.value, 1.0) - 1e-12


@FAST
@given(raters())
def test_unlabeled_items_and_silent_raters_change_nothing(data):
    n = len(data[0])
    padded = [row + [None] for row in data] + [[None] * (n + 1)]
    r1 = quiet(multi_rater_agreement, data)
    r2 = quiet(multi_rater_agreement, padded)
    assert r1.n_items == r2.n_items
    for (v1, s1), (v2, s2) in zip(values(r1), values(r2)):
        assert same(v1, v2) and same(s1, s2)


def test_inputs_as_mapping_dataframe_and_lists_agree():
    r1 = multi_rater_agreement(M1)
    r2 = multi_rater_agreement(pd.DataFrame(M1))
    r3 = multi_rater_agreement(list(M1.values()))
    assert values(r1) == values(r2) == values(r3)


def test_result_objects():
    r = multi_rater_agreement(M1, weights="linear")
    assert isinstance(r, MultiRaterAgreement) and r.weights == "linear"
    assert r.labels == LAB and r.gwet_ac.name == "AC2"
    d = json.loads(json.dumps(r.to_dict()))
    assert d["fleiss_kappa"]["value"] == pytest.approx(r.fleiss_kappa.value)
    frame = r.to_frame()
    assert list(frame.index) == ["Fleiss' kappa", "AC2", "Conger's kappa", "Brennan-Prediger",
                                 "Krippendorff's alpha"]
    assert (frame["ci_low"] < frame["value"]).all() and (frame["ci_high"] <= 1).all()
    assert (frame["n_items"] == [10, 10, 10, 10, 10]).all()


def test_ci_is_t_based_and_capped_at_one():
    from scipy import stats

    c = AgreementCoefficient("AC1", 0.9, 0.1, 0.95, 0.5, 10)
    lo, hi = c.ci(0.9)
    assert lo == pytest.approx(0.9 - stats.t.ppf(0.95, 9) * 0.1) and hi == 1.0
    assert all(math.isnan(x) for x in AgreementCoefficient("AC1", 0.9, 0.1, 1, 0.5, 1).ci())
    with pytest.raises(ValueError, match="`confidence`"):
        c.ci(95)


def test_nan_se_for_a_single_item_and_warning_without_pairs():
    r = multi_rater_agreement({"a": ["lost"], "b": ["retained"]})
    assert r.n_items == 1 and math.isnan(r.gwet_ac.se)
    with pytest.warns(UndefinedMetricWarning, match="no item has two or more labels"):
        r = multi_rater_agreement({"a": ["lost", None], "b": [None, "lost"]})
    assert all(math.isnan(c.value) for c in r.coefficients)


@pytest.mark.parametrize("kw, match", [
    (dict(weights="cubic"), "`weights`"),
    (dict(labels=("retained",)), "at least two categories"),
    (dict(labels="retained"), "`labels`"),
])
def test_bad_options_name_the_argument(kw, match):
    with pytest.raises(ValueError, match=match):
        multi_rater_agreement(M1, **kw)


def test_bad_ratings_raise():
    with pytest.raises(ValueError, match="at least two raters"):
        multi_rater_agreement({"a1": M1["a1"]})
    with pytest.raises(ValueError, match="'unsure'"):
        multi_rater_agreement({"a": ["lost", "unsure"], "b": ["lost", "lost"]})
    with pytest.raises(ValueError, match="one label"):
        multi_rater_agreement({"a": ["lost"], "b": ["lost", "lost"]})


def test_fleiss_se_shrinks_with_more_items():
    small = multi_rater_agreement({"h": V1[0], "j": V1[1]})
    big = multi_rater_agreement({"h": V1[0] * 4, "j": V1[1] * 4})
    assert big.fleiss_kappa.value == pytest.approx(small.fleiss_kappa.value)
    assert big.fleiss_kappa.se < small.fleiss_kappa.se
    assert np.isfinite([c.se for c in big.coefficients]).all()
