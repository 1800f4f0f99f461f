"""A litellm judge run that meets garbage replies ends quietly and with the right numbers.

Before the fix, litellm's async HTTP clients and logging callbacks outlived the runner's
event loop: its ``atexit`` handlers closed them on a fresh loop, and the terminal showed
"Task exception was never retrieved … RuntimeError('Event loop is closed')" and "coroutine
'OpenAIChatCompletion.acompletion' was never awaited" under a run whose result was right.
Both processes are real: `maev serve-fake --fail garbage` and `maev score`.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import small_labeled_set

NOISE = ("Task exception was never retrieved", "Event loop is closed", "was never awaited",
         "Traceback", "Task was destroyed")


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six support_desk conversations with their expectations and no labels."""
    return small_labeled_set(tmp_path_factory.mktemp("small"), "small_desk", labels=False)


def test_garbage_replies_leave_no_event_loop_noise(small_set: Path, tmp_path: Path) -> None:
    maev = str(Path(sys.executable).parent / "maev")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("MAEV_DEBUG", None)
    server = subprocess.Popen([maev, "serve-fake", "--port", "0", "--fail", "garbage"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = re.search(r"(http://\S+?)(?:[;,)\s]|$)", server.stdout.readline())
        assert url
        runs = []
        for _ in range(2):  # the noise came and went with timing: two runs
            runs.append(subprocess.run(
                [maev, "score", str(small_set), "--judge", "openai/fake-judge", "--api-base",
                 url.group(1), "--no-cache", "--no-progress", "--timeout", "2",
                 "--max-judge-errors", "1", "--json"],
                capture_output=True, text=True, timeout=300, env=env))
    finally:
        server.terminate()
        server.wait(timeout=10)
    baseline = subprocess.run([maev, "score", str(small_set), "--judge", "none", "--json"],
                              capture_output=True, text=True, timeout=300, env=env)
    n_facts = sum(len(json.loads(ln)["key_facts"]) for ln in
                  (small_set / "expectations.jsonl").read_text().splitlines())
    expected = {r["metric"]: r for r in json.loads(baseline.stdout)["aggregates"]}
    for proc in runs:
        assert proc.returncode == 0, proc.stderr
        for noise in NOISE:
            assert noise not in proc.stderr + proc.stdout, proc.stderr
        got = json.loads(proc.stdout)
        stats = got["judge"]["stats"]
        failed = re.search(r"(\d+) of (\d+) facts could not be judged", proc.stderr)
        assert failed and failed.group(1) == failed.group(2), proc.stderr
        n_items = int(failed.group(2))
        assert n_items >= n_facts                      # a fact can sit on more than one hop
        assert stats["errors"] == n_items and stats["requests"] >= 1    # every item failed
        rows = {r["metric"]: r for r in got["aggregates"]}
        mean = rows["information_retention"]["mean"]
        assert mean is None or math.isnan(mean)                            # n/a, not 0 or 1
        for metric in ("handoff_quality", "routing_quality", "composite"):
            assert rows[metric]["mean"] == pytest.approx(expected[metric]["mean"]), metric
