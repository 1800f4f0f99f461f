"""The `maev` commands of the main job, end to end on the bundled labeled sets."""

import json
import re
import subprocess
import sys

import pandas as pd
import pytest
from click.testing import CliRunner

from maev_kit.cli import cli


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    result = run("demo", "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    return out, result.output


def test_demo_prints_summary_and_report_path(demo_dir):
    out, text = demo_dir
    assert "Judge calibration" in text and "composite" in text
    assert f"Report: {out / 'report.html'}" in text
    for name in ("report.html", "scores.csv", "retention_ledger.csv", "calibration.csv",
                 "judge_card.json"):
        assert (out / name).is_file(), name
    scores = pd.read_csv(out / "scores.csv")
    assert len(scores) == 85 and scores["composite"].between(0, 1).all()


def test_demo_report_is_self_contained_and_escapes_trace_text(demo_dir):
    out, _ = demo_dir
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page.lower()          # the set holds <script> probes in its traces
    assert "&lt;script&gt;" in page or "&lt;img src=x onerror" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert "reference labels" in page and "human annotators" not in page.replace(
        "not independent human annotations", "")


def test_demo_card_pins_the_scoring_judge(demo_dir):
    out, _ = demo_dir
    card = json.loads((out / "judge_card.json").read_text())
    assert card["judge_name"] == "heuristic" and card["labeled_set"] == "support_desk"


def test_validate_passes_both_bundled_sets(repo_root):
    result = run("validate", str(repo_root / "labeled_sets/support_desk"),
                 str(repo_root / "labeled_sets/snli_calibration"))
    assert result.exit_code == 0, result.output
    assert result.output.count(": valid (") == 2


def test_score_writes_csv_and_ledger(tmp_path):
    out, ledger = tmp_path / "scores.csv", tmp_path / "ledger.csv"
    result = run("score", "support_desk", "--judge", "heuristic", "--out", str(out),
                 "--ledger", str(ledger), "--no-progress")
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out)
    assert {"conversation_id", "composite", "retention_rate", "n_loops"} <= set(df.columns)
    led = pd.read_csv(ledger)
    # 382 listed key facts, each also judged at every later handoff: 518 items
    assert len(led) == 518 and set(led["label"].dropna()) <= {"retained", "lost", "contradicted"}
    assert led["fact_key"].notna().all() and (led["hop"] >= 0).all()


def test_score_learned_judge_needs_a_held_out_split():
    result = CliRunner().invoke(cli, ["score", "support_desk", "--judge", "tfidf-logreg",
                                      "--no-progress"])
    assert result.exit_code != 0
    assert "split" in str(result.exception) or "split" in result.output


def test_score_learned_judge_on_test_split(tmp_path):
    out = tmp_path / "s.csv"
    result = run("score", "support_desk", "--judge", "tfidf-logreg", "--split", "test",
                 "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    assert set(pd.read_csv(out)["split"]) == {"test"}


def test_calibrate_two_offline_judges_writes_outputs(tmp_path):
    result = run("calibrate", "support_desk", "--judge", "heuristic", "--judge", "tfidf-logreg",
                 "--out", str(tmp_path), "--resamples", "500")
    assert result.exit_code == 0, result.output
    board = pd.read_csv(tmp_path / "leaderboard.csv")
    assert set(board["judge"]) == {"heuristic", "tfidf-logreg"}
    assert (board["kappa_low"] <= board["kappa"]).all() and (board["kappa"] <= board["kappa_high"]).all()
    assert (tmp_path / "judge_card.json").is_file()


def test_agree_on_snli_gives_the_human_ceiling(repo_root, tmp_path):
    labels = repo_root / "labeled_sets/snli_calibration/labels.jsonl"
    result = run("agree", str(labels), "--resamples", "200", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["annotators"] == ["slot1", "slot2", "slot3", "slot4", "slot5"]
    assert 0.6 < out["human_ceiling"]["kappa"] < 0.8


def test_agree_with_a_judge_run(repo_root, tmp_path):
    ledger = tmp_path / "ledger.csv"
    assert run("score", str(repo_root / "labeled_sets/snli_calibration"), "--judge",
               "heuristic", "--ledger", str(ledger), "--no-progress").exit_code == 0
    labels = repo_root / "labeled_sets/snli_calibration/labels.jsonl"
    result = run("agree", str(labels), "--judge-run", str(ledger), "--resamples", "200", "--json")
    assert result.exit_code == 0, result.output
    jvh = json.loads(result.output)["judge_vs_humans"]
    assert jvh["judge_kappa"] < jvh["human_kappa"]


@pytest.mark.parametrize("args, message", [
    (["score", "support_desk", "--judge", "heuristc"], "did you mean 'heuristic'"),
    (["score", "no_such_set"], "no_such_set"),
    (["agree", "missing.jsonl"], "missing.jsonl"),
    (["score", "support_desk", "--out", "x.xlsx"], "unknown output type"),
])
def test_bad_input_exits_2_with_one_message(args, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "maev_kit.cli", *args, "--no-progress"]
                          if args[0] == "score" else [sys.executable, "-m", "maev_kit.cli", *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
