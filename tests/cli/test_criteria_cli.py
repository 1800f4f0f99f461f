"""maev score / calibrate --criterion FILE|NAME: tables and leaderboards; bad criteria exit 2."""

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from sklearn.metrics import cohen_kappa_score

from maev_kit.criteria import Criterion
from maev_kit.labels import LabelStore
from maev_kit.traces import save_traces

from criteria.conftest import make_traces, says_amount

TOML = (Path(__file__).parents[1] / "criteria" / "data" / "grounded.toml").read_text(
    encoding="utf-8")


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    save_traces(make_traces(12, handoffs=False), tmp_path / "traces.jsonl")
    (tmp_path / "criteria.toml").write_text(TOML)
    return tmp_path


def test_score_with_a_criterion_file_and_a_function(world, capsys):
    code, out, err = run_cli(["score", "traces.jsonl", "--criterion", "criteria.toml",
                              "--judge", "criteria.conftest:says_amount", "--no-progress"],
                             capsys)
    assert code == 0, err
    assert "criterion grounded: Is the final answer grounded" in out
    assert "0.667" in out and "0.333" in out  # 8 of 12 yes, 4 no
    code, out, err = run_cli(["score", "traces.jsonl", "--criterion", "criteria.toml",
                              "--judge", "criteria.conftest:says_amount", "--json"], capsys)
    got = json.loads(out)["criteria"]["grounded"]
    assert code == 0 and [r["label"] for r in got["labels"]] == ["yes", "no"]
    assert got["labels"][0]["share"] == pytest.approx(8 / 12) and got["items"] == 12


def test_calibrate_with_a_criterion(world, capsys):
    c = Criterion("grounded", scope="conversation", labels=("yes", "no"), question="?")
    items = c.items(make_traces(12, handoffs=False))
    store = LabelStore(world / "labels.jsonl")
    human = []
    for i, it in enumerate(items):
        lab = says_amount(it) if i not in (2, 5) else ("no" if says_amount(it) == "yes" else "yes")
        store.add(it.item_id, lab, annotator="ana", criterion="grounded")
        human.append(lab)
    code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "criteria.toml",
                              "--labels", "labels.jsonl", "--judge",
                              "criteria.conftest:says_amount", "--resamples", "200", "--json",
                              "--no-progress"], capsys)
    assert code == 0, err
    board = json.loads(out)["grounded"]["leaderboard"]
    assert board[0]["kappa"] == pytest.approx(
        cohen_kappa_score(human, [says_amount(it) for it in items]), abs=1e-12)


def test_calibrate_a_criterion_from_a_sqlite_store(world, capsys):
    """--labels names a SQLite store by its path or URL: the κ of the labels.jsonl holding the
    same labels; another application's SQLite file exits 2 and is left as it was."""
    import sqlite3

    c = Criterion("grounded", scope="conversation", labels=("yes", "no"), question="?")
    items = c.items(make_traces(12, handoffs=False))
    human = [says_amount(it) if i not in (3, 7) else ("no" if says_amount(it) == "yes" else "yes")
             for i, it in enumerate(items)]
    with LabelStore(world / "labels.sqlite") as store:
        store.add("c1/h0/f1", "lost", annotator="ana")  # retention labels live there too
        for it, lab in zip(items, human):
            store.add(it.item_id, lab, annotator="ana", criterion="grounded")
    expected = cohen_kappa_score(human, [says_amount(it) for it in items])
    for labels in ("labels.sqlite", f"sqlite:///{world / 'labels.sqlite'}"):
        code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "criteria.toml",
                                  "--labels", labels, "--judge",
                                  "criteria.conftest:says_amount", "--resamples", "200",
                                  "--json", "--no-progress"], capsys)
        assert code == 0, err
        board = json.loads(out)["grounded"]["leaderboard"]
        assert board[0]["kappa"] == pytest.approx(expected, abs=1e-12)
        assert board[0]["n_items"] == 12
    conn = sqlite3.connect(world / "app.sqlite")
    conn.execute("CREATE TABLE invoices (id integer)")
    conn.commit()
    conn.close()
    before = (world / "app.sqlite").read_bytes()
    code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "criteria.toml",
                              "--labels", "app.sqlite", "--judge",
                              "criteria.conftest:says_amount", "--no-progress"], capsys)
    assert code == 2 and "not a maev label store (invoices)" in err and "Traceback" not in err
    assert (world / "app.sqlite").read_bytes() == before


@pytest.mark.parametrize("args, message", [
    (["--criterion", "bad.toml", "--judge", "criteria.conftest:says_amount"],
     "bad.toml: not valid TOML"),
    (["--criterion", "nope", "--judge", "criteria.conftest:says_amount"],
     "no built-in criterion named 'nope'"),
    (["--criterion", "criteria.toml"], "criteria need a judge"),
    (["--criterion", "criteria.toml", "--judge", "criteria.conftest:missing"],
     "cannot import it"),
])
def test_bad_criteria_exit_2_with_one_line(world, capsys, args, message):
    (world / "bad.toml").write_text("[[criterion]\nname = 'x'\n")
    code, out, err = run_cli(["score", "traces.jsonl", *args, "--no-progress"], capsys)
    assert code == 2 and message in err
    assert "Traceback" not in err + out and len(err.strip().splitlines()) == 1
    code, _, err = run_cli(["calibrate", "traces.jsonl", "--labels", "traces.jsonl", *args,
                            "--no-progress"] + (["--judge", "criteria.conftest:says_amount"]
                                                if "--judge" not in args else []), capsys)
    assert code == 2 and "Traceback" not in err


def test_calibrate_card_then_check_runs_the_named_function(world, capsys):
    c = Criterion("grounded", scope="conversation", labels=("yes", "no"), question="?")
    store = LabelStore(world / "labels.jsonl")
    for it in c.items(make_traces(12, handoffs=False)):
        store.add(it.item_id, says_amount(it), annotator="ana", criterion="grounded")
    code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "criteria.toml",
                              "--labels", "labels.jsonl", "--judge",
                              "criteria.conftest:says_amount", "--card", "card.json",
                              "--resamples", "200", "--no-progress"], capsys)
    assert code == 0, err
    assert json.loads((world / "card.json").read_text())["judge_name"] == \
        "criteria.conftest:says_amount"
    code, out, err = run_cli(["check", "card.json", "--set", "traces.jsonl", "--labels",
                              "labels.jsonl", "--resamples", "200", "--no-progress"], capsys)
    assert code == 0, err
    assert out.startswith("PASS: criterion grounded, judge criteria.conftest:says_amount")
    code, out, err = run_cli(["check", "card.json", "--set", "traces.jsonl", "--labels",
                              "labels.jsonl", "--judge", "criteria.conftest:no_amount",
                              "--resamples", "200", "--no-progress"], capsys)
    assert code == 2 and "cannot import it" in err and "Traceback" not in err


def test_failure_attribution_is_a_built_in_name(world, capsys):
    from maev_kit.criteria import failure_attribution

    from criteria.conftest import blames_on_amount

    items = failure_attribution().items(make_traces(12, handoffs=False))
    store = LabelStore(world / "labels.jsonl")
    human = []
    for i, it in enumerate(items):
        lab = blames_on_amount(it) if i not in (2, 4) else "billing"
        store.add(it.item_id, lab, annotator="ana", criterion="failure-attribution")
        human.append(lab.split("@")[0])
    judge = ["--judge", "criteria.conftest:blames_on_amount", "--no-progress"]
    code, out, err = run_cli(["score", "traces.jsonl", "--criterion", "failure-attribution",
                              *judge], capsys)
    assert code == 0 and "12 which-agent item(s)" in out, err
    code, out, err = run_cli(["score", "traces.jsonl", "--criterion", "failure-attribution",
                              "--json", *judge], capsys)
    got = json.loads(out)["criteria"]["failure-attribution"]
    assert code == 0, err
    assert {r["label"]: r["share"] for r in got["labels"]} == {
        "billing": pytest.approx(8 / 12), "triage": pytest.approx(4 / 12)}
    code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "failure-attribution",
                              "--labels", "labels.jsonl", "--resamples", "200", "--json",
                              "--card", "card.json", *judge], capsys)
    assert code == 0, err
    assert json.loads(out)["failure-attribution"]["leaderboard"][0]["kappa"] == pytest.approx(
        cohen_kappa_score(human, [blames_on_amount(it).split("@")[0] for it in items]))
    code, out, err = run_cli(["check", "card.json", "--set", "traces.jsonl", "--labels",
                              "labels.jsonl", "--resamples", "200", "--no-progress"], capsys)
    assert code == 0 and out.startswith("PASS: criterion failure-attribution"), err + out
    store.add(items[0].item_id, "billing@7", annotator="ana", criterion="failure-attribution")
    code, out, err = run_cli(["calibrate", "traces.jsonl", "--criterion", "failure-attribution",
                              "--labels", "labels.jsonl", *judge], capsys)
    assert code == 2 and "item 'failure-attribution:conv-00'" in err and "step 7" in err
    assert "Traceback" not in err
