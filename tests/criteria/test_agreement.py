"""Every agreement statistic takes a criterion for its labels (its order, for weights)."""

import pytest
from sklearn.metrics import cohen_kappa_score

from maev_kit.agreement import agreement_report, cohen_kappa, multi_rater_agreement
from maev_kit.criteria import Criterion

C = Criterion("quality", scope="turn", labels=("good", "ok", "bad"), ordinal=True,
              question="How good is this turn?")
A = ["good", "ok", "bad", "good", "ok", "ok", "bad", "good"]
B = ["good", "bad", "bad", "ok", "ok", "good", "bad", "good"]
R = ["ok", "ok", "bad", "good", "good", "ok", "bad", None]


def test_multi_rater_agreement_takes_the_criterion():
    by_labels = multi_rater_agreement({"a": A, "b": B, "r": R}, labels=C.labels,
                                      weights="linear")
    by_criterion = multi_rater_agreement({"a": A, "b": B, "r": R}, labels=C, weights="linear")
    assert by_criterion.fleiss_kappa.value == pytest.approx(by_labels.fleiss_kappa.value)
    assert by_criterion.gwet_ac.value == pytest.approx(by_labels.gwet_ac.value)
    with pytest.raises(ValueError, match="'great'"):
        multi_rater_agreement({"a": A, "b": ["great"] + B[1:]}, labels=C)


def test_weighted_report_matches_sklearn():
    rep = agreement_report(A, B, labels=C, weights="linear", n_resamples=300)
    assert rep.kappa == pytest.approx(cohen_kappa_score(A, B, labels=list(C.labels),
                                                        weights="linear"))
    assert cohen_kappa(A, B, labels=C) == pytest.approx(cohen_kappa_score(A, B))


def test_a_criterion_of_agents_stands_for_the_labels_used():
    from maev_kit.criteria import failure_attribution

    a = ["coder", "planner", "coder", "terminal", None, "planner"]
    b = ["coder", "coder", "coder", "terminal", "planner", "planner"]
    c = ["planner", "planner", "coder", "terminal", "planner", None]
    used = ("coder", "planner", "terminal")
    got = multi_rater_agreement({"a": a, "b": b, "c": c}, labels=failure_attribution())
    want = multi_rater_agreement({"a": a, "b": b, "c": c}, labels=used)
    assert got.labels == used and got.fleiss_kappa.value == pytest.approx(
        want.fleiss_kappa.value)
    assert cohen_kappa(a[:4], b[:4], labels=failure_attribution()) == pytest.approx(
        cohen_kappa_score(a[:4], b[:4]))
    with pytest.raises(ValueError, match="agents of each conversation"):
        multi_rater_agreement({"a": [None], "b": [None]}, labels=failure_attribution())
