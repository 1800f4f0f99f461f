"""What :func:`~maev_kit.evaluation.evaluate` returns: the result, its judge-error accounting."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, JudgeErrorsExceeded
from maev_kit.metrics import RoutingReport

if TYPE_CHECKING:
    import pandas as pd

    from maev_kit.traces import MultiAgentTrace

__all__ = ["EvaluationResult", "JudgeErrorSummary", "load_result"]


@dataclass(frozen=True)
class JudgeErrorSummary:
    """How many retention facts the judge labeled, and why the others failed.

    Attributes
    ----------
    total : int
        Facts to judge (one per key fact per handoff).
    judged : int
        Facts that received a label (retained, lost or contradicted).
    failed : int
        Facts whose judge call failed or whose reply could not be read: left out of every rate.
    by_cause : dict
        ``failed`` split by cause (one of :data:`maev_kit.errors.ERROR_CAUSES`).

    Examples
    --------
    >>> s = JudgeErrorSummary(total=382, judged=370, failed=12,
    ...                       by_cause={"timeout": 2, "rate_limit": 10})
    >>> str(s)
    'retention over 370 of 382 facts; 12 failed (rate_limit 10, timeout 2)'
    >>> round(s.share, 3)
    0.031
    >>> JudgeErrorSummary(0, 0, 0, {}).share
    nan
    """

    total: int = 0
    judged: int = 0
    failed: int = 0
    by_cause: dict[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float:
        """``failed / total``; NaN when there was nothing to judge."""
        return self.failed / self.total if self.total else math.nan

    def causes(self) -> str:
        """``"rate_limit 10, timeout 2"``: the causes, most frequent first."""
        ranked = sorted(self.by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{cause} {n}" for cause, n in ranked if n)

    def note(self) -> str:
        """``"over 370 of 382 facts; 12 failed (rate_limit 10, timeout 2)"``."""
        text = f"over {self.judged} of {self.total} facts; {self.failed} failed"
        causes = self.causes()
        return f"{text} ({causes})" if causes else text

    def __str__(self) -> str:
        return f"retention {self.note()}"


_HANDOFF = ("handoff_quality", "target_accuracy", "reason_accuracy", "context_completeness")
_RETENTION = ("information_retention", "retention_rate")
_ROUTING = ("routing_quality", "routing_exact", "routing_acceptable")
#: The component each aggregated metric belongs to (for the notes of :meth:`summary`).
METRIC_COMPONENT = {**dict.fromkeys(_HANDOFF, "handoff"), **dict.fromkeys(_RETENTION, "retention"),
                    **dict.fromkeys(_ROUTING, "routing")}


@dataclass
class EvaluationResult:
    """What :func:`~maev_kit.evaluation.evaluate` returns.

    The composite has three components (:func:`~maev_kit.metrics.coordination_score`):
    handoff quality = 0.5 · target accuracy + 0.5 · context completeness; information
    retention = max(0, retention rate − 0.2 · contradicted facts); routing quality = acceptable
    routing accuracy. A component with nothing to measure in a conversation is *n/a* (NaN),
    never 0 or 1: handoffs with no expected handoff, routing with no routing case, retention
    with no judged fact. The composite is Σ wᵢ·cᵢ / Σ wᵢ over the applicable components
    (weights 0.3 handoff, 0.4 retention, 0.3 routing unless ``weights`` says otherwise), so
    their weights are renormalised; it is NaN when none applies. With
    ``evaluate(..., not_applicable="article")`` the article's numbers are kept instead: a
    conversation with no expectation gets the handoff report's 1.0 (no handoff made) or 0.0,
    and 1.0 for routing and (with no key fact) retention.

    A judge error is never a verdict: a fact whose judge call failed (or whose reply could not
    be read) is left out of every rate, and counted in ``judge_errors`` and the ledger's
    ``error`` / ``error_cause`` columns. A conversation whose facts all failed has retention
    NaN in both modes.

    Attributes
    ----------
    per_conversation : DataFrame
        One row per conversation (see :meth:`ConversationScore.to_row
        <maev_kit.evaluation.ConversationScore.to_row>`): ``conversation_id``, ``split``,
        ``n_turns``, ``n_handoffs``; ``target_accuracy``, ``reason_accuracy``,
        ``context_completeness`` (shares of the expected handoffs; NaN without any),
        ``missing_handoffs``, ``unexpected_handoffs``; ``n_facts`` (facts to judge),
        ``retained``, ``lost``, ``contradicted`` (judged facts by label), ``judge_errors``
        (facts whose judge call failed), ``retention_rate`` (retained / judged facts; NaN with
        none judged); ``routing_cases``, ``routing_exact``, ``routing_acceptable`` (the first
        handoff made by ``triage_agent`` against the routing cases; NaN without a case);
        ``n_loops``, ``exceeds_limit``, ``should_escalate`` (circular handoffs);
        ``contract_violations``; the components ``handoff_quality``,
        ``information_retention``, ``routing_quality`` (NaN where n/a); ``composite``; and
        ``composite_components``, the components the composite used (``"handoff+retention"``;
        empty when none applied).
    aggregates : DataFrame
        One row per metric: metric, mean, ci_low, ci_high (percentile bootstrap over
        conversations), n (conversations where the metric applies) and note (why a metric is
        n/a, or for the retention rows "over N of M facts; K failed (cause n, ...)").
    handoff_matrix : DataFrame
        Counts of handoffs, from-agent (rows) × to-agent (columns).
    pair_stats : DataFrame
        Per agent pair: from_agent, to_agent, handoffs, facts, retained, lost, contradicted,
        judge_errors, retention_rate (retained / judged facts, NaN with none judged),
        context_complete (share of expected handoffs on this pair whose required keys were all
        passed; NaN without one).
    ledger : DataFrame
        The retention ledger, one row per key fact per handoff it is judged at: item_id,
        conversation_id, handoff_index, hop (the handoff's place in the conversation, from 0),
        from_agent, to_agent, fact_id, fact_key (the conversation's fact: the id where it was
        first stated; :attr:`fact_ledger` groups by it), fact, fact_source, label (None when
        the judge failed), rationale, evidence, evidence_at / evidence_turn / evidence_part /
        evidence_field / evidence_start / evidence_end (where the receiving agent kept or
        changed the value: its entry of the conversation view, the text or tool argument and
        the characters; missing when the judge named none),
        error, error_cause (one of :data:`maev_kit.errors.ERROR_CAUSES` when ``error`` is set),
        changed_at (the user's turn where the user changed the fact's value themselves: from
        there on the fact, superseded, is judged against the new value; missing otherwise).
    loops : list of dict
        Circular handoffs found, one dict per loop with conversation_id.
    violations : list of dict
        Handoff-contract violations, one dict each with conversation_id.
    routing : RoutingReport or None
        :func:`~maev_kit.metrics.score_routing` over every routing case of every conversation
        (None without any case).
    routing_confusion : DataFrame or None
        :func:`~maev_kit.metrics.routing_confusion` over the same cases (None without any).
    estimates : DataFrame or None
        The retention rates (retained, lost, contradicted; over all handoffs and per agent
        pair) estimated three ways: judge-only, human-only and PPI++ corrected with human
        labels on a random sample (``docs/estimates.md``); judge-only rows say "not corrected
        for judge error" and why. None when nothing was judged.
    label_budget : DataFrame or None
        Per overall rate, the human labels of the random sample its PPI++ interval needs to
        reach ``± target_half_width`` (planned from the labels so far), how many more, the
        expected half-width, and the labels people alone would need; empty without a labeled
        random sample.
    judge : dict
        name, version, model, offline, stats of the judge run.
    provenance : dict
        kit version, labeled set name/version/hash, judge card, date, not_applicable mode.
    traces : list of MultiAgentTrace
    weights : dict or None
        The composite weights given to ``evaluate``.
    judge_errors : JudgeErrorSummary
        Facts to judge, judged, failed, failures by cause.
    criteria : dict
        Criterion name → one row per label (in the criterion's order): ``share`` of the judged
        items with ``share_low`` / ``share_high`` (percentile bootstrap over conversations),
        ``n`` items judged, ``n_conversations``, ``corrected`` / ``corrected_low`` /
        ``corrected_high`` (PPI++ with ``n_human`` people's labels; NaN without), ``positive``
        (the criterion's reported label). Empty without ``evaluate(..., criteria=...)``.
        :meth:`save` keeps each as ``criterion-<name>.parquet`` (``provenance["criteria"]``
        says what was judged).
    not_applicable : dict
        Component (``handoff``, ``retention``, ``routing``) → ``{"conversations": n,
        "reason": "..."}`` for the components that were n/a somewhere (empty in ``"article"``
        mode).
    """

    per_conversation: pd.DataFrame
    aggregates: pd.DataFrame
    handoff_matrix: pd.DataFrame
    pair_stats: pd.DataFrame
    ledger: pd.DataFrame
    loops: list[dict[str, Any]]
    violations: list[dict[str, Any]]
    routing: RoutingReport | None
    judge: dict[str, Any]
    provenance: dict[str, Any]
    traces: list[MultiAgentTrace] = field(repr=False, default_factory=list)
    weights: dict[str, float] | None = None
    judge_errors: JudgeErrorSummary = field(default_factory=JudgeErrorSummary)
    not_applicable: dict[str, dict[str, Any]] = field(default_factory=dict)
    routing_confusion: pd.DataFrame | None = field(default=None, repr=False)
    estimates: pd.DataFrame | None = field(default=None, repr=False)
    label_budget: pd.DataFrame | None = field(default=None, repr=False)
    criteria: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def fact_ledger(self) -> pd.DataFrame:
        """One row per key fact of each conversation, followed hop by hop: its verdict path
        (``"RLR"``), the first handoff where it was lost, whether it was re-acquired (see
        :func:`~maev_kit.evaluation.fact_ledger`)."""
        from maev_kit.evaluation._ledger import fact_ledger

        return fact_ledger(self.ledger)

    def summary(self) -> pd.DataFrame:
        """The aggregates by metric: mean, ci_low, ci_high, n and a note (why n/a, judge errors)."""
        agg = self.aggregates.set_index("metric")
        if "note" not in agg.columns:
            agg = agg.assign(note="")
        return agg

    def worst(self, n: int = 5) -> pd.DataFrame:
        """The ``n`` conversations with the lowest composite score (NaN composites last)."""
        return self.per_conversation.sort_values("composite", na_position="last",
                                                 kind="stable").head(n)

    def raise_for_judge_errors(self, max_share: float = 0.05) -> EvaluationResult:
        """Raise :class:`~maev_kit.errors.JudgeErrorsExceeded` when more than ``max_share`` of
        the facts could not be judged; return the result otherwise.

        Examples
        --------
        >>> import pandas as pd
        >>> e = pd.DataFrame()
        >>> r = EvaluationResult(e, e, e, e, e, [], [], None, {}, {},
        ...                      judge_errors=JudgeErrorSummary(382, 0, 382, {"auth": 382}))
        >>> r.raise_for_judge_errors()
        Traceback (most recent call last):
        ...
        maev_kit.errors.JudgeErrorsExceeded: 382 of 382 facts could not be judged (100.0% > 5.0% allowed; auth 382): no rate from this run can be trusted; fix the judge and run again
        """
        if isinstance(max_share, bool) or not isinstance(max_share, (int, float)) \
                or not 0 <= max_share <= 1:
            raise ValueError(f"`max_share` must be a number in [0, 1], got {max_share!r}")
        s = self.judge_errors
        if s.failed and s.share > max_share:
            causes = s.causes()
            raise JudgeErrorsExceeded(
                f"{s.failed} of {s.total} facts could not be judged ({s.share:.1%} > "
                f"{max_share:.1%} allowed" + (f"; {causes}" if causes else "") + "): "
                + ("no rate from this run can be trusted; fix the judge and run again"
                   if s.judged == 0 else "retention is over too few facts to trust"))
        return self

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the result to the folder ``path``: one Parquet file per table and a
        ``manifest.json`` (format, schema version, checksums, judge, provenance, loops,
        violations, routing…; ``docs/formats.md``). :func:`load_result` reads it back equal
        (:meth:`equals`), in another notebook or next week.

        A folder holding an earlier saved result is replaced; any other non-empty folder, or
        a file, is refused (:class:`~maev_kit._files.OverwriteRefused`), nothing written.
        Values in ``provenance`` that are records (a Ray run's failed shards) are saved as
        their fields and come back as dicts.

        Examples
        --------
        >>> import tempfile, warnings
        >>> from maev_kit.evaluation import evaluate, load_result
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     result = evaluate("support_desk", judge=None, n_resamples=100, progress=False)
        >>> folder = result.save(tempfile.mkdtemp() + "/run")
        >>> sorted(p.name for p in folder.iterdir())[:3]
        ['aggregates.parquet', 'handoff_matrix.parquet', 'ledger.parquet']
        >>> load_result(folder).equals(result)
        True
        """
        from maev_kit.internal import __version__
        from maev_kit.evaluation._persist import write_parts

        tables, values = self._parts()
        return write_parts(path, tables, values, kit_version=__version__)

    def log_to_mlflow(self, *, tracking_uri: str | None = None, experiment: str = "maev-kit",
                      run_name: str | None = None, report_html: Any = None) -> str:
        """Log this result as one MLflow run; returns its run id (``pip install
        'maev-kit[mlflow]'``; docs/mlflow.md).

        Metrics: every aggregate's mean with ``.ci_low`` / ``.ci_high`` (NaN left out) and the
        PPI++ corrected rates when :attr:`estimates` has them. Params: the judge (name,
        version, model, prompt), the judge card's hash, the labeled set (name, version, hash),
        the maev-kit version; never a URL or a secret. Artifact: the HTML report
        (``report(result)`` unless ``report_html`` is given). ``tracking_uri`` defaults to
        ``sqlite:///mlflow.db`` in the current folder.

        The logger lives in the reporting layer (it builds the report); this layer reaches it
        through ``maev_kit.internal.views.call``, which the package root provides on import.
        """
        from maev_kit.internal import views

        return str(views.call("log_to_mlflow", self, tracking_uri=tracking_uri,
                               experiment=experiment, run_name=run_name,
                               report_html=report_html))

    def _parts(self) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
        """The tables and the JSON values :meth:`save` writes."""
        import json

        import pandas as pd

        from maev_kit.traces import trace_to_dict

        confusion = self.routing_confusion
        tables = {"per_conversation": self.per_conversation, "aggregates": self.aggregates,
                  "handoff_matrix": self.handoff_matrix, "pair_stats": self.pair_stats,
                  "ledger": self.ledger,
                  "traces": pd.DataFrame({"trace": [json.dumps(trace_to_dict(t),
                                                               ensure_ascii=False)
                                                    for t in self.traces]}, dtype=object)}
        if confusion is not None:
            tables["routing_confusion"] = confusion
        if self.estimates is not None:
            tables["estimates"] = self.estimates
        if self.label_budget is not None:
            tables["label_budget"] = self.label_budget
        for name, table in self.criteria.items():  # its index (the label) saved as a column
            tables[CRITERION_TABLE.format(name=name)] = table.reset_index()
        values = {"routing": self.routing, "routing_has_confusion": confusion is not None,
                  "judge": self.judge, "provenance": self.provenance, "weights": self.weights,
                  "judge_errors": self.judge_errors, "not_applicable": self.not_applicable,
                  "loops": self.loops, "violations": self.violations,
                  "criteria": list(self.criteria)}
        return tables, values

    def equals(self, other: object) -> bool:
        """Whether ``other`` holds the same result: every table equal (``DataFrame.equals``:
        values, dtypes, NaN where NaN), every other field equal as data (records as their
        fields), the traces equal."""
        from maev_kit.evaluation._persist import plain_equal, to_plain

        if not isinstance(other, EvaluationResult):
            return False
        mine, theirs = self._parts(), other._parts()
        same_tables = mine[0].keys() == theirs[0].keys() and all(
            _frames_equal(mine[0][k], theirs[0][k]) for k in mine[0])
        return same_tables and plain_equal(to_plain(mine[1]), to_plain(theirs[1]))

    def _repr_html_(self) -> str:
        return self.summary()._repr_html_()  # type: ignore[operator]


#: The saved table of a criterion (``result.criteria[name]``, its label index a column).
CRITERION_TABLE = "criterion-{name}"


def _criteria_tables(manifest: dict[str, Any], tables: dict[str, pd.DataFrame],
                     shown: str) -> dict[str, pd.DataFrame]:
    """``result.criteria`` from a saved result, in the saved order (a folder saved before
    criteria were kept has none)."""
    names = manifest.get("criteria") or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(f"{shown} › criteria: expected a list of criterion "
                         f"names, got {names!r}")
    out = {}
    for name in names:
        table = tables.get(CRITERION_TABLE.format(name=name))
        if table is None or "label" not in table.columns:
            raise InputError(f"{shown} › criteria: the table of criterion "
                             f"{name!r} is not in tables (or has no `label` column)")
        out[name] = table.set_index("label")
    return out


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """``a.equals(b)`` with the column and index names compared too."""
    return bool(a.equals(b)) and list(a.columns) == list(b.columns) \
        and list(a.index.names) == list(b.index.names) and list(a.columns.names) == \
        list(b.columns.names)


def load_result(path: str | os.PathLike[str]) -> EvaluationResult:
    """Read back a result written by :meth:`EvaluationResult.save`.

    Raises
    ------
    InputError
        ``path`` is not a saved result, was written by a newer maev-kit (its
        ``schema_version`` is named with the version that wrote it), or a table is missing
        or changed since it was saved (``manifest.json › tables.<name>``).

    Examples
    --------
    >>> import tempfile
    >>> load_result(tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: .../manifest.json: missing; ... is not a saved maev-kit result
    """
    import json

    from maev_kit.evaluation._persist import read_parts
    from maev_kit.traces import trace_from_dict

    manifest, tables = read_parts(path)
    routing = manifest.get("routing")
    traces = [trace_from_dict(json.loads(s), file=f"{os.fspath(path)}/traces.parquet",
                              line=i + 1) for i, s in enumerate(tables["traces"]["trace"])]
    je = manifest.get("judge_errors") or {}
    return EvaluationResult(
        per_conversation=tables["per_conversation"], aggregates=tables["aggregates"],
        handoff_matrix=tables["handoff_matrix"], pair_stats=tables["pair_stats"],
        ledger=tables["ledger"], loops=list(manifest.get("loops") or []),
        violations=list(manifest.get("violations") or []),
        routing=RoutingReport.from_dict(routing) if routing else None,
        routing_confusion=(tables["routing_confusion"] if manifest.get("routing_has_confusion")
                           else None),
        estimates=tables.get("estimates"), label_budget=tables.get("label_budget"),
        judge=dict(manifest.get("judge") or {}), provenance=dict(manifest.get("provenance") or {}),
        traces=traces, weights=manifest.get("weights"),
        judge_errors=JudgeErrorSummary(**je),
        not_applicable=dict(manifest.get("not_applicable") or {}),
        criteria=_criteria_tables(manifest, tables, os.fspath(Path(path) / "manifest.json")))
