"""What a conversation *should* do: expected handoffs, key facts, routing cases.

The file form is ``expectations.jsonl`` (docs/formats.md, "Expectations JSONL"), one object
per conversation.
"""

from __future__ import annotations

import itertools
import os
import re
from array import array
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ConfigDict, TypeAdapter, ValidationError

from maev_kit._jsonl import (MAX_LINE_BYTES, JsonLine, display_name, iter_raw_lines,
                             parse_json_line, pydantic_problems, validated_lines, write_jsonl)
from maev_kit.errors import LabelValidationError, Problem
from maev_kit.traces import HandoffReason

__all__ = [
    "ConversationExpectations",
    "HandoffExpectation",
    "KeyFact",
    "RoutingTestCase",
    "expectations_to_dict",
    "load_expectations",
    "read_expectations",
    "save_expectations",
]

_FORBID = ConfigDict(extra="forbid")


@dataclass
class HandoffExpectation:
    """The handoff a conversation should make (the article's ``HandoffExpectation``).

    >>> HandoffExpectation("billing", "specialization", ["account_number"]).expected_target
    'billing'
    """

    __pydantic_config__ = _FORBID

    expected_target: str
    expected_reason: HandoffReason | None = None
    required_context_keys: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.expected_reason, str) and not isinstance(self.expected_reason,
                                                                    HandoffReason):
            self.expected_reason = HandoffReason(self.expected_reason)


@dataclass
class RoutingTestCase:
    """A user input and the specialist a triage agent should route it to.

    ``category`` optionally groups specialists (triage → category → specialist).
    """

    __pydantic_config__ = _FORBID

    user_input: str
    correct_agent: str
    acceptable_agents: list[str] = field(default_factory=list)
    category: str | None = None


@dataclass
class KeyFact:
    """A fact stated before handoff ``handoff_index`` that the receiving agents should keep.

    ``slot`` (optional) names what the fact's value is about (``"departure time"``): a judge
    compares the value only with values for that slot. ``changed_at`` (optional) is the turn at
    which the user changed the fact's value themselves: this listing, under the id of the fact
    it supersedes, is judged from its handoff on instead of the earlier text.
    """

    __pydantic_config__ = _FORBID

    fact_id: str
    handoff_index: int
    text: str
    derived: bool = False
    slot: str | None = None
    changed_at: int | None = None


@dataclass
class ConversationExpectations:
    """Everything expected of one conversation."""

    __pydantic_config__ = _FORBID

    conversation_id: str
    handoffs: list[HandoffExpectation] = field(default_factory=list)
    key_facts: list[KeyFact] = field(default_factory=list)
    routing: list[RoutingTestCase] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


EXPECTATIONS_ADAPTER = TypeAdapter(ConversationExpectations)


def read_expectations(path: str | os.PathLike[str], *, name: str | None = None
                      ) -> tuple[list[ConversationExpectations], list[Problem], dict[str, int]]:
    """Read ``expectations.jsonl``: ``(records, problems, line_of_conversation)``; never raises."""
    name = name or display_name(path)
    return _records(iter_raw_lines(path, name=name), name)


def _records(lines: Iterable[JsonLine], name: str
             ) -> tuple[list[ConversationExpectations], list[Problem], dict[str, int]]:
    """The records of lines, parsed or not (``raw`` only), and every problem."""
    out: list[ConversationExpectations] = []
    problems: list[Problem] = []
    lines_of: dict[str, int] = {}
    for line, rec in _validated(lines, name, problems):
        if rec.conversation_id in lines_of:
            problems.append(Problem(name, line, "conversation_id",
                                    f"duplicate conversation_id {rec.conversation_id!r} "
                                    f"(first on line {lines_of[rec.conversation_id]})"))
            continue
        # A fact is identified by its handoff and its id (item ids are
        # <conversation_id>/h<handoff_index>/<fact_id>): the same id may recur at a later
        # handoff (a context key passed at every handoff), never twice at one.
        ids = [(f.handoff_index, f.fact_id) for f in rec.key_facts]
        for i, (hi, fid) in enumerate(ids):
            if (hi, fid) in ids[:i]:
                problems.append(Problem(name, line, f"key_facts[{i}] › fact_id",
                                        f"duplicate fact_id {fid!r} at handoff {hi}"))
        lines_of[rec.conversation_id] = line
        out.append(rec)
    return out, problems, lines_of


def _validated(lines: Iterable[JsonLine], name: str, problems: list[Problem]
               ) -> Iterator[tuple[int, ConversationExpectations]]:
    """``(line, record)`` of each valid line, as :func:`~maev_kit._jsonl.validated_lines`
    gives them. An unparsed line goes first through pydantic's own JSON parser, in one pass
    (~7 µs for a typical line against ~11 µs for ``json.loads`` then ``validate_python``);
    a line it refuses is parsed and validated as before, which names the problem or accepts
    the line (its parser refuses some JSON that ``json.loads`` reads: lone surrogates,
    NaN)."""
    # the validator itself: TypeAdapter's wrapper adds ~1 µs a line
    validate_json = EXPECTATIONS_ADAPTER.validator.validate_json
    for jl in lines:
        if jl.problem is None and jl.value is None:
            try:
                yield jl.line, validate_json(cast(bytes, jl.raw))  # unparsed: raw is set
                continue
            except ValueError:  # pydantic's ValidationError, whatever refused the line
                parse_json_line(jl, name)
        yield from validated_lines([jl], EXPECTATIONS_ADAPTER.validate_python, name, problems)


# A line's conversation id without parsing it: one match, in a line without \u escapes, is
# the top-level key (with a nested one there are two; an id with escapes matches nothing; a
# key spelled with \u escapes is read by parsing the line). When a line has no top-level id
# and one nested, validation reports it wherever it goes.
_ID = re.compile(rb'"conversation_id"\s*:\s*"([^"\\]*)"')
# The same, over a block of lines: a match takes the rest of its line, so a line gives one
# match at most (``\s`` without the newline, so that a match stays in its line).
_LINE_ID = re.compile(rb'"conversation_id"[ \t\r\x0b\x0c]*:[ \t\r\x0b\x0c]*'
                      rb'"([^"\\\n]*)"[^\n]*')
# Bytes read at a time by route_expectation_lines (and the rest of the block's last line).
_ROUTE_BLOCK = 1 << 20


def route_expectation_lines(path: str | os.PathLike[str], where: Mapping[str, int], *,
                            name: str | None = None, max_line_bytes: int = MAX_LINE_BYTES
                            ) -> tuple[dict[int, array], list[JsonLine], list[Problem]]:
    """Where each line of an expectations file goes, without building its record: for each
    destination ``where[conversation_id]`` (an int, 0 or more), the flat ``array`` of
    ``(offset, length, line)`` of its lines in file order (:func:`read_expectation_spans`
    reads them); the lines whose id is not in ``where`` (or that have none), unparsed; the
    problems of lines that cannot be held (too long, binary). What is held is 24 bytes a
    routed line (and the lines of no destination, whole): the records are built and validated
    where the spans are read.

    The file is read in blocks of about a megabyte. In a block where every line holds the key
    ``"conversation_id"`` once, with a plain string id, one regular-expression pass and array
    arithmetic route the lines (~2.5 µs a line in all, most of it looking the ids up in
    ``where``); a line with a ``\\u`` escape (which may spell the key) is parsed. Any other
    block (or one with many escapes) goes line by line as
    :func:`~maev_kit._jsonl.iter_raw_lines` reads lines (~5 µs a line), and so does the rest
    of the file from a binary line or a line too long to hold.
    """
    name = name or display_name(path)
    router = _LineRouter(where, name)
    with open(path, "rb") as f:
        offset = lines = 0  # where the next block starts; the lines before it
        while block := f.read(_ROUTE_BLOCK):
            if not block.endswith(b"\n"):
                block += f.readline(max_line_bytes + 1)
            n = router.route_block(block, offset, lines, max_line_bytes)
            if n is None:
                break  # a binary file, or a line too long: line by line from here
            offset += len(block)
            lines += n
        else:
            offset = -1  # read to the end
        if offset >= 0:
            for jl in iter_raw_lines(path, name=name, start=offset, lines_before=lines,
                                     max_line_bytes=max_line_bytes):
                if jl.problem is not None:
                    router.problems.append(jl.problem)
                else:
                    router.route_one(jl)
    return router.spans(), router.rest, router.problems


@dataclass(frozen=True)
class _Block:
    """A block of whole lines of an expectations file: its bytes, the file offset it starts
    at, the number of lines before it, and the start, end (past the newline) and length of
    each of its lines within it (numpy arrays)."""

    data: bytes
    offset: int
    lines: int
    starts: Any
    ends: Any
    lengths: Any


class _LineRouter:
    """What :func:`route_expectation_lines` gathers while it reads a file: the spans of the
    routed lines (``parts``: arrays of destination, offset, length and line, a block at a
    time; ``one``: the same, flat, of the lines routed one by one), the lines of no
    destination (``rest``) and the problems of lines that cannot be held."""

    def __init__(self, where: Mapping[str, int], name: str) -> None:
        self.where = where
        self.name = name
        self.parts: list[Any] = []  # (destination, offset, length, line) arrays
        self.rest: list[JsonLine] = []
        self.problems: list[Problem] = []
        self.one = array("q")

    def route_one(self, jl: JsonLine) -> None:
        """Route one unparsed line by its id (matched, or parsed when it has to be)."""
        raw = jl.raw
        assert raw is not None
        found = _ID.findall(raw)
        if len(found) == 1 and b"\\u" not in raw:  # a \u escape can spell the key too
            cid: Any = found[0].decode("utf-8", "replace")
        else:
            value = parse_json_line(jl, self.name).value
            cid = value.get("conversation_id") if value is not None else None
        dest = self.where.get(cid) if isinstance(cid, str) else None
        if dest is None:
            self.rest.append(jl)
            return
        self.one.extend((dest, jl.offset, len(raw), jl.line))

    def route_block(self, block: bytes, offset: int, lines: int, max_line_bytes: int
                    ) -> int | None:
        """Route a block of whole lines that starts at byte ``offset``, after ``lines`` lines:
        its number of lines, or None (nothing routed) when it is binary or holds a line
        longer than ``max_line_bytes``."""
        import numpy as np

        ends = np.flatnonzero(np.frombuffer(block, np.uint8) == 10) + 1
        if not block.endswith(b"\n"):  # the last line of the file, unterminated
            ends = np.append(ends, len(block))
        n = len(ends)
        starts = np.concatenate(([0], ends[:-1]))
        lengths = ends - starts
        # the longest line without its newline (or one byte more: then line by line)
        longest = int(lengths.max()) - block.endswith(b"\n")
        if b"\x00" in block or longest > max_line_bytes:
            return None
        blk = _Block(block, offset, lines, starts, ends, lengths)
        escapes = block.count(b"\\u")
        ids = _LINE_ID.findall(block) if escapes <= n // 4 else []
        if len(ids) == n and block.count(b'"conversation_id"') == n:
            self._route_matched(blk, ids, escapes)
        else:  # blank lines, a line with no key or two, many escapes: line by line
            self._route_each(blk)
        return n

    def _route_matched(self, blk: _Block, ids: list[bytes], escapes: int) -> None:
        """Route a block where each line holds the key once: its id is the match, unless the
        line has a \\u escape (which may spell another key): those few lines one by one."""
        import numpy as np

        n = len(blk.ends)
        cids = b"\n".join(ids).decode("utf-8", "replace").split("\n")
        dest = np.fromiter(map(self.where.get, cids, itertools.repeat(-1)), np.int64, n)
        line = np.arange(blk.lines + 1, blk.lines + n + 1, dtype=np.int64)
        escaped = np.zeros(n, dtype=bool)
        if escapes:
            at = [m.start() for m in re.finditer(rb"\\u", blk.data)]
            escaped[np.searchsorted(blk.ends, at, side="right")] = True
        odd = np.flatnonzero(escaped | (dest < 0))
        for esc, i, a, b in zip(escaped[odd].tolist(), odd.tolist(),
                                blk.starts[odd].tolist(), blk.ends[odd].tolist()):
            jl = JsonLine(blk.lines + i + 1, None, blk.data[a:b], None, blk.offset + a)
            if esc:
                self.route_one(jl)
            else:
                self.rest.append(jl)
        keep = ~escaped & (dest >= 0)
        self.parts.append([dest[keep], blk.starts[keep] + blk.offset, blk.lengths[keep],
                           line[keep]])

    def _route_each(self, blk: _Block) -> None:
        """Route the non-blank lines of a block one by one."""
        begin = 0
        for i, end in enumerate(blk.ends.tolist()):
            raw = blk.data[begin:end]
            if raw.strip():
                self.route_one(JsonLine(blk.lines + i + 1, None, raw, None,
                                        blk.offset + begin))
            begin = end

    def spans(self) -> dict[int, array]:
        """The spans of each destination: a flat ``array`` of ``(offset, length, line)`` of
        its lines, in file order."""
        import numpy as np

        parts = [*self.parts, list(np.frombuffer(self.one, np.int64).reshape(-1, 4).T)]
        spans: dict[int, array] = {}
        dest, *columns = (np.concatenate(c) for c in zip(*parts))
        if len(dest):
            order = np.lexsort((columns[0], dest))  # by destination, then in file order
            dest = dest[order]
            triples = np.stack([c[order] for c in columns], axis=1)
            bounds = np.flatnonzero(np.diff(dest)) + 1
            for d, chunk in zip(dest[np.concatenate(([0], bounds))].tolist(),
                                np.split(triples, bounds)):
                spans[d] = array("q", chunk.tobytes())
        return spans


def read_expectation_spans(path: str | os.PathLike[str], spans: array, *, name: str,
                           ) -> tuple[list[ConversationExpectations], list[Problem],
                                      dict[str, int]]:
    """The records of some lines of an expectations file, by :func:`route_expectation_lines`'
    spans: as :func:`read_expectations` reads them (problems named ``name:line › field``),
    only these lines."""
    def lines() -> Iterator[JsonLine]:
        with open(path, "rb") as f:
            for i in range(0, len(spans), 3):
                f.seek(spans[i])
                yield JsonLine(spans[i + 2], None, f.read(spans[i + 1]), None, spans[i])
    return _records(lines(), name)


def read_expectation_lines(lines: Iterable[JsonLine], *, name: str
                           ) -> tuple[list[ConversationExpectations], list[Problem],
                                      dict[str, int]]:
    """The records of unparsed lines (the rest of :func:`route_expectation_lines`)."""
    return _records(lines, name)


def load_expectations(source: str | os.PathLike[str] | Iterable[Any]
                      ) -> dict[str, ConversationExpectations]:
    """Expectations by conversation id, from a path, a list of dicts or parsed objects.

    Raises :class:`~maev_kit.errors.LabelValidationError` listing every problem.
    """
    if isinstance(source, (str, os.PathLike)):
        if not Path(source).exists():
            raise LabelValidationError([Problem(display_name(source), None, "", "file not found")])
        recs, problems, _ = read_expectations(source)
        if problems:
            raise LabelValidationError(problems)
        return {r.conversation_id: r for r in recs}
    out: dict[str, ConversationExpectations] = {}
    problems = []
    for i, item in enumerate(source):
        if isinstance(item, ConversationExpectations):
            out[item.conversation_id] = item
            continue
        try:
            rec = EXPECTATIONS_ADAPTER.validate_python(item)
        except ValidationError as e:
            problems.extend(pydantic_problems(e, "<expectations>", None, (i,)))
            continue
        out[rec.conversation_id] = rec
    if problems:
        raise LabelValidationError(problems)
    return out


def expectations_to_dict(e: ConversationExpectations) -> dict[str, Any]:
    """The JSON form of one conversation's expectations."""
    return {
        "conversation_id": e.conversation_id,
        "handoffs": [{"expected_target": h.expected_target,
                      "expected_reason": None if h.expected_reason is None
                      else h.expected_reason.value,
                      "required_context_keys": list(h.required_context_keys)}
                     for h in e.handoffs],
        "key_facts": [{"fact_id": f.fact_id, "handoff_index": f.handoff_index, "text": f.text}
                      | ({"derived": True} if f.derived else {})
                      | ({"slot": f.slot} if f.slot else {})
                      | ({"changed_at": f.changed_at} if f.changed_at is not None else {})
                      for f in e.key_facts],
        "routing": [{"user_input": r.user_input, "correct_agent": r.correct_agent,
                     "acceptable_agents": list(r.acceptable_agents)}
                    | ({"category": r.category} if r.category is not None else {})
                    for r in e.routing],
        **({"metadata": e.metadata} if e.metadata else {}),
    }


def save_expectations(records: Iterable[ConversationExpectations],
                      path: str | os.PathLike[str]) -> None:
    """Write expectations as JSONL."""
    write_jsonl((expectations_to_dict(r) for r in records), path)
