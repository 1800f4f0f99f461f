"""CrewAI event-bus events → traces.

CrewAI *delegates*: an agent calls the "Delegate work to coworker" (or "Ask question to
coworker") tool with ``coworker``, ``task`` / ``question`` and ``context``, and gets the
coworker's answer back. Each such call becomes a ``Handoff(mode="delegate")`` whose
``context_passed`` holds ``task`` / ``question`` and ``context`` as free text; ``reason`` stays
None (CrewAI records no reason from the four kinds the kit knows).

- the first top-level ``task_started`` → the user message (the task description);
- ``agent_execution_completed`` → an agent turn with the agent's final answer;
- ``tool_usage_finished`` of other tools → tool calls of the agent's next turn.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    Reader,
    TraceBuilder,
    check_options,
    parse_jsonish,
    slug,
    tool_call,
)

FORMAT = "crewai"
_DELEGATE = {"delegate_work_to_coworker": "task", "ask_question_to_coworker": "question"}
_REACT = re.compile(
    r"Action:\s*(?P<tool>[^\n]+?)\s*\n\s*Action Input:\s*(?P<input>\{.*?\})\s*"
    r"(?=\n\s*Observation|\Z)",
    re.S)
_HANDLED = {"task_started", "agent_execution_started", "tool_usage_started",
            "tool_usage_finished", "agent_execution_completed"}
_IGNORED = {"crew_kickoff_started", "crew_kickoff_completed", "task_completed", "flow_started",
            "flow_finished", "agent_logs_started", "agent_logs_execution", "default_env",
            "method_execution_started", "method_execution_finished", "llm_call_started",
            "llm_call_completed"}


def _ctx(args: dict[str, Any], tool: str) -> tuple[str | None, dict[str, Any]]:
    coworker = args.get("coworker")
    ctx = {k: v for k, v in args.items() if k != "coworker" and v not in (None, "")}
    return (coworker.strip().strip("\"'") if isinstance(coworker, str) else None), ctx


def react_delegations(text: str) -> list[tuple[str, dict[str, Any]]]:
    """Delegations written in a ReAct log (``Action: Delegate work to coworker`` + input).

    >>> react_delegations('Action: Delegate work to coworker\\nAction Input: '
    ...                   '{"task": "Refund", "context": "ACCT-1", "coworker": "Billing"}')
    [('Billing', {'task': 'Refund', 'context': 'ACCT-1'})]
    """
    out = []
    for m in _REACT.finditer(text or ""):
        if slug(m.group("tool")) not in _DELEGATE:
            continue
        try:
            args = json.loads(m.group("input"))
        except ValueError:
            continue
        if isinstance(args, dict):
            coworker, ctx = _ctx(args, m.group("tool"))
            if coworker:
                out.append((coworker, ctx))
    return out


_FIELD = r'"{}"\s*:\s*"((?:[^"\\]|\\.)*)"'


def _log_field(answer: Any, key: str) -> str | None:
    """A field of ``formatted_answer`` (a dict, or a JSON string CrewAI may have truncated)."""
    if isinstance(answer, dict):
        v = answer.get(key)
        return v if isinstance(v, str) else None
    if isinstance(answer, str):
        m = re.search(_FIELD.format(key), answer)
        if m:
            try:
                return json.loads(f'"{m.group(1)}"')
            except ValueError:
                return m.group(1)
    return None


def _delegation_thoughts(events: list[Any]) -> dict[str, list[str]]:
    """Per agent, the thoughts that led to each delegation, in order."""
    out: dict[str, list[str]] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("type") == "agent_logs_execution":
            answer = parse_jsonish(ev.get("formatted_answer"))
            tool = _log_field(answer, "tool")
            thought = _log_field(answer, "thought")
            role = _role(ev)
            if role and tool and thought and slug(tool) in _DELEGATE:
                out.setdefault(role, []).append(thought)
    return out


def _role(ev: dict[str, Any]) -> str | None:
    role = ev.get("agent_role")
    if not role and isinstance(ev.get("agent"), dict):
        role = ev["agent"].get("role")
    return role if isinstance(role, str) and role else None


def import_crewai(data: Any, *, name: str = "crew", **options: Any) -> ImportResult:
    """CrewAI events (``{"events": [...]}`` or a list of events) → (traces, issues)."""
    check_options(options, FORMAT)
    r = Reader(FORMAT)
    if isinstance(data, dict):
        events = r.arr(r.key(data, "events", ""), "events")
        root = "events"
    else:
        events = r.arr(data, "")
        root = ""
    issues: list[ImportIssue] = []
    roles: list[str] = []
    for i, ev in enumerate(events):
        ev = r.obj(ev, f"{root}[{i}]")
        t = r.key(ev, "type", f"{root}[{i}]")
        r.str_(t, f"{root}[{i}].type")
        if t == "agent_execution_started" and _role(ev) and _role(ev) not in roles:
            roles.append(_role(ev))  # type: ignore[arg-type]
    if not any(ev.get("type") in _HANDLED for ev in events):
        raise r.fail(root, "no CrewAI agent, task or tool events (types like "
                           "'agent_execution_started', 'tool_usage_started')")

    thoughts = _delegation_thoughts(events)
    crew_id = next((ev.get("source_fingerprint") or ev.get("event_id") for ev in events
                    if ev.get("type") == "crew_kickoff_started"), None)
    b = TraceBuilder(str(crew_id or name), FORMAT, metadata={"crew_event_count": len(events)})
    pending: dict[str, list[dict[str, Any]]] = {}
    unmapped: Counter[str] = Counter()
    got_task = False
    for i, ev in enumerate(events):
        where = f"{root}[{i}]"
        t = ev["type"]
        role = _role(ev)
        if t == "task_started":
            task = ev.get("task") if isinstance(ev.get("task"), dict) else {}
            desc = ev.get("task_name") or task.get("description")
            if not got_task and isinstance(desc, str):
                b.user(desc)
                got_task = True
                b.metadata["user_message_from"] = "task description"
        elif t == "tool_usage_started":
            tool = str(ev.get("tool_name", ""))
            if slug(tool) in _DELEGATE:
                args = parse_jsonish(ev.get("tool_args"))
                if not isinstance(args, dict):
                    issues.append(ImportIssue(FORMAT, f"{where}.tool_args", "delegation "
                                              "arguments are not a JSON object; skipped",
                                              b.conversation_id))
                    continue
                coworker, ctx = _ctx(args, tool)
                if not coworker or not role:
                    issues.append(ImportIssue(FORMAT, where, "delegation without a coworker "
                                              "or caller; skipped", b.conversation_id))
                    continue
                to = next((x for x in roles if x.lower() == coworker.lower()), coworker)
                if thoughts.get(role):
                    b.turn(role, thoughts[role].pop(0))
                b.handoff(role, to, ctx, mode="delegate")
        elif t == "tool_usage_finished":
            tool = str(ev.get("tool_name", ""))
            if slug(tool) in _DELEGATE or not role:
                continue
            pending.setdefault(role, []).append(
                tool_call(tool, ev.get("tool_args"), output=parse_jsonish(ev.get("output"))))
        elif t == "agent_execution_completed":
            if not role:
                issues.append(ImportIssue(FORMAT, where, "agent_execution_completed names no "
                                          "agent; skipped", b.conversation_id))
                continue
            out = ev.get("output")
            b.turn(role, out if isinstance(out, str) else json.dumps(out),
                   pending.pop(role, []))
        elif t in ("agent_execution_started",):
            pass
        elif t not in _IGNORED:
            unmapped[t] += 1
    for role, calls in pending.items():
        b.turn(role, "", calls)
        issues.append(ImportIssue(FORMAT, "", f"{len(calls)} tool call(s) of {role!r} after its "
                                  "last answer: kept in a turn with no text", b.conversation_id))
    if unmapped:
        issues.append(ImportIssue(FORMAT, "", "event types not mapped: " + ", ".join(
            f"{k} ×{v}" for k, v in unmapped.most_common()), b.conversation_id))
    issues.append(ImportIssue(FORMAT, "", "agent thoughts (agent_logs_execution) are imported "
                              "only before delegations; other turns are final answers",
                              b.conversation_id))
    if isinstance(data, dict) and isinstance(data.get("final_output"), str):
        b.metadata["final_output"] = data["final_output"]
    return ImportResult([b.build()], issues)
