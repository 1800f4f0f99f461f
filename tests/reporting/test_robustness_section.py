"""The report's Judge robustness section: the flip rates, and every flip linked to its item,
all of it escaped."""

from __future__ import annotations

import re

from maev_kit.calibration import calibrate
from maev_kit.judges import HeuristicJudge, Verdict
from maev_kit.reporting import report
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message

from ._factories import make_evaluation

XSS = "<script>alert('x')</script>"


class ObeysTheEvaluator:
    """The heuristic, except that a window speaking to the evaluator is always retained."""

    name, version, offline = "obliging", "1", True

    def judge_items(self, items):
        base = HeuristicJudge().judge_items(items)
        return [Verdict(it.item_id, "retained") if any("evaluator" in m.content or "grader" in
                                                        m.content or "judge" in m.content
                                                        for m in it.window) else v
                for it, v in zip(items, base)]


def _items():
    said = ["Refund for ACCT-1001 started.", f"Which account is it? {XSS}",
            "I see ACCT-9999 here.", "Your account ACCT-1004 is fine.",
            f"Can you repeat the account number? {XSS}", "ACCT-1006 is refunded."]
    return [RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1",
                          f"The account number is ACCT-{1001 + i}", (),
                          (Message("billing", s, 2),), "triage", "billing")
            for i, s in enumerate(said)]


def test_flips_are_listed_linked_and_escaped():
    items = _items()
    labels = [{"item_id": it.item_id, "annotator": "ana", "label": lab}
              for it, lab in zip(items, ["retained", "lost", "contradicted", "retained", "lost",
                                         "retained"])]
    cal = calibrate(items, labels, judges=[ObeysTheEvaluator()], progress=False, cache=False,
                    n_resamples=200, probes=["injection", "padding"])
    r = cal.probes["obliging"]["injection"]
    assert sorted(r.flipped) == ["c1/h0/f1", "c2/h0/f1", "c4/h0/f1"]
    page = report(make_evaluation(6), calibration=cal).html
    section = page[page.index('id="robustness"'):]
    assert "Judge robustness" in page and "injection" in section
    for item_id in r.flipped:
        anchor = "probe-obliging-injection-" + re.sub(r"[^A-Za-z0-9_-]+", "-", item_id)
        assert f'href="#{anchor}"' in section and f'id="{anchor}"' in section
    assert "<script>" not in page and "&lt;script&gt;" in section
    assert "0.500" in section  # 3 flips of 6 items


def test_no_section_without_probes():
    items = _items()
    labels = [{"item_id": it.item_id, "annotator": "ana", "label": "retained" if i % 2 else
               "lost"} for i, it in enumerate(items)]
    cal = calibrate(items, labels, judges=["heuristic"], progress=False, cache=False,
                    n_resamples=200)
    assert 'id="robustness"' not in report(make_evaluation(6), calibration=cal).html
