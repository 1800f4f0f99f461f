"""Retention items: which key facts should survive each handoff."""

from maev_kit.retention._items import (
    LABELS,
    RetentionItem,
    build_retention_items,
    derive_facts,
    item_id,
)

__all__ = ["LABELS", "RetentionItem", "build_retention_items", "derive_facts", "item_id"]
