"""Chat logs → traces: the OpenAI chat format and its relatives (AG2 group chats, chat JSONL).

Messages are ``{role, content, name | agent, tool_calls, tool_call_id}``. ``role`` ``user``
(with no ``agent``, and ``name`` absent or equal to ``user_name``) is the user; every other
message is an agent turn by ``agent``, else ``name``, else ``role``. ``system`` messages go to
the trace's metadata; ``tool`` messages fill the output of the call they answer.

Handoffs: a tool call named ``transfer_to_<agent>`` (``handoff_to_…``, ``transfer_back_to_…``,
``escalate_to_…``; ``transfer_to_human_agents`` escalates to a person who is not in the trace)
is a handoff whose ``context_passed`` holds the call's arguments (a ``summary``, a ``reason``).
With ``speaker_change_handoffs=True`` (the default) each change of speaking agent that no such
call announced is a ``transfer`` handoff too, with empty context; ``False`` records only the
calls.

Shapes read (each also as JSON Lines, one value per line):

- a list of messages, ``{"messages": [...]}`` or AG2's ``{"chat_history": [...]}``;
- one conversation per record, ``{"conversation_id", "messages": [...]}`` (the id may be
  missing: ``<file>-<n>``);
- one message per record, each with its ``conversation_id``: messages of one conversation keep
  their order in the file.
"""

from __future__ import annotations

from typing import Any

from maev_kit.traces.importers._common import (
    ImportIssue,
    ImportResult,
    Reader,
    TraceBuilder,
    as_dict,
    as_list,
    check_options,
    content_text,
    resolve_agent,
    str_or_none,
    tool_call,
    transfer_target,
)
from maev_kit.traces._model import MultiAgentTrace

FORMAT = "chat"

#: A conversation's messages, each with where it is in the source (``[3].messages[2]``).
_Placed = list[tuple[str, Any]]


def _agent_of(m: dict[str, Any], w: str, r: Reader, user_name: str) -> str | None:
    """The agent who speaks message ``m`` at ``w``; None for the user."""
    role, name, agent = m.get("role"), m.get("name"), m.get("agent")
    if role is None and name is None and agent is None:
        raise r.fail(w, "a message needs 'role' or 'name' (or 'agent')")
    if role is not None and not isinstance(role, str):
        raise r.fail(f"{w}.role", "expected a string")
    if agent is not None and not isinstance(agent, str):
        raise r.fail(f"{w}.agent", "expected a string (the agent's name)")
    if role == "user" and agent is None and (name in (None, user_name) or name == role):
        return None
    # else an agent: AG2 logs other agents' messages as role "user" with their name
    return str(agent or name or role)


class _Conversation:
    """One conversation being read: the builder, and the tool calls waiting for output."""

    def __init__(self, conv: str, msgs: _Placed, r: Reader, user_name: str):
        self.b = TraceBuilder(conv, FORMAT)
        self.r = r
        self.user_name = user_name
        # as the turns name their agents (str), so a handoff names the same agent as its turns
        self.names = [str(m.get("agent") or m["name"]) for _, m in msgs if isinstance(m, dict)
                      and (m.get("agent") or m.get("name"))]
        self.calls_by_id: dict[str, dict[str, Any]] = {}

    def calls(self, m: dict[str, Any], w: str) -> list[dict[str, Any]]:
        out = []
        for j, tc in enumerate(as_list(m.get("tool_calls"))):
            tc = self.r.obj(tc, f"{w}.tool_calls[{j}]")
            fn = as_dict(tc.get("function")) or tc
            c = tool_call(str(fn.get("name", "")), fn.get("arguments", fn.get("args")),
                          id=tc.get("id"))
            out.append(c)
            if "id" in c:
                self.calls_by_id[c["id"]] = c
        return out


def _conversation(msgs: _Placed, conv: str, r: Reader, speaker_change_handoffs: bool,
                  user_name: str) -> MultiAgentTrace:
    c = _Conversation(conv, msgs, r, user_name)
    b = c.b
    last_agent: str | None = None
    pending_transfer: str | None = None
    for w, m in msgs:
        m = r.obj(m, w)
        if "content" not in m and not m.get("tool_calls"):
            raise r.fail(f"{w}.content", "required field is missing")
        agent = _agent_of(m, w, r, user_name)
        text = content_text(m.get("content"))
        role = m.get("role")
        if role == "system":
            b.metadata.setdefault("system_messages", []).append(text)
            continue
        if role in ("tool", "function"):
            call = c.calls_by_id.get(str_or_none(m.get("tool_call_id")) or "")
            if call is not None:
                call["output"] = text
            else:
                b.metadata.setdefault("tool_messages", []).append(text)
            continue
        if agent is None:
            b.user(text)
            continue
        calls = c.calls(m, w)
        if (speaker_change_handoffs and last_agent is not None and agent != last_agent
                and pending_transfer != agent):
            b.handoff(last_agent, agent)
        pending_transfer = None
        b.turn(agent, text, calls)
        for call in calls:
            tgt = transfer_target(call["name"])
            if tgt:
                to = resolve_agent(tgt, c.names)
                args = call.get("arguments")
                b.handoff(agent, to, args if isinstance(args, dict) else {})
                pending_transfer = to
        last_agent = agent
    if speaker_change_handoffs:
        b.metadata["handoffs_from_speaker_changes"] = True
    return b.build()


def _message_lines(data: Any) -> bool:
    """Records of one message each, with their ``conversation_id`` (chat JSONL)."""
    return (isinstance(data, list) and bool(data) and isinstance(data[0], dict)
            and "conversation_id" in data[0] and "messages" not in data[0]
            and "chat_history" not in data[0])


def _by_conversation(data: list[Any], r: Reader) -> dict[str, _Placed]:
    """Message records grouped by ``conversation_id``, in the order each first appears."""
    out: dict[str, _Placed] = {}
    for i, m in enumerate(data):
        m = r.obj(m, f"[{i}]")
        cid = m.get("conversation_id")
        if not isinstance(cid, (str, int)) or isinstance(cid, bool) or cid == "":
            raise r.fail(f"[{i}].conversation_id", "every message of a chat JSONL file with "
                         "conversation ids needs one (a string)" if cid is None
                         else "expected a string")
        out.setdefault(str(cid), []).append((f"[{i}]", m))
    return out


def import_chat(data: Any, *, name: str = "chat", speaker_change_handoffs: bool = True,
                user_name: str = "user", **options: Any) -> ImportResult:
    """Chat log(s) → (traces, issues); see the module docstring for the shapes and options."""
    check_options(options, FORMAT, ("speaker_change_handoffs", "user_name"))
    if not isinstance(speaker_change_handoffs, bool):
        from maev_kit.errors import InputError

        raise InputError("`speaker_change_handoffs` must be True or False")
    r = Reader(FORMAT)
    issues: list[ImportIssue] = []

    def msgs_of(obj: Any, where: str) -> _Placed:
        if isinstance(obj, dict) and "role" in obj and "messages" not in obj:
            return [(where or "[0]", obj)]  # a file of one message line
        if isinstance(obj, dict):
            for key in ("messages", "chat_history"):
                if key in obj:
                    w = f"{where}.{key}" if where else key
                    return [(f"{w}[{j}]", m) for j, m in enumerate(r.arr(obj[key], w))]
            raise r.fail(where, "expected a message list, or an object with 'messages' or "
                                "'chat_history'")
        return [(f"{where}[{j}]", m) for j, m in enumerate(r.arr(obj, where))]

    if _message_lines(data):
        traces = [_conversation(msgs, cid, r, speaker_change_handoffs, user_name)
                  for cid, msgs in _by_conversation(data, r).items()]
        return ImportResult(traces, issues)
    if isinstance(data, list) and data and isinstance(data[0], dict) and (
            "messages" in data[0] or "chat_history" in data[0]):
        traces = []
        for i, conv in enumerate(data):
            msgs = msgs_of(conv, f"[{i}]")
            cid = str(conv.get("conversation_id") or conv.get("id") or f"{name}-{i}")
            traces.append(_conversation(msgs, cid, r, speaker_change_handoffs, user_name))
        return ImportResult(traces, issues)
    msgs = msgs_of(data, "")
    if not msgs:
        raise r.fail("messages" if isinstance(data, dict) else "", "the chat log is empty")
    cid = str(data.get("conversation_id") or name) if isinstance(data, dict) else name
    t = _conversation(msgs, cid, r, speaker_change_handoffs, user_name)
    if not speaker_change_handoffs and not t.handoffs and len(t.agents_involved()) > 1:
        issues.append(ImportIssue(FORMAT, "", "several agents speak but the log names no "
                                  "handoff; pass speaker_change_handoffs=True to record each "
                                  "change of speaker as one", t.conversation_id))
    return ImportResult([t], issues)
