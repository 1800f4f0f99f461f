"""The verdict a judge gives on one retention item, and what every verdict of the kit holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from maev_kit.errors import ERROR_CAUSES
from maev_kit.retention import LABELS, EvidenceSpan

__all__ = ["BaseVerdict", "Verdict"]


@dataclass(frozen=True)
class BaseVerdict:
    """What every verdict holds, a retention judge's (:class:`Verdict`) or a criterion judge's
    (:class:`maev_kit.criteria.CriterionVerdict`): the item's id, and a label with a reason and
    evidence, or an error with the reply it came from and its cause (one of
    :data:`maev_kit.errors.ERROR_CAUSES`). Each subclass checks its own labels."""

    item_id: str
    label: str | None
    rationale: str = ""
    evidence: tuple[str, ...] = ()
    error: str | None = None
    raw: str | None = None
    cause: str | None = None

    @property
    def ok(self) -> bool:
        """True when the verdict carries a label (no error)."""
        return self.error is None


@dataclass(frozen=True)
class Verdict(BaseVerdict):
    """A judge's answer for one item: a label with a reason, or an error.

    ``label`` is one of ``retained``, ``lost``, ``contradicted``; it is None exactly when
    ``error`` says why no label could be given (an unparseable reply, a failed request...).
    ``evidence`` holds short strings saying what the judgement rests on; ``span`` points at
    where (an :class:`~maev_kit.retention.EvidenceSpan`: the receiving agent's entry — its
    text, a tool argument, a tool result — and the characters that carried or contradicted the
    fact), set on retained and contradicted verdicts when the value is found there (a lost verdict
    may point at the question that asked for it again); ``raw``
    keeps the judge's raw reply when it could not be used.

    ``cause`` says why a model judge's call gave no label, one of
    :data:`maev_kit.errors.ERROR_CAUSES`: ``auth`` (bad or missing key), ``unreachable``
    (connection refused, unknown host), ``rate_limit`` (429 after the retries), ``timeout``,
    ``server`` (5xx or a dropped connection after the retries), ``content_filter`` (the provider
    refused the content), ``unparseable`` (a reply neither the transport nor the judge could
    read, or one that left this fact out) or ``other``. The runner sets it on every error
    verdict it makes; it is None on labeled verdicts.

    Examples
    --------
    >>> v = Verdict("c-001/h0/f1", "retained", "the agent quoted ACCT-4471",
    ...             evidence=["ident: 'ACCT-4471' found"])
    >>> v.evidence, v.ok
    (("ident: 'ACCT-4471' found",), True)
    >>> bad = Verdict("c-001/h0/f2", None, error="no JSON object in the reply", raw="Sure!",
    ...               cause="unparseable")
    >>> bad.to_dict()["error"], bad.cause
    ('no JSON object in the reply', 'unparseable')
    """

    span: EvidenceSpan | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.evidence, tuple):
            object.__setattr__(self, "evidence", tuple(self.evidence))
        if self.label is None:
            if not self.error:
                raise ValueError(
                    f"Verdict for {self.item_id!r}: `label` is None but no `error` says why; "
                    "give a label or an error")
        elif self.label not in LABELS:
            raise ValueError(f"Verdict for {self.item_id!r}: `label` must be one of {LABELS} "
                             f"or None, got {self.label!r}")
        elif self.error is not None:
            raise ValueError(f"Verdict for {self.item_id!r}: a verdict with an `error` has no "
                             f"label; got label {self.label!r} and error {self.error!r}")
        if self.cause is not None:
            if self.cause not in ERROR_CAUSES:
                raise ValueError(f"Verdict for {self.item_id!r}: `cause` must be one of "
                                 f"{ERROR_CAUSES} or None, got {self.cause!r}")
            if self.error is None:
                raise ValueError(f"Verdict for {self.item_id!r}: `cause` {self.cause!r} goes "
                                 "with an `error`; a labeled verdict has no cause")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``evidence`` as a list)."""
        return {"item_id": self.item_id, "label": self.label, "rationale": self.rationale,
                "evidence": list(self.evidence), "error": self.error, "raw": self.raw,
                "cause": self.cause, "span": self.span.to_dict() if self.span else None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        """Inverse of :meth:`to_dict`.

        >>> v = Verdict("a/h0/f1", "lost", "asked again")
        >>> Verdict.from_dict(v.to_dict()) == v
        True
        """
        return cls(item_id=data["item_id"], label=data.get("label"),
                   rationale=data.get("rationale") or "",
                   evidence=tuple(data.get("evidence") or ()), error=data.get("error"),
                   raw=data.get("raw"), cause=data.get("cause"),
                   span=EvidenceSpan.from_dict(data["span"]) if data.get("span") else None)
