"""FakeOpenAIServer over plain HTTP (urllib / raw sockets): replies, faults, log, in-flight count."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request

import pytest

from maev_kit.judges import RetentionJudge, answer_retention_prompt
from maev_kit.retention import RetentionItem
from maev_kit.testing import FakeOpenAIServer, hang, http_error, malformed_body, reply, truncated_body
from maev_kit.traces import Message

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def post(server, body=BODY, path="/v1/chat/completions", timeout=5):
    req = urllib.request.Request(server.base_url.removesuffix("/v1") + path,
                                 data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_reply_shape_and_usage():
    with FakeOpenAIServer(responder=lambda body: "pong") as server:
        status, headers, raw = post(server)
    data = json.loads(raw)
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert data["object"] == "chat.completion" and data["model"] == "m"
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "pong"}
    usage = data["usage"]
    assert usage["prompt_tokens"] == 3 and usage["completion_tokens"] == 1
    assert usage["total_tokens"] == 4


def test_scripted_steps_come_first_then_the_responder():
    with FakeOpenAIServer(responder=lambda body: "default") as server:
        server.script("one", reply("two"))
        texts = [json.loads(post(server)[2])["choices"][0]["message"]["content"] for _ in range(3)]
        assert server.pending == 0
    assert texts == ["one", "two", "default"]


def test_faults():
    with FakeOpenAIServer(responder=lambda body: "ok") as server:
        server.script(http_error(429, retry_after=2, retry_after_ms=1500), http_error(500),
                      http_error(503), malformed_body())
        status, headers, _ = post(server)
        assert (status, headers["Retry-After"], headers["retry-after-ms"]) == (429, "2", "1500")
        assert post(server)[0] == 500 and post(server)[0] == 503
        status, _, raw = post(server)
        assert status == 200
        with pytest.raises(ValueError):
            json.loads(raw)
        server.script(truncated_body())
        with pytest.raises(Exception):  # IncompleteRead: the body stops half-way
            post(server)
        server.script(hang(5))
        with pytest.raises(OSError):  # the client's timeout fires first
            post(server, timeout=0.3)
        outcomes = [r.outcome for r in server.requests]
    assert outcomes == ["error", "error", "error", "malformed", "truncated", "hang"]


def test_bad_requests_and_unknown_paths():
    with FakeOpenAIServer(responder=lambda body: "ok") as server:
        assert post(server, body={"no": "messages"})[0] == 400
        assert post(server, path="/v1/embeddings")[0] == 404
        assert post(server, body=BODY)[0] == 200


def test_a_failing_responder_answers_500_with_the_reason():
    def broken(body):
        raise RuntimeError("cannot answer")

    with FakeOpenAIServer(responder=broken) as server:
        status, _, raw = post(server)
    assert status == 500 and "cannot answer" in raw.decode()


def test_request_log_and_peak_in_flight():
    with FakeOpenAIServer(responder=lambda body: "ok", latency=0.2) as server:
        threads = [threading.Thread(target=post, args=(server,)) for _ in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.peak_in_flight == 5 and server.in_flight == 0
        assert len(server.requests) == 5 and len(server.completed) == 5
        r = server.requests[0]
        assert r.messages == BODY["messages"] and r.status == 200
        assert r.finished_at - r.received_at >= 0.2
        server.reset()
        assert server.requests == [] and server.peak_in_flight == 0


def test_many_concurrent_connects_are_all_served():
    # The stdlib's default listen backlog of 5 drops connects at about 50 concurrent clients.
    with FakeOpenAIServer(responder=lambda body: "ok", latency=0.05) as server:
        results = []
        threads = [threading.Thread(target=lambda: results.append(post(server)[0]))
                   for _ in range(150)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert results == [200] * 150


def test_headers_and_body_arrive_in_one_segment():
    # One write: a client reading once after the request gets the whole response.
    with FakeOpenAIServer(responder=lambda body: "ok") as server:
        payload = json.dumps(BODY).encode()
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                         b"Content-Type: application/json\r\n"
                         + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
            time.sleep(0.2)
            data = sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int([h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")][0]
                 .split(b":")[1])
    assert head.startswith(b"HTTP/1.1 200") and len(body) == length


def test_a_client_that_hangs_up_makes_no_noise(capfd):
    with FakeOpenAIServer(responder=lambda body: "ok", latency=0.3) as server:
        with pytest.raises(OSError):
            post(server, timeout=0.05)
        time.sleep(0.4)
    assert "Traceback" not in capfd.readouterr().err


def test_default_responder_answers_the_retention_prompt():
    after = (Message("billing", "Refund started for account ACCT-4471.", 3),)
    items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account number is ACCT-4471", (), after)]
    judge = RetentionJudge("v1")
    messages = judge.build_messages(items)
    with FakeOpenAIServer() as server:
        status, _, raw = post(server, {"model": "m", "messages": messages})
    text = json.loads(raw)["choices"][0]["message"]["content"]
    assert status == 200 and text == answer_retention_prompt(messages)
    assert judge.parse(text, items)[0].label == "retained"


def test_stop_ends_hanging_requests_and_port_needs_a_running_server():
    server = FakeOpenAIServer(responder=lambda body: hang(30)).start()
    t = threading.Thread(target=lambda: pytest.raises(Exception, post, server, timeout=60))
    t.start()
    time.sleep(0.2)
    started = time.monotonic()
    server.stop()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - started < 10
    with pytest.raises(RuntimeError, match="not running"):
        server.port


def test_latency_must_not_be_negative():
    with pytest.raises(ValueError, match="latency"):
        FakeOpenAIServer(latency=-1)


@pytest.mark.parametrize(("mode", "status"), [("401", 401), ("429", 429), ("500", 500),
                                              ("garbage", 200), ("prose", 200)])
def test_fail_modes_answer_every_request_the_same_way(mode, status):
    with FakeOpenAIServer(fail=mode) as server:
        got = [post(server) for _ in range(3)]
    assert [g[0] for g in got] == [status] * 3 and len(server.requests) == 3
    body = got[0][2]
    if mode == "garbage":
        with pytest.raises(ValueError):
            json.loads(body)
    elif mode == "prose":
        text = json.loads(body)["choices"][0]["message"]["content"]
        with pytest.raises(ValueError):
            json.loads(text)
    else:
        assert json.loads(body)["error"]["message"]


def test_fail_timeout_never_answers_until_stopped():
    with FakeOpenAIServer(fail="timeout") as server:
        with pytest.raises(OSError):  # socket.timeout / URLError
            post(server, timeout=0.3)
    assert server.requests[0].outcome == "hang"


def test_scripted_steps_come_before_the_fail_mode_and_modes_are_checked():
    with FakeOpenAIServer(fail="500") as server:
        server.script(reply("first"))
        assert [post(server)[0] for _ in range(2)] == [200, 500]
    with pytest.raises(ValueError, match="401"):
        FakeOpenAIServer(fail="503")


def test_free_port_has_nothing_listening():
    from maev_kit.testing import free_port

    with socket.socket() as s:
        s.settimeout(2)
        assert s.connect_ex(("127.0.0.1", free_port())) != 0
