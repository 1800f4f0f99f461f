"""Parquet traces: round trip equal to JSONL, schema version, one clear error per bad row."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

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
from maev_kit.traces import _parquet  # noqa: E402
from maev_kit.traces._parquet import save_parquet, table_to_traces, traces_to_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _fast_path_taken(path):
    """The column-by-column reader accepts the file (else it falls back to row by row)."""
    table = pq.read_table(path, read_dictionary=_parquet._READ_AS_DICTIONARY)
    return _parquet._fast_build(table) is not None


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
    assert _fast_path_taken(tmp_path / "g.parquet")


def _bench_traces(n):
    """The first ``n`` traces of benchmarks/bench_scale.py's corpus."""
    spec = importlib.util.spec_from_file_location("bench_scale",
                                                  ROOT / "benchmarks" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_corpus(n)[0]


def _same(a, b, where="trace"):
    """Equal and of the same types all the way down (``==`` alone takes "escalation" for
    HandoffReason.ESCALATION and True for 1), dict keys in the same order."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if dataclasses.is_dataclass(a):
        names = [f.name for f in dataclasses.fields(a)]
        if hasattr(a, "__dict__"):
            assert list(vars(a)) == list(vars(b)) == names, where
        for name in names:  # a slot left unset raises AttributeError here
            _same(getattr(a, name), getattr(b, name), f"{where}.{name}")
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for k in a:
            _same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def test_benchmark_traces_load_field_by_field_like_jsonl(tmp_path):
    traces = _bench_traces(300)
    odd = {"amount": 12.5, "big": 2**70, "neg": -3, "flag": False, "one": True, "none": None,
           "nested": [{"a": [1, "two", None, 0.1]}, []], "ünï": "çödé ☃ \"q\" \\", "empty": {},
           "": ""}
    traces[0].handoffs[0].context_passed = odd
    traces[0].handoffs[0].reason = None
    traces[0].handoffs[-1].mode = "delegate"
    traces[1].turns[0].tool_calls = [{"name": "f", "arguments": odd}, {}]
    traces[1].turns[1].message = ""
    traces[2].metadata = dict(odd, team="x")
    traces[3] = MultiAgentTrace("ünïcode id ☃")  # no turns, handoffs, user messages
    assert any(h.reason is None for t in traces for h in t.handoffs)
    assert any(a.tool_calls for t in traces for a in t.turns)
    save_traces(traces, tmp_path / "b.parquet")
    save_traces(traces, tmp_path / "b.jsonl")
    assert _fast_path_taken(tmp_path / "b.parquet")
    from_parquet, from_jsonl = load_traces(tmp_path / "b.parquet"), load_traces(tmp_path / "b.jsonl")
    assert len(from_parquet) == len(from_jsonl) == len(traces)
    for i, (p, j, t) in enumerate(zip(from_parquet, from_jsonl, traces)):
        _same(p, j, f"trace {i}")
        _same(p, t, f"trace {i}")
        assert repr(p) == repr(j)


def test_loaded_objects_are_independent_and_mutable(tmp_path):
    traces = [MultiAgentTrace(c, [AgentTurn("a", "r", "m"), AgentTurn("b", "r", "n")],
                              [Handoff("a", "b"), Handoff("b", "a", "escalation")],
                              [UserMessage("hi")])
              for c in ("c1", "c2")]
    save_traces(traces, tmp_path / "m.parquet")
    assert _fast_path_taken(tmp_path / "m.parquet")
    got = load_traces(tmp_path / "m.parquet")
    assert got == traces and repr(got) == repr(traces)
    first = got[0]
    first.turns[0].tool_calls.append({"name": "f"})
    first.handoffs[0].context_passed["k"] = 1
    first.metadata["k"] = 1
    first.turns.append(AgentTurn("b", "r", "x"))
    first.user_messages[0].content = "changed"
    first.handoffs[1].reason = None
    assert first.turns[1].tool_calls == [] and first.handoffs[1].context_passed == {}
    assert got[1] == traces[1] == MultiAgentTrace(
        "c2", [AgentTurn("a", "r", "m"), AgentTurn("b", "r", "n")],
        [Handoff("a", "b"), Handoff("b", "a", "escalation")], [UserMessage("hi")])
    assert first != traces[0] and first.user_messages[0] == UserMessage("changed")


def test_row_groups_slices_and_dictionary_columns(tmp_path):
    traces = _bench_traces(40)
    save_parquet(traces, tmp_path / "r.parquet", row_group_size=7)
    assert load_traces(tmp_path / "r.parquet") == traces
    plain = pq.read_table(tmp_path / "r.parquet")
    assert plain.column("turns").num_chunks > 1
    every = [f"{c}.list.element.{f}" for c, fs in _parquet._FIELDS.items() for f in fs
             if f != "turn_index"] + ["conversation_id", "metadata"]
    for table in (plain, pq.read_table(tmp_path / "r.parquet", read_dictionary=every)):
        assert _parquet._fast_build(table) is not None
        assert table_to_traces(table) == (traces, [])
        part = table.slice(10, 20)
        assert table_to_traces(part, first_row=11) == (traces[10:30], [])


def test_batches_keep_file_order_over_row_groups_of_any_size(tmp_path, monkeypatch):
    """load_parquet reads about _BATCH_ROWS rows at a time: small row groups together, a large
    one in slices; the traces come out in file order and a duplicate across batches is found."""
    monkeypatch.setattr(_parquet, "_BATCH_ROWS", 5)
    traces = _bench_traces(60)
    with pq.ParquetWriter(tmp_path / "s.parquet", _parquet.trace_schema()) as w:
        for a, b in ((0, 2), (2, 5), (5, 17), (17, 20), (20, 21), (21, 44), (44, 60)):
            w.write_table(traces_to_table(traces[a:b]))
    assert pq.ParquetFile(tmp_path / "s.parquet").metadata.num_row_groups == 7
    assert load_traces(tmp_path / "s.parquet") == traces
    dup = traces[:30] + [MultiAgentTrace(traces[3].conversation_id)] + traces[31:]
    save_parquet(dup, tmp_path / "d.parquet", row_group_size=10)
    with pytest.raises(TraceValidationError, match="row 31 › conversation_id: duplicate "
                       "conversation_id 'conv-000003' \\(first on row 4\\)"):
        load_traces(tmp_path / "d.parquet")


def test_fast_built_objects_are_as_compact_as_constructed_ones():
    """In a fresh process the bulk builders may come first: their objects must not each carry
    a dict (what CPython gives objects allocated before their class has seen its attributes,
    and from then on to every object of the class, constructed ones included)."""
    code = """
import sys, tracemalloc
from maev_kit.traces import _model as m
n = 20000
s, d, i, lists = ["x"] * n, [{} for _ in range(n)], [0] * n, [[] for _ in range(n)]
builds = {"AgentTurn": ((s, s, s, lists, i), m._agent_turns),
          "Handoff": ((s, s, [None] * n, d, i, ["transfer"] * n), m._handoffs),
          "UserMessage": ((s, i), m._user_messages),
          "MultiAgentTrace": ((s, lists, lists, lists, d), m._traces)}
used = []
for name, (cols, fast) in builds.items():
    tracemalloc.start()
    objs = fast(*cols, n) if sys.argv[1] == "fast" else list(map(getattr(m, name), *cols))
    used.append(tracemalloc.get_traced_memory()[0])
    tracemalloc.stop()
print(*used)
"""
    used = {how: [int(b) for b in subprocess.run([sys.executable, "-c", code, how],
                                                 capture_output=True, text=True,
                                                 check=True).stdout.split()]
            for how in ("fast", "constructed")}
    assert all(f < 1.1 * c for f, c in zip(used["fast"], used["constructed"])), used


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


@pytest.mark.parametrize("objects, lists", [
    # a string spans two texts: joined by "," they read {} and {"x": ","}
    (['{}, {"x": "', '"}'], ['[], [{"x": "', '"}]']),
    # brackets span them: {"a": [1, 2]} and {}
    (['{"a": [1', '2]}, {}'], ['[{"a": [1', '2]}], []']),
    # and hold the separator's string: {"a": [1, <separator>, 2]}, <separator>, {}
    (['{"a": [1', '2]}, "\\u0000", {}'], ['[{"a": [1', '2]}], "\\u0000", []']),
])
def test_texts_that_are_not_one_value_each_are_bad_rows(tmp_path, objects, lists):
    """Free-form columns are parsed in one call; texts that parse only when joined must not
    pass: the file is read row by row and the bad text named, as when it is bad alone."""
    good = [MultiAgentTrace(f"c{i}", [AgentTurn("a", "r", "m", [{"name": "f"}])],
                            [Handoff("a", "b", None, {"k": i})], metadata={"i": i})
            for i in range(3)]
    schema = traces_to_table(good).schema
    for field, where, cells in (("tool_calls", "turns[0] › tool_calls", lists),
                                ("context_passed", "handoffs[0] › context_passed", objects),
                                ("metadata", "metadata", objects)):
        rows = traces_to_table(good).to_pylist()
        for row, cell in zip(rows[1:], cells):
            if field == "metadata":
                row["metadata"] = cell
            else:
                row["turns" if field == "tool_calls" else "handoffs"][0][field] = cell
        p = _write(tmp_path, pa.Table.from_pylist(rows, schema=schema))
        assert not _fast_path_taken(p)
        with pytest.raises(TraceValidationError) as e:
            load_traces(p)
        assert f"bad.parquet › row 2 › {where}: not valid JSON" in str(e.value)


_json_text = st.one_of(
    st.none(),
    st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                 lambda inner: st.lists(inner, max_size=3)
                 | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                 max_leaves=6).map(json.dumps),
    st.lists(st.sampled_from(['{', '}', '[', ']', '"', ',', ':', '1', ' ', '\\', 'u0000',
                              '"\\u0000"', '"\\u0001"', '"x"', '{}', '[]', '\n']),
             max_size=8).map("".join))


@st.composite
def _split_json(draw):
    """Texts that give valid JSON when joined by "," and often are not values alone: the
    text of some values, cut at some of its commas (a string's, an object's or the list's)."""
    value = st.recursive(st.integers(0, 9) | st.text(',"x[]{}:\0', max_size=4),
                         lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(st.text(',"x', max_size=2), inner, max_size=3),
                         max_leaves=5)
    parts = ",".join(map(json.dumps, draw(st.lists(value, min_size=1, max_size=4)))).split(",")
    cuts = sorted(draw(st.sets(st.integers(1, len(parts) - 1))) if len(parts) > 1 else set())
    return [",".join(parts[a:b]) for a, b in zip([0, *cuts], [*cuts, len(parts)])]


@settings(max_examples=300, deadline=None)
@given(st.lists(_json_text, max_size=6) | _split_json(), st.sampled_from([dict, list]))
def test_json_texts_as_each_text_parsed_alone(texts, kind):
    """The one-call parse gives what parsing each text alone gives (a null: an empty
    ``kind``), or None (read row by row) when a text is not one value of ``kind``; texts
    that hold the first separator's string are read with the next one."""
    def alone(text):
        if text is None:
            return kind()
        value = json.loads(text)
        if type(value) is not kind:
            raise ValueError(text)
        return value

    try:
        expected = [alone(t) for t in texts]
    except ValueError:
        expected = None
    got = _parquet._json_texts(pa.array(texts, pa.string()), kind)
    assert got == expected
    if got:
        assert len({id(v) for v in got}) == len(got)  # each its own object


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


def test_read_row_groups_without_turns_reads_what_the_metrics_read(tmp_path):
    """turns=False: ids, handoffs and the number of turns as a full read gives them, and
    the same scores; the turns themselves are placeholders that refuse to be read."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_metrics import CONTRACTS

    from maev_kit.evaluation import score_conversation

    spec = importlib.util.spec_from_file_location("bench_scale",
                                                  ROOT / "benchmarks" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    traces, exps = mod.make_corpus(120)
    save_parquet(traces, tmp_path / "t.parquet", row_group_size=25)
    full, no_problems = _parquet.read_row_groups(tmp_path / "t.parquet", [1, 2, 4],
                                                 first_row=26)
    thin, none = _parquet.read_row_groups(tmp_path / "t.parquet", [1, 2, 4], first_row=26,
                                          turns=False)
    assert no_problems == none == [] and full == traces[25:75] + traces[100:]
    assert [t.conversation_id for t in thin] == [t.conversation_id for t in full]
    assert [t.handoffs for t in thin] == [t.handoffs for t in full]
    assert [len(t.turns) for t in thin] == [len(t.turns) for t in full]
    assert all(t.user_messages == [] and t.metadata == {} for t in thin)
    assert all(a is _parquet.UNREAD_TURN for t in thin for a in t.turns)
    with pytest.raises(AttributeError, match="turn was not read.*'message'"):
        thin[0].turns[0].message
    exp = {e.conversation_id: e for e in exps}
    for a, b in zip(full, thin):
        for kw in ({}, {"not_applicable": "article"}):
            assert repr(vars(score_conversation(a, exp[a.conversation_id], None, CONTRACTS,
                                                **kw))) == \
                repr(vars(score_conversation(b, exp[b.conversation_id], None, CONTRACTS, **kw)))


def test_read_row_groups_without_turns_reports_problems_as_a_full_read(tmp_path):
    good = [MultiAgentTrace(f"c{i}", turns=[AgentTurn("a", "r", "hi")],
                            handoffs=[Handoff("a", "b", "escalation", {"k": i})])
            for i in range(4)]
    rows = traces_to_table(good).to_pylist()
    rows[2]["handoffs"][0]["reason"] = "whim"
    rows[3]["turns"][0]["tool_calls"] = "[{oops"  # a turn: named too, once a read falls back
    with pq.ParquetWriter(tmp_path / "bad.parquet", _parquet.trace_schema()) as w:
        for a, b in ((0, 2), (2, 4)):
            w.write_table(pa.Table.from_pylist(rows[a:b], schema=_parquet.trace_schema()))
    for turns in (True, False):
        traces, problems = _parquet.read_row_groups(tmp_path / "bad.parquet", [1],
                                                    first_row=3, turns=turns)
        assert [str(p) for p in problems] == [
            "bad.parquet › row 3 › handoffs[0] › reason: unknown reason 'whim'; expected one "
            "of capability_match, escalation, specialization, fallback (or null when unknown)",
            "bad.parquet › row 4 › turns[0] › tool_calls: not valid JSON (Expecting property "
            "name enclosed in double quotes: line 1 column 3 (char 2))"]
        assert traces == []
    # a clean group of the same file reads without turns
    thin, problems = _parquet.read_row_groups(tmp_path / "bad.parquet", [0], turns=False)
    assert problems == [] and [t.conversation_id for t in thin] == ["c0", "c1"]
    # a wrong schema is reported, not read around
    pq.write_table(traces_to_table(good).set_column(1, "turns", pa.array(["x"] * 4)),
                   tmp_path / "schema.parquet")
    _, problems = _parquet.read_row_groups(tmp_path / "schema.parquet", [0], turns=False)
    assert "turns: column has type string" in str(problems[0])
