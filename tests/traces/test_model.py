import pytest

from maev_kit import AgentTurn, Handoff, HandoffReason, MultiAgentTrace
from maev_kit.traces import UserMessage


def test_article_constructors_are_positional():
    turn = AgentTurn("a", "role", "text", [{"name": "lookup"}], 3)
    assert (turn.agent_id, turn.tool_calls, turn.turn_index) == ("a", [{"name": "lookup"}], 3)
    h = Handoff("a", "b", HandoffReason.FALLBACK, {"k": 1}, 4)
    assert (h.reason, h.context_passed, h.turn_index, h.mode) == (
        HandoffReason.FALLBACK, {"k": 1}, 4, "transfer")


def test_defaults_are_not_shared_between_instances():
    a, b = AgentTurn("a", "r", "m"), AgentTurn("b", "r", "m")
    a.tool_calls.append({"x": 1})
    assert b.tool_calls == []


def test_reason_accepts_its_string_value_and_compares_to_it():
    h = Handoff("a", "b", "escalation")
    assert h.reason is HandoffReason.ESCALATION and h.reason == "escalation"
    assert str(h.reason) == "escalation"


def test_trace_queries(sample_trace):
    t = sample_trace
    assert t.agents_involved() == ["triage", "billing", "tech"]
    assert t.handoff_count() == 3
    assert t.turns_per_agent() == {"triage": 1, "billing": 2, "tech": 1}


def test_plain_string_user_messages_are_wrapped(sample_trace):
    t = sample_trace
    assert t.user_messages == [UserMessage("My bill is wrong", 0)]


def test_timeline_orders_by_turn_index_user_turn_handoff_on_ties():
    t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "speaks", turn_index=1)],
                        handoffs=[Handoff("a", "b", None, turn_index=1)],
                        user_messages=[UserMessage("hi", 1)])
    kinds = [type(e).__name__ for e in t.timeline()]
    assert kinds == ["UserMessage", "AgentTurn", "Handoff"]
    assert [(m.speaker, m.kind) for m in t.messages()] == [
        ("user", "user"), ("a", "text"), ("a", "handoff")]
    assert [m.speaker for m in t.messages(tools=False)] == ["user", "a"]


def test_traces_are_slotted_and_pickles_of_dict_based_versions_still_load():
    """The trace classes have ``__slots__`` (no per-object dict, no stray attributes); a
    pickle from a version whose classes kept their fields in a dict loads into equal
    objects, and the slotted objects pickle and copy as themselves."""
    import copy
    import copyreg
    import pickle

    turn = AgentTurn("a", "router", "Hi", [{"name": "f"}], 1)
    trace = MultiAgentTrace("c-1", [turn], [Handoff("a", "b", "escalation", {"k": 1}, 2)],
                            [UserMessage("help", 0)], {"source": "x"})
    for obj in (trace, turn, trace.handoffs[0], trace.user_messages[0]):
        assert not hasattr(obj, "__dict__")
    with pytest.raises(AttributeError):
        trace.notes = "no such field"

    class DictBased:  # pickles as a dict-based instance of ``cls`` did: NEWOBJ, then a dict
        def __init__(self, cls, fields):
            self.cls, self.fields = cls, fields

        @property
        def __class__(self):  # what pickle checks NEWOBJ's class against
            return self.cls

        def __reduce_ex__(self, protocol):
            return copyreg.__newobj__, (self.cls,), self.fields

    def old(obj):
        fields = {f: getattr(obj, f) for f in obj.__dataclass_fields__}
        for name, value in fields.items():
            if isinstance(value, list):
                fields[name] = [old(v) if hasattr(v, "__dataclass_fields__") else v
                                for v in value]
        return DictBased(type(obj), fields)

    loaded = pickle.loads(pickle.dumps(old(trace)))
    assert loaded == trace and type(loaded.turns[0]) is AgentTurn
    assert loaded.handoffs[0].reason is HandoffReason.ESCALATION
    assert pickle.loads(pickle.dumps(trace)) == trace == copy.deepcopy(trace)
