"""run_requests: the engine under run_judge, for any request task, over real HTTP."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import pytest

from maev_kit.errors import JudgeUnavailableError
from maev_kit.runner import RequestRun, RequestTask, arun_requests, run_requests
from maev_kit.testing import FakeOpenAIServer, free_port, http_error


@dataclass(frozen=True)
class Word:
    group: str
    text: str | None
    error: str | None = None
    cause: str | None = None


class ShoutTask:
    """A group is (name, word, word...); the reply lists the words in capitals, one result
    per word — or none for a group named 'quiet'."""

    name, version, unit = "shout", "1", "word"

    def build_messages(self, group):
        return [{"role": "user", "content": json.dumps({"group": group[0],
                                                         "words": list(group[1:])})}]

    def parse(self, text, group):
        try:
            data = json.loads(text)
        except ValueError:
            return [Word(group[0], None, "not JSON")]
        if data.get("explode"):
            raise RuntimeError("boom")
        return [Word(group[0], w) for w in data["words"]]

    def error_result(self, member, error, cause):
        return Word(member, None, error, cause)

    def is_ok(self, result):
        return result.error is None


def shout(body):
    payload = json.loads(body["messages"][0]["content"])  # a repair request adds to the end
    name = payload["group"]
    if name == "garbled":
        return "no json here"
    if name == "explode":
        return json.dumps({"explode": True})
    if name == "down":
        return http_error(503)
    words = [] if name == "quiet" else [w.upper() for w in payload["words"]]
    return json.dumps({"words": words})


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=shout) as s:
        yield s


GROUPS = [("g1", "a", "b"), ("quiet", "x"), ("g3", "c")]


def texts(run):
    return [[r.text for r in got] for got in run.results]


def test_results_per_group_in_order_with_stats(server, make_backend, backend_kind, tmp_path):
    task = ShoutTask()
    assert isinstance(task, RequestTask)
    run = run_requests(task, GROUPS, make_backend(backend_kind, server), cache=tmp_path,
                       progress=False, max_concurrency=2)
    assert isinstance(run, RequestRun)
    assert texts(run) == [["A", "B"], [], ["C"]]
    s = run.stats
    assert (s["groups"], s["members"], s["results"]) == (3, 7, 3)
    assert (s["requests"], s["retries"], s["cache_hits"], s["errors"]) == (3, 0, 0, 0)
    assert s["tokens"] > 0 and s["latency_p50"] is not None and s["wall_time"] > 0
    assert run.model and (run.name, run.version) == ("shout", "1")
    assert "3 groups, 0 errors, 3 requests" in repr(run)
    # every group was cached, the one with no result too: a rerun sends nothing
    again = run_requests(task, GROUPS, make_backend(backend_kind, server), cache=tmp_path,
                         progress=False)
    assert texts(again) == texts(run)
    assert again.stats["requests"] == 0 and again.stats["cache_hits"] == 3
    assert len(server.requests) == 3


def test_failures_become_error_results_with_causes(server, make_backend, backend_kind):
    groups = [("g1", "a"), ("garbled", "x", "y"), ("down", "z"), ("explode", "w")]
    run = run_requests(ShoutTask(), groups, make_backend(backend_kind, server), cache=False,
                       progress=False, max_retries=1, retry_backoff=0)
    assert texts(run) == [["A"], [None], [None, None], [None, None]]
    garbled, down, explode = run.results[1][0], run.results[2][1], run.results[3][0]
    assert garbled.error == "not JSON"  # the parser's own error, kept
    assert garbled.cause is None  # counted as unparseable
    assert (down.group, down.cause) == ("z", "server")  # one error result per member
    assert "request failed after 2 attempts" in down.error
    assert (explode.cause, explode.error) == ("other", "shout.parse raised RuntimeError: boom")
    s = run.stats
    assert [r.group for r in run.results[2]] == ["down", "z"]
    assert s["errors"] == 5  # error results, counted per member
    assert s["errors_by_cause"] == {"server": 2, "unparseable": 1, "other": 2}
    assert s["errors_by_kind"] == {"unparseable": 3, "server": 2}  # unreadable: retried
    assert s["requests"] == 1 + 2 + 2 + 2  # every failing group retried once (a repair for the
    # two unreadable replies, never the same prompt)
    repairs = [r.messages for r in server.requests if len(r.messages) == 3]
    assert len(repairs) == 2 and all(m[1]["role"] == "assistant" for m in repairs)
    assert s["retries"] == 3


def test_bad_key_and_nothing_listening_stop_the_run_at_once(make_backend, backend_kind):
    with FakeOpenAIServer(fail="401") as srv:
        with pytest.raises(JudgeUnavailableError) as e:
            run_requests(ShoutTask(), GROUPS, make_backend(backend_kind, srv), cache=False,
                         progress=False)
    assert e.value.cause == "auth"
    start = time.monotonic()
    dead = type("S", (), {"base_url": f"http://127.0.0.1:{free_port()}/v1"})()
    with pytest.raises(JudgeUnavailableError) as e:
        run_requests(ShoutTask(), GROUPS, make_backend(backend_kind, dead), cache=False,
                     progress=False)
    assert e.value.cause == "unreachable" and time.monotonic() - start < 10


def test_arun_requests_on_the_callers_loop(server, make_backend):
    backend = make_backend("openai", server)

    async def main():
        return await arun_requests(ShoutTask(), GROUPS, backend, cache=False, progress=False)

    assert texts(asyncio.run(main())) == [["A", "B"], [], ["C"]]


def test_works_inside_a_running_loop(server, make_backend, backend_kind):
    backend = make_backend(backend_kind, server)

    async def main():  # a notebook cell: a loop is running, the sync call still works
        return run_requests(ShoutTask(), GROUPS, backend, cache=False, progress=False)

    assert texts(asyncio.run(main())) == [["A", "B"], [], ["C"]]


@pytest.mark.parametrize(("task", "groups", "kwargs", "error", "match"), [
    (object(), GROUPS, {}, TypeError, "lacks name, version, build_messages"),
    (ShoutTask(), [()], {}, ValueError, r"`groups\[0\]` is empty"),
    (ShoutTask(), ["abc"], {}, TypeError, r"`groups\[0\]` must be a sequence"),
    (ShoutTask(), GROUPS, {"max_concurrency": 0}, ValueError, "max_concurrency"),
    (ShoutTask(), GROUPS, {"backend": None}, ValueError, "pass `backend`"),
    (ShoutTask(), GROUPS, {"backend": 3}, TypeError, "litellm model string or a backend"),
])
def test_bad_arguments(task, groups, kwargs, error, match):
    kwargs = {"backend": "openai/x", **kwargs}
    with pytest.raises(error, match=match):
        run_requests(task, groups, cache=False, progress=False, **kwargs)


def test_no_groups_sends_nothing(server, make_backend, tmp_path):
    run = run_requests(ShoutTask(), [], make_backend("openai", server), cache=tmp_path,
                       progress=False)
    assert run.results == [] and run.stats["requests"] == 0 and not server.requests
    assert not any(tmp_path.iterdir())  # no cache file made for nothing
