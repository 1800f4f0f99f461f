"""What the judging commands print: the judge and model, requests, cache hits, errors, every
file written, n/a for what does not apply, and warnings as plain `warning:` lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli


TRACE = {"conversation_id": "c-1",
         "turns": [{"agent_id": "triage", "agent_role": "router", "message": "hello",
                    "turn_index": 0},
                   {"agent_id": "billing", "agent_role": "specialist", "message": "hi",
                    "turn_index": 2}],
         "handoffs": [{"from_agent": "triage", "to_agent": "billing", "turn_index": 1}]}


def test_score_names_judge_counts_and_files(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out, ledger = tmp_path / "s.csv", tmp_path / "l.jsonl"
    code, stdout, stderr = run_cli(["score", "support_desk", "--no-progress", "--out", str(out),
                                    "--ledger", str(ledger)], capsys)
    assert code == 0, stderr
    judge = next(ln for ln in stdout.splitlines() if ln.startswith("judge:"))
    assert judge.startswith("judge: heuristic (") and "offline" in judge
    assert "0 requests" in judge and "0 cache hits" in judge and "0 errors" in judge
    assert f"written: {out}" in stdout and f"written: {ledger}" in stdout
    assert out.is_file() and ledger.is_file()


def test_traces_without_expectations_show_na_and_one_plain_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    traces = tmp_path / "t.jsonl"
    traces.write_text(json.dumps(TRACE) + "\n")
    code, stdout, stderr = run_cli(["score", str(traces), "--no-progress"], capsys)
    assert code == 0, stderr
    rows = {ln.split()[0]: ln for ln in stdout.splitlines() if ln.strip()}
    assert "n/a" in rows["handoff_quality"] and "n/a" in rows["routing_quality"]
    assert stderr.strip(), "the run should say what is n/a"
    head, *notes = stderr.splitlines()
    assert head == "Notes:" and notes, stderr  # one block, after the bars
    for line in notes:
        assert line.startswith("warning: "), stderr
    assert len(set(notes)) == len(notes), "each note once"
    assert "Warning:" not in stderr and "warnings.warn" not in stderr and ".py:" not in stderr


def test_calibrate_lists_each_judge_run_and_the_files(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, stderr = run_cli(["calibrate", "support_desk", "--judge", "heuristic",
                                    "--resamples", "200", "--no-progress",
                                    "--card", str(tmp_path / "card.json")], capsys)
    assert code == 0, stderr
    assert any(ln.startswith("judge: heuristic, offline: 0 requests") for ln in
               stdout.splitlines()), stdout
    assert f"written: {tmp_path / 'card.json'}" in stdout


def test_version_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli(["--version"], capsys)
    assert code == 0 and "maev" in stdout


@pytest.mark.parametrize("command", ["score", "report", "demo", "calibrate"])
def test_every_judging_command_takes_the_same_judge_flags(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run_cli([command, "--help"], capsys)
    assert code == 0
    for flag in ("--judge", "--api-base", "--api-key", "--prompt", "--no-cache", "--no-progress",
                 "--max-concurrency", "--timeout", "--max-judge-errors"):
        assert flag in stdout, (command, flag)
