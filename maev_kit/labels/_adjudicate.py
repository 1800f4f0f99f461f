"""Adjudication: the items annotators disagree on, and the label an adjudicator settles on.

A settled label is its own kind of label line: ``source="adjudicated"``, ``annotator`` the
adjudicator, appended to the same store as everyone's labels (append-only; the latest
settled line of an item wins). Annotators' own labels are never changed. The
:class:`~maev_kit.widgets.Adjudicator` widget is a view over :class:`AdjudicationSession`.
"""

from __future__ import annotations

import os
from collections.abc import Container, Sequence
from dataclasses import dataclass, field
from typing import Any

from maev_kit.labels._plan import SessionPlan, _records_of, annotator_labels
from maev_kit.labels._queue import ItemQueue
from maev_kit.labels._records import LabelRecord, check_annotator
from maev_kit.labels._store import LabelStore

__all__ = ["ADJUDICATED_SOURCE", "AdjudicationSession", "Disagreement", "disagreements",
           "settled_human_labels", "settled_labels"]

#: ``source`` of a settled label line.
ADJUDICATED_SOURCE = "adjudicated"
#: The labels an adjudicator can settle on (``skip`` is no settled label).
SETTLE_VALUES = ("retained", "lost", "contradicted")


@dataclass(frozen=True)
class Disagreement:
    """An item whose annotators' latest labels differ: each one's record (label and note)."""

    item_id: str
    records: dict[str, LabelRecord] = field(default_factory=dict)

    @property
    def labels(self) -> dict[str, str]:
        """annotator → label."""
        return {a: r.label for a, r in self.records.items()}


def disagreements(store_or_labels: Any, plan: SessionPlan | None = None) -> list[Disagreement]:
    """Items whose annotators' latest labels differ (two or more different labels).

    ``store_or_labels``: a LabelStore, a ``labels.jsonl`` path, a store URL, or LabelRecords.
    Settled (``adjudicated``) and ``gold`` lines are not an annotator's label; ``skip`` is no
    label. With a ``plan``, only the plan's items and, on each, only the annotators it was
    assigned to count, in the plan's order; else items in the order of their first label.

    >>> recs = [LabelRecord(item_id="i1", annotator="ana", label="lost"),
    ...         LabelRecord(item_id="i1", annotator="ben", label="retained"),
    ...         LabelRecord(item_id="i2", annotator="ana", label="lost"),
    ...         LabelRecord(item_id="i2", annotator="ben", label="lost")]
    >>> [(d.item_id, d.labels) for d in disagreements(recs)]
    [('i1', {'ana': 'lost', 'ben': 'retained'})]
    """
    by_item: dict[str, dict[str, LabelRecord]] = {}
    for (iid, ann), rec in annotator_labels(store_or_labels).items():
        if plan is not None and ann not in plan.annotators_of(iid):
            continue
        by_item.setdefault(iid, {})[ann] = rec
    order = plan.item_ids if plan is not None else list(by_item)
    out = []
    for iid in order:
        recs = by_item.get(iid, {})
        if len({r.label for r in recs.values()}) > 1:
            out.append(Disagreement(iid, dict(sorted(recs.items()))))
    return out


def settled_records(store_or_labels: Any) -> dict[str, LabelRecord]:
    """The latest settled line per item (any adjudicator)."""
    out: dict[str, LabelRecord] = {}
    for r in _records_of(store_or_labels):
        if r.source == ADJUDICATED_SOURCE:
            out[r.item_id] = r
    return {k: v for k, v in out.items() if v.label != "skip"}


def settled_labels(store_or_labels: Any) -> dict[str, str]:
    """``{item_id: settled label}``: the latest adjudicated label of each item."""
    return {iid: r.label for iid, r in settled_records(store_or_labels).items()}


def settled_human_labels(store_or_labels: Any, *, name: str = "settled"
                         ) -> dict[str, dict[str, str]]:
    """The settled labels as ``{item_id: {name: label}}``: the ``human_labels`` of
    :func:`~maev_kit.calibration.calibrate` (judge vs settled labels)."""
    return {iid: {name: lab} for iid, lab in settled_labels(store_or_labels).items()}


class AdjudicationSession(ItemQueue):
    """Settle the items annotators disagree on, one at a time.

    Parameters
    ----------
    items : sequence of RetentionItem
        The items (anything with ``item_id``); those with a disagreement form the queue, in
        the plan's order (or ``items``' order without a plan).
    store : LabelStore, path or URL
        The store everyone labels into; settled labels are appended to it.
    adjudicator : str
        Who settles. Must not be one of the annotators of a queued item: each store keeps
        the latest label per (item, name), so the settled line would hide their own label
        from readers that do not know about adjudication; use e.g. ``"ana.adjudicator"``.
    plan : SessionPlan, optional
        Only the planned annotators of each item count (see :func:`disagreements`).

    The session resumes at the first item not settled yet.
    """

    def __init__(self, items: Sequence[Any], store: LabelStore | str | os.PathLike[str],
                 adjudicator: str, *, plan: SessionPlan | None = None):
        check_annotator(adjudicator, "`adjudicator`")
        self.store = self._open_store(store)
        self.adjudicator = adjudicator
        self.plan = plan
        self._by_id = self._index_items(items)
        self._disagreements: dict[str, Disagreement] = {}
        self._settled: dict[str, LabelRecord] = {}
        self.order: list[str] = []
        self.position = 0
        self.refresh()
        clash = [iid for iid in self.order if adjudicator in self._disagreements[iid].records]
        if clash:
            raise ValueError(f"`adjudicator` {adjudicator!r} labeled {len(clash)} of the "
                             f"items to settle (e.g. {clash[0]!r}); settle under another name, "
                             f"e.g. {adjudicator + '.adjudicator'!r}, so both labels are kept")
        self.position = self._next_open(-1, self._settled)

    def refresh(self) -> None:
        """Re-read the store: the queue (new disagreements) and the settled labels."""
        records = _records_of(self.store)
        found = disagreements(records, self.plan)
        if self.plan is None:
            rank = {iid: i for i, iid in enumerate(self._by_id)}
            found.sort(key=lambda d: rank.get(d.item_id, len(rank)))
        self._disagreements = {d.item_id: d for d in found if d.item_id in self._by_id}
        current = None if self.done else self.order[self.position]
        self.order = list(self._disagreements)
        self._settled = settled_records(records)
        if current is not None and current in self.order:
            self.position = self.order.index(current)
        self.position = min(self.position, len(self.order))

    # ------------------------------------------------------------ state
    def _known(self) -> tuple[Container[str], str]:
        return self._disagreements, "to settle in this session"

    def disagreement(self, item_id: str | None = None) -> Disagreement | None:
        """Every annotator's label and note on an item (default: the current one)."""
        iid = self._iid(item_id)
        return None if iid is None else self._disagreements[iid]

    def settled(self, item_id: str | None = None) -> LabelRecord | None:
        """The settled label line of an item (default: the current one), or None."""
        iid = self._iid(item_id)
        return None if iid is None else self._settled.get(iid)

    def progress(self) -> dict[str, int]:
        """``settled`` and ``total`` items of the queue."""
        return {"settled": sum(1 for iid in self.order if iid in self._settled),
                "total": len(self.order)}

    # ------------------------------------------------------------ actions
    def settle(self, label: str, *, note: str = "") -> LabelRecord:
        """Settle the current item (appended, durable), then move to the next unsettled one."""
        if label not in SETTLE_VALUES:
            raise ValueError(f"`label` must be one of {', '.join(SETTLE_VALUES)}; "
                             f"got {label!r}")
        if self.done:
            raise ValueError("every item is done; call previous() to go back to one")
        iid = self.order[self.position]
        rec = self.store.add(iid, label, annotator=self.adjudicator, note=note,
                             source=ADJUDICATED_SOURCE)
        self._settled[iid] = rec
        self.position = self._next_open(self.position, self._settled)
        return rec

    def go_to(self, item_id: str) -> Any:
        self.position = self.order.index(self._iid(item_id) or "")
        return self.current
