"""Robustness probes: what each probe changes, that flips are counted as a direct re-judging
would count them, that failed calls are never flips, and that copies keep every fact value."""

from __future__ import annotations

import re

import pytest

from maev_kit.calibration import PROBES, probe_judge
from maev_kit.calibration._probes import Flip, perturb, wilson
from maev_kit.datasets import load_labeled_set
from maev_kit.errors import InputError
from maev_kit.judges import HeuristicJudge, Verdict
from maev_kit.judges._heuristic import value_mentions
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message

_ADDRESSED = re.compile(r"\b(?:evaluator|grader|judge)\b", re.I)


@pytest.fixture(scope="module")
def items():
    return load_labeled_set("support_desk").items_in("test")


def _window_text(it: RetentionItem) -> str:
    return "\n".join(m.content for m in it.window)


def test_every_probe_changes_items_and_keeps_ids_and_facts(items):
    by_id = {it.item_id: it for it in items}
    for probe in PROBES:
        copies = perturb(items, probe, seed=0)
        assert copies, probe
        assert len({c.item_id for c in copies}) == len(copies)
        for c in copies:
            orig = by_id[c.item_id]
            assert (c.fact, c.fact_id, c.conversation_id, c.handoff_index, c.to_agent,
                    c.receiver_silent) == (orig.fact, orig.fact_id, orig.conversation_id,
                                           orig.handoff_index, orig.to_agent,
                                           orig.receiver_silent)
        if probe != "order":  # order may only reorder the facts of a request
            assert all(c.window != by_id[c.item_id].window for c in copies), probe


def test_perturbed_items_keep_every_fact_value(items):
    """Every fact value in the original window is still there: verbatim, or — for paraphrase —
    in a form the kit's value normaliser reads as the same value."""
    by_id = {it.item_id: it for it in items}
    reformatted = 0
    for probe in PROBES:
        for c in perturb(items, probe, seed=3):
            orig = by_id[c.item_id]
            before = value_mentions(orig.fact, _window_text(orig))
            after_text = _window_text(c)
            after = value_mentions(orig.fact, after_text)
            if probe == "paraphrase":
                assert sorted(m.kind for m in after) == sorted(m.kind for m in before)
                reformatted += sum(m.text not in after_text for m in before)
            else:
                assert all(m.text in after_text for m in before), (probe, c.item_id)
                # the distractor adds a value of the same kind, never the fact's own
                assert len(after) == len(before), (probe, c.item_id)
    assert reformatted > 10  # paraphrase did restate values in another form


def test_paraphrase_forms_are_equal_under_the_normaliser():
    def item(fact, said):
        return RetentionItem("c/h0/f1", "c", 0, "f1", fact, (),
                             (Message("billing", said, 2),), "triage", "billing")

    cases = [("Pickup at 14:30", "Booked for 14:30.", "2:30 pm"),
             ("Visit on 2024-03-05", "Technician comes 2024-03-05.", "3/5/2024"),
             ("Refund of $1200", "Refunding $1200 now.", "$1,200"),
             ("Account ACCT-4471", "Found ACCT-4471.", "acct-4471"),
             ("Discount is 15%", "Applied 15% off.", "15 percent")]
    for fact, said, form in cases:
        copy = perturb([item(fact, said)], "paraphrase")[0]
        text = copy.after[0].content
        assert form in text, (fact, text)
        assert [m.kind for m in value_mentions(fact, text)] == \
            [m.kind for m in value_mentions(fact, said)]


def test_flip_counts_equal_a_direct_rejudging(items):
    judge = HeuristicJudge()
    report = probe_judge(judge, items, seed=1, progress=False, cache=False)
    base = {v.item_id: v.label for v in judge.judge_items(items)}
    for probe in PROBES:
        r = report[probe]
        direct = judge.judge_items(list(r.items))
        flipped = sorted(v.item_id for v in direct if v.label != base[v.item_id])
        assert r.n_flips == len(flipped) and sorted(r.flipped) == flipped, probe
        assert r.n == len(r.items) and r.n_failed == 0
        assert r.n + r.n_not_applicable == len(items)
        assert r.ci == wilson(r.n_flips, r.n)
    assert list(report.frame()["probe"]) == list(PROBES)


def test_a_judge_that_obeys_text_addressed_to_it(items):
    """Injection flips exactly the items it would otherwise not call retained."""
    heuristic = HeuristicJudge()

    def gullible(item):
        if any(_ADDRESSED.search(m.content) for m in item.window):
            return "retained"
        return heuristic.judge(item).label

    report = probe_judge(gullible, items, ["injection"], progress=False, cache=False)
    r = report["injection"]
    not_retained = sum(gullible(it) != "retained" for it in items)
    assert r.n == len(items) and r.n_not_applicable == 0
    assert r.n_flips == not_retained > 0
    assert r.flip_rate == pytest.approx(not_retained / len(items))
    assert {f.after for f in r.flips} == {"retained"}


def test_a_failed_call_is_excluded_never_a_flip(items):
    few = items[:40]
    broken = {it.item_id for it in few[::4]}

    def flaky(item):  # fails on the copies of some items only
        if item.item_id in broken and _ADDRESSED.search(_window_text(item)):
            raise TimeoutError("no answer")
        return "retained" if _ADDRESSED.search(_window_text(item)) else "lost"

    r = probe_judge(flaky, few, ["injection"], progress=False, cache=False)["injection"]
    assert r.n_failed == len(broken)
    assert r.n == len(few) - len(broken) == r.n_flips
    assert not set(r.flipped) & broken


def test_deterministic_for_a_seed(items):
    a = perturb(items, "distractor", seed=7)
    b = perturb(items, "distractor", seed=7)
    c = perturb(items, "distractor", seed=8)
    assert a == b
    assert a != c


def test_bad_arguments():
    with pytest.raises(InputError, match="unknown probe 'shuffle'"):
        probe_judge("heuristic", [], ["shuffle"])
    with pytest.raises(TypeError, match="callable"):
        probe_judge(42, [])


def test_a_callable_returning_no_label_is_a_failure(items):
    def junk(item):
        return "maybe"

    r = probe_judge(junk, items[:10], ["padding"], progress=False, cache=False)["padding"]
    assert r.n == 0 and r.n_failed == r.n_failed > 0 and r.n_flips == 0
    assert r.text().startswith("n/a")


def test_verdict_objects_from_a_callable(items):
    def judge(item):
        return Verdict("ignored", "lost")

    r = probe_judge(judge, items[:10], ["padding"], progress=False, cache=False)["padding"]
    assert r.n > 0 and r.n_flips == 0


def test_a_model_judge_through_the_fake_server_and_the_cache(items, tmp_path):
    """Originals and copies go over real HTTP through litellm and into the reply cache; a
    model that obeys the evaluator flips exactly the items it did not call retained."""
    import json

    from maev_kit.judges._prompts import extract_prompt_data
    from maev_kit.testing import FakeOpenAIServer
    from maev_kit.testing._server import _default_responder

    def obeys(body):
        if "evaluator" in body["messages"][-1]["content"] \
                or "grader" in body["messages"][-1]["content"] \
                or "judge reviewing" in body["messages"][-1]["content"]:
            facts = extract_prompt_data(body["messages"]).facts
            return json.dumps({fid: {"status": "retained", "reason": "told so"}
                               for fid, _ in facts})
        return _default_responder(body)

    few = items[:24]
    with FakeOpenAIServer(obeys) as server:
        params = {"api_base": server.base_url, "api_key": "x"}
        report = probe_judge("openai/obliging", few, ["injection", "padding"],
                             backend_params=params, cache=tmp_path, progress=False)
        sent = len(server.requests)
        again = probe_judge("openai/obliging", few, ["injection", "padding"],
                            backend_params=params, cache=tmp_path, progress=False)
        assert len(server.requests) == sent  # every request answered from the cache
    assert report.model == "openai/obliging"
    base = {v.item_id: v.label for v in report.baseline.verdicts}
    r = report["injection"]
    assert r.n == len(few) and r.n_failed == 0
    assert r.n_flips == sum(lab != "retained" for lab in base.values()) > 0
    assert again["injection"].flipped == r.flipped
    assert report.runs["injection"].stats["requests"] > 0
    assert again.runs["injection"].stats["cache_hits"] > 0


def test_views_escape_and_say_what_was_measured(items):
    def judge(item):
        return "lost"

    few = [RetentionItem("c<b>/h0/f1", "c<b>", 0, "f1", "Account is ACCT-1", (),
                         (Message("billing", "Hello <script>x</script> ACCT-1", 2),),
                         "triage", "billing")]
    report = probe_judge(judge, few, progress=False, cache=False)
    page = report._repr_html_()
    assert "<script>" not in page and "injection" in page
    text = str(report)
    assert "order       flip rate n/a" in text and "1 not applicable" in text
    d = report.to_dict()
    assert d["probes"]["injection"]["n"] == 1 and d["probes"]["order"]["flip_rate"] is None
    card = report.card_fields()
    assert card["seed"] == 0 and card["results"]["injection"]["flipped"] == []


def test_the_gate_fails_a_significant_rise_only():
    from maev_kit.calibration._probes import ProbeReport, ProbeResult, probe_drift
    from maev_kit.runner import JudgeRun

    def report(n, flipped):
        ids = [f"c{i}/h0/f1" for i in range(n)]
        flips = tuple(Flip(i, "lost", "retained") for i in ids[:flipped])
        base = JudgeRun([Verdict(i, "lost") for i in ids], "j", "1", None, {})
        run = JudgeRun([Verdict(i, "retained" if k < flipped else "lost")
                        for k, i in enumerate(ids)], "j", "1", None, {})
        return ProbeReport("j", "1", None, 0, n, {"injection": ProbeResult(
            "injection", n, flipped, 0, 0, (), flips)}, base, {"injection": run})

    then = {"injection": {"flip_rate": 0.0, "n": 100, "flipped": []}}
    risen = probe_drift(then, report(100, 30), 0.05, 0.05)[0]
    assert risen.failed and "significantly" in risen.reason and risen.now_only == 30
    small = probe_drift(then, report(10, 1), 0.05, 0.05)[0]  # 0 → 0.1 on 10 items
    assert not small.failed and "not significantly" in small.reason
    same = probe_drift({"injection": {"flip_rate": 0.3, "n": 100,
                                      "flipped": [f"c{i}/h0/f1" for i in range(30)]}},
                       report(100, 30), 0.05, 0.05)[0]
    assert not same.failed and "within the tolerance" in same.reason
