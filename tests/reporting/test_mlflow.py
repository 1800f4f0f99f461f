"""`EvaluationResult.log_to_mlflow` and `maev score/report --mlflow`, against a real MLflow.

One module-scoped run logged to a temporary ``sqlite:///`` tracking store (MLflow's first import
is slow), read back with MLflow's own client: metrics with their CIs, params, the HTML report
artifact; never a URL or a password in the params.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytest.importorskip("mlflow")

from cli_helpers import run_cli  # noqa: E402

from maev_kit.errors import InputError  # noqa: E402
from maev_kit.evaluation import evaluate  # noqa: E402
from maev_kit.reporting._mlflow import log_to_mlflow, result_metrics, result_params  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """(result, tracking URI, run id, client): support_desk scored offline, logged once."""
    from mlflow.tracking import MlflowClient

    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = evaluate("support_desk", judge="heuristic", progress=False, n_resamples=100)
    run_id = result.log_to_mlflow(tracking_uri=uri, run_name="support desk, heuristic")
    return result, uri, run_id, MlflowClient(tracking_uri=uri)


def test_metrics_are_the_aggregates_with_their_cis(logged):
    result, _, run_id, client = logged
    got = client.get_run(run_id).data.metrics
    for row in result.aggregates.to_dict(orient="records"):
        for col, name in (("mean", row["metric"]), ("ci_low", f"{row['metric']}.ci_low"),
                          ("ci_high", f"{row['metric']}.ci_high")):
            if math.isnan(row[col]):
                assert name not in got
            else:
                assert got[name] == pytest.approx(row[col])
    assert got["n_conversations"] == len(result.per_conversation)
    assert got == pytest.approx(result_metrics(result))


def test_params_say_what_produced_the_numbers(logged):
    result, _, run_id, client = logged
    run = client.get_run(run_id)
    params = run.data.params
    ls = result.provenance["labeled_set"]
    assert params["judge.name"] == "heuristic"
    assert params["judge.version"] == result.judge["version"]
    assert params["labeled_set.name"] == "support_desk"
    assert params["labeled_set.version"] == ls["version"]
    assert params["labeled_set.hash"] == ls["hash"]
    assert params["maev_kit.version"] == result.provenance["maev_kit_version"]
    assert run.info.run_name == "support desk, heuristic"
    assert run.info.status == "FINISHED"
    shown = " ".join([*params, *params.values(), *run.data.tags.values()])
    assert "://" not in shown and "sqlite" not in shown and "mlflow.db" not in shown


def test_the_report_is_an_artifact(logged, tmp_path):
    _, _, run_id, client = logged
    assert [a.path for a in client.list_artifacts(run_id)] == ["report.html"]
    page = Path(client.download_artifacts(run_id, "report.html", str(tmp_path)))
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html")
    assert "support_desk" in html
    # artifacts go beside the tracking database, not into the working directory
    assert client.get_run(run_id).info.artifact_uri.startswith(
        Path(logged[1][len("sqlite:///"):]).parent.as_uri())


def test_no_url_or_password_ever_becomes_a_param(logged):
    result = logged[0]
    secret = "postgresql://ana:pw-Zq8@db.example/labels"
    prov = {**result.provenance,
            "labeled_set": {**result.provenance["labeled_set"], "name": secret},
            "judge_card": {"judge": "gpt-4o-mini", "store": secret}}
    leaky = dataclasses.replace(result, provenance=prov,
                                judge={**result.judge, "model": "http://u:pw-Zq8@llm/v1"})
    params = result_params(leaky)
    text = " ".join([*params, *params.values()])
    assert "pw-Zq8" not in text and "://" not in text
    assert len(params["judge_card.sha256"]) == 64  # the card is named by its hash


def test_ppi_estimates_become_metrics(logged):
    import pandas as pd

    result = logged[0]
    est = pd.DataFrame([
        {"scope": "all", "rate": "retained", "method": "ppi++", "estimate": 0.5,
         "ci_low": 0.4, "ci_high": 0.6},
        {"scope": "billing → triage", "rate": "lost", "method": "ppi++", "estimate": 0.2,
         "ci_low": float("nan"), "ci_high": 0.3},
        {"scope": "all", "rate": "retained", "method": "judge-only", "estimate": 0.9,
         "ci_low": 0.8, "ci_high": 1.0}])
    m = result_metrics(dataclasses.replace(result, estimates=est))
    assert (m["ppi.retained"], m["ppi.retained.ci_low"], m["ppi.retained.ci_high"]) == \
        (0.5, 0.4, 0.6)
    assert m["ppi.lost.billing_to_triage"] == 0.2 and "ppi.lost.billing_to_triage.ci_low" not in m


def test_without_mlflow_it_says_how_to_install(logged, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    with pytest.raises(InputError, match=r"pip install 'maev-kit\[mlflow\]'"):
        log_to_mlflow(logged[0], tracking_uri="sqlite:///never.db", report_html="<html/>")


def test_import_maev_kit_does_not_import_mlflow():
    code = ("import sys, maev_kit; from maev_kit.evaluation import EvaluationResult; "
            "import maev_kit.reporting; assert 'mlflow' not in sys.modules, 'mlflow imported'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_cli_score_and_report_log_a_run(logged, tmp_path, monkeypatch, capsys):
    from mlflow.tracking import MlflowClient

    monkeypatch.chdir(tmp_path)
    uri = f"sqlite:///{tmp_path / 'cli.db'}"
    code, out, err = run_cli(["score", str(REPO / "labeled_sets" / "support_desk"),
                              "--mlflow", uri, "--no-progress"], capsys)
    assert code == 0, err
    line = [ln for ln in out.splitlines() if ln.startswith("MLflow: run ")]
    assert line and line[0].endswith(f"in {uri}")
    run_id = line[0].split()[2]
    client = MlflowClient(tracking_uri=uri)
    assert client.get_run(run_id).data.metrics["composite"] == pytest.approx(
        logged[0].aggregates.set_index("metric").loc["composite", "mean"])

    # `--mlflow` alone: sqlite:///mlflow.db in the current folder; the report logged is the
    # report written
    code, out, err = run_cli(["report", "support_desk", "--no-calibrate", "--out", "r.html",
                              "--mlflow", "--no-progress"], capsys)
    assert code == 0, err
    assert (tmp_path / "mlflow.db").is_file()
    run_id = [ln for ln in out.splitlines() if ln.startswith("MLflow: run ")][0].split()[2]
    client = MlflowClient(tracking_uri="sqlite:///mlflow.db")
    page = client.download_artifacts(run_id, "report.html", str(tmp_path / "dl"))
    assert Path(page).read_text(encoding="utf-8") == (tmp_path / "r.html").read_text(
        encoding="utf-8")


def test_cli_refuses_a_value_that_is_no_tracking_uri(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["score", "support_desk", "--mlflow=support_desk"], capsys)
    assert code == 2
    assert "not a tracking URI" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "mlflow.db").exists()
