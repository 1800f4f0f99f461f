"""One run of the Who&When benchmark (Zhang et al., ICML 2025) → a trace and its failure label.

A Who&When file is one failed run of a multi-agent system: ``history`` (a list of
``{"content", "role", "name"?}``), the responsible agent (``mistake_agent``), the decisive step
(``mistake_step``, an index into ``history``), the reason, the task (``question``) and its
answer (``ground_truth``). How it maps:

- each history entry keeps its position as ``turn_index`` (so the trace's sequence is the
  benchmark's steps); a ``human`` entry is a user message, every other entry an agent turn;
- the speaker is ``name`` when given (the Algorithm-Generated runs: AutoGen's ``role`` is only
  ``user``/``assistant`` there), else ``role``; a role ``Agent (detail)`` (the Hand-Crafted
  Magentic-One runs: ``Orchestrator (thought)``, ``Orchestrator (-> WebSurfer)``) is agent
  ``Agent`` with ``agent_role`` ``detail``;
- handoffs: where the run records delegations (``Agent (-> Other)``) they are the handoffs
  (``mode="delegate"``); elsewhere each change of speaker between consecutive agent turns is
  one (``mode="transfer"``). ``metadata["handoffs"]`` says which, per trace;
- the label is ``agent@step`` with ``step`` the 0-based position of the decisive turn in
  ``trace.turns`` (the ``t{step}`` turn), or ``agent`` alone when the step points at no agent
  turn. The failure label never enters the trace (a judge reads the trace).

Pure functions over the parsed JSON; the reader of a whole folder is
:func:`maev_kit.datasets.load_who_and_when`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from maev_kit.traces._model import AgentTurn, Handoff, MultiAgentTrace, UserMessage

__all__ = ["WhoAndWhenRun", "who_and_when_run"]

#: ``Orchestrator (-> WebSurfer)``, ``Orchestrator (thought)``
_ROLE = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<detail>[^()]*)\)\s*$")
_DELEGATE = re.compile(r"^\s*->\s*(?P<to>.+?)\s*$")
#: The keys of a run copied into the trace's metadata (never the failure label).
_CONTEXT = {"question": "question", "ground_truth": "ground_truth",
            "question_ID": "question_id", "level": "level"}


@dataclass(frozen=True)
class WhoAndWhenRun:
    """A converted run: the trace, its label (``agent`` or ``agent@step``; None when the file's
    label cannot be read), the benchmark's own fields for the label, the problems that make the
    file unusable and the notes on a usable one (each a sentence naming the field)."""

    trace: MultiAgentTrace
    label: str | None
    mistake_agent: str | None
    mistake_step: int | None  #: the benchmark's index into ``history``
    reason: str
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _speaker(entry: dict[str, Any]) -> tuple[str, str, str | None]:
    """(agent, agent_role, delegated-to agent or None) of one history entry."""
    name = entry.get("name")
    role = str(entry.get("role") or "")
    if isinstance(name, str) and name.strip():
        return name.strip(), role, None
    m = _ROLE.match(role)
    if not m:
        return role.strip(), "", None
    detail = m["detail"].strip()
    to = _DELEGATE.match(detail)
    return m["agent"], detail, (to["to"] if to else None)


def _is_user(entry: dict[str, Any]) -> bool:
    return not entry.get("name") and str(entry.get("role") or "").strip().lower() == "human"


def _history(data: Any) -> tuple[list[dict[str, Any]], list[str]]:
    if not isinstance(data, dict):
        return [], [f"expected a JSON object, got {type(data).__name__}"]
    history = data.get("history")
    if not isinstance(history, list) or not history:
        return [], ["history: missing or empty (a list of {content, role, name?})"]
    problems = [f"history[{i}]: expected an object with content and role"
                for i, e in enumerate(history)
                if not isinstance(e, dict) or not isinstance(e.get("role", e.get("name")), str)]
    return (history if not problems else []), problems


def who_and_when_run(data: Any, conversation_id: str, *, subset: str = "",
                     source: str = "") -> WhoAndWhenRun:
    """Convert one parsed Who&When file (``data``) into a :class:`WhoAndWhenRun`.

    >>> run = who_and_when_run({"history": [
    ...     {"role": "human", "content": "What is 2+2?"},
    ...     {"role": "Orchestrator (-> Coder)", "content": "Please compute 2+2."},
    ...     {"role": "Coder", "content": "5"}],
    ...     "mistake_agent": "Coder", "mistake_step": "2", "mistake_reason": "wrong sum"}, "r-1")
    >>> run.label, run.trace.metadata["handoffs"], run.trace.handoffs[0].to_agent
    ('Coder@1', 'explicit delegations', 'Coder')
    """
    history, problems = _history(data)
    turns: list[AgentTurn] = []
    users: list[UserMessage] = []
    delegations: list[Handoff] = []
    position: dict[int, int] = {}  # history index -> position in turns
    for i, entry in enumerate(history):
        content = entry.get("content")
        text = content if isinstance(content, str) else ("" if content is None else str(content))
        if _is_user(entry):
            users.append(UserMessage(text, i))
            continue
        agent, detail, to = _speaker(entry)
        position[i] = len(turns)
        turns.append(AgentTurn(agent, detail, text, turn_index=i))
        if to:
            delegations.append(Handoff(agent, to, turn_index=i, mode="delegate"))
    if delegations:
        handoffs, how = delegations, "explicit delegations"
    else:
        handoffs = [Handoff(a.agent_id, b.agent_id, turn_index=a.turn_index)
                    for a, b in zip(turns, turns[1:]) if a.agent_id != b.agent_id]
        how = "speaker changes"
    meta: dict[str, Any] = {"source": "who-and-when", "subset": subset, "file": source,
                            "handoffs": how}
    if isinstance(data, dict):
        meta.update({k: data[src] for src, k in _CONTEXT.items() if src in data})
        if isinstance(data.get("system_prompt"), dict):
            meta["system_prompts"] = data["system_prompt"]
    trace = MultiAgentTrace(conversation_id, turns, handoffs, users, meta)
    return _labeled(trace, data if isinstance(data, dict) else {}, position, problems)


def _labeled(trace: MultiAgentTrace, data: dict[str, Any], position: dict[int, int],
             problems: list[str]) -> WhoAndWhenRun:
    """The run of ``trace`` with the label of ``data`` (``position``: history index → turn)."""
    agent = data.get("mistake_agent")
    reason = data.get("mistake_reason")
    reason = reason if isinstance(reason, str) else ""
    if not isinstance(agent, str) or not agent.strip():
        problems.append("mistake_agent: missing or not a non-empty string")
        return WhoAndWhenRun(trace, None, None, None, reason, tuple(problems))
    agent = agent.strip()
    raw = data.get("mistake_step")
    try:
        step = int(str(raw).strip())
    except ValueError:
        problems.append(f"mistake_step: {raw!r} is not a whole number")
        return WhoAndWhenRun(trace, None, agent, None, reason, tuple(problems))
    if agent not in trace.agents_involved():
        problems.append(f"mistake_agent: {agent!r} has no turn in history")
    at = position.get(step)
    notes = () if at is not None or problems else (
        f"mistake_step: {step} is no agent turn of history; the label has no step",)
    label = None if problems else agent if at is None else f"{agent}@{at}"
    return WhoAndWhenRun(trace, label, agent, step, reason, tuple(problems), notes)
