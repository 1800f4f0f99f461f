"""A position over an ordered queue of items: what a labeling and an adjudication session
share (the items by id, the store they write to, moving through the queue)."""

from __future__ import annotations

import os
from collections.abc import Container, Sequence
from typing import Any

from maev_kit.labels._store import LabelStore

__all__ = ["ItemQueue"]


class ItemQueue:
    """``order`` (item ids) with a ``position`` in it; ``current`` is the item there, and a
    position past the last item means done."""

    order: list[str]
    position: int
    _by_id: dict[str, Any]

    @staticmethod
    def _index_items(items: Sequence[Any]) -> dict[str, Any]:
        """The items by ``item_id``, in order; an item without one, or an id twice, refused."""
        by_id: dict[str, Any] = {}
        for i, it in enumerate(items):
            iid = getattr(it, "item_id", None)
            if not isinstance(iid, str):
                raise TypeError(f"`items[{i}]` has no `item_id`: expected a RetentionItem, got "
                                f"{type(it).__name__}")
            if iid in by_id:
                raise ValueError(f"`items` has item_id {iid!r} twice; item ids must be unique")
            by_id[iid] = it
        return by_id

    @staticmethod
    def _open_store(store: LabelStore | str | os.PathLike[str]) -> LabelStore:
        """``store``, or the store a path (labels.jsonl) or a store URL names."""
        if isinstance(store, (str, os.PathLike)):
            store = LabelStore(store)
        if not isinstance(store, LabelStore):
            raise TypeError(f"`store` must be a LabelStore, a labels.jsonl path or a store "
                            f"URL, got {type(store).__name__}")
        return store

    def _next_open(self, after: int, finished: Container[str]) -> int:
        """The first position after ``after`` whose item is not ``finished``, wrapping round
        to the start (``after`` itself last); ``len(order)`` when every item is."""
        n = len(self.order)
        for p in [*range(after + 1, n), *range(0, min(after + 1, n))]:
            if self.order[p] not in finished:
                return p
        return n

    def _iid(self, item_id: str | None) -> str | None:
        """``item_id`` checked against the items this queue may show (default: the current
        one; None when done)."""
        if item_id is None:
            return None if self.done else self.order[self.position]
        known, where = self._known()
        if item_id not in known:
            raise KeyError(f"no item {item_id!r} {where}")
        return item_id

    def _known(self) -> tuple[Container[str], str]:
        """The ids :meth:`_iid` accepts, and how a missing one is described."""
        return self._by_id, "in this session"

    def __len__(self) -> int:
        return len(self.order)

    @property
    def done(self) -> bool:
        """True once the position is past the last item (everything seen)."""
        return self.position >= len(self.order)

    @property
    def current(self) -> Any | None:
        """The item on screen, or None when done."""
        return None if self.done else self._by_id[self.order[self.position]]

    def next(self) -> Any | None:
        """Move one item forward (past the last item means done); returns the current item."""
        self.position = min(self.position + 1, len(self.order))
        return self.current

    def previous(self) -> Any | None:
        """Move one item back; returns the current item."""
        self.position = max(self.position - 1, 0)
        return self.current
