"""Judge cards: saved as JSON, loaded back, and loud when the judge or labels changed."""

from __future__ import annotations

import json
import warnings

import pytest

from maev_kit.calibration import JudgeCard, JudgeCardMismatchWarning, calibration_from_runs
from maev_kit.judges import RetentionJudge

from ._fakes import corrupt, label_dicts, make_items, run_of, truth


def _card(**kw):
    base = dict(judge_name="retention-v1", judge_version=RetentionJudge("v1").version,
                model="gpt-4o-mini", params={"temperature": 0}, prompt="v1",
                labeled_set="support_desk", labeled_set_version="1.0.0",
                labeled_set_hash="abc", labels_hash="f" * 64, kappa=0.72, kappa_low=0.65,
                kappa_high=0.79, n_items=300)
    base.update(kw)
    return JudgeCard(**base)


class _Set:
    name, version, content_hash = "support_desk", "1.0.0", "abc"


def test_save_load_roundtrip(tmp_path):
    card = _card()
    path = tmp_path / "judge_card.json"
    card.save(path)
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1 and data["created_at"].endswith("Z")
    assert {"model", "params", "judge_name", "judge_version", "prompt_hash", "labeled_set",
            "labeled_set_version", "labels_hash", "kappa", "kappa_low", "kappa_high",
            "created_at"} <= set(data)
    assert JudgeCard.load(path) == card


def test_unknown_fields_and_future_schema_are_refused(tmp_path):
    with pytest.raises(ValueError):
        JudgeCard(judge_name="x", judge_version="1", surprise=1)
    path = tmp_path / "card.json"
    path.write_text(json.dumps({**_card().model_dump(), "schema_version": 2}))
    with pytest.raises(ValueError, match="schema_version: 2"):
        JudgeCard.load(path)


def test_matching_judge_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _card().check(RetentionJudge("v1"), model="gpt-4o-mini", labeled_set=_Set()) == []


def test_changed_prompt_warns_loudly():
    with pytest.warns(JudgeCardMismatchWarning, match="JUDGE CARD MISMATCH") as rec:
        problems = _card().check(RetentionJudge("v2"), model="gpt-4o-mini")
    assert any("judge name" in p for p in problems)
    assert any("judge version" in p for p in problems)
    assert "retention-v2" in str(rec[0].message)


def test_changed_model_or_labeled_set_warns():
    class NewSet(_Set):
        content_hash = "def"

    with pytest.warns(JudgeCardMismatchWarning):
        assert _card().check(RetentionJudge("v1"), model="gpt-4o")
    with pytest.warns(JudgeCardMismatchWarning, match="content hash"):
        _card().check(RetentionJudge("v1"), model="gpt-4o-mini", labeled_set=NewSet())
    with pytest.warns(JudgeCardMismatchWarning, match="params"):
        _card().check(RetentionJudge("v1"), model="gpt-4o-mini", params={"temperature": 1})


def test_card_from_a_calibration_checks_against_its_run():
    items = make_items(50)
    gold = truth(50)
    run = run_of(items, corrupt(gold, {1, 2}), "heuristic")
    res = calibration_from_runs({"heuristic": run}, label_dicts(items, gold, "ana"),
                                n_resamples=200)
    card = res.card("heuristic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert card.check(run) == []
    run.judge_version = "2"
    with pytest.warns(JudgeCardMismatchWarning, match="judge version"):
        card.check(run)


def test_import_is_light_and_all_is_sorted():
    import subprocess
    import sys

    import maev_kit.calibration as calibration

    assert calibration.__all__ == sorted(calibration.__all__)
    code = ("import sys, maev_kit.calibration; print(sorted(m for m in ('sklearn', 'scipy', "
            "'litellm', 'krippendorff', 'ipywidgets', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(("content", "message"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "not a JSON file (not UTF-8 text)"),
    (b'{"judge_name": "a", "judge_version": "1"}\n{"judge_name": "b", "judge_version": "1"}\n',
     ":2 holds more than one JSON value (a JSONL file?)"),
    (b'{"judge_name": "a", ', ":1 is not valid JSON"),
    (b'[{"judge_name": "a"}]', "holds a JSON list; a judge card is one JSON object"),
    (b'{"judge_name": "a", "judge_version": "1", "kapa": 0.7}', "› kapa: Extra inputs"),
    (b'{"judge_version": "1"}', "› judge_name: Field required"),
    (b'{"judge_name": "a", "judge_version": "1", "n_items": "many"}', "› n_items: Input should"),
    (b'{"judge_name": "a", "judge_version": "1", "schema_version": 7}',
     "› schema_version: 7"),
    (b"[" * 100_000, "is not valid JSON"),
])
def test_loading_anything_but_a_card_is_one_input_error_naming_file_and_field(
        tmp_path, content, message):
    from maev_kit.errors import InputError

    path = tmp_path / "card.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as info:
        JudgeCard.load(path)
    text = str(info.value)
    assert str(path) in text and message in text and "\n" not in text


def test_loading_a_folder_or_a_missing_file_is_an_input_error(tmp_path):
    from maev_kit.errors import InputError

    with pytest.raises(InputError, match="is a folder"):
        JudgeCard.load(tmp_path)
    with pytest.raises(InputError, match="No such file"):
        JudgeCard.load(tmp_path / "nope.json")


def test_card_hashes_name_the_whole_set_and_the_scored_labels(tmp_path):
    from maev_kit.calibration import calibrate
    from maev_kit.datasets import load_labeled_set

    support = load_labeled_set("support_desk")
    res = calibrate(support, judges=["heuristic"], progress=False, cache=False, n_resamples=100)
    card = res.card()
    assert card.labeled_set_hash == support.content_hash != support.labels_hash
    assert card.labels_hash == res.labels_hash and len(card.labels_hash) == 64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert card.check(res.runs["heuristic"], labeled_set=support) == []
    stale = card.model_copy(update={"labels_hash": "0" * 64})
    with pytest.warns(JudgeCardMismatchWarning, match="labels of split 'test' changed"):
        stale.check(res.runs["heuristic"], labeled_set=support)


def test_cards_of_text_view_prompts_still_rebuild_their_judge(tmp_path):
    """Cards made before the conversation view pinned prompts that showed text only: the
    builtin v1/v2 still hash as they did, and an embedded custom template that hashes as a
    text-view template is rebuilt with that view (so the card reproduces its numbers)."""
    from maev_kit.calibration import judge_from_card
    from maev_kit.judges import PromptTemplate

    # v1's version is the one cards made by earlier versions pinned (content hash unchanged)
    assert RetentionJudge("v1").version == "v1-0f41365d88"
    text = PromptTemplate.builtin("v2").text.replace("You evaluate", "You carefully evaluate")
    old = PromptTemplate.from_text(text, name="careful", view="text")  # as an old card hashed
    card = _card(judge_name="retention-careful", judge_version=f"careful-{old.sha256[:10]}",
                 prompt="careful", prompt_text=text, prompt_hash=old.sha256)
    path = tmp_path / "card.json"
    card.save(path)
    t = JudgeCard.load(path).template()
    assert t.view == "text" and t.sha256 == old.sha256
    judge, _ = judge_from_card(JudgeCard.load(path), backend=object())
    assert judge.template.view == "text" and judge.version == card.judge_version
    # a new card of the same text renders the conversation view, under another hash
    assert PromptTemplate.from_text(text, name="careful").sha256 != old.sha256
