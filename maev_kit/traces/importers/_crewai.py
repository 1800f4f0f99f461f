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
    events, root, roles = _read_events(Reader(FORMAT), data)
    thoughts = _tool_thoughts(events)
    crew_id = next((ev.get("source_fingerprint") or ev.get("event_id") for ev in events
                    if ev.get("type") == "crew_kickoff_started"), None)
    b = TraceBuilder(str(crew_id or name), FORMAT, metadata={"crew_event_count": len(events)})
    issues: list[ImportIssue] = []
    ordered, reordered = _in_order(events)
    if reordered:
        issues.append(ImportIssue(FORMAT, root, "events read in emission_sequence order (the "
                                  "file lists them in another order)", b.conversation_id))
    timeline = _Timeline(b, roles, thoughts, issues)
    for i, ev in ordered:
        timeline.event(f"{root}[{i}]", ev)
    timeline.report()
    if isinstance(data, dict) and isinstance(data.get("final_output"), str):
        b.metadata["final_output"] = data["final_output"]
    return ImportResult([b.build()], issues)


def _read_events(r: Reader, data: Any) -> tuple[list[Any], str, list[str]]:
    """The events of an export, each checked to be an object with a string ``type``; where
    they are (``"events"``, or ``""`` for a list); and the roles of the agents they start, in
    order. Raises when no event is a CrewAI agent, task or tool event."""
    if isinstance(data, dict):
        events = r.arr(r.key(data, "events", ""), "events")
        root = "events"
    else:
        events = r.arr(data, "")
        root = ""
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
    return events, root, roles


class _Timeline:
    """The events, in order, mapped onto one trace: the tool calls still without output, the
    calls by the id of their ``tool_usage_started`` event, the thoughts not yet used and the
    event types not mapped."""

    def __init__(self, b: TraceBuilder, roles: list[str],
                 thoughts: dict[str, list[tuple[str, str]]], issues: list[ImportIssue]) -> None:
        self.b = b
        self.roles = roles  # agents started, to spell a coworker as its agent is spelled
        self.thoughts = thoughts  # per agent, (tool slug, thought) of each logged step
        self.issues = issues
        self.by_start: dict[str, dict[str, Any]] = {}  # tool_usage_started event id → its call
        self.open_calls: list[tuple[str, dict[str, Any]]] = []  # (agent, call) with no output
        self.unmapped: Counter[str] = Counter()
        self.got_task = False

    def _issue(self, where: str, message: str) -> None:
        """Report an issue of this trace at ``where``."""
        self.issues.append(ImportIssue(FORMAT, where, message, self.b.conversation_id))

    def event(self, where: str, ev: dict[str, Any]) -> None:
        """One event (at ``where`` in the file) → what its type makes of it."""
        t = ev["type"]
        role = _role(ev)
        if t == "task_started":
            self._task_started(ev)
        elif t == "tool_usage_started":
            self._tool_started(where, ev, role)
        elif t in ("tool_usage_finished", "tool_usage_error"):
            self._tool_finished(where, ev, role)
        elif t == "agent_execution_completed":
            if not role:
                self._issue(where, "agent_execution_completed names no agent; skipped")
                return
            out = ev.get("output")
            self.b.turn(role, out if isinstance(out, str) else json.dumps(out))
        elif t in ("agent_execution_started",):
            pass
        elif t not in _IGNORED:
            self.unmapped[t] += 1

    def _task_started(self, ev: dict[str, Any]) -> None:
        """The first task's description → the user message."""
        task = (cast("dict[str, Any]", ev.get("task")) if isinstance(ev.get("task"), dict)
                else {})
        desc = ev.get("task_name") or task.get("description")
        if not self.got_task and isinstance(desc, str):
            self.b.user(desc)
            self.got_task = True
            self.b.metadata["user_message_from"] = "task description"

    def _tool_started(self, where: str, ev: dict[str, Any], role: str | None) -> None:
        """``tool_usage_started`` → a turn of the agent holding the call (and the handoff of a
        delegation), registered by the event's id."""
        tool = str(ev.get("tool_name") or "")
        if not role or not tool:
            self._issue(where, "tool_usage_started names no agent or tool; skipped")
            return
        call = self._call_turn(role, tool, ev.get("tool_args"), where)
        if isinstance(ev.get("event_id"), str):
            self.by_start[ev["event_id"]] = call

    def _tool_finished(self, where: str, ev: dict[str, Any], role: str | None) -> None:
        """``tool_usage_finished`` / ``tool_usage_error`` → the output (and error flag) of its
        call: the call of its started event, else the agent's oldest open call of that tool,
        else a call placed here (reported)."""
        t = ev["type"]
        tool = str(ev.get("tool_name") or "")
        started = ev.get("started_event_id")
        call = self.by_start.get(started) if isinstance(started, str) else None
        if call is None:  # no started id: the agent's oldest call of this tool still open
            call = next((c for r, c in self.open_calls if r == role and "output" not in c
                         and slug(c["name"]) == slug(tool)), None)
        if call is None:
            if not role or not tool:
                self._issue(where, f"{t} names no agent or tool; skipped")
                return
            call = self._call_turn(role, tool, ev.get("tool_args"), where)
            self._issue(where, f"{t} of {tool!r} without its tool_usage_started: the call is "
                        "placed here")
        self.open_calls[:] = [(r, c) for r, c in self.open_calls if c is not call]
        error = ev.get("error") if t == "tool_usage_error" else ev.get("failure")
        output = ev.get("output")
        if output is not None:
            call["output"] = parse_jsonish(output)
        elif error not in (None, ""):
            call["output"] = error if isinstance(error, str) else json.dumps(error)
        if error not in (None, "", False):
            call["is_error"] = True

    def _thought_for(self, role: str, tool: str) -> str:
        """The logged thought of ``role``'s next step with ``tool`` (consumed), else ''."""
        queue = self.thoughts.get(role, [])
        for k, (t_slug, text) in enumerate(queue):
            if t_slug == slug(tool):
                del queue[k]
                return text
        return ""

    def _call_turn(self, role: str, tool: str, args: Any, where: str) -> dict[str, Any]:
        """A turn of ``role`` holding one call of ``tool``; a delegation's handoff after it."""
        call = tool_call(tool, args)
        self.b.turn(role, self._thought_for(role, tool), [call])
        self.open_calls.append((role, call))
        if slug(tool) in _DELEGATE:
            self._delegation(role, tool, call, where)
        return call

    def _delegation(self, role: str, tool: str, call: dict[str, Any], where: str) -> None:
        """The handoff a delegation tool call makes to its coworker (reported when the call
        names none, or its arguments are not an object)."""
        parsed = call["arguments"]
        if not isinstance(parsed, dict):
            self._issue(f"{where}.tool_args", "delegation arguments are not a JSON object; the "
                        "call is kept, no handoff made")
            return
        coworker, ctx = _ctx(parsed, tool)
        if not coworker:
            self._issue(where, "delegation names no coworker; the call is kept, no handoff made")
            return
        to = next((x for x in self.roles if x.lower() == coworker.lower()), coworker)
        self.b.handoff(role, to, ctx, mode="delegate")

    def report(self) -> None:
        """The import issues of the whole timeline: the event types not mapped, and what
        becomes of the agents' thoughts."""
        if self.unmapped:
            self._issue("", "event types not mapped: " + ", ".join(
                f"{k} ×{v}" for k, v in self.unmapped.most_common()))
        self._issue("", "agent thoughts (agent_logs_execution) are imported only as the text of "
                    "the turn making a tool call or delegation; other turns are final answers")
