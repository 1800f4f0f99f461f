"""CrewAI event-bus events → traces.

CrewAI *delegates*: an agent calls the "Delegate work to coworker" (or "Ask question to
coworker") tool with ``coworker``, ``task`` / ``question`` and ``context``, and gets the
coworker's answer back. Each such call becomes a ``Handoff(mode="delegate")`` whose
``context_passed`` holds ``task`` / ``question`` and ``context`` as free text; ``reason`` stays
None (CrewAI records no reason from the four kinds the kit knows).

The timeline follows the event order (``emission_sequence`` when present, else file order):

- the first top-level ``task_started`` → the user message (the task description);
- ``tool_usage_started`` → a turn of the calling agent holding that tool call, its text the
  thought that led to the call (from the matching ``agent_logs_execution``); a delegation tool
  call is followed by its handoff, so the call precedes the handoff it caused;
- ``tool_usage_finished`` / ``tool_usage_error`` → the output of that call (matched by
  ``started_event_id``, else by agent and tool name), never a turn;
- ``agent_execution_completed`` → an agent turn with the agent's final answer.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, cast

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
_HANDLED = {"task_started", "agent_execution_started", "tool_usage_started",
            "tool_usage_finished", "tool_usage_error", "agent_execution_completed"}
_IGNORED = {"crew_kickoff_started", "crew_kickoff_completed", "task_completed", "flow_started",
            "flow_finished", "agent_logs_started", "agent_logs_execution", "default_env",
            "method_execution_started", "method_execution_finished", "llm_call_started",
            "llm_call_completed"}


def _ctx(args: dict[str, Any], tool: str) -> tuple[str | None, dict[str, Any]]:
    coworker = args.get("coworker")
    ctx = {k: v for k, v in args.items() if k != "coworker" and v not in (None, "")}
    return (coworker.strip().strip("\"'") if isinstance(coworker, str) else None), ctx


_STEP = re.compile(
    r"(?:Thought:\s*(?P<thought>.*?)\s*\n)?\s*Action:\s*(?P<tool>[^\n]+?)\s*\n\s*"
    r"Action Input:\s*(?P<input>\{.*?\})\s*(?:\n\s*Observation:\s*(?P<obs>.*?))?\s*"
    r"(?=\n\s*(?:Thought:|Action:|Final Answer:)|\Z)",
    re.S)


def react_steps(text: str) -> list[dict[str, Any]]:
    """Tool steps written in a ReAct log: ``{"thought", "tool", "arguments", "observation"}``.

    ``arguments`` is the parsed ``Action Input`` object (steps whose input is not a JSON object
    are passed over); ``thought`` and ``observation`` are None when absent.

    >>> react_steps('Thought: Billing matter.\\nAction: Delegate work to coworker\\n'
    ...             'Action Input: {"task": "Refund", "coworker": "Billing"}\\n'
    ...             'Observation: Refunded.')
    [{'thought': 'Thought: Billing matter.', 'tool': 'Delegate work to coworker', \
'arguments': {'task': 'Refund', 'coworker': 'Billing'}, 'observation': 'Refunded.'}]
    """
    out = []
    for m in _STEP.finditer(text or ""):
        try:
            args = json.loads(m.group("input"))
        except ValueError:
            continue
        if not isinstance(args, dict):
            continue
        thought = m.group("thought")
        obs = m.group("obs")
        out.append({"thought": f"Thought: {thought.strip()}" if thought else None,
                    "tool": m.group("tool").strip(), "arguments": args,
                    "observation": obs.strip() if obs else None})
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


def _tool_thoughts(events: list[Any]) -> dict[str, list[tuple[str, str]]]:
    """Per agent, ``(tool slug, thought)`` of each logged tool step, in order.

    CrewAI logs a step (``agent_logs_execution``) after its tool ran; the thought is the text of
    the turn that made the call.
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("type") == "agent_logs_execution":
            answer = parse_jsonish(ev.get("formatted_answer"))
            tool = _log_field(answer, "tool")
            thought = _log_field(answer, "thought")
            role = _role(ev)
            if role and tool and thought:
                out.setdefault(role, []).append((slug(tool), thought))
    return out


def _in_order(events: list[dict[str, Any]]) -> tuple[list[tuple[int, dict[str, Any]]], bool]:
    """``(index in file, event)`` in emission order, and whether that differs from file order.

    ``emission_sequence`` orders the events when every event has an integer one; a stable sort
    keeps file order between equal numbers (CrewAI gives the environment event and the kickoff
    the same number).
    """
    seqs = [ev.get("emission_sequence") for ev in events]
    indexed = list(enumerate(events))
    if not events or not all(isinstance(q, int) and not isinstance(q, bool) for q in seqs):
        return indexed, False
    ordered = sorted(indexed, key=lambda p: p[1]["emission_sequence"])
    return ordered, [i for i, _ in ordered] != list(range(len(events)))


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

    thoughts = _tool_thoughts(events)
    crew_id = next((ev.get("source_fingerprint") or ev.get("event_id") for ev in events
                    if ev.get("type") == "crew_kickoff_started"), None)
    b = TraceBuilder(str(crew_id or name), FORMAT, metadata={"crew_event_count": len(events)})
    ordered, reordered = _in_order(events)
    if reordered:
        issues.append(ImportIssue(FORMAT, root, "events read in emission_sequence order (the "
                                  "file lists them in another order)", b.conversation_id))
    by_start: dict[str, dict[str, Any]] = {}  # tool_usage_started event id → its call
    open_calls: list[tuple[str, dict[str, Any]]] = []  # (agent, call) still without output
    unmapped: Counter[str] = Counter()
    got_task = False

    def thought_for(role: str, tool: str) -> str:
        """The logged thought of ``role``'s next step with ``tool`` (consumed), else ''."""
        queue = thoughts.get(role, [])
        for k, (t_slug, text) in enumerate(queue):
            if t_slug == slug(tool):
                del queue[k]
                return text
        return ""

    def call_turn(role: str, tool: str, args: Any, where: str) -> dict[str, Any]:
        """A turn of ``role`` holding one call of ``tool``; a delegation's handoff after it."""
        call = tool_call(tool, args)
        b.turn(role, thought_for(role, tool), [call])
        open_calls.append((role, call))
        if slug(tool) in _DELEGATE:
            parsed = call["arguments"]
            if not isinstance(parsed, dict):
                issues.append(ImportIssue(FORMAT, f"{where}.tool_args", "delegation "
                                          "arguments are not a JSON object; the call is kept, "
                                          "no handoff made", b.conversation_id))
                return call
            coworker, ctx = _ctx(parsed, tool)
            if not coworker:
                issues.append(ImportIssue(FORMAT, where, "delegation names no coworker; the "
                                          "call is kept, no handoff made", b.conversation_id))
                return call
            to = next((x for x in roles if x.lower() == coworker.lower()), coworker)
            b.handoff(role, to, ctx, mode="delegate")
        return call

    for i, ev in ordered:
        where = f"{root}[{i}]"
        t = ev["type"]
        role = _role(ev)
        if t == "task_started":
            task = (cast("dict[str, Any]", ev.get("task")) if isinstance(ev.get("task"), dict)
                    else {})
            desc = ev.get("task_name") or task.get("description")
            if not got_task and isinstance(desc, str):
                b.user(desc)
                got_task = True
                b.metadata["user_message_from"] = "task description"
        elif t == "tool_usage_started":
            tool = str(ev.get("tool_name") or "")
            if not role or not tool:
                issues.append(ImportIssue(FORMAT, where, "tool_usage_started names no agent "
                                          "or tool; skipped", b.conversation_id))
                continue
            call: dict[str, Any] | None  # None: no started call found (below)
            call = call_turn(role, tool, ev.get("tool_args"), where)
            if isinstance(ev.get("event_id"), str):
                by_start[ev["event_id"]] = call
        elif t in ("tool_usage_finished", "tool_usage_error"):
            tool = str(ev.get("tool_name") or "")
            started = ev.get("started_event_id")
            call = by_start.get(started) if isinstance(started, str) else None
            if call is None:  # no started id: the agent's oldest call of this tool still open
                call = next((c for r, c in open_calls if r == role and "output" not in c
                             and slug(c["name"]) == slug(tool)), None)
            if call is None:
                if not role or not tool:
                    issues.append(ImportIssue(FORMAT, where, f"{t} names no agent or tool; "
                                              "skipped", b.conversation_id))
                    continue
                call = call_turn(role, tool, ev.get("tool_args"), where)
                issues.append(ImportIssue(FORMAT, where, f"{t} of {tool!r} without its "
                                          "tool_usage_started: the call is placed here",
                                          b.conversation_id))
            open_calls[:] = [(r, c) for r, c in open_calls if c is not call]
            error = ev.get("error") if t == "tool_usage_error" else ev.get("failure")
            output = ev.get("output")
            if output is not None:
                call["output"] = parse_jsonish(output)
            elif error not in (None, ""):
                call["output"] = error if isinstance(error, str) else json.dumps(error)
            if error not in (None, "", False):
                call["is_error"] = True
        elif t == "agent_execution_completed":
            if not role:
                issues.append(ImportIssue(FORMAT, where, "agent_execution_completed names no "
                                          "agent; skipped", b.conversation_id))
                continue
            out = ev.get("output")
            b.turn(role, out if isinstance(out, str) else json.dumps(out))
        elif t in ("agent_execution_started",):
            pass
        elif t not in _IGNORED:
            unmapped[t] += 1
    if unmapped:
        issues.append(ImportIssue(FORMAT, "", "event types not mapped: " + ", ".join(
            f"{k} ×{v}" for k, v in unmapped.most_common()), b.conversation_id))
    issues.append(ImportIssue(FORMAT, "", "agent thoughts (agent_logs_execution) are imported "
                              "only as the text of the turn making a tool call or delegation; "
                              "other turns are final answers", b.conversation_id))
    if isinstance(data, dict) and isinstance(data.get("final_output"), str):
        b.metadata["final_output"] = data["final_output"]
    return ImportResult([b.build()], issues)
