"""Span trees → traces: the walk shared by the OTel GenAI and OpenInference importers.

A *dialect* says what each span is (agent, LLM call, tool call, handoff) and how to read it;
the walk turns spans, in start order, into user messages, agent turns and handoffs.

Agents as tools: an agent span whose nearest enclosing agent/LLM/tool/handoff span is a *tool*
span ran inside that tool call (OpenAI Agents ``Agent.as_tool``: function → task → agent; OTel
``invoke_agent`` under ``execute_tool``; OpenInference ``AGENT`` under ``TOOL``). The caller
delegated and got the result back, so the first such agent of a call becomes
``Handoff(caller, agent, context_passed=<the tool's arguments>, mode="delegate")``; its turns
stay turns; the ``role: user`` input of its LLM calls (the caller's tool argument) is not a user
message; no transfer back is recorded. Under a handoff span (e.g. OTel ``execute_tool`` with
``gen_ai.transfer.target.name``) that span is already the handoff: only the input is skipped.
The dialects need no rule of their own.

Hand-off tool calls stay in the turn that made them, before the handoff; when an instrumentation
dropped one from its turn, it is restored from the handoff's tool span or a later LLM call's input
history (reported). Tool calls with no output get it from the tool results in later LLM calls'
input histories, by call id (dialects with ``input_results``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Protocol

from maev_kit.traces._model import AgentTurn, MultiAgentTrace
from maev_kit.traces.importers._autogen import spans_via_messages
from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    TraceBuilder,
    parse_jsonish,
    resolve_agent,
    slug,
    str_or_none,
    transfer_target,
)
from maev_kit.traces.importers._otlp import Span, conversation_id, flat_span, group_traces


class Dialect(Protocol):
    format: str

    def agent_name(self, span: Span) -> str | None:
        """The agent this span *is* (an agent invocation), else None."""

    def own_agent(self, span: Span) -> str | None:
        """An agent name recorded on the span itself (used when no agent span encloses it)."""

    def kind(self, span: Span) -> str | None:
        """``"agent"``, ``"llm"``, ``"tool"``, ``"handoff"`` or None (not mapped)."""

    def llm_io(self, span: Span) -> tuple[list[str], str | None, list[dict[str, Any]]]:
        """(user messages in the input, output text or None when absent, output tool calls)."""

    def tool_info(self, span: Span) -> dict[str, Any]:
        """The tool call of a tool span (the importers' tool-call dict)."""

    def handoff_info(self, span: Span) -> tuple[str | None, str | None, dict[str, Any], str]:
        """(from agent or None, to agent or target slug, context, mode)."""

    def agent_output(self, span: Span) -> str | None:
        """Output text of an agent span, when recorded."""

    def root_users(self, span: Span) -> list[str]:
        """User messages recorded on a root span's input."""

    def extra(self, span: Span, builder: TraceBuilder, owner: str | None,
              issues: list[ImportIssue]) -> None:
        """Hook for dialect-specific content of an agent span (e.g. CrewAI delegations)."""


def import_span_groups(spans: list[Span], dialect: Any) -> ImportResult:
    """An OTLP export's spans → one trace per conversation (its trace groups), and the issues.

    A group whose spans carry AutoGen chat messages is read from those messages; any other
    through :func:`build_trace`.
    """
    fmt = dialect.format
    traces: list[MultiAgentTrace] = []
    issues: list[ImportIssue] = []
    for group in group_traces(spans):
        conv = conversation_id(group, group[0].trace_id)
        meta = {"trace_ids": sorted({s.trace_id for s in group}),
                "service_name": group[0].resource.get("service.name")}
        found: list[ImportIssue] = []
        t = spans_via_messages(group, fmt, conv, meta, found)
        if t is None:
            t = build_trace(group, dialect, conv, found, meta)
        issues.extend(found)
        if t is not None:
            traces.append(t)
    return ImportResult(traces, issues)


def import_flat_span(data: dict[str, Any], dialect: Any, name: str) -> ImportResult:
    """One span's flat attribute map → a one-span trace named ``name``, and the issues."""
    spans = flat_span(data, dialect.reader)
    issues = [ImportIssue(dialect.format, "", "flat attribute map: one span with no ids, "
                          "times or agent; imported as a one-span trace")]
    return ImportResult(*_flat_trace(spans[0], dialect, name, issues))


def build_trace(group: list[Span], dialect: Dialect, conv_id: str,
                issues: list[ImportIssue], metadata: dict[str, Any]) -> MultiAgentTrace | None:
    fmt = dialect.format
    kinds = {id(s): dialect.kind(s) for s in group}
    if not any(k in ("agent", "llm", "tool", "handoff") for k in kinds.values()):
        issues.append(ImportIssue(fmt, group[0].where, f"{len(group)} span(s) of trace "
                                  f"{group[0].trace_id} carry no agent, LLM or tool data; "
                                  "skipped", conv_id))
        return None

    def owner(span: Span) -> str | None:
        for s in [span, *span.ancestors()]:
            name = dialect.agent_name(s)
            if name:
                return name
        return dialect.own_agent(span)

    known: list[str] = []
    for s in group:
        for n in (dialect.agent_name(s), dialect.own_agent(s)):
            if n and n not in known:
                known.append(n)

    # agents as tools: an agent span whose nearest enclosing call is a tool (or handoff) span
    # runs *inside* that call — the caller delegates and gets the result back
    call_of: dict[int, Span] = {}  # id(agent span) → the tool / handoff span it runs inside
    wrappers: set[int] = set()  # spans between such a call and its agent (the nested run's root)
    for s in group:
        if kinds[id(s)] != "agent":
            continue
        between: list[int] = []
        for a in s.ancestors():
            k = kinds.get(id(a))
            if k in ("tool", "handoff"):
                call_of[id(s)] = a
                wrappers.update(between)
                break
            if k in ("agent", "llm"):
                break
            between.append(id(a))

    def agent_of(span: Span) -> Span | None:
        """The nearest agent span at or above ``span``."""
        return next((a for a in [span, *span.ancestors()] if kinds.get(id(a)) == "agent"), None)

    def nested(span: Span) -> bool:
        """Whether ``span`` belongs to an agent running inside a tool call."""
        a = agent_of(span)
        return a is not None and id(a) in call_of

    b = TraceBuilder(conv_id, fmt, metadata=dict(metadata))
    delegated: set[int] = set()  # ids of tool spans already turned into a delegation
    delegations: Counter[tuple[str, str, str]] = Counter()
    first_delegation_where = ""

    def delegate(agent_span: Span, to: str) -> None:
        """The first agent run inside a tool call → ``Handoff(caller, to, mode="delegate")``.

        Later agents inside the same call are reached by the nested run's own handoffs; a
        handoff span around the agent is already the handoff.
        """
        nonlocal first_delegation_where
        call = call_of[id(agent_span)]
        if kinds[id(call)] != "tool" or id(call) in delegated:
            return
        delegated.add(id(call))
        frm = owner(call) or "assistant"
        info = dialect.tool_info(call)
        args = info.get("arguments")
        ctx = dict(args) if isinstance(args, dict) else (
            {} if args in (None, "", [], {}) else {"input": args})
        b.handoff(frm, to, ctx, mode="delegate")
        delegations[(frm, to, info.get("name") or call.name)] += 1
        first_delegation_where = first_delegation_where or call.where

    seen_users: Counter[str] = Counter()
    last_turn: dict[str, AgentTurn] = {}
    consumed: set[int] = set()
    structural: set[int] = set()
    unmapped: Counter[str] = Counter()
    text_missing = 0
    anonymous = False

    def add_users(users: list[str]) -> None:
        here: Counter[str] = Counter()
        for u in users:
            here[u] += 1
            if here[u] > seen_users[u]:
                seen_users[u] += 1
                b.user(u)

    used_calls: set[int] = set()  # ids of transfer calls already matched to a handoff

    def handoff_tool_call(span: Span, frm: str, to: str) -> dict[str, Any] | None:
        """The tool call that made this handoff, kept in (or restored to) ``frm``'s last turn.

        Looked for in ``frm``'s last turn (by call id, else a ``transfer_to_<to>`` call not yet
        matched); when the instrumentation dropped it from that turn, it is restored from the
        handoff span itself (a transfer tool span) or from a later LLM call's input history,
        and reported. Its output is filled from the span when missing.
        """
        recorded = dialect.handoff_call(span) if hasattr(dialect, "handoff_call") else None
        t = last_turn.get(frm)
        call = None
        for c in (t.tool_calls if t else []):
            if id(c) in used_calls:
                continue
            if recorded is not None and recorded.get("id") and c.get("id") == recorded["id"]:
                call = c
                break
            tgt = transfer_target(c.get("name", ""))
            if (tgt and slug(tgt) == slug(to)) or (
                    recorded is not None and c.get("name") == recorded.get("name")):
                call = c
                break
        source = ""
        if call is None and recorded is not None and recorded.get("name"):
            call, source = dict(recorded), "the handoff's tool span"
        if call is None and hasattr(dialect, "input_calls"):
            known_ids = {c["id"] for t2 in b.turns for c in t2.tool_calls if c.get("id")}
            found = _input_call(group, kinds, dialect, to, span.start, known_ids)
            if found is not None:
                call, source = found, "a later LLM call's input history"
        if call is None:
            return None
        if source:
            if t is None:
                t = last_turn[frm] = b.turn(frm, "", [])
                structural.add(id(t))
            t.tool_calls.append(call)
            issues.append(ImportIssue(fmt, span.where, f"tool call {call['name']!r} of handoff "
                                      f"{frm} → {to} missing from {frm}'s turn: restored from "
                                      f"{source}", conv_id))
        elif recorded is not None:
            for key in ("output", "id"):
                if key not in call and key in recorded:
                    call[key] = recorded[key]
        used_calls.add(id(call))
        return call

    has_llm = any(kinds[id(s)] == "llm" and not nested(s) for s in group)
    if not has_llm:
        for s in group:
            if s.parent is None:
                add_users(dialect.root_users(s))

    for s in group:
        k = kinds[id(s)]
        if id(s) in consumed:
            continue
        if k == "llm":
            users, text, calls = dialect.llm_io(s)
            if not nested(s):  # a nested agent's "user" input is its caller's tool argument
                add_users(users)
            ag = owner(s)
            if ag is None:
                ag, anonymous = "assistant", True
            if text is None and not calls:
                text_missing += 1
            last_turn[ag] = b.turn(ag, text or "", calls)
            if text is None and not calls:
                structural.add(id(last_turn[ag]))
        elif k == "agent":
            ag = dialect.agent_name(s) or owner(s)
            if id(s) in call_of and ag:
                delegate(s, ag)
            descendants = s.descendants()
            # LLM spans of an agent called as a tool below are that agent's, not this one's
            if any(kinds[id(d)] == "llm" and (agent_of(d) is s or not nested(d))
                   for d in descendants):
                dialect.extra(s, b, ag, issues)
                continue
            tools = []
            for d in descendants:
                if kinds[id(d)] == "tool" and owner(d) == ag:
                    tools.append(dialect.tool_info(d))
                    consumed.add(id(d))
                elif kinds[id(d)] == "handoff" and owner(d) == ag:
                    tools.append(dialect.tool_info(d))  # the handoff tool call itself
            text = dialect.agent_output(s)
            dialect.extra(s, b, ag, issues)
            if ag is None:
                continue
            if text is None and not tools:
                issues.append(ImportIssue(fmt, s.where, f"agent span of {ag!r} records no "
                                          "output and no tool call; no turn made", conv_id))
                continue
            if text is None:
                text_missing += 1
            last_turn[ag] = b.turn(ag, text or "", tools)
        elif k == "handoff":
            frm, to, ctx, mode = dialect.handoff_info(s)
            frm, to = str_or_none(frm) or owner(s) or "assistant", str_or_none(to)
            if not to:
                issues.append(ImportIssue(fmt, s.where, "handoff span names no target agent; "
                                          "skipped", conv_id))
                continue
            to = resolve_agent(to, known)
            call = handoff_tool_call(s, frm, to)
            if not ctx and call is not None and isinstance(call.get("arguments"), dict):
                ctx = dict(call["arguments"])
            if not ctx and hasattr(dialect, "input_calls"):
                ctx = _from_inputs(group, kinds, dialect, to, s.start)
                if ctx:
                    issues.append(ImportIssue(fmt, s.where, f"context of handoff {frm} → {to} "
                                              "read from a later LLM call's input history",
                                              conv_id))
            b.handoff(frm, to, ctx, mode=mode)
        elif k == "tool":
            info = dialect.tool_info(s)
            ag = owner(s) or "assistant"
            t = last_turn.get(ag)
            target = None
            for call in (t.tool_calls if t else []):
                if (info.get("id") and call.get("id") == info.get("id")) or (
                        call.get("name") == info["name"] and "output" not in call):
                    target = call
                    break
            if target is not None:
                if "output" in info:
                    target["output"] = info["output"]
            elif t is not None and id(t) in structural:
                t.tool_calls.append(info)  # a turn known only by its tool calls
            else:
                last_turn[ag] = b.turn(ag, "", [info])
                text_missing += 1
        elif not (s.parent is None and s.children) and id(s) not in wrappers:
            unmapped[s.name] += 1

    if hasattr(dialect, "input_results"):
        filled = _outputs_from_inputs(group, kinds, dialect, b.turns)
        if filled:
            issues.append(ImportIssue(fmt, "", f"{filled} tool output(s) read from later LLM "
                                      "calls' input history (no tool span records them)",
                                      conv_id))
    if delegations:
        shown = ", ".join(f"{f} → {t} via tool {n!r}" + (f" ×{c}" if c > 1 else "")
                          for (f, t, n), c in delegations.items())
        issues.append(ImportIssue(fmt, first_delegation_where, f"{sum(delegations.values())} "
                                  f"agent run(s) inside a tool call (agents as tools) imported "
                                  f"as delegate handoffs: {shown}; the tool's arguments are "
                                  "their context_passed, not user messages", conv_id))
    if anonymous:
        issues.append(ImportIssue(fmt, "", "LLM spans with no enclosing agent were "
                                  "attributed to agent 'assistant'", conv_id))
    if text_missing:
        b.metadata["text_unavailable"] = True
        issues.append(ImportIssue(fmt, "", f"{text_missing} turn(s) carry no text in the "
                                  "source; imported with message '' (structure only)", conv_id))
    if unmapped:
        shown = ", ".join((n if len(n) <= 40 else n[:39] + "…") + (f" ×{c}" if c > 1 else "")
                          for n, c in unmapped.most_common(8))
        more = "" if len(unmapped) <= 8 else f" and {len(unmapped) - 8} more names"
        issues.append(ImportIssue(fmt, "", f"{sum(unmapped.values())} span(s) with no agent "
                                  f"meaning not mapped: {shown}{more}", conv_id))
    return b.build()


def _outputs_from_inputs(group: list[Span], kinds: dict[int, str | None], dialect: Any,
                         turns: list[AgentTurn]) -> int:
    """Fill, by call id, the outputs of tool calls that have none from the tool results in the
    LLM calls' input histories; return how many were filled."""
    results: dict[str, Any] = {}
    for s in group:
        if kinds[id(s)] == "llm":
            for cid, out in dialect.input_results(s).items():
                results.setdefault(cid, out)
    filled = 0
    for t in turns:
        for c in t.tool_calls:
            if "output" not in c and c.get("id") in results:
                c["output"] = results[c["id"]]
                filled += 1
    return filled


def _input_call(group: list[Span], kinds: dict[int, str | None], dialect: Any,
                to: str, after: int, skip_ids: set[str] | None = None) -> dict[str, Any] | None:
    """A copy of the ``transfer_to_<to>`` call in the input history of the first LLM call
    starting at or after ``after`` that holds one (calls whose id is in ``skip_ids``, already in
    the trace, passed over), else None."""
    for s in group:
        if kinds[id(s)] != "llm" or s.start < after:
            continue
        for call in dialect.input_calls(s):
            tgt = transfer_target(call.get("name", ""))
            if tgt and slug(tgt) == slug(to) and not (skip_ids and call.get("id") in skip_ids):
                return dict(call)
    return None


def _from_inputs(group: list[Span], kinds: dict[int, str | None], dialect: Any,
                 to: str, after: int) -> dict[str, Any]:
    """Arguments of a ``transfer_to_<to>`` call in an LLM span's input, after the handoff."""
    call = _input_call(group, kinds, dialect, to, after)
    args = call.get("arguments") if call else None
    return dict(args) if isinstance(args, dict) and args else {}


def _flat_trace(s: Span, d: Any, name: str, issues: list[ImportIssue]):
    """One flat span: its input history and output as a conversation with agent 'assistant'."""
    b = TraceBuilder(name, d.format, metadata={"flat_attributes": True})
    kind = d.kind(s)
    agent = d.own_agent(s) or "assistant"
    history = d.history(s) if hasattr(d, "history") else []
    for role, text, calls in history:
        if role == "user":
            b.user(text)
        elif role == "assistant":
            b.turn(agent, text, calls)
        elif role == "tool" and b.turns:
            for c in b.turns[-1].tool_calls:
                if "output" not in c:
                    c["output"] = parse_jsonish(text)
                    break
    if kind == "llm":
        users, text, calls = d.llm_io(s)
        if not history:
            for u in users:
                b.user(u)
        b.turn(agent, text or "", calls)
        if text is None and not calls:
            b.metadata["text_unavailable"] = True
    elif kind == "tool":
        b.turn(agent, "", [d.tool_info(s)])
        b.metadata["text_unavailable"] = True
        issues.append(ImportIssue(d.format, "", "a lone tool span: imported as a turn with no "
                                  "text holding the tool call"))
    else:
        raise d.reader.fail("", f"flat span of kind {kind!r} holds no LLM or tool call")
    if agent == "assistant":
        issues.append(ImportIssue(d.format, "", "no agent name in the span: turns "
                                  "attributed to 'assistant'", name))
    return [b.build()], issues
