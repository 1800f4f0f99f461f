"""The stages of :func:`~maev_kit.evaluation.evaluate`, one function each, for engines that
run them their own way (``maev_kit.scale`` runs them block by block on Ray Data) and for
notebooks that want to look between two stages.

The flow of one evaluation::

    load_inputs            source → EvaluationInputs (traces, expectations, contracts, splits)
    select_facts           traces + expectations → KeyFacts (the facts to judge, their source)
    build_retention_items  traces + expectations → RetentionItem per key fact per handoff
    resolve_evaluation_judge  judge name / object / card → (judge, backend), fit and checked
    judge_items            items → JudgeRun (one Verdict per item; failures are not verdicts)
    score_traces           traces + verdicts → ConversationScore per conversation
    aggregate_scores       scores + ledger_frame(items, run) → EvaluationResult
    estimates_for          ledger + human labels on a random sample → the rates judge-only,
                           human-only and PPI++ corrected (EvaluationResult.estimates)

``aggregate_scores`` is :func:`summarize_scores` then :func:`aggregate_summary`; an engine
that scores in blocks sums the blocks' :class:`ScoreSummary` (``add``) and calls
:func:`aggregate_summary` once, which gives the same result as one piece.

Every stage is a plain function with typed inputs and outputs; none reads global state or
prints. Their signatures are the kit's internal API: they change only with a note in the
changelog.

Examples
--------
>>> from maev_kit.evaluation import stages
>>> inputs = stages.load_inputs("support_desk", split="test")
>>> facts = stages.select_facts(inputs.traces, inputs.expectations)
>>> items = stages.build_retention_items(inputs.traces, facts.expectations)
>>> judge, backend = stages.resolve_evaluation_judge("heuristic")
>>> run = stages.judge_items(items, judge, backend, progress=False)
>>> verdicts = stages.verdicts_by_conversation(items, run)
>>> scores = stages.score_traces(inputs.traces, facts.expectations, verdicts,
...                              inputs.contracts, inputs.splits)
>>> handoffs = [(h.from_agent, h.to_agent) for t in inputs.traces for h in t.handoffs]
>>> result = stages.aggregate_scores(scores, stages.ledger_frame(items, run, facts.sources),
...                                  handoffs, n_resamples=200)
>>> len(result.per_conversation) == len(inputs.traces)
True
"""

from maev_kit.evaluation._aggregate import (
    AGGREGATED,
    LEDGER_COLUMNS,
    ScoreSummary,
    aggregate_scores,
    aggregate_summary,
    ledger_dtypes,
    ledger_frame,
    score_columns,
    summarize_scores,
    warn_result,
)
from maev_kit.evaluation._estimates import (
    ESTIMATE_COLUMNS,
    corrected_estimates,
    estimates_for,
)
from maev_kit.evaluation._facts import (
    FACT_MODES,
    KeyFacts,
    fact_backend,
    fact_methods,
    facts_by_source,
    merge_facts,
    select_facts,
    unknown_facts,
)
from maev_kit.evaluation._judging import (
    judge_info,
    judge_items,
    resolve_evaluation_judge,
    verdicts_by_conversation,
)
from maev_kit.evaluation._load import EvaluationInputs, load_inputs, read_contracts
from maev_kit.evaluation._score import COLUMNS as SCORE_COLUMNS
from maev_kit.evaluation._score import score_traces
from maev_kit.retention import build_retention_items

__all__ = [
    "AGGREGATED",
    "ESTIMATE_COLUMNS",
    "EvaluationInputs",
    "FACT_MODES",
    "KeyFacts",
    "LEDGER_COLUMNS",
    "SCORE_COLUMNS",
    "ScoreSummary",
    "aggregate_scores",
    "aggregate_summary",
    "build_retention_items",
    "corrected_estimates",
    "estimates_for",
    "fact_backend",
    "fact_methods",
    "facts_by_source",
    "judge_info",
    "judge_items",
    "ledger_dtypes",
    "ledger_frame",
    "load_inputs",
    "merge_facts",
    "read_contracts",
    "resolve_evaluation_judge",
    "score_columns",
    "score_traces",
    "select_facts",
    "summarize_scores",
    "unknown_facts",
    "verdicts_by_conversation",
    "warn_result",
]
