"""The article's ``score_information_retention``, kept working on top of the runner."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.errors import JudgeErrorWarning
from maev_kit.retention import LABELS, RetentionItem
from maev_kit.traces import Message

__all__ = ["score_information_retention"]


def _to_message(m: Any, index: int, default_speaker: str) -> Message:
    if isinstance(m, Message):
        return m
    if isinstance(m, str):
        return Message(default_speaker, m, index, False)
    if isinstance(m, Mapping):
        content = m.get("content", m.get("message", ""))
        speaker = m.get("speaker") or m.get("agent_id") or m.get("name") or m.get("role") \
            or default_speaker
        is_user = bool(m.get("is_user", m.get("role") == "user"))
        return Message(str(speaker), "" if content is None else str(content), index, is_user)
    agent = getattr(m, "agent_id", None)
    if agent is not None:  # an AgentTurn
        return Message(str(agent), str(getattr(m, "message", "")), index, False)
    content = getattr(m, "content", None)
    if content is not None:  # a UserMessage
        return Message("user", str(content), index, True)
    raise TypeError(f"a message must be a str, a dict with 'content', a Message, AgentTurn or "
                    f"UserMessage; got {type(m).__name__}")


def _to_backend(llm_client: Any, model: str) -> Any:
    if isinstance(llm_client, str):
        from maev_kit.backends import LiteLLMBackend

        return LiteLLMBackend(llm_client)
    if callable(getattr(llm_client, "complete", None)) and hasattr(llm_client, "cache_identity"):
        return llm_client
    from maev_kit.backends import OpenAIClientBackend

    return OpenAIClientBackend(llm_client, model)


async def score_information_retention(
    llm_client: Any,
    pre_handoff_messages: Sequence[Any],
    post_handoff_messages: Sequence[Any],
    key_facts: Sequence[Any],
    *,
    model: str = "gpt-4o-mini",
    judge: Any = None,
    cache: Any = False,
    max_retries: int = 3,
    timeout: float = 60,
) -> dict[str, Any]:
    """Score how many key facts survived one handoff (the article's function, same keys).

    Parameters
    ----------
    llm_client : openai client, backend or str
        An ``openai.AsyncOpenAI`` / ``OpenAI`` client (used with ``model``), a backend object, or
        a litellm model string.
    pre_handoff_messages, post_handoff_messages : sequence
        Messages as strings, ``{"role"/"speaker", "content"}`` dicts, ``Message``,
        ``AgentTurn`` or ``UserMessage`` objects.
    key_facts : sequence of str
        The facts stated before the handoff (ids ``f1``, ``f2``... in order). ``KeyFact``
        objects and ``{"fact_id", "text"}`` dicts are accepted too.
    model : str
        Model name for an openai client.
    judge : LLM judge, optional
        Defaults to ``RetentionJudge("v1")``.
    cache : path, None or False
        As in :func:`run_judge`; off by default here, as in the article.

    Returns
    -------
    dict
        ``retention_rate`` (retained / judged facts, 3 decimals; NaN when no fact was judged:
        none given, or every judge call failed), ``retained``, ``lost``, ``contradicted``
        (counts), ``errors`` (facts whose judge call failed: left out of the rate, as
        everywhere in the kit) and ``details`` (one dict per fact: ``fact_id``, ``fact``,
        ``status``, ``rationale``, ``evidence``, ``error``, ``error_cause``).

    Warns
    -----
    JudgeErrorWarning
        When some facts could not be judged, with the counts by cause.

    Examples
    --------
    >>> import asyncio
    >>> asyncio.run(score_information_retention("gpt-4o-mini", ["hi"], ["hello"], []))["retention_rate"]
    nan
    """
    facts = _fact_pairs(key_facts)
    if not facts:
        return {"retention_rate": math.nan, **dict.fromkeys(LABELS, 0), "errors": 0,
                "details": []}
    items = _adhoc_items(pre_handoff_messages, post_handoff_messages, facts)
    if judge is None:
        from maev_kit.judges import RetentionJudge

        judge = RetentionJudge(prompt="v1")
    from maev_kit.runner._run import arun_judge

    run = await arun_judge(judge, items, _to_backend(llm_client, model), max_concurrency=1,
                           max_retries=max_retries, timeout=timeout, cache=cache, progress=False)
    tally = _FactTally.of(facts, run.verdicts)
    if tally.errors:
        warnings.warn(tally.warning(), JudgeErrorWarning, stacklevel=2)
    return {"retention_rate": tally.rate(), **tally.counts, "errors": tally.errors,
            "details": tally.details}


def _fact_pairs(key_facts: Sequence[Any]) -> list[tuple[str, str]]:
    """``(fact_id, text)`` of each key fact: a string gets the id ``f1``, ``f2``... by position;
    a mapping or a ``KeyFact`` keeps its own id when it has one."""
    facts: list[tuple[str, str]] = []
    for k, f in enumerate(key_facts, start=1):
        if isinstance(f, str):
            facts.append((f"f{k}", f))
        elif isinstance(f, Mapping):
            facts.append((str(f.get("fact_id") or f"f{k}"), str(f.get("text") or f.get("fact"))))
        elif hasattr(f, "text"):
            facts.append((str(getattr(f, "fact_id", None) or f"f{k}"), str(f.text)))
        else:
            raise TypeError(f"`key_facts[{k - 1}]` must be a str (or KeyFact), got {type(f).__name__}")
    return facts


def _adhoc_items(pre_handoff_messages: Sequence[Any], post_handoff_messages: Sequence[Any],
                 facts: Sequence[tuple[str, str]]) -> list[RetentionItem]:
    """One retention item per fact over the one handoff (conversation ``adhoc``, handoff 0):
    the messages numbered in order, those after the handoff after a gap for it."""
    before = tuple(_to_message(m, i, "agent") for i, m in enumerate(pre_handoff_messages))
    start = len(before) + 1
    after = tuple(_to_message(m, start + i, "agent") for i, m in enumerate(post_handoff_messages))
    return [RetentionItem(f"adhoc/h0/{fid}", "adhoc", 0, fid, text, before, after)
            for fid, text in facts]


@dataclass(frozen=True)
class _FactTally:
    """The verdicts on the facts counted: per label, the facts that could not be judged by
    cause, and one detail dict per fact."""

    n_facts: int
    counts: dict[str, int]
    by_cause: dict[str, int]
    details: list[dict[str, Any]]

    @classmethod
    def of(cls, facts: Sequence[tuple[str, str]], verdicts: Sequence[Any]) -> _FactTally:
        """Count the verdicts on ``facts`` (in fact order)."""
        counts = dict.fromkeys(LABELS, 0)
        details = []
        by_cause: dict[str, int] = {}
        for (fid, text), v in zip(facts, verdicts):
            cause = None
            if v.label in counts:
                counts[v.label] += 1
            else:
                cause = v.cause or "other"
                by_cause[cause] = by_cause.get(cause, 0) + 1
            details.append({"fact_id": fid, "fact": text, "status": v.label,
                            "rationale": v.rationale, "evidence": list(v.evidence),
                            "error": v.error, "error_cause": cause})
        return cls(len(facts), counts, by_cause, details)

    @property
    def judged(self) -> int:
        """Facts with a label."""
        return sum(self.counts.values())

    @property
    def errors(self) -> int:
        """Facts that could not be judged."""
        return self.n_facts - self.judged

    def rate(self) -> float:
        """Retained of the judged facts, 3 decimals; NaN when none was judged."""
        judged = self.judged
        return round(self.counts["retained"] / judged, 3) if judged else math.nan

    def warning(self) -> str:
        """The warning for facts that could not be judged, with their counts by cause."""
        causes = ", ".join(f"{c} {n}" for c, n in sorted(self.by_cause.items(),
                                                         key=lambda kv: (-kv[1], kv[0])))
        return (f"{self.errors} of {self.n_facts} facts could not be judged ({causes}): they "
                "are left out of the retention rate")
