"""``evaluate(facts=...)``: which key facts retention is judged on, and where each came from.

Every mode on ``support_desk`` (whose conversations all have written key facts, so ``auto``
is the expectations there) and on traces that come without expectations (``auto`` falls back,
handoff by handoff, to ``context_passed`` and then to the offline proposer).
"""

from __future__ import annotations

import json
import math
import warnings

import pytest

from maev_kit import evaluate
from maev_kit.errors import InputError, TraceWarning
from maev_kit.expectations import save_expectations
from maev_kit.facts import facts_to_expectations, first_statements, propose_facts, save_facts
from maev_kit.facts._llm import answer_extraction_prompt
from maev_kit.testing import FakeOpenAIServer
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace, save_traces


def run(source, **kw):
    kw.setdefault("judge", "heuristic")
    kw.setdefault("progress", False)
    kw.setdefault("n_resamples", 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(source, **kw)


@pytest.fixture(scope="module")
def support_desk():
    from maev_kit.datasets import load_labeled_set

    return load_labeled_set("support_desk")


@pytest.fixture(scope="module")
def sd_auto():
    return run("support_desk")


def conv(cid: str, user: str, *, context: dict | None = None, handoffs: int = 1
         ) -> MultiAgentTrace:
    """The user speaks, triage hands off (with ``context``), the next agent answers; with two
    handoffs the second agent hands on to a third without context."""
    turns = [AgentTurn("triage", "router", "Let me pass you on.", turn_index=1),
             AgentTurn("billing", "specialist", "Looking at it now.", turn_index=3)]
    hand = [Handoff("triage", "billing", None, dict(context or {}), turn_index=2)]
    if handoffs == 2:
        turns.append(AgentTurn("tech", "specialist", "Checking the API.", turn_index=5))
        hand.append(Handoff("billing", "tech", None, turn_index=4))
    return MultiAgentTrace(cid, user_messages=[user], turns=turns, handoffs=hand)


# ---- support_desk ---------------------------------------------------------------------------

def test_auto_is_the_expectations_on_support_desk(sd_auto, support_desk):
    led = sd_auto.ledger
    assert set(led["fact_source"]) == {"expectations"}
    assert sorted(led["item_id"]) == sorted(i.item_id for i in support_desk.items)
    facts = sd_auto.provenance["facts"]
    assert facts["mode"] == "auto"
    # by_source counts the conversations' facts (each judged at several handoffs), not items
    assert facts["by_source"] == {"expectations": len(sd_auto.fact_ledger)}
    assert facts["conversations_without_facts"] == 0
    # an explicit expectations file gives the same facts, judged the same
    by_file = run("support_desk", facts=support_desk.path / "expectations.jsonl")
    assert list(by_file.ledger["item_id"]) == list(led["item_id"])
    assert list(by_file.ledger["label"]) == list(led["label"])
    assert by_file.provenance["facts"]["mode"] == "expectations.jsonl"


@pytest.mark.parametrize("mode", ["context", "offline"])
def test_a_proposer_replaces_the_key_facts_but_keeps_handoffs_and_routing(mode, sd_auto,
                                                                          support_desk):
    r = run("support_desk", facts=mode)
    led = r.ledger
    assert len(led) and set(led["fact_source"]) == {mode}
    written = {i.fact_id for i in support_desk.items}
    assert not written & set(led["fact_id"])  # none of the written key facts
    if mode == "context":
        assert all(f.startswith("ctx:") for f in led["fact_id"])
    else:
        assert all(f.startswith("p-") for f in led["fact_id"])
    assert r.provenance["facts"]["mode"] == mode
    assert r.provenance["facts"]["by_source"] == {mode: len(r.fact_ledger)}
    # the expected handoffs and routing cases still score: same numbers as with the written facts
    for col in ("handoff_quality", "routing_quality"):
        a, b = r.per_conversation[col], sd_auto.per_conversation[col]
        assert a.notna().all() and (a == b).all(), col
    assert "handoff" not in r.not_applicable and "routing" not in r.not_applicable


def test_a_facts_file_and_a_list_give_the_same_ledger_and_reviewed_is_named(support_desk,
                                                                             tmp_path):
    traces = support_desk.traces_in("test")[:8]
    proposed = list(propose_facts(traces, method="offline"))
    assert proposed
    first = proposed[0].conversation_id
    import dataclasses

    mixed = [dataclasses.replace(f, reviewed=True) if f.conversation_id == first else f
             for f in proposed]
    path = tmp_path / "facts.jsonl"
    save_facts(path, mixed)
    by_list = run(traces, facts=mixed)
    by_file = run(traces, facts=path)
    assert list(by_list.ledger["item_id"]) == list(by_file.ledger["item_id"])
    src = dict(zip(by_file.ledger["conversation_id"] + "/" + by_file.ledger["fact_id"],
                   by_file.ledger["fact_source"]))
    for f in mixed:
        assert src[f"{f.conversation_id}/{f.fact_id}"] == ("reviewed" if f.reviewed
                                                           else "offline")
    assert by_file.provenance["facts"]["mode"] == "facts.jsonl"
    assert by_list.provenance["facts"]["mode"] == "list of facts"


def test_reviewed_expectations_and_proposer_metadata_name_the_source(tmp_path):
    t1 = conv("c1", "My account is ACCT-4471.")
    t2 = conv("c2", "Order ORD-5512 never arrived.")
    facts = list(propose_facts([t1, t2], method="offline"))
    exps = facts_to_expectations(facts)
    exps["c1"].metadata = {"fact_proposers": {f.fact_id: "offline" for f in facts
                                              if f.conversation_id == "c1"},
                           "facts_reviewed_by": "ana"}  # as FactReviewSession exports
    exps["c2"].metadata = {"fact_proposers": {f.fact_id: "offline" for f in facts
                                              if f.conversation_id == "c2"}}  # as init-set
    path = tmp_path / "expectations.jsonl"
    save_expectations(exps.values(), path)
    r = run([t1, t2], expectations=path)
    got = dict(zip(r.ledger["conversation_id"], r.ledger["fact_source"]))
    assert got == {"c1": "reviewed", "c2": "offline"}
    plain = run([t1, t2], expectations=[{"conversation_id": "c1", "key_facts": [
        {"fact_id": "f1", "handoff_index": 0, "text": "Account is ACCT-4471"}]}])
    assert dict(zip(plain.ledger["conversation_id"], plain.ledger["fact_source"])) == {
        "c1": "expectations", "c2": "offline"}  # c2 has no key fact: auto proposes


# ---- traces without expectations ------------------------------------------------------------

def test_auto_on_a_trace_file_uses_context_then_offline_handoff_by_handoff(tmp_path):
    traces = [conv("c1", "Account ACCT-4471 was charged $49.99 twice.",
                   context={"account_number": "ACCT-4471"}, handoffs=2),
              conv("c2", "My email is ana@example.com, order ORD-5512.")]
    path = tmp_path / "traces.jsonl"
    save_traces(traces, path)
    r = run(str(path))
    rows: dict = {}
    for c, h, s in zip(r.ledger["conversation_id"], r.ledger["handoff_index"],
                       r.ledger["fact_source"]):
        rows.setdefault((c, int(h)), set()).add(s)
    assert rows[("c1", 0)] == {"context"}  # the handoff passed a context value
    # this one passed none: the offline proposer gives what the context left out ($49.99);
    # the account number (stated once, at h0) is judged here too
    assert rows[("c1", 1)] == {"context", "offline"}
    c1h1 = r.ledger[(r.ledger["conversation_id"] == "c1") & (r.ledger["handoff_index"] == 1)]
    assert sorted(c1h1["fact"]) == ["Charge amount is $49.99", "account_number is ACCT-4471"]
    assert rows[("c2", 0)] == {"offline"}
    c1h0 = r.ledger[(r.ledger["conversation_id"] == "c1") & (r.ledger["handoff_index"] == 0)]
    assert list(c1h0["fact_id"]) == ["ctx:account_number"]
    c2 = list(r.ledger[r.ledger["conversation_id"] == "c2"]["fact"])
    assert any("ana@example.com" in f for f in c2) and any("ORD-5512" in f for f in c2), c2
    # retention is measured; what a trace file cannot measure is n/a, with the reason
    assert r.per_conversation["retention_rate"].notna().all()
    assert r.not_applicable["handoff"]["reason"] == "no expected handoffs"
    assert r.not_applicable["routing"]["reason"] == "no routing case"
    assert math.isnan(r.summary().loc["handoff_quality", "mean"])
    assert r.provenance["facts"]["by_source"] == dict(
        r.fact_ledger["fact_source"].value_counts())


def test_auto_asks_the_offline_proposer_only_for_handoffs_without_context(monkeypatch):
    """A trace whose every handoff passed context is not given to the offline proposer, and
    the facts, their sources and the notes are what proposing for every trace and keeping
    the handoffs without context gives."""
    import maev_kit.facts._propose as P
    from maev_kit.evaluation.stages import merge_facts as _merge_facts
    from maev_kit.evaluation.stages import build_retention_items, select_facts

    traces = [conv("full", "Account ACCT-4471 was charged twice.",
                   context={"account_number": "ACCT-4471"}),
              conv("half", "Account ACCT-7 here, order ORD-5512.",
                   context={"account_number": "ACCT-7"}, handoffs=2),
              conv("none", "My email is ana@example.com."),
              MultiAgentTrace("alone", user_messages=["Hi, ACCT-1 here."],
                              turns=[AgentTurn("triage", "router", "Hello.", turn_index=1)])]
    seen: list[str] = []
    real = P._propose_offline

    def spy(t, *a, **kw):
        seen.append(t.conversation_id)
        return real(t, *a, **kw)

    monkeypatch.setattr(P, "_propose_offline", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        key_facts = select_facts(traces, {}, "auto")
    out, sources = key_facts.expectations, key_facts.sources
    info = key_facts.provenance(build_retention_items(traces, out))
    assert seen == ["half", "none"]  # "alone" has no handoff: noted, not proposed for
    # the definition: the offline proposer over every trace, kept where context left a gap
    monkeypatch.setattr(P, "_propose_offline", real)
    ctx = propose_facts(traces, method="context")
    filled = {(f.conversation_id, f.handoff_index) for f in ctx}
    off = propose_facts(traces, method="offline", carry_over=True)
    want_out, want_sources = _merge_facts(traces, {}, {}, first_statements([
        *ctx, *(f for f in off if (f.conversation_id, f.handoff_index) not in filled)], traces))
    assert out == want_out and sources == want_sources
    convs = {c for c, _ in filled}
    want_notes = [n for n in off.notes if (n.conversation_id, n.handoff_index) not in filled
                  and not (n.handoff_index is None and n.conversation_id in convs)]
    assert info["notes"] == len(want_notes) == 1  # "alone: no handoff"
    # full: ACCT (context); half: ACCT-7 (context), ORD-5512 at h1 (offline: said before h0,
    # which the context filled); none: the email (offline)
    assert info["by_source"] == {"context": 2, "offline": 2}


def test_proposer_notes_are_one_warning_never_an_error():
    silent = MultiAgentTrace("quiet", turns=[
        AgentTurn("triage", "router", "Passing on.", turn_index=0),
        AgentTurn("billing", "specialist", "Done.", turn_index=2)],
        handoffs=[Handoff("triage", "billing", None, turn_index=1)])
    alone = MultiAgentTrace("alone", user_messages=["Hi, ACCT-1 here."],
                            turns=[AgentTurn("triage", "router", "Hello.", turn_index=1)])
    ok = conv("ok", "My account is ACCT-4471.")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = evaluate([silent, alone, ok], judge="heuristic", progress=False, n_resamples=100)
    notes = [w for w in caught if issubclass(w.category, TraceWarning)]
    assert len(notes) == 1
    msg = str(notes[0].message)
    assert "\n" not in msg and msg.startswith("no key fact proposed for 2 ")
    assert "quiet: no user text" in msg and "alone: no handoff" in msg
    assert set(r.ledger["conversation_id"]) == {"ok"}
    assert r.provenance["facts"]["conversations_without_facts"] == 2
    assert r.provenance["facts"]["notes"] == 2


def test_an_export_is_read_directly_with_one_import_warning(tmp_path):
    export = {"messages": [
        {"source": "user", "type": "TextMessage",
         "content": "My booking is BK-99812 and I need 2 extra bags."},
        {"source": "triage", "type": "HandoffMessage", "target": "baggage",
         "content": "Transferred to baggage.", "context": []},
        {"source": "baggage", "type": "TextMessage",
         "content": "I can add the bags to booking BK-99812."}]}
    path = tmp_path / "autogen.json"
    path.write_text(json.dumps(export))
    r = run(str(path))
    assert set(r.ledger["fact_source"]) == {"offline"}
    assert any("BK-99812" in f for f in r.ledger["fact"])


# ---- the llm proposer, over real HTTP --------------------------------------------------------

def test_llm_facts_through_the_judges_backend(tmp_path):
    from openai import AsyncOpenAI

    from maev_kit.backends import OpenAIClientBackend

    traces = [conv("c1", "My account is ACCT-4471 and order ORD-5512."),
              conv("c2", "Booking BK-1234 please.")]
    with FakeOpenAIServer(responder=lambda body: answer_extraction_prompt(body["messages"])) \
            as srv:
        backend = OpenAIClientBackend(AsyncOpenAI(base_url=srv.base_url, api_key="sk-test"),
                                      "fake-extractor")
        r = run(traces, facts="llm", backend=backend, cache=tmp_path)
        assert len(srv.requests) == 2  # one per handoff
    assert set(r.ledger["fact_source"]) == {"llm:fake-extractor"}
    assert {"c1", "c2"} == set(r.ledger["conversation_id"])
    assert r.provenance["facts"]["mode"] == "llm"


def test_llm_facts_without_a_model_is_an_input_error():
    with pytest.raises(InputError, match="the llm proposer needs a model"):
        run([conv("c1", "Account ACCT-1.")], facts="llm")


# ---- bad input --------------------------------------------------------------------------------

def test_a_bad_facts_file_names_file_line_and_field(tmp_path):
    path = tmp_path / "facts.jsonl"
    good = {"conversation_id": "c1", "handoff_index": 0, "fact_id": "p-1", "text": "x",
            "value": None, "kind": "identifier", "source_turn_index": None,
            "proposer": "offline"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, "fact_id": "p-2",
                                                          "kind": "colour"}) + "\n")
    with pytest.raises(InputError) as e:
        run([conv("c1", "Account ACCT-1.")], facts=path)
    assert str(e.value).startswith("facts.jsonl:2 › kind: unknown kind 'colour'")
    assert "\n" not in str(e.value)


def test_a_fact_for_a_missing_handoff_is_refused(tmp_path):
    path = tmp_path / "facts.jsonl"
    path.write_text(json.dumps({"conversation_id": "c1", "handoff_index": 3, "fact_id": "p-1",
                                "text": "x", "value": None, "kind": "other",
                                "source_turn_index": None, "proposer": "offline"}) + "\n")
    with pytest.raises(InputError, match=r"facts.jsonl:1 › handoff_index: handoff 3"):
        run([conv("c1", "Account ACCT-1.")], facts=path)


@pytest.mark.parametrize("facts, match", [
    ("ofline", "did you mean 'offline'"),
    ("nothing.jsonl", "neither a mode nor an existing file"),
    ("offline,contxt", "unknown fact proposer 'contxt'"),
])
def test_an_unknown_mode_is_one_clear_error(facts, match):
    with pytest.raises(InputError, match=match):
        run([conv("c1", "Account ACCT-1.")], facts=facts)


def test_no_judge_proposes_nothing():
    r = run([conv("c1", "Account ACCT-1.")], judge=None)
    assert len(r.ledger) == 0 and "facts" not in r.provenance
