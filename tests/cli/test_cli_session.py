"""`maev session plan` and `maev session status` through the real CLI, on real files and a
SQLite store."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.labels import ADJUDICATED_SOURCE, LabelStore, SessionPlan


@pytest.fixture()
def team_set(tmp_path):
    return small_labeled_set(tmp_path, "team", labels=False)


def test_plan_writes_the_plan_and_never_replaces_it(team_set, capsys):
    code, out, err = run_cli(["session", "plan", str(team_set), "--annotator", "ana",
                              "--annotator", "ben", "--overlap", "0.25", "--seed", "3"], capsys)
    assert code == 0, err
    plan = SessionPlan.load(team_set)
    assert plan.annotators == ("ana", "ben") and plan.seed == 3 and plan.overlap == 0.25
    assert f"{len(plan.item_ids)} items, {len(plan.overlap_items())} labeled twice" in out
    assert "ana: " in out and "ben: " in out
    before = (team_set / "session_plan.json").read_bytes()
    code, out, err = run_cli(["session", "plan", str(team_set), "--annotator", "cleo",
                              "--annotator", "dan"], capsys)
    assert code == 2 and "never replaced" in err and "Traceback" not in err
    assert (team_set / "session_plan.json").read_bytes() == before


@pytest.mark.parametrize("args, match", [
    (["--annotator", "ana"], "two annotators"),
    (["--annotator", "ana", "--annotator", "ana"], "twice"),
    (["--annotator", "ana", "--annotator", "ben", "--overlap", "2"], "overlap"),
    ([], "--annotator"),
])
def test_plan_bad_flags_exit_2(team_set, capsys, args, match):
    code, _, err = run_cli(["session", "plan", str(team_set), *args], capsys)
    assert code == 2 and match in err
    assert not (team_set / "session_plan.json").exists()


def test_status_without_a_plan_says_how_to_make_one(team_set, capsys):
    code, _, err = run_cli(["session", "status", str(team_set)], capsys)
    assert code == 2 and "maev session plan" in err


def _label_session(plan, store):
    """Everyone labels their queue; on overlap items ben disagrees with ana on every other."""
    twice = plan.overlap_items()
    for a in plan.annotators:
        for iid in plan.queue(a):
            flip = a == "ben" and iid in twice and twice.index(iid) % 2 == 0
            store.add(iid, "lost" if flip else "retained", annotator=a)


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_status_text_and_json(team_set, tmp_path, capsys, kind):
    assert run_cli(["session", "plan", str(team_set), "--annotator", "ana", "--annotator",
                    "ben", "--overlap", "0.5"], capsys)[0] == 0
    plan = SessionPlan.load(team_set)
    url = None if kind == "jsonl" else f"sqlite:///{tmp_path / 'labels.db'}"
    store = LabelStore(url or team_set / "labels.jsonl")
    _label_session(plan, store)
    twice = plan.overlap_items()
    first = next(i for i in plan.queue("ana") if i not in twice)
    store.add(first, "skip", annotator="ana")  # ana skips one of hers: one left
    store.add(twice[0], "lost", annotator="dana", source=ADJUDICATED_SOURCE)
    store.close()
    extra = [] if url is None else ["--store", url]
    code, out, err = run_cli(["session", "status", str(team_set), *extra], capsys)
    assert code == 0, err
    n_dis = (len(twice) + 1) // 2
    assert f"disagreements: {n_dis} · settled: 1 · to settle: {n_dis - 1}" in out
    assert "1 left" in out and "α " in out and "AC1 " in out
    code, out, err = run_cli(["session", "status", str(team_set), "--json", *extra], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert data["progress"]["ana"] == {"assigned": len(plan.queue("ana")),
                                       "labeled": len(plan.queue("ana")) - 1, "left": 1}
    assert data["progress"]["ben"]["left"] == 0
    assert len(data["disagreements"]) == n_dis and data["settled"] == 1
    assert data["disagreements"][0]["settled"] in (None, "lost")
    ag = data["agreement"]
    assert ag["items"] == len(twice)
    assert set(ag) == {"items", "krippendorff_alpha", "gwet_ac1"}
    assert ag["gwet_ac1"]["ci_low"] <= ag["gwet_ac1"]["value"] <= ag["gwet_ac1"]["ci_high"]
    if url is not None:
        assert "labels.db" in data["store"]
