"""A real JupyterLab in headless Chromium: label with the mouse and the keyboard.

Needs ``/usr/bin/chromium`` (Debian package) and the ``playwright`` Python package; never
``playwright install``. Skipped with a reason when either is missing — unless ``CI`` or
``MAEV_REQUIRE_BROWSER`` is set, where a missing browser is a failure, not a skip.
Set ``MAEV_UPDATE_DOCS_SCREENSHOT=1`` to also refresh ``docs/labeler.png``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(240)]

CHROMIUM = "/usr/bin/chromium"
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROME_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--disable-sync", "--no-first-run",
               "--disable-quic", "--disable-dev-shm-usage"]
XSS = '<img src=x onerror="window.__xss=1">'

NOTEBOOK_CODE = f"""\
from maev_kit.labels import LabelStore
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message
from maev_kit.widgets import Labeler

before = (Message("user", "My account is ACCT-4471, card ends 9921.", 0, True),
          Message("triage", "Thanks, passing you to billing.", 1))
items = [
    RetentionItem("c-001/h0/f1", "c-001", 0, "f1", "Account number is ACCT-4471", before,
                  (Message("billing", {XSS!r} + " Which account is it?", 3),),
                  "triage", "billing"),
    RetentionItem("c-001/h0/f2", "c-001", 0, "f2", "Card ends 9921", before,
                  (Message("billing", "The card ending 9921 is blocked.", 3),),
                  "triage", "billing"),
    RetentionItem("c-002/h0/f1", "c-002", 0, "f1", "Order is #5512", before,
                  (Message("shipping", "Order #5512 left the depot.", 3),),
                  "triage", "shipping"),
    RetentionItem("c-003/h0/f1", "c-003", 0, "f1", "Name is Dana Smith", before,
                  (Message("billing", "Thanks Dana, what is your name again?", 3),),
                  "triage", "billing"),
]
labeler = Labeler(items, LabelStore("labels.jsonl"), annotator="ana", order="given",
                  verdicts={{"c-001/h0/f1": "lost"}})
labeler
"""


def _notebook() -> dict:
    return {
        "cells": [{"cell_type": "code", "execution_count": None, "id": "labeler",
                   "metadata": {}, "outputs": [], "source": NOTEBOOK_CODE}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def _require_browser():
    missing = None
    if not os.path.exists(CHROMIUM):
        missing = f"{CHROMIUM} not installed (apt-get install -y chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "the `playwright` Python package is not installed"
    if missing:
        if os.environ.get("CI") or os.environ.get("MAEV_REQUIRE_BROWSER"):
            pytest.fail(f"browser test required here but {missing}")
        pytest.skip(missing)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, token: str, path: str, method: str = "GET"):
    req = urllib.request.Request(f"{base}{path}", method=method,
                                 headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
        return r.status, (json.loads(body) if body else None)


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


@pytest.fixture
def jupyterlab(tmp_path):
    _require_browser()
    root = tmp_path / "root"
    root.mkdir()
    settings = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "PYTHONUNBUFFERED": "1"}
    log = open(tmp_path / "jupyterlab.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--allow-root", "--LabApp.expose_app_in_browser=True",
         "--LabApp.news_url=", f"--LabServerApp.user_settings_dir={tmp_path / 'settings'}",
         f"--LabServerApp.workspaces_dir={tmp_path / 'workspaces'}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("JupyterLab exited:\n" +
                                   (tmp_path / "jupyterlab.log").read_text()[-3000:])
            try:
                if _api(base, token, "/api/status")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("JupyterLab did not answer /api/status within 60 s")
            time.sleep(0.25)
        yield {"base": base, "token": token, "root": root, "log": tmp_path / "jupyterlab.log"}
    finally:
        kids = _children(proc.pid)  # kernels run in their own session: stop them by PID
        try:
            for k in _api(base, token, "/api/kernels")[1] or []:
                _api(base, token, f"/api/kernels/{k['id']}", "DELETE")
            _api(base, token, "/api/shutdown", "POST")
            proc.wait(timeout=15)
        except Exception:  # noqa: BLE001 - fall back to signals below
            pass
        for pid in [proc.pid, *kids]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)
        log.close()


# The notebook open in JupyterLab: its widget in the shell (a JavaScript expression).
NOTEBOOK = "window.jupyterapp.shell.currentWidget"


@contextlib.contextmanager
def notebook_page(jupyterlab, name: str):
    """A headless Chromium page on notebook ``name`` (in the server's root), once its kernel
    is up; the browser is closed after the block."""
    from playwright.sync_api import sync_playwright

    url = f"{jupyterlab['base']}/lab/tree/{name}?token={jupyterlab['token']}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(url)
            page.wait_for_function(
                f"() => window.jupyterapp && {NOTEBOOK} && {NOTEBOOK}.sessionContext"
                f" && {NOTEBOOK}.sessionContext.session"
                f" && {NOTEBOOK}.sessionContext.session.kernel", timeout=90_000)
            yield page
        finally:
            browser.close()


def _wait_lines(path: Path, n: int, timeout: float = 30) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
            if len(lines) >= n:
                return lines
        time.sleep(0.1)
    raise AssertionError(f"expected {n} label line(s) in {path.name} within {timeout} s; got "
                         f"{path.read_text() if path.exists() else 'no file'}")


def test_label_with_mouse_and_keyboard_in_jupyterlab(jupyterlab):
    root: Path = jupyterlab["root"]
    (root / "labeler.ipynb").write_text(json.dumps(_notebook()))
    labels = root / "labels.jsonl"
    ARTIFACTS.mkdir(exist_ok=True)
    with notebook_page(jupyterlab, "labeler.ipynb") as page:
        page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        labeler = page.locator(".maev-labeler")
        labeler.wait_for(state="visible", timeout=90_000)
        page.locator(".maev-keys-hint").wait_for(state="visible", timeout=30_000)
        # the hostile message is on screen as text, and did not run
        assert 'onerror="window.__xss=1"' in labeler.inner_text()
        assert page.evaluate("() => typeof window.__xss") == "undefined"

        page.screenshot(path=str(ARTIFACTS / "labeler-before.png"))
        labeler.get_by_role("button", name="contradicted", exact=True).click()
        lines = _wait_lines(labels, 1)
        assert (lines[0]["item_id"], lines[0]["label"]) == ("c-001/h0/f1", "contradicted")
        # the widget acknowledged it and moved on to item 2
        page.get_by_text("saved ✓ c-001/h0/f1 → contradicted").wait_for(timeout=30_000)
        page.get_by_text("Card ends 9921", exact=True).wait_for(timeout=30_000)

        # blind: the judge's verdict on item 1 shows only now, and only when asked for
        assert "judge says" not in labeler.inner_text()
        labeler.get_by_role("button", name="reveal judge verdict").click()
        page.get_by_text("judge says").wait_for(timeout=30_000)
        assert "you said contradicted" in labeler.inner_text()
        labeler.get_by_text("before the handoff").click()  # open the collapsed messages
        labeler.get_by_text("My account is ACCT-4471, card ends 9921.").wait_for()
        labeler.screenshot(path=str(ARTIFACTS / "labeler-widget.png"))

        page.keyboard.press("1")  # the focus is on a button inside the labeler
        lines = _wait_lines(labels, 2)
        assert [(x["item_id"], x["label"], x["annotator"]) for x in lines] == [
            ("c-001/h0/f1", "contradicted", "ana"), ("c-001/h0/f2", "retained", "ana")]
        page.get_by_text("Order is #5512", exact=True).wait_for(timeout=30_000)
        # the key did not reach JupyterLab: "1" in command mode would make a heading cell
        cell_type = page.evaluate(
            f"() => {NOTEBOOK}.content.widgets[0].model.type")
        assert cell_type == "code"
        assert page.evaluate("() => typeof window.__xss") == "undefined"

        # a click anywhere in the labeler (here: the fact) gives it the keyboard
        page.get_by_text("Order is #5512", exact=True).click()
        page.keyboard.press("s")
        lines = _wait_lines(labels, 3)
        assert (lines[2]["item_id"], lines[2]["label"]) == ("c-002/h0/f1", "skip")
        page.get_by_text("Name is Dana Smith", exact=True).wait_for(timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / "labeler.png"))

        # digits typed into the note are text, not shortcuts; and the whole note is saved
        # even when the kernel is busy while it is typed (ipywidgets holds a model's updates
        # back while one is in flight: a per-keystroke sync let the click overtake them)
        note = labeler.get_by_placeholder("optional note")
        note.click()
        page.evaluate(f"() => {NOTEBOOK}.sessionContext.session"
                      ".kernel.requestExecute({code: 'import time; time.sleep(3)'})")
        note.press_sequentially("asked 1 2 3")
        labeler.get_by_role("button", name="lost", exact=True).click()
        lines = _wait_lines(labels, 4)
        assert (lines[3]["item_id"], lines[3]["label"], lines[3]["note"]) == (
            "c-003/h0/f1", "lost", "asked 1 2 3")
        page.get_by_text("All 4 items are labeled", exact=False).wait_for(timeout=30_000)
        assert len(_wait_lines(labels, 4)) == 4
        assert page.evaluate(
            f"() => {NOTEBOOK}.content.widgets.length") == 1
        assert page.evaluate("() => typeof window.__xss") == "undefined"
    if os.environ.get("MAEV_UPDATE_DOCS_SCREENSHOT"):
        shutil.copy(ARTIFACTS / "labeler-widget.png", REPO / "docs" / "labeler.png")
