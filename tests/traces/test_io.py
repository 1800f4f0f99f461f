import json
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit import (AgentTurn, Handoff, MultiAgentTrace, TraceValidationError, load_traces,
                      save_traces, traces_to_frame)
from maev_kit.errors import TraceWarning
from factories import make_trace
from maev_kit.traces import UserMessage, handoffs_to_frame, trace_from_dict, trace_to_dict



def test_round_trip_is_exact(tmp_path):
    p = tmp_path / "t.jsonl"
    traces = [make_trace(), MultiAgentTrace("empty"),
              MultiAgentTrace("meta", metadata={"source": "x", "nested": {"a": [1, 2]}})]
    save_traces(traces, p)
    assert load_traces(p) == traces
    first = p.read_bytes()
    save_traces(load_traces(p), p)
    assert p.read_bytes() == first


def test_file_is_one_json_object_per_line_with_schema_version(tmp_path):
    p = tmp_path / "t.jsonl"
    save_traces([make_trace()], p)
    lines = p.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1
    obj = json.loads(lines[0])
    assert obj["schema_version"] == 1
    assert obj["handoffs"][0] == {"from_agent": "triage", "to_agent": "billing",
                                  "reason": "specialization", "context_passed": {},
                                  "turn_index": 2, "mode": "transfer"}


text = st.text(max_size=30)
turns = st.builds(AgentTurn, text, text, text, st.just([]), st.integers(-5, 1000))
handoffs = st.builds(Handoff, text, text, st.sampled_from([None, "escalation", "fallback"]),
                     st.dictionaries(st.text(max_size=8), st.one_of(text, st.integers())),
                     st.integers(0, 1000), st.sampled_from(["transfer", "delegate"]))
traces = st.builds(MultiAgentTrace, text, st.lists(turns, max_size=4),
                   st.lists(handoffs, max_size=3),
                   st.lists(st.builds(UserMessage, text, st.integers(0, 99)), max_size=2))


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(traces, max_size=3, unique_by=lambda t: t.conversation_id))
def test_round_trip_property(tmp_path, ts):
    p = tmp_path / "prop.jsonl"
    save_traces(ts, p)
    if not ts:
        with pytest.raises(TraceValidationError, match="empty"):
            load_traces(p)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TraceWarning)
        assert load_traces(p) == ts


def test_fast_path_and_pydantic_path_agree():
    from maev_kit.traces._io import _ADAPTER, _fast_build
    d = trace_to_dict(make_trace())
    d.pop("schema_version")
    assert _fast_build(d) == _ADAPTER.validate_python(d)


def test_warnings_for_silent_agent_and_decreasing_turn_index(tmp_path):
    t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "x", turn_index=5),
                                    AgentTurn("a", "r", "y", turn_index=3)],
                        handoffs=[Handoff("ghost", "a", None, turn_index=1)])
    p = tmp_path / "w.jsonl"
    save_traces([t], p)
    with pytest.warns(TraceWarning) as rec:
        load_traces(p)
    msg = str(rec[0].message)
    assert "'ghost' hands off but never speaks" in msg
    assert "turns[1] › turn_index: turn_index decreases (5 → 3)" in msg


def test_error_lists_every_problem_with_location(tmp_path):
    p = tmp_path / "traces.jsonl"
    good = json.dumps(trace_to_dict(make_trace()))
    p.write_text(good + "\n" + '{"conversation_id": "x", "handoffs": [{"from_agent": "a"}, '
                 '{"from_agent": "a", "to_agent": "b", "reason": "why"}]}\n', encoding="utf-8")
    with pytest.raises(TraceValidationError) as ei:
        load_traces(p)
    messages = [str(pr) for pr in ei.value.problems]
    assert "traces.jsonl:2 › handoffs[0] › to_agent: field required" in messages
    reason = [m for m in messages if "handoffs[1] › reason" in m]
    assert reason and "'capability_match', 'escalation', 'specialization' or 'fallback'" in reason[0]
    assert "2 problems in traces" in str(ei.value)


def test_trace_from_dict_validates():
    with pytest.raises(TraceValidationError, match="conversation_id: field required"):
        trace_from_dict({"turns": []})


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(TraceValidationError, match="nope.jsonl: file not found"):
        load_traces(tmp_path / "nope.jsonl")


def test_frames():
    t = make_trace()
    df = traces_to_frame([t])
    assert list(df.columns) == ["conversation_id", "turn_index", "agent_id", "agent_role",
                                "message", "n_tool_calls"]
    assert len(df) == 4 and df["agent_id"].tolist() == ["triage", "billing", "tech", "billing"]
    hf = handoffs_to_frame([t])
    assert hf["to_agent"].tolist() == ["billing", "tech", "billing"]
    assert hf["reason"].tolist()[:2] == ["specialization", "escalation"]
    assert hf["reason"].isna().tolist() == [False, False, True]
    assert hf.loc[1, "context_keys"] == ["error_code"]


def test_huge_single_line_is_rejected_in_bounded_memory(tmp_path):
    import tracemalloc

    from maev_kit.traces import validate_trace_file
    p = tmp_path / "huge.jsonl"
    with open(p, "wb") as f:
        f.write(b'{"conversation_id": "big", "metadata": {"blob": "')
        chunk = b"x" * (1 << 20)
        for _ in range(50):
            f.write(chunk)
        f.write(b'"}}\n')
        f.write(json.dumps(trace_to_dict(make_trace())).encode() + b"\n")
    tracemalloc.start()
    traces, errors, _ = validate_trace_file(p)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [t.conversation_id for t in traces] == ["c-1"]
    assert len(errors) == 1 and errors[0].line == 1 and "over the limit" in errors[0].message
    assert peak < 40 * (1 << 20), f"peak {peak / 1e6:.0f} MB for a 50 MB line"
