"""Judge cards: the calibrated judge pinned to a JSON file, checked before it is used again."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_serializer,
    model_validator,
)

from maev_kit.errors import InputError
from maev_kit.internal import read_input_bytes

__all__ = ["JudgeCard", "JudgeCardMismatchWarning", "card_backend", "card_fields",
           "judge_from_card", "verdict_fields"]

#: Optional fields added after the first cards were written (for the drift gate, ``maev check``):
#: left out of the JSON while unset, so a card without them is written byte for byte as before
#: (an older maev-kit reads it), and every older card loads unchanged: schema_version stays 1.
#: (An older maev-kit refuses a card that sets one, naming it as an unknown field.)
_OPTIONAL_FIELDS = ("accuracy", "tolerance", "item_verdicts", "min_kappa", "criterion",
                    "criterion_verdicts", "probes")
#: The floor ``maev check`` holds κ's CI upper bound to when neither card nor caller says.
DEFAULT_MIN_KAPPA = 0.4


class JudgeCardMismatchWarning(UserWarning):
    """The judge or labeled set in use no longer matches the judge card it was calibrated as."""


class JudgeCard(BaseModel):
    """What was calibrated, against which labels, and how well it agreed (saved as JSON).

    ``prompt_hash`` is the sha256 of the prompt template (None for offline judges);
    ``labeled_set_hash`` the labeled set's ``content_hash`` (sha256 over every data file of
    the set: traces, expectations, manifest, labels) when the labels came from a labeled set;
    ``labels_hash`` the sha256 of the ``(item_id, annotator, label)`` triples the κ rests on
    (the scored split's labels).

    A card is enough to score with the calibrated judge (:func:`judge_from_card`, and
    ``evaluate(..., judge_card=card)`` with no ``judge``): for an LLM judge it holds the model,
    its ``params``, the prompt (``prompt_text`` embeds a custom template's text, checked
    against ``prompt_hash`` on load) and the worked ``examples`` (each example's id, label and
    the text shown); a learned judge (``tfidf-logreg``) is refit on every split of the labeled
    set (``labeled_set_hash``) but ``split``, and must come out with the card's
    ``judge_version`` (which hashes its training items and labels) or scoring is refused.

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
    prompt_text: str | None = None
    examples: list[dict[str, Any]] = []
    example_split: str | None = None
    example_strategy: str | None = None
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
    accuracy: float | None = None
    confidence: float = 0.95
    human_kappa: float | None = None
    threshold: float | None = None
    tolerance: float | None = Field(default=None, ge=0, le=1)
    #: The floor of the drift gate: ``maev check`` fails when κ's CI upper bound is below it.
    min_kappa: float | None = Field(default=None, ge=-1, le=1)
    created_at: str = ""
    maev_kit_version: str = ""
    item_verdicts: dict[str, Literal["retained", "lost", "contradicted"]] | None = None
    #: the criterion calibrated on (:class:`maev_kit.criteria.Criterion` fields); None:
    #: retention. Its judge is ``judge_name`` (``module:function``) or ``model``; its
    #: verdicts per item are ``criterion_verdicts`` (labels of the criterion).
    criterion: dict[str, Any] | None = None
    criterion_verdicts: dict[str, str] | None = None

    #: The robustness probes run at calibration (``maev calibrate --probes``): ``seed``,
    #: ``confidence`` and per probe ``results`` (flip_rate, ci_low, ci_high, n, n_flips,
    #: n_failed, flipped item ids); ``maev check`` re-runs them (see probe_judge).
    probes: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _criterion_labels(self) -> JudgeCard:
        """A criterion card's verdicts are its criterion's labels (agent names, when its answers
        are the agents of each conversation: agent scope with no labels)."""
        allowed = tuple((self.criterion or {}).get("labels") or ())
        agents = not allowed and (self.criterion or {}).get("scope") == "agent"
        bad = sorted({v for v in (self.criterion_verdicts or {}).values()
                      if not (isinstance(v, str) and v.strip() if agents else v in allowed)})
        if bad:
            raise ValueError(f"criterion_verdicts holds {bad}, not one of the criterion's "
                             f"labels {list(allowed)}")
        return self

    @model_serializer(mode="wrap")
    def _leave_out_unset(self, handler: Any) -> Any:
        """The optional fields of :data:`_OPTIONAL_FIELDS` are written only when set."""
        data = handler(self)
        if isinstance(data, dict):
            for name in _OPTIONAL_FIELDS:
                if data.get(name, 0) is None:
                    del data[name]
        return data

    def model_post_init(self, context: Any) -> None:
        if not self.created_at:
            object.__setattr__(self, "created_at",
                               _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        if not self.maev_kit_version:
            from maev_kit.internal import __version__

            object.__setattr__(self, "maev_kit_version", __version__)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the card as indented JSON, atomically (see :mod:`maev_kit._files`).

        A judge card is a person's decision and is never lost: when ``path`` already holds a
        different card, that card is first moved into ``<folder>/.maev-backup/<timestamp>/``
        and a :class:`UserWarning` names where (the same card is simply kept). A file there
        that is not a judge card (labels, a table, …) is never replaced:
        :class:`~maev_kit._files.OverwriteRefused`.
        """
        from pathlib import Path

        from maev_kit.internal import OverwriteRefused, backup_folder, sniff, write_text

        text = self.model_dump_json(indent=2) + "\n"
        p = Path(path)
        found = sniff(p)
        content = p.read_bytes() if found is not None else b""
        if not content.strip():
            pass  # nothing there, or an empty file: nothing to keep
        elif found is not None and found.kind != "card":
            raise OverwriteRefused(f"{os.fspath(path)}: holds {found.what}, not a judge card; "
                                   "maev-kit never replaces it: save the card to another path")
        elif not _same_card(content, self):
            kept = backup_folder(p.parent) / p.name
            os.replace(p, kept)
            warnings.warn(f"{os.fspath(path)} held another judge card: kept it as {kept}",
                          UserWarning, stacklevel=2)
        write_text(p, text)

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
        raw = read_input_bytes(name, "judge card", "pass the card's JSON file (judge_card.json)")
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
            card = cls.model_validate(data)
        except ValidationError as exc:
            shown = [f"{'.'.join(str(p) for p in e['loc']) or '(card)'}: {e['msg']}"
                     for e in exc.errors()[:5]]
            more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
            raise InputError(f"judge card {name} › {'; '.join(shown)}{more}") from None
        card.template(where=name)
        card.example_pairs(where=name)
        return card

    def template(self, *, where: str = "(in memory)") -> Any:
        """The card's prompt as a :class:`~maev_kit.judges.PromptTemplate` (None for an offline
        judge): the builtin it names, or the embedded ``prompt_text``, whose hash must be
        ``prompt_hash`` (else :class:`~maev_kit.errors.InputError`: the card was edited)."""
        from maev_kit.judges import PROMPT_IDS, PromptTemplate
        from maev_kit.judges.internal import load_prompt

        if self.prompt is None:
            return None
        if self.prompt_text is None:
            if self.prompt not in PROMPT_IDS:
                raise InputError(f"judge card {where} › prompt: {self.prompt!r} is not a builtin "
                                 "prompt and the card embeds no prompt_text")
            t = load_prompt(self.prompt)
        else:
            try:
                t = PromptTemplate.from_text(self.prompt_text, name=self.prompt)
                # a card of an earlier version: its templates showed text only, or the
                # conversation view of revision 2 (no payload for a receiver not in the trace)
                for view, revision in (("conversation", "2"), ("text", "")):
                    if self.prompt_hash is None or t.sha256 == self.prompt_hash:
                        break
                    old = PromptTemplate.from_text(self.prompt_text, name=self.prompt,
                                                   view=view, revision=revision)
                    if old.sha256 == self.prompt_hash:
                        t = old
            except InputError as exc:
                raise InputError(f"judge card {where} › prompt_text: {exc}") from None
        if self.prompt_hash is not None and t.sha256 != self.prompt_hash:
            what = ("its text" if self.prompt_text is not None
                    else f"the builtin {self.prompt!r} prompt of this maev-kit")
            raise InputError(f"judge card {where} › prompt_hash: {what} hashes to "
                             f"{t.sha256[:12]}…, the card says {self.prompt_hash[:12]}…; the "
                             "prompt changed since calibration: recalibrate")
        return t

    def example_pairs(self, *, where: str = "(in memory)") -> list[tuple[Any, str]]:
        """The card's worked examples as ``(RetentionItem, label)`` pairs."""
        from maev_kit.retention import LABELS, RetentionItem
        from maev_kit.traces import Message

        out = []
        for n, ex in enumerate(self.examples):
            try:
                after = tuple(Message.from_dict(m) if m.get("kind") else
                              Message(str(m["speaker"]), str(m["content"]),
                                      int(m.get("turn_index", 0)), bool(m.get("is_user", False)))
                              for m in ex["after"])
                item = RetentionItem(str(ex["item_id"]), str(ex["conversation_id"]),
                                     int(ex.get("handoff_index", 0)), str(ex.get("fact_id", "")),
                                     str(ex["fact"]), (), after, str(ex.get("from_agent", "")),
                                     str(ex.get("to_agent", "")))
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InputError(f"judge card {where} › examples[{n}]: not a worked example "
                                 f"({type(exc).__name__}: {exc}); recalibrate") from None
            if ex.get("label") not in LABELS:
                raise InputError(f"judge card {where} › examples[{n}].label: must be one of "
                                 f"{', '.join(LABELS)}, got {ex.get('label')!r}")
            out.append((item, ex["label"]))
        return out

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
        problems = self.differences(judge, model=model, params=params, labeled_set=labeled_set)
        if problems:
            warnings.warn("JUDGE CARD MISMATCH — the κ on this card does not vouch for the judge "
                          "in use; recalibrate (maev_kit.calibration.calibrate):\n  "
                          + "\n  ".join(problems), JudgeCardMismatchWarning, stacklevel=2)
        return problems

    def differences(self, judge: Any, *, model: str | None = None,
                    params: dict[str, Any] | None = None, labeled_set: Any = None) -> list[str]:
        """What differs between the card and the judge (and labeled set) in use, as
        :meth:`check` lists it, without warning."""
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
        return problems

    def _labels_hash_of(self, labeled_set: Any) -> str | None:
        """The hash of the labels the card's κ would rest on in ``labeled_set`` (its scored
        split's human labels), or None when that cannot be told."""
        if self.labeled_set is None or not hasattr(labeled_set, "label_records") \
                or not hasattr(labeled_set, "items_in"):
            return None
        from maev_kit.calibration._human import load_human_labels

        try:
            items = labeled_set.items_in(self.split)
        except InputError:
            return "(split missing)"
        human = load_human_labels(labeled_set)
        return labels_hash(human, [it.item_id for it in items if human.get(it.item_id)])


def labels_hash(human: Mapping[str, Mapping[str, str]], item_ids: Sequence[str]) -> str:
    """sha256 of the sorted ``item_id\\tannotator\\tlabel`` lines used."""
    h = hashlib.sha256()
    for iid in sorted(item_ids):
        for ann, lab in sorted(human.get(iid, {}).items()):
            h.update(f"{iid}\t{ann}\t{lab}\n".encode())
    return h.hexdigest()


def verdict_fields(run: Any, accuracy: float | None = None) -> dict[str, Any]:
    """The card fields that let the drift gate pair a later run with this one, item by item:
    ``item_verdicts`` (each scored item's label from ``run``, a JudgeRun; failed calls have
    none) and ``accuracy`` (when given, e.g. the leaderboard's).

    >>> from maev_kit.judges import Verdict
    >>> from maev_kit.runner import JudgeRun
    >>> run = JudgeRun([Verdict("c2/h0/f1", "lost"), Verdict("c1/h0/f1", "retained"),
    ...                 Verdict("c3/h0/f1", None, error="timeout")], "heuristic", "3", None, {})
    >>> verdict_fields(run, 0.5)
    {'item_verdicts': {'c1/h0/f1': 'retained', 'c2/h0/f1': 'lost'}, 'accuracy': 0.5}
    """
    verdicts = {str(v.item_id): str(v.label) for v in run.verdicts if v.label is not None}
    out: dict[str, Any] = {"item_verdicts": dict(sorted(verdicts.items()))}
    if accuracy is not None and accuracy == accuracy:  # not NaN
        out["accuracy"] = float(accuracy)
    return out


def card_fields(judge: Any) -> dict[str, Any]:
    """The card fields that let :func:`judge_from_card` rebuild ``judge``: a custom prompt's
    text and the worked examples (empty for an offline judge or a builtin prompt without
    examples)."""
    out: dict[str, Any] = {}
    template = getattr(judge, "template", None)
    if template is not None and getattr(template, "builtin_id", None) is None:
        out["prompt_text"] = template.text
    pairs = getattr(judge, "examples", None)
    text_only = getattr(template, "view", "conversation") == "text"
    if getattr(judge, "n_examples", 0) and pairs:
        out["examples"] = [{"item_id": it.item_id, "conversation_id": it.conversation_id,
                            "handoff_index": it.handoff_index, "fact_id": it.fact_id,
                            "fact": it.fact, "from_agent": it.from_agent,
                            "to_agent": it.to_agent,
                            "after": [m.to_dict() for m in (it.text_view()[1] if text_only
                                                            else it.after)],
                            "label": label} for it, label in pairs]
        out["example_split"] = judge.example_split
        out["example_strategy"] = judge.example_strategy
    return out


def judge_from_card(card: JudgeCard | str | os.PathLike[str], *, backend: Any = None,
                    backend_params: dict[str, Any] | None = None,
                    labeled_set: Any = None) -> tuple[Any, Any]:
    """The judge a card was calibrated as, and its backend (None offline).

    An LLM judge gets the card's model and ``params`` (plus ``backend_params`` such as
    ``api_base`` and ``api_key``, which override the card's; a card never holds a key; or the
    ``backend`` given, whose
    model must be the card's), its prompt and its worked examples. A learned judge is refit on
    every split of ``labeled_set`` but the card's ``split``. The judge must come out with the
    card's ``judge_version``.

    Raises
    ------
    InputError
        When the judge cannot be rebuilt as calibrated: the prompt or the heuristic's rules
        changed, the labeled set a learned judge refits on is missing or changed, or
        ``backend`` runs another model.

    Examples
    --------
    >>> from maev_kit.judges import get_judge
    >>> card = JudgeCard(judge_name="heuristic", judge_version=get_judge("heuristic").version)
    >>> judge, backend = judge_from_card(card)
    >>> judge.name, backend
    ('heuristic', None)
    """
    from maev_kit.judges import resolve_judge

    if not isinstance(card, JudgeCard):
        card = JudgeCard.load(card)
    if card.model is None:
        judge, _ = resolve_judge(card.judge_name)
        if getattr(judge, "requires_fit", False):
            judge = _refit(judge, card, labeled_set)
    else:
        from maev_kit.judges import RetentionJudge

        if backend is None:
            backend = card_backend(card, backend_params)
        elif getattr(backend, "model", card.model) != card.model:
            raise InputError(f"the judge card was calibrated with model {card.model!r}, the "
                             f"backend given runs {backend.model!r}")
        pairs = card.example_pairs()
        judge = RetentionJudge(card.template(), examples=pairs,
                               example_split=card.example_split or "dev")
    if str(judge.version) != card.judge_version:
        raise InputError(f"the judge card's {card.judge_name} is version {card.judge_version}, "
                         f"this maev-kit builds version {judge.version}: its prompt or rules "
                         "changed since calibration; recalibrate (maev calibrate)")
    return judge, backend


def card_backend(card: JudgeCard, backend_params: dict[str, Any] | None = None) -> Any:
    """The litellm backend for the card's model and ``params`` (``backend_params``, such as
    ``api_base`` and ``api_key``, take precedence); None for an offline judge. No request is
    sent and litellm is not imported."""
    if card.model is None:
        return None
    from maev_kit.backends import LiteLLMBackend

    try:
        return LiteLLMBackend(card.model, **{**card.params, **(backend_params or {})})
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _refit(judge: Any, card: JudgeCard, labeled_set: Any) -> Any:
    """Refit a learned judge as calibrated, or refuse."""
    from maev_kit.calibration._human import fit_on_other_splits

    where = (f"labeled set {card.labeled_set!r}" if card.labeled_set else "a labeled set")
    if labeled_set is None or card.split is None:
        raise InputError(f"the judge card's {card.judge_name} learns from labels: it is refit on "
                         f"{where} outside split {card.split!r}; score that labeled set (a "
                         "split of it), or recalibrate")
    if card.labeled_set_hash is not None and labeled_set.content_hash != card.labeled_set_hash:
        raise InputError(f"the judge card's {card.judge_name} was fit on {where} with content "
                         f"hash {card.labeled_set_hash[:12]}…; the set in use hashes to "
                         f"{labeled_set.content_hash[:12]}… — the labeled set changed since "
                         "calibration, so the judge cannot be refit as calibrated: recalibrate")
    fit_on_other_splits(judge, labeled_set, card.split)
    if str(judge.version) != card.judge_version:
        raise InputError(f"refitting {card.judge_name} on {where} outside split {card.split!r} "
                         f"gives version {judge.version}, the card has {card.judge_version}: "
                         "the training items or labels changed since calibration; recalibrate")
    return judge


def _same_card(content: bytes, card: JudgeCard) -> bool:
    """True when ``content`` is ``card`` apart from when and by which version it was made."""
    try:
        old = json.loads(content.decode("utf-8-sig"))
    except (ValueError, RecursionError):
        return False
    new = json.loads(card.model_dump_json())
    if not isinstance(old, dict):
        return False
    skip = ("created_at", "maev_kit_version")
    return ({k: v for k, v in old.items() if k not in skip}
            == {k: v for k, v in new.items() if k not in skip})
