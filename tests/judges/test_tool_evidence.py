"""A fact the receiving agent keeps only through its tools is retained by every judge.

The receiver of the first handoff of each real framework export (billing) never writes the
account number: it calls ``lookup_invoices(account_number="ACCT-4471-9920")``. Every shipped
judge that reads the conversation view — the heuristic, the learned judge, an LLM judge with
the default prompt (through the real openai client and litellm to the kit's own server) —
must call that retained, for every importer's tool-call shape. The prompts v1 and v2 show text
only (kept so their judge cards reproduce) and are left out on purpose.
"""

from __future__ import annotations

import dataclasses
import warnings

import pytest

from maev_kit import load_labeled_set
from maev_kit.expectations import ConversationExpectations, KeyFact
from maev_kit.judges import HeuristicJudge, RetentionJudge
from maev_kit.judges._learned import LearnedJudge
from maev_kit.retention import build_retention_items
from maev_kit.runner import run_judge
from maev_kit.testing import FakeOpenAIServer
from maev_kit.traces.importers import import_traces

ACCT = "ACCT-4471-9920"
FACT = f"The customer's account number is {ACCT}."

# one export per importer and tool-call shape (the Responses-API spans carry no content)
SHAPES = (
    "openai_agents_trace.json",                                  # Agents SDK ingest payload
    "openai_agents_real/openai_agents_chat_run_items.json",      # Agents SDK run items
    "openai_agents_real/openai_agents_chat_run_state.json",      # Agents SDK run state
    "openai_agents_real/openai_agents_responses_nofilter_run_items.json",  # Responses API
    "openai_agents_real/otlp_otel_openai_agents.json",           # OTel instrumentation
    "openinference_spans.json",                                  # OpenInference OTLP
    "otel_genai_spans.json",                                     # OTel GenAI semconv
    "langgraph_swarm_messages.json",                             # LangGraph messages
    "langgraph_real/langsmith_run_tree_langgraph_swarm.json",    # LangSmith run tree
    "langgraph_real/otlp_openinference_langgraph_swarm.json",    # OpenInference LangGraph
    "autogen_swarm_messages.json",                               # AutoGen messages
    "autogen_real/otlp_autogen_native_genai.json",               # AutoGen native OTel
    "crewai_events.json",                                        # CrewAI events
)


def _first_hop_item(data_dir, rel):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces, _ = import_traces(str(data_dir / "trace_samples" / rel))
    t = traces[0]
    exp = ConversationExpectations(t.conversation_id, key_facts=[KeyFact("acct", 0, FACT)])
    item = next(it for it in build_retention_items([t], {t.conversation_id: exp})
                if it.hop == 0)
    said = [m.content for m in item.evidence if m.kind == "text"]
    calls = [m for m in item.evidence if m.kind == "tool_call" and ACCT in m.content]
    # the premise: billing's words never carry the account number; a tool call does
    assert calls and not any(ACCT in s for s in said), (rel, said)
    return item


@pytest.fixture(scope="module")
def items(data_dir):
    return {rel: _first_hop_item(data_dir, rel) for rel in SHAPES}


@pytest.fixture(scope="module")
def learned():
    ls = load_labeled_set("support_desk")
    judge = LearnedJudge()
    labels = {r["item_id"]: r["label"] for r in ls.labels()}
    train = [it for it in ls.items if it.item_id in labels]
    judge.fit(train, [labels[it.item_id] for it in train])
    return judge


def test_heuristic_retains_a_fact_kept_only_in_tool_calls(items):
    for rel, item in items.items():
        (v,) = HeuristicJudge().judge_items([item])
        assert v.label == "retained", (rel, v.rationale)
        assert v.span is not None and v.span.kind == "tool_call", rel
        assert v.span.field.startswith("arguments."), (rel, v.span)


def test_learned_judge_retains_a_fact_kept_only_in_tool_calls(items, learned):
    verdicts = {rel: learned.judge_items([item])[0] for rel, item in items.items()}
    assert {v.label for v in verdicts.values()} == {"retained"}, verdicts
    # and it says where: the receiver's tool call
    assert all(v.span is not None and v.span.kind == "tool_call" for v in verdicts.values())


@pytest.mark.parametrize("client", ["openai", "litellm"])
def test_llm_judge_with_the_default_prompt_retains_it(items, client, litellm_module):
    from maev_kit.backends import LiteLLMBackend, OpenAIClientBackend

    judge = RetentionJudge()  # the default prompt: the conversation view
    assert judge.template.view == "conversation"
    with FakeOpenAIServer() as server:
        if client == "openai":
            import openai

            backend = OpenAIClientBackend(openai.AsyncOpenAI(base_url=server.base_url,
                                                             api_key="k"), model="fake-judge")
        else:
            backend = LiteLLMBackend("openai/fake-judge", api_base=server.base_url,
                                     api_key="k")
        # exports of one run share a conversation id: one id each here
        mine = {rel: dataclasses.replace(it, item_id=f"x{n}/h0/acct", conversation_id=f"x{n}")
                for n, (rel, it) in enumerate(items.items())}
        run = run_judge(judge, list(mine.values()), backend, cache=False, progress=False)
        prompts = [r.messages[-1]["content"] for r in server.requests]
    assert len(prompts) == len(items)
    assert all(f'lookup_invoices(account_number=\\"{ACCT}\\"' in p for p in prompts)
    by_id = {v.item_id: v for v in run.verdicts}
    for rel, item in mine.items():
        v = by_id[item.item_id]
        assert v.label == "retained", (rel, v.error, v.rationale)
        assert v.span is not None and v.span.kind == "tool_call", (rel, v.span)


def test_text_only_prompts_do_not_see_tool_calls(items):
    """Why v1/v2 are not the default: their view leaves the tool call out."""
    item = items["langgraph_swarm_messages.json"]
    for prompt in ("v1", "v2"):
        text = RetentionJudge(prompt).build_messages([item])[-1]["content"]
        assert "lookup_invoices" not in text
    assert "lookup_invoices" in RetentionJudge("v3").build_messages([item])[-1]["content"]
