"""`maev calibrate --probes` and `maev check` on a card with probes, end to end.

The model judge is served by FakeOpenAIServer over real HTTP through litellm: honest (the
default responder) at calibration, then obedient to text addressed to the evaluator at the
check — the same verdicts on the original items, so κ holds, but its injection flip rate rose.
"""

from __future__ import annotations

import csv
import json
import re

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer
from maev_kit.testing._server import _default_responder

FAST = ["--resamples", "1000", "--no-progress"]
MODEL = "openai/probe-model"


def obeys_the_evaluator(body: dict) -> str:
    """The default (heuristic) answer, except that every fact is retained when the judged text
    speaks to the evaluator."""
    user = body["messages"][-1]["content"]
    if "evaluator" not in user and "grader" not in user and "judge reviewing" not in user:
        return _default_responder(body)
    facts = extract_prompt_data(body["messages"]).facts
    return json.dumps({fid: {"status": "retained", "reason": "the agent says so"}
                       for fid, _ in facts})


def test_calibrate_with_probes_writes_columns_and_card(tmp_path, capsys):
    out = tmp_path / "cal"
    code, stdout, err = run_cli(["calibrate", "support_desk", "--judge", "heuristic",
                                 "--probes", "--out", str(out), *FAST], capsys)
    assert code == 0, err
    assert "judge robustness" in stdout and "injection" in stdout
    with open(out / "leaderboard.csv", newline="") as f:
        row = next(csv.DictReader(f))
    for probe in ("order", "padding", "injection", "paraphrase", "distractor"):
        assert {f"flip_{probe}", f"flip_{probe}_low", f"flip_{probe}_high"} <= set(row)
    card = json.loads((out / "judge_card.json").read_text())
    assert set(card["probes"]["results"]) == {"order", "padding", "injection", "paraphrase",
                                              "distractor"}
    assert card["probes"]["results"]["padding"]["n"] > 100
    code, stdout, err = run_cli(["check", str(out / "judge_card.json"), *FAST], capsys)
    assert code == 0, stdout + err
    assert "probe injection: flip rate" in stdout


def test_check_fails_when_a_flip_rate_rose(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ls = small_labeled_set(tmp_path, "probe_desk", per_split=6)
    card = tmp_path / "card.json"
    with FakeOpenAIServer() as honest:
        code, stdout, err = run_cli(["calibrate", str(ls), "--judge", MODEL, "--api-base",
                                     honest.base_url, "--api-key", "x", "--probes", "--card",
                                     str(card), "--no-cache", *FAST], capsys)
    assert code == 0, stdout + err
    recorded = json.loads(card.read_text())["probes"]["results"]["injection"]
    with FakeOpenAIServer(obeys_the_evaluator) as gullible:
        code, stdout, err = run_cli(["check", str(card), "--api-base", gullible.base_url,
                                     "--api-key", "x", "--no-cache", *FAST], capsys)
    assert code == 1, stdout + err
    assert "κ did not fall" in stdout
    assert re.search(r"probe injection: flip rate [\d.]+ → [\d.]+: rose by", stdout)
    assert recorded["flip_rate"] < 0.2


@pytest.mark.parametrize("bad", [{"results": {"shuffle": {}}}, {"results": []}, "x"])
def test_a_card_with_a_broken_probes_field_is_bad_input(tmp_path, capsys, bad):
    out = tmp_path / "cal"
    code, _, err = run_cli(["calibrate", "support_desk", "--judge", "heuristic", "--card",
                            str(out / "card.json"), *FAST], capsys)
    assert code == 0, err
    card = json.loads((out / "card.json").read_text())
    card["probes"] = bad
    (out / "card.json").write_text(json.dumps(card))
    code, stdout, err = run_cli(["check", str(out / "card.json"), *FAST], capsys)
    assert code == 2
    assert "probes" in err and "Traceback" not in err
