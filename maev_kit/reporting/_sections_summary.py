"""The report's Summary section: KPI cards, the composite and its components with CIs, routing
against the 90 % and 95 % targets, and what each number means."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from maev_kit.calibration.internal import wilson
from maev_kit.reporting import _html as h, _plots
from maev_kit.reporting._common import (
    _JudgeErrors,
    _ci_name,
    _judge_errors,
    _plural,
    _records,
)
from maev_kit.rendering.internal import num as _num

if TYPE_CHECKING:
    from maev_kit.metrics import RoutingReport

#: Readable names of the aggregated metrics.
METRIC_NAMES = {
    "composite": "Composite coordination",
    "handoff_quality": "Handoff quality",
    "information_retention": "Information retention",
    "routing_quality": "Routing quality",
    "target_accuracy": "· target accuracy",
    "reason_accuracy": "· reason accuracy",
    "context_completeness": "· context completeness",
    "retention_rate": "· retention rate",
    "routing_exact": "· routing exact",
    "routing_acceptable": "· routing acceptable",
}

ROUTING_TARGETS = ((0.90, "90 % target"), (0.95, "95 % target"))

#: What each aggregated metric is. ``{w_handoff}`` etc. and ``{penalty}`` are filled per report.
DEFINITIONS = {
    "composite": ("Σ wᵢ·componentᵢ / Σ wᵢ over the components that apply to a conversation "
                  "(weights: handoff {w_handoff:g}, retention {w_retention:g}, routing "
                  "{w_routing:g}, renormalised over those that apply); n/a when none applies"),
    "handoff_quality": "0.5 · target accuracy + 0.5 · context completeness",
    "information_retention": ("the retention component: max(0, retention rate − {penalty:g} × "
                              "the number of contradicted facts)"),
    "routing_quality": "acceptable routing accuracy (the routing component)",
    "target_accuracy": ("share of expected handoffs made to the expected agent (expected and "
                        "actual handoffs aligned in order)"),
    "reason_accuracy": "share of expected handoffs made for the expected reason",
    "context_completeness": ("share of expected handoffs that passed every required context "
                             "key"),
    "retention_rate": ("share of judged facts retained across the handoff: retained / judged; "
                       "facts the judge failed on are left out"),
    "routing_exact": "the first routing decision went to the expected agent",
    "routing_acceptable": "the first routing decision went to an acceptable agent",
}

#: Which component an aggregated metric belongs to (its n/a reason is the component's).
_COMPONENT_OF = {
    "handoff_quality": "handoff", "target_accuracy": "handoff", "reason_accuracy": "handoff",
    "context_completeness": "handoff", "information_retention": "retention",
    "retention_rate": "retention", "routing_quality": "routing", "routing_exact": "routing",
    "routing_acceptable": "routing"}

#: One KPI card: (extra CSS class, what it counts, value, line under it).
_Kpi = tuple[str, str, str, str]


def _weights(ev: Any) -> dict[str, float]:
    """The composite's weights: the defaults, overridden by the evaluation's."""
    from maev_kit.metrics import DEFAULT_WEIGHTS

    w = dict(DEFAULT_WEIGHTS)
    w.update({k: float(v) for k, v in (getattr(ev, "weights", None) or {}).items()
              if _num(v) is not None})
    return w


def _definition(metric: str, ev: Any) -> str:
    """What ``metric`` is, with this evaluation's weights and contradiction penalty filled in."""
    text = DEFINITIONS.get(metric, "")
    if not text:
        return ""
    w = _weights(ev)
    prov = getattr(ev, "provenance", None) or {}
    penalty = _num(prov.get("contradiction_penalty"))
    return text.format(w_handoff=w.get("handoff", 0.0), w_retention=w.get("retention", 0.0),
                       w_routing=w.get("routing", 0.0),
                       penalty=0.2 if penalty is None else penalty)


def _metric_note(metric: str, row: Mapping[str, Any], ev: Any, je: _JudgeErrors) -> str:
    """Why a metric is n/a (or over fewer conversations), and the judge errors of retention."""
    note = row.get("note")
    if isinstance(note, str) and note.strip():
        return note.strip()
    parts = []
    na = (getattr(ev, "not_applicable", None) or {}).get(_COMPONENT_OF.get(metric, ""))
    if isinstance(na, Mapping) and na.get("conversations"):
        parts.append(f"n/a in {na['conversations']} conversations: {na.get('reason', '')}"
                     .rstrip(": "))
    elif _num(row.get("mean")) is None:
        parts.append("n/a: nothing to measure")
    if _COMPONENT_OF.get(metric) == "retention" and je.failed:
        causes = je.causes()
        parts.append(f"over {je.judged} of {je.total} facts; {je.failed} failed"
                     + (f" ({causes})" if causes else ""))
    return "; ".join(parts)


def _composite_components(ev: Any) -> str:
    """``handoff+retention+routing: 40 conversations · handoff+retention: 10`` (or "")."""
    pc = ev.per_conversation
    if "composite_components" not in getattr(pc, "columns", ()):
        return ""
    counts: dict[str, int] = {}
    for v in pc["composite_components"]:
        key = "none (n/a)" if h.is_missing(v) or not str(v) else str(v)
        counts[key] = counts.get(key, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    return " · ".join(f"{k}: {_plural(n, 'conversation')}" for k, n in ranked)


def _facts_judged(je: _JudgeErrors) -> tuple[str, str]:
    """The KPI for judged facts: ``382`` or ``370 of 382`` with ``12 failed: rate_limit 10``."""
    if not je.failed:
        return str(je.judged), ""
    causes = je.causes()
    return f"{je.judged} of {je.total}", f"{je.failed} failed" + (f": {causes}" if causes else "")


@dataclass(frozen=True)
class _SummaryData:
    """What the Summary section reads: the evaluation, its aggregate rows, the name of its CI,
    its judge errors and its routing report."""

    ev: Any
    agg: list[dict[str, Any]]
    ci_name: str
    je: _JudgeErrors
    routing: RoutingReport | None


def _column_sum(pc: Any, col: str) -> int | None:
    """The sum of a per-conversation column (missing values as 0); None without the column."""
    if col in getattr(pc, "columns", ()):
        return int(pc[col].fillna(0).sum())
    return None


def _composite_kpi(comp: Mapping[str, Any], ci_name: str) -> _Kpi:
    """The main KPI card: the composite's mean and CI (or why it has none)."""
    lo, hi = _num(comp.get("ci_low")), _num(comp.get("ci_high"))
    note = str(comp.get("note") or "")
    ci = (f"{ci_name} {h.fmt(lo)} – {h.fmt(hi)}" if lo is not None
          else note[note.index("no interval"):] if "no interval" in note else "")
    if _num(comp.get("mean")) is None:
        ci = "no component applies"
    return ("main", "composite coordination", h.fmt(comp.get("mean")), ci)


def _summary_kpis(s: _SummaryData) -> list[_Kpi]:
    """The KPI cards, in page order: composite, counts, judged facts, routing accuracy."""
    pc = s.ev.per_conversation
    kpis = []
    comp = {str(r.get("metric")): r for r in s.agg}.get("composite")
    if comp is not None:
        kpis.append(_composite_kpi(comp, s.ci_name))
    kpis.append(("", "conversations", str(len(pc)), ""))
    v = _column_sum(pc, "n_handoffs")
    if v is not None:
        kpis.append(("", "handoffs", str(v), ""))
    if s.je.total or _column_sum(pc, "n_facts") is not None:
        judged, failed = _facts_judged(s.je)
        kpis.append(("warn" if s.je.failed else "", "facts judged", judged, failed))
    for col, name in (("lost", "facts lost"), ("contradicted", "facts contradicted")):
        v = _column_sum(pc, col)
        if v is not None:
            kpis.append(("", name, str(v), ""))
    kpis.append(("", "loops", str(len(getattr(s.ev, "loops", []) or [])), ""))
    kpis.append(("", "contract violations",
                 str(len(getattr(s.ev, "violations", []) or [])), ""))
    if s.routing is not None and _num(s.routing.exact_routing_accuracy) is not None:
        kpis.append(("", "routing accuracy", h.fmt(float(s.routing.exact_routing_accuracy)),
                     f"exact, over {s.routing.total_cases} cases"))
    return kpis


def _kpi_cards(kpis: list[_Kpi]) -> str:
    """The KPI cards as HTML."""
    return '<div class="kpis">' + "".join(
        f'<div class="kpi {c}"><div class="v">{h.esc(v)}</div><div class="k">{h.esc(k)}</div>'
        f'<div class="ci">{h.esc(ci)}</div></div>' for c, k, v, ci in kpis) + "</div>"


def _metrics_figure(agg: list[dict[str, Any]], ci_name: str) -> str:
    """The forest plot of the composite and its components (means with bootstrap CIs)."""
    rows = [(METRIC_NAMES.get(str(r.get("metric")), str(r.get("metric"))), r.get("mean"),
             r.get("ci_low"), r.get("ci_high")) for r in agg]
    svg = _plots.forest_svg(rows, title=f"Composite and components (mean, {ci_name})",
                            highlight=[METRIC_NAMES["composite"]], width=6.0)
    return h.figure(svg, "Means over conversations; whiskers are percentile "
                         "bootstrap confidence intervals.")


def _routing_rows(routing: RoutingReport, n: int) -> list[tuple[str, float, float, float]]:
    """The routing plot's rows: exact, acceptable and right-category accuracy pooled, then
    exact accuracy per category, each with its Wilson interval."""
    rrows = []
    for value, name, nn in ((routing.exact_routing_accuracy, "exact", n),
                            (routing.acceptable_routing_accuracy, "acceptable", n),
                            (routing.category_routing_accuracy, "right category",
                             routing.category_cases or n)):
        v = _num(value)
        if v is not None:
            lo, hi = wilson(v * nn, nn)
            rrows.append((name, v, lo, hi))
    for cat, d in (routing.per_category or {}).items():
        v = _num(d.exact_routing_accuracy)
        if v is not None:
            lo, hi = wilson(v * d.total_cases, d.total_cases)
            rrows.append((f"{cat} · exact", v, lo, hi))
    return rrows


def _routing_figure(routing: RoutingReport) -> str:
    """The routing-accuracy plot against the 90 % and 95 % targets."""
    n = routing.total_cases
    svg = _plots.forest_svg(_routing_rows(routing, n), title="Routing accuracy",
                            refs=ROUTING_TARGETS, width=5.2)
    return h.figure(svg, f"Pooled over {n} routing cases; whiskers are 95 % Wilson "
                         "intervals. Dashed/dotted lines: the 90 % and 95 % targets.")


def _metrics_table(s: _SummaryData) -> str:
    """The table of what the numbers mean: each metric's mean, CI, n, definition and n/a
    note, and how the composite was made."""
    table_rows = [{"metric": METRIC_NAMES.get(str(r.get("metric")),
                                              str(r.get("metric"))).lstrip("· "),
                   "mean": r.get("mean"), f"{s.ci_name} low": r.get("ci_low"),
                   f"{s.ci_name} high": r.get("ci_high"), "n": r.get("n"),
                   "definition": _definition(str(r.get("metric")), s.ev),
                   "note": _metric_note(str(r.get("metric")), r, s.ev, s.je)} for r in s.agg]
    used = _composite_components(s.ev)
    return ("<h3>What the numbers mean</h3>"
            + h.records_table(table_rows, headers={"n": "conversations"})
            + '<p class="note">n: the conversations where the metric applies. '
            "n/a: nothing to measure (never counted as 0 or 1). Retention rate and "
            "information retention differ: the rate is the share of judged facts "
            "retained; information retention is the composite's retention component, "
            "the rate minus the contradiction penalty."
            + (f" Components the composite used: {h.esc(used)}." if used else "")
            + "</p>")


def _routing_confusion(ev: Any, routing: RoutingReport | None) -> str:
    """The routing confusion matrix (expected × routed), collapsed; "" without one."""
    rconf = getattr(ev, "routing_confusion", None)
    if routing is not None and rconf is not None and len(rconf):
        return h.details("Routing confusion (expected × routed)", h.table(rconf, index=True),
                         meta=f"{routing.misrouted} misrouted")
    return ""


def _summary(ev: Any) -> str:
    """The Summary section: KPI cards, the metric and routing plots, what each number means and
    the routing confusion."""
    agg = _records(ev.aggregates)
    ci_name = _ci_name((getattr(ev, "provenance", None) or {}).get("confidence"))
    s = _SummaryData(ev, agg, ci_name, _judge_errors(ev), getattr(ev, "routing", None))
    out = [_kpi_cards(_summary_kpis(s))]
    plots = []
    if agg:
        plots.append(_metrics_figure(agg, ci_name))
    if s.routing is not None and _num(s.routing.exact_routing_accuracy) is not None:
        plots.append(_routing_figure(s.routing))
    if plots:
        out.append('<div class="grid2">' + "".join(plots) + "</div>")
    if agg:
        out.append(_metrics_table(s))
    out.append(_routing_confusion(ev, s.routing))
    return "".join(out)
