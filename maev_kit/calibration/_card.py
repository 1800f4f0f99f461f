"""Judge cards: the calibrated judge pinned to a JSON file, checked before it is used again."""

from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from maev_kit.errors import InputError

__all__ = ["JudgeCard", "JudgeCardMismatchWarning"]


class JudgeCardMismatchWarning(UserWarning):
    """The judge or labeled set in use no longer matches the judge card it was calibrated as."""


class JudgeCard(BaseModel):
    """What was calibrated, against which labels, and how well it agreed (saved as JSON).

    ``prompt_hash`` is the sha256 of the prompt template (None for offline judges);
    ``labeled_set_hash`` the labeled set's ``content_hash`` (sha256 over every data file of
    the set: traces, expectations, manifest, labels) when the labels came from a labeled set;
    ``labels_hash`` the sha256 of the ``(item_id, annotator, label)`` triples the κ rests on
    (the scored split's labels).

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
        """Read a card written by :meth:`save`.

        Raises :class:`~maev_kit.errors.InputError`, naming the file (and the line or field),
        when the file is missing, a folder, not UTF-8 JSON, not one JSON object (a JSONL file,
        a list) or an object that is not a judge card (missing or unknown fields, wrong types).

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "card.json")
        >>> with open(path, "w") as f:
        ...     _ = f.write('{"judge_name": "heuristic", "kappa": "high"}')
        >>> JudgeCard.load(path)
        Traceback (most recent call last):
        ...
        maev_kit.errors.InputError: judge card .../card.json › judge_version: Field required; kappa: Input should be a valid number, unable to parse string as a number
        """
        name = os.fspath(path)
        if os.path.isdir(name):
            raise InputError(f"judge card {name} is a folder; pass the card's JSON file "
                             "(judge_card.json)")
        try:
            with open(name, "rb") as f:
                raw = f.read()
        except OSError as exc:
            raise InputError(f"judge card {name}: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise InputError(f"judge card {name} is not a JSON file (not UTF-8 text); pass "
                             "the judge_card.json written by `maev calibrate --card`") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as exc:
            where = f"{name}:{exc.lineno}" if isinstance(exc, json.JSONDecodeError) else name
            what = ("holds more than one JSON value (a JSONL file?)"
                    if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data"
                    else f"is not valid JSON ({getattr(exc, 'msg', type(exc).__name__)})")
            raise InputError(f"judge card {where} {what}; a judge card is one JSON object")\
                from None
        if not isinstance(data, dict):
            raise InputError(f"judge card {name} holds a JSON {type(data).__name__}; a judge "
                             "card is one JSON object")
        version = data.get("schema_version", 1)
        if version != 1:
            raise InputError(f"judge card {name} › schema_version: {version!r}; this maev-kit "
                             "reads version 1 — upgrade maev-kit")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            shown = [f"{'.'.join(str(p) for p in e['loc']) or '(card)'}: {e['msg']}"
                     for e in exc.errors()[:5]]
            more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
            raise InputError(f"judge card {name} › {'; '.join(shown)}{more}") from None

    def check(self, judge: Any, *, model: str | None = None, params: dict[str, Any] | None = None,
              labeled_set: Any = None) -> list[str]:
        """Compare the judge (and labeled set) in use with this card; warn loudly on mismatch.

        Parameters
        ----------
        judge : a judge object (``name``, ``version``) or a :class:`~maev_kit.runner.JudgeRun`.
        model : the model string in use (taken from a JudgeRun when not given).
        params : backend parameters in use (compared when given).
        labeled_set : a loaded labeled set, compared when given: its name, version and
            ``content_hash`` (the card's ``labeled_set_hash``) and, for a set loaded from disk,
            the hash of the scored split's labels (the card's ``labels_hash``).

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
            for attr, label, mine in (
                    ("name", "name", self.labeled_set),
                    ("version", "version", self.labeled_set_version),
                    ("content_hash", "content hash (labeled_set_hash)", self.labeled_set_hash)):
                theirs = getattr(labeled_set, attr, None)
                if mine is not None and theirs != mine:
                    problems.append(f"labeled set {label}: card has {mine!r}, in use {theirs!r}")
            used = self._labels_hash_of(labeled_set)
            if used is not None and self.labels_hash and used != self.labels_hash:
                problems.append(f"labels_hash: the labels of split {self.split!r} changed since "
                                f"calibration (card has {self.labels_hash[:12]}…, in use "
                                f"{used[:12]}…)")
        if problems:
            warnings.warn("JUDGE CARD MISMATCH — the κ on this card does not vouch for the judge "
                          "in use; recalibrate (maev_kit.calibration.calibrate):\n  "
                          + "\n  ".join(problems), JudgeCardMismatchWarning, stacklevel=2)
        return problems

    def _labels_hash_of(self, labeled_set: Any) -> str | None:
        """The hash of the labels the card's κ would rest on in ``labeled_set`` (its scored
        split's human labels), or None when that cannot be told."""
        if self.labeled_set is None or not hasattr(labeled_set, "label_records") \
                or not hasattr(labeled_set, "items_in"):
            return None
        from maev_kit.calibration._human import load_human_labels
        from maev_kit.calibration._result import labels_hash

        try:
            items = labeled_set.items_in(self.split)
        except InputError:
            return "(split missing)"
        human = load_human_labels(labeled_set)
        return labels_hash(human, [it.item_id for it in items if human.get(it.item_id)])
