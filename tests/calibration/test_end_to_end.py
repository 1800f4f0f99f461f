"""calibrate() end to end: real litellm HTTP calls to the local fake OpenAI server, with two
scripted judge "models" of known quality (the server answers each fact from a script)."""

from __future__ import annotations

import json

import pytest

from maev_kit.agreement import cohen_kappa
from maev_kit.calibration import calibrate
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer

from ._fakes import corrupt, label_dicts, make_items, truth, wrong

N = 120
GOLD = truth(N)
# Which facts each scripted model gets wrong (by fact number).
BAD = {
    "good": set(range(3, N, 10)),                             # 12 wrong: agrees on 90 %
    "poor": {i for i in range(N) if i % 5 in (1, 2)},          # 48 wrong: agrees on 60 %
    # Equally good, wrong on different items with the same labels (see truth()).
    "tie-a": {i for i in range(N) if i % 10 in (1, 2)},        # 24 wrong
    "tie-b": {i for i in range(N) if i % 10 in (4, 5)},        # 24 other items wrong
}


def scripted_models(body: dict) -> str:
    """Answer like model ``body['model']``: the human label, except on its BAD facts."""
    model = body["model"].split("/")[-1]
    data = extract_prompt_data(body["messages"])
    out = {}
    for fid, text in data.facts:
        i = int(text.split(":")[0].split()[1])  # "Fact 17: ..."
        label = wrong(GOLD[i]) if i in BAD[model] else GOLD[i]
        out[fid] = {"status": label, "reason": f"scripted {model}"}
    return json.dumps(out)


@pytest.fixture(scope="module")
def setup():
    items = make_items(N, facts_per_handoff=3)
    ben = corrupt(GOLD, set(range(0, N, 20)))
    labels = label_dicts(items, GOLD, "ana") + label_dicts(items, ben, "ben")
    with FakeOpenAIServer(responder=scripted_models) as server:
        yield items, labels, ben, server


def _run(setup, models, tmp_path, **kw):
    items, labels, _, server = setup
    return calibrate(items, labels, judges=[f"openai/{m}" for m in models],
                     backend_params={"api_base": server.base_url, "api_key": "sk-local"},
                     cache=tmp_path, progress=False, n_resamples=2000, **kw)


def test_better_judge_ranks_first_and_the_difference_is_significant(setup, tmp_path):
    items, _, ben, server = setup
    server.reset()
    res = _run(setup, ["poor", "good"], tmp_path)
    board = res.leaderboard
    assert list(board["key"]) == ["openai/good [v4]", "openai/poor [v4]"]
    assert list(board["judge"]) == ["openai/good", "openai/poor"]
    assert list(board["prompt"]) == ["v4", "v4"]
    good = corrupt(GOLD, BAD["good"])
    expected = (cohen_kappa(GOLD, good) + cohen_kappa(ben, good)) / 2
    assert board.loc[0, "kappa"] == pytest.approx(expected, abs=1e-12)
    assert board.loc[0, "accuracy"] == pytest.approx(
        (sum(g == x for g, x in zip(GOLD, good)) + sum(b == x for b, x in zip(ben, good)))
        / (2 * N))
    assert board.loc[1, "delta_kappa"] < -0.3
    assert board.loc[1, "p_value"] < 0.01
    assert (board["requests"] == N // 3).all() and (board["cache_hits"] == 0).all()
    assert (board["parse_failure_rate"] == 0).all()
    assert (board["tokens"] > 0).all()
    assert len(server.completed) == 2 * N // 3
    assert res.ceiling is not None and res.ceiling["kappa"] == pytest.approx(
        cohen_kappa(GOLD, ben), abs=1e-12)
    assert res.recommended == "openai/good [v4]"
    wrong_items = res.disagreements[res.disagreements["judge"] == "openai/good [v4]"]
    assert len(wrong_items) >= len(BAD["good"]) - 2

    again = _run(setup, ["poor", "good"], tmp_path)  # same cache directory
    assert (again.leaderboard["cache_hits"] == N // 3).all()
    assert (again.leaderboard["requests"] == 0).all()
    assert again.leaderboard["kappa"].tolist() == board["kappa"].tolist()


def test_equally_good_judges_are_not_significantly_different(setup, tmp_path):
    res = _run(setup, ["tie-a", "tie-b"], tmp_path)
    board = res.leaderboard
    assert abs(board.loc[1, "delta_kappa"]) < 0.05
    assert board.loc[1, "p_value"] > 0.2


def test_prompt_variants_each_get_a_row(setup, tmp_path):
    res = _run(setup, ["good"], tmp_path, prompts=["v1", "v2"])
    assert sorted(res.leaderboard["key"]) == ["openai/good [v1]", "openai/good [v2]"]
    assert set(res.leaderboard["judge_version"].str[:2]) == {"v1", "v2"}
    card = res.card("openai/good [v2]")
    assert card.prompt == "v2" and len(card.prompt_hash) == 64
    assert card.model == "openai/good" and card.params["api_base"].startswith("http://127.0.0.1")
    assert "api_key" not in card.params
