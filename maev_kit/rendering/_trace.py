"""HTML for traces and retention items — plain strings, no widget library.

Both render the conversation view judges read (:func:`maev_kit.traces.conversation_view`),
entry by entry and by kind: user text, agent text, tool calls (a monospaced "call" row: the
tool's name and arguments), tool results (a "result" row, never drawn as the agent speaking)
and handoffs with the context they passed. Each entry carries an anchor
(:func:`entry_anchor`, ``id="t5-p1"``) and, given a verdict's evidence span, the exact
characters it names are wrapped in ``<mark class="evidence ...">`` — so what a page shows and
what a verdict rests on cannot silently differ. In a retention item the receiving agent's
entries are the evidence; the user's and other agents' are marked as context.

Every piece of trace text (messages, agent ids, context keys and values, tool names and
arguments, tool results, facts, rationales) goes through :func:`maev_kit.rendering.esc` before it
reaches the page: trace text is untrusted, and the notebook's HTML output runs scripts and
``onerror`` handlers.

This module is the entry point other code imports from (every name it used to define is
re-exported here) and registers :func:`trace_html` as the trace's HTML view; the parts live
beside it: ``_trace_style`` (CSS, palette, label colours), ``_trace_entries`` (fact terms and
highlighting, entry anchors, evidence spans, one entry's HTML), ``_trace_checks`` (contract,
expectation and loop problems), ``_trace_timeline`` (:func:`trace_html`) and ``_trace_item``
(:func:`item_html`).
"""

from __future__ import annotations

from maev_kit.rendering._trace_entries import (
    ENTRY_KIND_NAMES, anchor_prefix, entry_anchor, entry_anchors, entry_html,
    evidence_excerpt_html, fact_terms, find_entry, span_of,
)
from maev_kit.rendering._trace_item import SILENT_RECEIVER_NOTE, item_html
from maev_kit.rendering._trace_style import (
    DEFAULT_PAGE_SIZE, LABEL_COLORS, PALETTE, TRACE_CSS, agent_colors, entry_css,
)
from maev_kit.rendering._trace_timeline import trace_events, trace_html
from maev_kit.traces.internal import register_html_view

__all__ = ["DEFAULT_PAGE_SIZE", "ENTRY_KIND_NAMES", "PALETTE", "agent_colors", "anchor_prefix",
           "entry_anchor", "entry_anchors", "entry_css", "entry_html", "evidence_excerpt_html",
           "fact_terms", "find_entry", "item_html", "trace_html"]


# ``MultiAgentTrace._repr_html_`` draws with this view: the model asks, never imports it.
register_html_view(trace_html)
