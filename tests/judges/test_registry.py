import pytest

from maev_kit.judges import (
    JUDGE_NAMES,
    HeuristicJudge,
    Judge,
    LearnedJudge,
    LLMJudge,
    OfflineJudge,
    RetentionJudge,
    get_judge,
)

from .conftest import make_item


@pytest.mark.parametrize("name", JUDGE_NAMES)
def test_every_name_resolves_to_a_judge_of_that_name(name):
    judge = get_judge(name)
    assert isinstance(judge, Judge)
    assert judge.name == name
    assert isinstance(judge, OfflineJudge) == judge.offline
    assert isinstance(judge, LLMJudge) == (not judge.offline)


def test_kinds():
    assert isinstance(get_judge("heuristic"), HeuristicJudge)
    assert isinstance(get_judge(" Retention-V2 "), RetentionJudge)
    assert get_judge("retention-v1").prompt == "v1"
    assert isinstance(get_judge("tfidf-logreg"), LearnedJudge)


def test_a_judge_object_passes_through():
    judge = HeuristicJudge()
    assert get_judge(judge) is judge


def test_unknown_name_suggests_a_close_one():
    with pytest.raises(ValueError, match="did you mean 'heuristic'"):
        get_judge("heuristc")
    with pytest.raises(TypeError, match="`spec`"):
        get_judge(42)


def test_training_data_fits_the_learned_judge():
    items = [make_item("Order ORD-1 ships Monday", "ORD-1 ships Monday.", conv="a"),
             make_item("Order ORD-2 ships Friday", "Which order?", conv="b")]
    judge = get_judge("tfidf-logreg", train_items=items, train_labels=["retained", "lost"])
    assert judge.is_fitted and judge.requires_fit
    with pytest.raises(ValueError, match="does not learn"):
        get_judge("heuristic", train_items=items, train_labels=["retained", "lost"])
    with pytest.raises(ValueError, match="both"):
        get_judge("tfidf-logreg", train_items=items)


def test_importing_the_judges_loads_no_heavy_package():
    import subprocess
    import sys

    code = ("import sys, maev_kit.judges as j; j.get_judge('heuristic'); "
            "j.get_judge('tfidf-logreg'); "
            "print(sorted(m for m in ('sklearn', 'scipy', 'litellm', 'openai') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"
