"""An expectations file routed line by line (route_expectation_lines) and read back by spans
(read_expectation_spans) gives read_expectations' records and problems, line for line."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maev_kit.expectations import (
    ConversationExpectations,
    HandoffExpectation,
    read_expectation_lines,
    read_expectation_spans,
    read_expectations,
    route_expectation_lines,
    save_expectations,
)


def _records(n: int) -> list[ConversationExpectations]:
    return [ConversationExpectations(f"c-{i}", handoffs=[HandoffExpectation(
        "billing", "escalation", ["account_number"])]) for i in range(n)]


def _routed(path, where):
    """route, then read each destination's spans and the rest: records and problems."""
    spans, rest, problems = route_expectation_lines(path, where, name="e.jsonl")
    recs = {}
    for dest, s in spans.items():
        got, more, _ = read_expectation_spans(path, s, name="e.jsonl")
        assert all(where[r.conversation_id] == dest for r in got)
        recs.update((r.conversation_id, r) for r in got)
        problems += more
    got, more, _ = read_expectation_lines(rest, name="e.jsonl")
    recs.update((r.conversation_id, r) for r in got)
    return recs, sorted(map(str, problems + more))


def test_each_line_reaches_the_destination_of_its_id(tmp_path):
    path = tmp_path / "e.jsonl"
    save_expectations(_records(50), path)
    where = {f"c-{i}": i // 2 % 4 for i in range(0, 50, 2)}  # odd ids belong nowhere
    spans, rest, problems = route_expectation_lines(path, where)
    assert problems == [] and sorted(spans) == [0, 1, 2, 3]
    assert [json.loads(jl.raw)["conversation_id"] for jl in rest] == \
        [f"c-{i}" for i in range(1, 50, 2)]
    got, problems, lines = read_expectation_spans(path, spans[2], name="e.jsonl")
    assert [r.conversation_id for r in got] == [f"c-{i}" for i in range(4, 50, 8)]
    assert lines == {f"c-{i}": i + 1 for i in range(4, 50, 8)} and problems == []
    assert got == [r for r in _records(50) if r.conversation_id in lines]


def test_ids_the_pattern_cannot_read_are_parsed(tmp_path):
    """An escaped id, a nested conversation_id, spaces around the colon: each line still goes
    where its top-level id says."""
    path = tmp_path / "e.jsonl"
    lines = [
        '{"conversation_id": "a\\"b", "handoffs": []}',
        '{"metadata": {"conversation_id": "c-1"}, "conversation_id": "c-2"}',
        '{"conversation_id" :  "c-3"}',
        '{"handoffs": [], "conversation_id":"c-\\u0034"}',
        '{"conversation\\u005fid": "c-5", "metadata": {"conversation_id": "c-1"}}',
    ]
    path.write_text("\n".join(lines) + "\n")
    where = {'a"b': 0, "c-1": 1, "c-2": 2, "c-3": 3, "c-4": 4, "c-5": 5}
    spans, rest, problems = route_expectation_lines(path, where)
    assert rest == [] and problems == []
    assert {d: list(s[2::3]) for d, s in spans.items()} == {0: [1], 2: [2], 3: [3], 4: [4], 5: [5]}


def test_problems_are_read_expectations_problems(tmp_path):
    path = tmp_path / "e.jsonl"
    good = [json.dumps({"conversation_id": f"c-{i}"}) for i in range(6)]
    lines = [good[0], '{"conversation_id": "c-1", "handoffs": [{"expected_target": 5}]}',
             "not json", good[2], '["c-3"]', good[2], "", good[4],
             '{"conversation_id": "c-5", "extra": 1}', '{"conversation_id": "c-6"']
    path.write_text("\n".join(lines))  # the last line unterminated: looks truncated
    _, want, _ = read_expectations(path, name="e.jsonl")
    assert len(want) == 6
    recs, got = _routed(path, {f"c-{i}": i % 2 for i in range(7)})
    assert got == sorted(map(str, want))
    assert sorted(recs) == ["c-0", "c-2", "c-4"]


def test_a_binary_file_is_reported_by_the_router(tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_bytes(b'{"conversation_id": "c-0"}\n{"conversation_id": "c\x00"}\n')
    _, _, problems = route_expectation_lines(path, {"c-0": 0}, name="e.jsonl")
    assert [str(p) for p in problems] == ["e.jsonl:2: binary data (a NUL byte at column 23): "
                                          "not a JSONL text file"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["good", "dup", "bad_json", "bad_field", "blank", "nested"]),
                max_size=25), st.integers(1, 4), st.randoms())
def test_routing_then_reading_equals_reading_the_file(tmp_path_factory, kinds, dests, rnd):
    """Whatever the lines and the destinations, routed reading keeps exactly the records and
    problems of read_expectations (problems compared as a set: they come by destination)."""
    path = tmp_path_factory.mktemp("e") / "e.jsonl"
    lines = []
    for i, kind in enumerate(kinds):
        cid = f"c-{i}" if kind != "dup" or i == 0 else "c-0"
        rec = {"conversation_id": cid, "handoffs": [{"expected_target": "billing"}]}
        lines.append({"good": json.dumps(rec), "dup": json.dumps(rec), "bad_json": "{" + cid,
                      "bad_field": json.dumps({**rec, "handoffs": [{"target": 1}]}),
                      "blank": "  ",
                      "nested": json.dumps({"metadata": {"conversation_id": "x"}, **rec})}[kind])
    path.write_text("\n".join(lines) + "\n")
    want_recs, want, _ = read_expectations(path, name="e.jsonl")
    where = {f"c-{i}": rnd.randrange(dests) for i in range(len(kinds)) if rnd.random() < 0.8}
    recs, got = _routed(path, where)
    assert got == sorted(map(str, want))
    assert recs == {r.conversation_id: r for r in want_recs}


def test_spans_come_in_file_order(tmp_path):
    """Spans come in file order within a destination, so a worker reads forward."""
    path = tmp_path / "e.jsonl"
    recs = _records(200)
    random.Random(0).shuffle(recs)
    save_expectations(recs, path)
    spans, _, _ = route_expectation_lines(path, {r.conversation_id: 0 for r in recs})
    offsets = list(spans[0][0::3])
    assert offsets == sorted(offsets) and len(offsets) == 200


def _route_line_by_line(path, where, max_line_bytes):
    """The router's definition, one line at a time: the id by the pattern when it matches once
    in a line without \\u escapes, else by parsing the line."""
    import re

    from maev_kit._jsonl import iter_raw_lines, parse_json_line

    spans, rest, problems = {}, [], []
    for jl in iter_raw_lines(path, name="e.jsonl", max_line_bytes=max_line_bytes):
        if jl.problem is not None:
            problems.append(str(jl.problem))
            continue
        found = re.findall(rb'"conversation_id"\s*:\s*"([^"\\]*)"', jl.raw)
        if len(found) == 1 and b"\\u" not in jl.raw:
            cid = found[0].decode("utf-8", "replace")
        else:
            value = parse_json_line(jl, "e.jsonl").value
            cid = value.get("conversation_id") if value is not None else None
        dest = where.get(cid) if isinstance(cid, str) else None
        if dest is None:
            rest.append((jl.line, jl.offset, jl.raw))
        else:
            spans.setdefault(dest, []).extend((jl.offset, len(jl.raw), jl.line))
    return spans, rest, problems


_LINES = {
    "good": lambda i: json.dumps({"conversation_id": f"c-{i}", "handoffs": []}),
    "spaced": lambda i: f'{{"handoffs": [] , "conversation_id" \t:  "c-{i}"}}',
    "escaped_text": lambda i: json.dumps({"conversation_id": f"c-{i}", "note": "caf\u00e9"}),
    "escaped_key": lambda i: f'{{"conversation\\u005fid": "c-{i}"}}',
    "escaped_key_nested": lambda i: (f'{{"conversation\\u005fid": "c-{i}", '
                                     '"metadata": {"conversation_id": "c-0"}}'),
    "nested": lambda i: json.dumps({"metadata": {"conversation_id": "c-0"},
                                    "conversation_id": f"c-{i}"}),
    "nested_only": lambda i: json.dumps({"metadata": {"conversation_id": f"c-{i}"}}),
    "id_as_value": lambda i: json.dumps({"conversation_id": f"c-{i}", "x": "conversation_id"}),
    "non_utf8": lambda i: f'{{"conversation_id": "c-{i}\xff"}}',
    "bad_json": lambda i: f'{{"conversation_id": "c-{i}"',
    "blank": lambda i: " \t",
    "empty": lambda i: "",
    "crlf": lambda i: json.dumps({"conversation_id": f"c-{i}"}) + "\r",
    "long": lambda i: json.dumps({"conversation_id": f"c-{i}", "pad": "x" * 150}),
}


def _encoded(kinds):
    """The lines of these kinds, as bytes (``non_utf8`` with a bare 0xff byte)."""
    return [_LINES[k](i).encode("utf-8").replace(b"\xc3\xbf", b"\xff")
            for i, k in enumerate(kinds)]


def _routes_as_line_by_line(path, where, block):
    """Route ``path`` in blocks of ``block`` bytes (lines over 120 bytes too long) and assert
    the line-by-line definition's spans, unrouted lines and problems; the problems."""
    from unittest import mock

    import maev_kit.expectations as E

    with mock.patch.object(E, "_ROUTE_BLOCK", block):
        spans, rest, problems = route_expectation_lines(path, where, name="e.jsonl",
                                                        max_line_bytes=120)
    want_spans, want_rest, want_problems = _route_line_by_line(path, where, 120)
    assert {d: list(s) for d, s in spans.items()} == want_spans
    assert [(jl.line, jl.offset, jl.raw) for jl in rest] == want_rest
    assert list(map(str, problems)) == want_problems
    return want_problems


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(sorted(_LINES)), max_size=30), st.integers(1, 400),
       st.booleans(), st.booleans(), st.randoms())
def test_block_routing_equals_routing_line_by_line(tmp_path_factory, kinds, block, binary,
                                                   terminated, rnd):
    """Whatever the lines, blocks of any size (lines of every kind mixed in one block or
    alone) route each line as the line-by-line definition does: same spans in file order,
    same unrouted lines, same problems (a line over the limit, a binary line)."""
    path = tmp_path_factory.mktemp("e") / "e.jsonl"
    text = _encoded(kinds)
    if binary and text:
        text[rnd.randrange(len(text))] = b'{"conversation_id": "c\x00"}'
    path.write_bytes(b"\n".join(text) + (b"\n" if terminated else b""))
    where = {f"c-{i}": rnd.randrange(3) for i in range(len(kinds)) if rnd.random() < 0.8}
    _routes_as_line_by_line(path, where, block)


_PLAIN = ["good"] * 11 + ["escaped_key_nested", "spaced", "escaped_text", "crlf",
                         "non_utf8"] + ["good"] * 10


@pytest.mark.parametrize("block", [1, 150, 1 << 20])
@pytest.mark.parametrize("long_line", [False, True])
@pytest.mark.parametrize("kinds", [sorted(set(_LINES) - {"long"}) * 2, _PLAIN],
                         ids=["every kind", "plain lines, two escaped"])
def test_every_kind_of_line_in_blocks_of_any_size(tmp_path, block, long_line, kinds):
    """Each kind of line twice, or lines whose ids the pattern reads but for two escaped
    ones; in one block or a block a line; with or without a line over the limit halfway:
    routed as line by line."""
    kinds = list(kinds)
    if long_line:
        kinds.insert(len(kinds) // 2, "long")
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(_encoded(kinds)) + b"\n")
    where = {f"c-{i}": i % 3 for i in range(len(kinds)) if i % 5}
    assert len(_routes_as_line_by_line(path, where, block)) == long_line


_EDGE_LINES = [
    b'{"conversation_id": "a\\ud800"}',  # a lone surrogate: json.loads reads it
    b'{"conversation_id": "b", "conversation_id": "c"}',  # the last key wins
    b'{"conversation_id": "d\tx"}',  # a raw tab in a string: not JSON
    b'{"conversation_id": "e\xffx"}',  # not UTF-8
    b'\xef\xbb\xbf{"conversation_id": "f"}',  # a byte-order mark
    b'{"conversation_id": "g"} x',
    b'{"conversation_id": "h", "metadata": {"v": NaN, "w": 1e400, "z": -0.0}}',
    b'{"conversation_id": "i", "metadata": {"v": 1e400, "big": 100000000000000000000001}}',
    b'{"conversation_id": "j", "key_facts": [{"fact_id": "f", "text": "t", '
    b'"handoff_index": "1", "derived": 1}]}',
    b'{"conversation_id": "k", "key_facts": [{"fact_id": "f", "text": "t", '
    b'"handoff_index": 1.5}]}',
    b'{"conversation_id": "l", "handoffs": [{"expected_target": "b", '
    b'"expected_reason": "ESCALATION"}]}',
    b'{"conversation_id": "m", "handoffs": [{"expected_target": "b", '
    b'"required_context_keys": ["x", 1]}]}',
    b'["n"]',
    b'{"conversation_id": "o", "metadata": ' + b'[' * 3000 + b']' * 3000 + b'}',
    b'{"conversation_id": "p", "metadata": {"\\u00e9": "caf\\u00e9", "s": "\\ud83d\\ude00"}}',
    b'{"conversation_id": "q", "extra": 1}',
    b'{"conversation_id": "r", "key_facts": [{"fact_id": "f", "text": "t", "handoff_index": 1},'
    b' {"fact_id": "f", "text": "u", "handoff_index": 1}]}',
]


def _read_by_json_loads(path):
    """read_expectations' definition: each line parsed by json.loads, then validated."""
    import maev_kit.expectations as E
    from maev_kit._jsonl import iter_json_lines

    return E._records(iter_json_lines(path, name="e.jsonl"), "e.jsonl")


def test_pydantic_json_parser_reads_as_json_loads_then_validation(tmp_path):
    """Lines pydantic's JSON parser refuses (or reads otherwise) fall back: records, values
    and problems are those of json.loads then validate_python, by file, by spans and by
    unparsed lines."""
    path = tmp_path / "e.jsonl"
    path.write_bytes(b"\n".join(_EDGE_LINES) + b"\n")
    recs, problems, lines = _read_by_json_loads(path)
    assert {r.conversation_id for r in recs} == {"a\ud800", "c", "h", "i", "j", "p", "r"}
    assert recs[1].metadata == {} and str(recs[3].metadata["big"]) == "1" + "0" * 22 + "1"
    assert len(problems) == 11 and "character at column 23" in str(problems[0])
    want = ([repr(r) for r in recs], list(map(str, problems)), lines)
    got = read_expectations(path, name="e.jsonl")
    assert ([repr(r) for r in got[0]], list(map(str, got[1])), got[2]) == want
    spans, rest, _ = route_expectation_lines(path, {}, name="e.jsonl")
    assert spans == {}
    got = read_expectation_lines(rest, name="e.jsonl")
    assert ([repr(r) for r in got[0]], list(map(str, got[1])), got[2]) == want
    spans, rest, _ = route_expectation_lines(path, {cid: 0 for cid in "abcdefghijklmnopqr"},
                                             name="e.jsonl")
    got = read_expectation_spans(path, spans[0], name="e.jsonl")
    got_rest = read_expectation_lines(rest, name="e.jsonl")
    assert sorted(map(repr, got[0] + got_rest[0])) == sorted(want[0])
    assert sorted(map(str, got[1] + got_rest[1])) == sorted(want[1])


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["conversation_id", "metadata", "key_facts",
                                                 "handoffs", "x"]), _JSON, max_size=4),
                max_size=6), st.booleans())
def test_any_json_reads_as_json_loads_then_validation(tmp_path_factory, objects, ascii):
    """Whatever JSON values the fields hold (NaN, huge numbers, surrogates, nesting), the
    records and problems are those of json.loads then validate_python."""
    path = tmp_path_factory.mktemp("e") / "e.jsonl"
    text = "\n".join(json.dumps(o, ensure_ascii=ascii) for o in objects) + "\n"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    want_recs, want, want_lines = _read_by_json_loads(path)
    recs, problems, lines = read_expectations(path, name="e.jsonl")
    assert [repr(r) for r in recs] == [repr(r) for r in want_recs]
    assert list(map(str, problems)) == list(map(str, want)) and lines == want_lines
