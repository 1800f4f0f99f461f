"""Retention items: which key facts should survive each handoff, and where the evidence is."""

from maev_kit.retention._items import (
    LABELS,
    EvidenceSpan,
    RetentionItem,
    UnjudgedHandoff,
    build_retention_items,
    context_values,
    derive_facts,
    fact_hops,
    handover_payload,
    hop_order,
    is_free_text,
    item_id,
    locate,
    receiver_silent,
    silent_receivers,
    unjudged_handoffs,
)

__all__ = ["LABELS", "EvidenceSpan", "RetentionItem", "UnjudgedHandoff", "build_retention_items",
           "context_values", "derive_facts", "fact_hops", "handover_payload", "hop_order",
           "is_free_text", "item_id", "locate", "receiver_silent", "silent_receivers",
           "unjudged_handoffs"]
