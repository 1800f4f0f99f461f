"""The LLM fact proposer: one extraction request per handoff, through the judging runner.

The prompt (``prompts/extract_<id>.txt``, sections ``=== system ===`` and ``=== user ===``)
shows the messages before one handoff — the user's and the agents', each with its
``turn_index`` — fenced as untrusted data exactly as the retention prompts fence theirs, and
asks for ``{"facts": [{"text", "value", "kind", "turn_index"}]}``. The reply is read strictly
and never raises: a reply that cannot be read is one error for the handoff (cause
``unparseable``); a ``value`` that does not occur in the cited message is looked for in the
other messages shown (and re-cited), else the fact is dropped — a proposed value is always the
exact text of a message, never the model's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any, cast

from maev_kit.facts._model import FACT_KINDS, ProposedFact, _fact_id, _normalise
from maev_kit.judges.internal import SECTION, json_candidate, substitute
from maev_kit.judges import escape_fence
from maev_kit.traces import Message, MultiAgentTrace

__all__ = ["EXTRACT_PROMPT_IDS", "FactRequestError", "HandoffText", "LLMFactProposer",
           "answer_extraction_prompt", "extract_prompt_handoff", "handoff_texts",
           "render_handoff"]

#: Extraction prompt variants shipped with the kit.
EXTRACT_PROMPT_IDS: tuple[str, ...] = ("v1",)

# Bump when the way handoffs are rendered into the prompt, or replies are read, changes: it is
# part of the version, hence of the cache key.
_RENDER_REVISION = "2"  # 2: the conversation view (tool calls and results, marked by kind)
#: Kinds a model may give; anything else becomes "other" ("context" is the context proposer's).
_LLM_KINDS = frozenset(FACT_KINDS) - {"context"}
# What one prompt shows: the last messages before the handoff, each cut to a length.
_MAX_MESSAGES = 60
_MAX_MESSAGE_CHARS = 4000
_MESSAGES_BLOCK = re.compile(r"^<<<MESSAGES\n(.*?)^MESSAGES>>>$", re.M | re.S)


@dataclass(frozen=True)
class HandoffText:
    """One handoff and the messages before it: what one extraction request shows."""

    conversation_id: str
    handoff_index: int
    from_agent: str
    to_agent: str
    turn_index: int
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class FactRequestError:
    """A handoff whose extraction request failed or whose reply could not be read."""

    conversation_id: str
    handoff_index: int
    error: str
    cause: str
    raw: str | None = None


def handoff_texts(trace: MultiAgentTrace) -> list[HandoffText]:
    """Each handoff of ``trace`` (in turn order) with the conversation view up to it: user and
    agent text, the tool calls agents made and what the tools returned (an agent may learn a
    value there); not the handoffs (what they pass is the ``context`` proposer's).

    Empty entries are left out; at most the last 60 entries are shown, each cut at 4,000
    characters (tool results are already cut shorter by the view).

    >>> from maev_kit import AgentTurn, Handoff
    >>> t = MultiAgentTrace("c1", user_messages=["Order ORD-88 is late."],
    ...     turns=[AgentTurn("triage", "router", "", [{"name": "find_order",
    ...            "arguments": {"order": "ORD-88"}, "output": {"eta": "May 3"}}], turn_index=1)],
    ...     handoffs=[Handoff("triage", "shipping", None, turn_index=2)])
    >>> [(m.speaker, m.kind, m.turn_index) for m in handoff_texts(t)[0].messages]
    [('user', 'user', 0), ('triage', 'tool_call', 1), ('triage', 'tool_result', 1)]
    """
    # handoffs themselves are left out: the context they pass is the context proposer's
    said = [m for m in trace.messages() if m.content.strip() and m.kind != "handoff"]
    out = []
    for hi in sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index):
        h = trace.handoffs[hi]
        before = [m for m in said if m.turn_index <= h.turn_index][-_MAX_MESSAGES:]
        shown = tuple(m if len(m.content) <= _MAX_MESSAGE_CHARS else
                      replace(m, content=m.content[:_MAX_MESSAGE_CHARS]) for m in before)
        out.append(HandoffText(trace.conversation_id, hi, h.from_agent, h.to_agent,
                               h.turn_index, shown))
    return out


def _line(obj: dict[str, Any]) -> str:
    return escape_fence(json.dumps(obj, ensure_ascii=False))


def render_handoff(h: HandoffText) -> str:
    """The handoff, then one JSON line per message before it (the fenced block's content)."""
    lines = [_line({"handoff": {"from": h.from_agent, "to": h.to_agent,
                                "turn_index": h.turn_index}})]
    lines += [_line({"turn_index": m.turn_index, "speaker": m.speaker,
                     "role": "user" if m.is_user else "agent", "kind": m.kind,
                     "text": m.content})
              for m in h.messages]
    return "\n".join(lines)


@dataclass(frozen=True)
class _Template:
    prompt_id: str
    system: str
    user: str
    version: str


@lru_cache(maxsize=None)
def _load(prompt_id: str) -> _Template:
    if prompt_id not in EXTRACT_PROMPT_IDS:
        raise ValueError(f"`prompt` must be one of {EXTRACT_PROMPT_IDS}, got {prompt_id!r}")
    text = (resources.files("maev_kit.facts") / "prompts" / f"extract_{prompt_id}.txt"
            ).read_text(encoding="utf-8")
    parts = SECTION.split(text)
    if len(parts) != 5 or parts[1] != "system" or parts[3] != "user":
        raise RuntimeError(f"prompt template extract_{prompt_id}.txt must have a "
                           "'=== system ===' then a '=== user ===' section")
    system, user = parts[2].strip("\n"), parts[4].strip("\n")
    sha = hashlib.sha256(f"{_RENDER_REVISION}\0{system}\0{user}".encode()).hexdigest()
    return _Template(prompt_id, system, user, f"{prompt_id}-{sha[:10]}")


class LLMFactProposer:
    """Ask an LLM for the key facts of each handoff: a request task for
    :func:`maev_kit.runner.run_requests` (a group is one :class:`HandoffText`).

    Parameters
    ----------
    prompt : {"v1"}
        The extraction prompt.
    model : str, optional
        The model's name, for the ``proposer`` of each fact (``"llm:<model>"``).

    Attributes
    ----------
    name : str
        ``"facts-v1"``: with ``version`` (the prompt id and a hash of its text) part of the
        cache key.

    Examples
    --------
    >>> h = HandoffText("c1", 0, "triage", "billing", 2,
    ...                 (Message("user", "My account is ACCT-4471.", 0, True),))
    >>> p = LLMFactProposer(model="gpt-4o-mini")
    >>> p.name, p.version.startswith("v1-")
    ('facts-v1', True)
    >>> '"text": "My account is ACCT-4471."' in p.build_messages([h])[1]["content"]
    True
    >>> reply = ('{"facts": [{"text": "Account is ACCT-4471", "value": "acct-4471", '
    ...          '"kind": "identifier", "turn_index": 0}]}')
    >>> [(f.value, f.kind, f.source_turn_index, f.proposer) for f in p.parse(reply, [h])]
    [('ACCT-4471', 'identifier', 0, 'llm:gpt-4o-mini')]
    >>> p.parse("Sorry, I cannot help.", [h])[0].cause
    'unparseable'
    """

    unit = "handoff"

    def __init__(self, prompt: str = "v1", *, model: str | None = None) -> None:
        self._template = _load(prompt)
        self.prompt = prompt
        self.name = f"facts-{prompt}"
        self.version = self._template.version
        self.proposer = f"llm:{model}" if model else "llm"

    def __repr__(self) -> str:
        return f"LLMFactProposer(prompt={self.prompt!r})  # version {self.version}"

    def build_messages(self, group: Sequence[HandoffText]) -> list[dict[str, str]]:
        """The chat request for one handoff (``group`` holds exactly one :class:`HandoffText`)."""
        h = _only(group)
        example_turn = next((m.turn_index for m in h.messages if m.is_user),
                            h.messages[0].turn_index if h.messages else 0)
        values = {"messages": render_handoff(h), "kinds": ", ".join(sorted(_LLM_KINDS)),
                  "example_turn": str(example_turn)}
        return [{"role": "system", "content": substitute(self._template.system, values)},
                {"role": "user", "content": substitute(self._template.user, values)}]

    def parse(self, text: Any,
              group: Sequence[HandoffText]) -> list[ProposedFact | FactRequestError]:
        """The facts in a reply for ``group``'s handoff; never raises.

        An empty list when the model found none; one :class:`FactRequestError` (cause
        ``unparseable``, the raw reply kept) when the reply holds no ``{"facts": [...]}``
        object, or none of its entries has a text.
        """
        try:
            h = _only(group)
        except ValueError as exc:
            return [FactRequestError("", -1, str(exc), "other")]
        try:
            facts, error = _read(text, h, self.proposer)
        except Exception as exc:  # noqa: BLE001 - parse must never raise
            facts, error = [], f"could not read the reply ({type(exc).__name__}: {exc})"
        if error is not None:
            raw = text if isinstance(text, str) else repr(text)
            return [FactRequestError(h.conversation_id, h.handoff_index, error, "unparseable",
                                     raw)]
        return cast("list[ProposedFact | FactRequestError]", facts)  # list is invariant

    def error_result(self, member: HandoffText, error: str, cause: str) -> FactRequestError:
        return FactRequestError(member.conversation_id, member.handoff_index, error, cause)

    def is_ok(self, result: Any) -> bool:
        return isinstance(result, ProposedFact)


def _only(group: Sequence[HandoffText]) -> HandoffText:
    group = list(group)
    if len(group) != 1 or not isinstance(group[0], HandoffText):
        raise ValueError("a fact extraction request covers exactly one HandoffText; got "
                         f"{len(group)} member(s)")
    return group[0]


# ---- reading the reply --------------------------------------------------------------------

def _read(reply: Any, h: HandoffText, proposer: str
          ) -> tuple[list[ProposedFact], str | None]:
    if not isinstance(reply, str):
        return [], f"the reply is {type(reply).__name__}, not text"
    obj, err = json_candidate(reply)
    if err is not None:
        return [], err
    if not isinstance(obj, dict) or not isinstance(obj.get("facts"), list):
        what = (f"a JSON {type(obj).__name__}" if not isinstance(obj, dict)
                else "an object without a `facts` list")
        return [], f"the reply is {what}; expected {{\"facts\": [...]}}"
    entries = obj["facts"]
    out: list[ProposedFact] = []
    seen: set[str] = set()
    readable = 0
    for entry in entries:
        fact = _fact(entry, h, proposer)
        if fact is None:
            continue
        readable += 1
        if fact is _DROPPED:
            continue
        key = "v:" + _normalise(fact.value) if fact.value else "t:" + _normalise(fact.text)
        if key not in seen:
            seen.add(key)
            out.append(fact)
    if entries and not readable:
        return [], (f"none of the {len(entries)} entries of `facts` is an object with a "
                    "non-empty `text`")
    return out, None


_DROPPED: Any = object()  # a readable fact whose value is in no message: not proposed


def _fact(entry: Any, h: HandoffText, proposer: str) -> ProposedFact | None:
    """The fact an entry proposes; None when unreadable, ``_DROPPED`` when its value is in
    none of the messages shown."""
    if not isinstance(entry, dict):
        return None
    text = entry.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    text = " ".join(text.split())
    kind = entry.get("kind")
    kind = kind.strip().lower() if isinstance(kind, str) else ""
    kind = kind if kind in _LLM_KINDS else "other"
    turn = _turn(entry.get("turn_index"))
    value = entry.get("value")
    if isinstance(value, bool) or value is None:
        value = None
    elif isinstance(value, (int, float)):
        value = str(value)
    elif not isinstance(value, str):
        value = None
    if value is not None and value.strip():
        found = _locate(value.strip(), turn, h.messages)
        if found is None:
            return _DROPPED
        value, turn = found
    else:
        value = None
        if turn is not None and all(m.turn_index != turn for m in h.messages):
            turn = None
    return ProposedFact(h.conversation_id, h.handoff_index,
                        _fact_id(h.handoff_index, _normalise(text)), text, value, kind, turn,
                        proposer)


def _turn(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def _locate(value: str, turn: int | None, messages: Sequence[Message]
            ) -> tuple[str, int] | None:
    """``(the exact span, its turn)`` for ``value`` in the messages, the cited turn first: as
    given, else ignoring case and runs of white space (the span is the message's own text)."""
    ordered = ([m for m in messages if m.turn_index == turn]
               + [m for m in messages if m.turn_index != turn])
    candidates = [value]
    unescaped = value.replace("\u2039\u2039\u2039", "<<<").replace("\u203a\u203a\u203a", ">>>")
    if unescaped != value:  # the model copied the fenced (escaped) form
        candidates.append(unescaped)
    for v in candidates:
        for m in ordered:
            if v in m.content:
                return v, m.turn_index
    for v in candidates:
        pattern = re.compile(r"\s+".join(re.escape(part) for part in v.split()), re.I)
        for m in ordered:
            match = pattern.search(m.content)
            if match:
                return match.group(0), m.turn_index
    return None


# ---- a stand-in model ---------------------------------------------------------------------

def extract_prompt_handoff(messages: Sequence[dict[str, Any]]) -> tuple[dict[str, Any],
                                                                         list[dict[str, Any]]]:
    """The handoff line and the message lines of a built extraction prompt.

    Raises
    ------
    ValueError
        When no user message holds a ``<<<MESSAGES`` block.
    """
    for msg in reversed(list(messages)):
        if not isinstance(msg, dict) or msg.get("role") != "user":
            continue
        content = msg.get("content")
        if not isinstance(content, str):
            continue
        block = _MESSAGES_BLOCK.search(content)
        if block is None:
            continue
        handoff: dict[str, Any] = {}
        said = []
        for line in block.group(1).splitlines():
            if line.strip():
                obj = json.loads(line)
                if "handoff" in obj:
                    handoff = obj["handoff"]
                else:
                    said.append(obj)
        return handoff, said
    raise ValueError("`messages` holds no extraction prompt: expected a user message with a "
                     "<<<MESSAGES ... MESSAGES>>> block, as built by LLMFactProposer")


def answer_extraction_prompt(messages: Sequence[dict[str, Any]]) -> str:
    """Reply to a prompt built by :meth:`LLMFactProposer.build_messages` as a model would, with
    the offline extractor over the user's messages (a deterministic stand-in for tests,
    benchmarks and demos).

    >>> h = HandoffText("c1", 0, "triage", "billing", 2,
    ...                 (Message("user", "Refund order ORD-5512 please.", 0, True),))
    >>> json.loads(answer_extraction_prompt(LLMFactProposer().build_messages([h])))["facts"][0]
    {'text': 'Order number is ORD-5512', 'value': 'ORD-5512', 'kind': 'identifier', 'turn_index': 0}
    """
    from maev_kit.facts._offline import extract

    _, said = extract_prompt_handoff(messages)
    facts = []
    for m in said:
        if m.get("role") != "user":
            continue
        for span in extract(str(m.get("text", ""))):
            facts.append({"text": span.text, "value": span.value, "kind": span.kind,
                          "turn_index": m.get("turn_index")})
    return json.dumps({"facts": facts}, ensure_ascii=False)
