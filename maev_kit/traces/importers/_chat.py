"""A generic chat log ``[{role, name, content}]`` (e.g. an AG2 group chat) → traces.

``role`` ``user`` (or ``name`` equal to ``user_name``) is the user; every other message is an
agent turn by ``name`` (or by ``role`` when there is no name). With
``speaker_change_handoffs=True`` each change of agent between two agent turns is recorded as a
``transfer`` handoff (the log itself names no handoffs); tool calls named
``transfer_to_<agent>`` are handoffs either way.

Accepts a list of messages, ``{"messages": [...]}``, or ``{"chat_history": [...]}`` (AG2's
``ChatResult``), or a list of such objects for several conversations.
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

FORMAT = "chat"


def _conversation(msgs: list[Any], where: str, conv: str, r: Reader,
                  speaker_change_handoffs: bool, user_name: str, issues: list[ImportIssue]):
    b = TraceBuilder(conv, FORMAT)
    # as the turns name their agents (str), so a handoff names the same agent as its turns
    names = [str(m["name"]) for m in msgs if isinstance(m, dict) and m.get("name")]
    last_agent: str | None = None
    pending_transfer: str | None = None
    calls_by_id: dict[str, dict[str, Any]] = {}
    for i, m in enumerate(msgs):
        w = f"{where}[{i}]"
        m = r.obj(m, w)
        role = m.get("role")
        name = m.get("name")
        if role is None and name is None:
            raise r.fail(w, "a message needs 'role' or 'name'")
        if role is not None and not isinstance(role, str):
            raise r.fail(f"{w}.role", "expected a string")
        if "content" not in m and not m.get("tool_calls"):
            raise r.fail(f"{w}.content", "required field is missing")
        text = content_text(m.get("content"))
        if role == "system":
            b.metadata.setdefault("system_messages", []).append(text)
            continue
        if role in ("tool", "function"):
            c = calls_by_id.get(str_or_none(m.get("tool_call_id")) or "")
            if c is not None:
                c["output"] = text
            else:
                b.metadata.setdefault("tool_messages", []).append(text)
            continue
        if role == "user" and (name in (None, user_name) or name == role):
            b.user(text)
            continue
        # else an agent: AG2 logs other agents' messages as role "user" with their name
        agent = str(name or role)
        calls = []
        for j, tc in enumerate(as_list(m.get("tool_calls"))):
            tc = r.obj(tc, f"{w}.tool_calls[{j}]")
            fn = as_dict(tc.get("function")) or tc
            c = tool_call(str(fn.get("name", "")), fn.get("arguments", fn.get("args")),
                          id=tc.get("id"))
            calls.append(c)
            if "id" in c:
                calls_by_id[c["id"]] = c
        if (speaker_change_handoffs and last_agent is not None and agent != last_agent
                and pending_transfer != agent):
            b.handoff(last_agent, agent)
        pending_transfer = None
        b.turn(agent, text, calls)
        for c in calls:
            tgt = transfer_target(c["name"])
            if tgt:
                to = resolve_agent(tgt, names)
                args = c.get("arguments")
                b.handoff(agent, to, args if isinstance(args, dict) else {})
                pending_transfer = to
        last_agent = agent
    if speaker_change_handoffs:
        b.metadata["handoffs_from_speaker_changes"] = True
    return b.build()


def import_chat(data: Any, *, name: str = "chat", speaker_change_handoffs: bool = False,
                user_name: str = "user", **options: Any) -> ImportResult:
    """Chat log(s) → (traces, issues); see the module docstring for the options."""
    check_options(options, FORMAT, ("speaker_change_handoffs", "user_name"))
    if not isinstance(speaker_change_handoffs, bool):
        from maev_kit.errors import InputError

        raise InputError("`speaker_change_handoffs` must be True or False")
    r = Reader(FORMAT)
    issues: list[ImportIssue] = []

    def msgs_of(obj: Any, where: str) -> tuple[list[Any], str]:
        if isinstance(obj, dict):
            for key in ("messages", "chat_history"):
                if key in obj:
                    return r.arr(obj[key], f"{where}.{key}" if where else key), \
                        f"{where}.{key}" if where else key
            raise r.fail(where, "expected a message list, or an object with 'messages' or "
                                "'chat_history'")
        return r.arr(obj, where), where

    if isinstance(data, list) and data and isinstance(data[0], dict) and (
            "messages" in data[0] or "chat_history" in data[0]):
        traces = []
        for i, conv in enumerate(data):
            msgs, w = msgs_of(conv, f"[{i}]")
            cid = str(conv.get("conversation_id") or conv.get("id") or f"{name}-{i}")
            traces.append(_conversation(msgs, w, cid, r, speaker_change_handoffs,
                                        user_name, issues))
        return ImportResult(traces, issues)
    msgs, w = msgs_of(data, "")
    if not msgs:
        raise r.fail(w, "the chat log is empty")
    cid = str(data.get("conversation_id") or name) if isinstance(data, dict) else name
    t = _conversation(msgs, w, cid, r, speaker_change_handoffs, user_name, issues)
    if not speaker_change_handoffs and not t.handoffs and len(t.agents_involved()) > 1:
        issues.append(ImportIssue(FORMAT, "", "several agents speak but the log names no "
                                  "handoff; pass speaker_change_handoffs=True to record each "
                                  "change of speaker as one", t.conversation_id))
    return ImportResult([t], issues)
