"""A judge card drives scoring: with no judge named, evaluate uses the card's judge, model,
prompt, examples and parameters; a learned judge refits identically or is refused; a judge
that differs from the card is refused unless the mismatch is allowed. The LLM judge is a
scripted model (tests/judges/_scripted.py): these tests check mechanics, not prompt quality."""

from __future__ import annotations

import json
import shutil

import pytest

from judges._scripted import (MARKER, marked_template, scripted_backend, server,  # noqa: F401
                              set_dir)
from maev_kit.backends import LiteLLMBackend
from maev_kit.calibration import JudgeCard, JudgeCardMismatchWarning, calibrate
from maev_kit.calibration._card import judge_from_card
from maev_kit.cli import main
from maev_kit.datasets import load_labeled_set
from maev_kit.errors import InputError
from maev_kit.evaluation import evaluate


@pytest.fixture(scope="module")
def llm_card(server, set_dir, tmp_path_factory):
    """A card for the scripted model with a custom prompt and two worked examples."""
    tmp = tmp_path_factory.mktemp("card")
    res = calibrate(set_dir, judges=["openai/scripted"], prompts=[str(marked_template(tmp))],
                    examples=2, backend_params={"api_base": server.base_url,
                                                "api_key": "sk-local", "temperature": 0},
                    cache=False, progress=False, n_resamples=200)
    path = tmp / "card.json"
    res.card().save(path)
    return path


def test_the_card_alone_gives_the_calibrated_llm_judge(server, set_dir, llm_card):
    card = JudgeCard.load(llm_card)
    assert card.prompt == "mine" and MARKER in card.prompt_text and len(card.examples) == 2
    assert card.params["temperature"] == 0 and "api_key" not in card.params
    ls = load_labeled_set(set_dir)
    r = evaluate(ls, judge_card=llm_card, backend=scripted_backend(server, temperature=0), split="test",
                 progress=False, cache=False, n_resamples=200)
    assert r.judge["name"] == "retention-mine" and r.judge["version"] == card.judge_version
    assert r.judge["example_ids"] == [e["item_id"] for e in card.examples]
    assert set(r.ledger["label"]) == {"retained"}  # the marker prompt reached the model
    # production traces, no labels: the card's embedded examples still go with every request
    judge, backend = judge_from_card(card, backend_params={"api_base": server.base_url,
                                                           "api_key": "sk-local"})
    assert backend.model == "openai/scripted" and backend.params["temperature"] == 0
    t = evaluate(ls.traces_in("test"), judge=judge, backend=backend, progress=False,
                 cache=False, n_resamples=200)
    assert t.judge["version"] == card.judge_version


def test_a_judge_that_differs_from_the_card_is_refused_unless_allowed(server, set_dir,
                                                                      llm_card):
    ls = load_labeled_set(set_dir)
    with pytest.raises(InputError, match="differs from the judge card: judge name: card has "
                                         "'retention-mine', in use 'heuristic'"):
        evaluate(ls, judge="heuristic", judge_card=llm_card, split="test", progress=False)
    with pytest.warns(JudgeCardMismatchWarning):
        r = evaluate(ls, judge="heuristic", judge_card=llm_card, split="test", progress=False,
                     allow_mismatch=True, n_resamples=200)
    assert r.judge["name"] == "heuristic"
    with pytest.raises(InputError, match="model 'openai/scripted', the backend given runs"):
        evaluate(ls, judge_card=llm_card, split="test", progress=False,
                 backend=LiteLLMBackend("openai/other", api_base=server.base_url))


def test_a_learned_judge_refits_identically_or_is_refused(set_dir, tmp_path):
    res = calibrate(set_dir, judges=["tfidf-logreg"], cache=False, progress=False,
                    n_resamples=200)
    card = res.card()
    r = evaluate(set_dir, judge_card=card, split="test", progress=False, n_resamples=200)
    assert (r.judge["name"], r.judge["version"]) == ("tfidf-logreg", card.judge_version)
    changed = tmp_path / "changed"
    shutil.copytree(set_dir, changed)
    lines = (changed / "labels.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["label"] = "contradicted" if rec["label"] != "contradicted" else "lost"
    (changed / "labels.jsonl").write_text("\n".join([json.dumps(rec)] + lines[1:]) + "\n")
    with pytest.raises(InputError, match="the labeled set changed since calibration"):
        evaluate(changed, judge_card=card, split="test", progress=False)
    with pytest.raises(InputError, match="learns from labels: it is refit on labeled set"):
        judge_from_card(card)


def test_cli_score_with_a_card_and_no_judge(set_dir, tmp_path, capsys):
    res = calibrate(set_dir, judges=["tfidf-logreg"], cache=False, progress=False,
                    n_resamples=200)
    card = tmp_path / "card.json"
    res.card().save(card)
    out = tmp_path / "scores.csv"
    assert main(["score", str(set_dir), "--judge-card", str(card), "--split", "test",
                 "--out", str(out), "--no-progress"]) in (0, None)
    assert "tfidf-logreg" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["score", str(set_dir), "--judge-card", str(card), "--judge", "heuristic",
              "--split", "test", "--no-progress"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "differs from the judge card" in err[0]
    assert main(["score", str(set_dir), "--judge-card", str(card), "--judge", "heuristic",
                 "--allow-mismatch", "--split", "test", "--no-progress"]) in (0, None)
    warned = [ln for ln in capsys.readouterr().err.splitlines() if "JUDGE CARD" in ln]
    assert warned and all(ln.startswith("warning:") for ln in warned)


def test_cli_report_with_a_card(set_dir, tmp_path, capsys):
    """`maev report --judge-card` scores with the card's judge and shows the card; a learned
    judge's card on the whole set (items it was fit on) is refused in one line, exit 2."""
    heuristic = tmp_path / "heuristic_card.json"
    calibrate(set_dir, judges=["heuristic"], cache=False, progress=False,
              n_resamples=200).card().save(heuristic)
    out = tmp_path / "report.html"
    assert main(["report", str(set_dir), "--judge-card", str(heuristic), "--no-calibrate",
                 "--out", str(out), "--no-progress"]) in (0, None)
    page = out.read_text(encoding="utf-8")
    card = json.loads(heuristic.read_text())
    assert "judge card" in page and card["labels_hash"] in page
    learned = tmp_path / "learned_card.json"
    calibrate(set_dir, judges=["tfidf-logreg"], cache=False, progress=False,
              n_resamples=200).card().save(learned)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(set_dir), "--judge-card", str(learned), "--no-calibrate",
              "--out", str(tmp_path / "r2.html"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and "was fit on" in err[0]
    assert not (tmp_path / "r2.html").exists()
