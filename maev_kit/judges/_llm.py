"""The LLM retention judge: one prompt per handoff, facts referenced by id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from maev_kit.judges._parse import parse_retention_reply
from maev_kit.judges._prompts import PROMPT_IDS, fact_key, load_prompt
from maev_kit.judges._verdict import Verdict
from maev_kit.retention._items import RetentionItem

__all__ = ["RetentionJudge"]


class RetentionJudge:
    """Ask an LLM whether each key fact of a handoff was retained, lost or contradicted.

    The judge does no I/O: :meth:`build_messages` makes one chat request for all facts of one
    handoff and :meth:`parse` turns the model's reply into one :class:`Verdict` per fact; the
    runner (:func:`maev_kit.runner.run_judge`) sends the request.

    Parameters
    ----------
    prompt : {"v1", "v2"}
        ``"v1"`` follows the article (facts, post-handoff messages, a status per fact as JSON),
        with facts referenced by id and the trace text fenced as untrusted data. ``"v2"`` adds
        label definitions and one example per label.

    Attributes
    ----------
    name : str
        ``"retention-v1"`` or ``"retention-v2"`` (what :func:`get_judge` accepts).
    version : str
        The prompt id and a hash of the template text: it changes whenever the prompt does.

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> after = (Message("billing", "Account ACCT-4471: refund started.", 3),)
    >>> items = [RetentionItem("c1/h0/f1", "c1", 0, "f1", "Account is ACCT-4471", (), after,
    ...                        "triage", "billing")]
    >>> judge = RetentionJudge(prompt="v1")
    >>> judge.name, judge.offline
    ('retention-v1', False)
    >>> messages = judge.build_messages(items)
    >>> [m["role"] for m in messages]
    ['system', 'user']
    >>> '{"id": "F1", "fact": "Account is ACCT-4471"}' in messages[1]["content"]
    True
    >>> judge.parse('{"F1": {"status": "retained", "reason": "quoted"}}', items)[0].label
    'retained'
    """

    offline = False

    def __init__(self, prompt: Literal["v1", "v2"] = "v1") -> None:
        if prompt not in PROMPT_IDS:
            raise ValueError(f"`prompt` must be one of {PROMPT_IDS}, got {prompt!r}")
        self.prompt = prompt
        self._template = load_prompt(prompt)
        self.name = f"retention-{prompt}"
        self.version = self._template.version

    def __repr__(self) -> str:
        return f"RetentionJudge(prompt={self.prompt!r})  # version {self.version}"

    def fact_ids(self, items: Sequence[RetentionItem]) -> dict[str, str]:
        """The prompt's fact id for each item: ``{"F1": item_id, ...}``."""
        return {fact_key(i): it.item_id for i, it in enumerate(items)}

    def build_messages(self, items: Sequence[RetentionItem]) -> list[dict[str, str]]:
        """One chat request for all facts of one handoff.

        Raises
        ------
        ValueError
            When ``items`` is empty, mixes conversations or handoffs, or repeats an item id.
            Group items by ``(conversation_id, handoff_index)`` first.
        """
        items = list(items)
        if not items:
            raise ValueError("`items` is empty: pass the facts of one handoff")
        first = items[0]
        for it in items[1:]:
            if (it.conversation_id, it.handoff_index) != (first.conversation_id,
                                                          first.handoff_index):
                raise ValueError(
                    "`items` must all belong to one handoff: got "
                    f"({first.conversation_id!r}, handoff {first.handoff_index}) and "
                    f"({it.conversation_id!r}, handoff {it.handoff_index}); group items by "
                    "(conversation_id, handoff_index) and build one request per group")
        ids = [it.item_id for it in items]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"`items` repeats item id {dup!r}; pass each fact once")
        return self._template.render(items)

    def parse(self, reply: str, items: Sequence[RetentionItem]) -> list[Verdict]:
        """One verdict per item, in item order; never raises.

        ``items`` must be the same sequence, in the same order, that built the request (facts
        are referenced by position: ``F1`` is ``items[0]``). Bad replies become error verdicts
        that keep the raw reply; see :func:`maev_kit.judges.parse_retention_reply`.
        """
        return parse_retention_reply(reply, items)
