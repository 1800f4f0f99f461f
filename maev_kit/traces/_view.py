"""The conversation view: what a judge, an annotator, the fact proposer and the report read.

One list of :class:`Message` per trace, in conversation order, each marked by kind:

========== ================================================================ ===============
kind       what it is                                                       ``speaker``
========== ================================================================ ===============
user       what the user said (``user_messages``, or a turn whose agent id  ``"user"``
           or role is ``user``, ``customer``, ``human``…)
text       what an agent said (``AgentTurn.message``)                       the agent
tool_call  a tool an agent called: ``name(key="value", …)``                 the agent
tool_result what that tool returned (the call's ``output``, or a turn whose the calling agent
           role is ``tool``)
handoff    a handoff and the context it passed: ``→ billing (key="v")``     the handing-off agent
========== ================================================================ ===============

Within one turn the text comes first, then each tool call followed by its result, in the order
of ``tool_calls``; ``part`` numbers these entries (0, 1, …) so ``(turn_index, part)`` names one
entry of the view. ``fields`` says which span of ``content`` holds which value: ``text``,
``arguments.<key>``, ``output`` or ``context.<key>`` — so a verdict's evidence can point at
the exact tool argument that carried a fact.

Budget (what keeps one verdict's prompt bounded): a tool result longer than
:data:`MAX_TOOL_OUTPUT_CHARS` and an argument or context value longer than
:data:`MAX_VALUE_CHARS` are cut, and the cut says so in the text (``… [cut 1,234 characters]``).
Agent and user text is never cut.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "MAX_TOOL_OUTPUT_CHARS",
    "MAX_VALUE_CHARS",
    "MESSAGE_KINDS",
    "TOOL_ROLES",
    "USER_ROLES",
    "Message",
    "MessageKind",
    "conversation_view",
]

MessageKind = Literal["user", "text", "tool_call", "tool_result", "handoff"]
#: The kinds of entry in the conversation view, in the order documented above.
MESSAGE_KINDS: tuple[str, ...] = ("user", "text", "tool_call", "tool_result", "handoff")

#: Agent ids or roles that mark a turn as the user's (exports and simulators often record the
#: user as one more participant).
USER_ROLES = frozenset({"user", "customer", "human", "client", "end_user", "end-user",
                        "enduser", "caller", "requester"})
#: Agent ids or roles that mark a turn as a tool's output rather than an agent speaking.
TOOL_ROLES = frozenset({"tool", "function", "tool_result", "function_call", "tool_call"})

#: A tool result longer than this many characters is cut (with a visible marker).
MAX_TOOL_OUTPUT_CHARS = 1200
#: A tool argument or handoff context value longer than this many characters is cut.
MAX_VALUE_CHARS = 300


@dataclass(frozen=True)
class Message:
    """One entry of a conversation's view, as shown to judges and annotators.

    ``speaker`` is ``"user"`` for the user, else the agent id (for a tool call or result: the
    agent that called the tool). ``kind`` is one of :data:`MESSAGE_KINDS`; ``tool`` names the
    tool of a ``tool_call`` / ``tool_result`` (the target agent of a ``handoff``); ``part``
    numbers the entries one turn gives; ``fields`` maps a value's name (``text``,
    ``arguments.<key>``, ``output``, ``context.<key>``) to its ``(start, end)`` in ``content``.

    >>> m = Message("billing", 'pay(ref="BK-1")', 3, kind="tool_call", tool="pay",
    ...             fields=(("arguments.ref", 9, 13),))
    >>> m.content[9:13], m.field_at(9, 13), Message("user", "Hi", 0, True).kind
    ('BK-1', 'arguments.ref', 'user')
    """

    speaker: str
    content: str
    turn_index: int
    is_user: bool = False
    kind: MessageKind = "text"
    tool: str | None = None
    part: int = 0
    fields: tuple[tuple[str, int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.is_user and self.kind == "text":
            object.__setattr__(self, "kind", "user")
        elif self.kind == "user" and not self.is_user:
            object.__setattr__(self, "is_user", True)

    def field_at(self, start: int, end: int) -> str:
        """The name of the value that holds ``content[start:end]`` (``"text"`` for a plain
        message, ``""`` when the span falls in no named value, e.g. a tool's name)."""
        for name, a, b in self.fields:
            if a <= start and end <= b:
                return name
        return "text" if self.kind in ("user", "text") else ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"speaker": self.speaker, "content": self.content,
                             "turn_index": self.turn_index, "is_user": self.is_user}
        if self.kind not in ("user", "text"):  # text-only dicts stay as they were
            d.update(kind=self.kind, tool=self.tool, part=self.part,
                     fields=[list(f) for f in self.fields])
        elif self.part:
            d["part"] = self.part
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Message:
        """Inverse of :meth:`to_dict` (also reads the text-only dicts of older versions).

        >>> m = Message("billing", 'pay(ref="BK-1")', 3, kind="tool_call", tool="pay",
        ...             part=1, fields=(("arguments.ref", 9, 13),))
        >>> Message.from_dict(m.to_dict()) == m
        True
        """
        is_user = bool(d.get("is_user", False))
        return cls(str(d.get("speaker", "")), str(d.get("content", d.get("text", "")) or ""),
                   int(d.get("turn_index", 0)), is_user,
                   d.get("kind") or ("user" if is_user else "text"),  # type: ignore[arg-type]
                   d.get("tool"), int(d.get("part", 0) or 0),
                   tuple((str(n), int(a), int(b)) for n, a, b in d.get("fields") or ()))


def cut(text: str, limit: int) -> str:
    """``text``, or its first ``limit`` characters and a marker saying how much was cut.

    >>> cut("abcdef", 4)
    'abcd… [cut 2 characters]'
    >>> cut("abc", 4)
    'abc'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut {len(text) - limit:,} characters]"


def _value_text(value: Any) -> str:
    """A value as it reads in the view: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    except (TypeError, ValueError):
        return str(value)


def _keyed(head: str, values: Mapping[str, Any] | Any, prefix: str
           ) -> tuple[str, tuple[tuple[str, int, int], ...]]:
    """``head(k="v", …)`` with the span of each value, cut to the budget."""
    parts = [head, "("]
    fields: list[tuple[str, int, int]] = []
    pos = len(head) + 1
    if isinstance(values, Mapping):
        for n, (k, v) in enumerate(values.items()):
            sep = ", " if n else ""
            text = cut(_value_text(v), MAX_VALUE_CHARS)
            piece = f'{sep}{k}="'
            start = pos + len(piece)
            parts += [piece, text, '"']
            fields.append((f"{prefix}.{k}", start, start + len(text)))
            pos = start + len(text) + 1
    elif values not in (None, "", [], {}):
        text = cut(_value_text(values), MAX_VALUE_CHARS)
        parts.append(text)
        fields.append((prefix, pos, pos + len(text)))
    parts.append(")")
    return "".join(parts), tuple(fields)


def tool_call_message(agent: str, call: Mapping[str, Any], turn_index: int, part: int
                      ) -> Message:
    """The view of one tool call: ``name(key="value", …)``.

    >>> m = tool_call_message("billing", {"name": "pay", "arguments": {"ref": "BK-1"}}, 3, 1)
    >>> m.content, m.field_at(*m.fields[0][1:]), m.content[slice(*m.fields[0][1:])]
    ('pay(ref="BK-1")', 'arguments.ref', 'BK-1')
    """
    name = str(call.get("name") or "tool")
    content, fields = _keyed(name, call.get("arguments"), "arguments")
    return Message(agent, content, turn_index, False, "tool_call", name, part, fields)


def tool_result_message(agent: str, tool: str | None, output: Any, turn_index: int,
                        part: int) -> Message:
    """The view of one tool result (its whole text is the ``output`` field).

    >>> tool_result_message("billing", "pay", {"status": "ok"}, 3, 2).content
    '{"status": "ok"}'
    """
    text = cut(_value_text(output), MAX_TOOL_OUTPUT_CHARS)
    return Message(agent, text, turn_index, False, "tool_result", tool, part,
                   (("output", 0, len(text)),))


def handoff_message(from_agent: str, to_agent: str, context: Mapping[str, Any],
                    turn_index: int) -> Message:
    """The view of a handoff: ``→ billing(key="value", …)``, the context it passed.

    >>> handoff_message("triage", "billing", {"account": "A-1"}, 2).content
    '→ billing(account="A-1")'
    """
    content, fields = _keyed(f"→ {to_agent}", context, "context")
    return Message(from_agent, content, turn_index, False, "handoff", to_agent, 0, fields)


def _role_of(agent_id: str, agent_role: str) -> str:
    """``user``, ``tool`` or ``agent`` for a turn's id and role."""
    ids = {agent_role.strip().casefold(), agent_id.strip().casefold()}
    if ids & USER_ROLES:
        return "user"
    if ids & TOOL_ROLES:
        return "tool"
    return "agent"


def conversation_view(trace: Any, *, tools: bool = True) -> list[Message]:
    """The conversation as judges and annotators see it (the module docstring says how).

    ``tools=False`` gives the text-only view of maev-kit's first versions (user and agent
    text, no tool calls, results or handoffs; a tool or user turn read as an agent's text), which
    the prompts ``v1`` and ``v2`` render so judge cards made with them reproduce their numbers.

    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["Booking BK-7"],
    ...     turns=[AgentTurn("triage", "router", "Passing you on", turn_index=1),
    ...            AgentTurn("billing", "specialist", "", [{"name": "pay",
    ...                      "arguments": {"ref": "BK-7"}, "output": "paid"}], turn_index=3)],
    ...     handoffs=[Handoff("triage", "billing", None, {"ref": "BK-7"}, turn_index=2)])
    >>> [(m.kind, m.speaker, m.content) for m in conversation_view(t)]  # doctest: +NORMALIZE_WHITESPACE
    [('user', 'user', 'Booking BK-7'), ('text', 'triage', 'Passing you on'),
     ('handoff', 'triage', '→ billing(ref="BK-7")'), ('tool_call', 'billing', 'pay(ref="BK-7")'),
     ('tool_result', 'billing', 'paid')]
    """
    out: list[Message] = []  # the model's classes are told apart by their fields (no import:
    # the model imports this module)
    last_agent = ""
    for e in trace.timeline():
        if hasattr(e, "content"):  # a UserMessage
            out.append(Message("user", e.content, e.turn_index, True))
            continue
        if hasattr(e, "from_agent"):  # a Handoff
            if tools:
                out.append(handoff_message(e.from_agent, e.to_agent, e.context_passed,
                                           e.turn_index))
            continue
        if not tools:
            out.append(Message(e.agent_id, e.message, e.turn_index, False))
            continue
        role = _role_of(e.agent_id, e.agent_role)
        if role == "user":
            out.append(Message("user", e.message, e.turn_index, True))
            continue
        if role == "tool":  # a tool's output recorded as a turn: the calling agent's result
            owner = last_agent or e.agent_id
            out.append(tool_result_message(owner, None, e.message, e.turn_index, 0))
            continue
        last_agent = e.agent_id
        part = 0
        if e.message.strip() or not e.tool_calls:
            out.append(Message(e.agent_id, e.message, e.turn_index, False))
            part = 1
        for call in e.tool_calls:
            if not isinstance(call, Mapping):
                continue
            out.append(tool_call_message(e.agent_id, call, e.turn_index, part))
            part += 1
            if call.get("output") is not None:
                out.append(tool_result_message(e.agent_id, str(call.get("name") or "tool"),
                                               call["output"], e.turn_index, part))
                part += 1
    return out
