"""The stages of evaluate, each on its own: load, judge, score one conversation, aggregate."""

import dataclasses
import math

import pytest

from maev_kit.evaluation import ConversationScore, EvaluationResult, score_conversation
from maev_kit.evaluation import stages
from maev_kit.judges import HeuristicJudge, Verdict

from ._cases import two_conversations


@dataclasses.dataclass
class _Loaded:
    """The load, facts and items stages run one after the other, as ``evaluate`` runs them."""

    inputs: stages.EvaluationInputs
    facts: stages.KeyFacts
    items: list

    def __getattr__(self, name):
        return getattr(self.inputs, name)

    @property
    def expectations(self):
        return self.facts.expectations


def _load(source, **kw):
    inputs = stages.load_inputs(source, **kw)
    facts = stages.select_facts(inputs.traces, inputs.expectations)
    return _Loaded(inputs, facts, stages.build_retention_items(inputs.traces, facts.expectations))


def _judge(items, judge, backend, **kw):
    return stages.judge_items(items, judge, backend, **kw)


def _aggregate(scores, loaded, run, **kw):
    handoffs = [(h.from_agent, h.to_agent) for t in loaded.traces for h in t.handoffs]
    return stages.aggregate_scores(scores, stages.ledger_frame(loaded.items, run,
                                                               loaded.facts.sources),
                                   handoffs, traces=loaded.traces, **kw)


@pytest.fixture
def inputs():
    traces, exps = two_conversations()
    return _load(traces, expectations=list(exps.values()))


def test_load_gives_traces_expectations_and_items(inputs):
    assert [t.conversation_id for t in inputs.traces] == ["good", "bad"]
    assert set(inputs.expectations) == {"good", "bad"}
    # a fact is judged at its handoff and every later one: bad has four
    assert [it.item_id for it in inputs.items] == ["good/h0/f1", "bad/h0/f1", "bad/h1/f1",
                                                   "bad/h2/f1", "bad/h3/f1"]
    assert inputs.labeled_set is None and inputs.contracts is None


def test_load_a_labeled_set_split():
    inputs = _load("support_desk", split="test")
    assert inputs.split == "test" and set(inputs.splits.values()) == {"test"}
    assert inputs.contracts  # the manifest's


def test_judge_stage(inputs):
    run = _judge(inputs.items, HeuristicJudge(), None, progress=False, cache=False)
    assert [v.item_id for v in run.verdicts] == [it.item_id for it in inputs.items]
    assert _judge([], HeuristicJudge(), None) is None


def test_score_conversation_is_typed_and_frozen(inputs):
    good = inputs.traces[0]
    s = score_conversation(good, inputs.expectations["good"],
                           [Verdict("good/h0/f1", "retained")])
    assert isinstance(s, ConversationScore)
    assert (s.composite, s.composite_components, s.retention_rate) == (
        1.0, "handoff+retention+routing", 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.composite = 0.0
    row = s.to_row()
    assert list(row)[:2] == ["conversation_id", "split"] and list(row)[-1] == "composite_components"
    assert "loops" not in row and "errors_by_cause" not in row


def test_score_conversation_builds_the_same_object_as_the_dataclass(inputs):
    # score_conversation skips the frozen dataclass's __init__ (speed): the object must be the
    # one the constructor makes, hash, repr and equality included
    for trace in inputs.traces:
        s = score_conversation(trace, inputs.expectations[trace.conversation_id],
                               [Verdict(f"{trace.conversation_id}/h0/f1", "lost")])
        values = {f.name: getattr(s, f.name) for f in dataclasses.fields(ConversationScore)}
        made = ConversationScore(**values)
        assert s == made and repr(s) == repr(made) and vars(s) == vars(made)
        assert list(vars(s)) == list(vars(made))  # attribute order: pickles and dumps alike
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.split = "test"


def test_score_conversation_without_expectations_or_verdicts(inputs):
    s = score_conversation(inputs.traces[1], None)
    assert math.isnan(s.composite) and s.composite_components == ""
    assert dict(s.not_applicable) == {"handoff": "no expected handoffs",
                                      "retention": "no key facts", "routing": "no routing case"}
    assert s.n_loops == 1  # loops and contracts apply to any trace
    article = score_conversation(inputs.traces[1], None, not_applicable="article")
    assert article.handoff_quality == 0.0 and article.routing_quality == 1.0
    assert not article.not_applicable


def test_score_conversation_counts_failed_verdicts_by_cause(inputs):
    failed = Verdict("good/h0/f1", None, error="HTTP 429", cause="rate_limit")
    s = score_conversation(inputs.traces[0], inputs.expectations["good"], [failed])
    assert (s.n_facts, s.judge_errors, s.retained) == (1, 1, 0)
    assert math.isnan(s.retention_rate) and s.composite_components == "handoff+routing"
    assert dict(s.errors_by_cause) == {"rate_limit": 1}
    assert s.not_applicable["retention"] == "no judged fact (every judge call failed)"


def test_score_conversation_rejects_another_conversations_verdicts(inputs):
    with pytest.raises(ValueError, match="verdict 'bad/h0/f1' is not about conversation 'good'"):
        score_conversation(inputs.traces[0], inputs.expectations["good"],
                           [Verdict("bad/h0/f1", "lost")])


def test_aggregate_stage(inputs):
    run = _judge(inputs.items, HeuristicJudge(), None, progress=False, cache=False)
    by_conv = {v.item_id.split("/")[0]: [v] for v in run.verdicts}
    scores = [score_conversation(t, inputs.expectations[t.conversation_id],
                                 by_conv[t.conversation_id]) for t in inputs.traces]
    result = _aggregate(scores, inputs, run, n_resamples=100)
    assert isinstance(result, EvaluationResult)
    assert list(result.per_conversation.columns) == list(scores[0].to_row())
    assert result.summary().loc["composite", "n"] == 2
    assert list(result.ledger.columns)[-3:] == ["error", "error_cause", "changed_at"]
    assert result.judge_errors.total == 2 and result.judge_errors.failed == 0


def test_score_conversation_not_judged(inputs):
    """verdicts=None: no judge was asked; retention is n/a for that reason, even with key
    facts, and the composite is over the other components."""
    s = score_conversation(inputs.traces[0], inputs.expectations["good"], None)
    assert s.not_applicable["retention"] == "not judged (judge=None)"
    assert (s.n_facts, s.judge_errors) == (0, 0) and math.isnan(s.retention_rate)
    assert s.composite_components == "handoff+routing"


def test_bootstrap_of_mostly_distinct_rows_draws_rows_in_chunks(monkeypatch):
    """Most rows distinct: row indices are drawn, in chunks that give the numbers one
    (n_resamples, n) array gives (summed as row counts times the values), and memory is
    bounded by the chunk: 400 resamples of 100,000 rows would be 320 MB of indices at once."""
    import tracemalloc

    import numpy as np
    import pandas as pd

    from maev_kit.evaluation import _aggregate as _pipeline

    rng = np.random.default_rng(7)
    small = pd.DataFrame({"a": rng.random(301), "b": np.where(rng.random(301) < 0.9, np.nan, 1.0)})
    whole = _pipeline._bootstrap_means(small, ["a", "b"], n_resamples=50, confidence=0.9, seed=1)
    idx = np.random.default_rng(1).integers(0, 301, size=(50, 301))
    for col in ("a", "b"):  # the definition: nanmean of each resample, all-NaN ones left out
        values = small[col].to_numpy()
        boot = np.array([np.nanmean(values[r]) for r in idx if not np.isnan(values[r]).all()])
        lo, hi = np.quantile(boot, [0.05, 0.95])
        row = whole.set_index("metric").loc[col]
        assert (row["ci_low"], row["ci_high"]) == (round(float(lo), 4), round(float(hi), 4))
    monkeypatch.setattr(_pipeline, "_BOOTSTRAP_CHUNK", 1000)  # 3 resamples per chunk
    assert _pipeline._bootstrap_means(small, ["a", "b"], n_resamples=50, confidence=0.9,
                                      seed=1).equals(whole)
    monkeypatch.undo()

    big = pd.DataFrame({"a": rng.random(100_000)})
    tracemalloc.start()
    _pipeline._bootstrap_means(big, ["a"], n_resamples=400, confidence=0.95, seed=0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 120 * 2**20, f"peak {peak / 2**20:.0f} MB"


def _few_distinct(n, seed):
    """Per-conversation-like columns: few distinct values, some NaN (n/a)."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    return pd.DataFrame({"a": rng.choice([0.0, 0.5, 1.0], n, p=[0.2, 0.3, 0.5]),
                         "b": np.where(rng.random(n) < 0.4, np.nan,
                                       rng.choice([0.0, 1.0], n, p=[0.7, 0.3])),
                         "c": np.full(n, np.nan)})


def test_bootstrap_of_few_distinct_rows_is_the_row_bootstrap_as_a_multinomial(monkeypatch):
    """Few distinct rows: a multinomial over them is the row bootstrap's distribution (the
    intervals agree with row resampling's up to Monte Carlo error); row order does not
    change a number; chunks draw the same numbers as one array."""
    import numpy as np

    from maev_kit.evaluation import _aggregate as _pipeline

    frame = _few_distinct(400, 3)
    columns = [frame["a"].to_numpy(), frame["b"].to_numpy()]
    first, counts = _pipeline._distinct_rows(columns, 100)  # a, b: 3 x 3 values
    assert len(first) == 9 and counts.sum() == 400
    got = _pipeline._bootstrap_means(frame, ["a", "b", "c"], n_resamples=20_000,
                                     confidence=0.9, seed=3).set_index("metric")
    idx = np.random.default_rng(5).integers(0, 400, size=(20_000, 400))
    for col in ("a", "b"):
        values = frame[col].to_numpy()
        with np.errstate(invalid="ignore"):
            boot = np.nanmean(values[idx], axis=1)
        lo, hi = np.quantile(boot, [0.05, 0.95])
        half = (hi - lo) / 2  # a wrong draw (e.g. of n/2 rows: 1.4x wider) is far outside
        assert abs(got.loc[col, "ci_low"] - lo) < 0.06 * half + 1e-4, col
        assert abs(got.loc[col, "ci_high"] - hi) < 0.06 * half + 1e-4, col
        assert got.loc[col, "mean"] == round(float(np.nanmean(values)), 4)
    assert got.loc["c"].isna()[["mean", "ci_low", "ci_high"]].all() and got.loc["c", "n"] == 0

    base = _pipeline._bootstrap_means(frame, ["a", "b"], n_resamples=300, confidence=0.95,
                                      seed=1)
    shuffled = frame.sample(frac=1.0, random_state=0).reset_index(drop=True)
    assert _pipeline._bootstrap_means(shuffled, ["a", "b"], n_resamples=300,
                                      confidence=0.95, seed=1).equals(base)
    monkeypatch.setattr(_pipeline, "_BOOTSTRAP_CHUNK", 20)  # 3 resamples per chunk of 6 rows
    assert _pipeline._bootstrap_means(frame, ["a", "b"], n_resamples=300, confidence=0.95,
                                      seed=1).equals(base)


def test_pair_counts_are_value_counts_and_the_matrix_a_crosstab():
    """The aggregate counts handoff pairs with a Counter; the order (most first, ties in order
    of first appearance) and the matrix are what pandas' value_counts and crosstab give."""
    import random

    import pandas as pd

    from maev_kit.evaluation.stages import aggregate_scores
    from maev_kit.evaluation.stages import ledger_frame as _ledger

    rng = random.Random(3)
    agents = ["triage", "billing", "tech", "general", "human"]
    for n in (1, 7, 200):
        pairs = [(rng.choice(agents), rng.choice(agents)) for _ in range(n)]
        hf = pd.DataFrame(pairs, columns=["from_agent", "to_agent"])
        result = aggregate_scores([], _ledger([], None), pairs, n_resamples=10)
        stats = result.pair_stats
        assert list(zip(zip(stats["from_agent"], stats["to_agent"]), stats["handoffs"])) == \
            list(hf.value_counts().items())
        matrix = result.handoff_matrix
        expected = pd.crosstab(hf["from_agent"], hf["to_agent"])
        assert matrix.equals(expected) and matrix.index.equals(expected.index) \
            and matrix.columns.equals(expected.columns)


def test_score_conversation_reads_routing_cases_given_as_mappings(inputs):
    """Expectations built by hand may hold routing cases as dicts, as score_routing accepts."""
    from maev_kit.expectations import ConversationExpectations, RoutingTestCase

    trace = inputs.traces[0]
    route = trace.handoffs[0].to_agent
    as_dict = ConversationExpectations(trace.conversation_id, routing=[
        {"user_input": "hi", "correct_agent": route}, {"user_input": "yo", "correct_agent": "x"}])
    s = score_conversation(trace, as_dict)
    assert (s.routing_exact, s.routing_cases) == (0.5, 2)
    assert all(type(c) is RoutingTestCase for c in s.cases)
    with pytest.raises(TypeError, match=r"`routing\[0\]` must be a RoutingTestCase"):
        score_conversation(trace, ConversationExpectations(trace.conversation_id,
                                                           routing=["billing"]))
