"""The criteria stage of ``evaluate``: each criterion's items judged, and each label's share with
a bootstrap CI over conversations, n, and — where people labeled a random sample of the items —
the corrected (PPI++) estimate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from maev_kit.errors import InputError

__all__ = ["CRITERION_COLUMNS", "add_criteria", "criteria_asked", "criteria_only_judge",
           "criterion_table", "resolve_criteria", "score_criteria"]

#: The columns of ``result.criteria[name]`` (one row per label, in the criterion's order).
CRITERION_COLUMNS = ["share", "share_low", "share_high", "n", "n_conversations", "corrected",
                     "corrected_low", "corrected_high", "n_human", "positive"]
_RETENTION_ONLY = ("heuristic", "tfidf-logreg")


def resolve_criteria(criteria: Any) -> list[Any]:
    """Criterion objects from criteria, built-in names or TOML files (one or a list)."""
    from maev_kit.criteria import resolve

    specs = [criteria] if isinstance(criteria, str) or not isinstance(criteria, Sequence) \
        else list(criteria)
    out = [c for spec in specs for c in resolve(spec)]
    names = [c.name for c in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"criterion {twice[0]!r} is given twice")
    return out


def criteria_only_judge(judge: Any) -> bool:
    """True for a judge only criteria take: a Python function or ``"module:function"``."""
    from maev_kit.criteria import CallableJudge
    from maev_kit.criteria.internal import is_function_name

    if isinstance(judge, str):
        return is_function_name(judge)
    if isinstance(judge, CallableJudge):
        return True
    return callable(judge) and not hasattr(judge, "offline") and not (
        callable(getattr(judge, "complete", None)) and hasattr(judge, "cache_identity"))


def check_criteria_judge(judge: Any) -> None:
    """A judge that cannot answer a criterion (the retention judges) is an InputError."""
    name = judge.strip().lower() if isinstance(judge, str) else None
    if judge is None or name in _RETENTION_ONLY or hasattr(judge, "judge_items") and \
            not hasattr(judge, "fn"):
        raise InputError("criteria need a judge that answers them: a Python function "
                         "judge(item) -> label, 'module:function' or a model string "
                         "(evaluate(..., criteria=[...], judge=my_function) or "
                         "criteria_judge=...)")


def _bootstrap_shares(counts: np.ndarray, n_resamples: int, confidence: float, seed: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Percentile CIs of each label's share, resampling conversations (rows of ``counts``:
    a conversation's judged items per label)."""
    rng = np.random.default_rng(seed)
    c = counts.shape[0]
    weights = rng.multinomial(c, np.full(c, 1.0 / c), size=n_resamples)
    totals = weights @ counts
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = totals / totals.sum(axis=1, keepdims=True)
    alpha = (1 - confidence) / 2
    return (np.nanquantile(shares, alpha, axis=0), np.nanquantile(shares, 1 - alpha, axis=0))


def _corrected(label: str, judged: Mapping[str, str], human: Mapping[str, str],
               confidence: float) -> tuple[float, float, float, int]:
    """(estimate, low, high, n labeled) of ``label``'s share, PPI++ from people's labels on
    the judged items they labeled; NaNs without labels."""
    from maev_kit.agreement import ppi_mean

    both = [i for i in judged if i in human]
    if not both:
        return np.nan, np.nan, np.nan, 0
    rest = [i for i in judged if i not in human]
    est = ppi_mean([float(human[i] == label) for i in both],
                   [float(judged[i] == label) for i in both],
                   [float(judged[i] == label) for i in rest], confidence=confidence)
    low = np.nan if est.ci_low is None else est.ci_low
    high = np.nan if est.ci_high is None else est.ci_high
    return est.estimate, low, high, len(both)


def criterion_table(criterion: Any, run: Any, *, human: Mapping[str, str] | None = None,
                    n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
                    ) -> pd.DataFrame:
    """One row per label of ``criterion``: its share of the judged items with a bootstrap CI
    over conversations, ``n`` (items judged), ``n_conversations``, and the corrected estimate
    from ``human`` (item id → one person's label) when given.

    Items whose judge call failed are left out (counted in the run's stats); with no judged
    item every share is n/a (NaN). When the answers are each conversation's agents
    (:func:`~maev_kit.criteria.failure_attribution`), the rows are the agents the judge named
    (sorted), ``agent@step`` counting for its agent.
    """
    by_item = {it.item_id: it.conversation_id for it in run.items}
    judged = run.labels()
    labels = criterion.labels
    if criterion.names_agents:
        from maev_kit.criteria import parse_attribution

        judged = {i: parse_attribution(lab)[0] for i, lab in judged.items()}
        human = {i: parse_attribution(lab)[0] for i, lab in (human or {}).items()}
        labels = tuple(sorted(set(judged.values())))
    convs = list(dict.fromkeys(by_item[i] for i in judged))
    at = {c: k for k, c in enumerate(convs)}
    counts = np.zeros((len(convs), len(labels)))
    col = {lab: k for k, lab in enumerate(labels)}
    for iid, lab in judged.items():
        counts[at[by_item[iid]], col[lab]] += 1
    n = int(counts.sum())
    if n:
        share = counts.sum(axis=0) / n
        low, high = _bootstrap_shares(counts, n_resamples, confidence, seed)
    else:
        share = low = high = np.full(len(labels), np.nan)
    rows = []
    for k, lab in enumerate(labels):
        corr = _corrected(lab, judged, human or {}, confidence)
        rows.append({"share": share[k], "share_low": low[k], "share_high": high[k], "n": n,
                     "n_conversations": len(convs), "corrected": corr[0],
                     "corrected_low": corr[1], "corrected_high": corr[2], "n_human": corr[3],
                     "positive": lab == criterion.positive})
    return pd.DataFrame(rows, index=pd.Index(labels, name="label"), columns=CRITERION_COLUMNS)


def _one_label_each(human: Mapping[str, Mapping[str, str]], items: Sequence[Any]
                    ) -> dict[str, str]:
    """Item id → the people's majority label (first annotator's on a tie), for ``items``; a
    label that is no answer to its item is an InputError naming the item."""
    from maev_kit.criteria import parse_attribution

    out = {}
    for it in items:
        if it.item_id not in human:
            continue
        votes = [it.answer(lab) for lab in human[it.item_id].values()]
        if it.definition is not None and it.definition.names_agents:  # agent@step: the agent
            votes = [parse_attribution(lab)[0] for lab in votes]
        out[it.item_id] = max(votes, key=votes.count)
    return out


def score_criteria(traces: Sequence[Any], criteria: Sequence[Any], judge: Any, *,
                   human_labels: Any = None, backend: Any = None,
                   backend_params: Mapping[str, Any] | None = None,
                   run_options: Mapping[str, Any] | None = None, n_resamples: int = 2000,
                   confidence: float = 0.95, seed: int = 0
                   ) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """(name → table, name → what was run: judge, version, model, items, errors by cause) for
    each criterion over ``traces``."""
    from maev_kit.criteria import LLMCriterionJudge, judge_criterion

    from maev_kit.criteria.internal import criterion_judge

    check_criteria_judge(judge)
    if backend is not None and not isinstance(backend, str) and isinstance(judge, str):
        judge = LLMCriterionJudge()  # the model the backend object serves
    elif isinstance(backend, str) and isinstance(judge, str):
        judge = backend
        backend = None
    else:
        judge, backend = criterion_judge(judge, backend_params=backend_params)
    tables: dict[str, pd.DataFrame] = {}
    info: dict[str, Any] = {}
    options = {k: v for k, v in (run_options or {}).items() if k != "mode"}
    people: Mapping[str, Mapping[str, str]] = {}
    if human_labels is not None:  # read once: a database store is one query, not one per
        from maev_kit.calibration import load_human_labels  # criterion

        people = load_human_labels(human_labels)
    for criterion in criteria:
        items = criterion.items(traces)
        if not items:
            tables[criterion.name] = criterion_table(criterion, _empty_run())
            info[criterion.name] = {"items": 0, "note": f"no {criterion.scope} to ask about"}
            continue
        run = judge_criterion(judge, items, backend, **options)
        human = _one_label_each(people, items)
        tables[criterion.name] = criterion_table(criterion, run, human=human,
                                                 n_resamples=n_resamples,
                                                 confidence=confidence, seed=seed)
        _warn_errors(criterion.name, run, len(items))
        info[criterion.name] = {
            "judge": run.judge_name, "judge_version": run.judge_version, "model": run.model,
            "items": len(items), "errors": run.stats.get("errors", 0),
            "errors_by_cause": dict(run.stats.get("errors_by_cause") or {}),
            "question": criterion.question, "scope": criterion.scope,
            **({"answers": "the agents of each conversation"} if criterion.names_agents
               else {}),
            "positive": criterion.positive, "human_labels": len(human)}
    return tables, info


def _warn_errors(name: str, run: Any, n: int) -> None:
    """A :class:`JudgeErrorWarning` when some calls failed: those items are left out."""
    errors = run.stats.get("errors", 0)
    if errors:
        import warnings

        from maev_kit.errors import JudgeErrorWarning

        causes = ", ".join(f"{k} {v}" for k, v in (run.stats.get("errors_by_cause") or {}).items())
        first = next((v.error for v in run.verdicts if v.error), "")
        warnings.warn(f"criterion {name}: {errors} of {n} items could not be judged ({causes}; "
                      f"first: {first[:200]}); they are left out of its shares",
                      JudgeErrorWarning, stacklevel=4)


def _empty_run() -> Any:
    from maev_kit.criteria import CriterionRun

    return CriterionRun([], "none", "0", None, {"errors": 0})


def criteria_asked(opts: Any) -> tuple[Any, tuple[list[Any], Any] | None]:
    """(the options retention is scored with, (criteria, their judge) or None): a function
    given as ``judge`` judges the criteria only, so retention is then not judged."""
    if opts.criteria is None:
        return opts, None
    criteria = resolve_criteria(opts.criteria)
    judge = opts.judge if opts.criteria_judge is None else opts.criteria_judge
    if criteria_only_judge(opts.judge):
        opts = opts.replace(judge=None)
    return opts, (criteria, judge)


def add_criteria(result: Any, asked: tuple[list[Any], Any] | None, traces: Sequence[Any],
                 opts: Any, labeled_set: Any) -> None:
    """Score the criteria asked (:func:`criteria_asked`) into ``result.criteria`` and what
    was judged into ``result.provenance["criteria"]``; people's labels from ``human_labels``,
    else the labeled set's."""
    if asked is None:
        return
    criteria, judge = asked
    labels = opts.human_labels if opts.human_labels is not None else labeled_set
    result.criteria, result.provenance["criteria"] = score_criteria(
        traces, criteria, judge, human_labels=labels, backend=opts.backend,
        run_options=opts.run_options, n_resamples=opts.n_resamples,
        confidence=opts.confidence, seed=opts.seed)
