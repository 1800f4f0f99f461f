"""check_card, the drift gate: a judge card's judge re-run on the card's labeled items.

Offline judges on the bundled support_desk set; model judges through the real litellm client
over HTTP to FakeOpenAIServer, one "model" answering like the heuristic (the server's default
responder) and one that answers "lost" for every fact. Nothing of the kit is mocked.
"""

from __future__ import annotations

import json

import pytest

from maev_kit.calibration import DriftReport, JudgeCard, calibrate, check_card
from maev_kit.calibration._card import verdict_fields
from maev_kit.errors import InputError, JudgeUnavailableError
from maev_kit.judges._prompts import extract_prompt_data
from maev_kit.testing import FakeOpenAIServer, free_port

RESAMPLES = 1000
QUIET = {"progress": False, "cache": False, "n_resamples": RESAMPLES}


def says_lost(body: dict) -> str:
    """A model that answers "lost" for every fact: the deliberately worse judge."""
    facts = extract_prompt_data(body["messages"]).facts
    return json.dumps({fid: {"status": "lost", "reason": "not seen"} for fid, _ in facts})


@pytest.fixture(scope="module")
def offline():
    """support_desk calibrated with both offline judges (the test split, 231 items)."""
    return calibrate("support_desk", judges=["heuristic", "tfidf-logreg"], progress=False,
                     cache=False, n_resamples=RESAMPLES)


def recorded(result, key: str) -> JudgeCard:
    """The card of ``key`` with each item's verdict and the accuracy recorded (what
    ``card()`` writes)."""
    card = result.card(key)
    row = result.leaderboard.set_index("key").loc[key]
    assert card.item_verdicts == verdict_fields(result.runs[key])["item_verdicts"]
    assert card.accuracy == pytest.approx(row["accuracy"])
    return card


def older(card: JudgeCard) -> JudgeCard:
    """``card`` as a maev-kit that recorded no per-item verdicts wrote it."""
    return JudgeCard.model_validate({**card.model_dump(), "item_verdicts": None,
                                     "accuracy": None})


def test_the_cards_own_judge_passes_unpaired_on_an_older_card(offline):
    card = older(offline.card("heuristic"))
    assert card.item_verdicts is None and card.accuracy is None  # an older card's fields
    report = check_card(card, **QUIET)
    assert isinstance(report, DriftReport)
    assert (report.status, report.exit_code, report.paired) == ("PASS", 0, False)
    assert report.test == "unpaired-ci" and report.p_value is None
    assert report.kappa_now == pytest.approx(card.kappa, abs=1e-12)
    assert (report.kappa_now_low, report.kappa_now_high) == pytest.approx(
        (card.kappa_low, card.kappa_high), abs=1e-12)  # same seed, same resamples
    assert report.n_items_now == report.n_items_then == 231
    assert report.changes == () and report.tolerance == 0.05
    assert report.tolerance_source == "default"
    text = str(report)
    assert "unpaired" in text and "accuracy then → now: not recorded → 0.887" in text
    assert text.splitlines()[-1].startswith("PASS: κ did not fall")


def test_recorded_verdicts_give_a_paired_mcnemar_test(offline):
    card = recorded(offline, "heuristic")
    assert len(card.item_verdicts) == 231 and card.accuracy == pytest.approx(0.887, abs=1e-3)
    report = check_card(card, **QUIET)
    assert (report.status, report.paired, report.test) == ("PASS", True, "mcnemar-exact")
    assert report.n_paired == 231 and report.then_only_correct == report.now_only_correct == 0
    assert report.p_value == 1.0 and report.paired_delta == 0.0
    assert report.accuracy_then == pytest.approx(report.accuracy_now)
    d = report.to_dict()
    assert d["status"] == "PASS" and d["exit_code"] == 0 and d["paired"] is True
    assert d["judge_then"]["name"] == "heuristic" and d["delta_kappa"] == 0.0
    json.dumps(d)  # JSON-ready


def test_a_changed_judge_that_agrees_less_fails(offline):
    # the card pins tfidf-logreg (κ 0.83); the heuristic (κ 0.81) is checked against it
    card = recorded(offline, "tfidf-logreg")
    within = check_card(card, judge="heuristic", **QUIET)
    assert within.status == "PASS" and within.changes == ("judge tfidf-logreg → heuristic",)
    assert "within the default tolerance 0.05" in within.reasons[0]
    tight = check_card(card, judge="heuristic", tolerance=0.01, **QUIET)
    assert (tight.status, tight.exit_code) == ("FAIL", 1)
    assert tight.then_only_correct > tight.now_only_correct and tight.p_value > 0.05
    assert "differs from the card's (judge tfidf-logreg → heuristic)" in tight.reasons[0]
    # the same fall with the card's own judge is not significant: no FAIL
    pinned = JudgeCard.model_validate({**card.model_dump(), "tolerance": 0.01})
    assert check_card(pinned, **QUIET).status == "PASS"


def test_the_cards_tolerance_wins(offline):
    card = JudgeCard.model_validate({**offline.card("heuristic").model_dump(), "tolerance": 0.1})
    report = check_card(card, tolerance=0.02, **QUIET)
    assert (report.tolerance, report.tolerance_source) == (0.1, "card")
    assert any("tolerance 0.02 not used" in n for n in report.notes)


@pytest.fixture(scope="module")
def servers():
    with FakeOpenAIServer() as good, FakeOpenAIServer(says_lost) as lazy:
        yield good, lazy


@pytest.fixture(scope="module")
def model_result(servers, tmp_path_factory):
    good, _ = servers
    return calibrate("support_desk", judges=["openai/judge-model"],
                     backend_params={"api_base": good.base_url, "api_key": "sk-local"},
                     cache=tmp_path_factory.mktemp("cache"), progress=False,
                     n_resamples=RESAMPLES)


def _model_check(card, url, tmp_path, **kw):
    return check_card(card, backend_params={"api_base": url, "api_key": "sk-local"},
                      cache=tmp_path, progress=False, n_resamples=RESAMPLES, **kw)


def test_model_judge_same_answers_pass_worse_answers_fail(servers, model_result, tmp_path):
    good, lazy = servers
    card = recorded(model_result, "openai/judge-model [v4]")
    assert card.model == "openai/judge-model" and card.prompt == "v4"
    same = _model_check(card, good.base_url, tmp_path)
    assert (same.status, same.paired, same.changes) == ("PASS", True, ())
    assert same.judge_now.model == "openai/judge-model" and same.judge_errors == 0
    assert same.stats["requests"] > 0  # it really asked the model again (a fresh cache)
    n = len(good.completed)
    again = _model_check(card, good.base_url, tmp_path)
    assert again.stats["cache_hits"] > 0 and len(good.completed) == n  # through the cache
    worse = _model_check(card, lazy.base_url, tmp_path)  # same model string, worse answers
    assert (worse.status, worse.exit_code) == ("FAIL", 1)
    assert worse.kappa_now == pytest.approx(0.0, abs=1e-9) and worse.p_value < 1e-6
    assert worse.then_only_correct > 50 and worse.now_only_correct < 10
    assert "significantly: McNemar exact p" in worse.reasons[0]


def test_changed_prompt_is_reported(servers, model_result, tmp_path):
    good, lazy = servers
    card = model_result.card()
    same_answers = _model_check(card, good.base_url, tmp_path, prompt="v2")
    assert same_answers.judge_now.prompt == "v2"
    assert any(c.startswith("prompt v4 → v2") for c in same_answers.changes)
    assert "changed: prompt v4 → v2" in str(same_answers)
    worse = _model_check(card, lazy.base_url, tmp_path, prompt="v2")
    assert worse.status == "FAIL" and "prompt v4 → v2" in worse.changes[0]
    other_model = _model_check(card, good.base_url, tmp_path, judge="openai/other-model")
    assert other_model.changes[0] == "model openai/judge-model → openai/other-model"
    assert other_model.judge_now.prompt == "v4"  # the card's prompt, with the new model


def test_failed_judge_calls_are_no_verdict(model_result, tmp_path):
    card = model_result.card()
    with FakeOpenAIServer(fail="garbage") as garbage:
        report = _model_check(card, garbage.base_url, tmp_path, max_retries=0)
    assert (report.status, report.exit_code) == ("ERROR", 1)
    assert report.judge_errors == 231 and "cannot be trusted" in report.reasons[0]
    with pytest.raises(JudgeUnavailableError):
        _model_check(card, f"http://127.0.0.1:{free_port()}/v1", tmp_path)


def test_bad_inputs(offline, tmp_path):
    with pytest.raises(InputError, match="nope.json: No such file"):
        check_card(tmp_path / "nope.json", **QUIET)
    card = offline.card("heuristic")
    orphan = JudgeCard.model_validate({**card.model_dump(), "labeled_set": None})
    with pytest.raises(InputError, match="names no labeled set; pass"):
        check_card(orphan, **QUIET)
    elsewhere = JudgeCard.model_validate({**card.model_dump(), "labeled_set": "my_gone_set"})
    with pytest.raises(InputError, match="no labeled set 'my_gone_set' here.*--set"):
        check_card(elsewhere, **QUIET)
    with pytest.raises(InputError, match="a prompt applies to a model judge"):
        check_card(card, prompt="v2", **QUIET)
    with pytest.raises(InputError, match="tolerance must be"):
        check_card(card, tolerance=2, **QUIET)
    no_kappa = JudgeCard.model_validate({**card.model_dump(), "kappa": None})
    with pytest.raises(InputError, match="› kappa: no κ recorded"):
        check_card(no_kappa, **QUIET)
    bad = tmp_path / "card.json"
    bad.write_text(json.dumps({**json.loads(card.model_dump_json()),
                               "item_verdicts": {"c1/h0/f1": "forgotten"}}))
    with pytest.raises(InputError, match=r"› item_verdicts\.c1/h0/f1: Input should be"):
        check_card(bad, **QUIET)


def test_card_without_the_new_fields_is_written_as_before(offline, tmp_path):
    card = older(offline.card("heuristic"))
    data = json.loads(card.model_dump_json())
    assert not {"accuracy", "tolerance", "item_verdicts"} & set(data)
    assert data["schema_version"] == 1
    full = recorded(offline, "heuristic")
    path = tmp_path / "judge_card.json"
    full.save(path)
    again = JudgeCard.load(path)
    assert again == full and json.loads(path.read_text())["schema_version"] == 1
    assert check_card(str(path), **QUIET).card == str(path)


def _fields(**kw):
    """The report fields the verdict reads: an unpaired check of a card with κ 0.8."""
    return {"kappa_then": 0.8, "kappa_now": 0.0, "kappa_now_low": 0.0, "kappa_now_high": 0.0,
            "n_items_now": 3, "confidence": 0.95, "tolerance": 0.05,
            "tolerance_source": "default", "paired": False, "changes": [], "min_kappa": 0.4,
            "min_kappa_source": "default", "errors_by_cause": {}, "judge_errors": 0, **kw}


@pytest.mark.parametrize("low, high", [(0.0, 0.0), (float("nan"), float("nan"))])
def test_a_kappa_without_interval_is_said_in_words_in_every_reason(low, high):
    from maev_kit.calibration._check import _verdict

    status, reasons = _verdict(_fields(kappa_now_low=low, kappa_now_high=high), 3, 0.1, 0.05)
    text = "; ".join(reasons)
    assert status == "FAIL"
    # the significant-fall reason and the floor's: no zero-width bound, no "nan"
    assert "upper bound 0.000" not in text and "nan" not in text
    assert text.count("κ 0.000 (no interval — n = 3)") == 2, text


def test_an_interval_gives_the_upper_bound():
    from maev_kit.calibration._check import _verdict

    status, reasons = _verdict(_fields(kappa_now=0.3, kappa_now_low=0.1, kappa_now_high=0.35),
                               3, 0.1, 0.05)
    assert status == "FAIL"
    assert "the new κ's CI upper bound 0.350 is below the recorded κ − tolerance = 0.750" \
        in reasons[0]
    assert "κ's CI upper bound 0.350 is below the floor min_kappa 0.4" in reasons[1]
