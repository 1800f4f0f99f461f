"""The trace and item HTML of the widgets; it lives in :mod:`maev_kit._html` (shared with the
report), re-exported here for the widgets."""

from maev_kit._html._trace import (  # noqa: F401
    DEFAULT_PAGE_SIZE,
    LABEL_COLORS,
    PALETTE,
    _events,
    agent_colors,
    fact_terms,
    item_html,
    trace_html,
)
