"""The report with a real CalibrationResult (built from hand-made judge runs)."""

from __future__ import annotations

import pytest

from maev_kit.judges import Verdict
from maev_kit.reporting import report
from maev_kit.runner import JudgeRun

from ._factories import XSS, make_evaluation

calibration = pytest.importorskip("maev_kit.calibration")

LABS = ["retained", "lost", "contradicted", "retained", "lost", "retained", "retained", "lost",
        "contradicted", "retained", "lost", "retained"]


def _run(name: str, labels: list[str | None], rationale: str = "") -> JudgeRun:
    verdicts = [Verdict(f"c-{i:03d}/h0/f0", lab, rationale=rationale,
                        error=None if lab else "unparseable")
                for i, lab in enumerate(labels)]
    return JudgeRun(verdicts, name, "1", None, {"requests": 0, "cache_hits": 0, "cost": 0.0,
                                                 "tokens": 0})


@pytest.fixture(scope="module")
def cal():
    human = [{"item_id": f"c-{i:03d}/h0/f0", "annotator": a, "label": lab}
             for i, lab in enumerate(LABS) for a in ("ana", "ben")]
    human[3]["label"] = "lost"  # the humans disagree once
    judge_b = LABS[:6] + ["lost", "retained", "lost", "retained", "lost", "contradicted"]
    runs = {"heuristic": _run("heuristic", LABS[:-1] + [None], rationale=XSS),
            "other": _run("other", judge_b)}
    return calibration.calibration_from_runs(runs, human, n_resamples=200)


def test_real_calibration_result_renders(cal):
    page = report(make_evaluation(12), calibration=cal).html
    assert "Leaderboard" in page and "Human ceiling κ =" in page
    assert "human ceiling κ (between annotators, 95 % CI)" in page  # the κ plot band legend
    assert page.count("<svg") == 7  # summary, routing, κ, 2 confusions, 2 agent-pair maps
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "How many more labels are needed" in page
    assert "Disagreements between judges and the human labels" in page
    # the `key` column is not shown twice; the recommendation is shown
    assert cal.recommendation.split(":")[0] in page
