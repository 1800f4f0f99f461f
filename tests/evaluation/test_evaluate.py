"""evaluate(): per-conversation scores, aggregates with CIs, agent pairs, the retention ledger."""

import math

import pytest

from maev_kit import evaluate, load_labeled_set, save_traces
from maev_kit.calibration import JudgeCard, JudgeCardMismatchWarning
from maev_kit.errors import InputError
from maev_kit.expectations import save_expectations

from ._cases import two_conversations


@pytest.fixture
def result():
    traces, exps = two_conversations()
    return evaluate(traces, expectations=list(exps.values()), judge="heuristic", progress=False,
                    cache=False, n_resamples=500)


def test_per_conversation_scores(result):
    pc = result.per_conversation.set_index("conversation_id")
    assert pc.loc["good", "target_accuracy"] == 1.0 and pc.loc["good", "context_completeness"] == 1.0
    assert pc.loc["good", "retained"] == 1 and pc.loc["good", "retention_rate"] == 1.0
    assert pc.loc["good", "routing_exact"] == 1.0 and pc.loc["good", "n_loops"] == 0
    # a fact belongs to the conversation: judged at each of bad's four handoffs, lost at each
    # (re-asked, then never stated)
    assert pc.loc["bad", "lost"] == 4 and pc.loc["bad", "retention_rate"] == 0.0
    assert result.fact_ledger.set_index("conversation_id").loc["bad", "path"] == "LLLL"
    assert pc.loc["bad", "routing_exact"] == 0.0 and pc.loc["bad", "n_loops"] == 1
    assert pc.loc["bad", "unexpected_handoffs"] == 3
    assert pc.loc["good", "composite"] == 1.0 and pc.loc["bad", "composite"] < 0.5


def test_aggregates_have_ordered_cis(result):
    agg = result.summary()
    comp = agg.loc["composite"]
    assert math.isclose(comp["mean"], result.per_conversation["composite"].mean(), abs_tol=1e-4)
    # two conversations are too few for a bootstrap interval: none, and the note says why
    assert math.isnan(comp["ci_low"]) and math.isnan(comp["ci_high"])
    assert comp["n"] == 2 and "no interval: 2 conversations, fewer than 20" in comp["note"]


def test_pairs_ledger_and_loops(result):
    assert result.handoff_matrix.loc["tech", "billing"] == 2
    pairs = result.pair_stats.set_index(["from_agent", "to_agent"])
    assert pairs.loc[("triage", "billing"), "retention_rate"] == 1.0
    # bad's one fact is judged at each of its four handoffs, under one fact_key
    assert list(result.ledger["item_id"]) == ["good/h0/f1", "bad/h0/f1", "bad/h1/f1",
                                              "bad/h2/f1", "bad/h3/f1"]
    assert list(result.ledger["hop"]) == [0, 0, 1, 2, 3]
    assert set(result.ledger["fact_key"]) == {"f1"}
    assert result.loops[0]["conversation_id"] == "bad"
    assert result.routing["exact_routing_accuracy"] == 0.5


def test_trace_file_and_expectations_file(tmp_path):
    traces, exps = two_conversations()
    save_traces(traces, tmp_path / "t.jsonl")
    save_expectations(exps.values(), tmp_path / "e.jsonl")
    r = evaluate(tmp_path / "t.jsonl", expectations=tmp_path / "e.jsonl", progress=False,
                 cache=False, n_resamples=200)
    assert list(r.per_conversation["conversation_id"]) == ["good", "bad"]


def test_labeled_set_split_and_card_mismatch_warning():
    ls = load_labeled_set("support_desk")
    card = JudgeCard(judge_name="tfidf-logreg", judge_version="x", kappa=0.8)
    with pytest.raises(InputError, match="differs from the judge card: judge name"):
        evaluate(ls, judge="heuristic", judge_card=card, split="test", progress=False,
                 cache=False, n_resamples=200)
    with pytest.warns(JudgeCardMismatchWarning, match="judge name"):
        r = evaluate(ls, judge="heuristic", judge_card=card, split="test", progress=False,
                     cache=False, n_resamples=200, allow_mismatch=True)
    assert set(r.per_conversation["split"]) == {"test"}
    assert len(r.per_conversation) == len(ls.manifest.splits["test"])


def test_learned_judge_needs_a_split_and_never_scores_its_training_items():
    ls = load_labeled_set("support_desk")
    with pytest.raises(InputError, match="split"):
        evaluate(ls, judge="tfidf-logreg", progress=False, cache=False)
    r = evaluate(ls, judge="tfidf-logreg", split="test", progress=False, cache=False,
                 n_resamples=200)
    assert r.ledger["label"].notna().all()


def test_typo_in_judge_name_is_an_input_error():
    traces, exps = two_conversations()
    with pytest.raises(InputError, match="did you mean 'heuristic'"):
        evaluate(traces, expectations=list(exps.values()), judge="heuristc", progress=False)


def test_nothing_to_evaluate():
    with pytest.raises(InputError, match="no traces"):
        evaluate([], progress=False)
