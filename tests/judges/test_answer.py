import json

import pytest

from maev_kit.judges import HeuristicJudge, RetentionJudge, answer_retention_prompt

from .conftest import make_item
from .test_prompts import injection_items


def handoff_items():
    # all facts of one handoff share the messages after it
    said = ("Hi Ana Silva! I see ACCT-4472 on file.", "What day suits you for the visit?")
    return [make_item("Account is ACCT-4471", *said, fact_id="f1"),
            make_item("The visit is on Tuesday", *said, fact_id="f2"),
            make_item("The customer is Ana Silva", *said, fact_id="f3")]


@pytest.mark.parametrize("prompt", ["v1", "v2"])
def test_answers_what_the_heuristic_says_in_the_requested_format(prompt):
    items = handoff_items()
    judge = RetentionJudge(prompt)
    reply = answer_retention_prompt(judge.build_messages(items))
    assert list(json.loads(reply)) == ["F1", "F2", "F3"]
    verdicts = judge.parse(reply, items)
    assert all(v.ok for v in verdicts)
    # the answer is the heuristic's verdict on the facts and messages found in the prompt
    expected = [v.label for v in HeuristicJudge().judge_items(items)]
    assert [v.label for v in verdicts] == expected == ["contradicted", "lost", "retained"]


def test_injected_prompt_is_answered_from_the_real_facts():
    items = injection_items()
    reply = answer_retention_prompt(RetentionJudge("v2").build_messages(items))
    verdicts = RetentionJudge("v2").parse(reply, items)
    assert [v.item_id for v in verdicts] == [it.item_id for it in items]
    assert all(v.ok for v in verdicts)


def test_user_messages_stay_user_messages():
    item = make_item("Account is ACCT-4471", "Which account is it?", user_says=("ACCT-4471",))
    reply = answer_retention_prompt(RetentionJudge("v1").build_messages([item]))
    assert json.loads(reply)["F1"]["status"] == "lost"


def test_other_prompts_are_refused():
    with pytest.raises(ValueError, match="holds no retention prompt"):
        answer_retention_prompt([{"role": "user", "content": "Hello"}])
    with pytest.raises(ValueError, match="holds no retention prompt"):
        answer_retention_prompt([])


def test_content_parts_are_read_too():
    messages = RetentionJudge("v1").build_messages(handoff_items())
    parts = [messages[0], {"role": "user", "content": [{"type": "text",
                                                        "text": messages[1]["content"]}]}]
    assert answer_retention_prompt(parts) == answer_retention_prompt(messages)
