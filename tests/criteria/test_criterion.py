"""Criterion and its items: validation, ids per scope, stability across processes."""

import subprocess
import sys
import textwrap

import pytest

from maev_kit.criteria import Criterion, CriterionItem
from maev_kit.errors import InputError
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace, UserMessage


def _trace(cid="c-1"):
    return MultiAgentTrace(
        cid,
        turns=[AgentTurn("triage", "router", "Hi", turn_index=1),
               AgentTurn("billing", "specialist", "Billing here", turn_index=3),
               AgentTurn("triage", "router", "Back to me", turn_index=5)],
        handoffs=[Handoff("triage", "billing", turn_index=2),
                  Handoff("billing", "triage", turn_index=4)],
        user_messages=[UserMessage("I was charged twice", 0)])


def _c(scope, **kw):
    return Criterion("crit", scope=scope, labels=("yes", "no"), question="Q?", **kw)


@pytest.mark.parametrize("scope, ids", [
    ("conversation", ["crit:c-1"]),
    ("handoff", ["crit:c-1:h0", "crit:c-1:h1"]),
    ("turn", ["crit:c-1:t0", "crit:c-1:t1", "crit:c-1:t2"]),
    ("agent", ["crit:c-1:a:triage", "crit:c-1:a:billing"]),
])
def test_item_ids_per_scope(scope, ids):
    items = _c(scope).items([_trace()])
    assert [i.item_id for i in items] == ids
    assert all(i.conversation_id == "c-1" and i.scope == scope for i in items)


def test_item_positions_match_the_trace():
    t = _trace()
    h = _c("handoff").items([t])
    assert [i.handoff_index for i in h] == [0, 1] and h[1].turn_index is None
    turns = _c("turn").items([t])
    assert [t.turns[i.turn_index].message for i in turns] == ["Hi", "Billing here", "Back to me"]
    agents = _c("agent").items([t])
    assert [i.agent for i in agents] == ["triage", "billing"]


def test_trace_is_left_out_of_equality_and_repr():
    a = _c("conversation").items([_trace()])[0]
    other = _trace()
    other.turns[0].message = "changed"
    b = _c("conversation").items([other])[0]
    assert a == b and hash(a) == hash(b)
    assert "turns" not in repr(a) and "Hi" not in repr(a)
    assert a.trace is not b.trace


def test_no_handoffs_gives_no_handoff_items_but_conversation_items():
    t = MultiAgentTrace("solo", turns=[AgentTurn("a", "r", "x")])
    assert _c("handoff").items([t]) == []
    assert [i.item_id for i in _c("conversation").items([t])] == ["crit:solo"]


def test_duplicate_conversation_ids_raise():
    with pytest.raises(InputError, match="share conversation_id 'c-1'"):
        _c("conversation").items([_trace(), _trace()])


@pytest.mark.parametrize("kw, message", [
    (dict(name="Bad"), "name must match"),
    (dict(name="a b"), "name must match"),
    (dict(labels=("yes",)), "at least two labels"),
    (dict(labels=("yes", "yes")), "unique"),
    (dict(labels=("yes", "")), "non-empty"),
    (dict(scope="step"), "scope must be one of"),
    (dict(question=" "), "question"),
    (dict(positive="maybe"), "positive 'maybe'"),
])
def test_bad_fields_raise_input_error(kw, message):
    args = dict(name="ok", scope="conversation", labels=("yes", "no"), question="Q?")
    args.update(kw)
    with pytest.raises(InputError, match=message):
        Criterion(**args)


def test_labels_list_becomes_tuple_and_criterion_is_hashable():
    c = Criterion("ok", scope="turn", labels=["a", "b", "c"], question="Q?", ordinal=True)
    assert c.labels == ("a", "b", "c") and hash(c) == hash(
        Criterion("ok", scope="turn", labels=("a", "b", "c"), question="Q?", ordinal=True))
    assert c.index("c") == 2
    with pytest.raises(InputError, match="not one of its labels"):
        c.index("d")


def test_items_are_the_same_in_another_process():
    code = textwrap.dedent("""
        import json, sys
        sys.path.insert(0, %r)
        from test_criterion import _c, _trace
        out = [i.item_id for s in ("conversation", "handoff", "turn", "agent")
               for i in _c(s).items([_trace("c-1"), _trace("c-2")])]
        print(json.dumps(out))
    """) % (str(__import__("pathlib").Path(__file__).parent),)
    here = [i.item_id for s in ("conversation", "handoff", "turn", "agent")
            for i in _c(s).items([_trace("c-1"), _trace("c-2")])]
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2")]
    import json
    assert json.loads(runs[0]) == json.loads(runs[1]) == here
    assert len(set(here)) == len(here) == 2 * (1 + 2 + 3 + 2)
    assert isinstance(_c("turn").items([_trace()])[0], CriterionItem)
