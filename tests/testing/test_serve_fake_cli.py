"""`maev serve-fake` serves until stopped."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request

from click.testing import CliRunner

from maev_kit.cli._serve_fake import serve_fake
from maev_kit.judges import RetentionJudge, answer_retention_prompt
from maev_kit.retention import RetentionItem


def test_serve_fake_serves_until_interrupted():
    proc = subprocess.Popen([sys.executable, "-m", "maev_kit.cli._serve_fake", "--port", "0",
                             "--latency", "0.01"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        messages = RetentionJudge("v1").build_messages([RetentionItem(
            "c1/h0/f1", "c1", 0, "f1", "Account number is ACCT-4471", (), ())])
        req = urllib.request.Request(url + "/chat/completions", method="POST",
                                     data=json.dumps({"model": "m", "messages": messages}).encode())
        with urllib.request.urlopen(req, timeout=10) as resp:
            status = resp.status
            text = json.loads(resp.read())["choices"][0]["message"]["content"]
        assert text == answer_retention_prompt(messages)
        with urllib.request.urlopen(url + "/models", timeout=10) as resp:
            models = json.loads(resp.read())
        assert proc.poll() is None  # still serving
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert status == 200
    assert models["object"] == "list"
    assert "stopped after" in out and "Traceback" not in err


def test_serve_fake_reports_a_busy_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = CliRunner().invoke(serve_fake, ["--port", str(port)])
    assert result.exit_code != 0 and "another --port" in result.output


def test_serve_fake_fail_answers_every_request_with_that_failure():
    import urllib.error

    proc = subprocess.Popen([sys.executable, "-m", "maev_kit.cli._serve_fake", "--port", "0",
                             "--fail", "401"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/v1", line).group(0)
        codes = []
        for _ in range(2):
            req = urllib.request.Request(url + "/chat/completions", method="POST", data=json.dumps(
                {"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode())
            try:
                urllib.request.urlopen(req, timeout=10)
            except urllib.error.HTTPError as exc:
                codes.append(exc.code)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "failing every request: 401" in line
    assert codes == [401, 401] and "Traceback" not in err


def test_serve_fake_refuses_an_unknown_failure_mode():
    result = CliRunner().invoke(serve_fake, ["--port", "0", "--fail", "503"])
    assert result.exit_code == 2 and "401" in result.output
