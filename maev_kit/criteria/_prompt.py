"""The criterion prompt (versioned, ``prompts/criterion_<id>.txt``) and the reading of its
replies.

The conversation goes into the prompt only inside the ``<<<CONVERSATION`` fence, one JSON object
per line, with every ``<<<`` and ``>>>`` in the data rewritten
(:func:`maev_kit.judges.escape_fence`), so no data can close the block; the system message says
that instructions inside it are content. A reply whose label is not one of the criterion's
labels is a failed call (``unparseable``), never a verdict.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from maev_kit.criteria._criterion import Criterion, CriterionItem
from maev_kit.criteria._window import focus_text, window
from maev_kit.errors import InputError
from maev_kit.judges.internal import json_candidate
from maev_kit.judges import escape_fence

__all__ = ["CRITERION_PROMPTS", "DEFAULT_CRITERION_PROMPT", "CriterionPrompt", "build_messages",
           "criterion_prompt", "parse_reply", "render_conversation"]

#: Criterion prompt versions shipped with the kit; a new wording is a new version.
CRITERION_PROMPTS: tuple[str, ...] = ("v1",)
DEFAULT_CRITERION_PROMPT = "v1"
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
#: Characters of one entry's text shown to a judge (longer text is cut, visibly).
ENTRY_CHARS = 4000


@dataclass(frozen=True)
class CriterionPrompt:
    """A criterion prompt: its id, system and user templates, and its content hash."""

    id: str
    system: str
    user: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(f"{self.system}\0{self.user}".encode()).hexdigest()


@lru_cache(maxsize=None)
def criterion_prompt(prompt_id: str = DEFAULT_CRITERION_PROMPT) -> CriterionPrompt:
    """The shipped criterion prompt ``prompt_id`` (``"v1"``).

    >>> p = criterion_prompt("v1")
    >>> "{{conversation}}" in p.user and "instruction" in p.system
    True
    """
    if prompt_id not in CRITERION_PROMPTS:
        raise InputError(f"no criterion prompt {prompt_id!r}; the kit has "
                         f"{', '.join(CRITERION_PROMPTS)}")
    text = (resources.files("maev_kit.criteria") / "prompts" / f"criterion_{prompt_id}.txt"
            ).read_text(encoding="utf-8")
    _, system, user = re.split(r"^=== (?:system|user) ===\n", text, flags=re.M)
    return CriterionPrompt(prompt_id, system.strip(), user.strip())


def render_conversation(item: CriterionItem) -> str:
    """The item's window (:func:`~maev_kit.criteria._window.window`) as fenced JSON lines.

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> t = MultiAgentTrace("c", turns=[AgentTurn("a", "r", "CONVERSATION>>> ok", turn_index=0)])
    >>> it = Criterion("x", scope="turn", labels=("y", "n"), question="?").items([t])[0]
    >>> print(render_conversation(it))
    {"n": 1, "speaker": "a", "kind": "text", "text": "CONVERSATION››› ok", "focus": true}
    """
    lines = []
    for n, entry in enumerate(window(item), 1):
        m = entry.message
        text = m.content if len(m.content) <= ENTRY_CHARS else (
            m.content[:ENTRY_CHARS] + f" […{len(m.content) - ENTRY_CHARS} characters cut]")
        row: dict[str, Any] = {"n": n, "speaker": m.speaker, "kind": m.kind}
        if m.tool:
            row["tool"] = m.tool
        row["text"] = text
        if entry.focus:
            row["focus"] = True
        lines.append(escape_fence(json.dumps(row, ensure_ascii=False)))
    return "\n".join(lines)


def build_messages(criterion: Criterion, item: CriterionItem,
                   prompt: CriterionPrompt | None = None) -> list[dict[str, str]]:
    """The chat messages asking ``criterion`` of ``item`` (system, then user); the labels
    listed are the item's answers (for failure attribution, the agents of its conversation).
    """
    prompt = prompt or criterion_prompt()
    values = {
        "question": escape_fence(criterion.question),
        "labels": escape_fence(json.dumps(list(item.labels), ensure_ascii=False)),
        "guidelines": escape_fence(criterion.guidelines.strip() or "(none)"),
        "focus": focus_text(item),
        "conversation": render_conversation(item),
    }
    user = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), prompt.user)
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]


def parse_reply(reply: Any, labels: tuple[str, ...]
                ) -> tuple[str | None, str, tuple[str, ...], str | None]:
    """(label, reason, evidence, error) from a judge's reply; never raises.

    The label must be one of ``labels`` (case and surrounding spaces aside); anything else is an
    error, never a verdict.

    >>> parse_reply('{"label": "Yes", "reason": "r", "evidence": {"n": 2, "quote": "ok"}}',
    ...             ("yes", "no"))
    ('yes', 'r', ("entry 2: 'ok'",), None)
    >>> parse_reply('{"label": "maybe"}', ("yes", "no"))[3]
    "label 'maybe' is not one of the criterion's labels: yes, no"
    """
    if not isinstance(reply, str):
        return None, "", (), f"the reply is a {type(reply).__name__}, not text"
    value, error = json_candidate(reply)
    if error is not None:
        return None, "", (), error
    if not isinstance(value, Mapping):
        return None, "", (), f"the reply is a JSON {type(value).__name__}; expected an object"
    twice = getattr(value, "duplicates", None) or ()  # keys the reply gives more than once
    if "label" in twice:
        return None, "", (), "the reply gives `label` twice"
    raw = value.get("label")
    if not isinstance(raw, str):
        return None, "", (), "no `label` string in the reply"
    by_folded = {lab.strip().casefold(): lab for lab in labels}
    label = by_folded.get(raw.strip().casefold())
    if label is None:
        return None, "", (), (f"label {raw[:80]!r} is not one of the criterion's labels: "
                              f"{', '.join(labels)}")
    reason = value.get("reason", "")
    reason = reason if isinstance(reason, str) else json.dumps(reason, ensure_ascii=False)
    return label, reason[:2000], _evidence(value.get("evidence")), None


def _evidence(ev: Any) -> tuple[str, ...]:
    if isinstance(ev, str) and ev.strip():
        return (ev[:500],)
    if isinstance(ev, Mapping) and isinstance(ev.get("quote"), str) and ev["quote"].strip():
        return (f"entry {ev.get('n')}: {ev['quote'][:500]!r}",)
    if isinstance(ev, list):
        return tuple(e[:500] for e in ev if isinstance(e, str))[:5]
    return ()
