"""``evaluate``: the stages composed — load → facts → retention items → judging → metrics →
result. Each stage is a function of :mod:`maev_kit.evaluation.stages`; this module only calls
them in order."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.evaluation._aggregate import aggregate_scores, ledger_frame, note_unjudged, warn_result
from maev_kit.evaluation._criteria import add_criteria, criteria_asked
from maev_kit.evaluation._estimates import estimates_for
from maev_kit.evaluation._facts import KeyFacts, fact_backend, select_facts
from maev_kit.evaluation._judging import (
    judge_info,
    judge_items,
    resolve_evaluation_judge,
    verdicts_by_conversation,
)
from maev_kit.evaluation._load import load_inputs
from maev_kit.evaluation._options import EvaluationOptions
from maev_kit.evaluation._result import EvaluationResult
from maev_kit.evaluation._score import score_traces
from maev_kit.internal import paused_gc

if TYPE_CHECKING:
    from maev_kit.datasets import LabeledSet
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.traces import MultiAgentTrace

__all__ = ["evaluate"]


def evaluate(
    labeled_set_or_traces: LabeledSet | str | os.PathLike[str] | Sequence[MultiAgentTrace],
    options: EvaluationOptions | None = None,
    **changes: Any,
) -> EvaluationResult:
    """Score every conversation for coordination quality.

    The stages, in order (each a function of :mod:`maev_kit.evaluation.stages`): load the
    traces and expectations, choose the key facts, build the retention items (one per key
    fact per handoff), judge them, score each conversation (:func:`score_conversation`) and
    aggregate with bootstrap CIs.

    Parameters
    ----------
    labeled_set_or_traces : LabeledSet, path to a labeled-set folder (or a bundled set's name,
        e.g. ``"support_desk"``), path to a trace JSONL file or to any framework export the
        importers read (:func:`~maev_kit.traces.importers.load_any`), or a list of traces.
    options : EvaluationOptions, optional
        How to score: the judge, the key facts, the split, the composite weights, the
        bootstrap… (see :class:`EvaluationOptions` for every field and its default).
    **changes
        Fields of :class:`EvaluationOptions` to set (or to change in ``options``):
        ``evaluate(src, judge="gpt-4o-mini", split="test")``.

    Returns
    -------
    EvaluationResult

    Raises
    ------
    InputError
        A bad option or input, located (``file:line › field``).
    TypeError
        A keyword that is not an option (with the closest one).

    Warns
    -----
    JudgeErrorWarning
        When some facts could not be judged (counts by cause); they are left out of every rate.
        :meth:`EvaluationResult.raise_for_judge_errors` turns too many into an error.
    NotApplicableWarning
        Once, when a component is n/a for some conversations (``"na"`` mode).

    Examples
    --------
    >>> from maev_kit import evaluate
    >>> result = evaluate("support_desk", judge="heuristic", progress=False)  # doctest: +SKIP
    >>> result.summary().loc["composite", "mean"]  # doctest: +SKIP
    0.71
    """
    opts, asked = criteria_asked(EvaluationOptions.build(options, changes))
    inputs = load_inputs(labeled_set_or_traces, expectations=opts.expectations,
                         contracts=opts.contracts, split=opts.split)
    key_facts = _key_facts(inputs.traces, inputs.expectations, opts)
    expectations = key_facts.expectations if key_facts else inputs.expectations
    from maev_kit.retention import build_retention_items, unjudged_handoffs

    items = build_retention_items(inputs.traces, expectations) if key_facts else []
    unjudged = unjudged_handoffs(inputs.traces, expectations) if key_facts else []
    judge_obj, backend = ((None, None) if opts.judge is None else resolve_evaluation_judge(
        opts.judge, backend=opts.backend, prompt=opts.prompt, judge_card=opts.judge_card,
        labeled_set=inputs.labeled_set, split=inputs.split,
        allow_mismatch=opts.allow_mismatch))
    run = judge_items(items, judge_obj, backend, **opts.run_options)
    scores = score_traces(inputs.traces, expectations, verdicts_by_conversation(items, run),
                          inputs.contracts, inputs.splits, retention=opts.judge is not None,
                          **opts.score_options)
    with paused_gc():  # the handoff pairs: one tuple per handoff of every trace
        handoffs = [(h.from_agent, h.to_agent) for t in inputs.traces for h in t.handoffs]
    result = aggregate_scores(
        scores, ledger_frame(items, run, key_facts.sources if key_facts else None), handoffs,
        labeled_set=inputs.labeled_set, split=inputs.split, traces=inputs.traces,
        n_resamples=opts.n_resamples, confidence=opts.confidence, seed=opts.seed)
    _describe(result, opts, judge_obj, run)
    if key_facts is not None:
        _judged_rates(result, key_facts.provenance(items), inputs.labeled_set, opts)
    note_unjudged(result, unjudged)
    add_criteria(result, asked, inputs.traces, opts, inputs.labeled_set)
    warn_result(result)
    return result


def _judged_rates(result: EvaluationResult, facts: dict[str, Any], labeled_set: Any,
                  opts: EvaluationOptions) -> None:
    """What only a judged run has: where its facts came from, its rates estimated judge-only,
    human-only and corrected (PPI++), and the label budget."""
    result.provenance["facts"] = facts
    result.estimates, result.label_budget = estimates_for(
        result.ledger, labeled_set=labeled_set, human_labels=opts.human_labels,
        label_sample=opts.label_sample, confidence=opts.confidence,
        half_width=opts.target_half_width)


def _key_facts(traces: Sequence[MultiAgentTrace],
               expectations: dict[str, ConversationExpectations],
               opts: EvaluationOptions) -> KeyFacts | None:
    """The facts stage when a judge is asked (None without one: nothing is judged)."""
    if opts.judge is None:
        return None
    key_facts = select_facts(traces, expectations, opts.facts,
                             backend=fact_backend(opts.judge, opts.backend),
                             options=opts.fact_options)
    message = key_facts.warning()
    if message:
        from maev_kit.errors import TraceWarning

        warnings.warn(message, TraceWarning, stacklevel=4)
    return key_facts


def _describe(result: EvaluationResult, opts: EvaluationOptions, judge_obj: Any,
              run: Any) -> None:
    """The judge, the weights and the options' provenance, on the result."""
    result.weights = dict(opts.weights) if opts.weights is not None else None
    result.judge = judge_info(judge_obj, opts.judge, run)
    card = opts.judge_card
    result.provenance.update(
        judge_card=(card.model_dump() if hasattr(card, "model_dump")
                    else (str(card) if card is not None else None)),
        not_applicable=opts.not_applicable)
