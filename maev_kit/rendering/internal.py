"""The seam of :mod:`maev_kit.rendering` for the other packages of maev_kit (not part of the user API):
the trace timeline and retention-item renderers (:mod:`._trace`), the value formatting of
calibration tables (:mod:`._values`) and the prompt comparison (:mod:`._prompts`) that both views
(:mod:`maev_kit.widgets`, :mod:`maev_kit.reporting`) draw, and the root package registers as a
trace's HTML view.
"""

from __future__ import annotations

from maev_kit.rendering._prompts import (
    PROMPT_CSS,
    changed_rows_html,
    comparison_summary_html,
    prompt_diff_html,
)
from maev_kit.rendering._trace import (
    DEFAULT_PAGE_SIZE,
    LABEL_COLORS,
    PALETTE,
    TRACE_CSS,
    agent_colors,
    anchor_prefix,
    entry_anchors,
    entry_css,
    entry_html,
    evidence_excerpt_html,
    fact_terms,
    find_entry,
    item_html,
    span_of,
    trace_events,
    trace_html,
)
from maev_kit.rendering._values import ceiling, judge_label, key_label, num

__all__ = ["DEFAULT_PAGE_SIZE", "LABEL_COLORS", "PALETTE", "PROMPT_CSS", "TRACE_CSS",
           "agent_colors", "anchor_prefix", "ceiling", "changed_rows_html",
           "comparison_summary_html", "entry_anchors", "entry_css", "entry_html",
           "evidence_excerpt_html", "fact_terms", "find_entry", "item_html", "judge_label",
           "key_label", "num", "prompt_diff_html", "span_of", "trace_events", "trace_html"]
