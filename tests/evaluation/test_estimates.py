"""Corrected estimates: the judge's retention rates beside the human-only and the PPI++ ones,
only from labels on a random sample the kit drew; judge-only rows say why they are not
corrected."""

import json
import shutil
import warnings

import pytest

from maev_kit import report
from maev_kit.agreement import human_mean, judge_mean, ppi_mean
from maev_kit.calibration import load_human_labels
from maev_kit.datasets import load_labeled_set
from maev_kit.errors import InputError
from maev_kit.evaluation import evaluate
from maev_kit.labels import LabelSample, draw_label_sample

from cli_helpers import run_cli

SAMPLE_TRACE = "tests/data/trace_samples/openai_agents_trace.json"


def _evaluate(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(source, progress=False, n_resamples=100, **kw)


@pytest.fixture(scope="module")
def snli():
    return _evaluate("snli_calibration")


@pytest.fixture(scope="module")
def sample(snli):
    return draw_label_sample(list(snli.ledger["item_id"]), 100, seed=3)


def _all(est, rate, method):
    rows = est[(est["scope"] == "all") & (est["rate"] == rate) & (est["method"] == method)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_without_a_sample_the_rates_are_judge_only_and_say_why(snli):
    assert set(snli.estimates["method"]) == {"judge-only"}
    note = _all(snli.estimates, "retained", "judge-only")["note"]
    assert note.startswith("judge-only: not corrected for judge error: 800 items are labeled, "
                           "but not as a random sample the kit drew")
    plain = _evaluate(SAMPLE_TRACE)
    assert _all(plain.estimates, "lost", "judge-only")["note"] == (
        "judge-only: not corrected for judge error: no labels on a random sample of "
        "these items; 5 judged items: fewer than 30 (MIN_LABELS_FOR_INTERVAL), too few for a "
        "CLT interval to keep its confidence")


def test_a_random_sample_gives_human_only_and_ppi_estimates(snli, sample):
    result = _evaluate("snli_calibration", label_sample=sample)
    labels = load_human_labels(load_labeled_set("snli_calibration"))
    judge = dict(zip(result.ledger["item_id"], result.ledger["label"]))
    chosen = set(sample.item_ids)
    labeled = [i for i in result.ledger["item_id"] if i in chosen]
    rest = [i for i in result.ledger["item_id"] if i not in chosen]
    for rate in ("retained", "lost", "contradicted"):
        y = [sum(v == rate for v in labels[i].values()) / len(labels[i]) for i in labeled]
        want = ppi_mean(y, [float(judge[i] == rate) for i in labeled],
                        [float(judge[i] == rate) for i in rest])
        got = _all(result.estimates, rate, "ppi++")
        assert (got["estimate"], got["ci_low"], got["ci_high"], got["n"], got["N"]) == \
            pytest.approx((want.estimate, want.ci_low, want.ci_high, 100, 700))
        assert got["lam"] == pytest.approx(want.lam)
        human = _all(result.estimates, rate, "human-only")
        assert human["estimate"] == pytest.approx(human_mean(y).estimate) and human["n"] == 100
        judged = _all(result.estimates, rate, "judge-only")
        assert judged["estimate"] == pytest.approx(
            judge_mean([float(judge[i] == rate) for i in judge]).estimate)
        assert judged["note"].startswith("judge-only: not corrected for judge error")
    # the heuristic under-calls contradictions on SNLI: the corrected rate moves towards people's
    con = {m: _all(result.estimates, "contradicted", m)["estimate"]
           for m in ("judge-only", "human-only", "ppi++")}
    assert con["judge-only"] < 0.12 < con["ppi++"]
    scopes = set(result.estimates["scope"])
    assert "all" in scopes and "intake → responder" in scopes


def test_a_sample_of_other_items_is_refused(snli):
    other = draw_label_sample([f"x{i}/h0/f1" for i in range(50)], 10)
    with pytest.raises(InputError, match="the label sample was drawn from 50 items that are "
                                         "not these 800 items.*maev sample"):
        _evaluate("snli_calibration", label_sample=other)


def test_an_unlabeled_sample_is_not_corrected(sample):
    result = _evaluate("snli_calibration", label_sample=sample, human_labels=[])
    assert set(result.estimates["method"]) == {"judge-only"}
    assert "none of the 100 sampled items is labeled yet" in \
        _all(result.estimates, "lost", "judge-only")["note"]


def test_the_sample_file_round_trips_and_is_never_replaced(tmp_path, sample):
    path = tmp_path / "label_sample.json"
    sample.save(path)
    assert LabelSample.load(path) == sample
    with pytest.raises(InputError, match="never replaced"):
        sample.save(path)
    (tmp_path / "bad.json").write_text(json.dumps({"format": "x"}))
    with pytest.raises(InputError, match="› format: not a label sample"):
        LabelSample.load(tmp_path / "bad.json")
    with pytest.raises(InputError, match="`n` is 900 but there are only 800"):
        draw_label_sample(list(sample.item_ids) + [f"a{i}" for i in range(700)], 900)


def test_report_and_saved_result_carry_the_estimates(tmp_path, sample):
    from maev_kit.evaluation import load_result

    result = _evaluate("snli_calibration", label_sample=sample)
    page = report(result).html
    assert "Retention rates over all handoffs" in page and "corrected (PPI++)" in page
    back = load_result(result.save(tmp_path / "r"))
    assert back.estimates.equals(result.estimates)
    plain = report(_evaluate(SAMPLE_TRACE)).html
    assert "judge-only: not corrected for judge error" in plain


def test_cli_sample_then_score(tmp_path, capsys):
    folder = tmp_path / "snli"
    shutil.copytree("labeled_sets/snli_calibration", folder)
    code, out, err = run_cli(["sample", str(folder), "--n", "100", "--seed", "3"], capsys)
    assert code == 0, err
    assert "drew 100 of 800 items at random" in out and (folder / "label_sample.json").is_file()
    code, out, err = run_cli(["sample", str(folder), "--n", "100"], capsys)
    assert code == 2 and "never replaced" in err
    code, out, err = run_cli(["score", str(folder)], capsys)
    assert code == 0, err
    assert "retention rates over all handoffs" in out and "100 / 700" in out
    code, out, err = run_cli(["score", str(folder), "--json"], capsys)
    rows = json.loads(out)["estimates"]
    ppi = [r for r in rows if r["scope"] == "all" and r["method"] == "ppi++"]
    assert len(ppi) == 3 and all(r["n"] == 100 and r["N"] == 700 for r in ppi)
    assert all(r["ci_low"] < r["estimate"] < r["ci_high"] for r in ppi)
    code, out, err = run_cli(["score", SAMPLE_TRACE], capsys)
    assert "retention rates: judge-only: not corrected for judge error" in out


def test_label_budget_plans_from_the_sample_labelled_so_far(snli, sample):
    from maev_kit.agreement import plan_labels

    assert snli.label_budget is not None and not len(snli.label_budget)  # nothing to plan from
    result = _evaluate("snli_calibration", label_sample=sample, target_half_width=0.04)
    budget = result.label_budget.set_index("rate")
    assert list(budget.index) == ["retained", "lost", "contradicted"]
    labels = load_human_labels(load_labeled_set("snli_calibration"))
    judge = dict(zip(result.ledger["item_id"], result.ledger["label"]))
    chosen = set(sample.item_ids)
    pilot = [i for i in judge if i in chosen]
    rest = [i for i in judge if i not in chosen]
    want = plan_labels([sum(v == "lost" for v in labels[i].values()) / len(labels[i])
                        for i in pilot], [float(judge[i] == "lost") for i in pilot],
                       [float(judge[i] == "lost") for i in rest], half_width=0.04)
    row = budget.loc["lost"]
    assert (row["labels_needed"], row["more_labels"], row["labels_needed_without_judge"],
            row["labeled_now"]) == (want.n, want.more_labels, want.n_human_only, 100)
    assert row["labels_needed"] <= row["labels_needed_without_judge"]
    assert row["expected_half_width"] <= 0.04
    page = report(result).html
    assert "Label budget for ± 0.04" in page


def test_a_bad_target_half_width_is_refused_before_any_work():
    with pytest.raises(InputError, match=r"`target_half_width` must be a number in \(0, 1\)"):
        _evaluate("snli_calibration", target_half_width=0)


def test_a_sample_never_replaces_a_labels_file(tmp_path, sample):
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost"}\n')
    before = labels.read_bytes()
    with pytest.raises(InputError, match=r"labels\.jsonl: holds a labels file \(1 label\), so "
                                         "it is never replaced"):
        sample.save(labels)
    assert labels.read_bytes() == before
