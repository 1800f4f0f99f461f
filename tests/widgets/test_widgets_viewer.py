"""TraceViewer and show(): built headless, paged with its buttons."""

from __future__ import annotations

import ipywidgets as widgets
import pytest

import maev_kit
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
from maev_kit.widgets import TraceViewer, show


def long_trace(n=1000):
    turns = [AgentTurn(f"agent{i % 4}", "r", f"message {i} <script>x</script>", turn_index=2 * i)
             for i in range(n)]
    handoffs = [Handoff(f"agent{i % 4}", f"agent{(i + 1) % 4}", None, {"k": i}, 2 * i + 1)
                for i in range(0, n, 50)]
    return MultiAgentTrace("long", turns=turns, handoffs=handoffs)


def test_viewer_pages_through_a_long_trace():
    t = long_trace()
    v = TraceViewer(t, page_size=200)
    assert isinstance(v, widgets.VBox)
    assert v.n_pages == 6 and v.page == 0  # 1,000 turns + 20 handoffs
    assert "message 0 " in v.body.value and "message 250 " not in v.body.value
    assert "<script>" not in v.body.value.replace("<style>", "")
    assert v.prev_button.disabled and not v.next_button.disabled
    v.next_button.click()
    assert v.page == 1 and "page 2 of 6" == v.page_label.value
    assert "message 200 " in v.body.value
    for _ in range(10):
        v.next_button.click()
    assert v.page == 5 and v.next_button.disabled
    v.prev_button.click()
    assert v.page == 4
    v.show_page(v.page_of_handoff(10))
    assert 'data-handoff="10"' in v.body.value


def test_short_trace_hides_the_pager(sample_trace):
    v = TraceViewer(sample_trace, facts=["Error code is E42"])
    assert v.n_pages == 1 and v.children[0].layout.display == "none"
    assert "E42" in v.body.value


def test_viewer_rejects_non_traces():
    with pytest.raises(TypeError, match="`trace` must be a MultiAgentTrace"):
        TraceViewer({"conversation_id": "c"})
    with pytest.raises(ValueError, match="`page_size`"):
        TraceViewer(long_trace(3), page_size=0)


def test_show_and_repr_html(sample_trace):
    v = show(sample_trace)  # outside IPython: returned, not displayed
    assert isinstance(v, TraceViewer)
    assert maev_kit.show is show
    assert "triage" in sample_trace._repr_html_()
