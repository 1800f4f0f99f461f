"""A server of one's own, as litellm reaches it: the reply's JSON schema sent as
``response_format`` (so a small model that does not stop still gives a readable reply), a
server that refuses one form of it, and the probe for a chat template that drops the system
message (the rules then folded into the user message)."""

from __future__ import annotations

import json

import pytest
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.runner import run_judge
from maev_kit.runner._run import retention_schema
from maev_kit.testing import FakeOpenAIServer

pytestmark = pytest.mark.usefixtures("litellm_module")
RULES = "Label each fact."


class SchemaJudge(EchoJudge):
    """EchoJudge whose reply has a JSON schema: one label per fact id."""

    def reply_schema(self, items):
        ids = [it.fact_id for it in items]
        return {"type": "object", "required": ids, "additionalProperties": False,
                "properties": {i: {"type": "string",
                                   "enum": ["retained", "lost", "contradicted"]} for i in ids}}


def _backend(server, **params):
    from maev_kit.backends import LiteLLMBackend

    return LiteLLMBackend("openai/local", api_base=server.base_url, **params)


def test_the_schema_holds_a_rambling_model_to_its_json_object():
    with FakeOpenAIServer(echo_responder, ramble=2000) as server:
        items = make_items(3, 2)
        run = run_judge(SchemaJudge(), items, _backend(server), cache=False, progress=False)
        sent = [r.body for r in server.requests]
        server.reset()
        off = run_judge(SchemaJudge(), items, _backend(server, response_format=None),
                        cache=False, progress=False, max_retries=1)
        sent_off = [r.body for r in server.requests]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert run.stats["requests"] == 3 and run.stats["errors"] == 0
    fmt = sent[0]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["required"] == ["f0", "f1"]
    assert run.stats["generation"]["response_format"] == "json_schema"
    # switched off: nothing sent, the model rambles past its object, no verdict (after the
    # one repair request per handoff)
    assert all("response_format" not in b for b in sent_off)
    assert off.stats["errors_by_cause"] == {"unparseable": 6} and off.stats["requests"] == 6


def test_a_server_that_refuses_json_schema_is_asked_with_json_object_once_and_after():
    """llama-cpp-python's server takes ``{"type": "json_object", "schema": ...}`` only."""
    with FakeOpenAIServer(echo_responder, ramble=2000,
                          response_formats=("json_object",)) as server:
        items = make_items(4, 2)
        run = run_judge(SchemaJudge(), items, _backend(server), max_concurrency=1,
                        cache=False, progress=False)
        types = [(r.body["response_format"]["type"], r.status) for r in server.requests]
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert types == [("json_schema", 422)] + [("json_object", 200)] * 4
    assert run.stats["generation"]["response_format"] == "json_object"
    assert run.stats["errors"] == 0


def test_a_judge_without_a_schema_sends_none():
    with FakeOpenAIServer(echo_responder) as server:
        run_judge(EchoJudge(), make_items(2), _backend(server), cache=False, progress=False)
    assert all("response_format" not in r.body for r in server.requests)


def _needs_rules(body: dict) -> str:
    """A model that answers only when it sees the judge's rules (in any message)."""
    text = "\n".join(m["content"] for m in body["messages"])
    if RULES not in text:
        return "Sure! What would you like me to do with these facts?"
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    facts = json.loads(user[user.index("{"):])["facts"]
    return json.dumps({fid: t.split()[0] for fid, t in facts.items()})


@pytest.mark.parametrize("drops", [True, False])
def test_the_probe_folds_the_rules_only_for_a_template_that_drops_them(drops):
    with FakeOpenAIServer(_needs_rules, drop_system=drops) as server:
        items = make_items(3)
        run = run_judge(EchoJudge(), items, _backend(server), cache=False, progress=False)
        roles = {m["role"] for r in server.requests for m in r.messages}
        probes = len(server.probes)
    assert [v.label for v in run.verdicts] == expected_labels(items)
    assert probes == 1  # one tiny request before the run, not among the judge's requests
    assert run.stats["requests"] == 3
    assert run.stats["generation"]["fold_system"] is drops
    assert ("system" in roles) is not drops


def test_without_the_probe_a_dropped_system_message_loses_the_rules():
    """The check above can fail: with fold_system=False the same server gives no verdict."""
    with FakeOpenAIServer(_needs_rules, drop_system=True) as server:
        run = run_judge(EchoJudge(), make_items(2), _backend(server, fold_system=False),
                        cache=False, progress=False, max_retries=0)
        probes = len(server.probes)
    assert probes == 0 and run.stats["errors_by_cause"] == {"unparseable": 4}


def test_local_defaults_are_in_the_cache_key_and_a_hosted_model_gets_neither():
    from maev_kit.backends import LiteLLMBackend

    local = LiteLLMBackend("openai/m", api_base="http://127.0.0.1:1/v1").cache_identity()
    off = LiteLLMBackend("openai/m", api_base="http://127.0.0.1:1/v1",
                         response_format=None).cache_identity()
    hosted = LiteLLMBackend("gpt-4o-mini").cache_identity()
    assert local["params"]["response_format"] == "auto" == local["params"]["fold_system"]
    assert off["params"]["response_format"] is None and off != local
    assert "response_format" not in hosted["params"] and "fold_system" not in hosted["params"]


def test_the_retention_schema_matches_what_the_parser_reads():
    from maev_kit.judges import RetentionJudge
    from maev_kit.retention import RetentionItem

    items = [RetentionItem(f"c/h0/f{k}", "c", 0, f"f{k}", f"fact {k}", (), ()) for k in (1, 2)]
    schema = retention_schema(2, evidence=True)
    reply = {"F1": {"status": "lost", "reason": "never said", "evidence": {"n": 1, "quote": "x"}},
             "F2": {"status": "retained", "reason": "repeated"}}
    assert set(schema["required"]) == set(reply)
    verdicts = RetentionJudge("v3").parse(json.dumps(reply), items)
    assert [v.label for v in verdicts] == ["lost", "retained"]
