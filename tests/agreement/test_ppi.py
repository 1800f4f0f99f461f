"""PPI++ mean estimates (``maev_kit.agreement._ppi``) on real SNLI labels and real offline judges.

Data: ``labeled_sets/snli_calibration`` (800 SNLI pairs recast as retention items, five real
crowd annotators each; CC BY-SA 4.0, see ``tests/data/README.md``). The human value is
``Y = 1`` when annotator ``slot1`` (the worker who wrote the hypothesis) said ``retained``; the
judge values are the heuristic judge's verdict (``Ŷ = 1`` for ``retained``) on all 800 items,
and the learned judge's probability of ``retained`` (fit on the dev split, scored on the 400
test items). ``ppi_py`` (``pip install ppi-python``, the reference implementation) is imported
only by the tests that compare with it.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest

from maev_kit.agreement import (
    MIN_LABELS_FOR_INTERVAL,
    Estimate,
    LabelPlan,
    human_mean,
    judge_mean,
    plan_labels,
    ppi_mean,
)
from maev_kit.errors import InputError

# -- real data ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Snli:
    y: np.ndarray  # slot1 said retained, all 800 items
    heuristic: np.ndarray  # heuristic judge said retained, all 800 items
    y_test: np.ndarray  # slot1 said retained, the 400 test-split items
    proba_test: np.ndarray  # learned judge's p(retained) on the test-split items


@pytest.fixture(scope="module")
def snli() -> Snli:
    from maev_kit.datasets import load_labeled_set
    from maev_kit.judges import HeuristicJudge, LearnedJudge
    from maev_kit.retention import LABELS
    from maev_kit.runner import run_judge

    ls = load_labeled_set("snli_calibration")
    items = ls.items
    label = {(r.item_id, r.annotator): r.label for r in ls.label_records}
    run = run_judge(HeuristicJudge(), items, None, progress=False, cache=False)
    verdict = {v.item_id: v.label for v in run.verdicts}
    y = np.array([label[it.item_id, "slot1"] == "retained" for it in items], dtype=float)
    heuristic = np.array([verdict[it.item_id] == "retained" for it in items], dtype=float)
    dev, test = ls.items_in("dev"), ls.items_in("test")
    judge = LearnedJudge().fit(dev, [label[it.item_id, "gold"] for it in dev])
    proba = judge.predict_proba(test)[:, LABELS.index("retained")]
    y_test = np.array([label[it.item_id, "slot1"] == "retained" for it in test], dtype=float)
    assert len(items) == 800 and len(test) == 400
    return Snli(y, heuristic, y_test, proba)


def _split(y: np.ndarray, f: np.ndarray, n: int, seed: int):
    """A simple random sample of n labeled items; the rest judged only."""
    idx = np.random.default_rng(seed).permutation(y.size)
    lab, unl = idx[:n], idx[n:]
    return y[lab], f[lab], f[unl]


def _data(snli: Snli, kind: str, n: int, seed: int):
    if kind == "binary":
        return _split(snli.y, snli.heuristic, n, seed)
    return _split(snli.y_test, snli.proba_test, n, seed)


@pytest.fixture(scope="module")
def ppi_py():
    with warnings.catch_warnings():  # ppi_py sets warnings.simplefilter("ignore") on import
        return pytest.importorskip(
            "ppi_py", reason="ppi-python (the reference implementation, in the `test` extra) "
                             "is not installed")


def _z(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def test_the_data_is_what_the_tests_assume(snli):
    assert set(np.unique(snli.y)) == {0.0, 1.0} and set(np.unique(snli.heuristic)) == {0.0, 1.0}
    assert 0.25 < snli.y.mean() < 0.4  # a third of SNLI pairs are entailments
    assert 0.3 < np.corrcoef(snli.y, snli.heuristic)[0, 1] < 0.7
    assert len(np.unique(snli.proba_test)) > 300  # a real score, not a label
    assert 0.4 < np.corrcoef(snli.y_test, snli.proba_test)[0, 1] < 0.9


# -- 1. the same numbers as ppi_py -------------------------------------------------------------


@pytest.mark.parametrize("kind", ["binary", "numeric"])
@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.5])
@pytest.mark.parametrize("n, seed, confidence", [(100, 0, 0.95), (60, 1, 0.9), (250, 2, 0.99)])
def test_matches_ppi_py(snli, ppi_py, kind, lam, n, seed, confidence):
    y, yhat, unl = _data(snli, kind, n, seed)
    est = ppi_mean(y, yhat, unl, confidence=confidence, lam=lam)
    point = ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=lam)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=1 - confidence, lam=lam)
    assert est.estimate == pytest.approx(float(np.squeeze(point)), abs=1e-6)
    assert est.ci_low == pytest.approx(float(np.squeeze(lo)), abs=1e-6)
    assert est.ci_high == pytest.approx(float(np.squeeze(hi)), abs=1e-6)
    assert (est.method, est.n, est.N, est.confidence) == ("ppi++", n, unl.size, confidence)
    if lam is None:
        assert 0 <= est.lam <= 1
        # the tuned λ is ppi_py's: fixing it gives ppi_py's tuned interval again
        again = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=1 - confidence, lam=est.lam)
        assert est.ci_low == pytest.approx(float(np.squeeze(again[0])), abs=1e-9)
    else:
        assert est.lam == lam


def test_tuned_lambda_is_not_trivial_on_real_data(snli):
    # the heuristic judge helps a little, the learned judge a lot (λ near 1)
    b = ppi_mean(*_data(snli, "binary", 100, 0))
    s = ppi_mean(*_data(snli, "numeric", 100, 0))
    assert 0.1 < b.lam < 0.8 and 0.6 < s.lam <= 1
    for est, kind in ((b, "binary"), (s, "numeric")):
        y, _, _ = _data(snli, kind, 100, 0)
        assert est.half_width < human_mean(y).half_width


def test_lam_zero_is_human_only_and_lam_one_is_plain_ppi(snli):
    y, yhat, unl = _data(snli, "binary", 100, 3)
    zero, human = ppi_mean(y, yhat, unl, lam=0), human_mean(y)
    assert (zero.estimate, zero.ci_low, zero.ci_high) == pytest.approx(
        (human.estimate, human.ci_low, human.ci_high), abs=1e-12)
    one = ppi_mean(y, yhat, unl, lam=1)
    assert one.estimate == pytest.approx(unl.mean() + (y - yhat).mean(), abs=1e-12)
    assert "plain PPI" in one.note


# -- 2. the baselines: the classical z interval ------------------------------------------------


@pytest.mark.parametrize("confidence", [0.95, 0.8])
def test_human_mean_is_the_classical_z_interval(snli, ppi_py, confidence):
    y, _, _ = _data(snli, "binary", 120, 4)
    est = human_mean(y, confidence=confidence)
    h = _z(confidence) * y.std() / math.sqrt(y.size)  # sd with divisor n, as ppi_py
    assert (est.estimate, est.ci_low, est.ci_high) == pytest.approx(
        (y.mean(), y.mean() - h, y.mean() + h), abs=1e-12)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=1 - confidence)
    assert (est.ci_low, est.ci_high) == pytest.approx((lo, hi), abs=1e-6)
    assert (est.method, est.n, est.N, est.lam) == ("human-only", 120, 0, None)


@pytest.mark.parametrize("kind", ["binary", "numeric"])
def test_judge_mean_is_the_classical_z_interval_on_the_judge(snli, ppi_py, kind):
    f = snli.heuristic if kind == "binary" else snli.proba_test
    est = judge_mean(f)
    h = _z(0.95) * f.std() / math.sqrt(f.size)
    assert (est.estimate, est.ci_low, est.ci_high) == pytest.approx(
        (f.mean(), f.mean() - h, f.mean() + h), abs=1e-12)
    lo, hi = ppi_py.classical_mean_ci(f, alpha=0.05)
    assert (est.ci_low, est.ci_high) == pytest.approx((lo, hi), abs=1e-6)
    assert (est.method, est.n, est.N) == ("judge-only", 0, f.size)
    assert est.note == "not corrected for judge error"


def test_judge_only_misses_what_ppi_corrects(snli):
    # the heuristic over-calls "retained" by ~8 points: its own interval excludes the
    # all-human rate; PPI++ with 100 random labels corrects it
    target = snli.y.mean()
    judge = judge_mean(snli.heuristic)
    assert not judge.ci_low <= target <= judge.ci_high
    est = ppi_mean(*_data(snli, "binary", 100, 0))
    assert est.ci_low <= target <= est.ci_high


def test_coverage_over_random_samples(snli):
    # a quick version of benchmarks/bench_ppi.py: 300 random samples of 100 labels
    hits = 0
    for seed in range(300):
        est = ppi_mean(*_data(snli, "binary", 100, seed))
        hits += est.ci_low <= snli.y.mean() <= est.ci_high
    assert hits / 300 >= 0.92


# -- 3. no interval below the minimum or without spread ----------------------------------------


def test_minimum_labels_for_an_interval(snli):
    assert MIN_LABELS_FOR_INTERVAL == 30
    n = MIN_LABELS_FOR_INTERVAL
    y, yhat, unl = _data(snli, "binary", n - 1, 5)
    for est in (ppi_mean(y, yhat, unl), human_mean(y), ppi_mean(y, yhat, unl, lam=1)):
        assert est.ci_low is None and est.ci_high is None and est.half_width is None
        assert f"{n - 1} human labels: fewer than {n}" in est.note
        assert math.isfinite(est.estimate)
    y, yhat, unl = _data(snli, "binary", n, 5)
    assert ppi_mean(y, yhat, unl).half_width > 0 and human_mean(y).half_width > 0
    few = judge_mean(snli.heuristic[: n - 1])
    assert few.ci_low is None and "judged items" in few.note
    assert "not corrected for judge error" in few.note


def test_zero_spread_gives_no_interval():
    ones, zeros = np.ones(40), np.zeros(40)
    judged = np.array([0.0, 1.0] * 100)
    cases = {
        "human, all 1": human_mean(ones),
        "ppi++, labels all 1, judge varies (tuned λ = 0)": ppi_mean(ones, judged[:40], judged),
        "ppi++, everything 0": ppi_mean(zeros, zeros, np.zeros(200), lam=1),
        "ppi++, judge exactly right, constant": ppi_mean(ones, ones, np.ones(200)),
        "judge, constant": judge_mean(np.ones(500)),
    }
    for what, est in cases.items():
        assert est.ci_low is None and est.ci_high is None, what
        assert "no spread" in est.note, what
    assert cases["human, all 1"].estimate == 1.0
    assert cases["ppi++, labels all 1, judge varies (tuned λ = 0)"].lam == 0.0


def test_never_a_zero_width_interval(snli):
    rng = np.random.default_rng(7)
    for n in (2, 5, 29, 30, 31, 40, 80):
        for _ in range(30):
            y, yhat, unl = _split(snli.y, snli.heuristic, n, int(rng.integers(1 << 30)))
            for est in (ppi_mean(y, yhat, unl), human_mean(y),
                        ppi_mean(y, yhat, unl, lam=1)):
                assert est.half_width is None or est.half_width > 0
                assert (est.ci_low is None) == (est.ci_high is None) == bool(
                    est.half_width is None)
                assert est.half_width is not None or est.note


def test_few_of_the_rarer_value_is_noted():
    y = np.array([1.0] * 3 + [0.0] * 37)
    est = human_mean(y)
    assert est.half_width > 0 and "only 3 of the 40 labels are 1" in est.note
    assert human_mean(np.array([1.0] * 10 + [0.0] * 30)).note == ""


def test_every_item_labeled_is_the_labels_alone(snli):
    y, yhat, _ = _data(snli, "binary", 100, 8)
    for lam in (None, 1.0):
        est, human = ppi_mean(y, yhat, [], lam=lam), human_mean(y)
        assert (est.estimate, est.ci_low, est.ci_high) == (human.estimate, human.ci_low,
                                                           human.ci_high)
        assert (est.lam, est.n, est.N) == (0.0, 100, 0)
        assert "every judged item is labeled" in est.note


def test_inputs_of_any_array_like(snli):
    y, yhat, unl = _data(snli, "binary", 50, 6)
    ref = ppi_mean(y, yhat, unl)
    as_bool = ppi_mean(y.astype(bool), yhat.astype(bool).tolist(), pd.Series(unl.astype(int)))
    assert as_bool == ref
    assert human_mean(list(y.astype(int))) == human_mean(y)


# -- 4. input validation -----------------------------------------------------------------------


Y = [1, 0] * 20
F = [1, 1] * 20
U = [0, 1, 1] * 20


@pytest.mark.parametrize("call, name, words", [
    (lambda: ppi_mean(Y, F[:-1], U), "y", "39"),
    (lambda: ppi_mean(Y[:-1] + [math.nan], F, U), "y", "finite"),
    (lambda: ppi_mean(Y, F, U[:-1] + [math.inf]), "yhat_unlabeled", "finite"),
    (lambda: ppi_mean(Y[:-1] + [None], F, U), "y", "without a value"),
    (lambda: ppi_mean(["retained"] * 40, F, U), "y", "map labels to numbers"),
    (lambda: ppi_mean(Y, F, "0101"), "yhat_unlabeled", "string"),
    (lambda: ppi_mean(0.5, F, U), "y", "sequence"),
    (lambda: ppi_mean(np.ones((40, 2)), F, U), "y", "1-D"),
    (lambda: ppi_mean([], [], U), "y", "empty"),
    (lambda: ppi_mean(Y, F, U, confidence=0), "confidence", "(0, 1)"),
    (lambda: ppi_mean(Y, F, U, confidence=1.0), "confidence", "(0, 1)"),
    (lambda: ppi_mean(Y, F, U, confidence=95), "confidence", "(0, 1)"),
    (lambda: ppi_mean(Y, F, U, confidence=True), "confidence", "(0, 1)"),
    (lambda: ppi_mean(Y, F, U, confidence="0.95"), "confidence", "(0, 1)"),
    (lambda: ppi_mean(Y, F, U, lam=1.5), "lam", "[0, 1]"),
    (lambda: ppi_mean(Y, F, U, lam=-0.1), "lam", "[0, 1]"),
    (lambda: ppi_mean(Y, F, U, lam=math.nan), "lam", "[0, 1]"),
    (lambda: human_mean([]), "y", "empty"),
    (lambda: human_mean(Y, confidence=-0.5), "confidence", "(0, 1)"),
    (lambda: judge_mean([1, math.nan]), "yhat_all", "finite"),
    (lambda: judge_mean(F, confidence=2), "confidence", "(0, 1)"),
    (lambda: plan_labels(Y, F, U, half_width=0), "half_width", "positive"),
    (lambda: plan_labels(Y, F, U, half_width=-0.05), "half_width", "positive"),
    (lambda: plan_labels(Y, F, U, half_width=math.nan), "half_width", "positive"),
    (lambda: plan_labels(Y, F, U, half_width=math.inf), "half_width", "positive"),
    (lambda: plan_labels([1], [1], U, half_width=0.05), "y_pilot", "at least 2"),
    (lambda: plan_labels([], [], U, half_width=0.05), "y_pilot", "at least 2"),
    (lambda: plan_labels([1] * 30, [1, 0] * 15, U, half_width=0.05), "y_pilot", "all 30"),
    (lambda: plan_labels(Y, F[:-2], U, half_width=0.05), "y_pilot", "same order"),
    (lambda: plan_labels(Y, F, U, half_width=0.05, confidence=1), "confidence", "(0, 1)"),
])
def test_bad_input_names_the_argument(call, name, words):
    with pytest.raises(InputError, match=f"`{name}`") as info:
        call()
    assert words in str(info.value)
    assert isinstance(info.value, ValueError)  # InputError is a ValueError, like sklearn's


def test_inputs_are_checked_before_options():
    with pytest.raises(InputError, match="`yhat`"):
        ppi_mean(Y, F[:-1], U, confidence=7)


def test_options_are_keyword_only():
    with pytest.raises(TypeError):
        ppi_mean(Y, F, U, 0.9)  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan_labels(Y, F, U, 0.05)  # type: ignore[misc]
    with pytest.raises(TypeError):
        human_mean(Y, 0.9)  # type: ignore[misc]


# -- 5. the planner ----------------------------------------------------------------------------


def test_planner_reaches_the_target_width_on_snli(snli):
    """Acceptance: plan from a random 50-item pilot, label the planned number at random (the
    pilot included), and the realised PPI++ half-width averages within ±25 % of the target."""
    target = 0.05
    realised, planned, human_only = [], [], []
    rng = np.random.default_rng(11)
    for _ in range(60):
        idx = rng.permutation(snli.y.size)
        pilot, rest = idx[:50], idx[50:]
        plan = plan_labels(snli.y[pilot], snli.heuristic[pilot], snli.heuristic[rest],
                           half_width=target)
        assert plan.note == "" and plan.pilot_n == 50 and plan.N == 800
        assert MIN_LABELS_FOR_INTERVAL <= plan.n <= plan.n_human_only
        assert plan.more_labels == plan.n - 50
        assert plan.expected_half_width <= target
        lab, unl = idx[:plan.n], idx[plan.n:]
        est = ppi_mean(snli.y[lab], snli.heuristic[lab], snli.heuristic[unl])
        realised.append(est.half_width)
        planned.append(plan.n)
        human_only.append(plan.n_human_only)
    ratio = float(np.mean(realised)) / target
    assert 0.75 <= ratio <= 1.25, ratio
    assert abs(ratio - 1) < 0.1  # in fact close: 0.99–1.01 on this data
    assert np.mean(planned) < np.mean(human_only)  # the judge saves labels


def test_planner_with_a_numeric_judge(snli):
    rng = np.random.default_rng(12)
    realised, target = [], 0.06
    for _ in range(40):
        idx = rng.permutation(snli.y_test.size)
        pilot = idx[:40]
        plan = plan_labels(snli.y_test[pilot], snli.proba_test[pilot],
                           snli.proba_test[idx[40:]], half_width=target)
        lab, unl = idx[:plan.n], idx[plan.n:]
        realised.append(ppi_mean(snli.y_test[lab], snli.proba_test[lab],
                                 snli.proba_test[unl]).half_width)
    assert 0.75 <= np.mean(realised) / target <= 1.25


def _brute_half_width(y, f, unl, n, confidence=0.95):
    """The planner's variance formula, written out for one n."""
    var_y, cov = np.var(y, ddof=1), np.cov(y, f, ddof=1)[0, 1]
    allf = np.concatenate([f, unl])
    var_f, total = np.var(allf, ddof=1), allf.size
    N = total - n
    lam = float(np.clip(cov / ((1 + n / N) * var_f), 0, 1))
    var = (var_y - 2 * lam * cov + lam**2 * var_f) / n + lam**2 * var_f / N
    return _z(confidence) * math.sqrt(var), lam


def test_planner_gives_the_smallest_n_of_the_formula(snli):
    y, f, unl = _split(snli.y, snli.heuristic, 40, 13)
    for h in (0.04, 0.05, 0.08, 0.12):
        plan = plan_labels(y, f, unl, half_width=h, confidence=0.9)
        hw, lam = _brute_half_width(y, f, unl, plan.n, 0.9)
        assert plan.expected_half_width == pytest.approx(hw)
        assert plan.lam == pytest.approx(lam)
        assert hw <= h
        if plan.n > MIN_LABELS_FOR_INTERVAL:
            assert _brute_half_width(y, f, unl, plan.n - 1, 0.9)[0] > h
        assert plan.n_human_only == max(MIN_LABELS_FOR_INTERVAL, math.ceil(
            _z(0.9) ** 2 * np.var(y, ddof=1) / h**2))
    # the formula's half-width falls as n grows (the search is a bisection)
    widths = [_brute_half_width(y, f, unl, n)[0] for n in range(2, 800)]
    assert all(a >= b - 1e-12 for a, b in zip(widths, widths[1:]))


def test_planner_edges(snli):
    y, f, unl = _split(snli.y, snli.heuristic, 40, 14)
    wide = plan_labels(y, f, unl, half_width=0.4)
    assert wide.n == MIN_LABELS_FOR_INTERVAL == wide.n_human_only and wide.more_labels == 0
    tight = plan_labels(y, f, unl, half_width=0.005)
    assert tight.n > 800 and tight.n == tight.n_human_only and "more than the 800" in tight.note
    flat = plan_labels(y, np.ones(40), np.ones(760), half_width=0.05)  # a judge that says one thing
    assert flat.lam == 0.0 and flat.n == flat.n_human_only


def test_result_objects(snli):
    est = ppi_mean(*_data(snli, "binary", 100, 0))
    d = est.to_dict()
    assert list(d) == ["method", "estimate", "ci_low", "ci_high", "half_width", "n", "N",
                       "confidence", "lam", "note"]
    assert d["half_width"] == pytest.approx((est.ci_high - est.ci_low) / 2)
    assert "95% CI" in str(est) and "ppi++" in str(est)
    assert "no interval" in str(human_mean([1, 0, 1]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.estimate = 0.5  # type: ignore[misc]
    assert isinstance(est, Estimate)
    plan = plan_labels(*_data(snli, "binary", 40, 0), half_width=0.05)
    assert isinstance(plan, LabelPlan)
    pd_ = plan.to_dict()
    assert {"n", "expected_half_width", "n_human_only", "pilot_n", "more_labels"} <= set(pd_)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.n = 3  # type: ignore[misc]
