"""`maev check`, the drift gate: a card from `maev calibrate --out`, re-checked.

Exit 0 when the card's judge still agrees, 1 when a worse judge (a model served by
FakeOpenAIServer that answers "lost" for every fact, over real HTTP through litellm) or a
failing one is checked, 2 on bad input — each with one readable line, never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli

from maev_kit.calibration import JudgeCard, calibrate
from maev_kit.calibration._card import verdict_fields
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer
from maev_kit.testing._server import _default_responder

FAST = ["--resamples", "1000", "--no-progress"]
MODEL = "openai/judge-model"


def says_lost(body: dict) -> str:
    facts = extract_prompt_data(body["messages"]).facts
    return json.dumps({fid: {"status": "lost", "reason": "not seen"} for fid, _ in facts})


def first_fact_only(body: dict) -> str:
    """A model that answers the first fact of each handoff well and leaves the others out."""
    answer = json.loads(_default_responder(body))
    first = extract_prompt_data(body["messages"]).facts[0][0]
    return json.dumps({first: answer[first]})


@pytest.fixture(scope="module")
def heuristic_card(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("calibrated")
    code = run_cli_plain(["calibrate", "support_desk", "--judge", "heuristic", "--out",
                          str(out / "h"), *FAST])
    assert code == 0
    return out / "h" / "judge_card.json"


def run_cli_plain(args: list[str]) -> int:
    """Run the CLI outside a test's capsys (module fixtures)."""
    from maev_kit.cli import main

    try:
        got = main(args)
        return got if isinstance(got, int) and not isinstance(got, bool) else 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else 1


def test_the_same_judge_passes(heuristic_card, capsys):
    code, out, err = run_cli(["check", str(heuristic_card), *FAST], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("judge: heuristic (")
    assert "judge now:  heuristic" in out and "the card's judge" in out
    assert "κ then → now: 0.806 (95% CI " in out
    assert lines[-1].startswith("PASS: κ did not fall (0.806 → 0.806; the default tolerance")
    code, out, _ = run_cli(["check", str(heuristic_card), "--json", *FAST], capsys)
    data = json.loads(out)
    assert code == 0 and data["status"] == "PASS" and data["exit_code"] == 0
    assert data["kappa_then"] == pytest.approx(data["kappa_now"], abs=1e-12)
    assert data["card"] == str(heuristic_card) and data["labeled_set"] == "support_desk"


def test_an_older_card_is_compared_unpaired(heuristic_card, tmp_path, capsys):
    data = json.loads(heuristic_card.read_text())
    for key in ("item_verdicts", "accuracy", "tolerance"):
        data.pop(key, None)
    old = tmp_path / "old_card.json"
    old.write_text(json.dumps(data))
    code, out, _ = run_cli(["check", str(old), *FAST], capsys)
    assert code == 0
    assert "test: unpaired — the card records no per-item verdicts" in out
    assert "accuracy then → now: not recorded → 0.887" in out


def test_recorded_verdicts_are_compared_item_by_item(tmp_path, capsys):
    res = calibrate("support_desk", judges=["heuristic", "tfidf-logreg"], progress=False,
                    cache=False, n_resamples=1000)
    row = res.leaderboard.set_index("key").loc["tfidf-logreg"]
    card = JudgeCard.model_validate({**res.card("tfidf-logreg").model_dump(),
                                     **verdict_fields(res.runs["tfidf-logreg"],
                                                      row["accuracy"])})
    path = tmp_path / "judge_card.json"
    card.save(path)
    code, out, _ = run_cli(["check", str(path), *FAST], capsys)
    assert code == 0 and "test: paired on 231 items — McNemar exact" in out
    assert "accuracy then → now: 0.900 → 0.900" in out
    # a worse offline judge against this card, with a tolerance it exceeds: FAIL, exit 1
    code, out, _ = run_cli(["check", str(path), "--judge", "heuristic", "--tolerance", "0.01",
                            *FAST], capsys)
    assert code == 1
    assert "changed: judge tfidf-logreg → heuristic" in out
    assert out.splitlines()[-1].startswith("FAIL: κ fell by 0.022 (0.828 → 0.806), more than "
                                           "the given tolerance 0.01, with a judge that "
                                           "differs from the card's")


@pytest.fixture(scope="module")
def model_card(tmp_path_factory: pytest.TempPathFactory):
    """A card of a model judge calibrated on support_desk through the fake server (answering
    like the heuristic), and a second server with the same model answering "lost"."""
    root = tmp_path_factory.mktemp("model")
    with FakeOpenAIServer() as good, FakeOpenAIServer(says_lost) as lazy:
        code = run_cli_plain(["calibrate", "support_desk", "--judge", MODEL, "--api-base",
                              good.base_url, "--out", str(root / "out"), *FAST])
        assert code == 0
        yield root / "out" / "judge_card.json", good, lazy


def test_a_worse_model_fails_and_the_same_passes(model_card, tmp_path, monkeypatch, capsys):
    card, good, lazy = model_card
    monkeypatch.chdir(tmp_path)  # the reply cache (.maev_cache/) goes here
    code, out, err = run_cli(["check", str(card), "--api-base", good.base_url, *FAST], capsys)
    assert code == 0, err
    assert f"judge now:  {MODEL}, prompt v4" in out and out.splitlines()[-1].startswith("PASS")
    code, out, err = run_cli(["check", str(card), "--api-base", lazy.base_url, *FAST], capsys)
    assert code == 1
    assert re.search(r"→ 0\.000 \(no interval — n = \d+\)", out)
    # κ = 0 cannot pass, whatever the card says: the floor of κ's upper bound is said too
    assert "below the floor min_kappa 0.4" in out.splitlines()[-1]
    assert "upper bound 0.000" not in out  # a zero-width interval is said in words
    # calibrate's card records each item's verdict: the test is paired (McNemar)
    assert "test: paired on " in out
    assert re.match(r"FAIL: κ fell by 0\.\d{3} \(0\.\d{3} → 0\.000\), more than the default "
                    r"tolerance 0\.05, and significantly: McNemar exact p = ",
                    out.splitlines()[-1])
    assert "Traceback" not in err


def test_a_changed_prompt_is_reported(model_card, tmp_path, monkeypatch, capsys):
    card, good, lazy = model_card
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(["check", str(card), "--prompt", "v2", "--api-base", good.base_url,
                            "--json", *FAST], capsys)
    data = json.loads(out)
    assert data["judge_then"]["prompt"] == "v4" and data["judge_now"]["prompt"] == "v2"
    assert data["changes"][0].startswith("prompt v4 → v2")
    assert code == data["exit_code"]
    code, out, _ = run_cli(["check", str(card), "--prompt", "v2", "--api-base", lazy.base_url,
                            *FAST], capsys)
    assert code == 1 and "changed: prompt v4 → v2" in out and "FAIL:" in out


def test_failed_calls_exit_1_without_a_verdict(model_card, tmp_path, monkeypatch, capsys):
    card, _, _ = model_card
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer(first_fact_only) as sloppy:
        code, out, err = run_cli(["check", str(card), "--api-base", sloppy.base_url, *FAST],
                                 capsys)
    assert code == 1
    assert "PASS" not in out and "FAIL" not in out and "ERROR: " in out
    assert re.match(r"error: the drift check has no verdict: \d+ of 231 items could not be "
                    r"judged \(unparseable \d+\), over the allowed share 0\.05",
                    err.strip().splitlines()[-1])


@pytest.mark.parametrize(("args", "message"), [
    (["missing.json"], "error: judge card missing.json: no such file"),
    (["."], "error: judge card .: is a folder"),
    (["bad.json"], "error: judge card bad.json › judge_version: Field required"),
    (["{card}", "--set", "bad.json"], "error: bad.json: is a file; give a labeled-set folder"),
    (["{card}", "--set", "no_such_set"], "no_such_set"),
    (["{card}", "--prompt", "v2"], "error: --prompt only applies to a model judge; the card's "
                                   "judge heuristic runs offline"),
    (["{card}", "--judge", "heurstic"], "error: unknown judge 'heurstic'; did you mean "
                                        "'heuristic'?"),
    (["{card}", "--tolerance", "3"], "error: Invalid value for '--tolerance'"),
])
def test_bad_input_exits_2_with_one_line(args, message, heuristic_card, tmp_path, monkeypatch,
                                         capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.json").write_text('{"judge_name": "heuristic"}')
    args = [str(heuristic_card) if a == "{card}" else a for a in args]
    code, out, err = run_cli(["check", *args, *FAST], capsys)
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:"), err
    assert message in err and out == ""


def test_check_is_listed(capsys):
    code, out, _ = run_cli(["--help"], capsys)
    assert code == 0 and "check" in out and "Drift gate" in out


def test_a_judge_that_cannot_be_rebuilt_is_named_and_checkable(heuristic_card, tmp_path,
                                                               capsys):
    data = json.loads(heuristic_card.read_text())
    data["judge_version"] = "1-oldrules"  # calibrated by a maev-kit with other heuristic rules
    old = tmp_path / "judge_card.json"
    old.write_text(json.dumps(data))
    code, out, err = run_cli(["check", str(old), *FAST], capsys)
    assert code == 2 and out == ""
    assert "is version 1-oldrules" in err and "(--judge heuristic)" in err
    code, out, _ = run_cli(["check", str(old), "--judge", "heuristic", *FAST], capsys)
    assert code == 0 and "changed: judge version 1-oldrules → " in out


def _set_copy(root: Path, name: str, card: JudgeCard) -> Path:
    """A copy of support_desk named ``name``, and the card's split's item ids in it."""
    import shutil

    from maev_kit.datasets import bundled_set_path

    out = root / name
    shutil.copytree(bundled_set_path("support_desk"), out)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["name"] = name
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


def _check_cannot_compare(args: list[str], capsys, message: str) -> None:
    code, out, err = run_cli(["check", *args, *FAST], capsys)
    assert code == 2, err  # no verdict: not a FAIL (1)
    assert len(err.strip().splitlines()) == 1 and err.startswith("error:"), err
    assert message in err and "maev calibrate" in err and "--card" in err, err
    assert "Traceback" not in err


def test_a_card_of_another_set_cannot_be_checked_exit_2(heuristic_card, tmp_path, capsys):
    card = JudgeCard.load(heuristic_card)
    other = _set_copy(tmp_path, "other_desk", card)
    _check_cannot_compare([str(heuristic_card), "--set", str(other)], capsys,
                          "the card was made on labeled set 'support_desk', not 'other_desk'")


def test_changed_labels_or_one_class_cannot_be_checked_exit_2(heuristic_card, tmp_path,
                                                              capsys):
    card = JudgeCard.load(heuristic_card)
    folder = _set_copy(tmp_path, "support_desk", card)
    lines = [json.loads(ln) for ln in (folder / "labels.jsonl").read_text().splitlines()]
    in_split = set(json.loads((folder / "manifest.json").read_text())["splits"][card.split])
    first = next(r for r in lines if r["item_id"].split("/")[0] in in_split
                 and r.get("source") != "gold")
    flipped = dict(first, label="contradicted" if first["label"] != "contradicted" else "lost")
    with (folder / "labels.jsonl").open("a") as f:
        f.write(json.dumps(flipped) + "\n")  # one label of the card's split changed
    _check_cannot_compare([str(heuristic_card), "--set", str(folder)], capsys,
                          "› labels_hash: the human labels of split")

    # labels of one class (and a card without labels_hash, so only the classes are known)
    one = [dict(r, label="retained") for r in lines]
    (folder / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in one))
    old = tmp_path / "old_card.json"
    old.write_text(card.model_copy(update={"labels_hash": ""}).model_dump_json())
    _check_cannot_compare([str(old), "--set", str(folder)], capsys,
                          "the human labels hold one class (retained")
