"""Retention items: which key facts should survive each handoff, and where the evidence is."""

from maev_kit.retention._items import (
    LABELS,
    EvidenceSpan,
    RetentionItem,
    build_retention_items,
    context_values,
    derive_facts,
    fact_hops,
    hop_order,
    is_free_text,
    item_id,
    locate,
)

__all__ = ["LABELS", "EvidenceSpan", "RetentionItem", "build_retention_items", "context_values",
           "derive_facts", "fact_hops", "hop_order", "is_free_text", "item_id", "locate"]
