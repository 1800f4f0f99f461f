"""Log an :class:`~maev_kit.evaluation.EvaluationResult` to MLflow: metrics, params, the report.

One MLflow run per call, written through :class:`mlflow.tracking.MlflowClient` (never the
fluent API: no global tracking URI or active run is changed, and no command line is recorded).

- **metrics**: every aggregate's ``mean`` as ``<metric>``, its interval as
  ``<metric>.ci_low`` / ``<metric>.ci_high`` (NaN left out: an n/a metric logs nothing), the
  PPI++ corrected rates when ``result.estimates`` has them (``ppi.<rate>`` overall,
  ``ppi.<rate>.<from>_to_<to>`` per agent pair, with their CIs), ``n_conversations`` and
  ``n_items``;
- **params**: the judge (name, version, model, prompt, prompt sha256), the judge card's sha256
  when one was used, the labeled set (name, version, hash, labels hash), split, the n/a mode,
  the facts mode and the maev-kit version. Never a URL nor a secret: a value holding ``://``
  is left out;
- **artifact**: the self-contained HTML report, ``report.html`` (built with
  :func:`~maev_kit.reporting.report` unless given).

The tracking store defaults to ``sqlite:///mlflow.db`` in the current folder (MLflow 3.x
refuses a plain ``file:`` store unless ``MLFLOW_ALLOW_FILE_STORE=true``). mlflow is an optional
extra (``pip install 'maev-kit[mlflow]'``), imported only when a run is logged. See
docs/mlflow.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError, MaevError

__all__ = ["DEFAULT_TRACKING_URI", "MlflowLoggingError", "check_tracking_uri", "log_to_mlflow",
           "result_metrics", "result_params", "shown_tracking_uri"]

#: Where runs go when no tracking URI is given: a SQLite tracking store in the current folder.
DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
#: MLflow's limit on a param value is 6000 characters (500 before 2.13): stay under both.
_MAX_PARAM = 500
_BAD_NAME = re.compile(r"[^\w.\- /]")
#: Seconds a tracking server or database has to answer the check before anything runs.
CHECK_TIMEOUT = 5.0
#: Schemes (before any ``+driver``) MLflow takes as a tracking store.
_SQL_SCHEMES = ("sqlite", "postgresql", "mysql", "mssql")
_SCHEMES = (*_SQL_SCHEMES, "http", "https", "file", "databricks")
#: The tables that mark a database as MLflow's tracking store.
_MLFLOW_MARKS = frozenset({"alembic_version", "experiments", "runs"})
#: HTTP retries while logging, unless the MLFLOW_HTTP_REQUEST_* variables say otherwise:
#: two retries after 1 and 2 s, 4 s per request: a server that fails every request costs
#: ≤ 15 s (MLflow's own defaults retry for minutes).
_HTTP_LIMITS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
                "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "4"}


class MlflowLoggingError(MaevError):
    """The run could not be logged to MLflow (the store refused it, or is unreachable)."""


def shown_tracking_uri(uri: str) -> str:
    """The tracking URI as it may be shown: any password replaced by ``***``.

    >>> shown_tracking_uri("postgresql://ml:s3cret@db.example/mlflow")
    'postgresql://ml:***@db.example/mlflow'
    >>> shown_tracking_uri("sqlite:///mlflow.db")
    'sqlite:///mlflow.db'
    """
    from maev_kit.labels.internal import redact_url

    return redact_url(uri) if "://" in uri else uri


def _metric_name(*parts: str) -> str:
    return ".".join(_BAD_NAME.sub("_", p.replace(" → ", "_to_")) for p in parts)


def _finite(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def result_metrics(result: Any) -> dict[str, float]:
    """The metrics :func:`log_to_mlflow` logs: name → value (NaN left out)."""
    out: dict[str, float] = {}
    for row in result.aggregates.to_dict(orient="records"):
        for col, suffix in (("mean", ()), ("ci_low", ("ci_low",)), ("ci_high", ("ci_high",))):
            v = _finite(row.get(col))
            if v is not None:
                out[_metric_name(str(row["metric"]), *suffix)] = v
    est = result.estimates
    if est is not None and len(est) and "method" in est.columns:
        for row in est[est["method"] == "ppi++"].to_dict(orient="records"):
            scope = () if row["scope"] == "all" else (str(row["scope"]),)
            for col, suffix in (("estimate", ()), ("ci_low", ("ci_low",)),
                                ("ci_high", ("ci_high",))):
                v = _finite(row.get(col))
                if v is not None:
                    out[_metric_name("ppi", str(row["rate"]), *scope, *suffix)] = v
    for key in ("n_conversations", "n_items"):
        v = _finite(result.provenance.get(key))
        if v is not None:
            out[key] = v
    return out


def _card_hash(card: Any) -> str | None:
    if not card:
        return None
    text = json.dumps(card, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def result_params(result: Any) -> dict[str, str]:
    """The params :func:`log_to_mlflow` logs: what produced the numbers, never a URL/secret."""
    from maev_kit.internal import __version__

    judge = result.judge or {}
    prov = result.provenance or {}
    ls = prov.get("labeled_set") or {}
    facts = prov.get("facts")
    raw: dict[str, Any] = {
        "judge.name": judge.get("name"), "judge.version": judge.get("version"),
        "judge.model": judge.get("model"), "judge.prompt": judge.get("prompt"),
        "judge.prompt_sha256": judge.get("prompt_sha256"),
        "judge_card.sha256": _card_hash(prov.get("judge_card")),
        "labeled_set.name": ls.get("name"), "labeled_set.version": ls.get("version"),
        "labeled_set.hash": ls.get("hash"), "labeled_set.labels_hash": ls.get("labels_hash"),
        "split": prov.get("split"), "not_applicable": prov.get("not_applicable"),
        "facts.mode": facts.get("mode") if isinstance(facts, dict) else None,
        "maev_kit.version": __version__}
    out: dict[str, str] = {}
    for key, value in raw.items():
        if value is None or value == "":
            continue
        text = str(value)
        if "://" in text:  # a URL (maybe with a password) never becomes a param
            continue
        out[key] = text if len(text) <= _MAX_PARAM else text[:_MAX_PARAM - 1] + "…"
    return out


def check_tracking_uri(uri: str, *, timeout: float = CHECK_TIMEOUT) -> None:
    """Refuse a tracking URI MLflow cannot use, or that is not MLflow's to write, before any
    work: an :class:`~maev_kit.errors.InputError` (one line, password hidden), nothing written.

    - a scheme MLflow does not take (it takes ``sqlite``, ``postgresql``, ``mysql``,
      ``mssql`` — with an optional ``+driver`` —, ``http(s)``, ``file`` and ``databricks``);
    - ``sqlite:///FILE``: a file that is not a SQLite database, a maev label store, or a
      database with any table that is not MLflow's (inspected read-only, left byte for byte);
    - a database server or an ``http(s)`` tracking server that does not answer within
      ``timeout`` seconds (refused: at once), and a database that holds tables of another
      application.

    >>> check_tracking_uri("ftp://example.org/runs")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: MLflow ftp://example.org/runs: MLflow does not take the scheme 'ftp'; use sqlite:///mlflow.db, http://host:5000, postgresql://user@host/db, mysql://…, file:///folder or databricks
    """
    shown = f"MLflow {shown_tracking_uri(uri)}"
    scheme = uri.split("://", 1)[0].split("+", 1)[0].lower() if "://" in uri else uri.lower()
    if scheme not in _SCHEMES or ("://" not in uri and scheme != "databricks"):
        raise InputError(f"{shown}: MLflow does not take the scheme {scheme!r}; use "
                         "sqlite:///mlflow.db, http://host:5000, postgresql://user@host/db, "
                         "mysql://…, file:///folder or databricks")
    if scheme == "sqlite":
        _check_sqlite_store(uri, shown)
    elif scheme in _SQL_SCHEMES:
        _check_sql_server(uri, shown, timeout)
    elif scheme in ("http", "https"):
        _check_http_server(uri, shown, timeout)


def _check_sqlite_store(uri: str, shown: str) -> None:
    """``sqlite:///FILE``: absent, empty, or a SQLite database holding MLflow's tables only."""
    from maev_kit.labels.internal import SQLITE_HEADER

    rest = uri.split("://", 1)[1]
    if not rest.startswith("/") or rest in ("/", "/:memory:") or rest.startswith("/?"):
        raise InputError(f"{shown}: a SQLite tracking store is sqlite:///FILE (e.g. "
                         "sqlite:///mlflow.db)")
    path = Path(rest[1:].split("?", 1)[0])
    if path.is_dir():
        raise InputError(f"{shown}: {path} is a folder; name the database file, e.g. "
                         f"sqlite:///{path / 'mlflow.db'}")
    try:
        head = path.read_bytes()[:16] if path.is_file() else b""
    except OSError as e:
        raise InputError(f"{shown}: cannot read {path}: {e.strerror or e}") from None
    if not head:
        return
    if head != SQLITE_HEADER:
        raise InputError(f"{shown}: {path} is not a SQLite database; give MLflow its own "
                         "file, e.g. sqlite:///mlflow.db")
    _check_tables(_sqlite_tables(path, shown), shown, str(path))


def _sqlite_tables(path: Path, shown: str) -> list[str]:
    import sqlite3

    wal = path.with_name(path.name + "-wal").exists()
    uri = path.resolve().as_uri() + ("?mode=ro" if wal else "?mode=ro&immutable=1")
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=CHECK_TIMEOUT)
        try:
            return [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
                if not str(r[0]).startswith("sqlite_")]
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise InputError(f"{shown}: cannot read {path} as SQLite: {e}") from None


def _check_tables(tables: list[str], shown: str, where: str) -> None:
    """A database MLflow may write: no table, or MLflow's (its marks, no maev label store)."""
    if not tables:
        return
    if "maev_meta" in tables or "maev_labels" in tables:
        raise InputError(f"{shown}: {where} is a maev label store; MLflow would write its "
                         "tables into it — give MLflow its own database, e.g. "
                         "sqlite:///mlflow.db (nothing was written)")
    if not _MLFLOW_MARKS <= set(tables):
        n = len(tables)
        names = ", ".join(sorted(tables)[:5]) + (", …" if n > 5 else "")
        raise InputError(f"{shown}: {where} has {n} table{'s' if n != 1 else ''} and is not an "
                         f"MLflow tracking store ({names}); give MLflow its own database, e.g. "
                         "sqlite:///mlflow.db (nothing was written)")


def _check_sql_server(uri: str, shown: str, timeout: float) -> None:
    """A database server answers within ``timeout`` and holds no tables but MLflow's."""
    try:
        import sqlalchemy
    except ImportError:  # pragma: no cover - mlflow brings it
        return
    scheme = uri.split("://", 1)[0].lower()
    args: dict[str, Any] = {}
    if scheme.startswith(("postgresql", "mysql")):
        args["connect_timeout"] = max(1, int(math.ceil(timeout)))
    try:
        engine = sqlalchemy.create_engine(uri, connect_args=args, poolclass=sqlalchemy.NullPool)
        try:
            tables = sqlalchemy.inspect(engine).get_table_names()
        finally:
            engine.dispose()
    except ImportError as e:
        raise InputError(f"{shown}: the database driver is not installed ({e.name or e})"
                         ) from None
    except Exception as e:  # sqlalchemy errors: unreachable, refused, unknown database
        raise InputError(f"{shown}: the database did not answer the check: "
                         f"{_first_line(e, uri)} (nothing was run)") from None
    _check_tables(tables, shown, "the database")


def _check_http_server(uri: str, shown: str, timeout: float) -> None:
    """An MLflow tracking server answers (any HTTP status) within ``timeout`` seconds."""
    import urllib.error
    import urllib.request

    url = uri.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=timeout):  # noqa: S310 - the user's server
            pass
    except urllib.error.HTTPError:
        return  # it answered (a proxy's 401/404 is still an answer)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise InputError(f"{shown}: the tracking server did not answer within {timeout:g} s "
                         f"({_first_line(reason, uri)}); start it or fix the URI (nothing was "
                         "run)") from None


def _first_line(e: object, uri: str) -> str:
    text = str(e).replace(uri, shown_tracking_uri(uri)).strip()
    return " ".join(text.splitlines()[0].split()) if text else type(e).__name__


def _import_mlflow() -> Any:
    try:
        import mlflow
    except ImportError:
        raise InputError("MLflow is not installed: pip install 'maev-kit[mlflow]'") from None
    return mlflow


def _experiment_id(client: Any, name: str, tracking_uri: str) -> str:
    """The experiment's id, created when missing; with a ``sqlite:///`` store, artifacts go to
    ``mlartifacts/`` beside the database file (as ``mlflow server`` does), not into the cwd."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return str(exp.experiment_id)
    location = None
    if tracking_uri.startswith("sqlite:///"):
        db = Path(tracking_uri[len("sqlite:///"):])
        location = (db.resolve().parent / "mlartifacts").as_uri()
    return str(client.create_experiment(name, artifact_location=location))


def log_to_mlflow(result: Any, *, tracking_uri: str | None = None,
                  experiment: str = "maev-kit", run_name: str | None = None,
                  report_html: Any = None) -> str:
    """Log ``result`` as one MLflow run; returns the run id.

    Parameters
    ----------
    result : EvaluationResult
    tracking_uri : str, optional
        The MLflow tracking store; default ``sqlite:///mlflow.db`` in the current folder.
    experiment : str
        The experiment (created when missing).
    run_name : str, optional
        Default: ``<labeled set or "traces"> · <judge>``.
    report_html : str or Report, optional
        The HTML report to attach; default ``report(result)``.

    Raises
    ------
    InputError
        mlflow is not installed (``pip install 'maev-kit[mlflow]'``), or the tracking URI is
        one MLflow cannot use or must not write (:func:`check_tracking_uri`: checked first,
        nothing written).
    MlflowLoggingError
        The store refused the run or could not be reached (the message shows the URI with any
        password as ``***``); a run that was created is marked FAILED.
    """
    uri = tracking_uri or DEFAULT_TRACKING_URI
    check_tracking_uri(uri)
    mlflow = _import_mlflow()
    if report_html is None:
        from maev_kit.reporting import report

        report_html = report(result)
    html = getattr(report_html, "html", report_html)
    metrics, params = result_metrics(result), result_params(result)
    ls = (result.provenance or {}).get("labeled_set") or {}
    name = run_name or f"{ls.get('name') or 'traces'} · {params.get('judge.name', 'no judge')}"
    now = int(time.time() * 1000)
    with _http_limits():
        return _log_run(mlflow, uri, experiment, name, metrics, params, html, now)


def _log_run(mlflow: Any, uri: str, experiment: str, name: str, metrics: dict[str, float],
             params: dict[str, str], html: Any, now: int) -> str:
    """Create the run, log its metrics, params and report, and end it (FAILED on error)."""
    from mlflow.entities import Metric, Param

    run_id = None
    try:
        client = mlflow.tracking.MlflowClient(tracking_uri=uri)
        run = client.create_run(_experiment_id(client, experiment, uri), run_name=name,
                                tags={"maev_kit.kind": "evaluation"})
        run_id = run.info.run_id
        client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
                         params=[Param(k, v) for k, v in params.items()])
        with tempfile.TemporaryDirectory(prefix="maev-mlflow-") as tmp:
            page = Path(tmp) / "report.html"
            page.write_text(str(html), encoding="utf-8")
            client.log_artifact(run_id, str(page))
        client.set_terminated(run_id)
    except Exception as e:  # MlflowException, SQLAlchemy, network: one line, URI redacted
        if run_id is not None:
            try:
                client.set_terminated(run_id, status="FAILED")
            except Exception:  # the store is gone: the run stays RUNNING there
                pass
        shown = shown_tracking_uri(uri)
        msg = str(getattr(e, "message", None) or e).replace(uri, shown).strip()
        first = msg.splitlines()[0] if msg else type(e).__name__
        raise MlflowLoggingError(f"MLflow {shown}: {first}") from None
    return str(run_id)


@contextlib.contextmanager
def _http_limits() -> Iterator[None]:
    """MLflow's HTTP retries bounded (:data:`_HTTP_LIMITS`) where the user set none."""
    added = {k: v for k, v in _HTTP_LIMITS.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)
