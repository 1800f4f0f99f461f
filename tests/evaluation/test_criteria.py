"""evaluate(..., criteria=[...]): each label's share with a CI over conversations, on traces
with or without handoffs; the corrected estimate where people labeled."""

import numpy as np
import pytest

from maev_kit.criteria import Criterion
from maev_kit.errors import InputError
from maev_kit.evaluation import evaluate

from criteria.conftest import make_traces, says_amount

GROUNDED = Criterion("grounded", scope="conversation", labels=("yes", "no"), positive="yes",
                     question="Is the final answer grounded in a tool result?")
TURNS = Criterion("short-turn", scope="turn", labels=("short", "long"),
                  question="Is this turn shorter than 30 characters?")


def short(item):
    return "short" if len(item.trace.turns[item.turn_index].message) < 30 else "long"


def both(item):
    """One judge for both criteria: it reads which one it is asked."""
    return says_amount(item) if item.criterion == "grounded" else short(item)


def test_criteria_on_traces_without_handoffs():
    traces = make_traces(12, handoffs=False)
    assert all(not t.handoffs for t in traces)
    result = evaluate(traces, criteria=[GROUNDED, TURNS], judge=both, progress=False,
                      n_resamples=500)
    table = result.criteria["grounded"]
    assert list(table.index) == ["yes", "no"]
    assert table.loc["yes", "share"] == pytest.approx(8 / 12)
    assert table.loc["no", "share"] == pytest.approx(4 / 12)
    assert table.loc["yes", "share_low"] < 8 / 12 < table.loc["yes", "share_high"]
    assert table.loc["yes", "n"] == 12 and table.loc["yes", "n_conversations"] == 12
    assert bool(table.loc["yes", "positive"]) and np.isnan(table.loc["yes", "corrected"])
    turns = result.criteria["short-turn"]
    assert turns["n"].iloc[0] == 24 and turns.loc["short", "share"] == pytest.approx(
        sum(len(t.message) < 30 for tr in traces for t in tr.turns) / 24)
    assert result.judge["name"] is None or "heuristic" not in str(result.judge)  # no retention
    assert result.provenance["criteria"]["grounded"]["judge"].endswith(":both")


def test_failed_calls_are_left_out_and_warned():
    from maev_kit.errors import JudgeErrorWarning

    with pytest.warns(JudgeErrorWarning, match="short-turn: 24 of 24"):
        result = evaluate(make_traces(12), criteria=[TURNS], judge=says_amount, progress=False,
                          n_resamples=200)
    table = result.criteria["short-turn"]
    assert (table["n"] == 0).all() and table["share"].isna().all()  # n/a, never 0
    assert result.provenance["criteria"]["short-turn"]["errors_by_cause"] == {"unparseable": 24}


def test_corrected_estimate_with_peoples_labels():
    traces = make_traces(30)
    items = GROUNDED.items(traces)
    # people disagree with the judge on two of the ten they labeled
    human = {it.item_id: {"ana": says_amount(it)} for it in items[:10]}
    for it in items[:2]:
        human[it.item_id] = {"ana": "yes" if says_amount(it) == "no" else "no"}
    result = evaluate(traces, criteria=[GROUNDED], judge=says_amount, human_labels=human,
                      progress=False, n_resamples=300)
    row = result.criteria["grounded"].loc["yes"]
    assert row["n_human"] == 10 and not np.isnan(row["corrected"])
    from maev_kit.agreement import ppi_mean

    y = [float(human[it.item_id]["ana"] == "yes") for it in items[:10]]
    yhat = [float(says_amount(it) == "yes") for it in items[:10]]
    rest = [float(says_amount(it) == "yes") for it in items[10:]]
    assert row["corrected"] == pytest.approx(ppi_mean(y, yhat, rest).estimate)


def test_a_retention_judge_cannot_answer_a_criterion():
    with pytest.raises(InputError, match="criteria need a judge"):
        evaluate(make_traces(2), criteria=[GROUNDED], progress=False)


def test_saved_and_loaded_results_keep_the_criteria_tables(tmp_path):
    """save → load_result gives the same per-criterion tables (values, dtypes, label index,
    order), and the report of the loaded result has each criterion's section."""
    import json
    import re
    from pathlib import Path

    import pandas as pd

    from maev_kit.evaluation import load_result
    from maev_kit.reporting import report

    result = evaluate(make_traces(12, handoffs=False), criteria=[GROUNDED, TURNS], judge=both,
                      progress=False, n_resamples=200)
    folder = result.save(tmp_path / "run")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["criteria"] == ["grounded", "short-turn"]
    assert {"criterion-grounded", "criterion-short-turn"} <= set(manifest["tables"])
    back = load_result(folder)
    assert list(back.criteria) == ["grounded", "short-turn"]
    for name, table in result.criteria.items():
        pd.testing.assert_frame_equal(back.criteria[name], table)
    assert back.equals(result)
    changed = load_result(folder)
    changed.criteria["grounded"] = changed.criteria["grounded"].assign(n=11)
    assert not changed.equals(result)  # equals sees the criteria tables
    def html(ev):
        text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "TS", report(ev).html)
        return re.sub(r"mk\d+-", "mk-", text)  # each page's own plot id prefix

    page = html(back)
    assert 'id="criterion-0"' in page and "Criterion: grounded" in page
    assert 'id="criterion-1"' in page and "Criterion: short-turn" in page
    assert "0.667" in page
    assert page == html(result)
    golden = Path(__file__).resolve().parents[1] / "data" / "results" / "v1_two_conversations"
    assert load_result(golden).criteria == {}  # saved before criteria were kept
