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

import hashlib
import json
import math
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError, MaevError

__all__ = ["DEFAULT_TRACKING_URI", "MlflowLoggingError", "log_to_mlflow", "result_metrics",
           "result_params", "shown_tracking_uri"]

#: Where runs go when no tracking URI is given: a SQLite tracking store in the current folder.
DEFAULT_TRACKING_URI = "sqlite:///mlflow.db"
#: MLflow's limit on a param value is 6000 characters (500 before 2.13): stay under both.
_MAX_PARAM = 500
_BAD_NAME = re.compile(r"[^\w.\- /]")


class MlflowLoggingError(MaevError):
    """The run could not be logged to MLflow (the store refused it, or is unreachable)."""


def shown_tracking_uri(uri: str) -> str:
    """The tracking URI as it may be shown: any password replaced by ``***``.

    >>> shown_tracking_uri("postgresql://ml:s3cret@db.example/mlflow")
    'postgresql://ml:***@db.example/mlflow'
    >>> shown_tracking_uri("sqlite:///mlflow.db")
    'sqlite:///mlflow.db'
    """
    from maev_kit.labels._backends import redact_url

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
    from maev_kit._version import __version__

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
        mlflow is not installed (``pip install 'maev-kit[mlflow]'``).
    MlflowLoggingError
        The store refused the run or could not be reached (the message shows the URI with any
        password as ``***``); a run that was created is marked FAILED.
    """
    mlflow = _import_mlflow()
    from mlflow.entities import Metric, Param

    uri = tracking_uri or DEFAULT_TRACKING_URI
    if report_html is None:
        from maev_kit.reporting import report

        report_html = report(result)
    html = getattr(report_html, "html", report_html)
    metrics, params = result_metrics(result), result_params(result)
    ls = (result.provenance or {}).get("labeled_set") or {}
    name = run_name or f"{ls.get('name') or 'traces'} · {params.get('judge.name', 'no judge')}"
    now = int(time.time() * 1000)
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
