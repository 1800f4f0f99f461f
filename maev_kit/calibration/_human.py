"""Reading human labels in any accepted form into ``{item_id: {annotator: label}}``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maev_kit.errors import InputError, LabelValidationError
from maev_kit.labels._records import LabelRecord, latest_labels, read_label_file

__all__ = ["HumanLabels", "load_human_labels"]

#: ``{item_id: {annotator: label}}`` (latest label per annotator, skips dropped).
HumanLabels = dict[str, dict[str, str]]


def _from_records(records: Iterable[LabelRecord], exclude_sources: tuple[str, ...]) -> HumanLabels:
    out: HumanLabels = {}
    for (iid, ann), rec in latest_labels(list(records)).items():
        if rec.source in exclude_sources:
            continue
        out.setdefault(iid, {})[ann] = rec.label
    return out


def load_human_labels(human_labels: Any, *, exclude_sources: tuple[str, ...] = ("gold",)
                      ) -> HumanLabels:
    """Human labels as ``{item_id: {annotator: label}}``.

    Accepts a path to a ``labels.jsonl``, a :class:`~maev_kit.labels.LabelStore`, a loaded
    labeled set, a list of dicts in the labels-file format (``item_id``, ``annotator``,
    ``label``) or of :class:`~maev_kit.labels.LabelRecord`, or the mapping itself. The latest
    label per (item, annotator) wins; ``skip`` is dropped; records whose ``source`` is in
    ``exclude_sources`` (by default the adjudicated ``gold`` label, a majority vote rather than
    a person) are left out.

    >>> load_human_labels([{"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost"},
    ...                    {"item_id": "c1/h0/f1", "annotator": "ana", "label": "retained"},
    ...                    {"item_id": "c1/h0/f2", "annotator": "ben", "label": "skip"}])
    {'c1/h0/f1': {'ana': 'retained'}}
    """
    if isinstance(human_labels, (str, os.PathLike)):
        if os.path.isdir(human_labels):
            human_labels = os.path.join(human_labels, "labels.jsonl")
        if not os.path.exists(human_labels):
            raise InputError(f"`human_labels`: no labels file at {os.fspath(human_labels)!r}")
        lf = read_label_file(human_labels)
        if lf.problems:
            raise LabelValidationError(lf.problems)
        return _from_records(lf.records, exclude_sources)
    if hasattr(human_labels, "label_records"):  # a LabeledSet
        return _from_records(human_labels.label_records, exclude_sources)
    if hasattr(human_labels, "records") and callable(human_labels.records):  # a LabelStore
        return _from_records(human_labels.records(), exclude_sources)
    if isinstance(human_labels, Mapping):
        out: HumanLabels = {}
        for iid, by_ann in human_labels.items():
            if not isinstance(by_ann, Mapping):
                raise ValueError("`human_labels` as a mapping must be {item_id: {annotator: "
                                 f"label}}; item {iid!r} maps to {type(by_ann).__name__}")
            kept = {str(a): str(lab) for a, lab in by_ann.items() if lab not in (None, "skip")}
            if kept:
                out[str(iid)] = kept
        return out
    if isinstance(human_labels, Iterable):
        records = []
        for i, r in enumerate(human_labels):
            if isinstance(r, LabelRecord):
                records.append(r)
                continue
            if not isinstance(r, Mapping):
                raise ValueError(f"`human_labels[{i}]` must be a dict with item_id, annotator "
                                 f"and label; got {type(r).__name__}")
            try:
                records.append(LabelRecord.model_validate(dict(r)))
            except Exception as exc:
                raise ValueError(f"`human_labels[{i}]` is not a valid label record: {exc}") \
                    from None
        return _from_records(records, exclude_sources)
    raise TypeError("`human_labels` must be a labels.jsonl path, a LabelStore, a labeled set, or "
                    f"a list of label dicts; got {type(human_labels).__name__}")


def fit_on_majority(judge: Any, items: Sequence[Any], human: HumanLabels) -> None:
    """Fit a judge that learns from labels on ``items``, each labeled by the majority of its
    annotators in ``human`` (``{item_id: {annotator: label}}``); items nobody labeled are left
    out."""
    from maev_kit.agreement import majority_labels

    by_item = [human.get(it.item_id, {}) for it in items]
    annotators = sorted({a for labs in by_item for a in labs})
    table = {a: [labs.get(a) for labs in by_item] for a in annotators}
    keep = [(it, lab) for it, lab in zip(items, majority_labels(table)) if lab is not None]
    judge.fit([it for it, _ in keep], [lab for _, lab in keep])
