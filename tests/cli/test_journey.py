"""One calibration journey, start to finish (#36 F): init-set on a trace file → sample 40 →
label them through the Labeler's own buttons in the order served → calibrate two offline judges
and a scripted LLM judge (the kit's fake server) → score the test split → check passes for a
good judge and fails for a useless one → report. The counts printed at every step must add up.

docs/first-calibration.md walks the same road with the output of a run pasted in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli

from maev_kit.datasets import bundled_set_path, load_labeled_set
from maev_kit.judges import HeuristicJudge
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer

N_CONVERSATIONS = 16
N_SAMPLE = 40
FAST = ["--resamples", "500", "--no-progress"]
GOOD, USELESS = "openai/scripted-judge", "openai/says-retained"


def says_retained(body: dict) -> str:
    """A useless judge: every fact retained, whatever the conversation says."""
    facts = extract_prompt_data(body["messages"]).facts
    return json.dumps({fid: {"status": "retained", "reason": "looks fine"} for fid, _ in facts})


def _number(pattern: str, text: str) -> tuple[int, ...]:
    m = re.search(pattern, text)
    assert m is not None, f"{pattern!r} not in:\n{text}"
    return tuple(int(g) for g in m.groups())


def _label_the_sample(folder: Path) -> list[str]:
    """A person labels the sample with the Labeler's buttons, in the order it serves: as the
    heuristic reads each item, but disagreeing on every seventh (people are not heuristics),
    then one item past the sample (kept, and marked outside it in the file).
    Returns the item ids in the order served."""
    from maev_kit.widgets import Labeler

    ls = load_labeled_set(folder)
    truth = {v.item_id: v.label for v in HeuristicJudge().judge_items(list(ls.items))}
    lab = Labeler(folder, folder / "labels.jsonl", annotator="ana")
    served = []
    for k in range(1, N_SAMPLE + 1):
        item = lab.session.current
        assert f"item {k} of the {N_SAMPLE}-item random sample" in lab.progress_text.value
        label = truth[item.item_id]
        if k % 7 == 0:
            label = "lost" if label == "retained" else "retained"
        served.append(item.item_id)
        lab.buttons[label].click()
    assert "outside the random sample" in lab.progress_text.value  # the 41st item says so
    served.append(lab.session.current.item_id)
    lab.buttons[truth[served[-1]]].click()
    return served


@pytest.fixture()
def traces(tmp_path: Path) -> Path:
    lines = (bundled_set_path("support_desk") / "traces.jsonl").read_text().splitlines()
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(lines[:N_CONVERSATIONS]) + "\n")
    return path


def test_the_journey_counts_add_up(traces, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the reply cache (.maev_cache/) goes here
    folder = tmp_path / "myset"
    # 1. init-set: conversations into dev and test, key facts at every handoff
    code, out, err = run_cli(["init-set", str(traces), "--out", str(folder)], capsys)
    assert code == 0, err
    (n_conv,) = _number(r"read (\d+) conversations", out)
    n_dev, n_test = _number(r"splits \(seed 0\): dev (\d+), test (\d+)", out)
    (n_items,) = _number(r"expectations\.jsonl\s+\(\d+ key facts in \d+ conversations?: "
                         r"(\d+) retention items", out)
    assert n_conv == N_CONVERSATIONS == n_dev + n_test
    assert "maev sample" in out  # the next step is named
    # 2. sample: 40 of every item of the set, in the order to label them
    code, out, err = run_cli(["sample", str(folder), "--n", str(N_SAMPLE)], capsys)
    assert code == 0, err
    assert _number(r"drew (\d+) of (\d+) items", out) == (N_SAMPLE, n_items)
    sample = json.loads((folder / "label_sample.json").read_text())["item_ids"]
    # 3. label through the Labeler's buttons: it serves the sample first, in its order
    served = _label_the_sample(folder)
    assert served[:N_SAMPLE] == sample and served[-1] not in sample
    lines = [json.loads(x) for x in (folder / "labels.jsonl").read_text().splitlines()]
    assert [x["in_sample"] for x in lines] == [True] * N_SAMPLE + [False]  # marked in the file
    ls = load_labeled_set(folder)
    split_of = {it.item_id: ls.split_of(it.conversation_id) for it in ls.items}
    on_test = sum(1 for i in served if split_of[i] == "test")
    sampled_on_test = sum(1 for i in sample if split_of[i] == "test")
    test_items = sum(1 for s in split_of.values() if s == "test")
    assert 0 < on_test < N_SAMPLE
    n_labeled = N_SAMPLE + 1
    accounting = (f"{n_labeled} labeled items: {on_test} on test (used for κ), "
                  f"{n_labeled - on_test} on dev (fit tfidf-logreg), 0 set aside; 1 outside "
                  "the random sample")
    # agree on the bare labels file says where every label went, as calibrate will
    code, out, err = run_cli(["agree", str(folder / "labels.jsonl")], capsys)
    assert code == 0, err
    assert (f"{n_labeled} labeled items: {n_labeled} scored (used for κ), 0 set aside; "
            "1 outside the random sample") in out

    with FakeOpenAIServer() as good, FakeOpenAIServer(says_retained) as useless:
        # 4. calibrate: every label accounted for, the same counts in the table
        code, out, err = run_cli(["calibrate", str(folder), "--judge", "heuristic", "--judge",
                                  "tfidf-logreg", "--judge", GOOD, "--api-base", good.base_url,
                                  "--card", "card.json", "--json", *FAST], capsys)
        assert code == 0, err
        cal = json.loads(out)
        acc = cal["label_accounting"]
        assert acc == {"labeled_items": n_labeled, "scored_split": "test", "scored": on_test,
                       "other_splits": {"dev": n_labeled - on_test},
                       "fitted": ["tfidf-logreg"], "set_aside": 0, "outside_sample": 1}
        board = {r["key"]: r for r in cal["leaderboard"]}
        assert {r["status"] for r in board.values()} == {"ok"} and len(board) == 3
        assert {r["n_items"] for r in board.values()} == {on_test}
        assert sum(cal["label_counts"].values()) == on_test
        assert cal["warnings"] == [] or all(isinstance(w, str) for w in cal["warnings"])
        # the text says the same, in words
        code, out, err = run_cli(["calibrate", str(folder), "--judge", "heuristic", "--judge",
                                  "tfidf-logreg", *FAST], capsys)
        assert code == 0, err
        assert accounting in out
        # 5. score the test split: the sampled items there correct the judge's rates
        code, out, err = run_cli(["score", str(folder), "--split", "test", "--judge",
                                  "heuristic", "--no-progress"], capsys)
        assert code == 0, err
        assert _number(r"\nretained .*?(\d+) / (\d+)", out) == (sampled_on_test,
                                                                test_items - sampled_on_test)
        assert (f"the {sampled_on_test} of the {N_SAMPLE} sampled items that fall in split "
                "test") in out
        # 6. check: the good judge's card passes; a useless judge's own card fails the floor
        code, out, err = run_cli(["check", "card.json", "--set", str(folder), *FAST], capsys)
        assert code == 0, (out, err)
        assert f"{n_labeled} labeled items: {on_test} on test" in out
        assert "1 outside the random sample" in out
        code, out, err = run_cli(["calibrate", str(folder), "--judge", USELESS, "--api-base",
                                  useless.base_url, "--card", "useless.json", *FAST], capsys)
        assert code == 0, err
        assert "`maev check` will not pass it" in err and err.startswith("Notes:")
        code, out, err = run_cli(["check", "useless.json", "--set", str(folder), "--api-base",
                                  useless.base_url, *FAST], capsys)
        assert code == 1, (out, err)
        assert "below the floor min_kappa 0.4 (the card's)" in out.splitlines()[-1]
        assert "κ did not fall" in out.splitlines()[-1]  # steady, and still useless
    # 7. the report says where every label went, as calibrate did
    code, out, err = run_cli(["report", str(folder), "--out", "report.html", "--judge",
                              "heuristic", "--no-progress"], capsys)
    assert code == 0, err
    html = Path("report.html").read_text()
    assert accounting in html
