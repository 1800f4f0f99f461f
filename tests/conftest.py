"""Shared fixtures and options for the maev-kit test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factories import make_trace

# Never let a test reach litellm's network price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
# Real human-labeled data and framework trace exports the tests read (see tests/data/README.md).
DATA = REPO / "tests" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", default=False,
                     help="run tests that call a real, paid LLM provider (needs an API key)")


#: Fixtures that start something taking seconds (a server, a cluster, a browser): every test
#: that uses one, directly or through another fixture, is ``slow`` — so a test added later is
#: marked by what it needs. ``pytest -m "not slow"`` is the quick loop (README, Contributing).
SLOW_FIXTURES = {
    "pg_server": "starts a PostgreSQL server (initdb + pg_ctl)",
    "ray_cluster": "starts a local Ray cluster",
    "jupyterlab": "starts JupyterLab and drives it in headless Chromium",
    "s3": "starts an S3 server (moto) in a subprocess",
    "llama_server": "starts llama.cpp's server with a real model",
}


#: Test modules (under ``tests/``) whose tests together took 6 s or more in the full suite
#: (``--durations=0`` on this 2-core machine): end-to-end commands, real HTTP through litellm
#: or the openai client to the fake server, retries and timeouts waited out, property tests
#: with many examples, Ray started by the command itself. All of their tests are ``slow``;
#: every package keeps quick tests elsewhere (tests/package/test_fast_loop.py checks it).
SLOW_MODULES = frozenset({
    "backends/test_backend_http.py",
    "calibration/test_align.py",
    "calibration/test_card.py",
    "calibration/test_card_scoring.py",
    "calibration/test_check.py",
    "calibration/test_degenerate_labels.py",
    "calibration/test_end_to_end.py",
    "calibration/test_failing_judges.py",
    "cli/test_bad_inputs.py",
    "cli/test_chat_jsonl.py",
    "cli/test_cli_check.py",
    "cli/test_cli_is_on_top.py",
    "cli/test_cli_labels_sync.py",
    "cli/test_cli_main.py",
    "cli/test_judge_failures.py",
    "cli/test_kit_inputs.py",
    "cli/test_litellm_shutdown.py",
    "cli/test_local_model_server.py",
    "cli/test_score_exports.py",
    "evaluation/test_estimates.py",
    "evaluation/test_facts_option.py",
    "evaluation/test_result_file.py",
    "evaluation/test_stages.py",
    "expectations/test_expectation_routing.py",
    "facts/test_llm_proposer.py",
    "facts/test_review.py",
    "judges/test_parse.py",
    "labels/test_labels_cli.py",
    "labels/test_store_backends.py",
    "package/test_write_rules.py",
    "reporting/test_fonts.py",
    "reporting/test_mlflow.py",
    "reporting/test_mlflow_uri.py",
    "reporting/test_report.py",
    "reporting/test_report_explains.py",
    "runner/test_batch.py",
    "runner/test_local_servers.py",
    "runner/test_run_requests.py",
    "runner/test_runner_failures.py",
    "runner/test_runner_http.py",
    "runner/test_window_runs.py",
    "scale/test_cli.py",
    "scale/test_evaluate_dataset.py",
    "scale/test_facts.py",
    "widgets/test_widgets_contracts_property.py",
})


def mark_slow(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a fixture of :data:`SLOW_FIXTURES` or is in one of
    :data:`SLOW_MODULES`."""
    tests = Path(__file__).resolve().parent
    for item in items:
        path = Path(getattr(item, "path", "/"))
        module = path.relative_to(tests).as_posix() if tests in path.parents else None
        if (SLOW_FIXTURES.keys() & set(getattr(item, "fixturenames", ()))
                or module in SLOW_MODULES):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects: the marks added here count
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_slow(items)
    # A real small model on this machine (minutes): only when selected with -m local_llm.
    if "local_llm" not in (config.getoption("-m") or ""):
        skip_llm = pytest.mark.skip(reason="runs a real local model: select with -m local_llm")
        for item in items:
            if "local_llm" in item.keywords:
                item.add_marker(skip_llm)
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live provider test: pass --live and set an API key")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: the SNLI subset, the framework trace samples and their licences."""
    return DATA


@pytest.fixture
def sample_trace():
    """A triage → billing → tech → billing conversation (a ping-pong at the end)."""
    return make_trace()


@pytest.fixture
def no_backoff_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's exponential backoff between retries capped at 0 s, for tests of what a
    failure ends in rather than of how long retries wait (``tests/runner`` tests the backoff
    and ``Retry-After`` themselves). Reaches what runs in this process: the runner, and the
    ``maev`` command run in-process (``cli_helpers.run_cli``)."""
    from maev_kit.runner import _requests

    monkeypatch.setattr(_requests, "_MAX_BACKOFF", 0.0)


@pytest.fixture(scope="session")
def litellm_module():
    """litellm imported once per test session (the import takes seconds)."""
    from maev_kit.backends._litellm import import_litellm

    return import_litellm()
