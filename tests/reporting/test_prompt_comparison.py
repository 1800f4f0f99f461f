"""The report's prompt-comparison section: static (no scripts), escaped, with trace excerpts."""

from __future__ import annotations

import re

from maev_kit.evaluation import evaluate
from maev_kit.reporting import report
from tests.widgets.test_prompt_comparison import EVIL, LS, comparison


def test_report_gets_a_prompt_comparison_section():
    cmp, truth = comparison()
    ev = evaluate(LS, judge="heuristic", progress=False)
    html = report(ev, prompt_comparison=cmp).html
    assert 'id="prompts"' in html and 'href="#prompts"' in html
    assert "<script" not in html and EVIL not in html
    section = html[html.index('id="prompts"'):]
    section = section[:section.index("</section>")]
    assert "<ins>" in section and "McNemar" in section
    # support_desk's labels are reference labels written by the set's authors: never "human"
    assert cmp.labels_kind == "reference"
    assert "reference majority" in section and "human majority" not in section
    assert "— reference " in section and "— human " not in section
    # each changed item: its human label and the trace excerpt inline (fact and messages)
    row = cmp.changed.iloc[0]
    assert row["item_id"] in section
    assert section.count('<details><summary><span class="fixed">fixed</span>') == \
        len(cmp.changed) == cmp.n_fixed
    assert re.search(r'class="fact">[^<]*' + re.escape(row["fact"][:20].replace("'", "&#x27;")),
                     section)
    plain = report(ev).html
    assert 'id="prompts"' not in plain
