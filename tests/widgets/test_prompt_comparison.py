"""The prompt comparison in the CalibrationDashboard: diff, κ, changed items opened in a
TraceViewer; built from real judge runs over a bundled labeled set."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

from maev_kit.agreement import majority_labels  # noqa: E402
from maev_kit.calibration import calibration_from_runs, compare_prompts  # noqa: E402
from maev_kit.calibration._human import load_human_labels  # noqa: E402
from maev_kit.datasets import load_labeled_set  # noqa: E402
from maev_kit.judges import PromptTemplate, Verdict  # noqa: E402
from maev_kit.runner import JudgeRun  # noqa: E402
from maev_kit.widgets import CalibrationDashboard, TraceViewer  # noqa: E402
from maev_kit.widgets._prompt_comparison import PromptComparisonView  # noqa: E402

LS = load_labeled_set("support_desk")
EVIL = '<img src=x onerror="alert(1)">'


def comparison():
    human = load_human_labels(LS)
    items = [it for it in LS.items_in("test") if human.get(it.item_id)][:40]
    truth = {it.item_id: majority_labels({a: [x] for a, x in human[it.item_id].items()})[0]
             for it in items}
    base = [Verdict(it.item_id, "retained", "base says retained") for it in items]
    new = [Verdict(it.item_id, truth[it.item_id], "new reads the messages") for it in items]
    runs = {"m [v1]": JudgeRun(base, "retention-v1", "1", "m", {}, tuple(items)),
            "m [mine]": JudgeRun(new, "retention-mine", "1", "m", {}, tuple(items))}
    res = calibration_from_runs(runs, LS, items=items, n_resamples=200, split="test")
    v1 = PromptTemplate.builtin("v1")
    mine = PromptTemplate.from_text(v1.text.replace("You evaluate", f"{EVIL} You evaluate"),
                                    name="mine")
    return compare_prompts(res, "m [v1]", "m [mine]", prompts={"m [v1]": v1, "m [mine]": mine},
                           human_labels=LS, n_resamples=200), truth


def test_view_shows_diff_kappa_and_opens_changed_items_in_a_trace_viewer():
    cmp, truth = comparison()
    n_changed = sum(1 for lab in truth.values() if lab != "retained")
    assert len(cmp.changed) == n_changed > 0 and cmp.n_fixed == n_changed
    view = PromptComparisonView(cmp, traces=LS.traces)
    html = view.summary.value
    assert EVIL not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "<ins>" in html and "Δκ (b − a)" in html and "McNemar" in html
    assert len(view.changed.options) == n_changed + 1
    view.changed.value = 0
    assert isinstance(view.viewer, TraceViewer)
    row = cmp.changed.iloc[0]
    assert view.viewer.trace.conversation_id == row["conversation_id"]
    head = view.detail.children[0].value
    assert row["item_id"] in head and f"reference <b>{row['human']}</b>" in head
    with pytest.raises(IndexError):
        view.open_item(n_changed)


def test_dashboard_carries_the_comparison():
    cmp, _ = comparison()
    dash = CalibrationDashboard(cmp_result := _result_of(cmp), comparison=cmp,
                                traces=LS.traces)
    assert dash.prompt_comparison is not None and dash.children[1] is dash.prompt_comparison
    assert CalibrationDashboard(cmp_result).prompt_comparison is None


def test_without_traces_the_item_says_how_to_open_it():
    cmp, _ = comparison()
    view = PromptComparisonView(cmp)
    assert view.open_item(0) is None
    assert "pass <code>traces=</code>" in view.detail.children[-1].value


def _result_of(cmp):
    from maev_kit.calibration import calibration_from_runs

    runs = {k: JudgeRun([Verdict(i, "retained") for i in cmp.items], k, "1", "m", {},
                        tuple(cmp.items.values())) for k in (cmp.a, cmp.b)}
    return calibration_from_runs(runs, LS, items=list(cmp.items.values()), n_resamples=100)
