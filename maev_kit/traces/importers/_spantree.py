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
from dataclasses import dataclass
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


#: The span kinds the walk maps; a group with none of them holds no conversation.
_MAPPED_KINDS = ("agent", "llm", "tool", "handoff")


def build_trace(group: list[Span], dialect: Dialect, conv_id: str,
                issues: list[ImportIssue], metadata: dict[str, Any]) -> MultiAgentTrace | None:
    """One trace group's spans, in start order → a trace; its issues are appended to
    ``issues``. None (and an issue) when no span carries agent, LLM or tool data."""
    fmt = dialect.format
    kinds = {id(s): dialect.kind(s) for s in group}
    if not any(k in _MAPPED_KINDS for k in kinds.values()):
        issues.append(ImportIssue(fmt, group[0].where, f"{len(group)} span(s) of trace "
                                  f"{group[0].trace_id} carry no agent, LLM or tool data; "
                                  "skipped", conv_id))
        return None
    walk = _SpanWalk(_index_spans(group, dialect, kinds), conv_id, metadata, issues)
    walk.add_root_users()
    for s in group:
        walk.map_span(s)
    return walk.finish()


@dataclass(frozen=True)
class _SpanIndex:
    """A trace group's spans as the walk sees them: each span's kind, the agents they name,
    and the agents that run inside a tool call (agents as tools)."""

    group: list[Span]
    dialect: Dialect
    kinds: dict[int, str | None]  # id(span) → its kind (see Dialect.kind)
    known: list[str]  # the agent names, in order of first appearance
    call_of: dict[int, Span]  # id(agent span) → the tool / handoff span it runs inside
    wrappers: set[int]  # spans between such a call and its agent (the nested run's root)

    def owner(self, span: Span) -> str | None:
        """The agent ``span`` belongs to: the nearest agent span at or above it, else the
        agent recorded on the span itself."""
        for s in [span, *span.ancestors()]:
            name = self.dialect.agent_name(s)
            if name:
                return name
        return self.dialect.own_agent(span)

    def agent_of(self, span: Span) -> Span | None:
        """The nearest agent span at or above ``span``."""
        return next((a for a in [span, *span.ancestors()]
                     if self.kinds.get(id(a)) == "agent"), None)

    def nested(self, span: Span) -> bool:
        """Whether ``span`` belongs to an agent running inside a tool call."""
        a = self.agent_of(span)
        return a is not None and id(a) in self.call_of


def _index_spans(group: list[Span], dialect: Dialect,
                 kinds: dict[int, str | None]) -> _SpanIndex:
    """Collect the agent names of a group's spans and find the agents run inside a call.

    Agents as tools: an agent span whose nearest enclosing call is a tool (or handoff) span
    runs *inside* that call — the caller delegates and gets the result back.
    """
    known: list[str] = []
    for s in group:
        for n in (dialect.agent_name(s), dialect.own_agent(s)):
            if n and n not in known:
                known.append(n)
    call_of: dict[int, Span] = {}
    wrappers: set[int] = set()
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
    return _SpanIndex(group, dialect, kinds, known, call_of, wrappers)


class _SpanWalk:
    """The walk over a group's spans in start order, building its trace: what the walk has
    met so far (each agent's last turn, the calls matched, the delegations made) and what its
    import issues count."""

    def __init__(self, idx: _SpanIndex, conv_id: str, metadata: dict[str, Any],
                 issues: list[ImportIssue]) -> None:
        self.idx = idx
        self.dialect = idx.dialect
        self.fmt = idx.dialect.format
        self.conv_id = conv_id
        self.issues = issues
        self.b = TraceBuilder(conv_id, self.fmt, metadata=dict(metadata))
        self.last_turn: dict[str, AgentTurn] = {}  # agent → its latest turn
        self.seen_users: Counter[str] = Counter()  # user messages added, by text
        self.consumed: set[int] = set()  # ids of tool spans read into an agent span's turn
        self.structural: set[int] = set()  # ids of turns with no text: known by their calls
        self.used_calls: set[int] = set()  # ids of transfer calls already matched to a handoff
        self.delegated: set[int] = set()  # ids of tool spans already turned into a delegation
        self.delegations: Counter[tuple[str, str, str]] = Counter()  # (from, to, tool) → runs
        self.first_delegation_where = ""
        self.unmapped: Counter[str] = Counter()  # names of spans with no agent meaning
        self.text_missing = 0  # turns whose source carries no text
        self.anonymous = False  # whether an LLM span had no enclosing agent

    def add_users(self, users: list[str]) -> None:
        """Add the user messages of one input not added yet (each input repeats the history;
        a text repeated within one input counts as often as it occurs)."""
        here: Counter[str] = Counter()
        for u in users:
            here[u] += 1
            if here[u] > self.seen_users[u]:
                self.seen_users[u] += 1
                self.b.user(u)

    def add_root_users(self) -> None:
        """When no LLM span of the group's own agents records the user's input: the user
        messages recorded on the root spans."""
        idx = self.idx
        has_llm = any(idx.kinds[id(s)] == "llm" and not idx.nested(s) for s in idx.group)
        if not has_llm:
            for s in idx.group:
                if s.parent is None:
                    self.add_users(self.dialect.root_users(s))

    def map_span(self, s: Span) -> None:
        """One span → what its kind makes of it; any other span is counted as unmapped, unless
        it is a root with children or the root of a nested run (structure)."""
        k = self.idx.kinds[id(s)]
        if id(s) in self.consumed:
            return
        if k == "llm":
            self._llm_turn(s)
        elif k == "agent":
            self._agent_turn(s)
        elif k == "handoff":
            self._handoff(s)
        elif k == "tool":
            self._tool_span(s)
        elif not (s.parent is None and s.children) and id(s) not in self.idx.wrappers:
            self.unmapped[s.name] += 1

    def _llm_turn(self, s: Span) -> None:
        """An LLM call → the new user messages of its input, then a turn of its agent."""
        users, text, calls = self.dialect.llm_io(s)
        if not self.idx.nested(s):  # a nested agent's "user" input is its caller's tool argument
            self.add_users(users)
        ag = self.idx.owner(s)
        if ag is None:
            ag, self.anonymous = "assistant", True
        if text is None and not calls:
            self.text_missing += 1
        self.last_turn[ag] = self.b.turn(ag, text or "", calls)
        if text is None and not calls:
            self.structural.add(id(self.last_turn[ag]))

    def _agent_turn(self, s: Span) -> None:
        """An agent span → a delegation when it runs inside a tool call; then, unless LLM spans
        below make its turns, a turn with its output and the tool calls below it."""
        idx = self.idx
        ag = self.dialect.agent_name(s) or idx.owner(s)
        if id(s) in idx.call_of and ag:
            self._delegate(s, ag)
        descendants = s.descendants()
        # LLM spans of an agent called as a tool below are that agent's, not this one's
        if any(idx.kinds[id(d)] == "llm" and (idx.agent_of(d) is s or not idx.nested(d))
               for d in descendants):
            self.dialect.extra(s, self.b, ag, self.issues)
            return
        tools = self._calls_below(descendants, ag)
        text = self.dialect.agent_output(s)
        self.dialect.extra(s, self.b, ag, self.issues)
        if ag is None:
            return
        if text is None and not tools:
            self.issues.append(ImportIssue(self.fmt, s.where, f"agent span of {ag!r} records "
                                           "no output and no tool call; no turn made",
                                           self.conv_id))
            return
        if text is None:
            self.text_missing += 1
        self.last_turn[ag] = self.b.turn(ag, text or "", tools)

    def _calls_below(self, descendants: list[Span], ag: str | None) -> list[dict[str, Any]]:
        """The tool calls of agent ``ag``'s tool and handoff spans among ``descendants``; its
        tool spans are then consumed (the walk passes over them)."""
        idx = self.idx
        tools = []
        for d in descendants:
            if idx.kinds[id(d)] == "tool" and idx.owner(d) == ag:
                tools.append(self.dialect.tool_info(d))
                self.consumed.add(id(d))
            elif idx.kinds[id(d)] == "handoff" and idx.owner(d) == ag:
                tools.append(self.dialect.tool_info(d))  # the handoff tool call itself
        return tools

    def _delegate(self, agent_span: Span, to: str) -> None:
        """The first agent run inside a tool call → ``Handoff(caller, to, mode="delegate")``.

        Later agents inside the same call are reached by the nested run's own handoffs; a
        handoff span around the agent is already the handoff.
        """
        call = self.idx.call_of[id(agent_span)]
        if self.idx.kinds[id(call)] != "tool" or id(call) in self.delegated:
            return
        self.delegated.add(id(call))
        frm = self.idx.owner(call) or "assistant"
        info = self.dialect.tool_info(call)
        args = info.get("arguments")
        ctx = dict(args) if isinstance(args, dict) else (
            {} if args in (None, "", [], {}) else {"input": args})
        self.b.handoff(frm, to, ctx, mode="delegate")
        self.delegations[(frm, to, info.get("name") or call.name)] += 1
        self.first_delegation_where = self.first_delegation_where or call.where

    def _handoff(self, s: Span) -> None:
        """A handoff span → a handoff to its target, after the tool call that made it; its
        context from the span, else that call's arguments, else a later LLM call's input."""
        frm, to, ctx, mode = self.dialect.handoff_info(s)
        frm, to = str_or_none(frm) or self.idx.owner(s) or "assistant", str_or_none(to)
        if not to:
            self.issues.append(ImportIssue(self.fmt, s.where, "handoff span names no target "
                                           "agent; skipped", self.conv_id))
            return
        to = resolve_agent(to, self.idx.known)
        call = self._handoff_tool_call(s, frm, to)
        if not ctx and call is not None and isinstance(call.get("arguments"), dict):
            ctx = dict(call["arguments"])
        if not ctx and hasattr(self.dialect, "input_calls"):
            ctx = _from_inputs(self.idx.group, self.idx.kinds, self.dialect, to, s.start)
            if ctx:
                self.issues.append(ImportIssue(self.fmt, s.where, f"context of handoff {frm} → "
                                               f"{to} read from a later LLM call's input "
                                               "history", self.conv_id))
        self.b.handoff(frm, to, ctx, mode=mode)

    def _handoff_tool_call(self, span: Span, frm: str, to: str) -> dict[str, Any] | None:
        """The tool call that made this handoff, kept in (or restored to) ``frm``'s last turn.

        Looked for in ``frm``'s last turn (by call id, else a ``transfer_to_<to>`` call not yet
        matched); when the instrumentation dropped it from that turn, it is restored from the
        handoff span itself (a transfer tool span) or from a later LLM call's input history,
        and reported. Its output is filled from the span when missing.
        """
        dialect = self.dialect
        recorded = dialect.handoff_call(span) if hasattr(dialect, "handoff_call") else None
        call = self._call_in_turn(self.last_turn.get(frm), recorded, to)
        source = ""
        if call is None and recorded is not None and recorded.get("name"):
            call, source = dict(recorded), "the handoff's tool span"
        if call is None and hasattr(dialect, "input_calls"):
            known_ids = {c["id"] for t in self.b.turns for c in t.tool_calls if c.get("id")}
            found = _input_call(self.idx.group, self.idx.kinds, dialect, to, span.start,
                                known_ids)
            if found is not None:
                call, source = found, "a later LLM call's input history"
        if call is None:
            return None
        if source:
            self._restore_call(span, frm, to, call, source)
        elif recorded is not None:
            for key in ("output", "id"):
                if key not in call and key in recorded:
                    call[key] = recorded[key]
        self.used_calls.add(id(call))
        return call

    def _call_in_turn(self, t: AgentTurn | None, recorded: dict[str, Any] | None,
                      to: str) -> dict[str, Any] | None:
        """The first call of turn ``t`` not yet matched to a handoff that has the id of the
        call the handoff span records, or is a ``transfer_to_<to>`` call, or has the recorded
        call's name; else None."""
        for c in (t.tool_calls if t else []):
            if id(c) in self.used_calls:
                continue
            if recorded is not None and recorded.get("id") and c.get("id") == recorded["id"]:
                return c
            tgt = transfer_target(c.get("name", ""))
            if (tgt and slug(tgt) == slug(to)) or (
                    recorded is not None and c.get("name") == recorded.get("name")):
                return c
        return None

    def _restore_call(self, span: Span, frm: str, to: str, call: dict[str, Any],
                      source: str) -> None:
        """Put a handoff's tool call, found in ``source``, back in ``frm``'s last turn (a new
        turn with no text when ``frm`` has none), and report it."""
        t = self.last_turn.get(frm)
        if t is None:
            t = self.last_turn[frm] = self.b.turn(frm, "", [])
            self.structural.add(id(t))
        t.tool_calls.append(call)
        self.issues.append(ImportIssue(self.fmt, span.where, f"tool call {call['name']!r} of "
                                       f"handoff {frm} → {to} missing from {frm}'s turn: "
                                       f"restored from {source}", self.conv_id))

    def _tool_span(self, s: Span) -> None:
        """A tool span → the output of its call in its agent's last turn (matched by id, else
        the first call of its name with no output); with no such call, the call itself: added
        to that turn when the turn is known only by its calls, else as a new turn."""
        info = self.dialect.tool_info(s)
        ag = self.idx.owner(s) or "assistant"
        t = self.last_turn.get(ag)
        target = None
        for call in (t.tool_calls if t else []):
            if (info.get("id") and call.get("id") == info.get("id")) or (
                    call.get("name") == info["name"] and "output" not in call):
                target = call
                break
        if target is not None:
            if "output" in info:
                target["output"] = info["output"]
        elif t is not None and id(t) in self.structural:
            t.tool_calls.append(info)  # a turn known only by its tool calls
        else:
            self.last_turn[ag] = self.b.turn(ag, "", [info])
            self.text_missing += 1

    def finish(self) -> MultiAgentTrace:
        """The trace, after its import issues: tool outputs read from input histories, agents
        run as tools, anonymous LLM spans, turns with no text (also marked in the metadata)
        and spans not mapped."""
        fmt, conv_id, issues = self.fmt, self.conv_id, self.issues
        if hasattr(self.dialect, "input_results"):
            filled = _outputs_from_inputs(self.idx.group, self.idx.kinds, self.dialect,
                                          self.b.turns)
            if filled:
                issues.append(ImportIssue(fmt, "", f"{filled} tool output(s) read from later "
                                          "LLM calls' input history (no tool span records "
                                          "them)", conv_id))
        if self.delegations:
            shown = ", ".join(f"{f} → {t} via tool {n!r}" + (f" ×{c}" if c > 1 else "")
                              for (f, t, n), c in self.delegations.items())
            issues.append(ImportIssue(fmt, self.first_delegation_where,
                                      f"{sum(self.delegations.values())} agent run(s) inside a "
                                      f"tool call (agents as tools) imported as delegate "
                                      f"handoffs: {shown}; the tool's arguments are their "
                                      "context_passed, not user messages", conv_id))
        if self.anonymous:
            issues.append(ImportIssue(fmt, "", "LLM spans with no enclosing agent were "
                                      "attributed to agent 'assistant'", conv_id))
        if self.text_missing:
            self.b.metadata["text_unavailable"] = True
            issues.append(ImportIssue(fmt, "", f"{self.text_missing} turn(s) carry no text in "
                                      "the source; imported with message '' (structure only)",
                                      conv_id))
        if self.unmapped:
            unmapped = self.unmapped
            shown = ", ".join((n if len(n) <= 40 else n[:39] + "…")
                              + (f" ×{c}" if c > 1 else "") for n, c in unmapped.most_common(8))
            more = "" if len(unmapped) <= 8 else f" and {len(unmapped) - 8} more names"
            issues.append(ImportIssue(fmt, "", f"{sum(unmapped.values())} span(s) with no "
                                      f"agent meaning not mapped: {shown}{more}", conv_id))
        return self.b.build()


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
