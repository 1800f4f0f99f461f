"""Calibration when judges fail: real HTTP through litellm to FakeOpenAIServer (401, garbage) and
to a port where nothing listens. A failed judge is listed with its cause and never ranked; no
combination of judges, prompts and splits ends in a traceback."""

from __future__ import annotations

import itertools
import json
import math
import time

import pytest

from maev_kit.calibration import CalibrationResult, calibrate
from maev_kit.errors import InputError, JudgeErrorsExceeded
from maev_kit.testing import FakeOpenAIServer, free_port

# what is tested is the failure each judge ends in, not how long its retries wait
pytestmark = pytest.mark.usefixtures("no_backoff_waits")

FAST = dict(progress=False, cache=False, n_resamples=100, max_retries=0)


@pytest.fixture(scope="module")
def support():
    from maev_kit.datasets import load_labeled_set

    return load_labeled_set("support_desk")


@pytest.fixture(scope="module")
def endpoints(litellm_module):
    """litellm backends: nothing listening, a server refusing the key, a server talking garbage."""
    from maev_kit.backends import LiteLLMBackend

    with FakeOpenAIServer(fail="401") as refusing, FakeOpenAIServer(fail="prose") as garbage:
        yield {
            "dead": LiteLLMBackend("openai/dead-judge", api_key="sk-test",
                                   api_base=f"http://127.0.0.1:{free_port()}/v1"),
            "401": LiteLLMBackend("openai/locked-judge", api_key="sk-wrong",
                                  api_base=refusing.base_url),
            "garbage": LiteLLMBackend("openai/chatty-judge", api_key="sk-test",
                                      api_base=garbage.base_url),
        }


def check_result(res: CalibrationResult) -> None:
    """What must hold of any calibration result, whatever failed."""
    board = res.leaderboard
    failed = board[board["status"] != "ok"]
    ok = board[board["status"] == "ok"]
    assert list(board["status"]) == list(ok["status"]) + list(failed["status"])  # failed last
    for _, row in failed.iterrows():
        assert row["status"].startswith("failed: ") and " of " in row["status"]
        assert math.isnan(row["kappa"]) and math.isnan(row["delta_kappa"])
        assert math.isnan(row["p_value"]) and row["parse_failure_rate"] > 0.05
        assert row["key"] != res.recommended
        assert row["key"] in res.recommendation
    assert (board["parse_failure_rate"] >= 0).all()
    if len(ok):
        assert ok.iloc[0]["delta_kappa"] in (0.0,) or len(ok) == 1
    else:
        assert res.recommended is None
        assert res.recommendation.startswith("No judge could be calibrated")
        assert "label" not in res.recommendation.lower()
    json.dumps(res.to_dict())
    assert "Traceback" not in str(res)


def test_a_model_without_a_key_fails_and_the_offline_judge_is_still_ranked(support,
                                                                           litellm_module,
                                                                           monkeypatch):
    """The README's command, without an API key: no traceback, heuristic ranked."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    start = time.perf_counter()
    res = calibrate(support, judges=["heuristic", "gpt-4o-mini"], prompts=["v1", "v2"], **FAST)
    assert time.perf_counter() - start < 30
    check_result(res)
    board = res.leaderboard.set_index("key")
    assert board.loc["heuristic", "status"] == "ok" and board.loc["heuristic", "kappa"] > 0.5
    for key in ("gpt-4o-mini [v1]", "gpt-4o-mini [v2]"):
        assert board.loc[key, "status"] == "failed: auth (231 of 231 items)"
        assert res.runs[key].stats["errors_by_cause"] == {"auth": 231}
    assert "OPENAI_API_KEY" in res.recommendation and "Not ranked" in res.recommendation
    assert res.failed == {"gpt-4o-mini [v1]": "failed: auth (231 of 231 items)",
                          "gpt-4o-mini [v2]": "failed: auth (231 of 231 items)"}
    assert "n/a" in str(res)
    assert res.card().judge_name == "heuristic"
    assert res.disagreements["judge"].eq("heuristic").all()


@pytest.mark.parametrize(("which", "status", "fix"), [
    ("dead", "failed: unreachable (231 of 231 items)", "start the server"),
    ("401", "failed: auth (231 of 231 items)", "--api-key"),
    ("garbage", "failed: unparseable (231 of 231 items)", "not the JSON"),
])
def test_when_every_judge_fails_the_recommendation_names_the_failure_and_the_fix(
        support, endpoints, which, status, fix):
    from maev_kit.errors import JudgeErrorsExceeded

    res = calibrate(support, judges=[endpoints[which]], prompts=["v1", "v2"], **FAST)
    check_result(res)
    assert set(res.leaderboard["status"]) == {status}
    assert fix in res.recommendation and "Label more" not in res.recommendation
    with pytest.raises(JudgeErrorsExceeded, match="no judge card"):
        res.card()


def test_a_dead_endpoint_is_tried_once_not_once_per_prompt(support, litellm_module):
    with FakeOpenAIServer(fail="401") as server:
        res = calibrate(support, judges=["openai/x"], prompts=["v1", "v2"],
                        backend_params={"api_base": server.base_url, "api_key": "k"}, **FAST)
    assert len(server.requests) <= 16  # the first prompt's requests in flight, none for v2
    assert set(res.leaderboard["status"]) == {"failed: auth (231 of 231 items)"}


def test_a_judge_that_lost_items_is_failed_unless_a_larger_share_is_allowed(support):
    """Items lost (a server that died mid-run, say) put a judge on another set of items than
    the others: over ``max_judge_errors`` (default 5 %) it is failed — never ranked,
    recommended or carded; with a larger share allowed it is ranked with its failure rate."""
    from maev_kit.calibration import calibration_from_runs
    from maev_kit.judges import HeuristicJudge, Verdict
    from maev_kit.runner import run_judge

    # the labeled items (a fact is also judged at later handoffs nobody labeled)
    labeled = {r["item_id"] for r in support.labels()}
    items = [it for it in support.items_in("test") if it.item_id in labeled]
    run = run_judge(HeuristicJudge(), items, progress=False)
    cut = len(items) // 3
    broken = [Verdict(v.item_id, None, error="429", cause="rate_limit") if k < cut else v
              for k, v in enumerate(run.verdicts)]
    mostly = [Verdict(v.item_id, None, error="500", cause="server") if k < 2 * cut + 2 else v
              for k, v in enumerate(run.verdicts)]
    runs = {"whole": run,
            "some failed": type(run)(broken, "heuristic", "1", None, {}, tuple(items)),
            "mostly failed": type(run)(mostly, "heuristic", "1", None, {}, tuple(items))}
    strict = calibration_from_runs(runs, support, items=items, n_resamples=100)
    check_result(strict)
    assert strict.leaderboard.set_index("key").loc["some failed", "status"] == \
        f"failed: rate_limit ({cut} of 231 items)"
    assert strict.recommended in (None, "whole")
    with pytest.raises(JudgeErrorsExceeded):
        strict.card("some failed")
    res = calibration_from_runs(runs, support, items=items, n_resamples=100,
                                max_judge_errors=0.5)
    check_result(res)
    board = res.leaderboard.set_index("key")
    assert board.loc["some failed", "status"] == "ok"
    assert board.loc["some failed", "parse_failure_rate"] == pytest.approx(cut / len(items))
    assert not math.isnan(board.loc["some failed", "kappa"])
    assert board.loc["mostly failed", "status"] == f"failed: server ({2 * cut + 2} of 231 items)"
    assert list(board.index) == ["whole", "some failed", "mostly failed"] or \
        list(board.index)[:2] == ["some failed", "whole"]


def test_confidence_sets_every_ci_label(support):
    res = calibrate(support, judges=["heuristic"], confidence=0.8, threshold=0.0, **FAST)
    text = str(res) + res.recommendation
    assert "80% CI" in text and "95% CI" not in text and "95 %" not in text


@pytest.mark.parametrize(("kw", "message"), [
    ({"split": "tset"}, "no split 'tset' in support_desk; splits: dev, test"),
    ({"judges": ["heurstic"]}, "unknown judge 'heurstic'; did you mean 'heuristic'?"),
    ({"judges": ["gpt-4o-mini"], "prompts": ["v9"]}, "unknown prompt 'v9': not a builtin prompt (v1, v2, v3, v4) and no template file at that path"),
    ({"judges": ["retention-v2"]}, "is a prompt variant, not a judge model"),
])
def test_bad_names_are_one_line_input_errors(support, kw, message):
    args = {"judges": ["heuristic"], **kw}
    with pytest.raises(InputError) as info:
        calibrate(support, **args, **FAST)
    assert message in str(info.value) and "\n" not in str(info.value)


JUDGE_SETS = {
    "heuristic": ["heuristic"],
    "offline": ["heuristic", "tfidf-logreg"],
    "learner": ["tfidf-logreg"],
    "dead": ["dead"],
    "offline+dead+401": ["heuristic", "dead", "401"],
    "all": ["tfidf-logreg", "401", "garbage", "heuristic"],
    "typo": ["heurstic", "dead"],
}


@pytest.mark.parametrize("judge_set", list(JUDGE_SETS))
def test_no_combination_ends_in_a_traceback(support, endpoints, judge_set):
    """Every combination of judges × prompts × splits gives a result or one InputError."""
    outcomes = []
    for prompts, split in itertools.product([None, ["v1", "v2"], ["v2", "v9"]],
                                            ["dev", "test", None, "tset"]):
        judges = [endpoints.get(j, j) for j in JUDGE_SETS[judge_set]]
        try:
            res = calibrate(support, judges=judges, prompts=prompts, split=split, **FAST)
        except InputError as exc:
            assert "\n" not in str(exc)
            outcomes.append("input")
            bad = split == "tset" or (prompts and "v9" in prompts) or judge_set == "typo"
            assert bad, f"{judge_set} {prompts} {split}: {exc}"
            continue
        assert isinstance(res, CalibrationResult)
        check_result(res)
        assert res.split == (split or "test")
        n_models = sum(1 for j in JUDGE_SETS[judge_set] if j in endpoints)
        assert len(res.leaderboard) == (len(JUDGE_SETS[judge_set]) - n_models
                                        + n_models * len(prompts or ["v1"]))
        outcomes.append("result")
    assert "result" in outcomes or judge_set == "typo"
