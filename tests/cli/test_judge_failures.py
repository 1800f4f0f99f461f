"""`maev score`, `report`, `demo` and `calibrate` against a judge endpoint that fails.

The model judge runs through the real litellm client over HTTP to ``FakeOpenAIServer`` put in
one failure mode (401, 429 forever, 500 forever, no answer, garbage) or to a port where nothing
listens. Whatever fails: exit 1, one ``error:`` line naming the cause, no rate printed, no
report or table written. Authentication failures and refused connections end within seconds.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.testing import FakeOpenAIServer
from maev_kit.testing._server import _default_responder, free_port, reply


#: failure mode -> what the one error line must say
MODES = {
    "401": "authentication failed",
    "refused": "nothing answers",
    "429": "rate_limit",
    "500": "server",
    "timeout": "timeout",
    "garbage": "unparseable",
}
COMMANDS = ("score", "report", "demo", "calibrate")

# what is tested is the failure each mode ends in, not how long the retries wait
pytestmark = pytest.mark.usefixtures("no_backoff_waits")


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six support_desk conversations (three dev, three test) with their expectations and labels."""
    return small_labeled_set(tmp_path_factory.mktemp("tiny"), "tiny_desk")


@pytest.fixture(scope="module", autouse=True)
def litellm_loaded() -> None:
    """Import litellm once up front: the under-5-s bound is on the run, not on the import."""
    import litellm  # noqa: F401


@pytest.fixture()
def endpoint(request: pytest.FixtureRequest):
    mode = request.param
    if mode == "refused":
        yield mode, f"http://127.0.0.1:{free_port()}/v1"
        return
    server = FakeOpenAIServer(fail=mode)
    server.start()
    try:
        yield mode, server.base_url
    finally:
        server.stop()


def _args(command: str, set_path: Path, url: str, out: Path) -> list[str]:
    judge = ["--judge", "openai/fake-judge", "--api-base", url, "--no-cache", "--no-progress",
             "--timeout", "1"]
    return {
        "score": ["score", str(set_path), *judge, "--out", str(out / "scores.csv"),
                  "--ledger", str(out / "ledger.csv")],
        "report": ["report", str(set_path), *judge, "--out", str(out / "report.html")],
        "demo": ["demo", "--set", str(set_path), *judge, "--out", str(out / "demo")],
        "calibrate": ["calibrate", str(set_path), *judge, "--resamples", "200",
                      "--out", str(out / "cal"), "--card", str(out / "card.json")],
    }[command]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("endpoint", list(MODES), indirect=True)
def test_a_failing_judge_is_an_error_not_a_score(command: str, endpoint: tuple[str, str],
                                                 tiny_set: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    mode, url = endpoint
    out = tmp_path / "out"
    t0 = time.perf_counter()
    code, stdout, stderr = run_cli(_args(command, tiny_set, url, out), capsys)
    seconds = time.perf_counter() - t0

    assert code == 1, (stdout, stderr)
    assert "Traceback" not in stderr + stdout
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, stderr
    assert MODES[mode] in errors[0], errors[0]
    assert not re.search(r"\d\.\d{3}", stdout), stdout       # no rate, κ or score printed
    assert not out.exists() or not any(out.rglob("*")), list(out.rglob("*"))  # nothing written
    if mode in ("401", "refused"):
        assert seconds < 5, f"{mode} took {seconds:.1f} s"


@pytest.mark.parametrize("endpoint", ["401", "refused", "garbage", "500"], indirect=True)
def test_calibrate_ranks_the_judges_that_work_and_names_the_one_that_failed(
        endpoint: tuple[str, str], tiny_set: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    mode, url = endpoint
    code, stdout, stderr = run_cli(
        ["calibrate", str(tiny_set), "--judge", "heuristic", "--judge", "openai/fake-judge",
         "--api-base", url, "--no-cache", "--no-progress", "--timeout", "1",
         "--resamples", "200", "--out", str(tmp_path / "cal")], capsys)
    assert code == 1, stderr                # the comparison asked for did not happen in full
    assert stderr.splitlines()[-1].startswith("error: 1 of 2 judges failed"), stderr
    assert "heuristic" in stdout and "ok" in stdout             # ... but the rest is ranked
    failed = [ln for ln in stderr.splitlines() if "openai/fake-judge" in ln and "fail" in ln]
    assert failed and failed[0].startswith("warning:"), stderr
    assert MODES[mode].split()[0] in stderr or mode in stderr, stderr
    card = json.loads((tmp_path / "cal" / "judge_card.json").read_text())
    assert card["judge_name"] == "heuristic"                  # the card never pins a failed judge
    assert "Label more items" not in stdout


def test_below_the_threshold_the_run_reports_its_failures(tiny_set: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """One handoff's reply is unreadable: with --max-judge-errors above that share the scores
    are written, and the output says how many facts failed and why."""
    first_fact = json.loads((tiny_set / "expectations.jsonl").read_text().splitlines()[0])
    marker = first_fact["key_facts"][0]["text"]

    def responder(body: dict) -> object:
        text = json.dumps(body["messages"])
        return reply("not json at all") if marker in text else _default_responder(body)

    server = FakeOpenAIServer(responder)
    server.start()
    try:
        out = tmp_path / "scores.csv"
        code, stdout, stderr = run_cli(
            ["score", str(tiny_set), "--judge", "openai/fake-judge", "--api-base",
             server.base_url, "--no-cache", "--no-progress", "--max-judge-errors", "0.9",
             "--out", str(out)], capsys)
        assert code == 0, stderr
        assert out.is_file()
        judge_line = next(ln for ln in stdout.splitlines() if ln.startswith("judge:"))
        assert "model openai/fake-judge" in judge_line and "unparseable" in judge_line
        assert re.search(r"\d+ failed \(unparseable \d+\)", stderr), stderr

        # the same run with the default threshold fails and writes nothing
        out2 = tmp_path / "strict.csv"
        code, stdout, stderr = run_cli(
            ["score", str(tiny_set), "--judge", "openai/fake-judge", "--api-base",
             server.base_url, "--no-cache", "--no-progress", "--max-judge-errors", "0",
             "--out", str(out2)], capsys)
        assert code == 1 and not out2.exists(), stderr
        assert "unparseable" in stderr.splitlines()[-1]
    finally:
        server.stop()


def test_demo_scores_with_a_model_judge(tiny_set: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    server = FakeOpenAIServer()
    server.start()
    try:
        code, stdout, stderr = run_cli(
            ["demo", "--set", str(tiny_set), "--judge", "openai/fake-judge", "--api-base",
             server.base_url, "--no-cache", "--no-progress", "--out", str(tmp_path / "d")],
            capsys)
    finally:
        server.stop()
    assert code == 0, stderr
    judge_line = next(ln for ln in stdout.splitlines() if ln.startswith("judge:"))
    assert "model openai/fake-judge" in judge_line and " 0 errors" in judge_line
    assert int(re.search(r"(\d+) requests", judge_line).group(1)) > 0
    for name in ("report.html", "scores.csv", "retention_ledger.csv"):
        assert (tmp_path / "d" / name).is_file()
        assert f"{tmp_path / 'd' / name}" in stdout
    assert "Traceback" not in stderr


@pytest.mark.parametrize("mode", ["401", "garbage"])
def test_through_maev_serve_fake_in_real_processes(mode: str, tiny_set: Path,
                                                   tmp_path: Path) -> None:
    """`maev serve-fake --fail MODE` in one process, `maev score` in another: exit 1, one
    error line naming the cause, no traceback on the terminal, no scores file."""
    import os
    import subprocess
    import sys

    maev = str(Path(sys.executable).parent / "maev")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("MAEV_DEBUG", None)
    server = subprocess.Popen([maev, "serve-fake", "--port", "0", "--fail", mode],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        first = server.stdout.readline()
        url = re.search(r"(http://\S+?)(?:[;,)\s]|$)", first)
        assert url, first
        out = tmp_path / "scores.csv"
        proc = subprocess.run([maev, "score", str(tiny_set), "--judge", "openai/fake-judge",
                               "--api-base", url.group(1), "--no-cache", "--no-progress",
                               "--timeout", "2", "--out", str(out)],
                              capture_output=True, text=True, timeout=300, env=env)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and MODES[mode] in errors[0], proc.stderr
    assert not re.search(r"\d\.\d{3}", proc.stdout) and not out.exists()
