"""The report explains itself: definitions, judge errors, n/a, reference labels, hash names.

Most cases run the real pipeline (``evaluate`` on the bundled support_desk set, the heuristic
judge; a model judge through the openai client to a local fake server that answers prose).
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from html.parser import HTMLParser

import pytest

from maev_kit.datasets import load_labeled_set
from maev_kit.errors import JudgeErrorsExceeded
from maev_kit.evaluation import JudgeErrorSummary, evaluate
from maev_kit.reporting import report

XSS = '<script>window.__x=1</script>'


class Text(HTMLParser):
    """The visible text of a page (no tags, entities decoded)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def text_of(page: str) -> str:
    p = Text()
    p.feed(page)
    return re.sub(r"\s+", " ", " ".join(p.parts))


@pytest.fixture(scope="module")
def support_desk():
    return load_labeled_set("support_desk")


@pytest.fixture(scope="module")
def result(support_desk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(support_desk, judge="heuristic", progress=False)


def with_failures(result, failed: dict[str, int]):
    """``result`` with the first facts of its ledger marked as failed judge calls."""
    n = sum(failed.values())
    ledger = result.ledger.copy()
    causes = [c for c, k in failed.items() for _ in range(k)]
    ledger = ledger.astype({"label": object})
    if "error_cause" not in ledger.columns:
        ledger["error_cause"] = None
    ledger = ledger.astype({"error_cause": object, "error": object})
    for i, cause in enumerate(causes):
        ledger.loc[ledger.index[i], ["label", "error", "error_cause"]] = [
            None, f"judge call failed: {cause}", cause]
    total = len(ledger)
    return dataclasses.replace(result, ledger=ledger, judge_errors=JudgeErrorSummary(
        total=total, judged=total - n, failed=n, by_cause=dict(failed)))


# --------------------------------------------------------------------------- judge errors
# support_desk: 382 listed key facts, each also judged at every later handoff = 518 to judge
def test_banner_with_counts_and_causes_when_items_failed(result):
    page = report(with_failures(result, {"rate_limit": 10, "timeout": 2})).html
    text = text_of(page)
    assert 'role="alert"' in page
    assert "Judge errors: 12 of 518 facts could not be judged (2.3%; rate_limit 10, timeout 2)" \
        in text
    # the banner comes before the first section
    assert page.index('role="alert"') < page.index('id="summary"')
    assert "506 of 518 facts judged 12 failed: rate_limit 10, timeout 2" in text
    assert not re.search(r"(?<!of )518 facts judged", text)


def test_no_banner_without_failures(result):
    page = report(result).html
    assert 'role="alert"' not in page and "Judge errors" not in page
    assert "518 facts judged" in text_of(page)


def test_banner_from_the_ledger_alone(result):
    """A result without ``judge_errors`` (an older one) is counted from its ledger."""
    failed = with_failures(result, {"auth": 3})

    class Older:
        def __init__(self, r):
            for f in dataclasses.fields(r):
                if f.name != "judge_errors":
                    setattr(self, f.name, getattr(r, f.name))

    assert "Judge errors: 3 of 518 facts could not be judged (0.6%; auth 3)" in \
        text_of(report(Older(failed)).html)


def test_report_refuses_a_run_whose_every_item_failed(result):
    everything = with_failures(result, {"auth": len(result.ledger)})
    with pytest.raises(JudgeErrorsExceeded, match="every one of the 518 facts failed.*auth 518"):
        report(everything)


def test_report_refuses_a_real_run_against_a_judge_that_answers_prose(support_desk):
    openai = pytest.importorskip("openai")
    from maev_kit.backends import OpenAIClientBackend
    from maev_kit.judges import RetentionJudge
    from maev_kit.testing import FakeOpenAIServer

    with FakeOpenAIServer(fail="prose") as server:
        client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/v1",
                                    api_key="test", max_retries=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces = support_desk.traces_in("test")[:3]
            run = evaluate(traces, expectations=[support_desk.expectations[t.conversation_id]
                                                 for t in traces],
                           judge=RetentionJudge(), progress=False,
                           backend=OpenAIClientBackend(client, "fake"))
    assert run.judge_errors.total and run.judge_errors.judged == 0
    with pytest.raises(JudgeErrorsExceeded, match="unparseable"):
        report(run)


# --------------------------------------------------------------------------- definitions, n/a
def test_each_metric_has_its_definition(result):
    text = text_of(report(result).html)
    assert "What the numbers mean" in text
    assert "share of judged facts retained across the handoff: retained / judged" in text
    assert "the retention component: max(0, retention rate − 0.2 × the number of " \
        "contradicted facts)" in text
    assert ("Σ wᵢ·componentᵢ / Σ wᵢ over the components that apply to a conversation "
            "(weights: handoff 0.3, retention 0.4, routing 0.3") in text
    assert "0.5 · target accuracy + 0.5 · context completeness" in text
    assert "Components the composite used: handoff+retention+routing: 85 conversations" in text


def test_weights_given_to_evaluate_are_the_ones_shown(support_desk):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = evaluate(support_desk, judge="heuristic", progress=False,
                     weights={"handoff": 0.5, "retention": 0.25, "routing": 0.25})
    assert "(weights: handoff 0.5, retention 0.25, routing 0.25" in text_of(report(r).html)


def test_not_applicable_shows_as_na_with_the_reason(support_desk, tmp_path):
    """Traces without expectations: handoff and routing are n/a, never 0.000 or nan."""
    from maev_kit.traces import save_traces

    path = tmp_path / "traces.jsonl"
    save_traces(support_desk.traces_in("test")[:6], path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = evaluate(str(path), judge="heuristic", progress=False)
    assert r.not_applicable  # the pipeline says what is n/a
    page = report(r).html
    text = text_of(page)
    for m in ("Handoff quality", "Routing quality"):  # the summary table's rows
        assert f"{m} n/a" in text, m
        assert f"{m} 0.000" not in text and f"{m} nan" not in text, m
    for comp, info in r.not_applicable.items():
        assert f"n/a in {info['conversations']} conversations: {info['reason']}" in text \
            or info["reason"] in text, comp
    assert ">nan<" not in page and " nan " not in text


def test_composite_na_kpi_says_why(result):
    import numpy as np

    agg = result.aggregates.copy()
    agg.loc[agg["metric"] == "composite", ["mean", "ci_low", "ci_high"]] = np.nan
    text = text_of(report(dataclasses.replace(result, aggregates=agg)).html)
    assert "n/a composite coordination no component applies" in text


@pytest.fixture(scope="module")
def cal(support_desk):
    from maev_kit.calibration import calibrate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibrate(support_desk, judges=["heuristic", "tfidf-logreg"], progress=False,
                         n_resamples=200)


# --------------------------------------------------------------------------- labels, judges
def test_reference_labels_are_never_called_human_labels(result, support_desk, cal):
    assert cal.reference_labels is True  # every label line of support_desk is a reference label
    page = report(result, calibration=cal, labeled_set=support_desk).html
    text = text_of(page)
    assert "reference labels" in text
    assert not re.search(r"human labels?|human majority|humans\b", text, re.I), \
        re.findall(r".{60}human.{60}", text, re.I)[:5]
    if cal.recommended not in (None, "heuristic"):
        assert ("The scores in this report use the judge heuristic, not "
                f"{cal.recommended}, which the calibration recommends") in text
        assert "refuses to score the items it learned from" in text
    else:
        assert "The scores in this report use the judge heuristic" in text


def test_judge_choice_when_the_user_asked_for_another_judge(result):
    from tests.reporting._factories import make_calibration

    cal = make_calibration()
    cal.recommended = "gpt-4o-mini"  # the calibration recommends a model; the user ran heuristic
    text = text_of(report(result, calibration=cal).html)
    assert ("The scores in this report use the judge heuristic, not gpt-4o-mini, which the "
            "calibration recommends: this evaluation was asked to use heuristic.") in text


CONTENT = "labeled-set content hash (sha256 of every data file of the set)"
LABELS_FILE = "labels-file hash (sha256 of the set's labels.jsonl)"
CAL_LABELS = ("calibration-labels hash (sha256 of the (item, annotator, label) triples the κ "
              "rests on)")
PROMPT = "prompt hash (sha256 of the prompt template)"


def test_hashes_are_named_for_what_they_cover(result, support_desk, cal):
    card = cal.card("heuristic")  # a real card: what `maev calibrate --card` writes
    # three different hashes, and the card's set hash is the set's content hash
    assert card.labeled_set_hash == support_desk.content_hash
    assert len({support_desk.content_hash, support_desk.labels_hash, card.labels_hash}) == 3
    text = text_of(report(result, labeled_set=support_desk, judge_card=card).html)
    # the same hash under the same name, in the set's rows and in the card's
    assert text.count(f"{CONTENT} {support_desk.content_hash}") == 2
    assert f"{LABELS_FILE} {support_desk.labels_hash}" in text
    assert f"{CAL_LABELS} {card.labels_hash}" in text
    assert f"{PROMPT} " in text  # the card's (None for an offline judge), named all the same
    for raw in ("labeled_set_hash", "content_hash", "labels_hash", "prompt_hash",
                "prompt_sha256"):
        assert raw not in text, raw
    # no name is given to two different hashes
    for name in (CONTENT, LABELS_FILE, CAL_LABELS):
        shown = set(re.findall(re.escape(name) + r" ([0-9a-f]{64})", text))
        assert len(shown) == 1, (name, shown)


def test_hashes_in_the_evaluations_own_provenance_are_named_too(result, support_desk, cal):
    card = cal.card("heuristic")
    ev = dataclasses.replace(result, provenance={**result.provenance, "judge_card": card})
    text = text_of(report(ev).html)  # no labeled_set= nor judge_card=: the provenance's own
    assert f"{CONTENT} {support_desk.content_hash}" in text
    assert f"{LABELS_FILE} {support_desk.labels_hash}" in text
    assert f"{CAL_LABELS} {card.labels_hash}" in text
    for raw in ("labeled_set_hash", "labels_hash", "prompt_hash", "prompt_sha256"):
        assert raw not in text, raw
    assert re.search(r"(?<!labeled-set content )\bhash\b [0-9a-f]{64}",
                     text.replace(CONTENT, "").replace(LABELS_FILE, "")
                     .replace(CAL_LABELS, "")) is None


def test_new_text_is_escaped(result):
    r = dataclasses.replace(with_failures(result, {"other": 1}),
                            not_applicable={"routing": {"conversations": 3, "reason": XSS}})
    agg = r.aggregates.copy()
    agg["note"] = ""
    page = report(dataclasses.replace(r, aggregates=agg,
                                      judge_errors=JudgeErrorSummary(382, 381, 1, {XSS: 1}))
                  ).html
    assert "<script" not in page and "&lt;script&gt;window.__x=1&lt;/script&gt;" in page
