"""Score every conversation: handoffs, retention (with a judge), routing, loops, contracts.

``evaluate(...)`` is the one call behind ``maev score``, ``maev demo`` and the report.
"""

from __future__ import annotations

import datetime as _dt
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit import __version__
from maev_kit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from maev_kit.datasets import LabeledSet
    from maev_kit.traces import MultiAgentTrace

__all__ = ["EvaluationResult", "evaluate"]

#: Per-conversation columns whose mean (with a bootstrap CI) is reported in ``aggregates``.
AGGREGATED = ("composite", "handoff_quality", "information_retention", "routing_quality",
              "target_accuracy", "reason_accuracy", "context_completeness", "retention_rate",
              "routing_exact", "routing_acceptable")


@dataclass
class EvaluationResult:
    """What :func:`evaluate` returns.

    Attributes
    ----------
    per_conversation : DataFrame
        One row per conversation: conversation_id, split, n_turns, n_handoffs, target_accuracy,
        reason_accuracy, context_completeness, missing_handoffs, unexpected_handoffs,
        n_facts, retained, lost, contradicted, judge_errors, retention_rate, routing_cases,
        routing_exact, routing_acceptable, n_loops, exceeds_limit, should_escalate,
        contract_violations, handoff_quality, information_retention, routing_quality, composite.
        The routing decision is the first handoff made by ``triage_agent``. The composite
        follows :func:`~maev_kit.metrics.coordination_score`; a conversation with no routing
        case (or no key fact) has nothing to get wrong there and counts 1.0 for that component,
        as a conversation with no expected and no actual handoff does for handoffs.
    aggregates : DataFrame
        One row per metric: metric, mean, ci_low, ci_high, n (percentile bootstrap over
        conversations).
    handoff_matrix : DataFrame
        Counts of handoffs, from-agent (rows) × to-agent (columns).
    pair_stats : DataFrame
        Per agent pair: from_agent, to_agent, handoffs, facts, retained, lost, contradicted,
        retention_rate, context_complete (share of expected handoffs on this pair whose
        required keys were all passed).
    ledger : DataFrame
        The per-fact retention ledger: item_id, conversation_id, handoff_index, from_agent,
        to_agent, fact_id, fact, label, rationale, evidence, error.
    loops : list of dict
        Circular handoffs found, one dict per loop with conversation_id.
    violations : list of dict
        Handoff-contract violations, one dict each with conversation_id.
    routing : dict
        ``score_routing`` over every routing case of every conversation, plus ``confusion``.
    judge : dict
        name, version, model, offline, stats of the judge run.
    provenance : dict
        kit version, labeled set name/version/hash, judge card, date.
    """

    per_conversation: pd.DataFrame
    aggregates: pd.DataFrame
    handoff_matrix: pd.DataFrame
    pair_stats: pd.DataFrame
    ledger: pd.DataFrame
    loops: list[dict[str, Any]]
    violations: list[dict[str, Any]]
    routing: dict[str, Any]
    judge: dict[str, Any]
    provenance: dict[str, Any]
    traces: list[MultiAgentTrace] = field(repr=False, default_factory=list)
    weights: dict[str, float] | None = None

    def summary(self) -> pd.DataFrame:
        """The aggregates as a compact table (metric, mean, 95 % CI)."""
        return self.aggregates.set_index("metric")

    def worst(self, n: int = 5) -> pd.DataFrame:
        """The ``n`` conversations with the lowest composite score."""
        return self.per_conversation.nsmallest(n, "composite")

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()  # type: ignore[operator]


def _resolve_judge(judge: Any, backend: Any, prompt: str | None) -> tuple[Any, Any]:
    """A judge object and its backend from what the caller gave.

    ``judge`` may be a judge object, an offline judge name (``"heuristic"``), a prompt-variant
    name (``"retention-v1"``) or a litellm model string (``"gpt-4o-mini"``, which is paired with
    ``RetentionJudge(prompt=prompt or "v1")``).
    """
    from maev_kit import judges

    if not isinstance(judge, str):
        return judge, backend
    try:
        return judges.get_judge(judge), backend
    except ValueError as e:
        if "did you mean" in str(e):  # a typo of an offline judge's name, not a model string
            raise InputError(str(e)) from None
    # Anything else is a model string for the LLM judge.
    return judges.RetentionJudge(prompt=prompt or "v1"), backend or judge


def _fit_on_other_splits(judge: Any, labeled_set: LabeledSet | None, split: str | None) -> None:
    """Fit a judge that learns from labels on every split but the one being scored."""
    from maev_kit.calibration._human import fit_on_majority, load_human_labels

    name = getattr(judge, "name", "this judge")
    if labeled_set is None or split is None:
        raise InputError(f"{name} learns from labels: evaluate a labeled set's held-out split "
                         f"(e.g. split='test'); it is fit on the other splits and never scores "
                         "an item it was trained on")
    train_ids = {cid for s, ids in labeled_set.manifest.splits.items() if s != split for cid in ids}
    human = load_human_labels(labeled_set)
    items = [i for i in labeled_set.items if i.conversation_id in train_ids and i.item_id in human]
    if not items:
        raise InputError(f"{name} needs labeled items outside split {split!r} to learn from")
    fit_on_majority(judge, items, human)


def _bootstrap_means(frame: pd.DataFrame, columns: Sequence[str], *, n_resamples: int,
                     confidence: float, seed: int) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    n = len(frame)
    idx = rng.integers(0, n, size=(n_resamples, n)) if n else None
    alpha = (1 - confidence) / 2
    for col in columns:
        values = frame[col].to_numpy(dtype=float) if n else np.array([])
        ok = ~np.isnan(values)
        if not ok.any():
            rows.append((col, float("nan"), float("nan"), float("nan"), 0))
            continue
        mean = float(values[ok].mean())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            boot = np.nanmean(values[idx], axis=1)
        boot = boot[~np.isnan(boot)]
        lo, hi = (np.quantile(boot, [alpha, 1 - alpha]) if boot.size else (np.nan, np.nan))
        rows.append((col, round(mean, 4), round(float(lo), 4), round(float(hi), 4),
                     int(ok.sum())))
    return pd.DataFrame(rows, columns=["metric", "mean", "ci_low", "ci_high", "n"])


def _actual_route(trace: MultiAgentTrace, triage: str | None) -> str | None:
    """Where the triage agent sent the user: the first handoff's target (None if no handoff)."""
    for h in sorted(trace.handoffs, key=lambda h: h.turn_index):
        if triage is None or h.from_agent == triage:
            return h.to_agent
    return None


def evaluate(
    labeled_set_or_traces: LabeledSet | str | os.PathLike[str] | Sequence[MultiAgentTrace],
    *,
    judge: Any = "heuristic",
    judge_card: Any = None,
    backend: Any = None,
    prompt: str | None = None,
    expectations: Any = None,
    contracts: Any = None,
    split: str | None = None,
    triage_agent: str | None = "triage",
    max_handoffs: int = 5,
    weights: dict[str, float] | None = None,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    cache: Any = None,
    progress: bool = True,
    max_concurrency: int = 16,
) -> EvaluationResult:
    """Score every conversation for coordination quality.

    Parameters
    ----------
    labeled_set_or_traces : LabeledSet, path to a labeled-set folder (or a bundled set's name,
        e.g. ``"support_desk"``), path to a trace JSONL file, or a list of traces.
    judge : judge object, offline judge name (``"heuristic"``), or a litellm model string
        (``"gpt-4o-mini"``, ``"openai/<name>"`` with ``backend`` params) for the LLM judge.
    judge_card : JudgeCard or path, optional
        The card pinned by calibration; a warning is issued when ``judge`` or the labeled set
        no longer matches it.
    backend : backend object or litellm model string, for LLM judges.
    prompt : ``"v1"`` or ``"v2"`` when ``judge`` is a model string.
    expectations : path or records, when ``labeled_set_or_traces`` is traces.
    contracts : list of HandoffContract, a path (YAML/JSON) or records; a labeled set's
        manifest contracts are used by default.
    split : score only this split of a labeled set (e.g. ``"test"``).
    triage_agent : the agent whose first handoff is the routing decision.
    max_handoffs : handoff-count limit for :func:`~maev_kit.metrics.detect_circular_handoffs`.
    weights : composite weights, see :func:`~maev_kit.metrics.coordination_score`.
    n_resamples, confidence, seed : bootstrap over conversations for the aggregates' CIs.
    cache, progress, max_concurrency : passed to :func:`~maev_kit.runner.run_judge`.

    Returns
    -------
    EvaluationResult

    Examples
    --------
    >>> from maev_kit import evaluate
    >>> result = evaluate("support_desk", judge="heuristic", progress=False)  # doctest: +SKIP
    >>> result.summary().loc["composite", "mean"]  # doctest: +SKIP
    0.71
    """
    import pandas as pd

    from maev_kit import metrics
    from maev_kit.datasets import LabeledSet, load_labeled_set
    from maev_kit.expectations import load_expectations
    from maev_kit.retention import build_retention_items
    from maev_kit.runner import run_judge
    from maev_kit.traces import load_traces

    labeled_set: LabeledSet | None = None
    src = labeled_set_or_traces
    if isinstance(src, LabeledSet):
        labeled_set = src
    elif isinstance(src, (str, os.PathLike)):
        from pathlib import Path

        p = Path(src)
        if p.is_file():
            traces = load_traces(p)
        else:
            labeled_set = load_labeled_set(p)
    else:
        traces = list(src)
    if labeled_set is not None:
        traces = labeled_set.traces_in(split)
        exp_by_conv = labeled_set.expectations
        if contracts is None:
            contracts = labeled_set.manifest.contracts or None
    else:
        if split is not None:
            raise InputError("`split` needs a labeled set; got traces")
        exp_by_conv = load_expectations(expectations) if expectations is not None else {}
    if contracts is not None and not isinstance(contracts, (list, tuple)):
        contracts = metrics.load_contracts(contracts)
    elif contracts:
        contracts = metrics.parse_contracts(contracts)
    if not traces:
        raise InputError("nothing to evaluate: no traces"
                         + (f" in split {split!r}" if split else ""))

    judge_obj, judge_backend = _resolve_judge(judge, backend, prompt)
    if judge_card is not None:
        from maev_kit.calibration import JudgeCard

        card = judge_card if isinstance(judge_card, JudgeCard) else JudgeCard.load(judge_card)
        model = (judge_backend if isinstance(judge_backend, str)
                 else getattr(judge_backend, "model", None))
        card.check(judge_obj, model=model, labeled_set=labeled_set)

    if getattr(judge_obj, "requires_fit", False) and not getattr(judge_obj, "is_fitted", True):
        _fit_on_other_splits(judge_obj, labeled_set, split)
    items = build_retention_items(traces, exp_by_conv)
    run = run_judge(judge_obj, items, judge_backend, cache=cache, progress=progress,
                    max_concurrency=max_concurrency) if items else None
    verdicts = {v.item_id: v for v in (run.verdicts if run else [])}

    ledger_rows = []
    for it in items:
        v = verdicts.get(it.item_id)
        ledger_rows.append({
            "item_id": it.item_id, "conversation_id": it.conversation_id,
            "handoff_index": it.handoff_index, "from_agent": it.from_agent,
            "to_agent": it.to_agent, "fact_id": it.fact_id, "fact": it.fact,
            "label": v.label if v else None, "rationale": v.rationale if v else "",
            "evidence": "; ".join(v.evidence) if v else "", "error": v.error if v else None})
    ledger = pd.DataFrame(ledger_rows, columns=[
        "item_id", "conversation_id", "handoff_index", "from_agent", "to_agent", "fact_id",
        "fact", "label", "rationale", "evidence", "error"])

    ledger_by_conv: dict[str, list[dict[str, Any]]] = {}
    for r in ledger_rows:
        ledger_by_conv.setdefault(r["conversation_id"], []).append(r)
    rows, loops, violations = [], [], []
    all_cases, all_routes = [], []
    pair_ctx: dict[tuple[str, str], list[bool]] = {}
    for t in traces:
        exp = exp_by_conv.get(t.conversation_id)
        hrep = metrics.score_handoff_accuracy(t.handoffs, exp.handoffs if exp else [])
        for d in hrep["handoff_details"]:
            if d["actual_index"] is not None:
                h = t.handoffs[d["actual_index"]]
                pair_ctx.setdefault((h.from_agent, h.to_agent), []).append(d["context_complete"])
        conv_ledger = ledger_by_conv.get(t.conversation_id, [])
        counts = {lab: sum(r["label"] == lab for r in conv_ledger)
                  for lab in ("retained", "lost", "contradicted")}
        judged = sum(counts.values())
        rrep = {"retention_rate": round(counts["retained"] / judged, 3) if judged else 1.0,
                **counts}
        cases = list(exp.routing) if exp else []
        route = _actual_route(t, triage_agent)
        routes = [route] * len(cases)
        all_cases += cases
        all_routes += routes
        if cases:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                route_rep = metrics.score_routing(cases, routes)
        else:
            route_rep = {"exact_routing_accuracy": float("nan"),
                         "acceptable_routing_accuracy": float("nan")}
        loop_rep = metrics.detect_circular_handoffs(t, max_handoffs=max_handoffs)
        for lp in loop_rep["loops"]:
            loops.append({"conversation_id": t.conversation_id, **lp})
        viols = metrics.check_handoff_contracts(t, contracts) if contracts else []
        for v in viols:
            vd = v.to_dict() if hasattr(v, "to_dict") else dict(v)
            violations.append({"conversation_id": t.conversation_id, **vd})
        routing_for_score = (route_rep if cases
                             else {"acceptable_routing_accuracy": 1.0})
        comp = metrics.coordination_score(hrep, rrep, routing_for_score, weights=weights)
        rows.append({
            "conversation_id": t.conversation_id,
            "split": labeled_set.split_of(t.conversation_id) if labeled_set else None,
            "n_turns": len(t.turns), "n_handoffs": len(t.handoffs),
            "target_accuracy": hrep["target_accuracy"],
            "reason_accuracy": hrep["reason_accuracy"],
            "context_completeness": hrep["context_completeness"],
            "missing_handoffs": hrep["missing_handoffs"],
            "unexpected_handoffs": hrep["unexpected_handoffs"],
            "n_facts": len(conv_ledger), **counts,
            "judge_errors": sum(r["error"] is not None for r in conv_ledger),
            "retention_rate": rrep["retention_rate"],
            "routing_cases": len(cases),
            "routing_exact": route_rep["exact_routing_accuracy"],
            "routing_acceptable": route_rep["acceptable_routing_accuracy"],
            "n_loops": len(loop_rep["loops"]), "exceeds_limit": loop_rep["exceeds_limit"],
            "should_escalate": loop_rep["should_escalate"],
            "contract_violations": len(viols),
            "handoff_quality": comp["handoff_quality"],
            "information_retention": comp["information_retention"],
            "routing_quality": comp["routing_quality"],
            "composite": comp["composite_coordination"],
        })
    per_conv = pd.DataFrame(rows)
    aggregates = _bootstrap_means(per_conv, AGGREGATED, n_resamples=n_resamples,
                                  confidence=confidence, seed=seed)

    hf = pd.DataFrame([(h.from_agent, h.to_agent) for t in traces for h in t.handoffs],
                      columns=["from_agent", "to_agent"])
    matrix = (pd.crosstab(hf["from_agent"], hf["to_agent"]) if len(hf)
              else pd.DataFrame())
    pair_rows = []
    for (fa, ta), n in hf.value_counts().items() if len(hf) else []:
        sub = ledger[(ledger["from_agent"] == fa) & (ledger["to_agent"] == ta)]
        c = {lab: int((sub["label"] == lab).sum()) for lab in ("retained", "lost", "contradicted")}
        judged = sum(c.values())
        ctx = pair_ctx.get((fa, ta), [])
        pair_rows.append({"from_agent": fa, "to_agent": ta, "handoffs": int(n),
                          "facts": len(sub), **c,
                          "retention_rate": round(c["retained"] / judged, 3) if judged else None,
                          "context_complete": round(sum(ctx) / len(ctx), 3) if ctx else None})
    pair_stats = pd.DataFrame(pair_rows, columns=[
        "from_agent", "to_agent", "handoffs", "facts", "retained", "lost", "contradicted",
        "retention_rate", "context_complete"])

    routing: dict[str, Any] = {}
    if all_cases:
        routing = dict(metrics.score_routing(all_cases, all_routes))
        routing["confusion"] = metrics.routing_confusion(all_cases, all_routes)

    judge_info = {"name": getattr(judge_obj, "name", str(judge)),
                  "version": getattr(judge_obj, "version", ""),
                  "model": run.model if run else None,
                  "offline": bool(getattr(judge_obj, "offline", False)),
                  "stats": dict(run.stats) if run else {}}
    provenance = {"maev_kit_version": __version__,
                  "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "labeled_set": ({"name": labeled_set.name, "version": labeled_set.version,
                                   "hash": labeled_set.content_hash,
                                   "labels_hash": labeled_set.labels_hash}
                                  if labeled_set else None),
                  "split": split, "confidence": confidence,
                  "judge_card": (judge_card.model_dump() if hasattr(judge_card, "model_dump")
                                 else (str(judge_card) if judge_card is not None else None)),
                  "n_conversations": len(traces), "n_items": len(items)}
    return EvaluationResult(per_conv, aggregates, matrix, pair_stats, ledger, loops,
                            violations, routing, judge_info, provenance, traces, weights)
