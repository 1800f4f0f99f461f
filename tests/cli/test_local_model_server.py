"""`maev calibrate` and `maev score` against a model server of one's own, played by
FakeOpenAIServer in its one-slot mode (one request at a time, like llama.cpp's server): no key
needed, a model name the server does not serve, the reply cap and temperature pinned in the
card, and a server that dies mid-run — no card, exit 1, the address and how to resume."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.testing import FakeOpenAIServer
from maev_kit.testing._server import _default_responder


@pytest.fixture(scope="module")
def tiny_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_labeled_set(tmp_path_factory.mktemp("local"), "tiny_local")


@pytest.fixture(scope="module", autouse=True)
def litellm_loaded() -> None:
    import litellm  # noqa: F401


def _calibrate(tiny_set: Path, out: Path, *extra: str) -> list[str]:
    return ["calibrate", str(tiny_set), "--resamples", "200", "--no-progress",
            "--card", str(out / "card.json"), "--out", str(out / "cal"), *extra]


def test_no_key_is_needed_for_a_server_named_by_openai_base_url(
        tiny_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MAEV_API_KEY", raising=False)
    with FakeOpenAIServer(slots=1, models=["stub-model"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, stdout, stderr = run_cli(_calibrate(tiny_set, tmp_path, "--judge",
                                                  "openai/stub-model", "--no-cache"), capsys)
        n = len(server.completed)
    assert code == 0, stderr
    assert n > 0 and (tmp_path / "card.json").is_file()


def test_a_model_name_the_server_does_not_serve_is_named_with_what_it_serves(
        tiny_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(slots=1, models=["stub-model"]) as server:
        code, stdout, stderr = run_cli(_calibrate(
            tiny_set, tmp_path, "--judge", "openai/stub-modle", "--api-base", server.base_url,
            "--no-cache"), capsys)
        sent, url = len(server.requests), server.base_url
    assert code == 1 and sent == 0, stderr
    assert f"stub-modle is not served at {url}; the server serves: stub-model" in stderr
    assert "to_frame" not in stderr and "Traceback" not in stderr
    assert not (tmp_path / "card.json").exists()


def test_the_card_pins_the_reply_cap_the_temperature_and_judge_params(
        tiny_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(slots=1) as server:
        code, stdout, stderr = run_cli(_calibrate(
            tiny_set, tmp_path, "--judge", "openai/stub", "--api-base", server.base_url,
            "--no-cache", "--max-tokens", "700", "--temperature", "0.2",
            "--judge-param", "top_p=0.5", "--judge-param", "seed=3"), capsys)
        bodies = [r.body for r in server.requests]
    assert code == 0, stderr
    assert {(b["max_tokens"], b["temperature"], b["top_p"], b["seed"]) for b in bodies} == \
        {(700, 0.2, 0.5, 3)}
    card = json.loads((tmp_path / "card.json").read_text())
    assert {k: card["params"][k] for k in ("max_tokens", "temperature", "top_p", "seed")} == \
        {"max_tokens": 700, "temperature": 0.2, "top_p": 0.5, "seed": 3}
    assert "api_key" not in json.dumps(card)


def test_the_default_card_pins_temperature_zero_and_the_auto_cap(
        tiny_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as server:
        code, _, stderr = run_cli(_calibrate(tiny_set, tmp_path, "--judge", "openai/stub",
                                             "--api-base", server.base_url, "--no-cache"),
                                  capsys)
    assert code == 0, stderr
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["params"]["temperature"] == 0 and card["params"]["max_tokens"] == "auto"


def test_a_bad_judge_param_is_refused_before_any_work(
        tiny_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run_cli(_calibrate(tiny_set, tmp_path, "--judge", "openai/stub",
                                         "--judge-param", "timeout=5"), capsys)
    assert code == 2 and "--timeout" in stderr
    code, _, stderr = run_cli(_calibrate(tiny_set, tmp_path, "--judge", "openai/stub",
                                         "--max-tokens", "lots"), capsys)
    assert code == 2 and "--max-tokens" in stderr


def test_a_server_that_dies_mid_run_gives_no_card_and_says_how_to_resume(
        tiny_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the reply cache (.maev_cache/) goes here
    answered = []
    server: FakeOpenAIServer

    def dies_after_one(body: dict) -> str:
        answered.append(1)
        if len(answered) == 2:  # the server goes away after its first reply, while it
            threading.Timer(0.05, server.stop).start()  # works on the second
        return _default_responder(body)

    server = FakeOpenAIServer(dies_after_one, slots=1, latency=0.1)
    server.start()
    port, url = server.port, server.base_url
    try:
        code, stdout, stderr = run_cli(_calibrate(
            tiny_set, tmp_path, "--judge", "heuristic", "--judge", "openai/stub",
            "--api-base", url), capsys)
    finally:
        server.stop()
    assert code == 1, stderr
    card = json.loads((tmp_path / "card.json").read_text())
    assert card["judge_name"] == "heuristic"  # never the judge that lost items
    assert "Use openai/stub" not in stdout
    assert url in stderr and "rerun the same command to resume:" in stderr
    assert "answer is cached" in stderr or "answers are cached" in stderr

    # the same command, with the server back: the cached answers are not asked again
    with FakeOpenAIServer(port=port) as again:
        code, stdout, stderr = run_cli(_calibrate(
            tiny_set, tmp_path, "--judge", "heuristic", "--judge", "openai/stub",
            "--api-base", url), capsys)
        resent = len(again.requests)
    assert code == 0, stderr
    (line,) = [ln for ln in stdout.splitlines() if ln.startswith("judge: openai/stub")]
    # only the lost handoffs are asked again; how many were answered before the server died
    # depends on timing, so the answers already cached count as hits, never as requests
    m = re.search(r": (\d+) requests, (\d+) cache hits, 0 errors", line)
    assert m is not None, line
    assert int(m[1]) == resent >= 1 and int(m[2]) >= 1
    assert resent >= 1


def test_a_judge_alone_that_lost_items_writes_nothing(
        tiny_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    answered = []
    server: FakeOpenAIServer

    def dies_after_one(body: dict) -> str:
        answered.append(1)
        if len(answered) == 2:  # after its first reply, while it works on the second
            threading.Timer(0.05, server.stop).start()
        return _default_responder(body)

    server = FakeOpenAIServer(dies_after_one, slots=1, latency=0.1)
    server.start()
    url = server.base_url
    try:
        code, stdout, stderr = run_cli(_calibrate(tiny_set, tmp_path, "--judge", "openai/stub",
                                                  "--api-base", url), capsys)
    finally:
        server.stop()
    assert code == 1, stderr
    assert not (tmp_path / "card.json").exists() and not (tmp_path / "cal").exists()
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: every judge failed, nothing written"), stderr
    assert url in last and "rerun the same command to resume:" in last
