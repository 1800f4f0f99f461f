"""Score one conversation: the stage of :func:`~maev_kit.evaluation.evaluate` that runs per trace."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from maev_kit import metrics
from maev_kit.expectations import RoutingTestCase
from maev_kit.internal import paused_gc
from maev_kit.metrics import CoordinationReport, HandoffReport, LoopReport, RoutingReport
from maev_kit.metrics.internal import (
    DEFAULT_CONTRADICTION_PENALTY,
    accuracies as routing_accuracies,
    as_records,
    check_weights,
    combine as combine_components,
)

if TYPE_CHECKING:
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.judges import Verdict
    from maev_kit.metrics import HandoffContract
    from maev_kit.traces import MultiAgentTrace

__all__ = ["ConversationScore", "score_conversation", "score_traces"]

NotApplicable = Literal["na", "article"]
_LABELS = ("retained", "lost", "contradicted")
_ALL = ("handoff", "retention", "routing")
NAN = math.nan
#: The reason retention is n/a when no judge was asked (``judge=None``).
NOT_JUDGED = "not judged (judge=None)"


@dataclass(frozen=True)
class ConversationScore:
    """Every score of one conversation, as :func:`score_conversation` computes it.

    The fields up to ``composite_components`` are the columns of
    :attr:`EvaluationResult.per_conversation <maev_kit.evaluation.EvaluationResult>`
    (:meth:`to_row` returns them); NaN marks a component that is n/a. The others carry what
    the aggregate stage needs: the loops and contract violations found, the routing cases and
    the route taken, the context check of each expected handoff per agent pair, the judge
    failures by cause and, per n/a component, why.
    """

    conversation_id: str
    split: str | None
    n_turns: int
    n_handoffs: int
    target_accuracy: float
    reason_accuracy: float
    context_completeness: float
    missing_handoffs: int
    unexpected_handoffs: int
    n_facts: int
    retained: int
    lost: int
    contradicted: int
    judge_errors: int
    retention_rate: float
    routing_cases: int
    routing_exact: float
    routing_acceptable: float
    n_loops: int
    exceeds_limit: bool
    should_escalate: bool
    contract_violations: int
    handoff_quality: float
    information_retention: float
    routing_quality: float
    composite: float
    composite_components: str
    # not columns:
    loops: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    violations: tuple[dict[str, Any], ...] = field(default=(), repr=False)
    cases: tuple[RoutingTestCase, ...] = field(default=(), repr=False)
    route: str | None = field(default=None, repr=False)
    pair_context: tuple[tuple[str, str, bool], ...] = field(default=(), repr=False)
    errors_by_cause: Mapping[str, int] = field(default_factory=dict, repr=False)
    not_applicable: Mapping[str, str] = field(default_factory=dict, repr=False)

    def to_row(self) -> dict[str, Any]:
        """The per-conversation columns, in order, as a dict."""
        return {f.name: getattr(self, f.name) for f in _ROW_FIELDS}


_ROW_FIELDS = tuple(f for f in fields(ConversationScore) if f.name != "loops"
                    and f.name not in {"violations", "cases", "route", "pair_context",
                                       "errors_by_cause", "not_applicable"})
#: The per-conversation columns, in order.
COLUMNS = tuple(f.name for f in _ROW_FIELDS)


def score_conversation(
    trace: MultiAgentTrace,
    expectations: ConversationExpectations | None,
    verdicts: Sequence[Verdict] | None = (),
    contracts: Sequence[HandoffContract] | None = None,
    *,
    split: str | None = None,
    triage_agent: str | None = "triage",
    max_handoffs: int = 5,
    weights: Mapping[str, float] | None = None,
    not_applicable: NotApplicable = "na",
) -> ConversationScore:
    """Score one conversation from its trace, its expectations and its facts' verdicts.

    This is the per-conversation stage of :func:`~maev_kit.evaluation.evaluate`; it needs no
    judge (the verdicts are given) and no other conversation, so it can run anywhere.

    Parameters
    ----------
    trace : MultiAgentTrace
    expectations : ConversationExpectations or None
        None when the conversation has none: every component but loops and contracts is n/a.
    verdicts : sequence of Verdict, or None
        One per retention item of this conversation (``item_id`` starting with
        ``"<conversation_id>/"``): a label, or an error that is left out of every rate. None:
        no judge was asked: where retention is n/a, the reason is :data:`NOT_JUDGED`.
    contracts : list of HandoffContract, optional
    split : the conversation's split, copied to the row.
    triage_agent : the agent whose first handoff is the routing decision (None: the first
        handoff of any agent).
    max_handoffs : limit for :func:`~maev_kit.metrics.detect_circular_handoffs`.
    weights : composite weights, see :func:`~maev_kit.metrics.coordination_score`.
    not_applicable : {"na", "article"}
        ``"na"``: a component with nothing to measure is NaN and the composite is over the
        others; ``"article"``: the article's numbers (see
        :class:`~maev_kit.evaluation.EvaluationResult`).

    Returns
    -------
    ConversationScore

    Examples
    --------
    >>> from maev_kit import AgentTurn, Handoff, MultiAgentTrace
    >>> from maev_kit.expectations import load_expectations
    >>> from maev_kit.judges import Verdict
    >>> t = MultiAgentTrace("c1", turns=[AgentTurn("triage", "router", "Billing it is.", turn_index=1),
    ...     AgentTurn("billing", "specialist", "Account ACCT-1, refund sent.", turn_index=3)],
    ...     handoffs=[Handoff("triage", "billing", None, turn_index=2)])
    >>> exp = load_expectations([{"conversation_id": "c1", "key_facts": [
    ...     {"fact_id": "f1", "handoff_index": 0, "text": "Account is ACCT-1"}]}])["c1"]
    >>> s = score_conversation(t, exp, [Verdict("c1/h0/f1", "retained")])
    >>> s.retention_rate, s.handoff_quality, s.composite, s.composite_components
    (1.0, nan, 1.0, 'retention')
    >>> s.not_applicable["handoff"]
    'no expected handoffs'
    >>> failed = Verdict("c1/h0/f1", None, error="HTTP 429")
    >>> s = score_conversation(t, exp, [failed])
    >>> s.judge_errors, s.retention_rate, s.composite
    (1, nan, nan)
    """
    if not_applicable not in ("na", "article"):
        raise ValueError(f"`not_applicable` must be 'na' or 'article', got {not_applicable!r}")
    article = not_applicable == "article"
    na: dict[str, str] = {}  # component -> why it is n/a, filled by each part
    handoffs, handoff_for_score, accuracies = _score_handoffs(trace, expectations, article, na)
    retention = _tally_verdicts(trace.conversation_id, verdicts, article, na)
    cases, route, routing = _score_routing(trace, expectations, triage_agent, article, na)
    loops = metrics.detect_circular_handoffs(trace, max_handoffs=max_handoffs)
    # coordination_score's rule; its report checks are skipped: the reports are built here
    comp = combine_components(
        handoff_for_score,
        {"retention_rate": retention.rate, "contradicted": retention.counts["contradicted"]},
        routing, check_weights(weights), DEFAULT_CONTRADICTION_PENALTY, not_applicable)
    return _assemble(trace, split, handoffs, accuracies, retention, cases, route, routing, loops,
                     _violations(trace, contracts), comp, na)


def _score_handoffs(trace: MultiAgentTrace, expectations: ConversationExpectations | None,
                    article: bool, na: dict[str, str]
                    ) -> tuple[HandoffReport, HandoffReport | None, dict[str, float]]:
    """The handoff report; the report the composite reads (None: n/a) and the three
    accuracies of the row (NaN when n/a)."""
    expected = list(expectations.handoffs) if expectations is not None else []
    report = metrics.score_handoff_accuracy(trace.handoffs, expected)
    accuracies = {"target_accuracy": report.target_accuracy,
                  "reason_accuracy": report.reason_accuracy,
                  "context_completeness": report.context_completeness}
    if not expected and not article:
        na["handoff"] = "no expected handoffs"
        return report, None, dict.fromkeys(accuracies, NAN)
    return report, report, accuracies


class _Retention(NamedTuple):
    """The conversation's verdicts tallied (:func:`_tally_verdicts`)."""

    counts: dict[str, int]  # label -> verdicts, in the order of _LABELS
    by_cause: dict[str, int]  # the failed verdicts by cause
    failed: int
    rate: float  # NaN when n/a
    n_facts: int  # verdicts, failed or not


def _tally_verdicts(cid: str, verdicts: Sequence[Verdict] | None, article: bool,
                    na: dict[str, str]) -> _Retention:
    """The retention counts and rate of the conversation's verdicts."""
    not_judged = verdicts is None
    verdicts = () if verdicts is None else verdicts
    counts = dict.fromkeys(_LABELS, 0)
    by_cause: dict[str, int] = {}
    prefix = f"{cid}/"
    for v in verdicts:
        if not str(v.item_id).startswith(prefix):
            raise ValueError(f"verdict {v.item_id!r} is not about conversation {cid!r}: pass "
                             "the verdicts of this conversation's retention items only")
        if v.label in counts:
            counts[v.label] += 1
        else:
            cause = v.cause or "other"
            by_cause[cause] = by_cause.get(cause, 0) + 1
    judged = sum(counts.values())
    if judged:
        rate = round(counts["retained"] / judged, 3)
    elif article and not verdicts:
        rate = 1.0  # the article: no key fact, nothing lost
    else:
        rate = NAN
        na["retention"] = (NOT_JUDGED if not_judged
                           else "no judged fact (every judge call failed)" if verdicts
                           else "no key facts")
    return _Retention(counts, by_cause, len(verdicts) - judged, rate, len(verdicts))


def _score_routing(trace: MultiAgentTrace, expectations: ConversationExpectations | None,
                   triage_agent: str | None, article: bool, na: dict[str, str]
                   ) -> tuple[tuple[RoutingTestCase, ...], str | None, Mapping[str, Any] | None]:
    """The routing cases, the route taken and the routing report (None: n/a; without a case,
    the article's routing counts 1.0)."""
    cases = (tuple(as_records(list(expectations.routing), RoutingTestCase, "routing"))
             if expectations is not None and expectations.routing else ())
    route = _actual_route(trace, triage_agent)
    if cases:
        # score_routing's core on the checked cases (the category level is not a column)
        return cases, route, routing_accuracies(cases, [route] * len(cases))
    if article:
        return cases, route, {"acceptable_routing_accuracy": 1.0}
    na["routing"] = "no routing case"
    return cases, route, None


def _violations(trace: MultiAgentTrace, contracts: Sequence[HandoffContract] | None
                ) -> tuple[dict[str, Any], ...]:
    """The contract violations of the trace, as dicts with the conversation id first."""
    if not contracts:
        return ()
    cid = trace.conversation_id
    # a ContractViolation has to_dict: dict(v) is for a violation given as a mapping
    return tuple([{"conversation_id": cid,
                   **(v.to_dict() if hasattr(v, "to_dict")
                      else dict(cast("Mapping[str, Any]", v)))}
                  for v in metrics.check_handoff_contracts(trace, contracts)])


def _assemble(trace: MultiAgentTrace, split: str | None, handoffs: HandoffReport,
              accuracies: dict[str, float], retention: _Retention,
              cases: tuple[RoutingTestCase, ...], route: str | None,
              routing: Mapping[str, Any] | None, loops: LoopReport,
              violations: tuple[dict[str, Any], ...], comp: CoordinationReport,
              na: dict[str, str]) -> ConversationScore:
    """The :class:`ConversationScore` of the parts :func:`score_conversation` computed."""
    cid = trace.conversation_id
    exact = acceptable = NAN
    if type(routing) is RoutingReport:  # a report exactly when there are cases
        exact, acceptable = routing.exact_routing_accuracy, routing.acceptable_routing_accuracy
    composite = comp.composite_coordination
    used = comp.components_used
    if used is None:  # the article's mode names none
        used = () if math.isnan(composite) else _ALL
    handoff_list = trace.handoffs
    return _new_score(
        conversation_id=cid, split=split, n_turns=len(trace.turns),
        n_handoffs=len(handoff_list), **accuracies,
        missing_handoffs=handoffs.missing_handoffs,
        unexpected_handoffs=handoffs.unexpected_handoffs,
        n_facts=retention.n_facts, **retention.counts, judge_errors=retention.failed,
        retention_rate=retention.rate,
        routing_cases=len(cases), routing_exact=exact, routing_acceptable=acceptable,
        n_loops=len(loops.loops), exceeds_limit=loops.exceeds_limit,
        should_escalate=loops.should_escalate, contract_violations=len(violations),
        handoff_quality=comp.handoff_quality, information_retention=comp.information_retention,
        routing_quality=comp.routing_quality, composite=composite,
        composite_components="+".join(used),
        loops=tuple([{"conversation_id": cid, **lp.to_dict()} for lp in loops.loops]),
        violations=violations, cases=cases, route=route,
        # tuple() of lists, not of generators: fewer GC passes (see metrics._loops)
        pair_context=tuple([(handoff_list[d.actual_index].from_agent,
                             handoff_list[d.actual_index].to_agent, d.context_complete)
                            for d in handoffs.handoff_details if d.actual_index is not None]),
        errors_by_cause=retention.by_cause, not_applicable=na)


def _new_score(**values: Any) -> ConversationScore:
    """``ConversationScore(**values)`` for the values :func:`score_conversation` computed, every
    field given, without the frozen dataclass's ``__init__`` (one ``object.__setattr__`` per
    field: a tenth of the per-conversation stage). Equal to the dataclass's own (tested)."""
    if len(values) != _N_FIELDS:  # a field added to the class and not computed here
        raise TypeError(f"ConversationScore has {_N_FIELDS} fields, {len(values)} given")
    score = _NEW(ConversationScore)
    score.__dict__.update(values)
    return score


_NEW = object.__new__
_N_FIELDS = len(fields(ConversationScore))


def _actual_route(trace: MultiAgentTrace, triage: str | None) -> str | None:
    """Where the triage agent sent the user: the first handoff's target (None if no handoff)."""
    for h in sorted(trace.handoffs, key=lambda h: h.turn_index):
        if triage is None or h.from_agent == triage:
            return h.to_agent
    return None


def score_traces(traces: Sequence[MultiAgentTrace],
                 expectations: dict[str, ConversationExpectations],
                 verdicts: dict[str, list[Verdict]], contracts: Sequence[HandoffContract] | None,
                 splits: dict[str, str | None], *, retention: bool = True,
                 **kwargs: Any) -> list[ConversationScore]:
    """:func:`score_conversation` for each trace, in order (``evaluate`` and
    ``maev_kit.scale.evaluate_dataset`` both score through here). ``retention=False``: no
    judge was asked, retention is n/a with reason :data:`NOT_JUDGED`."""
    with paused_gc():  # scores hold no reference cycles (see maev_kit._gc)
        return [score_conversation(t, expectations.get(t.conversation_id),
                                   verdicts.get(t.conversation_id, []) if retention else None,
                                   contracts, split=splits.get(t.conversation_id), **kwargs)
                for t in traces]
