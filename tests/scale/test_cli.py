"""`maev convert` and `maev score --engine ray` (in process, on the session's Ray)."""

from __future__ import annotations

import json

import pytest

from maev_kit.cli import main
from maev_kit.traces import load_traces

pytest.importorskip("pyarrow")
SD = "labeled_sets/support_desk/traces.jsonl"


class _Result:
    def __init__(self, exit_code, output):
        self.exit_code, self.output = exit_code, output


@pytest.fixture
def _run(capsys):
    def run(*args):
        try:
            code = main(list(args)) or 0
        except SystemExit as e:
            code = e.code
        got = capsys.readouterr()
        return _Result(code, got.out + got.err)
    return run


def test_convert_jsonl_parquet_round_trip(tmp_path, _run):
    from maev_kit.datasets import load_labeled_set

    r = _run("convert", str(load_labeled_set("support_desk").path / "traces.jsonl"),
             str(tmp_path / "t.parquet"))
    assert r.exit_code == 0 and "85 traces written" in r.output
    r = _run("convert", str(tmp_path / "t.parquet"), str(tmp_path / "back.jsonl"))
    assert r.exit_code == 0
    assert load_traces(tmp_path / "back.jsonl") == load_labeled_set("support_desk").traces


def test_convert_framework_export(tmp_path, _run):
    log = [{"role": "user", "content": "My invoice is wrong"},
           {"name": "triage", "content": "Passing you to billing."},
           {"name": "billing", "content": "Refund sent."}]
    (tmp_path / "chat.json").write_text(json.dumps(log))
    r = _run("convert", str(tmp_path / "chat.json"), str(tmp_path / "t.parquet"))
    assert r.exit_code == 0, r.output
    [t] = load_traces(tmp_path / "t.parquet")
    assert [a.agent_id for a in t.turns] == ["triage", "billing"]
    assert t.metadata["source_format"] == "chat"


def test_convert_bad_input_exits_2(tmp_path, _run):
    (tmp_path / "t.jsonl").write_text('{"conversation_id": "c1", "turns": 3}\n')
    r = _run("convert", str(tmp_path / "t.jsonl"), str(tmp_path / "t.parquet"))
    assert r.exit_code == 2 and "t.jsonl:1 › turns" in r.output
    r = _run("convert", str(tmp_path / "t.jsonl"), str(tmp_path / "t.csv"))
    assert r.exit_code == 2 and "must end in .jsonl or .parquet" in r.output


def test_score_on_ray_lists_a_corrupt_shard_and_exits_1(ray_cluster, tmp_path, _run):
    from maev_kit.datasets import load_labeled_set
    from maev_kit.traces import save_traces

    traces = load_labeled_set("support_desk").traces
    save_traces(traces[:40], tmp_path / "a.parquet")
    save_traces(traces[40:], tmp_path / "b.jsonl")
    (tmp_path / "c.jsonl").write_text('{"conversation_id": "x", "handoffs": [{}]}\n')
    out = tmp_path / "scores.csv"
    r = _run("score", str(tmp_path / "*.*"), "--engine", "ray", "--judge", "none",
             "--no-progress", "--out", str(out), "--output-dir", str(tmp_path / "res"))
    assert r.exit_code == 1, r.output
    assert "1 shard(s) could not be read" in r.output and "c.jsonl:1 › handoffs" in r.output
    assert len(out.read_text().splitlines()) == 1 + 85
    assert "n/a: not judged (judge=None)" in r.output
