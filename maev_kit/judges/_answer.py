"""Answer a built retention prompt with the heuristic judge (the fake server's default reply)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from maev_kit.judges._heuristic import HeuristicJudge
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.retention._items import RetentionItem
from maev_kit.traces._model import Message

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
    after = tuple(Message(str(m.get("speaker", "")), str(m.get("text", "")),
                          int(m.get("n", i)) if str(m.get("n", i)).isdigit() else i,
                          m.get("role") == "user")
                  for i, m in enumerate(data.messages, start=1))
    items = [RetentionItem(fid, "prompt", 0, fid, text, (), after, data.from_agent,
                           data.to_agent) for fid, text in data.facts]
    verdicts = _HEURISTIC.judge_items(items)
    return json.dumps({v.item_id: {"status": v.label, "reason": v.rationale,
                                   "evidence": list(v.evidence)} for v in verdicts},
                      ensure_ascii=False)
