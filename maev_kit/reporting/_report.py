"""``report(evaluation, ...)`` → :class:`Report`: one self-contained HTML file.

Sections: Summary, Retention, Judge calibration, Coordination, Provenance. No scripts, no
external resources (plots are inline SVG), all text escaped.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from maev_kit.reporting import _html as h
from maev_kit.reporting import _plots
from maev_kit._html._trace import (
    anchor_prefix,
    entry_anchors,
    evidence_excerpt_html,
    trace_html,
)
from maev_kit.traces._view import conversation_view
from maev_kit.errors import JudgeErrorsExceeded
from maev_kit._html._values import (
    ceiling as _ceiling,
    judge_label as _judge_label,
    key_label as _key_label,
    num as _num,
)

__all__ = ["Report", "report"]

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

LEADERBOARD_HEADERS = {
    "kappa": "κ", "kappa_low": "κ low", "kappa_high": "κ high", "delta_kappa": "Δκ",
    "p_value": "p", "ac1": "AC1", "accuracy": "accuracy", "parse_failure_rate": "parse fail",
    "recall_contradicted": "recall contra.", "cost": "cost $", "latency_p50": "lat. p50 s",
    "latency_p95": "lat. p95 s", "cache_hits": "cache hits", "n_items": "items",
    "judge_version": "version"}

CHIP_NAMES = {"composite": "composite", "handoff_quality": "handoff quality",
              "information_retention": "information retention",
              "routing_quality": "routing quality", "target_accuracy": "target accuracy",
              "reason_accuracy": "reason accuracy", "context_completeness": "context complete",
              "retention_rate": "retention rate", "routing_exact": "routing exact",
              "n_loops": "loops", "contract_violations": "contract violations"}

PAIR_HEADERS = {"from_agent": "from", "to_agent": "to", "contradicted": "contra.",
                "retention_rate": "retention", "context_complete": "context ok"}

DIS_HEADERS = {"human_label_text": "human labels", "human_majority": "human majority",
               "judge_label": "judge label", "after_text": "after the handoff"}

ROUTING_TARGETS = ((0.90, "90 % target"), (0.95, "95 % target"))

_REQUIRED = ("per_conversation", "aggregates")


@dataclass(frozen=True)
class Report:
    """A built report. ``html`` is the whole page; :meth:`save` writes it.

    >>> r = Report("<!DOCTYPE html><html><body>hi</body></html>", title="t")
    >>> r
    Report('t', 43 characters)
    """

    html: str
    title: str = "maev-kit coordination report"

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the page as UTF-8 to ``path``, atomically (parent folders are created); return
        the Path."""
        p = Path(path)
        if p.is_dir():
            raise IsADirectoryError(f"`path` {str(p)!r} is a folder; pass a file name such as "
                                    f"{str(p / 'report.html')!r}")
        from maev_kit._files import write_text

        return write_text(p, self.html)  # atomic: a reader never sees half a page

    def _repr_html_(self) -> str:
        # An iframe keeps the report's stylesheet away from the notebook's.
        return (f'<iframe srcdoc="{h.esc(self.html)}" sandbox="" title="{h.esc(self.title)}" '
                'style="width:100%;height:820px;border:1px solid #d0d7de;border-radius:6px">'
                "</iframe>")

    def __repr__(self) -> str:
        return f"Report({self.title!r}, {len(self.html)} characters)"


# --------------------------------------------------------------------------- helpers
def _wilson(p: float, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a proportion (95 % by default)."""
    if n <= 0:
        return (math.nan, math.nan)
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def _as_dict(obj: Any) -> dict[str, Any] | None:
    if obj is None:
        return None
    for attr in ("model_dump", "to_dict"):
        fn = getattr(obj, attr, None)
        if callable(fn):
            try:
                d = fn()
            except TypeError:
                continue
            if isinstance(d, Mapping):
                return dict(d)
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)
                if not hasattr(getattr(obj, f.name), "to_html")}
    return {"value": str(obj)}


def _plural(n: int, word: str) -> str:
    """``n word`` with an English plural.

    >>> _plural(1, "loop"), _plural(2, "loop"), _plural(2, "lost")
    ('1 loop', '2 loops', '2 lost')
    """
    if n == 1 or word in ("lost", "contradicted"):
        return f"{n} {word}"
    return f"{n} {word}s"


def _transcript_html(trace: Any) -> str:
    """A plain escaped transcript (used when the trace renderer fails on an odd trace): the
    conversation view, each entry tagged by its kind."""
    parts = []
    try:
        view = conversation_view(trace)
    except Exception:  # noqa: BLE001 - the timeline alone, text only
        view = conversation_view(trace, tools=False)
    names = {"tool_call": "call", "tool_result": "result", "handoff": "handoff"}
    for m in view:
        if m.is_user:
            parts.append(f'<div class="ev user"><span class="who">user</span>{h.esc(m.content)}'
                         "</div>")
        elif m.kind in names:
            cls = {"tool_call": "ev call", "tool_result": "ev result"}.get(m.kind, "ev ho")
            who = (f"{h.esc(m.tool or 'tool')} → {h.esc(m.speaker)}" if m.kind == "tool_result"
                   else h.esc(m.speaker))
            parts.append(f'<div class="{cls}"><span class="tag">{names[m.kind]}</span>'
                         f'<span class="who">{who}</span><span class="mono">'
                         f"{h.esc(m.content)}</span></div>")
        else:
            parts.append(f'<div class="ev"><span class="who">{h.esc(m.speaker)}</span>'
                         f"{h.esc(m.content)}</div>")
    return f'<div class="transcript">{"".join(parts)}</div>'


def _render_trace(trace: Any, facts: list[dict[str, Any]], verdicts: dict[str, Any],
                  spans: list[dict[str, Any]] | None = None, anchors: str | None = None) -> str:
    try:
        return trace_html(trace, facts=facts or None, verdicts=verdicts or None,
                          spans=spans or None, anchors=anchors)
    except Exception:  # one odd trace must not sink the whole report
        return _transcript_html(trace)


def _int_or_none(value: Any) -> int | None:
    n = _num(value)
    return int(n) if n is not None and float(n).is_integer() else None


def _ledger_span(row: Mapping[str, Any], view: list[Any]) -> tuple[int, int, int] | None:
    """Where a ledger row's evidence is in the conversation view: ``(entry position, start,
    end)``, or None when the row names none or its entry is not in the view.

    The row gives the entry (``evidence_turn``, ``evidence_part``), the value
    (``evidence_field``) and, in ``evidence_at`` (:meth:`EvidenceSpan.describe`), the text;
    ``evidence_start`` / ``evidence_end``, when the ledger has them, give the offsets.
    """
    at, ti = row.get("evidence_at"), _int_or_none(row.get("evidence_turn"))
    if h.is_missing(at) or not at or ti is None:
        return None
    part = _int_or_none(row.get("evidence_part")) or 0
    field = row.get("evidence_field")
    field = "" if h.is_missing(field) or field is None else str(field)
    at = str(at)
    for i, m in enumerate(view):
        if m.turn_index != ti or m.part != part:
            continue
        where = f" › {field}" if field and field != "text" else ""
        prefix = f'{m.speaker} · turn {m.turn_index} · {m.kind}{where}: "'
        if not (at.startswith(prefix) and at.endswith('"')) or len(at) <= len(prefix) + 1:
            continue
        text = at[len(prefix):-1]
        start, end = _int_or_none(row.get("evidence_start")), _int_or_none(row.get("evidence_end"))
        if start is not None and end is not None and m.content[start:end] == text:
            return i, start, end
        lo, hi = 0, len(m.content)
        for name, a, b in m.fields:
            if name == field:
                lo, hi = a, b
        found = m.content.find(text, lo, hi)
        if found < 0:
            found = m.content.find(text)
        if found >= 0:
            return i, found, found + len(text)
    return None


@dataclass
class _Shown:
    """A conversation's view as the report draws it: its entries and their anchors (set when
    the trace is drawn in the page), to link a verdict to the entry it rests on."""

    view: list[Any]
    anchors: list[str | None]
    embedded: bool = False


def _shown(trace: Any, prefix: str | None) -> _Shown | None:
    try:
        view = conversation_view(trace)
    except Exception:  # noqa: BLE001 - an odd trace: no links, the text stays in the row
        return None
    return _Shown(view, entry_anchors(view, prefix), prefix is not None)


def _evidence_cell(row: Mapping[str, Any], shown: _Shown | None) -> Any:
    """The ``evidence_at`` cell: a link to the marked entry when the trace is drawn in the
    page, else the entry's excerpt with the span marked, else the description as text."""
    at = row.get("evidence_at")
    if h.is_missing(at) or not at:
        return None
    found = _ledger_span(row, shown.view) if shown is not None else None
    if found is None:
        return str(at)
    i, start, end = found
    label = row.get("label") if isinstance(row.get("label"), str) else None
    anchor = shown.anchors[i] if shown is not None else None
    if shown is not None and shown.embedded and anchor:
        return h.Markup(f'<a class="ev-link" href="#{h.esc(anchor)}">{h.esc(at)}</a>')
    # (found is None when shown is None)
    return h.Markup(evidence_excerpt_html(cast(_Shown, shown).view[i], start, end, width=40,
                                          label=label))


def _records(df: Any) -> list[dict[str, Any]]:
    if df is None or len(df) == 0:
        return []
    cols = [str(c) for c in df.columns]
    return [dict(zip(cols, row)) for row in df.itertuples(index=False, name=None)]


@dataclass(frozen=True)
class _JudgeErrors:
    """Facts to judge, judged, failed and the failures by cause (from the result or its ledger)."""

    total: int
    judged: int
    failed: int
    by_cause: dict[str, int]

    def causes(self) -> str:
        ranked = sorted(self.by_cause.items(), key=lambda kv: (-kv[1], kv[0]))
        return ", ".join(f"{c} {n}" for c, n in ranked if n)


def _judge_errors(ev: Any) -> _JudgeErrors:
    """The run's judge-error counts: ``ev.judge_errors`` when the result has them, else counted
    from the ledger (a row with an ``error``, or no label, is a fact the judge failed on)."""
    je = getattr(ev, "judge_errors", None)
    if je is not None and hasattr(je, "failed") and hasattr(je, "total"):
        return _JudgeErrors(int(je.total), int(je.judged), int(je.failed),
                            dict(getattr(je, "by_cause", {}) or {}))
    recs = _records(getattr(ev, "ledger", None))
    failed = [r for r in recs if not h.is_missing(r.get("error")) or
              h.is_missing(r.get("label"))]
    by_cause: dict[str, int] = {}
    for r in failed:
        cause = r.get("error_cause")
        cause = "other" if h.is_missing(cause) else str(cause)
        by_cause[cause] = by_cause.get(cause, 0) + 1
    return _JudgeErrors(len(recs), len(recs) - len(failed), len(failed), by_cause)


def _judge_error_banner(je: _JudgeErrors) -> str:
    """A visible warning at the top of the page when some facts could not be judged."""
    if not je.failed:
        return ""
    causes = je.causes()
    share = je.failed / je.total if je.total else math.nan
    return ('<div class="callout warn banner" role="alert"><b>Judge errors: '
            f"{je.failed} of {je.total} facts could not be judged ({share:.1%}"
            f"{'; ' + h.esc(causes) if causes else ''}).</b> Retention is over the "
            f"{je.judged} facts judged: a failed fact is left out of every rate, never counted "
            "as retained or lost. The ledger's error and error_cause columns name each one."
            "</div>")


def _facts_judged(je: _JudgeErrors) -> tuple[str, str]:
    """The KPI for judged facts: ``382`` or ``370 of 382`` with ``12 failed: rate_limit 10``."""
    if not je.failed:
        return str(je.judged), ""
    causes = je.causes()
    return f"{je.judged} of {je.total}", f"{je.failed} failed" + (f": {causes}" if causes else "")


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


def _weights(ev: Any) -> dict[str, float]:
    from maev_kit.metrics import DEFAULT_WEIGHTS

    w = dict(DEFAULT_WEIGHTS)
    w.update({k: float(v) for k, v in (getattr(ev, "weights", None) or {}).items()
              if _num(v) is not None})
    return w


def _definition(metric: str, ev: Any) -> str:
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


# --------------------------------------------------------------------------- sections
def _summary(ev: Any) -> str:
    pc = ev.per_conversation
    agg = _records(ev.aggregates)
    by_metric = {str(r.get("metric")): r for r in agg}
    out = []

    def ssum(col: str) -> int | None:
        if col in getattr(pc, "columns", ()):
            return int(pc[col].fillna(0).sum())
        return None

    conf = _num((getattr(ev, "provenance", None) or {}).get("confidence"))
    ci_name = f"{conf * 100:g} % CI" if conf is not None and 0 < conf < 1 else "CI"
    je = _judge_errors(ev)
    kpis = []
    comp = by_metric.get("composite")
    if comp is not None:
        lo, hi = _num(comp.get("ci_low")), _num(comp.get("ci_high"))
        ci = f"{ci_name} {h.fmt(lo)} – {h.fmt(hi)}" if lo is not None else ""
        if _num(comp.get("mean")) is None:
            ci = "no component applies"
        kpis.append(("main", "composite coordination", h.fmt(comp.get("mean")), ci))
    kpis.append(("", "conversations", str(len(pc)), ""))
    v: float | None = ssum("n_handoffs")
    if v is not None:
        kpis.append(("", "handoffs", str(v), ""))
    if je.total or ssum("n_facts") is not None:
        judged, failed = _facts_judged(je)
        kpis.append(("warn" if je.failed else "", "facts judged", judged, failed))
    for col, name in (("lost", "facts lost"), ("contradicted", "facts contradicted")):
        v = ssum(col)
        if v is not None:
            kpis.append(("", name, str(v), ""))
    kpis.append(("", "loops", str(len(getattr(ev, "loops", []) or [])), ""))
    kpis.append(("", "contract violations", str(len(getattr(ev, "violations", []) or [])), ""))
    routing = getattr(ev, "routing", None) or {}
    if _num(routing.get("exact_routing_accuracy")) is not None:
        kpis.append(("", "routing accuracy", h.fmt(float(routing["exact_routing_accuracy"])),
                     f"exact, over {routing.get('total_cases', '?')} cases"))
    out.append('<div class="kpis">' + "".join(
        f'<div class="kpi {c}"><div class="v">{h.esc(v)}</div><div class="k">{h.esc(k)}</div>'
        f'<div class="ci">{h.esc(ci)}</div></div>' for c, k, v, ci in kpis) + "</div>")

    plots = []
    if agg:
        rows = [(METRIC_NAMES.get(str(r.get("metric")), str(r.get("metric"))), r.get("mean"),
                 r.get("ci_low"), r.get("ci_high")) for r in agg]
        svg = _plots.forest_svg(rows, title=f"Composite and components (mean, {ci_name})",
                                highlight=[METRIC_NAMES["composite"]], width=6.0)
        plots.append(h.figure(svg, "Means over conversations; whiskers are percentile "
                                   "bootstrap confidence intervals."))
    if _num(routing.get("exact_routing_accuracy")) is not None:
        n = int(routing.get("total_cases") or 0)
        rrows = []
        for key, name in (("exact_routing_accuracy", "exact"),
                          ("acceptable_routing_accuracy", "acceptable"),
                          ("category_routing_accuracy", "right category")):
            v = _num(routing.get(key))
            if v is not None:
                nn = int(routing.get("category_cases") or n) if key.startswith("category") else n
                lo, hi = _wilson(v, nn)
                rrows.append((name, v, lo, hi))
        for cat, d in (routing.get("per_category") or {}).items():
            v = _num((d or {}).get("exact_routing_accuracy"))
            if v is not None:
                lo, hi = _wilson(v, int(d.get("total_cases") or d.get("cases") or 0))
                rrows.append((f"{cat} · exact", v, lo, hi))
        svg = _plots.forest_svg(rrows, title="Routing accuracy", refs=ROUTING_TARGETS,
                                width=5.2)
        plots.append(h.figure(svg, f"Pooled over {n} routing cases; whiskers are 95 % Wilson "
                                   "intervals. Dashed/dotted lines: the 90 % and 95 % targets."))
    if plots:
        out.append('<div class="grid2">' + "".join(plots) + "</div>")

    if agg:
        table_rows = [{"metric": METRIC_NAMES.get(str(r.get("metric")),
                                                  str(r.get("metric"))).lstrip("· "),
                       "mean": r.get("mean"), f"{ci_name} low": r.get("ci_low"),
                       f"{ci_name} high": r.get("ci_high"), "n": r.get("n"),
                       "definition": _definition(str(r.get("metric")), ev),
                       "note": _metric_note(str(r.get("metric")), r, ev, je)} for r in agg]
        out.append("<h3>What the numbers mean</h3>")
        out.append(h.records_table(table_rows, headers={"n": "conversations"}))
        used = _composite_components(ev)
        out.append('<p class="note">n: the conversations where the metric applies. '
                   "n/a: nothing to measure (never counted as 0 or 1). Retention rate and "
                   "information retention differ: the rate is the share of judged facts "
                   "retained; information retention is the composite's retention component, "
                   "the rate minus the contradiction penalty."
                   + (f" Components the composite used: {h.esc(used)}." if used else "")
                   + "</p>")
    rconf = routing.get("confusion")
    if rconf is not None and hasattr(rconf, "columns") and len(rconf):
        out.append(h.details("Routing confusion (expected × routed)", h.table(rconf, index=True),
                             meta=f"{routing.get('misrouted', '?')} misrouted"))
    return "".join(out)


@dataclass(frozen=True)
class _Labels:
    """How the report names the labels judges were calibrated against."""

    kind: str = "human"  # "human" or "reference"
    note: str | None = None

    @property
    def name(self) -> str:
        """``human labels`` / ``reference labels``."""
        return f"{self.kind} labels"

    @property
    def ceiling(self) -> str:
        """The agreement of the annotators with each other."""
        return f"{self.kind}-annotator ceiling" if self.kind != "human" else "human ceiling"


def _labels_source(labeled_set: Any, calibration: Any = None) -> _Labels:
    """How to name the labels judges were calibrated against, and a note when they are not human.

    A set whose every label line has ``source: "reference"`` was labeled by its authors, not by
    human annotators (:func:`maev_kit.calibration.labels_are_reference`, the one rule the
    dashboard uses too); the report must not call those "human labels".
    """
    from maev_kit.calibration._result import labels_are_reference

    if (labeled_set is not None and labels_are_reference(labeled_set)) or \
            getattr(calibration, "reference_labels", False) is True:
        return _Labels("reference", "The labels of this set are reference labels written by "
                       "the set's authors, not independent human annotations: κ here says how "
                       "well a judge reproduces them.")
    return _Labels()


def _judge_choice(ev: Any, cal: Any) -> str:
    """Which judge scored this report, and — when the calibration recommends another — why."""
    used = str((getattr(ev, "judge", None) or {}).get("name") or "")
    rec = getattr(cal, "recommended", None)
    if not used:
        return ""
    rec_name = _key_label(rec) if rec is not None else ""
    if not rec_name or rec_name.split(" · ")[0] == used:
        return f"The scores in this report use the judge {used}" + (
            ", the one the calibration recommends." if rec_name else ".")
    why = f"this evaluation was asked to use {used}"
    if "logreg" in rec_name or "learned" in rec_name:
        why = (f"{rec_name} is a learned judge: it was fit on the set's other splits and "
               "refuses to score the items it learned from, so this evaluation, which scores "
               f"every conversation, uses {used} (score the test split alone with "
               f"--judge {rec_name.split(' · ')[0]} --split test)")
    return (f"The scores in this report use the judge {used}, not {rec_name}, which the "
            f"calibration recommends: {why}.")


def _calibration(cal: Any, labels: _Labels | None = None, ev: Any = None,
                 labeled_set: Any = None) -> str:
    labels = labels or _Labels()
    labels_name, labels_note = labels.name, labels.note
    if cal is None and labeled_set is not None and not getattr(labeled_set, "label_records",
                                                               True):
        aside = len(getattr(labeled_set, "set_aside_labels", None) or [])
        more = (f" ({aside} label line(s) are set aside: their items are gone; "
                "<code>maev labels SET</code> lists them)" if aside else "")
        return ('<p class="empty">No human labels yet, so no judge calibration' + more
                + ": label with <code>maev_kit.widgets.Labeler(ls.items, "
                "maev_kit.labels.LabelStore('SET/labels.jsonl'), annotator=...)</code> in a "
                "notebook, then <code>maev calibrate SET --judge X</code>.</p>")
    if cal is None:
        return ('<p class="empty">No calibration in this report. Calibrate the judge against '
                "labeled items (<code>maev calibrate SET --judge X</code>, or "
                "<code>calibrate(...)</code>) and pass <code>calibration=</code> to "
                "<code>report()</code>.</p>")
    conf = _num(getattr(cal, "confidence", 0.95))
    ci_name = f"{conf * 100:g} % CI" if conf is not None and 0 < conf < 1 else "CI"
    out = [f'<p class="note">{h.esc(labels_note)}</p>'] if labels_note else []
    rec = getattr(cal, "recommendation", None)
    if rec:
        # A calibration that recommends no judge says so in `recommended` (None).
        none_ok = hasattr(cal, "recommended") and getattr(cal, "recommended") is None
        out.append(h.callout(str(rec), warn=none_ok))
    counts = getattr(cal, "label_counts", None) or {}
    if counts:
        out.append(f'<p class="note">{h.esc(labels_name.capitalize())} per class: '
                   + h.esc(", ".join(f"{k} {v}" for k, v in counts.items())) + ".</p>")
    for note in getattr(cal, "notes", None) or []:
        out.append(f'<p class="note">{h.esc(str(note))}</p>')
    choice = _judge_choice(ev, cal) if ev is not None else ""
    if choice:
        out.append(f'<p class="note judge-choice">{h.esc(choice)}</p>')
    lb = getattr(cal, "leaderboard", None)
    ceiling = _ceiling(getattr(cal, "ceiling", None))
    if lb is not None and len(lb):
        lb = lb.copy()
        if "p_value" in lb.columns:
            lb["p_value"] = [("<0.001" if (v := _num(x)) is not None and v < 0.001
                              else h.fmt(x)) for x in lb["p_value"]]
        if "kappa_low" in lb.columns and "kappa_high" in lb.columns:
            ci = [f"{h.fmt(lo)} – {h.fmt(hi)}" for lo, hi in zip(lb["kappa_low"],
                                                                 lb["kappa_high"])]
            at = list(lb.columns).index("kappa_low")
            lb.insert(at, f"κ {ci_name}", ci)
        recs = _records(lb)
        best = None
        kappas = [_num(r.get("kappa")) for r in recs]
        if any(k is not None for k in kappas):
            best = max(range(len(recs)), key=lambda i: -math.inf if kappas[i] is None
                       else cast(float, kappas[i]))
        out.append("<h3>Leaderboard</h3>")
        hidden = {"kappa_low", "kappa_high"} | ({"key"} if "judge" in lb.columns else set())
        shown = [c for c in lb.columns if c not in hidden]
        out.append(h.records_table(
            recs, shown, formats={"cost": "{:.4f}"}, headers=LEADERBOARD_HEADERS,
            row_class=["best" if i == best else None for i in range(len(recs))]))
        out.append('<p class="note">κ: Cohen\'s kappa of the judge against the '
                   f"{h.esc(labels_name)}, with a bootstrap CI; Δκ and p compare with the best judge; AC1: Gwet's "
                   "agreement coefficient. The highlighted row has the highest κ.</p>")
        rows = [(_judge_label(r), r.get("kappa"), r.get("kappa_low"), r.get("kappa_high"))
                for r in recs]
        band = (ceiling[0], ceiling[1], ceiling[2], f"{labels.ceiling} κ (between annotators, {ci_name})") \
            if ceiling else None
        threshold = _num(getattr(cal, "threshold", None))
        refs = [(threshold, f"threshold κ = {threshold:g}")] if threshold is not None else []
        svg = _plots.forest_svg(rows, title=f"Judge κ against the {labels_name} ({ci_name})", xlim=None, bars=False,
                                band=band, refs=refs, xlabel="Cohen's κ", width=6.2)
        cap = (f"The shaded band is the {labels.ceiling}: how well the annotators of the "
               f"{labels_name} agree with each other." if ceiling else f"No {labels.ceiling} "
               "(the labeled set has one "
               "annotator per item).")
        out.append(h.figure(svg, cap))
    elif ceiling:
        out.append(h.kv_table([(f"{labels.ceiling} κ", ceiling[0]),
                               (ci_name, f"{h.fmt(ceiling[1])} – {h.fmt(ceiling[2])}")]))
    if ceiling:
        extra = ""
        cd = _as_dict(getattr(cal, "ceiling", None)) or {}
        more_ceiling = [f"{name} {h.fmt(cd[k])}" for k, name in (
            ("fleiss_kappa", "Fleiss κ"), ("krippendorff_alpha", "Krippendorff α"),
            ("n_annotators", "annotators"), ("n_items", "items")) if _num(cd.get(k)) is not None]
        if more_ceiling:
            extra = "; " + ", ".join(more_ceiling)
        out.append(f'<p class="note">{h.esc(labels.ceiling.capitalize())} κ = '
                   f"{h.esc(h.fmt(ceiling[0]))} "
                   f"({ci_name} {h.esc(h.fmt(ceiling[1]))} – {h.esc(h.fmt(ceiling[2]))})"
                   f"{h.esc(extra)}.</p>")

    confusions = getattr(cal, "confusions", None) or {}
    if confusions:
        out.append(f"<h3>Confusion matrices (rows: {h.esc(labels_name[:-1])}, columns: judge "
                   "label)</h3>")
        figs = []
        items = list(confusions.items())
        for key, df in items[:12]:
            if df is None or not hasattr(df, "values") or len(df) == 0:
                continue
            figs.append(h.figure(_plots.heatmap_svg(
                df.values, list(df.index), list(df.columns), title=_key_label(key),
                xlabel="judge", ylabel=labels_name[:-1], size=(0.7, 0.5))))
        out.append('<div class="gridm">' + "".join(figs) + "</div>")
        if len(items) > 12:
            out.append(f'<p class="note">{len(items) - 12} more confusion matrices not shown.</p>')

    out.append(_labels_needed(cal, labels))

    dis = getattr(cal, "disagreements", None)
    if dis is not None and hasattr(dis, "columns"):
        recs = _records(dis)
        cols = [c for c in dis.columns
                if not any(isinstance(r.get(c), Mapping) for r in recs[:50])]
        order = ["judge", "item_id", "human_label_text", "human_majority", "judge_label",
                 "fact", "rationale", "error", "after_text"]
        cols = [c for c in order if c in cols] + [c for c in cols if c not in order]
        headers = {**DIS_HEADERS, "human_label_text": labels_name,
                   "human_majority": f"{labels.kind} majority",
                   "human": labels_name[:-1], "human_label": labels_name[:-1]}
        out.append(h.details(f"Disagreements between judges and the {labels_name}",
                             h.records_table(recs, cols, max_rows=300, headers=headers,
                                             empty="No disagreements."),
                             meta=f"{len(dis)} items", scroll=True))
    return "".join(out)


def _labels_needed(cal: Any, labels: _Labels | None = None) -> str:
    value = None
    for attr in ("labels_needed", "labels_needed_figure", "labels_needed_plot"):
        value = getattr(cal, attr, None)
        if callable(value) and not hasattr(value, "savefig"):
            continue
        if value is not None:
            break
    if value is None:
        return _labels_needed_estimate(cal, labels or _Labels())
    out = ["<h3>How many more labels are needed</h3>"]
    if hasattr(value, "savefig"):  # a matplotlib Figure
        out.append(h.figure(_plots.figure_svg(value)))
    elif hasattr(value, "columns"):
        out.append(h.table(value))
    elif isinstance(value, Mapping):
        out.append(h.kv_table(value.items()))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out.append(h.callout(f"Label about {int(value)} more items to narrow the κ confidence "
                             "interval to the target width."))
    else:
        out.append(h.callout(str(value)))
    return "".join(out)


def _labels_needed_estimate(cal: Any, labels: _Labels) -> str:
    """Items to label for a narrower κ CI of the best judge (κ model, its label shares)."""
    lb = getattr(cal, "leaderboard", None)
    confusions = getattr(cal, "confusions", None) or {}
    if lb is None or not len(lb) or not confusions:
        return ""
    recs = _records(lb)
    best = max(recs, key=lambda r: -math.inf if _num(r.get("kappa")) is None
               else cast(float, _num(r.get("kappa"))))
    kappa = _num(best.get("kappa"))
    conf = confusions.get(best.get("key")) if best.get("key") is not None else None
    if conf is None:
        conf = next(iter(confusions.values()))
    if kappa is None or conf is None or not len(conf):
        return ""
    marginals = [float(x) for x in conf.sum(axis=1)]
    n_now = _num(best.get("n_items")) or float(sum(marginals))
    from maev_kit.agreement import labels_needed

    rows = []
    for half in (0.10, 0.05):
        try:
            need = labels_needed(target_halfwidth=half, kappa=min(kappa, 0.999),
                                 marginals=marginals)
        except ValueError:
            return ""
        rows.append({"target 95 % CI": f"κ ± {half:.2f}", "items in all": need,
                     "labeled now": int(n_now), "more to label": max(need - int(n_now), 0)})
    lo, hi = _num(best.get("kappa_low")), _num(best.get("kappa_high"))
    now = f" (now ± {(hi - lo) / 2:.3f})" if lo is not None and hi is not None else ""
    return ("<h3>How many more labels are needed</h3>"
            f'<p class="note">For the best judge, {h.esc(_judge_label(best))}'
            f", κ = {h.esc(h.fmt(kappa))}{h.esc(now)}: labeled items needed for a 95 % CI of "
            "the given half-width (Fleiss–Cohen–Everitt variance under the κ model, with "
            f"the shares of the {h.esc(labels.name)} seen so far).</p>" + h.records_table(rows))


def _coordination(ev: Any, max_worst: int) -> str:
    out = []
    hm = getattr(ev, "handoff_matrix", None)
    ps = getattr(ev, "pair_stats", None)
    plot = ""
    if hm is not None and len(hm):
        plot = h.figure(_plots.heatmap_svg(
            hm.values, list(hm.index), list(hm.columns), title="Handoffs by agent pair",
            xlabel="to agent", ylabel="from agent"), "Number of handoffs from each agent "
            "(rows) to each agent (columns).")
        rate = _pair_rates(hm, ps)
        if rate is not None:
            plot = '<div class="gridm">' + plot + h.figure(_plots.heatmap_svg(
                rate.values, list(rate.index), list(rate.columns),
                title="Retention rate by agent pair", xlabel="to agent", ylabel="from agent",
                fmt="{:.2f}", vmax=1.0), "Share of judged facts retained across each handoff "
                "(– : no facts judged).") + "</div>"
    if plot or ps is not None:
        tbl = h.table(ps, ["from_agent", "to_agent", "handoffs", "facts", "retained", "lost",
                           "contradicted", "retention_rate", "context_complete"],
                      headers=PAIR_HEADERS, empty="No handoffs.") if ps is not None else ""
        out.append(f'{plot}<h3>Agent pairs</h3><div class="scroll-y">{tbl}</div>')

    # Worst conversations
    pc = ev.per_conversation
    traces = {t.conversation_id: t for t in (getattr(ev, "traces", None) or [])}
    shown: dict[str, _Shown | None] = {}  # conversation id -> its view, anchors if drawn
    if max_worst and len(pc) and "composite" in pc.columns:
        worst = pc.nsmallest(max_worst, "composite")
        ledger = getattr(ev, "ledger", None)
        by_conv: dict[str, list[dict[str, Any]]] = {}
        for r in _records(ledger):
            by_conv.setdefault(str(r.get("conversation_id")), []).append(r)
        out.append(f"<h3>The {len(worst)} conversations with the lowest composite score</h3>")
        for i, r in enumerate(_records(worst)):
            cid = str(r["conversation_id"])
            meta = [f"composite {h.fmt(r.get('composite'))}"]
            used = r.get("composite_components")
            if isinstance(used, str) and used:
                meta[0] += f" (over {used})"
            for col, word in (("n_handoffs", "handoff"), ("lost", "lost"),
                              ("contradicted", "contradicted"), ("n_loops", "loop"),
                              ("contract_violations", "contract violation")):
                v = _num(r.get(col))
                if v:
                    meta.append(_plural(int(v), word))
            facts = by_conv.get(cid, [])
            trace = traces.get(cid)
            view = _shown(trace, anchor_prefix(cid)) if trace is not None else None
            if view is not None:
                shown[cid] = view
            chips = [(CHIP_NAMES.get(c, c), r[c]) for c in (
                "composite", "handoff_quality", "information_retention", "routing_quality",
                "target_accuracy", "reason_accuracy", "context_completeness", "retention_rate",
                "routing_exact", "n_loops", "contract_violations") if c in r]
            body = ['<div class="chips">' + "".join(
                f'<span class="mchip"><b>{h.esc(h.fmt(v))}</b> {h.esc(k)}</span>'
                for k, v in chips) + "</div>"]
            if facts:
                rows = [{**f, "evidence_at": _evidence_cell(f, view)} for f in facts]
                body.append(h.details(
                    "Facts and the judge's rationales",
                    h.records_table(rows, [c for c in (
                        "handoff_index", "from_agent", "to_agent", "fact", "fact_source", "label",
                        "rationale", "evidence", "evidence_at", "error", "error_cause")
                        if c in facts[0]], headers=LEDGER_HEADERS),
                    meta=_plural(len(facts), "fact")))
            if trace is not None:
                fact_list = [{"fact_id": f.get("fact_id"), "handoff_index": f.get("handoff_index"),
                              "text": str(f.get("fact", ""))} for f in facts
                             if f.get("fact_id") is not None]
                verdicts = {str(f["item_id"]): f.get("label") for f in facts
                            if f.get("item_id") is not None}
                spans = []
                for f in facts:
                    found = _ledger_span(f, view.view) if view is not None else None
                    if found is not None:
                        m = cast(_Shown, view).view[found[0]]  # found: view is not None
                        lab = f.get("label") if isinstance(f.get("label"), str) else None
                        spans.append({"turn_index": m.turn_index, "part": m.part,
                                      "kind": m.kind, "start": found[1], "end": found[2],
                                      "label": lab,
                                      "title": f"{f.get('fact_id', '')}: judge {lab or '—'}"})
                body.append(_render_trace(trace, fact_list, verdicts, spans,
                                          anchor_prefix(cid)))
            else:
                body.append('<p class="empty">Trace not included in the evaluation result.</p>')
            out.append(h.details(cid, "".join(body), meta=" · ".join(meta), open=i == 0))

    loops = getattr(ev, "loops", None) or []
    out.append("<h3>Circular handoffs</h3>")
    loop_rows = [{"conversation_id": lp.get("conversation_id"), "kind": lp.get("kind"),
                  "agents": " → ".join(map(str, lp.get("agents") or [])),
                  "turn_indices": lp.get("turn_indices"),
                  "handoff_indices": lp.get("handoff_indices")} for lp in loops]
    out.append(_maybe_collapsed(h.records_table(loop_rows, empty="No circular handoffs found."),
                                len(loop_rows), "loops"))

    viols = getattr(ev, "violations", None) or []
    out.append("<h3>Contract violations</h3>")
    preferred = ["conversation_id", "handoff_index", "from_agent", "to_agent", "contract",
                 "kind", "key", "message"]
    cols = None
    if viols:
        keys = list(dict.fromkeys(k for v in viols for k in v))
        cols = [c for c in preferred if c in keys] or keys
    out.append(_maybe_collapsed(h.records_table(
        list(viols), cols, max_rows=1000, empty="No contract violations (or no contracts given)."),
        len(viols), "violations"))

    out.append(_ledger_section(ev, traces, shown))
    return "".join(out)


#: Headers of the ledger tables.
LEDGER_HEADERS = {"evidence_at": "evidence at (the receiver's entry)", "fact_key": "fact",
                  "first_handoff": "stated at handoff", "first_lost_handoff": "first lost at",
                  "reacquired": "re-acquired", "judge_errors": "judge errors",
                  "final": "final verdict", "path": "path"}


def _fact_ledger(ev: Any) -> Any:
    """``ev.fact_ledger`` (one row per conversation fact), computed from the ledger for a
    result without it; None when neither can be had."""
    try:
        fl = getattr(ev, "fact_ledger", None)
        if fl is None and getattr(ev, "ledger", None) is not None and len(ev.ledger):
            from maev_kit.evaluation._ledger import fact_ledger

            fl = fact_ledger(ev.ledger)
    except Exception:  # noqa: BLE001 - an older or partial ledger: the per-hop table stays
        return None
    return fl


def _ledger_section(ev: Any, traces: Mapping[str, Any], shown: dict[str, _Shown | None]) -> str:
    """The per-fact ledger (each conversation fact across its handoffs: its path, where it was
    first lost, whether it came back) and the per-hop ledger (one verdict per fact per
    handoff), each verdict's evidence linked to the marked entry of the trace drawn above, or
    quoted with its entry when that trace is not drawn."""
    out = ["<h3>Per-fact retention ledger</h3>"]
    recs = _records(getattr(ev, "ledger", None))
    if not recs:
        out.append('<p class="empty">No retention items.</p>')
        return "".join(out)
    fl = _records(_fact_ledger(ev))
    if fl:
        lost = [r for r in fl if (_num(r.get("lost")) or 0) + (_num(r.get("contradicted")) or 0)]
        back = [r for r in lost if not h.is_missing(r.get("reacquired"))
                and bool(r.get("reacquired"))]
        out.append(
            f'<p class="note">{_plural(len(fl), "key fact")}, each followed across every '
            "handoff after the one where it was stated. Path: its verdicts hop by hop in "
            "conversation order (R retained, L lost, C contradicted, ? the judge failed); "
            "first lost at: the handoff where it was first lost or contradicted; re-acquired: "
            f"retained again at a later handoff. {len(lost)} lost or contradicted somewhere, "
            f"{len(back)} of them re-acquired.</p>")
        cols: list[str] = [c for c in ("conversation_id", "fact_key", "fact", "fact_source",
                            "first_handoff", "hops", "path", "retained", "lost", "contradicted",
                            "judge_errors", "first_lost_handoff", "reacquired", "final")
                if c in fl[0]]
        headers = {**LEDGER_HEADERS, "fact_key": "fact id"}
        out.append(h.details("Per fact: each key fact across its handoffs",
                             h.records_table(fl, cols, headers=headers),
                             meta=_plural(len(fl), "fact"), open=True, scroll=True))
    counts: dict[str, int] = {}
    for r in recs:
        lab = r.get("label")
        cause = r.get("error_cause")
        key = str(lab) if not h.is_missing(lab) else "judge error" + (
            "" if h.is_missing(cause) else f" ({cause})")
        counts[key] = counts.get(key, 0) + 1
    out.append('<p class="note">Per handoff: ' + h.esc(" · ".join(f"{k}: {v}"
                                                                   for k, v in counts.items()))
               + f" ({len(recs)} verdicts). Evidence at: the receiving agent's entry the "
               "verdict rests on — a link to it, marked, in the trace drawn above, or quoted "
               "with the span marked.</p>")

    def cell(r: dict[str, Any]) -> Any:
        cid = str(r.get("conversation_id"))
        if cid not in shown:
            t = traces.get(cid)
            shown[cid] = _shown(t, None) if t is not None else None
        return _evidence_cell(r, shown[cid])

    rows = [{**r, "evidence_at": cell(r)} if "evidence_at" in r else r for r in recs]
    cols = ["item_id", "hop", "from_agent", "to_agent", "fact", "fact_source", "label",
            "rationale", "evidence", "evidence_at", "error", "error_cause"]
    bad = [r for r in rows if r.get("label") != "retained"]
    if bad:
        out.append(h.details("Verdicts other than retained (lost, contradicted or not judged)",
                             h.records_table(bad, [c for c in cols if c in bad[0]],
                                             headers=LEDGER_HEADERS),
                             meta=f"{len(bad)} verdicts", scroll=True))
    out.append(h.details("Full ledger: one verdict per fact per handoff",
                         h.records_table(rows, [c for c in cols if c in rows[0]],
                                         headers=LEDGER_HEADERS),
                         meta=f"{len(recs)} verdicts", scroll=True))
    return "".join(out)


#: What each fact source means, for the retention section (proposers not named here are
#: explained by the ``proposed`` entry).
FACT_SOURCES = {
    "expectations": "written by hand in expectations.jsonl",
    "reviewed": "proposed, then accepted, edited or added by a person (FactReviewer)",
    "context": "proposed from the values a handoff passed in context_passed; not reviewed",
    "offline": "proposed by the offline rules from what the user said before the handoff; "
               "not reviewed",
    "proposed": "proposed by {source}; not reviewed",
}
#: The components a trace file may not be able to measure, as the report names them.
_COMPONENT_NAMES = {"handoff": "Handoff quality", "retention": "Information retention",
                    "routing": "Routing quality"}
_PROPOSED_OK = ("expectations", "reviewed")


def _fact_source_note(source: str) -> str:
    if source in FACT_SOURCES and source != "proposed":
        return FACT_SOURCES[source]
    return FACT_SOURCES["proposed"].format(source=source)


def _retention(ev: Any) -> str:
    """Where the key facts came from (counts and outcomes by source) and what the run could
    not measure (n/a components, with the reason)."""
    out = []
    n_conv = len(ev.per_conversation)
    na = getattr(ev, "not_applicable", None) or {}
    recs = _records(getattr(ev, "ledger", None))
    facts = (getattr(ev, "provenance", None) or {}).get("facts") or {}
    if recs:
        by: dict[str, dict[str, Any]] = {}
        source_of: dict[tuple[Any, Any], str] = {}  # a fact's source: where it was first stated
        for r in recs:
            key = r.get("fact_key")
            fact = (r.get("conversation_id"), r.get("fact_id") if h.is_missing(key) else key)
            src = r.get("fact_source")
            src = source_of.setdefault(fact, "expectations" if h.is_missing(src) or not str(src)
                                       else str(src))
            row = by.setdefault(src, {"source": src, "facts": set(), "verdicts": 0,
                                      "conversations": set(), "retained": 0, "lost": 0,
                                      "contradicted": 0, "not judged": 0})
            row["facts"].add(fact)
            row["verdicts"] += 1
            row["conversations"].add(r.get("conversation_id"))
            lab = r.get("label")
            row[lab if lab in ("retained", "lost", "contradicted") else "not judged"] += 1
        rows = []
        for row in sorted(by.values(), key=lambda d: -len(d["facts"])):
            judged = row["retained"] + row["lost"] + row["contradicted"]
            rows.append({**row, "facts": len(row["facts"]),
                         "conversations": len(row["conversations"]),
                         "retention rate": row["retained"] / judged if judged else math.nan,
                         "what it means": _fact_source_note(row["source"])})
        mode = facts.get("mode")
        n_facts = sum(r["facts"] for r in rows)
        out.append(f'<p>{_plural(n_facts, "key fact")}, each judged at the handoff where it was '
                   f'stated and every later one: {_plural(len(recs), "verdict")}'
                   + (f" (facts: {h.esc(mode)})" if mode else "") + ". Where they came from: "
                   + h.esc(", ".join(f"{r['source']} {r['facts']}" for r in rows)) + ".</p>")
        out.append(h.records_table(rows, ["source", "facts", "verdicts", "conversations",
                                          "retained", "lost", "contradicted", "not judged",
                                          "retention rate", "what it means"],
                                   headers={"source": "fact source"}))
        proposed = sum(r["facts"] for r in rows if r["source"] not in _PROPOSED_OK)
        if proposed:
            out.append(h.callout(
                f"{proposed} of {n_facts} facts were proposed by a machine and not reviewed "
                "by a person: the retention numbers rest on them. Review them with "
                "maev_kit.widgets.FactReviewer (or `maev init-set` and a FactReviewSession), "
                "export the reviewed facts and score with them (--facts FILE, or facts= in "
                "evaluate).", warn=True))
    else:
        why = (na.get("retention") or {}).get("reason") or "no key facts"
        out.append(f'<p class="empty">No key fact to judge: {h.esc(why)}. Information '
                   "retention is n/a.</p>")
    without = int(facts.get("conversations_without_facts") or 0)
    if recs and without:
        out.append(f'<p class="note">{_plural(without, "conversation")} of {n_conv} got no '
                   "key fact (no handoff, no user text, or nothing fact-like before a "
                   "handoff).</p>")
    rows = [{"component": _COMPONENT_NAMES.get(comp, comp),
             "n/a in": f"{info.get('conversations', '?')} of {n_conv} conversations",
             "why": info.get("reason", "")}
            for comp, info in na.items()]
    if rows:
        out.append("<h3>What this run cannot measure (n/a)</h3>")
        out.append(h.records_table(rows, ["component", "n/a in", "why"]))
        out.append('<p class="note">n/a is never counted as 0 or 1: the composite is over '
                   "the components that apply. Expected handoffs and routing cases come from "
                   "an expectations.jsonl (see docs/formats.md); a trace file alone has "
                   "neither.</p>")
    return "".join(out)


def _pair_rates(hm: Any, ps: Any) -> Any:
    """Retention rate per (from, to), laid out like the handoff matrix; None without data."""
    if ps is None or not len(ps) or "retention_rate" not in ps.columns:
        return None
    import numpy as np
    import pandas as pd

    rate = pd.DataFrame(np.nan, index=hm.index, columns=hm.columns, dtype=float)
    found = False
    for r in _records(ps):
        v = _num(r.get("retention_rate"))
        fa, ta = r.get("from_agent"), r.get("to_agent")
        if v is not None and fa in rate.index and ta in rate.columns:
            rate.loc[fa, ta] = v
            found = True
    return rate if found else None


def _maybe_collapsed(body: str, n: int, what: str, limit: int = 8) -> str:
    if n <= limit:
        return body
    return h.details(f"Show all {n} {what}", body, meta="collapsed: long list", scroll=True)


#: What each hash the report shows covers. One name per hash: the same hash has the same name
#: wherever it appears (a set's ``content_hash`` is a judge card's ``labeled_set_hash``), and
#: two different hashes never share one.
CONTENT_HASH = "labeled-set content hash (sha256 of every data file of the set)"
LABELS_FILE_HASH = "labels-file hash (sha256 of the set's labels.jsonl)"
CALIBRATION_LABELS_HASH = ("calibration-labels hash (sha256 of the (item, annotator, label) "
                           "triples the κ rests on)")
PROMPT_HASH = "prompt hash (sha256 of the prompt template)"
#: The hashes of a labeled set (``LabeledSet`` attributes, or an evaluation's provenance).
SET_HASH_NAMES = {"content_hash": CONTENT_HASH, "hash": CONTENT_HASH,
                  "labels_hash": LABELS_FILE_HASH}
#: A judge card's hashes: ``labeled_set_hash`` is the ``content_hash`` of the set it was
#: calibrated on, ``labels_hash`` the hash of the (item, annotator, label) triples it used.
CARD_HASH_NAMES = {"labeled_set_hash": CONTENT_HASH, "labels_hash": CALIBRATION_LABELS_HASH,
                   "prompt_hash": PROMPT_HASH}
#: The hashes in an evaluation's judge description.
JUDGE_HASH_NAMES = {"prompt_sha256": PROMPT_HASH}


def _named_hashes(d: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """``d`` with its hash keys renamed to say what each hash covers."""
    return {names.get(k, k): v for k, v in d.items()}


def _provenance(ev: Any, labeled_set: Any, judge_card: Any, now: str) -> str:
    from maev_kit._version import __version__

    prov = dict(getattr(ev, "provenance", None) or {})
    pairs: list[tuple[str, Any]] = [("report generated", now),
                                    ("maev-kit version (report)", __version__)]
    names = {"maev_kit_version": "maev-kit version (evaluation)", "date": "evaluation date",
             "n_conversations": "conversations", "n_items": "retention items"}
    for k, v in prov.items():
        if k == "judge_card" and judge_card is not None:
            continue
        if k == "labeled_set" and labeled_set is not None:
            continue
        if k == "labeled_set" and isinstance(v, Mapping):
            v = _named_hashes(v, SET_HASH_NAMES)
        if k == "judge_card" and _as_dict(v) is not None:
            v = _named_hashes(_as_dict(v) or {}, CARD_HASH_NAMES)
        pairs.append((names.get(k, k.replace("_", " ")), v))
    judge = getattr(ev, "judge", None)
    if judge:
        pairs.append(("judge", _named_hashes(judge, JUDGE_HASH_NAMES)
                      if isinstance(judge, Mapping) else judge))
    if labeled_set is not None:
        info: dict[str, Any] = {}
        for attr in ("name", "version", "content_hash", "labels_hash"):
            v = getattr(labeled_set, attr, None)
            if callable(v):
                v = v()
            if v is not None:
                info[attr] = v
        if not info:
            info = _as_dict(labeled_set) or {}
        pairs.append(("labeled set", _named_hashes(info, SET_HASH_NAMES)))
    warn = ""
    if judge_card is not None:
        card = _as_dict(judge_card) or {}
        pairs.append(("judge card", _named_hashes(card, CARD_HASH_NAMES)))
        used = (judge or {}).get("name")
        pinned = card.get("judge_name", card.get("judge"))
        if used and pinned and str(used) != str(pinned):
            warn = h.callout(f"The judge card pins {pinned}, but this evaluation was scored "
                             f"with {used}: the card's calibration does not apply.", warn=True)
    if getattr(ev, "weights", None):
        pairs.append(("composite weights", ev.weights))
    return warn + h.kv_table(pairs)


# --------------------------------------------------------------------------- entry point
def report(
    evaluation: Any,
    *,
    calibration: Any = None,
    title: str = "maev-kit coordination report",
    labeled_set: Any = None,
    judge_card: Any = None,
    max_worst: int = 5,
    prompt_comparison: Any = None,
) -> Report:
    """Build the self-contained HTML report of an evaluation (and, optionally, a calibration).

    The page has five sections — summary (composite and components with CIs, routing against
    the 90 % and 95 % targets), retention (where each key fact came from — expectations, a
    person's review or a proposer — with counts and outcomes by source, and the components
    the run cannot measure, n/a with the reason), judge calibration (leaderboard, κ with the annotators' ceiling,
    confusion matrices, labels still needed), coordination (agent-pair heatmap, the worst
    conversations with their traces, loops, contract violations, the per-fact ledger) and
    provenance. It loads nothing from the network (inline CSS, inline SVG, no scripts), and
    every piece of text is HTML-escaped.

    Parameters
    ----------
    evaluation : EvaluationResult
        What :func:`maev_kit.evaluate` returns.
    calibration : CalibrationResult, optional
        Leaderboard, annotators' ceiling, confusion matrices, disagreements, recommendation.
    title : str
    labeled_set : LabeledSet, optional
        Shown in the provenance (name, version, hashes).
    judge_card : JudgeCard or dict, optional
        Shown in the provenance.
    max_worst : int, default 5
        How many of the lowest-scoring conversations to show with their traces.
    prompt_comparison : PromptComparison or AlignmentResult, optional
        Adds a "Prompt comparison" section: two prompts side by side (text diff), κ with CIs,
        the confusion-matrix difference and each item whose verdict changed, with the human
        label and the trace excerpt (see :func:`maev_kit.calibration.compare_prompts`).

    Returns
    -------
    Report
        ``.html`` (str), ``.save(path)``, and a notebook display. When some facts could not
        be judged a banner at the top gives the counts by cause.

    Raises
    ------
    JudgeErrorsExceeded
        When every fact failed to be judged: such a run has no result to present. (Below
        that, the caller decides: ``EvaluationResult.raise_for_judge_errors(max_share)``.)

    Examples
    --------
    >>> import pandas as pd
    >>> from maev_kit.evaluation import EvaluationResult
    >>> ev = EvaluationResult(
    ...     per_conversation=pd.DataFrame({"conversation_id": ["c-1"], "composite": [0.8]}),
    ...     aggregates=pd.DataFrame({"metric": ["composite"], "mean": [0.8], "ci_low": [0.7],
    ...                              "ci_high": [0.9], "n": [1]}),
    ...     handoff_matrix=pd.DataFrame(), pair_stats=pd.DataFrame(), ledger=pd.DataFrame(),
    ...     loops=[], violations=[], routing={}, judge={"name": "heuristic"}, provenance={})
    >>> r = report(ev, title="Demo <1>")
    >>> "Demo &lt;1&gt;" in r.html, "<script" in r.html
    (True, False)
    """
    missing = [a for a in _REQUIRED if not hasattr(evaluation, a)]
    if missing:
        raise TypeError("`evaluation` must be an EvaluationResult (what maev_kit.evaluate "
                        f"returns); got {type(evaluation).__name__} without "
                        f"{', '.join(missing)}")
    if isinstance(max_worst, bool) or not isinstance(max_worst, int) or max_worst < 0:
        raise ValueError(f"`max_worst` must be a non-negative int, got {max_worst!r}")
    if not isinstance(title, str):
        raise TypeError(f"`title` must be a str, got {type(title).__name__}")
    je = _judge_errors(evaluation)
    if je.total and not je.judged:
        causes = je.causes()
        raise JudgeErrorsExceeded(
            f"every one of the {je.total} facts failed to be judged"
            f"{' (' + causes + ')' if causes else ''}: this run has no retention result to "
            "report; fix the judge (see the ledger's error column) and run again")
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    from maev_kit._version import __version__

    judge = getattr(evaluation, "judge", None) or {}
    sub = [f"{len(evaluation.per_conversation)} conversations"]
    if judge.get("name"):
        jv = f" {judge.get('version')}" if judge.get("version") else ""
        sub.append(f"judge {judge['name']}{jv}")
    ls_name = getattr(labeled_set, "name", None) or \
        ((getattr(evaluation, "provenance", None) or {}).get("labeled_set") or {}).get("name")
    if ls_name:
        sub.append(f"labeled set {ls_name}")
    sub.append(f"generated {now}")

    body = [
        _judge_error_banner(je),
        h.section("summary", "Summary", _summary(evaluation)),
        h.section("retention", "Retention", _retention(evaluation)),
        h.section("calibration", "Judge calibration",
                  _calibration(calibration, _labels_source(labeled_set, calibration), evaluation,
                               labeled_set)),
        h.section("coordination", "Coordination", _coordination(evaluation, max_worst)),
        h.section("provenance", "Provenance",
                  _provenance(evaluation, labeled_set, judge_card, now)),
    ]
    nav = [("summary", "Summary"), ("retention", "Retention"),
           ("calibration", "Judge calibration"),
           ("coordination", "Coordination"), ("provenance", "Provenance")]
    if prompt_comparison is not None:
        from maev_kit.reporting._prompt_section import prompt_comparison_html

        body.insert(4, h.section("prompts", "Prompt comparison",
                                 prompt_comparison_html(prompt_comparison)))
        nav.insert(3, ("prompts", "Prompt comparison"))
    page = h.page(title, " · ".join(sub), nav, "".join(body),
                  f"maev-kit {__version__} · self-contained report: no scripts, no external "
                  "resources")
    return Report(page, title)
