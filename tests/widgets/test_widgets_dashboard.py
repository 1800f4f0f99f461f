"""CalibrationDashboard on a real CalibrationResult: leaderboard, κ plot, confusions, drill-down."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest

from maev_kit.calibration import JudgeMeta, calibration_from_runs
from maev_kit.judges import Verdict
from maev_kit.retention import RetentionItem
from maev_kit.traces import AgentTurn, Handoff, Message, MultiAgentTrace
from maev_kit.widgets import CalibrationDashboard, TraceViewer
from maev_kit.widgets._dashboard import confusion_html, forest_html

LABELS = ("retained", "lost", "contradicted")
XSS = '<img src=x onerror="window.__xss=1">'


@dataclass
class Run:  # what calibration_from_runs reads from a JudgeRun
    verdicts: list
    judge_name: str
    judge_version: str = "1"
    model: str | None = None
    stats: dict = field(default_factory=dict)
    items: tuple = ()


def make_data(n=24):
    traces, items, labels = [], [], []
    for i in range(n):
        cid = f"c{i}"
        traces.append(MultiAgentTrace(
            cid, user_messages=[f"account ACCT-{i} {XSS}"],
            turns=[AgentTurn("triage", "router", "passing you on", turn_index=1),
                   AgentTurn("billing", "specialist", f"checking ACCT-{i}", turn_index=3)],
            handoffs=[Handoff("triage", "billing", None, {"account": f"ACCT-{i}"}, 2)]))
        items.append(RetentionItem(f"{cid}/h0/f1", cid, 0, "f1", f"Account is ACCT-{i} {XSS}",
                                   (Message("user", f"account ACCT-{i}", 0, True),),
                                   (Message("billing", f"checking ACCT-{i}", 3),),
                                   "triage", "billing"))
        truth = LABELS[i % 3]
        labels.append({"item_id": f"{cid}/h0/f1", "annotator": "ana", "label": truth})
        labels.append({"item_id": f"{cid}/h0/f1", "annotator": "ben",
                       "label": truth if i % 5 else LABELS[(i + 1) % 3]})
    good = Run([Verdict(it.item_id, LABELS[i % 3] if i % 4 else "lost", f"why {XSS}")
                for i, it in enumerate(items)], "good", items=tuple(items))
    bad = Run([Verdict(it.item_id, "retained") for it in items[:-1]]
              + [Verdict(items[-1].item_id, None, error="unparseable")], "bad<script>",
              items=tuple(items))
    result = calibration_from_runs({"good": good, "bad<script>": bad}, labels,
                                   meta={"good": JudgeMeta("gpt-x", "v2")}, n_resamples=200)
    return traces, items, result


@pytest.fixture(scope="module")
def data():
    return make_data()


def test_dashboard_shows_leaderboard_forest_and_confusions(data):
    traces, items, result = data
    d = CalibrationDashboard(result, traces=traces)
    html = d.summary.value
    assert "<script>" not in html.replace("<style>", "") and "<img" not in html
    assert "bad&lt;script&gt;" in html
    # leaderboard: the best row (highest κ) highlighted, kappa columns shown
    best = result.leaderboard.iloc[0]
    m = re.search(r"<tr class=best>(.*?)</tr>", html)
    assert m and "gpt-x" in m.group(1) and f"{best['kappa']:.3f}" in m.group(1)
    for col in ("kappa", "kappa_low", "kappa_high", "judge", "prompt"):
        assert f"<th>{col}</th>" in html
    # forest plot: one row per judge, a CI per row and the human-ceiling band
    assert html.count('class="frow"') == 2 and html.count('class="ci"') == 2
    assert html.count('class="band"') == 2 and "human ceiling κ" in html
    # one confusion matrix per judge, counts add up to the items
    assert html.count('<table class="cm">') == 2
    assert result.confusions["good"].values.sum() == 24


def test_choosing_a_disagreement_opens_its_trace(data):
    traces, items, result = data
    d = CalibrationDashboard(result, traces=traces)
    assert len(d.disagreements.options) == len(result.disagreements) > 0
    assert d.detail.children == ()
    row = result.disagreements.iloc[0]
    d.disagreements.value = 0  # what a click on the first entry does
    viewer = d.viewer
    assert isinstance(viewer, TraceViewer) and viewer in d.detail.children
    assert viewer.trace.conversation_id == row["item_id"].split("/h")[0]
    head = d.detail.children[0].value
    assert row["item_id"] in head and "<img" not in head
    item_view = d.detail.children[1].value  # the fact, from the runs' items
    assert "&lt;img src=x" in item_view
    assert "&lt;img src=x" in viewer.body.value and "<img" not in viewer.body.value
    # a judge that gave no label shows as such
    idx = [i for i, r in enumerate(d._disagreements) if not isinstance(r["judge_label"], str)]
    assert idx
    d.disagreements.value = idx[0]
    assert "no label" in d.detail.children[0].value and "unparseable" in d.detail.children[0].value
    with pytest.raises(IndexError):
        d.open_disagreement(999)


def test_without_traces_the_drilldown_says_what_to_pass(data):
    _, _, result = data
    d = CalibrationDashboard(result)
    d.open_disagreement(0)
    assert d.viewer is None and "pass <code>traces=</code>" in d.detail.children[-1].value


def test_single_annotator_has_no_ceiling_band(data):
    traces, items, result = data
    from maev_kit.calibration import calibration_from_runs as cfr
    one = cfr(result.runs, [{"item_id": it.item_id, "annotator": "ana", "label": LABELS[i % 3]}
                            for i, it in enumerate(items)], n_resamples=100)
    d = CalibrationDashboard(one, traces=traces)
    assert 'class="band"' not in d.summary.value and "No human ceiling" in d.summary.value


def test_rejects_other_objects():
    with pytest.raises(TypeError, match="`calibration_result` must be a CalibrationResult"):
        CalibrationDashboard({"leader": 1})


def test_forest_and_confusion_html_pieces():
    out = forest_html([("a", 0.5, 0.4, 0.6), ("b", float("nan"), None, None),
                       ("neg", -0.3, -0.5, -0.1)], ceiling=(0.7, 0.6, 0.8))
    assert "n/a" in out and "-0.50" in out  # the axis starts below the lowest CI
    cm = confusion_html([[3, 1], [0, 2]], "t<b>")
    assert "t&lt;b&gt;" in cm and cm.count("<td") == 4


def visible(html: str) -> str:
    return re.sub(r"<style>.*?</style>|<[^>]+>", " ", html, flags=re.S)


def test_ci_labels_come_from_the_results_confidence(data):
    traces, items, result = data
    from maev_kit.calibration import calibration_from_runs as cfr
    labels = [{"item_id": it.item_id, "annotator": a, "label": LABELS[(i + (a == "ben")) % 3]}
              for i, it in enumerate(items) for a in ("ana", "ben")]
    at80 = cfr(result.runs, labels, n_resamples=100, confidence=0.8)
    text = visible(CalibrationDashboard(at80, traces=traces).summary.value)
    assert "Judge–human κ (80% CI)" in text and "(80% CI " in text
    assert "judge κ with 80% CI" in text and "95" not in text
    assert "Judge–human κ (95% CI)" in visible(CalibrationDashboard(result).summary.value)


def test_reference_labels_are_never_called_human(data):
    traces, items, result = data
    from maev_kit.calibration import calibration_from_runs as cfr
    ref = [{"item_id": it.item_id, "annotator": a, "label": LABELS[(i + (a == "set-b")) % 3],
            "source": "reference"} for i, it in enumerate(items) for a in ("set-a", "set-b")]
    cal = cfr(result.runs, ref, n_resamples=100)
    assert cal.reference_labels is True and cal.to_dict()["reference_labels"] is True
    d = CalibrationDashboard(cal, traces=traces)
    d.open_disagreement(0)
    shown = " ".join([visible(d.summary.value), *(t for t, _ in d.disagreements.options),
                      visible(d.detail.children[0].value)])
    assert "reference-annotator ceiling κ" in shown and "Judge–reference κ" in shown
    assert "rows: reference label" in shown and " — reference: " in shown
    assert not re.search(r"human", shown, re.I), re.findall(r".{40}human.{40}", shown, re.I)
    # one label of another source: these are not (all) reference labels
    mixed = cfr(result.runs, [*ref[:-1], {**ref[-1], "source": None}], n_resamples=100)
    assert mixed.reference_labels is False
    assert "human ceiling κ" in CalibrationDashboard(mixed).summary.value
