"""The labeling session: every rule of labeling, with no widget library.

The :class:`~maev_kit.widgets.Labeler` widget is a view over a :class:`LabelingSession`: it
binds buttons and keys to :meth:`LabelingSession.label`, :meth:`~LabelingSession.next`,
:meth:`~LabelingSession.previous` and :meth:`~LabelingSession.undo`, and re-renders.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from maev_kit.labels._queue import ItemQueue
from maev_kit.labels._records import LABEL_VALUES, LabelRecord, check_annotator
from maev_kit.labels._store import LabelStore

__all__ = ["LabelingSession", "ShownVerdict"]

#: ``source`` of the line written when undo removes a label that had no earlier value.
UNDO_SOURCE = "undo"


@dataclass(frozen=True)
class ShownVerdict:
    """A judge's verdict on one item, as shown to the annotator after labeling."""

    item_id: str
    label: str | None
    rationale: str = ""
    error: str | None = None
    judge: str = ""


def _normalize_verdicts(verdicts: Any) -> dict[str, ShownVerdict]:
    if verdicts is None:
        return {}
    out: dict[str, ShownVerdict] = {}
    if isinstance(verdicts, Mapping):
        pairs = list(verdicts.items())
    elif isinstance(verdicts, Sequence) and not isinstance(verdicts, (str, bytes)):
        pairs = []
        for i, v in enumerate(verdicts):
            if not hasattr(v, "item_id"):
                raise TypeError(f"`verdicts[{i}]` must be a Verdict (with .item_id and .label); "
                                f"got {type(v).__name__}. Or pass a dict item_id -> label")
            pairs.append((v.item_id, v))
    else:
        raise TypeError("`verdicts` must be a list of Verdicts, a JudgeRun, or a dict "
                        f"item_id -> label; got {type(verdicts).__name__}")
    for item_id, v in pairs:
        if v is None or isinstance(v, str):
            out[item_id] = ShownVerdict(item_id, v)
        else:
            out[item_id] = ShownVerdict(item_id, getattr(v, "label", None),
                                        getattr(v, "rationale", "") or "",
                                        getattr(v, "error", None))
    return out


def _find_sample(labeled_set: Any, store: LabelStore) -> Any:
    """The label sample of ``labeled_set``, else the one next to ``store``'s labels.jsonl."""
    from pathlib import Path

    from maev_kit.labels._sample import SAMPLE_FILE, LabelSample

    folder = getattr(labeled_set, "path", None) or (store.path.parent if store.path else None)
    if folder is None or not (Path(folder) / SAMPLE_FILE).is_file():
        return None
    return LabelSample.load(Path(folder) / SAMPLE_FILE)


class LabelingSession(ItemQueue):
    """Label retention items one at a time, with resume, undo and blind judge verdicts.

    Parameters
    ----------
    items : sequence of RetentionItem, or a loaded labeled set
        What to label (anything with ``item_id``, ``fact``, ``before`` and ``after``); a
        labeled set gives its items and its ``label_sample.json``.
    store : LabelStore or path
        Where labels go (``labels.jsonl``); shared by every annotator.
    annotator : str
        Who is labeling. Labels by others in the same store are not shown.
    order : "sample", "random", "given", a list of item ids or a DataFrame with ``item_id``
        ``"sample"`` (the default when there is a sample) serves the items of the random sample
        ``maev sample`` drew (``label_sample.json`` of the labeled set, or next to the
        ``labels.jsonl`` of ``store``) first, in its order — so any first k labeled are a random
        sample — then the other items in random order (``seed``); ``"random"`` shuffles
        with ``seed`` (the same order for everyone with the same seed);
        ``"given"`` keeps the order of ``items``; a list of ids, or the DataFrame returned by
        :func:`~maev_kit.calibration.next_items_to_label`, labels those items in that order.
    seed : int
        Seed of the random order.
    verdicts : list of Verdict, JudgeRun or dict item_id -> label, optional
        A judge's verdicts. Blind by default: :meth:`verdict` returns nothing for an item until
        the annotator has labeled it.
    blind : bool
        Set False to show verdicts before labeling (not recommended for calibration labels).

    :meth:`sample_position` says where an item is in the sample (None: outside it; labels
    there are kept, but a corrected estimate does not use them).

    The session resumes: it starts at the first item (in ``order``) this annotator has not
    labeled yet (a ``skip`` counts as seen).

    Examples
    --------
    >>> import tempfile, os
    >>> from maev_kit.retention import RetentionItem
    >>> items = [RetentionItem(f"c1/h0/f{i}", "c1", 0, f"f{i}", f"fact {i}", (), ())
    ...          for i in range(3)]
    >>> path = os.path.join(tempfile.mkdtemp(), "labels.jsonl")
    >>> s = LabelingSession(items, path, annotator="ana", order="given",
    ...                     verdicts={"c1/h0/f0": "lost"})
    >>> s.current.item_id, s.verdict()
    ('c1/h0/f0', None)
    >>> _ = s.label("retained")
    >>> s.verdict("c1/h0/f0").label, s.current.item_id
    ('lost', 'c1/h0/f1')
    >>> _ = s.label("contradicted", note="says 17, not 71")
    >>> s.progress()
    {'done': 2, 'total': 3, 'retained': 1, 'lost': 0, 'contradicted': 1, 'skip': 0}
    >>> s.undo().item_id   # back to f1, its label removed
    'c1/h0/f1'
    >>> LabelingSession(items, path, annotator="ana", order="given").current.item_id
    'c1/h0/f1'
    """

    def __init__(self, items: Sequence[Any], store: LabelStore | str | os.PathLike[str], *,
                 annotator: str,
                 order: Literal["sample", "random", "given"] | Sequence[str] | None = None,
                 seed: int = 0, verdicts: Any = None, blind: bool = True):
        labeled_set = items if hasattr(items, "manifest") and hasattr(items, "items") else None
        if labeled_set is not None:
            items = list(labeled_set.items)
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            try:
                items = list(items)
            except TypeError:
                raise TypeError("`items` must be a list of RetentionItems, got "
                                f"{type(items).__name__}") from None
        if not items:
            raise ValueError("`items` is empty: nothing to label (build them with "
                             "maev_kit.build_retention_items)")
        by_id = self._index_items(items)
        check_annotator(annotator, "`annotator`")
        self.store = self._open_store(store)
        self.annotator = annotator
        self.blind = bool(blind)
        self._by_id = by_id
        #: The random sample people label first (None: no ``label_sample.json`` found).
        self.sample = _find_sample(labeled_set, self.store)
        if order is None:
            order = "sample" if self.sample is not None else "random"
        #: sampled item id -> its 1-based place in the sample (of the items given).
        self._in_sample: dict[str, int] = {} if self.sample is None else {
            iid: k for k, iid in enumerate((i for i in self.sample.item_ids if i in by_id), 1)}
        if isinstance(order, str) and order == "sample":
            order = self._sample_order(list(by_id), seed)
        self.order: list[str] = self._make_order(list(by_id), order, seed)
        self._verdicts = _normalize_verdicts(getattr(verdicts, "verdicts", verdicts))
        self._judge_name = getattr(verdicts, "judge_name", "") or ""
        # latest record of this annotator per item id (skip included; undo lines removed)
        self._latest: dict[str, LabelRecord] = {}
        self.refresh()
        self._undo: list[tuple[str, LabelRecord | None]] = []
        self.position = self._next_open(-1, self._latest)

    def _sample_order(self, ids: list[str], seed: int) -> list[str]:
        """The sampled items (those given) in the sample's order, then the rest shuffled."""
        if self.sample is None:
            raise ValueError("`order='sample'` needs the random sample `maev sample` draws: no "
                             "label_sample.json in the labeled set or next to the store's "
                             "labels.jsonl (draw one with `maev sample SET --n 40`)")
        first = list(self._in_sample)
        rest = [i for i in ids if i not in self._in_sample]
        random.Random(seed).shuffle(rest)
        return first + rest

    def sample_position(self, item_id: str | None = None) -> int | None:
        """The item's 1-based place in the random sample (default: the current item); None
        when it is outside the sample or the session does not follow one."""
        iid = self._iid(item_id)
        return None if iid is None else self._in_sample.get(iid)

    def _sample_mark(self, item_id: str) -> bool | None:
        """What a label written now says of the sample: in it or not (None: no sample)."""
        return None if self.sample is None else item_id in self._in_sample

    @property
    def sample_size(self) -> int:
        """How many of the session's items are in the random sample it follows (0: none)."""
        return len(self._in_sample)

    @staticmethod
    def _make_order(ids: list[str], order: Any, seed: int) -> list[str]:
        if isinstance(order, str):
            if order == "given":
                return ids
            if order == "random":
                out = list(ids)
                random.Random(seed).shuffle(out)
                return out
            raise ValueError(f"`order` must be 'random', 'given' or a list of item ids; got "
                             f"{order!r}")
        if hasattr(order, "columns"):  # a DataFrame, e.g. from next_items_to_label
            if "item_id" not in order.columns:
                raise ValueError("`order` is a DataFrame without an `item_id` column")
            order = order["item_id"]
        out = [str(x) for x in order]
        known = set(ids)
        unknown = [i for i in out if i not in known]
        if unknown:
            raise ValueError(f"`order` names {len(unknown)} item id(s) not in `items`, e.g. "
                             f"{unknown[0]!r}")
        if len(set(out)) != len(out):
            raise ValueError("`order` lists an item id twice")
        if not out:
            raise ValueError("`order` is an empty list: nothing to label")
        return out

    def _apply(self, rec: LabelRecord) -> None:
        if rec.item_id not in self._by_id:
            return
        if rec.source == UNDO_SOURCE and rec.label == "skip":
            self._latest.pop(rec.item_id, None)
        else:
            self._latest[rec.item_id] = rec

    def refresh(self) -> None:
        """Re-read this annotator's labels from the store (e.g. written by another process).

        The position stays; :meth:`progress` and :meth:`label_of` reflect the file.
        """
        self._latest = {}
        for rec in self.store.labels(annotator=self.annotator):
            self._apply(rec)

    # ---------------------------------------------------------------- state
    def label_of(self, item_id: str | None = None) -> LabelRecord | None:
        """This annotator's latest label of an item (default: the current item)."""
        iid = self._iid(item_id)
        return self._latest.get(iid) if iid is not None else None

    def labels(self) -> dict[str, LabelRecord]:
        """This annotator's latest label per item id (items of this session only)."""
        return dict(self._latest)

    def progress(self) -> dict[str, int]:
        """``done`` (items with a label, skip included), ``total`` and the count per label."""
        counts: Counter[str] = Counter(r.label for r in self._latest.values())
        return {"done": len(self._latest), "total": len(self.order),
                **{lab: counts.get(lab, 0) for lab in LABEL_VALUES}}

    def verdict(self, item_id: str | None = None) -> ShownVerdict | None:
        """The judge's verdict on an item — only once the annotator has labeled it (if blind).

        None when no verdict was given for the item, or the item is unlabeled and the session
        is blind.
        """
        iid = self._iid(item_id)
        if iid is None:
            return None
        v = self._verdicts.get(iid)
        if v is None:
            return None
        if self.blind and iid not in self._latest:
            return None
        return ShownVerdict(v.item_id, v.label, v.rationale, v.error, self._judge_name)

    def has_verdict(self, item_id: str | None = None) -> bool:
        """Whether a verdict exists for the item (without revealing it)."""
        iid = self._iid(item_id)
        return iid is not None and iid in self._verdicts

    # ---------------------------------------------------------------- actions
    def label(self, value: str, *, note: str = "") -> LabelRecord:
        """Label the current item, write it to the store (fsync-ed), move to the next unlabeled.

        Raises
        ------
        ValueError
            When ``value`` is not a label, or every item is done (go back with
            :meth:`previous` to relabel).
        """
        if value not in LABEL_VALUES:
            raise ValueError(f"`value` must be one of {', '.join(LABEL_VALUES)}; got {value!r}")
        if self.done:
            raise ValueError("every item is done; call previous() to go back to one")
        iid = self.order[self.position]
        before = self._latest.get(iid)
        rec = self.store.add(iid, value, annotator=self.annotator, note=note,
                             in_sample=self._sample_mark(iid))
        self._latest[iid] = rec
        self._undo.append((iid, before))
        self.position = self._next_open(self.position, self._latest)
        return rec

    def go_to(self, item_id: str) -> Any:
        """Jump to an item by id."""
        if item_id not in self._by_id:
            raise KeyError(f"no item {item_id!r} in this session")
        if item_id not in self.order:
            raise KeyError(f"item {item_id!r} is not in this session's `order`")
        self.position = self.order.index(item_id)
        return self.current

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    def undo(self) -> Any | None:
        """Undo this session's last label and go back to that item; returns it.

        The store is append-only, so undo appends a line: the earlier label again, or — when
        the item had none — a ``skip`` with ``source="undo"``, which counts as no label.
        Returns None (and does nothing) when there is nothing to undo.
        """
        if not self._undo:
            return None
        iid, before = self._undo.pop()
        if before is None:
            self.store.add(iid, "skip", annotator=self.annotator, source=UNDO_SOURCE)
            self._latest.pop(iid, None)
        else:
            rec = self.store.add(iid, before.label, annotator=self.annotator, note=before.note,
                                 source=before.source, in_sample=before.in_sample)
            self._latest[iid] = rec
        self.position = self.order.index(iid)
        return self.current
