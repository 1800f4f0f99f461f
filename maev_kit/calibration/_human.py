"""Reading human labels in any accepted form into ``{item_id: {annotator: label}}``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maev_kit.errors import InputError, LabelValidationError
from maev_kit.labels import LabelRecord, latest_labels, read_label_file
from maev_kit.labels.internal import is_sqlite_file, is_store_url

__all__ = ["CannotFitError", "HumanLabels", "check_split", "fit_on_other_splits",
           "load_human_labels"]


class CannotFitError(InputError):
    """A judge that learns from labels has nothing it can learn from: no labeled item in its
    training split, or labels of one class only. Says what to label next."""

#: ``{item_id: {annotator: label}}`` (latest label per annotator, skips dropped).
HumanLabels = dict[str, dict[str, str]]


def _from_records(records: Iterable[LabelRecord], exclude_sources: tuple[str, ...]) -> HumanLabels:
    out: HumanLabels = {}
    for (iid, ann), rec in latest_labels(list(records)).items():
        if rec.source in exclude_sources:
            continue
        out.setdefault(iid, {})[ann] = rec.label
    return out


def load_human_labels(human_labels: Any, *,
                      exclude_sources: tuple[str, ...] = ("gold", "adjudicated")
                      ) -> HumanLabels:
    """Human labels as ``{item_id: {annotator: label}}``.

    Accepts a path to a ``labels.jsonl`` (or to a SQLite label store), a label store URL
    (``sqlite:///…``, ``postgresql://…``), a :class:`~maev_kit.labels.LabelStore`, a loaded
    labeled set, a list of dicts in the labels-file format (``item_id``, ``annotator``,
    ``label``) or of :class:`~maev_kit.labels.LabelRecord`, or the mapping itself. The latest
    label per (item, annotator) wins; ``skip`` is dropped; records whose ``source`` is in
    ``exclude_sources`` are left out: by default the ``gold`` label (a majority vote rather
    than a person) and a team session's settled labels (``adjudicated``: calibrate against
    those with :func:`~maev_kit.labels.settled_human_labels`), so the annotators are compared
    as people.

    >>> load_human_labels([{"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost"},
    ...                    {"item_id": "c1/h0/f1", "annotator": "ana", "label": "retained"},
    ...                    {"item_id": "c1/h0/f2", "annotator": "ben", "label": "skip"}])
    {'c1/h0/f1': {'ana': 'retained'}}
    """
    if isinstance(human_labels, str) and is_store_url(human_labels):  # a database store
        from maev_kit.labels import LabelStore

        with LabelStore(human_labels) as store:
            return _from_records(store.records(), exclude_sources)
    if isinstance(human_labels, (str, os.PathLike)):
        if os.path.isdir(human_labels):
            human_labels = os.path.join(human_labels, "labels.jsonl")
        if not os.path.exists(human_labels):
            raise InputError(f"`human_labels`: no labels file at {os.fspath(human_labels)!r}")
        if is_sqlite_file(human_labels):  # a SQLite label store given as its path
            from maev_kit.labels import LabelStore

            with LabelStore(human_labels) as store:
                return _from_records(store.records(), exclude_sources)
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
    out. Raises :class:`CannotFitError` when the labels hold fewer than two classes."""
    from maev_kit.agreement import majority_labels

    by_item = [human.get(it.item_id, {}) for it in items]
    annotators = sorted({a for labs in by_item for a in labs})
    table = {a: [labs.get(a) for labs in by_item] for a in annotators}
    keep = [(it, lab) for it, lab in zip(items, majority_labels(table)) if lab is not None]
    classes = sorted({lab for _, lab in keep})
    if len(classes) < 2:
        name = getattr(judge, "name", "this judge")
        what = (f"one class ({classes[0]}, {len(keep)} item{'s' if len(keep) != 1 else ''})"
                if classes else "no label")
        raise CannotFitError(f"{name} learns from labels, but the labels of its training items "
                             f"hold {what}: it needs at least two classes. Label items of the "
                             "training split the judges disagree on (the likeliest to be lost "
                             "or contradicted), or use --judge heuristic")
    judge.fit([it for it, _ in keep], [lab for _, lab in keep])


def check_split(labeled_set: Any, split: Any) -> str:
    """``split`` when ``labeled_set`` declares it, else an :class:`~maev_kit.errors.InputError`
    listing the splits it has (``no split 'tset' in support_desk; splits: dev, test``)."""
    splits = list(labeled_set.manifest.splits)
    if not isinstance(split, str) or split not in splits:
        have = ", ".join(splits) if splits else "none (the manifest declares no splits)"
        raise InputError(f"no split {split!r} in {labeled_set.name}; splits: {have}")
    return split


def fit_on_other_splits(judge: Any, labeled_set: Any, split: str | None) -> None:
    """Fit a judge that learns from labels on every split of ``labeled_set`` but ``split``.

    The one rule for judges that learn (``"tfidf-logreg"``): they are fit on the items of the
    other splits (each labeled by the majority of its annotators; adjudicated ``gold`` labels
    left out) and so never score an item they were trained on. A judge that does not learn, or
    one already fitted, is left as it is.

    Raises
    ------
    InputError
        When there is no labeled set or no split to hold out, when ``split`` is not one of the
        set's splits (the message lists them), or when no other split has a labeled item.

    Examples
    --------
    >>> from maev_kit.datasets import load_labeled_set
    >>> from maev_kit.judges import get_judge
    >>> support = load_labeled_set("support_desk")
    >>> judge = get_judge("tfidf-logreg")
    >>> fit_on_other_splits(judge, support, "test")
    >>> judge.is_fitted
    True
    >>> fit_on_other_splits(get_judge("tfidf-logreg"), support, "tset")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: no split 'tset' in support_desk; splits: dev, test
    """
    if not getattr(judge, "requires_fit", False) or getattr(judge, "is_fitted", False):
        return
    name = getattr(judge, "name", "this judge")
    if labeled_set is None or split is None:
        raise InputError(f"{name} learns from labels: score a held-out split of a labeled set "
                         "(e.g. split='test'); it is fit on the other splits (a dev split) and "
                         "never scores an item it was trained on")
    check_split(labeled_set, split)
    train_ids = {cid for s, ids in labeled_set.manifest.splits.items() if s != split
                 for cid in ids}
    items = [it for it in labeled_set.items
             if it.conversation_id in train_ids or it.item_id in train_ids]
    fit_on_items(judge, items, load_human_labels(labeled_set),
                 f"outside split {split!r} of {labeled_set.name}")


def fit_on_items(judge: Any, items: Sequence[Any], human: HumanLabels, where: str) -> None:
    """Fit a learning judge on the human-labeled ones of ``items`` (the training split);
    ``where`` names them in the error when none is labeled."""
    labeled = [it for it in items if human.get(it.item_id)]
    if not labeled:
        raise CannotFitError(f"{getattr(judge, 'name', 'this judge')} learns from labels but no "
                             f"item {where} has a label to learn from: give it a labeled dev "
                             "split (label its items with maev_kit.widgets.Labeler)")
    fit_on_majority(judge, labeled, human)
