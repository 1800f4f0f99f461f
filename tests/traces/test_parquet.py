"""Parquet traces: round trip equal to JSONL, schema version, one clear error per bad row."""

from __future__ import annotations

import json
import warnings

import pytest

pa = pytest.importorskip("pyarrow")
import pyarrow.parquet as pq  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from maev_kit.datasets import load_labeled_set  # noqa: E402
from maev_kit.errors import TraceValidationError  # noqa: E402
from maev_kit.traces import (  # noqa: E402
    AgentTurn,
    Handoff,
    MultiAgentTrace,
    UserMessage,
    load_traces,
    save_traces,
)
from maev_kit.traces._parquet import traces_to_table  # noqa: E402


def test_support_desk_round_trip_equals_jsonl(tmp_path):
    traces = load_labeled_set("support_desk").traces
    save_traces(traces, tmp_path / "t.parquet")
    save_traces(traces, tmp_path / "t.jsonl")
    assert load_traces(tmp_path / "t.parquet") == load_traces(tmp_path / "t.jsonl") == traces
    meta = pq.read_schema(tmp_path / "t.parquet").metadata
    assert meta[b"maev_kit.schema_version"] == b"1"


_text = st.text(max_size=12)
_json = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | _text,
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                     max_leaves=6)
_turn = st.builds(AgentTurn, _text, _text, _text,
                  st.lists(st.dictionaries(_text, _json, max_size=2), max_size=2),
                  st.integers(0, 50))
_handoff = st.builds(Handoff, _text, _text,
                     st.sampled_from([None, "escalation", "fallback", "capability_match"]),
                     st.dictionaries(_text, _json, max_size=3), st.integers(0, 50),
                     st.sampled_from(["transfer", "delegate"]))
_trace = st.builds(MultiAgentTrace, _text, st.lists(_turn, max_size=4),
                   st.lists(_handoff, max_size=3),
                   st.lists(st.builds(UserMessage, _text, st.integers(0, 50)), max_size=2),
                   st.dictionaries(_text, _json, max_size=2))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(st.lists(_trace, min_size=1, max_size=4, unique_by=lambda t: t.conversation_id))
def test_generated_traces_round_trip_like_jsonl(tmp_path, traces):
    save_traces(traces, tmp_path / "g.parquet")
    save_traces(traces, tmp_path / "g.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_traces(tmp_path / "g.parquet") == load_traces(tmp_path / "g.jsonl") == traces


def _write(tmp_path, table):
    p = tmp_path / "bad.parquet"
    pq.write_table(table, p)
    return p


def test_bad_rows_named_by_file_row_and_field(tmp_path):
    good = [MultiAgentTrace("c0"),
            MultiAgentTrace("c1", handoffs=[Handoff("a", "b", "escalation", {"k": 1})]),
            MultiAgentTrace("c2", turns=[AgentTurn("a", "r", "hi", [{"name": "f"}])])]
    schema = traces_to_table(good).schema
    rows = traces_to_table(good).to_pylist()
    rows[1]["handoffs"][0]["reason"] = "whim"
    rows[2]["turns"][0]["tool_calls"] = "[{oops"
    rows.append(dict(rows[0], conversation_id="c3", metadata="[1]"))
    rows.append(dict(rows[0]))
    p = _write(tmp_path, pa.Table.from_pylist(rows, schema=schema))
    with pytest.raises(TraceValidationError) as e:
        load_traces(p)
    text = str(e.value)
    assert text.startswith("4 problems")
    assert "bad.parquet › row 2 › handoffs[0] › reason: unknown reason 'whim'" in text
    assert "bad.parquet › row 3 › turns[0] › tool_calls: not valid JSON" in text
    assert "row 4 › metadata: expected a JSON string of an object, got list" in text
    assert "row 5 › conversation_id: duplicate conversation_id 'c0' (first on row 1)" in text


def test_wrong_schema_version_and_columns(tmp_path):
    table = traces_to_table([MultiAgentTrace("c1")])
    newer = table.replace_schema_metadata({b"maev_kit.schema_version": b"9"})
    with pytest.raises(TraceValidationError, match="unsupported schema_version '9'"):
        load_traces(_write(tmp_path, newer))
    with pytest.raises(TraceValidationError, match="conversation_id: column missing"):
        load_traces(_write(tmp_path, table.drop_columns(["conversation_id"])))
    with pytest.raises(TraceValidationError, match="turns: column has type string"):
        load_traces(_write(tmp_path, table.set_column(1, "turns", pa.array(["x"]))))
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(TraceValidationError, match="junk.parquet: not a readable Parquet"):
        load_traces(tmp_path / "junk.parquet")
    with pytest.raises(TraceValidationError, match="file not found"):
        load_traces(tmp_path / "missing.parquet")


def test_free_form_objects_are_json_strings(tmp_path):
    t = MultiAgentTrace("c1", turns=[AgentTurn("a", "r", "m", [{"name": "f", "args": [1]}])],
                        handoffs=[Handoff("a", "b", None, {"amount": 12.5})],
                        metadata={"team": "x"})
    row = traces_to_table([t]).to_pylist()[0]
    assert json.loads(row["handoffs"][0]["context_passed"]) == {"amount": 12.5}
    assert json.loads(row["turns"][0]["tool_calls"]) == [{"name": "f", "args": [1]}]
    assert json.loads(row["metadata"]) == {"team": "x"}


def test_warnings_are_those_of_check_trace_on_every_row(tmp_path):
    """The fast path looks for warnings on the columns; it must find what check_trace finds."""
    from maev_kit.traces import check_trace

    speak = [AgentTurn("a", "r", "hi", turn_index=1), AgentTurn("b", "r", "yo", turn_index=3)]
    traces = [MultiAgentTrace("ok", speak, [Handoff("a", "b", None, {}, 2)]),
              MultiAgentTrace("ghost", speak, [Handoff("c", "b", None, {}, 2)]),
              MultiAgentTrace("down", [speak[1], speak[0]], [Handoff("b", "a", None, {}, 4)]),
              MultiAgentTrace("hdown", speak, [Handoff("a", "b", None, {}, 5),
                                               Handoff("b", "a", None, {}, 2)]),
              MultiAgentTrace("mute", [], [Handoff("a", "b", None, {}, 0)]),
              MultiAgentTrace("other-row", [AgentTurn("c", "r", "x")], [])]
    save_traces(traces, tmp_path / "w.parquet")
    expected = [f"row {r} › {w.path}: {w.message}" for r, t in enumerate(traces, 1)
                for w in check_trace(t)]
    assert len(expected) == 4
    with pytest.warns(UserWarning) as record:
        assert load_traces(tmp_path / "w.parquet") == traces
    text = str(record[0].message)
    assert text.startswith("4 warning(s)")
    assert [line.split(" › ", 1)[1] for line in text.splitlines()[1:]] == expected
