"""Judge failures classified at the source, through the real litellm and openai clients over HTTP:
a dead endpoint or a refused key stops the run within seconds, without retries; every other
failure becomes error verdicts counted by cause."""

from __future__ import annotations

import time

import pytest
from runner.runner_helpers import echo_responder, expected_labels, make_items

from maev_kit.errors import ERROR_CAUSES, JudgeUnavailableError
from maev_kit.runner import run_judge
from maev_kit.testing import FakeOpenAIServer, free_port, http_error, reply


def dead_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


class Dead:
    """Stands in for a server: only ``base_url``, where nothing listens."""

    def __init__(self, url: str) -> None:
        self.base_url = url


def run_timed(judge, items, backend, **kw):
    start = time.perf_counter()
    try:
        return run_judge(judge, items, backend, cache=False, progress=False, **kw), \
            time.perf_counter() - start
    except JudgeUnavailableError as exc:
        return exc, time.perf_counter() - start


@pytest.mark.parametrize("url", ["refused", "http://no-such-host.invalid/v1"])
def test_nothing_listening_stops_the_run_within_seconds(make_backend, backend_kind, judge, url):
    url = dead_url() if url == "refused" else url
    exc, elapsed = run_timed(judge, make_items(40), make_backend(backend_kind, Dead(url)),
                             max_retries=3, retry_backoff=1.0, max_concurrency=4)
    assert isinstance(exc, JudgeUnavailableError), exc
    assert elapsed < 5
    assert exc.cause == "unreachable"
    message = str(exc)
    assert "\n" not in message and url in message and "fake-judge" in message
    assert ("connection refused" if "127.0.0.1" in url else "unknown host") in message
    assert "start the server" in exc.fix


def test_a_refused_key_stops_the_run_without_retries(make_backend, backend_kind, judge):
    with FakeOpenAIServer(fail="401") as server:
        url = server.base_url
        exc, elapsed = run_timed(judge, make_items(40), make_backend(backend_kind, server),
                                 max_retries=3, retry_backoff=1.0, max_concurrency=4)
    assert isinstance(exc, JudgeUnavailableError), exc
    assert elapsed < 5
    assert exc.cause == "auth"
    assert 1 <= len(server.requests) <= 4  # what was in flight; nothing retried, nothing more
    assert url in str(exc) and "401" in str(exc) and "\n" not in str(exc)
    assert "OPENAI_API_KEY" in exc.fix


@pytest.mark.parametrize(("model", "var"), [("gpt-4o-mini", "OPENAI_API_KEY"),
                                            ("anthropic/claude-3-5-haiku-20241022",
                                             "ANTHROPIC_API_KEY")])
def test_a_missing_key_names_the_variable_to_set(litellm_module, judge, monkeypatch, model, var):
    from maev_kit.backends import LiteLLMBackend

    monkeypatch.delenv(var, raising=False)
    exc, elapsed = run_timed(judge, make_items(3), LiteLLMBackend(model), max_retries=3)
    assert isinstance(exc, JudgeUnavailableError) and exc.cause == "auth"
    assert elapsed < 5
    assert var in str(exc) and "--api-key" in str(exc) and model in str(exc)


def test_after_a_reply_a_refused_key_is_an_error_verdict_not_retried(server, make_backend,
                                                                      backend_kind, judge):
    server.script(reply('{"f0": "retained", "f1": "lost"}'), http_error(401))
    items = make_items(3)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_concurrency=1,
                    max_retries=3, cache=False, progress=False)
    assert len(server.requests) == 3  # the 401 was not retried
    assert [v.cause for v in run.verdicts] == [None, None, "auth", "auth", None, None]
    assert run.stats["errors"] == 2 and run.stats["errors_by_cause"] == {"auth": 2}
    assert [v.label for v in run.verdicts][4:] == expected_labels(items)[4:]


@pytest.mark.parametrize(("mode", "cause", "attempts"), [
    ("429", "rate_limit", 2), ("500", "server", 2), ("timeout", "timeout", 2),
    ("garbage", "unparseable", 2), ("prose", "unparseable", 2)])
def test_every_failure_mode_is_counted_under_its_cause(make_backend, backend_kind, judge, mode,
                                                      cause, attempts):
    items = make_items(3)
    # A short timeout only where the server hangs: elsewhere a loaded machine must not turn a
    # slow first connection into a client-side timeout that never reaches the server's log.
    timeout = 2.0 if mode == "timeout" else 30.0
    with FakeOpenAIServer(fail=mode) as server:
        run = run_judge(judge, items, make_backend(backend_kind, server), max_retries=1,
                        retry_backoff=0.01, timeout=timeout, cache=False, progress=False)
    assert len(server.requests) == 3 * attempts  # retried: these may pass on a second try
    assert all(v.label is None and v.cause == cause for v in run.verdicts)
    assert run.stats["errors"] == 6 and run.stats["errors_by_cause"] == {cause: 6}
    frame = run.to_frame()
    assert list(frame["cause"]) == [cause] * 6


def test_content_filter_refusals_are_their_own_cause(server, make_backend, backend_kind, judge):
    azure = ("The response was filtered due to the prompt triggering Azure OpenAI's content "
             "management policy.")
    server.script(reply("", finish_reason="content_filter"), http_error(400, message=azure))
    server.responder = echo_responder
    items = make_items(3)
    run = run_judge(judge, items, make_backend(backend_kind, server), max_concurrency=1,
                    max_retries=3, cache=False, progress=False)
    assert len(server.requests) == 3  # a refusal is not retried
    assert run.stats["errors_by_cause"] == {"content_filter": 4}
    assert [v.label for v in run.verdicts][4:] == expected_labels(items)[4:]


def test_causes_are_the_agreed_ones():
    assert ERROR_CAUSES == ("auth", "unreachable", "rate_limit", "timeout", "server",
                            "content_filter", "unparseable", "other")
