"""Ctrl-C or a crash mid-run loses nothing finished; the cache is safe with two writers."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items, request_payload

from maev_kit.backends import Completion, ScriptedBackend, ScriptError
from maev_kit.runner import JudgeCache, run_judge

TESTS = Path(__file__).resolve().parent.parent


def test_ctrl_c_halfway_then_rerun_sends_only_the_missing_requests(server, make_backend,
                                                                   tmp_path):
    server.latency = 0.2  # 20 handoffs, 2 at a time: ~2 s, interrupted after ~0.4 s
    n = 20
    child = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from openai import AsyncOpenAI
        from runner.runner_helpers import EchoJudge, make_items
        from maev_kit.backends import OpenAIClientBackend
        from maev_kit.runner import run_judge
        backend = OpenAIClientBackend(AsyncOpenAI(base_url={server.base_url!r}, api_key="x"),
                                      "fake-judge")
        run_judge(EchoJudge(), make_items({n}), backend, max_concurrency=2,
                  cache={str(tmp_path)!r}, progress=False)
        print("finished without interruption")
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(server.completed) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "finished without interruption" not in out
    assert "KeyboardInterrupt" in err
    stored = len(JudgeCache(tmp_path))
    assert 0 < stored < n
    sent_before = len(server.requests)

    rerun = run_judge(EchoJudge(), make_items(n), make_backend("openai", server),
                      cache=tmp_path, progress=False)
    resent = [request_payload(r.body)["handoff"] for r in server.requests[sent_before:]]
    assert rerun.stats["requests"] == len(resent) == n - stored
    assert rerun.stats["cache_hits"] == stored
    assert len(set(resent)) == len(resent)
    assert [v.label for v in rerun.verdicts] == expected_labels(make_items(n))


def test_a_crash_keeps_every_finished_reply(judge, tmp_path):
    items = make_items(5)
    script = [lambda msgs: echo_responder({"messages": msgs})] * 3
    crashing = ScriptedBackend(script)  # a 4th request finds the script used up: a crash
    with pytest.raises(ScriptError):
        run_judge(judge, items, crashing, max_concurrency=1, cache=tmp_path, progress=False)
    assert len(JudgeCache(tmp_path)) == 3
    with ScriptedBackend([lambda msgs: echo_responder({"messages": msgs})] * 2) as backend:
        run = run_judge(judge, items, backend, cache=tmp_path, progress=False)
    assert run.stats["requests"] == 2 and run.stats["cache_hits"] == 3
    assert [v.label for v in run.verdicts] == expected_labels(items)


def test_two_processes_write_the_cache_at_once(tmp_path):
    writer = textwrap.dedent("""
        import sys
        from maev_kit.backends import Completion
        from maev_kit.runner import JudgeCache
        name, directory = sys.argv[1], sys.argv[2]
        with JudgeCache(directory) as cache:
            for i in range(300):
                cache.put(f"{name}-{i}", Completion("{}", 1, 1, None, 0.1), judge="j@1",
                          request={"i": i})
        print("ok")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", writer, name, str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    results = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    with JudgeCache(tmp_path) as cache:
        assert len(cache) == 600
        assert set(cache.get_many(["a-0", "b-299"])) == {"a-0", "b-299"}


@pytest.mark.parametrize("store", ["cache", "batch log"])
def test_a_new_store_opens_while_another_process_writes_to_it(tmp_path, store):
    """Another connection holds the write lock of a new file still in rollback mode (what a
    second process starting at the same moment does): switching to WAL fails at once there,
    whatever the busy timeout, so the open waits for the lock instead of failing."""
    import sqlite3
    import threading

    from maev_kit.runner import _batch, _cache

    name = _cache.CACHE_FILENAME if store == "cache" else _batch._FILENAME
    other = sqlite3.connect(tmp_path / name, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other (x)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other VALUES (1)")
    threading.Timer(0.3, other.execute, ["COMMIT"]).start()
    start = time.monotonic()
    opened = JudgeCache(tmp_path) if store == "cache" else _batch._BatchLog(tmp_path)
    assert time.monotonic() - start >= 0.25  # it waited for the lock
    assert opened._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    opened.close()
    other.close()


def test_cached_reply_round_trips(tmp_path):
    with JudgeCache(tmp_path) as cache:
        c = Completion('{"f1": "lost"}', 120, 8, 2.3e-05, 0.52, "gpt-4o-mini")
        cache.put("k", c, judge="retention-v1@abc", request={"messages": []})
        assert cache.get_many(["k"])["k"].completion == c
        cache.clear()
        assert len(cache) == 0
