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
    assert r.exit_code == 0 and "85 traces (207 handoffs) written" in r.output
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
    (tmp_path / "c.jsonl").write_text('{"conversation_id": "x", "turns": [], "handoffs": [{}]}\n')
    out = tmp_path / "scores.csv"
    r = _run("score", str(tmp_path / "*.*"), "--engine", "ray", "--judge", "none",
             "--no-progress", "--out", str(out), "--output-dir", str(tmp_path / "res"))
    assert r.exit_code == 1, r.output
    assert "1 shard(s) could not be read" in r.output and "c.jsonl:1 › handoffs" in r.output
    assert len(out.read_text().splitlines()) == 1 + 85
    assert "n/a: not judged (judge=None)" in r.output


def test_score_with_an_expectations_file_local_and_on_ray(ray_cluster, tmp_path, capsys):
    """--expectations gives trace files and shards their expected handoffs and routing
    cases: both engines score them as evaluate scores the labeled set; a labeled set, which
    brings its own, refuses them (exit 2)."""
    from maev_kit import evaluate
    from maev_kit.datasets import load_labeled_set
    from maev_kit.traces import save_traces

    ls = load_labeled_set("support_desk")
    (tmp_path / "s").mkdir()
    save_traces(ls.traces[:40], tmp_path / "s" / "a.parquet")
    save_traces(ls.traces[40:], tmp_path / "s" / "b.parquet")
    exps = str(ls.path / "expectations.jsonl")

    def aggregates(*args):
        assert (main(["score", *args, "--judge", "none", "--no-progress", "--expectations",
                      exps, "--json"]) or 0) == 0
        rows = json.loads(capsys.readouterr().out)["aggregates"]
        return {r["metric"]: r["mean"] for r in rows}

    local = aggregates(str(ls.path / "traces.jsonl"))
    on_ray = aggregates(str(tmp_path / "s"), "--engine", "ray", "--output-dir",
                        str(tmp_path / "out"))
    want = evaluate(ls, judge=None, progress=False).aggregates.set_index("metric")["mean"]
    for metric in ("target_accuracy", "reason_accuracy", "context_completeness",
                   "routing_exact", "routing_acceptable"):
        assert local[metric] == on_ray[metric] == want[metric], metric
    with pytest.raises(SystemExit) as e:
        main(["score", str(ls.path), "--judge", "none", "--expectations", exps])
    assert e.value.code == 2
    assert "brings its own expectations" in capsys.readouterr().err


def _maev(*args, cwd, timeout=300):
    """`maev ARGS` in its own process (with no RAY_ADDRESS): stdout, stderr, exit code."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    return subprocess.run([sys.executable, "-c", "from maev_kit.cli import main; main()",
                           *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_a_bad_source_is_one_error_when_the_cli_starts_ray(tmp_path):
    """No Ray running: `maev score --engine ray` starts one. A source that names nothing ends
    in one error line and exit 2, and nothing of Ray Data's after it: its warm-up, left
    running, printed a traceback as the process exited and started Ray again (a warning that
    ray.init ran outside the main thread)."""
    r = _maev("score", "nothing/*.parquet", "--engine", "ray", "--judge", "none", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "error: nothing/*.parquet: no trace file found" in r.stderr
    for noise in ("Traceback", "update_execution_metrics", "SIGTERM handler"):
        assert noise not in r.stderr, r.stderr


def test_address_runs_on_that_cluster_and_a_dead_one_is_a_quick_error(ray_cluster, tmp_path):
    """--address connects to a running cluster (this session's, from another process) and
    gives evaluate's numbers; an address where nothing listens is one error line at once (Ray
    retries it for minutes)."""
    import time

    from maev_kit import evaluate
    from maev_kit.datasets import load_labeled_set

    address = ray_cluster.get_runtime_context().gcs_address
    r = _maev("score", "support_desk", "--engine", "ray", "--address", address, "--judge",
              "none", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    got = {row["metric"]: row["mean"] for row in json.loads(r.stdout)["aggregates"]}
    want = evaluate(load_labeled_set("support_desk"), judge=None, progress=False)
    for row in want.aggregates.itertuples():
        if row.mean == row.mean:  # not n/a
            assert got[row.metric] == row.mean, row.metric

    start = time.monotonic()
    r = _maev("score", "support_desk", "--engine", "ray", "--address", "127.0.0.1:1",
              "--judge", "none", cwd=tmp_path, timeout=120)
    assert r.returncode == 2 and time.monotonic() - start < 60
    assert r.stderr.strip().splitlines()[-1].startswith(
        "error: no Ray cluster answers at 127.0.0.1:1")
