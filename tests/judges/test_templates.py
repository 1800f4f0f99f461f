"""Your own prompt templates: validated on load, named and hashed, and the name and hash reach
the cache key, the leaderboard and the judge card. The model is scripted (tests/judges/
_scripted.py): these tests check the mechanics, not the quality of a prompt."""

from __future__ import annotations

import pytest

from maev_kit.calibration import JudgeCard, calibrate
from maev_kit.errors import InputError
from maev_kit.judges import PromptTemplate, RetentionJudge, resolve_judge
from maev_kit.runner import run_judge

from ._scripted import (MARKER, labeled, marked_template, scripted_backend,  # noqa: F401
                        server, set_dir)

V1 = PromptTemplate.builtin("v1").text


def test_a_file_is_named_by_its_stem_and_identified_by_its_content(tmp_path):
    same = tmp_path / "copy_of_v1.txt"
    same.write_text(V1, encoding="utf-8")
    t = PromptTemplate.from_file(same)
    assert (t.name, t.source, t.text) == ("copy_of_v1", str(same), V1)
    # same text, same view, same hash: v1 renders the text-only view; a template file renders
    # the conversation view unless told otherwise, and the view is part of the hash
    assert PromptTemplate.from_file(same, view="text").sha256 == PromptTemplate.builtin("v1").sha256
    assert t.view == "conversation" and t.sha256 != PromptTemplate.builtin("v1").sha256
    mine = PromptTemplate.from_file(marked_template(tmp_path))
    assert mine.name == "mine" and mine.sha256 != t.sha256
    assert PromptTemplate.from_text(mine.text, name="other").sha256 == mine.sha256
    judge = RetentionJudge(str(marked_template(tmp_path)))
    assert judge.name == "retention-mine" and judge.version == f"mine-{mine.sha256[:10]}"
    assert resolve_judge("openai/x", prompt=mine)[0].template is mine


BAD = [
    # (template text, text on the line the message must name, what the message says)
    (V1.replace("=== user ===", "=== usr ==="), "=== usr ===", "unknown section '=== usr ==='"),
    (V1.split("=== user ===")[0], "=== system ===", "no '=== user ===' section"),
    ("hello\n" + V1, "hello", "text before '=== system ==='"),
    (V1.replace("{{reply_example}}", "{{reply_sample}}"), "{{reply_sample}}",
     "unknown placeholder {{reply_sample}}"),
    (V1.replace("<<<MESSAGES\n{{messages}}\nMESSAGES>>>", "MESSAGES HERE"), "=== user ===",
     "the user section has no {{messages}}"),
    (V1.replace("<<<FACTS\n{{facts}}", "<<<FACTS\nfacts: {{facts}}"), "facts: {{facts}}",
     "{{facts}} must stand alone on a line between the lines <<<FACTS and FACTS>>>"),
    (V1.replace("You evaluate", "{{facts}} You evaluate"), "{{facts}} You evaluate",
     "{{facts}} must stand alone"),
    (V1.replace("{{reply_example}}", "{{reply_example}} {{reply_example}}"),
     "{{reply_example}} {{reply_example}}", "{{reply_example}} appears twice"),
]


@pytest.mark.parametrize(("text", "needle", "what"), BAD)
def test_a_bad_template_is_one_input_error_naming_file_and_line(tmp_path, text, needle, what):
    line = next(n for n, ln in enumerate(text.split("\n"), start=1) if needle in ln)
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        PromptTemplate.from_file(path)
    msg = str(err.value)
    assert msg.startswith(f"prompt template {path}:{line}: ") and what in msg
    assert "\n" not in msg


def test_unknown_prompt_and_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"unknown prompt 'v7': not a builtin prompt \(v1, v2, v3, v4\)"):
        RetentionJudge("v7")
    with pytest.raises(InputError, match="prompt template .*nope.txt: No such file"):
        PromptTemplate.from_file(tmp_path / "nope.txt")


def test_name_and_hash_enter_the_cache_key(server, labeled, tmp_path):
    backend = scripted_backend(server)
    items = labeled.items_in("test")
    cache = tmp_path / "cache"
    first = run_judge(RetentionJudge("v1"), items, backend, cache=cache, progress=False)
    assert {v.label for v in first.verdicts} == {"lost"}
    assert first.stats["cache_hits"] == 0
    again = run_judge(RetentionJudge("v1"), items, backend, cache=cache, progress=False)
    assert again.stats["requests"] == 0 and again.stats["cache_hits"] > 0
    mine = run_judge(RetentionJudge(str(marked_template(tmp_path))), items, backend, cache=cache,
                     progress=False)
    assert mine.stats["cache_hits"] == 0 and mine.stats["requests"] > 0  # another hash: a miss
    assert {v.label for v in mine.verdicts} == {"retained"}  # the model saw the new prompt
    assert mine.judge_version.startswith("mine-")
    same = run_judge(RetentionJudge(PromptTemplate.from_file(marked_template(tmp_path))), items,
                     backend, cache=cache, progress=False)
    assert same.stats["requests"] == 0


def test_name_and_hash_reach_the_leaderboard_and_the_card(server, labeled, tmp_path):
    path = marked_template(tmp_path)
    res = calibrate(labeled, judges=["openai/scripted"], prompts=["v1", str(path)],
                    backend_params={"api_base": server.base_url, "api_key": "sk-local"},
                    cache=False, progress=False, n_resamples=200)
    board = res.leaderboard.set_index("prompt")
    t = PromptTemplate.from_file(path)
    assert board.loc["mine", "prompt_sha256"] == t.sha256
    assert board.loc["v1", "prompt_sha256"] == PromptTemplate.builtin("v1").sha256
    key = board.loc["mine", "key"]
    card = res.card(key)
    assert (card.prompt, card.prompt_hash, card.prompt_text) == ("mine", t.sha256, t.text)
    assert res.card(board.loc["v1", "key"]).prompt_text is None  # a builtin is named, not copied
    card.save(tmp_path / "card.json")
    assert JudgeCard.load(tmp_path / "card.json").template().sha256 == t.sha256
    edited = card.model_copy(update={"prompt_text": t.text.replace(MARKER, "MARKER-LOSE")})
    edited.save(tmp_path / "edited.json")
    with pytest.raises(InputError, match=r"edited.json › prompt_hash: its text hashes to"):
        JudgeCard.load(tmp_path / "edited.json")
