"""MLflow gets its own place (issue #35 B): the tracking URI is checked before anything runs.

A scheme MLflow does not take, a file that is not SQLite, a maev label store or another
application's database, a server that does not answer: one line, exit 2, nothing scored,
nothing written — and the file named comes out byte for byte. Real files, real sockets.
"""

from __future__ import annotations

import hashlib
import socket
import sqlite3
import time
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from cli_helpers import run_cli  # noqa: E402

from maev_kit.errors import InputError  # noqa: E402
from maev_kit.labels import LabelStore  # noqa: E402
from maev_kit.reporting._mlflow import check_tracking_uri, log_to_mlflow  # noqa: E402
from maev_kit.testing import free_port  # noqa: E402


def snapshot(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a label store, another application's database and a text file."""
    monkeypatch.chdir(tmp_path)
    with LabelStore("sqlite:///labels.db") as store:
        store.add("c-001/h0/f1", "lost", annotator="ana")
    conn = sqlite3.connect(tmp_path / "labels.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")  # one file, as a store at rest
    conn.close()
    conn = sqlite3.connect(tmp_path / "app.db")
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    (tmp_path / "notes.db").write_text("not a database\n")
    return tmp_path


def _listening_nowhere() -> int:
    port = free_port()
    with socket.socket() as s:  # nothing listens there: a connection is refused at once
        assert s.connect_ex(("127.0.0.1", port)) != 0
    return port


@pytest.mark.parametrize("uri, message", [
    ("ftp://example.org/runs", "MLflow does not take the scheme 'ftp'"),
    ("mlflow.db", "MLflow does not take the scheme"),
    ("sqlite:///notes.db", "notes.db is not a SQLite database"),
    ("sqlite:///labels.db", "labels.db is a maev label store; MLflow would write its tables"),
    ("sqlite:///app.db", r"app.db has 1 table and is not an MLflow tracking store \(customers\)"),
    ("sqlite:///", "a SQLite tracking store is sqlite:///FILE"),
])
def test_a_uri_mlflow_cannot_use_or_must_not_write_is_refused(folder, uri, message):
    before = snapshot(folder)
    with pytest.raises(InputError, match=message) as e:
        check_tracking_uri(uri)
    assert "\n" not in str(e.value)
    assert snapshot(folder) == before


def test_servers_that_refuse_are_refused_at_once(folder):
    port = _listening_nowhere()
    for uri, message in ((f"http://127.0.0.1:{port}", "the tracking server did not answer"),
                         (f"postgresql+psycopg://ana:s3cret@127.0.0.1:{port}/mlflow",
                          "the database did not answer the check")):
        t0 = time.monotonic()
        with pytest.raises(InputError, match=message) as e:
            check_tracking_uri(uri)
        assert time.monotonic() - t0 < 15
        assert "s3cret" not in str(e.value)


def test_a_server_that_accepts_but_never_answers_is_given_a_few_seconds(folder):
    with socket.socket() as server:  # listens, never replies
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(InputError, match="did not answer within 1 s"):
            check_tracking_uri(f"http://127.0.0.1:{port}", timeout=1)
        assert time.monotonic() - t0 < 5


def test_an_mlflow_store_and_a_new_file_pass(folder):
    check_tracking_uri("sqlite:///new/mlflow.db")
    check_tracking_uri("databricks")
    from mlflow.tracking import MlflowClient

    MlflowClient(tracking_uri="sqlite:///ml.db").search_experiments()  # MLflow makes its store
    check_tracking_uri("sqlite:///ml.db")


def test_log_to_mlflow_refuses_a_label_store_before_writing(folder):
    before = snapshot(folder)
    with pytest.raises(InputError, match="is a maev label store"):
        log_to_mlflow(object(), tracking_uri="sqlite:///labels.db", report_html="<html/>")
    assert snapshot(folder) == before


def test_cli_mlflow_into_a_label_store_exits_2_before_scoring(folder, capsys):
    before = snapshot(folder)
    t0 = time.monotonic()
    code, out, err = run_cli(["score", "support_desk", "--mlflow=sqlite:///labels.db",
                              "--no-progress"], capsys)
    assert code == 2 and out == ""
    assert err.startswith("error: MLflow sqlite:///labels.db: labels.db is a maev label store")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert time.monotonic() - t0 < 15
    assert snapshot(folder) == before
    code, out, err = run_cli(["report", "support_desk", "--mlflow",
                              f"http://127.0.0.1:{_listening_nowhere()}"], capsys)
    assert code == 2 and "did not answer" in err and snapshot(folder) == before


def test_a_server_failing_every_request_costs_at_most_15_seconds(folder):
    """It answers the check (HTTP 503), then fails every API call: MLflow's retries are bounded
    (its defaults would retry for minutes); the run is not logged, one line says why."""
    import threading
    import warnings
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from maev_kit.evaluation import evaluate
    from maev_kit.reporting._mlflow import MlflowLoggingError

    class Unavailable(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(503)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate("support_desk", judge=None, progress=False, n_resamples=100)
    t0 = time.monotonic()
    try:
        # mlflow < 3.18 retries a 503 to "Max retries exceeded"; 3.18 names the 503 at once
        with pytest.raises(MlflowLoggingError, match="Max retries exceeded|503"):
            log_to_mlflow(result, tracking_uri=f"http://127.0.0.1:{server.server_address[1]}",
                          report_html="<html/>")
    finally:
        server.shutdown()
    assert time.monotonic() - t0 <= 15
    import os

    assert "MLFLOW_HTTP_REQUEST_MAX_RETRIES" not in os.environ  # put back as it was
