"""TraceViewer: a paginated, escaped view of one multi-agent conversation."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from maev_kit.widgets._render import DEFAULT_PAGE_SIZE, trace_events, trace_html

__all__ = ["TraceViewer", "show"]


class TraceViewer(widgets.VBox):
    """A conversation as a timeline: one lane and colour per agent, handoffs as markers.

    The conversation view judges read, entry by entry: agent and user text, tool calls,
    tool results and handoffs, each drawn by its kind. Long traces are paginated
    (``page_size`` entries per page) so a 1,000-turn trace builds in milliseconds and the page
    stays light. Every piece of trace text is HTML-escaped.

    Parameters
    ----------
    trace : MultiAgentTrace
    facts : list of KeyFact, RetentionItem or str, or ConversationExpectations, optional
        Key facts to highlight where stated (and, with ``verdicts``, where retained,
        re-asked or contradicted).
    verdicts : list of Verdict, JudgeRun or dict item_id -> label, optional
    contracts : ConversationExpectations, list of HandoffContract or dict, optional
        Required context keys; missing ones are shown in red on the handoff marker.
    page_size : int
        Entries of the conversation view per page.

    Examples
    --------
    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> t = MultiAgentTrace("c-1", turns=[AgentTurn("a", "r", f"m{i}", turn_index=i)
    ...                                   for i in range(450)])
    >>> v = TraceViewer(t)
    >>> v.n_pages, v.page
    (3, 0)
    >>> v.next_button.click(); v.page
    1
    """

    page: int  # (set in __init__, after the buttons that read it)

    def __init__(self, trace: Any, *, facts: Any = None, verdicts: Any = None,
                 contracts: Any = None, page_size: int = DEFAULT_PAGE_SIZE, **kwargs: Any):
        if not hasattr(trace, "timeline") or not hasattr(trace, "conversation_id"):
            raise TypeError(f"`trace` must be a MultiAgentTrace, got {type(trace).__name__} "
                            "(load one with maev_kit.load_traces)")
        if not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"`page_size` must be a positive integer, got {page_size!r}")
        self.trace = trace
        self.facts, self.verdicts, self.contracts = facts, verdicts, contracts
        self.page_size = page_size
        n = len(trace_events(trace))
        self.n_pages = max(1, -(-n // page_size))
        self.body = widgets.HTML()
        self.prev_button = widgets.Button(description="◀ previous", layout={"width": "110px"},
                                          tooltip="previous page")
        self.next_button = widgets.Button(description="next ▶", layout={"width": "110px"},
                                          tooltip="next page")
        self.page_label = widgets.Label()
        self.prev_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        nav = widgets.HBox([self.prev_button, self.page_label, self.next_button])
        if self.n_pages == 1:
            nav.layout.display = "none"
        super().__init__([nav, self.body], **kwargs)
        self.add_class("maev-trace-viewer")
        self.page = 0
        self.show_page(0)

    def show_page(self, page: int) -> None:
        """Show page ``page`` (0-based; clamped to the pages there are)."""
        page = max(0, min(int(page), self.n_pages - 1))
        self.page = page
        self.body.value = trace_html(self.trace, facts=self.facts, verdicts=self.verdicts,
                                     contracts=self.contracts, page=page,
                                     page_size=self.page_size)
        self.page_label.value = f"page {page + 1} of {self.n_pages}"
        self.prev_button.disabled = page == 0
        self.next_button.disabled = page >= self.n_pages - 1

    def page_of_handoff(self, handoff_index: int) -> int:
        """The page on which handoff ``handoff_index`` is drawn."""
        target = self.trace.handoffs[handoff_index]
        for i, (_, _, _, h) in enumerate(trace_events(self.trace)):
            if h is target:
                return i // self.page_size
        return 0  # pragma: no cover


def show(trace: Any, **kwargs: Any) -> TraceViewer | None:
    """Display a :class:`TraceViewer` of ``trace`` in the notebook.

    Keyword arguments go to :class:`TraceViewer` (``facts``, ``verdicts``, ``contracts``).
    In IPython the viewer is displayed and None returned (so it is not shown twice); outside
    IPython the viewer is returned.
    """
    viewer = TraceViewer(trace, **kwargs)
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        return viewer
    if get_ipython() is not None:
        display(viewer)
        return None
    return viewer
