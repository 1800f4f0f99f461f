"""Invariants of the agreement statistics (hypothesis), and equality with scikit-learn."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit.agreement import (
    agreement_report,
    cohen_kappa,
    compare_judges,
    fleiss_kappa,
    labels_needed,
    mean_pairwise_kappa,
)
from maev_kit.agreement._kappa import fce_se

from ._golden import LAB

label = st.sampled_from(LAB)
maybe_label = st.one_of(st.none(), label)


@st.composite
def paired(draw, min_size=1, max_size=60, missing=False):
    n = draw(st.integers(min_size, max_size))
    elem = maybe_label if missing else label
    a = draw(st.lists(elem, min_size=n, max_size=n))
    b = draw(st.lists(elem, min_size=n, max_size=n))
    return a, b


def quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


def same(x, y, tol=1e-12):
    return (math.isnan(x) and math.isnan(y)) or abs(x - y) <= tol


FAST = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(paired(), st.sampled_from([None, "linear", "quadratic"]))
def test_equals_sklearn_with_explicit_labels(ab, weights):
    from sklearn.metrics import cohen_kappa_score

    a, b = ab
    ours = quiet(cohen_kappa, a, b, weights=weights)
    theirs = quiet(cohen_kappa_score, a, b, labels=list(LAB), weights=weights)
    assert same(ours, theirs)


@FAST
@given(paired(missing=True), st.sampled_from([None, "linear", "quadratic"]))
def test_missing_dropped_pairwise_equals_listwise(ab, weights):
    a, b = ab
    keep = [i for i in range(len(a)) if a[i] is not None and b[i] is not None]
    full = quiet(cohen_kappa, a, b, weights=weights)
    listwise = quiet(cohen_kappa, [a[i] for i in keep], [b[i] for i in keep], weights=weights)
    assert same(full, listwise)


@FAST
@given(paired(), st.sampled_from([None, "linear", "quadratic"]))
def test_bounds_and_symmetry(ab, weights):
    a, b = ab
    k = quiet(cohen_kappa, a, b, weights=weights)
    assert math.isnan(k) or -1 - 1e-12 <= k <= 1 + 1e-12
    assert same(k, quiet(cohen_kappa, b, a, weights=weights))


@FAST
@given(paired(), st.randoms(use_true_random=False))
def test_invariant_to_item_order(ab, rnd):
    a, b = ab
    idx = list(range(len(a)))
    rnd.shuffle(idx)
    k1 = quiet(cohen_kappa, a, b)
    k2 = quiet(cohen_kappa, [a[i] for i in idx], [b[i] for i in idx])
    assert same(k1, k2)


@settings(max_examples=25, deadline=None)
@given(paired(min_size=2, max_size=60, missing=True), st.integers(0, 2**32 - 1))
def test_report_ci_contains_estimate_and_is_bounded(ab, seed):
    a, b = ab
    r = quiet(agreement_report, a, b, n_resamples=400, seed=seed)
    if math.isnan(r.kappa):
        return
    lo, hi = r.ci
    assert -1 - 1e-12 <= lo <= r.kappa + 1e-12 <= hi + 2e-12 <= 1 + 3e-12
    assert r.n_used + r.n_dropped == len(a)
    assert 0 <= r.n_undefined_resamples <= 400


@settings(max_examples=30, deadline=None)
@given(paired(min_size=2, max_size=40))
def test_report_matches_cohen_kappa_and_is_seed_reproducible(ab):
    a, b = ab
    r1 = quiet(agreement_report, a, b, n_resamples=300, seed=7)
    r2 = quiet(agreement_report, a, b, n_resamples=300, seed=7)
    assert same(r1.kappa, quiet(cohen_kappa, a, b))
    assert same(r1.kappa_linear, quiet(cohen_kappa, a, b, weights="linear"))
    assert (np.isnan(r1.ci).all() and np.isnan(r2.ci).all()) or r1.ci == r2.ci


@FAST
@given(paired(min_size=2, max_size=40))
def test_two_rater_pairwise_mean_is_cohen(ab):
    a, b = ab
    assert same(quiet(mean_pairwise_kappa, {"a": a, "b": b}), quiet(cohen_kappa, a, b))


@FAST
@given(st.integers(2, 8).flatmap(
    lambda r: st.lists(st.lists(maybe_label, min_size=r, max_size=r), min_size=1, max_size=30)))
def test_fleiss_bounded_and_rater_order_invariant(items):
    raters = [list(col) for col in zip(*items)]
    k1 = quiet(fleiss_kappa, raters)
    k2 = quiet(fleiss_kappa, raters[::-1])
    assert same(k1, k2, 1e-12)
    assert math.isnan(k1) or k1 <= 1 + 1e-12


@settings(max_examples=20, deadline=None)
@given(paired(min_size=5, max_size=40))
def test_compare_judge_with_itself_is_a_tie(ab):
    h, j = ab
    c = quiet(compare_judges, h, j, list(j), n_resamples=200)
    row = c.pairs.iloc[0]
    assert math.isnan(c.kappas.iloc[0]) or same(row["delta"], 0.0)
    assert row["mcnemar_p"] == 1.0
    assert math.isnan(row["p_value"]) or row["p_value"] == 1.0


@pytest.mark.parametrize("kappa", [0.3, 0.6, 0.85])
@pytest.mark.parametrize("n", [100, 400])
def test_labels_needed_inverts_the_fce_halfwidth(kappa, n):
    p = np.array([0.55, 0.3, 0.15])
    table = n * (np.outer(p, p) * (1 - kappa) + kappa * np.diag(p))
    halfwidth = 1.959963984540054 * fce_se(table, np.eye(3))[0]
    need = labels_needed(target_halfwidth=halfwidth, kappa=kappa, marginals=p)
    assert need in (n, n + 1)  # ceil of a float that should equal n
    assert labels_needed(target_halfwidth=halfwidth / 2, kappa=kappa, marginals=p * 10) in \
        range(4 * n - 1, 4 * n + 2)
