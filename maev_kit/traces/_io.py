"""Trace JSONL: load with validation, save, and pandas views (docs/formats.md)."""

from __future__ import annotations


import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from maev_kit.errors import Problem, TraceValidationError
from maev_kit.internal import (
    display_name,
    iter_json_lines,
    paused_gc,
    pydantic_problems,
    write_jsonl,
)
from maev_kit.traces._check import check_trace
from maev_kit.traces._model import AgentTurn, Handoff, HandoffReason, MultiAgentTrace, UserMessage

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SUPPORTED_SCHEMA_VERSIONS",
    "check_trace",
    "handoffs_to_frame",
    "save_traces",
    "trace_from_dict",
    "trace_to_dict",
    "traces_to_frame",
    "validate_trace_file",
]

SUPPORTED_SCHEMA_VERSIONS = (1,)
SCHEMA_VERSION = 1

_ADAPTER = TypeAdapter(MultiAgentTrace)


def trace_to_dict(trace: MultiAgentTrace) -> dict[str, Any]:
    """The JSON form of a trace (the DESIGN.md §3 contract), ``schema_version`` first."""
    return {
        "schema_version": SCHEMA_VERSION,
        "conversation_id": trace.conversation_id,
        "turns": [{"agent_id": t.agent_id, "agent_role": t.agent_role, "message": t.message,
                   "tool_calls": t.tool_calls, "turn_index": t.turn_index} for t in trace.turns],
        "handoffs": [_handoff_to_dict(h) for h in trace.handoffs],
        "user_messages": [{"content": m.content, "turn_index": m.turn_index}
                          for m in trace.user_messages],
        "metadata": trace.metadata,
    }


def _handoff_to_dict(h: Handoff) -> dict[str, Any]:
    return {"from_agent": h.from_agent, "to_agent": h.to_agent,
            "reason": None if h.reason is None else h.reason.value,
            "context_passed": h.context_passed, "turn_index": h.turn_index, "mode": h.mode}


def trace_from_dict(data: dict[str, Any], *, file: str = "<trace>", line: int | None = None
                    ) -> MultiAgentTrace:
    """Validate one trace object; raise :class:`TraceValidationError` listing every problem."""
    trace, problems = _parse(data, file, line)
    if problems:
        raise TraceValidationError(problems)
    assert trace is not None
    return trace


def _parse(data: dict[str, Any], file: str, line: int | None
           ) -> tuple[MultiAgentTrace | None, list[Problem]]:
    problems: list[Problem] = []
    data = dict(data)
    version = data.pop("schema_version", SCHEMA_VERSION)
    if version not in SUPPORTED_SCHEMA_VERSIONS or isinstance(version, bool):
        supported = ", ".join(map(str, SUPPORTED_SCHEMA_VERSIONS))
        problems.append(Problem(file, line, "schema_version",
                                f"unsupported schema_version {version!r}; this version of "
                                f"maev-kit reads schema_version {supported}"))
    trace = _fast_build(data) if not problems else None
    if trace is not None:
        return trace, []
    try:
        trace = _ADAPTER.validate_python(data)
    except ValidationError as e:
        problems.extend(pydantic_problems(e, file, line))
        for p in problems:
            if p.path.endswith("reason") and "Input should be" in p.message:
                object.__setattr__(p, "message", p.message + " (or null when unknown)")
        return None, problems
    return (None, problems) if problems else (trace, [])


_TURN_KEYS = frozenset({"agent_id", "agent_role", "message", "tool_calls", "turn_index"})
_HANDOFF_KEYS = frozenset({"from_agent", "to_agent", "reason", "context_passed", "turn_index",
                           "mode"})
_USER_KEYS = frozenset({"content", "turn_index"})
_TRACE_KEYS = frozenset({"conversation_id", "turns", "handoffs", "user_messages", "metadata"})
_REASONS: dict[str | None, HandoffReason | None] = {r.value: r for r in HandoffReason}
_REASONS[None] = None
_MODES = frozenset({"transfer", "delegate"})


def _fast_build(data: dict[str, Any]) -> MultiAgentTrace | None:
    """Build a trace from well-formed data without pydantic (several times faster).

    Returns None at the first thing that is off; pydantic then validates the same data and
    reports every problem. Exact type checks (``type(x) is str``) keep it strict.
    """
    if not _TRACE_KEYS.issuperset(data) or type(data.get("conversation_id")) is not str:
        return None
    turns_in = data.get("turns", [])
    handoffs_in = data.get("handoffs", [])
    users_in = data.get("user_messages", [])
    metadata = data.get("metadata", {})
    if not (type(turns_in) is list and type(handoffs_in) is list and type(users_in) is list
            and type(metadata) is dict):
        return None
    turns = []
    for d in turns_in:
        if type(d) is not dict or not _TURN_KEYS.issuperset(d):
            return None
        tool_calls = d.get("tool_calls", [])
        ti = d.get("turn_index", 0)
        if (type(d.get("agent_id")) is not str or type(d.get("agent_role")) is not str
                or type(d.get("message")) is not str or type(ti) is not int
                or type(tool_calls) is not list
                or (tool_calls and not all(type(c) is dict for c in tool_calls))):
            return None
        turns.append(AgentTurn(d["agent_id"], d["agent_role"], d["message"], tool_calls, ti))
    handoffs = []
    for d in handoffs_in:
        if type(d) is not dict or not _HANDOFF_KEYS.issuperset(d):
            return None
        ctx = d.get("context_passed", {})
        ti = d.get("turn_index", 0)
        reason = d.get("reason")
        mode = d.get("mode", "transfer")
        if (type(d.get("from_agent")) is not str or type(d.get("to_agent")) is not str
                or type(ctx) is not dict or type(ti) is not int
                or (reason is not None and type(reason) is not str) or reason not in _REASONS
                or mode not in _MODES):
            return None
        handoffs.append(Handoff(d["from_agent"], d["to_agent"], _REASONS[reason], ctx, ti, mode))
    users = []
    for d in users_in:
        if type(d) is not dict or not _USER_KEYS.issuperset(d):
            return None
        ti = d.get("turn_index", 0)
        if type(d.get("content")) is not str or type(ti) is not int:
            return None
        users.append(UserMessage(d["content"], ti))
    return MultiAgentTrace(data["conversation_id"], turns, handoffs, users, metadata)


def validate_trace_file(path: str | os.PathLike[str], *, name: str | None = None
                        ) -> tuple[list[MultiAgentTrace], list[Problem], list[Problem]]:
    """Read a trace JSONL file and return ``(traces, errors, warnings)``; never raises on content.

    Errors: unreadable lines, missing or mistyped fields, an unknown ``reason`` or
    ``schema_version``, a duplicate ``conversation_id``, an empty file.
    """
    with paused_gc():  # loaded traces hold no reference cycles
        return _validate_trace_file(path, name or display_name(path))


def _validate_trace_file(path: str | os.PathLike[str], name: str
                         ) -> tuple[list[MultiAgentTrace], list[Problem], list[Problem]]:
    traces: list[MultiAgentTrace] = []
    errors: list[Problem] = []
    warns: list[Problem] = []
    seen: dict[str, int] = {}
    n_lines = 0
    for jl in iter_json_lines(path, name=name):
        n_lines += 1
        if jl.problem is not None:
            errors.append(jl.problem)
            continue
        assert jl.value is not None
        trace, problems = _parse(jl.value, name, jl.line)
        if problems:
            errors.extend(problems)
            continue
        assert trace is not None
        if trace.conversation_id in seen:
            errors.append(Problem(name, jl.line, "conversation_id",
                                  f"duplicate conversation_id {trace.conversation_id!r} "
                                  f"(first on line {seen[trace.conversation_id]})"))
            continue
        seen[trace.conversation_id] = jl.line
        warns.extend(check_trace(trace, file=name, line=jl.line))
        traces.append(trace)
    if n_lines == 0:
        errors.append(Problem(name, None, "", "file is empty: expected one JSON trace per line"))
    return traces, errors, warns


def save_traces(traces: Iterable[MultiAgentTrace], path: str | os.PathLike[str]) -> None:
    """Write traces as JSONL (Parquet when ``path`` ends in ``.parquet``); ``load_traces``
    reads back equal objects. The write is atomic, and never replaces a file holding a
    person's work (labels, review decisions, expectations, a judge card):
    :class:`~maev_kit._files.OverwriteRefused`."""
    if str(path).endswith(".parquet"):
        from maev_kit.traces._parquet import save_parquet

        return save_parquet(traces, path)
    write_jsonl((trace_to_dict(t) for t in traces), path, kind="traces")


def traces_to_frame(traces: Iterable[MultiAgentTrace]) -> pd.DataFrame:
    """One row per agent turn: conversation_id, turn_index, agent_id, agent_role, message, n_tool_calls."""
    import pandas as pd

    rows = [(t.conversation_id, turn.turn_index, turn.agent_id, turn.agent_role, turn.message,
             len(turn.tool_calls)) for t in traces for turn in t.turns]
    return pd.DataFrame(rows, columns=["conversation_id", "turn_index", "agent_id", "agent_role",
                                       "message", "n_tool_calls"])


def handoffs_to_frame(traces: Iterable[MultiAgentTrace]) -> pd.DataFrame:
    """One row per handoff: conversation_id, handoff_index, from/to agent, reason, mode, context keys."""
    import pandas as pd

    rows = [(t.conversation_id, i, h.turn_index, h.from_agent, h.to_agent,
             None if h.reason is None else h.reason.value, h.mode, sorted(h.context_passed))
            for t in traces for i, h in enumerate(t.handoffs)]
    return pd.DataFrame(rows, columns=["conversation_id", "handoff_index", "turn_index",
                                       "from_agent", "to_agent", "reason", "mode",
                                       "context_keys"])


