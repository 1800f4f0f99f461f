"""Proposing key facts for each handoff of a conversation: from the handoff's context, from
offline rules over what was said before it, or (later) from an LLM."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.facts._model import ProposedFact, _fact_id, _normalise
from maev_kit.facts._offline import AGENT_KINDS, AGENT_TOOL_KINDS, extract
from maev_kit.internal import paused_gc

if TYPE_CHECKING:
    from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace

__all__ = ["METHODS", "FactNote", "FactProposal", "merge_facts", "propose_facts"]

#: The proposer names :func:`propose_facts` accepts.
METHODS: tuple[str, ...] = ("offline", "context", "llm")

#: Agent ids or roles that mark a turn as the user's (exports and simulators often record the
#: user as one more participant).
USER_ROLES = frozenset({"user", "customer", "human", "client", "end_user", "end-user",
                        "enduser", "caller", "requester"})
_TOOL_ROLES = frozenset({"tool", "function", "tool_result", "function_call", "tool_call"})


@dataclass(frozen=True)
class FactNote:
    """Why a conversation (``handoff_index`` None) or one handoff got no proposed fact;
    ``cause`` (one of :data:`maev_kit.errors.ERROR_CAUSES`) when its llm request failed."""

    conversation_id: str
    handoff_index: int | None
    message: str
    cause: str | None = None

    def __str__(self) -> str:
        where = (self.conversation_id if self.handoff_index is None
                 else f"{self.conversation_id}/h{self.handoff_index}")
        return f"{where}: {self.message}"


class FactProposal(list):  # list[ProposedFact]
    """The proposed facts (a plain list of :class:`ProposedFact`) plus ``notes``: one
    :class:`FactNote` per conversation or handoff that got none, saying why (an llm request
    that failed included), and ``stats``: the llm proposer's run accounting (requests,
    cache hits, errors by cause, tokens, cost, latency, wall time; see
    :class:`maev_kit.runner.RequestRun`), None when no llm ran.

    >>> p = FactProposal([], [FactNote("c1", None, "no handoff: nothing to propose facts for")])
    >>> list(p), [str(n) for n in p.notes]
    ([], ['c1: no handoff: nothing to propose facts for'])
    """

    def __init__(self, facts: Iterable[ProposedFact] = (),
                 notes: Iterable[FactNote] = (), stats: dict[str, Any] | None = None) -> None:
        super().__init__(facts)
        self.notes: list[FactNote] = list(notes)
        self.stats: dict[str, Any] | None = stats


def is_user_turn(turn: AgentTurn) -> bool:
    """True when an agent turn is the user speaking (role or id ``user``, ``customer``…)."""
    return (turn.agent_role.strip().casefold() in USER_ROLES
            or turn.agent_id.strip().casefold() in USER_ROLES)


def _is_tool_turn(turn: AgentTurn) -> bool:
    return (turn.agent_role.strip().casefold() in _TOOL_ROLES
            or turn.agent_id.strip().casefold() in _TOOL_ROLES)


def _handoff_order(trace: MultiAgentTrace) -> list[int]:
    return sorted(range(len(trace.handoffs)), key=lambda i: trace.handoffs[i].turn_index)


# ---- context ------------------------------------------------------------------------------

def _propose_context(trace: MultiAgentTrace, notes: list[FactNote]) -> list[ProposedFact]:
    """One fact per value a handoff passes (``account_number is ACCT-4471``, nested keys dotted,
    as scoring derives them); from a free-text value (a reason, a task) the values the offline
    rules find in it (``ctx:reason:<value>``), never the whole sentence."""
    from maev_kit.retention import context_values, is_free_text

    out = []
    for hi in _handoff_order(trace):
        h = trace.handoffs[hi]
        for key, value in context_values(h.context_passed):
            if not is_free_text(value):
                out.append(ProposedFact(trace.conversation_id, hi, f"ctx:{key}",
                                        f"{key} is {value}", str(value), "context",
                                        h.turn_index, "context"))
                continue
            seen: set[str] = set()
            for span in extract(str(value)):
                norm = _normalise(span.value)
                if norm in seen:
                    continue
                seen.add(norm)
                out.append(ProposedFact(trace.conversation_id, hi, f"ctx:{key}:{norm}",
                                        span.text, span.value, "context", h.turn_index,
                                        "context"))
    if trace.handoffs and not out:
        notes.append(FactNote(trace.conversation_id, None,
                              "no handoff passes a context value: no context fact"))
    return out


# ---- offline ----------------------------------------------------------------------------

#: What was said before the handoffs, in conversation order: ``(turn_index, speaker, text,
#: spans, source turn)``; speaker None for the user, an agent id for an agent's words,
#: ``_RELIED`` for a tool-output value an agent relied on (spans given, placed at the turn it
#: was relied on, sourced at the tool's turn).
_Said = tuple[int, Any, str, list[Any] | None, int]


@dataclass(frozen=True)
class _Timeline:
    """A conversation read for the offline proposer: what was ``said``, the tool ``outputs``
    (``(turn, agent, call index, output)``), each agent's ``uses`` of values (``(turn, call
    index, text)``: its words and tool-call arguments) and whether the agents' turns hold
    only tool traffic (``tool_only``)."""

    said: list[_Said]
    outputs: list[tuple[int, str, int, Any]]
    uses: dict[str, list[tuple[int, int, str]]]
    tool_only: bool
    args: list[tuple[int, int, Any]]  # every agent's tool-call arguments: (turn, call, args)
    lookups: frozenset[tuple[int, int]] = frozenset()  # (turn, call) of read-only lookups


#: Tools whose arguments are the agent's notes to itself, not a use of a value (tau-bench's
#: and Anthropic's ``think``).
_SCRATCH_TOOL = re.compile(r"^(?:think|thought|reflect|scratchpad)$", re.I)
#: Read-only lookups (``get_reservation_details``, ``search_direct_flight``): getting a value
#: that a result list offered is exploring, not choosing it.
_LOOKUP_TOOL = re.compile(r"^(?:get|search|find|list|lookup|look_up|fetch|read|query|retrieve"
                          r"|show|view|describe|check)(?:_|$)", re.I)


def _read_timeline(trace: MultiAgentTrace) -> _Timeline:
    """Walk the trace's timeline once: the user's words, the agents' words, tool outputs (a
    tool call's output, a tool result recorded as a turn or as an agent's JSON message) and
    the values each agent used."""
    from maev_kit.traces import AgentTurn, UserMessage

    said: list[_Said] = []
    tool_only = bool(trace.turns)
    outputs: list[tuple[int, str, int, Any]] = []
    uses: dict[str, list[tuple[int, int, str]]] = {}
    args: list[tuple[int, int, Any]] = []
    lookups: set[tuple[int, int]] = set()
    last_agent: str | None = None
    for e in trace.timeline():
        if isinstance(e, UserMessage):
            said.append((e.turn_index, None, e.content, None, e.turn_index))
        elif isinstance(e, AgentTurn):
            if is_user_turn(e):
                said.append((e.turn_index, None, e.message, None, e.turn_index))
                continue
            if _is_tool_turn(e):  # a tool result recorded as a turn: the last agent's
                if last_agent is not None and e.message.strip():
                    outputs.append((e.turn_index, last_agent, -1, e.message))
                continue
            last_agent = e.agent_id
            for ci, call in enumerate(e.tool_calls or ()):
                if not isinstance(call, dict):
                    continue
                name = str(call.get("name") or "")
                if call.get("output") is not None:
                    outputs.append((e.turn_index, e.agent_id, ci, call["output"]))
                if _LOOKUP_TOOL.match(name):
                    lookups.add((e.turn_index, ci))
                if call.get("arguments") and not _SCRATCH_TOOL.match(name):
                    uses.setdefault(e.agent_id, []).append(
                        (e.turn_index, ci, _as_text(call["arguments"])))
                    args.append((e.turn_index, ci, call["arguments"]))
            if e.message.strip():
                tool_only = False
                if not e.message.lstrip().startswith(("{", "[")):  # a tool result, not words
                    said.append((e.turn_index, e.agent_id, e.message, None, e.turn_index))
                    uses.setdefault(e.agent_id, []).append(
                        (e.turn_index, len(e.tool_calls or ()), e.message))
                else:
                    outputs.append((e.turn_index, e.agent_id, -1, e.message))
    return _Timeline(said, outputs, uses, tool_only, args, frozenset(lookups))


def _voices(trace: MultiAgentTrace, h: Handoff) -> set[str]:
    """Whose words count for handoff ``h``: the handing-off agent's own, and the results its
    delegates gave back before it (a delegation returns to the caller, as CrewAI's "Delegate
    work to coworker" does)."""
    return {h.from_agent} | {d.to_agent for d in trace.handoffs if d.mode == "delegate"
                             and d.from_agent == h.from_agent
                             and d.turn_index < h.turn_index}


def _propose_offline(trace: MultiAgentTrace, notes: list[FactNote], *,
                     carry_over: bool) -> list[ProposedFact]:
    """The offline rules over one trace: at each handoff, the values the user stated before
    it, those the handing-off agent (or its delegates) stated since it took over, and the
    tool-output values it relied on; a note for a trace or handoff that got none."""
    cid = trace.conversation_id
    timeline = _read_timeline(trace)
    said = timeline.said
    user_said = [s for s in said if s[1] is None and s[2].strip()]
    if not user_said:
        why = ("only tool turns, no user text" if timeline.tool_only and trace.turns
               else "no user text")
        notes.append(FactNote(cid, None, f"{why}: no offline fact proposed"))
        return []
    listed: list[tuple[int, str]] = []
    if timeline.outputs:
        said, listed = _with_relied_values(said, timeline)
    used = _Uses(timeline, user_said) if listed else None
    arg_slots = _arg_slots(timeline.args)

    cache: dict[int, list[Any]] = {}
    out: list[ProposedFact] = []
    seen_in_conversation: set[str] = set()
    previous = -1  # turn_index of the previous handoff
    for hi in _handoff_order(trace):
        h = trace.handoffs[hi]
        seen: set[str] = set()
        found = 0
        voices = _voices(trace, h)
        for pos, (turn, speaker, text, given, source) in enumerate(said):
            if turn > h.turn_index:
                break
            if (speaker is not None and speaker is not _RELIED
                    and (speaker not in voices or turn <= previous)):
                continue  # only the handing-off agent's own words since it took over
            if not carry_over and turn <= previous:
                continue
            spans = cache.get(pos)
            if spans is None:  # each message is read once, however many handoffs follow it
                got = given if given is not None else extract(
                    text, kinds=None if speaker is None else AGENT_KINDS | AGENT_TOOL_KINDS)
                if speaker is not None and given is None:
                    got = [g for g in got if not _policy_quote(text, g)]
                spans = cache[pos] = [(s, _normalise(s.value), _normalise(s.text))
                                      for s in got]
            for s, key, norm_text in spans:
                if key in seen or (not carry_over and key in seen_in_conversation):
                    continue
                if (speaker is not None and speaker is not _RELIED
                        and s.kind in AGENT_TOOL_KINDS
                        and not _passed_to_tool(s.value, timeline, h.turn_index)):
                    continue  # an agent's date or airport no tool got: not relied on
                if (used is not None and speaker is not None and speaker is not _RELIED
                        and _only_listed(s.value, turn, listed, used, h.turn_index)):
                    continue  # an agent reading out a result list: no use of the value
                if s.slot is None and key in arg_slots and s.kind != "quantity":
                    s = _named(s, arg_slots[key])  # a value a tool got under a named key
                    norm_text = _normalise(s.text)
                seen.add(key)
                found += 1
                out.append(ProposedFact(cid, hi, _fact_id(hi, norm_text), s.text, s.value,
                                        s.kind, source, "offline", slot=s.slot))
        seen_in_conversation |= seen
        if not found and (carry_over or not seen_in_conversation):
            # (without carry-over a handoff with nothing new still judges the earlier facts)
            n = sum(1 for t, sp, *_ in user_said if t <= h.turn_index)
            why = ("no user text before this handoff" if not n else
                   f"nothing fact-like in the {n} user message{'s' if n != 1 else ''} "
                   "before this handoff")
            notes.append(FactNote(cid, hi, why))
        previous = h.turn_index
    return out


# ---- offline: values from tool results ------------------------------------------------------

_RELIED = object()  # the speaker of a tool-output value an agent relied on
_TOOL_KINDS = frozenset({"identifier", "email", "phone", "money", "date", "time", "quantity"})
_AMOUNT_KEY = re.compile(r"(?:^|_)(?:amount|price|total|cost|fee|balance|charge|charged|refund"
                         r"|refunded|paid|due|subtotal)(?:_|$)")
_NAME_KEY = re.compile(r"(?:^|_)(?:name|full_name|first_name|last_name|customer|holder)$")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _leaves(value: Any, path: tuple[str, ...] = (), depth: int = 0, listed: bool = False
            ) -> Iterable[tuple[tuple[str, ...], str, bool]]:
    """(key path, text, listed) for each scalar of a tool output; JSON held in a string is
    read too. ``listed``: the scalar is one of a result list — the output is a list of several
    entries, or the scalar sits in a list of several scalars (``"reservations": ["A", "B"]``)
    or in one of several records keyed by id (``"payment_methods": {"card_1": {…}, …}``)."""
    if depth > 8:
        return
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and len(text) < 200_000:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, (dict, list)):
                yield from _leaves(parsed, path, depth + 1, listed)
                return
        if text:
            yield path, value, listed
    elif isinstance(value, dict):
        keyed = len(value) > 1 and all(isinstance(v, dict) for v in value.values()) and all(
            any(c.isdigit() for c in str(k)) for k in value)
        for k, v in value.items():
            yield from _leaves(v, (*path, str(k)), depth + 1, listed or keyed)
    elif isinstance(value, (list, tuple)):
        several = len(value) > 1 and (depth == 0 or not all(isinstance(v, dict) for v in value))
        for v in value:
            yield from _leaves(v, path, depth + 1, listed or several)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, str(value), listed


_GENERIC_KEYS = frozenset({"id", "date", "time", "price", "amount", "name", "number", "code",
                           "value", "type", "status", "total", "count", "key"})
_NAMING_KEY = re.compile(r"\b(?:id|number|code|reference|no)\b")
_KEY_ALIASES = {"dob": "date of birth", "pnr": "booking reference", "qty": "quantity",
                "dest": "destination", "tel": "phone number", "msisdn": "phone number"}
_TZ_WORDS = frozenset({"est", "utc", "gmt", "local", "pst", "cet", "iso", "scheduled"})


def _words(key: str) -> list[str]:
    key = re.sub(r"([a-z])([A-Z])", r"\1 \2", key)
    return re.sub(r"[_\-.]+", " ", key).casefold().split()


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def key_slot(path: Sequence[str]) -> str | None:
    """The slot a value under a key path fills: ``("reservation_id",)`` → ``"reservation id"``;
    a generic key takes the nearest named parent (``("flights", "date")`` → ``"flight date"``;
    keys holding a digit are ids, not names).

    >>> key_slot(("reservation_id",)), key_slot(("flights", "date"))
    ('reservation id', 'flight date')
    >>> key_slot(("payment_methods", "credit_card_7", "id")), key_slot(()) is None
    ('payment method id', True)
    """
    named = [k for k in path if k and not any(c.isdigit() for c in k)]
    if not named:
        return None
    words = [w for w in _words(named[-1]) if w not in _TZ_WORDS]
    if not words:
        return None
    if " ".join(words) in _KEY_ALIASES:
        return _KEY_ALIASES[" ".join(words)]
    if len(words) == 1 and words[0] in _GENERIC_KEYS and len(named) > 1:
        parent = [_singular(w) for w in _words(named[-2]) if w not in _TZ_WORDS]
        words = [*parent, *words]
    return " ".join(words)


def _tool_spans(output: Any) -> list[tuple[Any, bool]]:
    """The fact-like values of one tool output, each with whether it is one of a result list
    (see :func:`_leaves`): what the offline rules find in each scalar (read after its key, so
    ``{"booking_reference": "QXBPTF"}`` reads as "booking reference: QXBPTF"), and amounts
    under an amount key (``{"amount": "49.00"}``). Each value's slot is its key's."""
    from maev_kit.facts._offline import Span, _text

    spans = []
    for path, text, listed in _leaves(output):
        key = path[-1] if path else ""
        words = " ".join(_words(key))
        prefix = f"{words}: " if words else ""
        k = "_".join(words.split())
        slot = key_slot(path)
        if _AMOUNT_KEY.search(k) and _NUMBER.fullmatch(text.strip()):
            value = text.strip()
            spans.append((Span("money", _text("money", value, slot=slot), value, 0, slot),
                          listed))
            continue
        got = [s for s in extract(prefix + text) if s.start >= len(prefix)]
        if _NAME_KEY.search(k) and not got and 1 <= len(text.split()) <= 4 \
                and all(w[:1].isupper() for w in text.split()):
            value = text.strip()
            spans.append((Span("name", _text("name", value, slot=slot), value, 0, slot),
                          listed))
            continue
        for s in got:
            if s.kind in _TOOL_KINDS:
                if slot and s.kind != "quantity" and (s.kind != "identifier" or not s.slot or
                                                      _NAMING_KEY.search(slot)):
                    s = Span(s.kind, _text(s.kind, s.value, slot=slot), s.value, s.start, slot)
                spans.append((s, listed))
    return spans


def _relied_on(value: str, normalised_text: str) -> bool:
    key = _normalise(value)
    if len(key) < 2 or key not in normalised_text:
        return False
    pattern = re.compile(rf"(?<![\w@.+-]){re.escape(key)}(?![\w@+-]|\.\w)")
    return pattern.search(normalised_text) is not None


def _arg_slot(value: str, arguments: Any) -> str | None:
    """The slot of the argument ``value`` was passed under (``reservation_id`` → "reservation
    id"), or None."""
    key = _normalise(value)
    for path, text, _ in _leaves(arguments):
        if _normalise(text) == key:
            return key_slot(path)
    return None


class _Uses:
    """Where values were used, for the result-list rule: the user's words and every tool
    call's arguments, normalised once."""

    def __init__(self, timeline: _Timeline, user_said: list[_Said]) -> None:
        self.entries = sorted([(t, _normalise(text)) for t, _, text, _, _ in user_said]
                              + [(t, _normalise(_as_text(a))) for t, i, a in timeline.args
                                 if (t, i) not in timeline.lookups])

    def used(self, value: str, after: int, until: int) -> bool:
        return any(after < t <= until and _relied_on(value, norm)
                   for t, norm in self.entries)


def _only_listed(value: str, turn: int, listed: list[tuple[int, str]], uses: _Uses,
                 until: int) -> bool:
    """Whether an agent's ``value`` at ``turn`` comes from a tool's result list (an earlier
    output) and nobody used it after that output, up to the handoff at ``until``: the user
    did not pick it, no tool got it."""
    for out_turn, text in listed:
        if out_turn <= turn and _relied_on(value, text):
            if not uses.used(value, out_turn, until):
                return True
    return False


def _with_relied_values(said: list, timeline: _Timeline) -> tuple[list, list[tuple[int, str]]]:
    """``said`` with the tool-output values their agent relied on: a value of a tool's output
    that reappears in the same agent's words or tool-call arguments after the call (same turn
    or later; before the handoff, as the entry is placed at the turn of that reuse). A value
    from a result list counts only when a later tool call got it or the user said it: an
    agent reading the list out is no use. Also the result lists' values, normalised, per
    output turn (for :func:`_only_listed`)."""
    extra = []
    listed_texts: list[tuple[int, str]] = []
    normalised: dict[int, str] = {}  # id of a use's text → its normalised form
    users = [(t, _normalise(text)) for t, sp, text, _, _ in said if sp is None]
    args = {(t, i): a for t, i, a in timeline.args}
    chosen = {k for k in args if k not in timeline.lookups}
    explored = _explored(timeline, users)
    for turn, agent, ci, output in timeline.outputs:
        spans = _tool_spans(output)
        every = (turn, ci) in explored  # a lookup of an offered value nobody chose
        if every:
            spans = [(span, True) for span, _ in spans]
        listed_text = " | ".join(_normalise(text) for _, text, listed in _leaves(output)
                                 if listed or every)
        if listed_text:
            listed_texts.append((turn, listed_text))
        later = sorted((t, i, text) for t, i, text in timeline.uses.get(agent, ())
                       if t > turn or (t == turn and i > ci))
        by_turn: dict[int, list[Any]] = {}
        for span, listed in spans:
            for t, i, text in later:
                if listed and (t, i) not in chosen:
                    continue  # words about a listed value, or a lookup of it: not a use
                norm = normalised.get(id(text))
                if norm is None:
                    norm = normalised[id(text)] = _normalise(text)
                if _relied_on(span.value, norm):
                    by_turn.setdefault(t, []).append(_slotted(span, args.get((t, i))))
                    break
            else:
                if listed:
                    picked = next((u for u, norm in users if u > turn
                                   and _relied_on(span.value, norm)), None)
                    if picked is not None:
                        by_turn.setdefault(picked, []).append(span)
        for t, got in by_turn.items():
            extra.append((t, _RELIED, "", got, turn))
    if not extra:
        return said, listed_texts
    # stable: at one turn a relied-on tool value comes before the words that restate it
    return sorted([*extra, *said], key=lambda s: (s[0], s[1] is not _RELIED)), listed_texts


# A duration an agent quotes from its rules ("within 24 hours of booking", "more than 24
# hours since", "the 24-hour window"): what the policy says, not a value of the case.
_POLICY_BEFORE = re.compile(r"(?:within|more than|less than|fewer than|beyond|over|under|"
                            r"at least|at most|up to|last|past|the first)\s+(?:the\s+)?$", re.I)
_POLICY_AFTER = re.compile(r"^\s*(?:-\s*hours?\s+)?(?:window|of (?:booking|purchase|"
                           r"departure|the booking|the flight)|before (?:departure|the flight)"
                           r"|since)", re.I)
_DURATION = re.compile(r"\b(?:hours?|days?|weeks?|months?|minutes?)\b", re.I)


def _policy_quote(text: str, span: Any) -> bool:
    if span.kind != "quantity" or not _DURATION.search(span.value):
        return False
    end = span.start + len(span.value)
    return bool(_POLICY_BEFORE.search(text[max(0, span.start - 30):span.start])
                or _POLICY_AFTER.match(text[end:end + 30]))


def _passed_to_tool(value: str, timeline: _Timeline, until: int) -> bool:
    """Whether a tool call at or before turn ``until`` got ``value`` in its arguments."""
    return any(t <= until and _relied_on(value, _normalise(_as_text(a)))
               for t, _, a in timeline.args)


def _explored(timeline: _Timeline, users: list[tuple[int, str]]) -> set[tuple[int, int]]:
    """The lookups (``(turn, call)``) that got a value an earlier result list offered which
    nobody chose — the user never said it, no other tool call got it: the agent looking
    through the user's reservations one by one. Their outputs count as result lists too."""
    offered = [(turn, {_normalise(text) for _, text, listed in _leaves(out) if listed})
               for turn, _, _, out in timeline.outputs]
    if not any(values for _, values in offered):
        return set()
    choices = [norm for _, norm in users] + [_normalise(_as_text(a)) for t, i, a in
                                             timeline.args if (t, i) not in timeline.lookups]
    out = set()
    for t, i, arguments in timeline.args:
        if (t, i) not in timeline.lookups:
            continue
        got = [text for _, text, _ in _leaves(arguments)
               if any(ot < t and _normalise(text) in values for ot, values in offered)]
        if got and not any(_relied_on(v, norm) for v in got for norm in choices):
            out.add((t, i))
    return out


def _arg_slots(args: list[tuple[int, int, Any]]) -> dict[str, str]:
    """Normalised value → the slot of the tool argument it was passed under (the first)."""
    out: dict[str, str] = {}
    for _, _, arguments in args:
        for path, text, _ in _leaves(arguments):
            slot = key_slot(path)
            if slot and len(text) <= 80:
                out.setdefault(_normalise(text), slot)
    return out


def _named(span: Any, slot: str) -> Any:
    from maev_kit.facts._offline import Span, _text

    return Span(span.kind, _text(span.kind, span.value, slot=slot), span.value, span.start, slot)


def _slotted(span: Any, arguments: Any) -> Any:
    """``span`` with the slot of the tool argument it was passed under, when it was."""
    from maev_kit.facts._offline import Span, _text

    slot = _arg_slot(span.value, arguments) if arguments is not None else None
    if not slot or slot == span.slot or span.kind == "quantity":
        return span
    return Span(span.kind, _text(span.kind, span.value, slot=slot), span.value, span.start, slot)


# ---- llm ----------------------------------------------------------------------------------

#: Options of the llm proposer (passed to :func:`propose_facts` as keywords).
LLM_OPTIONS = frozenset({"prompt", "max_concurrency", "max_retries", "timeout", "cache",
                         "progress", "retry_backoff"})


def _propose_llm(traces: Sequence[MultiAgentTrace], backend: Any, notes: list[FactNote],
                 **kw: Any) -> tuple[list[ProposedFact], dict[str, Any]]:
    """One extraction request per handoff through :func:`maev_kit.runner.run_requests`: the
    facts, and the run's stats. A handoff whose request failed gets a note with the cause, and
    the run one :class:`~maev_kit.errors.JudgeErrorWarning`."""
    import warnings

    from maev_kit.errors import JudgeErrorWarning
    from maev_kit.facts._llm import EXTRACT_PROMPT_IDS, LLMFactProposer, handoff_texts
    from maev_kit.runner import run_requests
    from maev_kit.runner.internal import resolve_backend

    prompt = kw.pop("prompt", "v1")
    if prompt not in EXTRACT_PROMPT_IDS:
        raise InputError(f"unknown extraction prompt {prompt!r} for the llm proposer; use one "
                         f"of {', '.join(EXTRACT_PROMPT_IDS)}")
    resolved = resolve_backend(backend, "the llm fact proposer")
    task = LLMFactProposer(prompt, model=resolved.model)
    groups = []
    for t in traces:
        for h in handoff_texts(t):
            if h.messages:
                groups.append([h])
            else:
                notes.append(FactNote(h.conversation_id, h.handoff_index,
                                      "no message before this handoff: no llm fact proposed"))
    run = run_requests(task, groups, resolved, desc=f"facts · {resolved.model}", **kw)
    out: list[ProposedFact] = []
    failed: list[Any] = []
    for (h,), got in zip(groups, run.results):
        facts = [r for r in got if isinstance(r, ProposedFact)]
        out.extend(facts)
        errors = [r for r in got if not isinstance(r, ProposedFact)]
        if errors:
            failed.append(errors[0])
            notes.append(FactNote(h.conversation_id, h.handoff_index,
                                  f"the llm request failed ({errors[0].cause}): "
                                  f"{errors[0].error}", errors[0].cause))
        elif not facts:
            notes.append(FactNote(h.conversation_id, h.handoff_index,
                                  "the model proposed no fact for this handoff"))
    if failed:
        by_cause: dict[str, int] = {}
        for e in failed:
            by_cause[e.cause] = by_cause.get(e.cause, 0) + 1
        causes = ", ".join(f"{c} {n}" for c, n in sorted(by_cause.items(), key=lambda x: -x[1]))
        warnings.warn(f"llm fact proposer: the request failed for {len(failed)} of "
                      f"{len(groups)} handoffs ({causes}); they have no llm fact — see the "
                      "proposal's notes", JudgeErrorWarning, stacklevel=4)
    return out, run.stats


# ---- public -------------------------------------------------------------------------------

def _methods(method: str | Sequence[str]) -> list[str]:
    names = [method] if isinstance(method, str) else list(method)
    if not names:
        raise InputError(f"`method` names no proposer; use one or more of {', '.join(METHODS)}")
    for name in names:
        if name not in METHODS:
            close = difflib.get_close_matches(str(name), METHODS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(f"unknown fact proposer {name!r}{hint} "
                             f"(use one or more of {', '.join(METHODS)})")
    return list(dict.fromkeys(names))


def propose_facts(traces: MultiAgentTrace | Iterable[MultiAgentTrace], *,
                  method: str | Sequence[str] = "offline", backend: Any = None,
                  carry_over: bool = False, **kw: Any) -> FactProposal:
    """Propose key facts for every handoff of every conversation.

    Parameters
    ----------
    traces : MultiAgentTrace or iterable of them
    method : {"offline", "context", "llm"} or a list of them
        ``"offline"``: deterministic rules (stdlib only, no network) over what the user said
        before each handoff — identifiers and codes, flight and train numbers, emails, phones,
        money with its currency, dates and clock times, counts with a unit, names a person
        gives for themselves, places, plans — plus the identifiers, emails, phones, amounts,
        times and counts the handing-off agent itself stated since it took over, and the
        values of a tool's result that the calling agent then relied on (restated, or passed
        to a later tool call). User text is read from ``user_messages`` and from turns whose
        agent id or role is ``user``, ``customer``, ``human``, ``client``…
        ``"context"``: one fact per value in each handoff's ``context_passed`` (fact id
        ``ctx:<key>``, nested keys dotted); from a free-text value (a reason, a task) the
        values the offline rules find in it, never the whole sentence.
        ``"llm"``: asks a language model (``backend``) for the facts of each handoff, one
        request per handoff through the judging runner (:func:`maev_kit.runner.run_requests`:
        the same backends, reply cache, retries, concurrency and error accounting as judging)
        with a versioned extraction prompt that fences the trace text as untrusted data. Each
        proposed value is the exact text of a message before the handoff (a value found in no
        message drops its fact); the proposer is named ``llm:<model>``.
        Several methods merge with :func:`merge_facts` (de-duplicated by value).
    backend : str or backend object, for ``"llm"`` only
        A litellm model string (``"gpt-4o-mini"``), a
        :class:`~maev_kit.backends.LiteLLMBackend` or an
        :class:`~maev_kit.backends.OpenAIClientBackend`.
    carry_over : bool
        False (default): each value is proposed once, at the first handoff after it was stated
        — a key fact belongs to the conversation and scoring judges it there and at every
        later handoff (:func:`~maev_kit.retention.build_retention_items`), so a person reviews
        it once. With several methods, a value one method proposed at an earlier handoff is
        not proposed again at a later one. True: the fact is proposed again at each later
        handoff, as maev-kit did before facts belonged to the conversation (scoring treats the
        copies as the same fact when their text is the same).
    **kw
        Options of the llm proposer: ``prompt`` (``"v1"``), ``max_concurrency`` (16),
        ``max_retries`` (3), ``timeout`` (60 s), ``cache`` (None: ``.maev_cache/``; False:
        none), ``progress`` (True), ``retry_backoff`` (0.5 s) — as in
        :func:`~maev_kit.runner.run_judge`.

    Returns
    -------
    FactProposal
        A list of :class:`ProposedFact` in conversation and handoff order, with ``.notes``:
        one :class:`FactNote` for each conversation or handoff that got no fact, and why (no
        handoff, no user text, only tool turns, nothing fact-like) and for each handoff whose
        llm request failed (its ``cause`` set; the run also warns with a
        :class:`~maev_kit.errors.JudgeErrorWarning`), and ``.stats``: the llm run's accounting
        (None without ``"llm"``). Never raises on a trace's content.

    Raises
    ------
    InputError
        For an unknown method or option, or ``"llm"`` without a backend.
    maev_kit.errors.JudgeUnavailableError
        When the llm's endpoint refuses the key or does not answer before any request of the
        run got a reply (as in judging: within seconds, one line naming the fix).

    Examples
    --------
    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["My account number is ACCT-4471."],
    ...     turns=[AgentTurn("triage", "router", "Transferring you.", turn_index=1)],
    ...     handoffs=[Handoff("triage", "billing", None, turn_index=2)])
    >>> [(f.handoff_index, f.text, f.value, f.kind) for f in propose_facts([t])]
    [(0, 'Account number is ACCT-4471', 'ACCT-4471', 'identifier')]
    >>> [str(n) for n in propose_facts([MultiAgentTrace("c2")]).notes]
    ['c2: no handoff: nothing to propose facts for']
    """
    traces = _trace_list(traces)
    names = _methods(method)
    _check_options(names, backend, kw)
    return _propose(traces, names, backend, carry_over, kw)


def _trace_list(traces: MultiAgentTrace | Iterable[MultiAgentTrace]) -> list[MultiAgentTrace]:
    """The traces given, one alone or an iterable of them, as a list."""
    from maev_kit.traces import MultiAgentTrace

    if isinstance(traces, MultiAgentTrace):
        traces = [traces]
    return list(traces)


def _check_options(names: list[str], backend: Any, kw: dict[str, Any]) -> None:
    """Refuse options no proposer of ``names`` takes (only the llm proposer takes any), and
    the llm proposer without a backend."""
    allowed = LLM_OPTIONS if "llm" in names else frozenset()
    unknown = [k for k in kw if k not in allowed]
    if unknown:
        which = " and ".join(n for n in names if n != "llm") or "llm"
        raise InputError(f"unknown option(s) for the {which} proposer: {', '.join(unknown)}")
    if "llm" in names and backend is None:
        raise InputError("the llm proposer needs a model: pass backend=<model name or backend>")


def _propose(traces: list[MultiAgentTrace], names: list[str], backend: Any, carry_over: bool,
             kw: dict[str, Any]) -> FactProposal:
    notes: list[FactNote] = []
    lists: list[list[ProposedFact]] = []
    stats = None
    for name in names:
        if name != "llm":
            lists.append(_propose_rules(traces, name, name == names[0], notes, carry_over))
            continue
        if name == names[0]:
            notes.extend(FactNote(t.conversation_id, None, "no handoff: nothing to propose "
                                  "facts for") for t in traces if not t.handoffs)
        facts, stats = _propose_llm(traces, backend, notes, **kw)
        lists.append(facts)
    merged = merge_facts(*lists) if len(lists) > 1 else lists[0]
    if not carry_over:
        merged = first_statements(merged, traces)
    if len(lists) > 1:  # a handoff one method could not fill but another did is no news
        filled = {(f.conversation_id, f.handoff_index) for f in merged}
        convs = {f.conversation_id for f in merged}
        notes = [n for n in notes if n.cause is not None or not (
            (n.handoff_index is not None and (n.conversation_id, n.handoff_index) in filled)
            or (n.handoff_index is None and n.conversation_id in convs))]
    return FactProposal(merged, notes, stats)


def first_statements(facts: Sequence[ProposedFact], traces: Sequence[MultiAgentTrace]
                     ) -> list[ProposedFact]:
    """``facts`` without those whose value (or, with none, text) was already proposed at an
    earlier handoff of the same conversation: a fact is stated once and judged at every later
    handoff (:func:`propose_facts` does this unless ``carry_over=True``).

    >>> from maev_kit import Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c", handoffs=[Handoff("a", "b", None, turn_index=1),
    ...                                    Handoff("b", "c", None, turn_index=3)])
    >>> fs = [ProposedFact("c", i, f"p-{i}", "Ref is BK-1", "BK-1", "identifier", 0, "offline")
    ...       for i in (0, 1)]
    >>> [f.handoff_index for f in first_statements(fs, [t])]
    [0]
    """
    rank = {(t.conversation_id, hi): r for t in traces
            for r, hi in enumerate(_handoff_order(t))}
    first: dict[tuple[str, str], int] = {}
    for f in facts:
        key = (f.conversation_id, "v:" + _normalise(f.value) if f.value
               else "t:" + _normalise(f.text))
        r = rank.get((f.conversation_id, f.handoff_index), f.handoff_index)
        if key not in first or r < first[key]:
            first[key] = r
    out = []
    for f in facts:
        key = (f.conversation_id, "v:" + _normalise(f.value) if f.value
               else "t:" + _normalise(f.text))
        if rank.get((f.conversation_id, f.handoff_index), f.handoff_index) == first[key]:
            out.append(f)
    return out


def _propose_rules(traces: list[MultiAgentTrace], name: str, first: bool,
                   notes: list[FactNote], carry_over: bool) -> list[ProposedFact]:
    """The offline or context proposer over every trace."""
    # Proposals hold no reference cycles: pausing the cyclic collector while tens of thousands
    # of small objects are built saves a fifth of the time (as in loading traces).
    with paused_gc():
        facts: list[ProposedFact] = []
        for t in traces:
            if not t.handoffs:
                if first:
                    notes.append(FactNote(t.conversation_id, None,
                                          "no handoff: nothing to propose facts for"))
                continue
            if name == "context":
                facts.extend(_propose_context(t, notes))
            else:
                facts.extend(_propose_offline(t, notes, carry_over=carry_over))
        return facts


def merge_facts(*lists: Iterable[ProposedFact]) -> list[ProposedFact]:
    """Merge proposals from several proposers, de-duplicated by normalised value per handoff.

    The first proposal of a value is kept (its id, text and kind); its ``proposer`` joins the
    names of every proposer that found the value with ``+``. Facts without a value
    de-duplicate by text. Order: conversation, then handoff, in order of first appearance.

    >>> a = ProposedFact("c1", 0, "ctx:account", "account is ACCT-1", "ACCT-1", "context", 2,
    ...                  "context")
    >>> b = ProposedFact("c1", 0, "p-1", "Account number is ACCT-1", "ACCT-1", "identifier", 0,
    ...                  "offline")
    >>> [(f.fact_id, f.proposer) for f in merge_facts([a], [b])]
    [('ctx:account', 'context+offline')]
    """
    kept: dict[tuple[str, int, str], ProposedFact] = {}
    names: dict[tuple[str, int, str], list[str]] = {}
    for facts in lists:
        for f in facts:
            key = (f.conversation_id, f.handoff_index,
                   "v:" + _normalise(f.value) if f.value else "t:" + _normalise(f.text))
            if key not in kept:
                kept[key] = f
                names[key] = []
            for p in f.proposer.split("+"):
                if p not in names[key]:
                    names[key].append(p)
    conv_order = {c: i for i, c in enumerate(dict.fromkeys(k[0] for k in kept))}
    keys = sorted(kept, key=lambda k: (conv_order[k[0]], k[1]))
    out = []
    for k in keys:
        f = kept[k]
        proposer = "+".join(names[k])
        if proposer != f.proposer:
            f = ProposedFact(**{**f.to_dict(), "proposer": proposer})
        out.append(f)
    return out
