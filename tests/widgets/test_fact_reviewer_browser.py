"""FactReviewer: in the kernel (no browser), and in a real JupyterLab in headless Chromium.

The browser test reuses the JupyterLab fixture and helpers of the Labeler's browser test; it
skips only when the browser is missing and neither ``CI`` nor ``MAEV_REQUIRE_BROWSER`` is set.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maev_kit.expectations import load_expectations
from maev_kit.facts._model import fact_id_for

from .test_widgets_browser import (  # noqa: F401 - jupyterlab is a fixture
    ARTIFACTS,
    NOTEBOOK,
    XSS,
    _wait_lines,
    jupyterlab,
    notebook_page,
)

DATA_CODE = f"""\
from maev_kit.facts import ProposedFact, fact_id_for
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace

traces = [
    MultiAgentTrace("c-001",
        user_messages=["Hi, I'm Dana. Account ACCT-4471 was charged $120 twice. "
                       "Email me at dana@example.com"],
        turns=[AgentTurn("triage", "router", {XSS!r} + " Passing you to billing.", turn_index=1)],
        handoffs=[Handoff("triage", "billing", turn_index=2)]),
    MultiAgentTrace("c-002", user_messages=["Order #5512 never arrived."],
        turns=[AgentTurn("triage", "router", "Shipping will help.", turn_index=1)],
        handoffs=[Handoff("triage", "shipping", turn_index=2)]),
]

def fact(cid, text, value, kind):
    return ProposedFact(cid, 0, fact_id_for(0, text), text, value, kind, 0, "offline")

proposals = [fact("c-001", "Account is ACCT-4471", "ACCT-4471", "identifier"),
             fact("c-001", "Charged $120 twice", "$120", "money"),
             fact("c-002", "Order is #5512", "#5512", "identifier")]
"""

WIDGET_CODE = """\
from maev_kit.widgets import FactReviewer

reviewer = FactReviewer(traces, proposals, "fact_reviews.jsonl", reviewer="ana")
reviewer
"""

EXPORT_CODE = 'reviewer.session.export_expectations("expectations.jsonl")\n'

ACCOUNT = fact_id_for(0, "Account is ACCT-4471")
CHARGED = fact_id_for(0, "Charged $120 twice")
ADDED_TEXT = "Contact email is dana@example.com"
ADDED = fact_id_for(0, ADDED_TEXT)


def _data() -> dict:
    scope: dict = {}
    exec(DATA_CODE, scope)  # the same traces and proposals the notebook builds
    return scope


def _cell(cid: str, source: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "id": cid, "metadata": {},
            "outputs": [], "source": source}


# ---------------------------------------------------------------- in the kernel, no browser
def test_widget_keys_decide_through_the_session(tmp_path):
    from maev_kit.widgets import FactReviewer

    d = _data()
    path = tmp_path / "fact_reviews.jsonl"
    w = FactReviewer(d["traces"], d["proposals"], path, reviewer="ana")
    html = w.handoff_view.value
    assert "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;" in html
    assert "<img" not in html and "judge" not in html.lower()
    assert '<mark class="focus">ACCT-4471</mark>' in html and "<mark>$120</mark>" in html
    w.press("ArrowDown")
    assert '<mark class="focus">$120</mark>' in w.handoff_view.value
    w.press("ArrowUp")
    w.press("a")
    w.press("r")
    w.press("n")
    assert w.mode == "add"
    w.fact_text.value = ADDED_TEXT[:3]  # what had synced when Enter was pressed
    w._on_key_msg(w.key_handler, {"type": "submit", "fields": {
        w.fact_text.placeholder: ADDED_TEXT, w.fact_value.placeholder: "dana@example.com"}}, [])
    assert w.mode is None and w.fact_text.value == ""
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(x["decision"], x["fact_id"]) for x in lines] == [
        ("accept", ACCOUNT), ("reject", CHARGED), ("add", ADDED)]
    # the added fact is focused (nothing left to decide here), its value marked
    assert '<mark class="focus">dana@example.com</mark>' in w.handoff_view.value
    assert "3 of 4 facts reviewed" in w.progress_text.value
    w.press("e")  # the focus stays on the last decided fact: the added one
    assert w.mode == "edit" and w.fact_text.value == ADDED_TEXT
    w.fact_text.value = ""
    w.submit()
    assert "NOT saved" in w.status.value and len(path.read_text().splitlines()) == 3
    w.press("ArrowRight")
    assert w.mode is None and "c-002" in w.handoff_view.value
    w.press("u")  # back to c-001, the added fact gone
    assert "c-001" in w.handoff_view.value and ADDED_TEXT not in w.handoff_view.value
    with pytest.raises(ValueError, match="`key` must be one of"):
        w.press("1")
    with pytest.raises(TypeError, match="not both"):
        FactReviewer(w.session, d["proposals"])


# ---------------------------------------------------------------- a real JupyterLab
@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_review_facts_in_jupyterlab(jupyterlab):
    root: Path = jupyterlab["root"]
    nb = {"cells": [_cell("reviewer", DATA_CODE + WIDGET_CODE), _cell("export", EXPORT_CODE)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                      "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (root / "review.ipynb").write_text(json.dumps(nb))
    decisions = root / "fact_reviews.jsonl"
    ARTIFACTS.mkdir(exist_ok=True)
    with notebook_page(jupyterlab, "review.ipynb") as page:
        # run the first cell only: the export cell runs after the review
        page.evaluate(f"() => {{ {NOTEBOOK}.content.activeCellIndex = 0;"
                      " return window.jupyterapp.commands.execute('notebook:run-cell'); }")
        reviewer = page.locator(".maev-fact-reviewer")
        reviewer.wait_for(state="visible", timeout=90_000)
        page.locator(".maev-keys-hint").wait_for(state="visible", timeout=30_000)
        # the hostile message is on screen as text, and did not run
        assert 'onerror="window.__xss=1"' in reviewer.inner_text()
        assert page.evaluate("() => typeof window.__xss") == "undefined"
        # each proposed fact's span is highlighted in the message it came from
        marks = reviewer.locator("mark")
        assert sorted(marks.all_inner_texts()) == ["$120", "ACCT-4471"]
        assert reviewer.locator("mark.focus").inner_text() == "ACCT-4471"

        # the mouse: accept the focused fact
        reviewer.get_by_role("button", name="accept", exact=True).click()
        lines = _wait_lines(decisions, 1)
        assert (lines[0]["decision"], lines[0]["fact_id"]) == ("accept", ACCOUNT)
        page.get_by_text(f"saved ✓ accept {ACCOUNT}").wait_for(timeout=30_000)
        assert reviewer.locator("mark.focus").inner_text() == "$120"

        # the keyboard: r rejects the next fact (the focus is on a button inside)
        page.keyboard.press("r")
        lines = _wait_lines(decisions, 2)
        assert (lines[1]["decision"], lines[1]["fact_id"]) == ("reject", CHARGED)
        page.get_by_text(f"saved ✓ reject {CHARGED}").wait_for(timeout=30_000)

        # n opens the text fields; typing letters there is text, Enter saves
        page.keyboard.press("n")
        page.get_by_text("new fact", exact=True).wait_for(timeout=30_000)
        text = reviewer.get_by_placeholder("fact text")
        text.click()
        text.press_sequentially(ADDED_TEXT)
        value = reviewer.get_by_placeholder("value: its exact words")
        value.click()
        value.press_sequentially("dana@example.com")
        value.press("Enter")
        lines = _wait_lines(decisions, 3)
        assert (lines[2]["decision"], lines[2]["fact_id"], lines[2]["text"],
                lines[2]["value"]) == ("add", ADDED, ADDED_TEXT, "dana@example.com")
        assert all(x["reviewer"] == "ana" for x in lines)
        page.get_by_text(f"saved ✓ add {ADDED}").wait_for(timeout=30_000)
        reviewer.locator("mark", has_text="dana@example.com").wait_for(timeout=30_000)
        page.get_by_text("3 of 4 facts reviewed", exact=False).wait_for(timeout=30_000)
        reviewer.screenshot(path=str(ARTIFACTS / "fact-reviewer.png"))

        # → moves to the next handoff (a click on the reviewer gives it the keyboard)
        reviewer.locator(".maev-fr .hdr").click()
        page.keyboard.press("ArrowRight")
        page.get_by_text("c-002 · handoff 0", exact=False).wait_for(timeout=30_000)
        assert reviewer.locator("mark").all_inner_texts() == ["#5512"]

        # none of the keys reached JupyterLab (a: insert cell, r: raw cell, n, e, ...)
        assert page.evaluate(f"() => {NOTEBOOK}.content.widgets.length") == 2
        assert page.evaluate(f"() => {NOTEBOOK}.content.widgets[0].model.type") == "code"
        assert page.evaluate("() => typeof window.__xss") == "undefined"
        assert len(_wait_lines(decisions, 3)) == 3

        page.evaluate(f"() => {{ {NOTEBOOK}.content.activeCellIndex = 1;"
                      " return window.jupyterapp.commands.execute('notebook:run-cell'); }")
        exported = root / "expectations.jsonl"
        page.wait_for_function(
            f"() => {NOTEBOOK}.content.widgets[1].model.executionCount !== null",
            timeout=60_000)

    exp = load_expectations(exported)
    assert list(exp) == ["c-001"]  # c-002 was not reviewed
    assert [(k.fact_id, k.text) for k in exp["c-001"].key_facts] == [
        (ACCOUNT, "Account is ACCT-4471"), (ADDED, ADDED_TEXT)]
    assert exp["c-001"].metadata["fact_proposers"] == {ACCOUNT: "offline", ADDED: "reviewer"}
    from maev_kit.retention import build_retention_items

    items = build_retention_items(_data()["traces"], exported)
    assert sorted(i.item_id for i in items) == sorted(
        [f"c-001/h0/{ACCOUNT}", f"c-001/h0/{ADDED}"])
