"""The trace and item HTML of the widgets; it lives in :mod:`maev_kit.rendering` (shared with the
report), re-exported here for the widgets."""

from maev_kit.rendering.internal import (  # noqa: F401
    DEFAULT_PAGE_SIZE,
    LABEL_COLORS,
    PALETTE,
    trace_events,
    agent_colors,
    fact_terms,
    item_html,
    trace_html,
)


def status_html(text: str, *, error: bool = False) -> str:
    """A widget's status line: green when saved, red when not (escaped; "" clears it)."""
    from maev_kit.rendering import esc

    color = "#cf222e" if error else "#1a7f37"
    return f'<span style="color:{color};font-size:12.5px">{esc(text)}</span>' if text else ""
