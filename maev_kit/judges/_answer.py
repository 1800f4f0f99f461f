"""Answer a built retention prompt with the heuristic judge (the fake server's default reply)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from maev_kit.judges._heuristic import HeuristicJudge
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message
from maev_kit.traces.internal import MESSAGE_KINDS

__all__ = ["answer_retention_prompt"]

_HEURISTIC = HeuristicJudge()


def answer_retention_prompt(messages: Sequence[dict[str, Any]]) -> str:
    """Reply to a prompt built by :meth:`RetentionJudge.build_messages` (any prompt variant).

    Recovers the facts and the post-handoff messages from the fenced blocks, runs the
    :class:`HeuristicJudge` on them and returns the JSON object the prompt asks for:
    ``{"F1": {"status": ..., "reason": ...}, ...}``. Deterministic: the same prompt gets the
    same reply. The local fake OpenAI server uses this as its default responder.

    Raises
    ------
    ValueError
        When ``messages`` holds no retention prompt (no fenced facts and messages blocks).

    Examples
    --------
    >>> from maev_kit.judges import RetentionJudge
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> after = (Message("billing", "Which account number is it?", 3),)
    >>> items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account is ACCT-4471", (), after)]
    >>> reply = answer_retention_prompt(RetentionJudge("v2").build_messages(items))
    >>> json.loads(reply)["F1"]["status"]
    'lost'
    """
    data = extract_prompt_data(messages)
    after = tuple(_message(m, i) for i, m in enumerate(data.messages, start=1))
    items = [RetentionItem(fid, "prompt", 0, fid, text, (), after, data.from_agent,
                           data.to_agent) for fid, text in data.facts]
    verdicts = _HEURISTIC.judge_items(items)
    return json.dumps({v.item_id: {"status": v.label, "reason": v.rationale,
                                   "evidence": _where(v, after)} for v in verdicts},
                      ensure_ascii=False)


def _message(m: dict[str, Any], i: int) -> Message:
    """One rendered entry back as a view entry (any view: the text view has no ``kind``)."""
    kind = m.get("kind") if m.get("kind") in MESSAGE_KINDS else None
    is_user = m.get("role") == "user"
    return Message(str(m.get("speaker", "")), str(m.get("text", "")),
                   int(m.get("n", i)) if str(m.get("n", i)).isdigit() else i, is_user,
                   kind or ("user" if is_user else "text"),
                   str(m["tool"]) if isinstance(m.get("tool"), str) else None)


def _where(v: Any, after: tuple[Message, ...]) -> Any:
    """The evidence as the prompt asks for it: ``{"n", "quote"}`` when the verdict has a span
    (the conversation view), else the heuristic's evidence strings."""
    if v.span is not None:
        for n, m in enumerate(after, start=1):
            if m.turn_index == v.span.turn_index and m.content[v.span.start:v.span.end] == \
                    v.span.text:
                return {"n": n, "quote": v.span.text}
    return list(v.evidence)
