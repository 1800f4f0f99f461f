"""FakeOpenAIServer's batch API over plain HTTP: upload, create, poll, download, faults."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from maev_kit.testing import FakeOpenAIServer, http_error


def call(server, method, path, body=None, headers=None, timeout=5):
    req = urllib.request.Request(server.base_url + path, data=body, method=method,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def upload(server, lines):
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"in.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n").encode() \
        + data + f"\r\n--{boundary}--\r\n".encode()
    status, raw = call(server, "POST", "/files", body,
                       {"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert status == 200, raw
    return json.loads(raw)


def create(server, file_id):
    status, raw = call(server, "POST", "/batches", json.dumps({
        "input_file_id": file_id, "endpoint": "/v1/chat/completions",
        "completion_window": "24h"}).encode(), {"Content-Type": "application/json"})
    return status, json.loads(raw)


def wait(server, batch_id, limit=5.0):
    seen = []
    end = time.monotonic() + limit
    while time.monotonic() < end:
        status, raw = call(server, "GET", f"/batches/{batch_id}")
        assert status == 200
        batch = json.loads(raw)
        if not seen or seen[-1] != batch["status"]:
            seen.append(batch["status"])
        if batch["status"] in ("completed", "failed", "expired", "cancelled"):
            return batch, seen
        time.sleep(0.02)
    raise AssertionError(f"batch {batch_id} never ended: {seen}")


def content(server, file_id):
    if file_id is None:
        return {}
    status, raw = call(server, "GET", f"/files/{file_id}/content")
    assert status == 200
    return {x["custom_id"]: x for x in map(json.loads, raw.decode().splitlines())}


def lines(n):
    return [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
             "body": {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}]}}
            for i in range(n)]


def test_a_batch_runs_through_its_states_and_answers_every_line_with_the_responder():
    with FakeOpenAIServer(responder=lambda body: body["messages"][0]["content"].upper(),
                          batch_delay=0.2) as server:
        f = upload(server, lines(3))
        assert f["purpose"] == "batch" and f["bytes"] > 0
        status, batch = create(server, f["id"])
        assert status == 200 and batch["status"] == "validating"
        started = time.monotonic()
        done, seen = wait(server, batch["id"])
        assert time.monotonic() - started >= 0.15
        out = content(server, done["output_file_id"])
    assert seen[0] == "validating" and seen[-1] == "completed" and "in_progress" in seen
    assert done["request_counts"] == {"total": 3, "completed": 3, "failed": 0}
    assert done["error_file_id"] is None
    assert {cid: x["response"]["body"]["choices"][0]["message"]["content"]
            for cid, x in out.items()} == {"r0": "Q0", "r1": "Q1", "r2": "Q2"}
    assert all(x["response"]["status_code"] == 200 for x in out.values())
    assert [b.custom_ids for b in server.batches] == [["r0", "r1", "r2"]]
    # the batch's lines are not chat-completion requests
    assert [r.path for r in server.requests] == ["/v1/files", "/v1/batches"]


def test_failed_lines_by_id_fail_once_and_scripted_errors_go_to_the_error_file():
    with FakeOpenAIServer(responder=lambda body: "ok", batch_delay=0.05,
                          batch_fail_ids={"r1"}) as server:
        server.script("first", http_error(429))
        f = upload(server, lines(4))
        done, _ = wait(server, create(server, f["id"])[1]["id"])
        out, err = content(server, done["output_file_id"]), content(server, done["error_file_id"])
        again, _ = wait(server, create(server, upload(server, lines(2))["id"])[1]["id"])
    assert sorted(out) == ["r0", "r3"] and sorted(err) == ["r1", "r2"]
    assert out["r0"]["response"]["body"]["choices"][0]["message"]["content"] == "first"
    assert err["r1"]["error"]["code"] == "server_error"
    assert err["r2"]["response"]["status_code"] == 429
    assert done["request_counts"] == {"total": 4, "completed": 2, "failed": 2}
    assert again["request_counts"] == {"total": 2, "completed": 2, "failed": 0}  # r1 once only


def test_fail_rate_draws_per_batch_and_line():
    with FakeOpenAIServer(responder=lambda body: "ok", batch_delay=0.0,
                          batch_fail_rate=0.5) as server:
        counts = [wait(server, create(server, upload(server, lines(40))["id"])[1]["id"])[0]
                  ["request_counts"] for _ in range(2)]
        server.batch_fail_rate = 1.0
        all_failed = wait(server, create(server, upload(server, lines(5))["id"])[1]["id"])[0]
    assert all(5 < c["failed"] < 35 and c["completed"] + c["failed"] == 40 for c in counts)
    assert all_failed["request_counts"]["failed"] == 5 and all_failed["output_file_id"] is None


def test_expired_and_failed_batches():
    with FakeOpenAIServer(responder=lambda body: "ok", batch_delay=0.05, batch_expire=1,
                          batch_fail=1) as server:
        failed, _ = wait(server, create(server, upload(server, lines(4))["id"])[1]["id"])
        expired, _ = wait(server, create(server, upload(server, lines(4))["id"])[1]["id"])
        out = content(server, expired["output_file_id"])
        err = content(server, expired["error_file_id"])
        normal, _ = wait(server, create(server, upload(server, lines(4))["id"])[1]["id"])
    assert failed["status"] == "failed" and failed["output_file_id"] is None
    assert failed["errors"]["data"][0]["message"]
    assert expired["status"] == "expired" and sorted(out) == ["r0", "r1"]
    assert {x["error"]["code"] for x in err.values()} == {"batch_expired"} and len(err) == 2
    assert normal["status"] == "completed"
    assert [b.status for b in server.batches] == ["failed", "expired", "completed"]


def test_bad_batch_requests_are_400_or_404_and_401_mode_refuses_uploads():
    with FakeOpenAIServer(batch_delay=0.0) as server:
        assert create(server, "file-nope")[0] == 400
        bad = upload(server, [{"no_custom_id": 1}])
        assert create(server, bad["id"])[0] == 400
        dup = upload(server, lines(1) + lines(1))
        status, body = create(server, dup["id"])
        assert status == 400 and "unique" in body["error"]["message"]
        assert call(server, "GET", "/batches/batch_nope")[0] == 404
        assert call(server, "GET", "/files/file-nope/content")[0] == 404
        server.fail = "401"
        assert call(server, "POST", "/files", b"x", {"Content-Type": "text/plain"})[0] == 401
    with pytest.raises(ValueError, match="batch_fail_rate"):
        FakeOpenAIServer(batch_fail_rate=2)
    with pytest.raises(ValueError, match="batch_expire"):
        FakeOpenAIServer(batch_expire=-1)


def test_serve_fake_batch_flags():
    proc = subprocess.Popen([sys.executable, "-m", "maev_kit.cli._serve_fake", "--port", "0",
                             "--batch-delay", "0.05", "--batch-expire", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)

        class Remote:
            base_url = url

        first, _ = wait(Remote, create(Remote, upload(Remote, lines(2))["id"])[1]["id"])
        second, _ = wait(Remote, create(Remote, upload(Remote, lines(2))["id"])[1]["id"])
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "batches end after 0.05 s" in line and "first 1 expire" in line
    assert (first["status"], second["status"]) == ("expired", "completed")
    assert "Traceback" not in err
