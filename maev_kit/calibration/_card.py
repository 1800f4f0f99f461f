"""Judge cards: the calibrated judge pinned to a JSON file, checked before it is used again."""

from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["JudgeCard", "JudgeCardMismatchWarning"]


class JudgeCardMismatchWarning(UserWarning):
    """The judge or labeled set in use no longer matches the judge card it was calibrated as."""


class JudgeCard(BaseModel):
    """What was calibrated, against which labels, and how well it agreed (saved as JSON).

    ``prompt_hash`` is the sha256 of the prompt template (None for offline judges);
    ``labels_hash`` the sha256 of the ``(item_id, annotator, label)`` triples used;
    ``labeled_set_hash`` the labels file's hash when the labels came from a labeled set.

    Examples
    --------
    >>> card = JudgeCard(judge_name="heuristic", judge_version="3", kappa=0.61,
    ...                  kappa_low=0.55, kappa_high=0.67, n_items=400)
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "judge_card.json")
    >>> card.save(path)
    >>> JudgeCard.load(path) == card
    True
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1
    judge_name: str
    judge_version: str
    model: str | None = None
    params: dict[str, Any] = {}
    prompt: str | None = None
    prompt_hash: str | None = None
    labeled_set: str | None = None
    labeled_set_version: str | None = None
    labeled_set_hash: str | None = None
    labels_hash: str = ""
    split: str | None = None
    n_items: int = 0
    annotators: list[str] = []
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    confidence: float = 0.95
    human_kappa: float | None = None
    threshold: float | None = None
    created_at: str = ""
    maev_kit_version: str = ""

    def model_post_init(self, context: Any) -> None:
        if not self.created_at:
            object.__setattr__(self, "created_at",
                               _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if not self.maev_kit_version:
            from maev_kit import __version__

            object.__setattr__(self, "maev_kit_version", __version__)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the card as indented JSON."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.model_dump_json(indent=2) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> JudgeCard:
        """Read a card written by :meth:`save`."""
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        version = data.get("schema_version", 1)
        if version != 1:
            raise ValueError(f"judge card {os.fspath(path)!r} has schema_version {version}; this "
                             "maev-kit reads version 1 — upgrade maev-kit")
        return cls.model_validate(data)

    def check(self, judge: Any, *, model: str | None = None, params: dict[str, Any] | None = None,
              labeled_set: Any = None) -> list[str]:
        """Compare the judge (and labeled set) in use with this card; warn loudly on mismatch.

        Parameters
        ----------
        judge : a judge object (``name``, ``version``) or a :class:`~maev_kit.runner.JudgeRun`.
        model : the model string in use (taken from a JudgeRun when not given).
        params : backend parameters in use (compared when given).
        labeled_set : a loaded labeled set (name, version, labels hash), compared when given.

        Returns
        -------
        list of str
            The mismatches (empty when everything matches). Each is also reported with a
            :class:`JudgeCardMismatchWarning`.

        Examples
        --------
        >>> card = JudgeCard(judge_name="retention-v1", judge_version="v1-abc",
        ...                  model="gpt-4o-mini", kappa=0.7)
        >>> class J:
        ...     name, version, offline = "retention-v1", "v1-abc", False
        >>> card.check(J(), model="gpt-4o-mini")
        []
        """
        problems: list[str] = []
        name = getattr(judge, "judge_name", None) or getattr(judge, "name", None)
        version = getattr(judge, "judge_version", None) or getattr(judge, "version", None)
        if model is None:
            model = getattr(judge, "model", None) if hasattr(judge, "verdicts") else None
            if model is None and self.model is not None and hasattr(judge, "verdicts"):
                problems.append(f"model: card has {self.model!r}, the run used none")
        if name != self.judge_name:
            problems.append(f"judge name: card has {self.judge_name!r}, in use {name!r}")
        if str(version) != self.judge_version:
            problems.append(f"judge version: card has {self.judge_version!r}, in use "
                            f"{version!r} (the prompt or rules changed since calibration)")
        if model is not None and model != self.model:
            problems.append(f"model: card has {self.model!r}, in use {model!r}")
        if params is not None and params != self.params:
            problems.append(f"params: card has {self.params!r}, in use {params!r}")
        if labeled_set is not None:
            for attr, mine in (("name", self.labeled_set), ("version", self.labeled_set_version),
                               ("labels_hash", self.labeled_set_hash)):
                theirs = getattr(labeled_set, attr, None)
                if mine is not None and theirs != mine:
                    problems.append(f"labeled set {attr}: card has {mine!r}, in use {theirs!r}")
        if problems:
            warnings.warn("JUDGE CARD MISMATCH — the κ on this card does not vouch for the judge "
                          "in use; recalibrate (maev_kit.calibration.calibrate):\n  "
                          + "\n  ".join(problems), JudgeCardMismatchWarning, stacklevel=2)
        return problems
