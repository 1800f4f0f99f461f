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


def test_resolve_judge_offline_names_model_strings_and_objects():
    from maev_kit.backends import LiteLLMBackend, ScriptedBackend
    from maev_kit.judges import resolve_judge

    judge, backend = resolve_judge(" Heuristic ", prompt="v2", backend_params={"api_key": "x"})
    assert isinstance(judge, HeuristicJudge) and backend is None
    judge, backend = resolve_judge("tfidf-logreg")
    assert isinstance(judge, LearnedJudge) and backend is None
    judge, backend = resolve_judge("gpt-4o-mini", backend_params={"temperature": 0})
    # the default prompt is v4: the conversation view, with what was handed over to a receiver not in the trace
    assert judge.name == "retention-v4" and isinstance(backend, LiteLLMBackend)
    assert backend.model == "gpt-4o-mini"
    assert backend.params == {"temperature": 0, "max_tokens": "auto"}  # the judge's default cap
    judge, backend = resolve_judge("openai/heuristic", prompt="v2")  # a model, not a typo
    assert judge.name == "retention-v2" and backend.model == "openai/heuristic"
    scripted = ScriptedBackend([])
    judge, backend = resolve_judge(scripted, prompt="v2")
    assert judge.name == "retention-v2" and backend is scripted
    judge, backend = resolve_judge("retention-v2", backend=scripted)
    assert judge.name == "retention-v2" and backend is scripted
    mine = HeuristicJudge()
    assert resolve_judge(mine) == (mine, None)


@pytest.mark.parametrize(("spec", "kw", "message"), [
    ("heurstic", {}, "unknown judge 'heurstic'; did you mean 'heuristic'?"),
    ("Heuristik", {}, "did you mean 'heuristic'?"),
    ("tfidf", {}, "did you mean 'tfidf-logreg'?"),
    ("tfidf-logrg", {}, "did you mean 'tfidf-logreg'?"),
    ("gpt-4o-mini", {"prompt": "v5"}, "unknown prompt 'v5': not a builtin prompt (v1, v2, v3, v4) and no template file at that path"),
    ("heuristic", {"prompt": "V9"}, "unknown prompt 'V9': not a builtin prompt (v1, v2, v3, v4) and no template file at that path"),
    ("retention-v1", {}, "is a prompt variant, not a judge model"),
    ("  ", {}, "the judge name is empty"),
    ("gpt-4o-mini", {"backend_params": {"timeout": 3}}, "the runner owns it"),
])
def test_resolve_judge_rejects_mistakes_with_one_clear_input_error(spec, kw, message):
    from maev_kit.errors import InputError
    from maev_kit.judges import resolve_judge

    with pytest.raises(InputError) as info:
        resolve_judge(spec, **kw)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_resolve_judge_does_not_import_litellm():
    import subprocess
    import sys

    code = ("import sys, maev_kit.judges as j; j.resolve_judge('gpt-4o-mini'); "
            "j.resolve_judge('heuristic'); print('litellm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
