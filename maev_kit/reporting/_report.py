"""``report(evaluation, ...)`` → :class:`Report`: one self-contained HTML file.

Sections: Summary, Retention, Judge calibration, Coordination, Provenance. No scripts, no
external resources (plots are inline SVG), all text escaped.

This module holds the entry point and the Coordination section, the one that draws traces
(with ``trace_html``, imported here); each other section has its own ``_sections_*`` module,
and the retention ledger with its evidence links is in ``_ledger``.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.reporting import _html as h, _plots
from maev_kit.reporting._common import _JudgeErrors, _judge_errors, _plural, _records
from maev_kit.reporting._ledger import (
    LEDGER_HEADERS,
    _evidence_cell,
    _ledger_section,
    _ledger_span,
    _Shown,
    _shown,
)
from maev_kit.reporting._sections_calibration import _calibration, _labels_source
from maev_kit.reporting._sections_probes import has_probes, robustness_html
from maev_kit.reporting._sections_provenance import _provenance
from maev_kit.reporting._sections_retention import _retention
from maev_kit.reporting._sections_summary import _summary
from maev_kit.rendering.internal import anchor_prefix, trace_html
from maev_kit.traces.internal import conversation_view
from maev_kit.errors import JudgeErrorsExceeded
from maev_kit.rendering.internal import (
    ceiling as _ceiling,  # noqa: F401 - tests import it from here
    num as _num,
)

__all__ = ["Report", "report"]

#: The metric chips of a worst conversation, by column.
CHIP_NAMES = {"composite": "composite", "handoff_quality": "handoff quality",
              "information_retention": "information retention",
              "routing_quality": "routing quality", "target_accuracy": "target accuracy",
              "reason_accuracy": "reason accuracy", "context_completeness": "context complete",
              "retention_rate": "retention rate", "routing_exact": "routing exact",
              "n_loops": "loops", "contract_violations": "contract violations"}

PAIR_HEADERS = {"from_agent": "from", "to_agent": "to", "contradicted": "contra.",
                "retention_rate": "retention", "context_complete": "context ok"}

#: The counts in a worst conversation's summary line (column, what it counts).
_WORST_COUNTS = (("n_handoffs", "handoff"), ("lost", "lost"), ("contradicted", "contradicted"),
                 ("n_loops", "loop"), ("contract_violations", "contract violation"))

#: The ledger columns of a worst conversation's facts table, in order (those present).
_WORST_FACT_COLUMNS = ("handoff_index", "from_agent", "to_agent", "fact", "fact_source", "label",
                       "rationale", "evidence", "evidence_at", "error", "error_cause")

#: The preferred leading columns of the contract-violations table.
_VIOLATION_COLUMNS = ["conversation_id", "handoff_index", "from_agent", "to_agent", "contract",
                      "kind", "key", "message"]

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
        from maev_kit.internal import write_text

        return write_text(p, self.html)  # atomic: a reader never sees half a page

    def _repr_html_(self) -> str:
        # An iframe keeps the report's stylesheet away from the notebook's.
        return (f'<iframe srcdoc="{h.esc(self.html)}" sandbox="" title="{h.esc(self.title)}" '
                'style="width:100%;height:820px;border:1px solid #d0d7de;border-radius:6px">'
                "</iframe>")

    def __repr__(self) -> str:
        return f"Report({self.title!r}, {len(self.html)} characters)"


# --------------------------------------------------------------------------- traces
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
    """The trace drawn with its facts, verdicts and spans marked; the plain transcript when the
    renderer fails on it."""
    try:
        return trace_html(trace, facts=facts or None, verdicts=verdicts or None,
                          spans=spans or None, anchors=anchors)
    except Exception:  # one odd trace must not sink the whole report
        return _transcript_html(trace)


# --------------------------------------------------------------------------- coordination
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
    """``body`` as it is for ``limit`` items or fewer, else in a collapsed block."""
    if n <= limit:
        return body
    return h.details(f"Show all {n} {what}", body, meta="collapsed: long list", scroll=True)


def _pair_heatmaps(hm: Any, ps: Any) -> str:
    """The handoff counts by agent pair and, when the pairs have judged facts, the retention
    rate by pair beside it."""
    plot = h.figure(_plots.heatmap_svg(
        hm.values, list(hm.index), list(hm.columns), title="Handoffs by agent pair",
        xlabel="to agent", ylabel="from agent"), "Number of handoffs from each agent "
        "(rows) to each agent (columns).")
    rate = _pair_rates(hm, ps)
    if rate is None:
        return plot
    return '<div class="gridm">' + plot + h.figure(_plots.heatmap_svg(
        rate.values, list(rate.index), list(rate.columns),
        title="Retention rate by agent pair", xlabel="to agent", ylabel="from agent",
        fmt="{:.2f}", vmax=1.0), "Share of judged facts retained across each handoff "
        "(– : no facts judged).") + "</div>"


def _agent_pairs(ev: Any) -> str:
    """The agent-pair heatmaps and table; "" when the result has neither a handoff matrix nor
    pair statistics."""
    hm = getattr(ev, "handoff_matrix", None)
    ps = getattr(ev, "pair_stats", None)
    plot = _pair_heatmaps(hm, ps) if hm is not None and len(hm) else ""
    if not plot and ps is None:
        return ""
    tbl = h.table(ps, ["from_agent", "to_agent", "handoffs", "facts", "retained", "lost",
                       "contradicted", "retention_rate", "context_complete"],
                  headers=PAIR_HEADERS, empty="No handoffs.") if ps is not None else ""
    return f'{plot}<h3>Agent pairs</h3><div class="scroll-y">{tbl}</div>'


def _worst_meta(r: Mapping[str, Any]) -> str:
    """A worst conversation's summary line: its composite (and the components it is over), then
    its nonzero counts."""
    meta = [f"composite {h.fmt(r.get('composite'))}"]
    used = r.get("composite_components")
    if isinstance(used, str) and used:
        meta[0] += f" (over {used})"
    for col, word in _WORST_COUNTS:
        v = _num(r.get(col))
        if v:
            meta.append(_plural(int(v), word))
    return " · ".join(meta)


def _metric_chips(r: Mapping[str, Any]) -> str:
    """A worst conversation's scores as chips."""
    chips = [(name, r[c]) for c, name in CHIP_NAMES.items() if c in r]
    return '<div class="chips">' + "".join(
        f'<span class="mchip"><b>{h.esc(h.fmt(v))}</b> {h.esc(k)}</span>'
        for k, v in chips) + "</div>"


def _facts_table(facts: list[dict[str, Any]], view: _Shown | None) -> str:
    """A worst conversation's ledger rows (facts, verdicts, rationales, evidence), collapsed."""
    rows = [{**f, "evidence_at": _evidence_cell(f, view)} for f in facts]
    return h.details(
        "Facts and the judge's rationales",
        h.records_table(rows, [c for c in _WORST_FACT_COLUMNS if c in facts[0]],
                        headers=LEDGER_HEADERS),
        meta=_plural(len(facts), "fact"))


def _evidence_spans(facts: list[dict[str, Any]], view: _Shown) -> list[dict[str, Any]]:
    """The spans to mark in a drawn trace: where each verdict's evidence is, with its label and
    a title naming the fact."""
    spans = []
    for f in facts:
        found = _ledger_span(f, view.view)
        if found is not None:
            m = view.view[found[0]]
            lab = f.get("label") if isinstance(f.get("label"), str) else None
            spans.append({"turn_index": m.turn_index, "part": m.part,
                          "kind": m.kind, "start": found[1], "end": found[2],
                          "label": lab,
                          "title": f"{f.get('fact_id', '')}: judge {lab or '—'}"})
    return spans


def _conversation_trace(trace: Any, facts: list[dict[str, Any]], view: _Shown | None,
                        cid: str) -> str:
    """A worst conversation's trace, its facts, verdicts and evidence spans marked, its entries
    anchored for the ledger's links."""
    fact_list = [{"fact_id": f.get("fact_id"), "handoff_index": f.get("handoff_index"),
                  "text": str(f.get("fact", ""))} for f in facts
                 if f.get("fact_id") is not None]
    verdicts = {str(f["item_id"]): f.get("label") for f in facts
                if f.get("item_id") is not None}
    spans = _evidence_spans(facts, view) if view is not None else []
    return _render_trace(trace, fact_list, verdicts, spans, anchor_prefix(cid))


def _worst_conversation(r: Mapping[str, Any], facts: list[dict[str, Any]], trace: Any,
                        view: _Shown | None, first: bool) -> str:
    """One worst conversation, collapsed (open when ``first``): its scores, its facts and its
    trace."""
    cid = str(r["conversation_id"])
    body = [_metric_chips(r)]
    if facts:
        body.append(_facts_table(facts, view))
    if trace is not None:
        body.append(_conversation_trace(trace, facts, view, cid))
    else:
        body.append('<p class="empty">Trace not included in the evaluation result.</p>')
    return h.details(cid, "".join(body), meta=_worst_meta(r), open=first)


def _worst_conversations(ev: Any, max_worst: int, traces: Mapping[str, Any],
                         shown: dict[str, _Shown | None]) -> str:
    """The ``max_worst`` conversations with the lowest composite; each one whose trace is drawn
    is added to ``shown`` (its view and anchors, for the ledger's links)."""
    pc = ev.per_conversation
    if not (max_worst and len(pc) and "composite" in pc.columns):
        return ""
    worst = pc.nsmallest(max_worst, "composite")
    by_conv: dict[str, list[dict[str, Any]]] = {}
    for r in _records(getattr(ev, "ledger", None)):
        by_conv.setdefault(str(r.get("conversation_id")), []).append(r)
    out = [f"<h3>The {len(worst)} conversations with the lowest composite score</h3>"]
    for i, r in enumerate(_records(worst)):
        cid = str(r["conversation_id"])
        trace = traces.get(cid)
        view = _shown(trace, anchor_prefix(cid)) if trace is not None else None
        if view is not None:
            shown[cid] = view
        out.append(_worst_conversation(r, by_conv.get(cid, []), trace, view, i == 0))
    return "".join(out)


def _loops_table(ev: Any) -> str:
    """The circular handoffs found (collapsed when many)."""
    loops = getattr(ev, "loops", None) or []
    loop_rows = [{"conversation_id": lp.get("conversation_id"), "kind": lp.get("kind"),
                  "agents": " → ".join(map(str, lp.get("agents") or [])),
                  "turn_indices": lp.get("turn_indices"),
                  "handoff_indices": lp.get("handoff_indices")} for lp in loops]
    return "<h3>Circular handoffs</h3>" + _maybe_collapsed(
        h.records_table(loop_rows, empty="No circular handoffs found."), len(loop_rows),
        "loops")


def _violations_table(ev: Any) -> str:
    """The contract violations found (collapsed when many), the usual columns first."""
    viols = getattr(ev, "violations", None) or []
    cols = None
    if viols:
        keys = list(dict.fromkeys(k for v in viols for k in v))
        cols = [c for c in _VIOLATION_COLUMNS if c in keys] or keys
    return "<h3>Contract violations</h3>" + _maybe_collapsed(h.records_table(
        list(viols), cols, max_rows=1000, empty="No contract violations (or no contracts given)."),
        len(viols), "violations")


def _coordination(ev: Any, max_worst: int) -> str:
    """The Coordination section: agent pairs, the worst conversations with their traces,
    circular handoffs, contract violations and the retention ledger."""
    traces = {t.conversation_id: t for t in (getattr(ev, "traces", None) or [])}
    shown: dict[str, _Shown | None] = {}  # conversation id -> its view, anchors if drawn
    return (_agent_pairs(ev) + _worst_conversations(ev, max_worst, traces, shown)
            + _loops_table(ev) + _violations_table(ev) + _ledger_section(ev, traces, shown))


# --------------------------------------------------------------------------- entry point
def _check_arguments(evaluation: Any, max_worst: Any, title: Any) -> None:
    """Raise the TypeError or ValueError of an argument :func:`report` cannot use."""
    missing = [a for a in _REQUIRED if not hasattr(evaluation, a)]
    if missing:
        raise TypeError("`evaluation` must be an EvaluationResult (what maev_kit.evaluate "
                        f"returns); got {type(evaluation).__name__} without "
                        f"{', '.join(missing)}")
    if isinstance(max_worst, bool) or not isinstance(max_worst, int) or max_worst < 0:
        raise ValueError(f"`max_worst` must be a non-negative int, got {max_worst!r}")
    if not isinstance(title, str):
        raise TypeError(f"`title` must be a str, got {type(title).__name__}")


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


def _check_judged(je: _JudgeErrors) -> None:
    """Raise JudgeErrorsExceeded when every fact failed to be judged: nothing to report."""
    if je.total and not je.judged:
        causes = je.causes()
        raise JudgeErrorsExceeded(
            f"every one of the {je.total} facts failed to be judged"
            f"{' (' + causes + ')' if causes else ''}: this run has no retention result to "
            "report; fix the judge (see the ledger's error column) and run again")


def _subtitle(evaluation: Any, labeled_set: Any, now: str) -> str:
    """The line under the title: conversations, judge, labeled set, when generated."""
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
    return " · ".join(sub)


@dataclass(frozen=True)
class _Inputs:
    """What a report is drawn from: the checked arguments of :func:`report` (but the title)."""

    evaluation: Any
    calibration: Any
    labeled_set: Any
    judge_card: Any
    max_worst: int
    prompt_comparison: Any


def _sections(inp: _Inputs, now: str) -> list[tuple[str, str, str]]:
    """The page's sections in order, each as (anchor, title, body); a prompt comparison, when
    given, comes before Coordination."""
    ev, ls, cal = inp.evaluation, inp.labeled_set, inp.calibration
    sections = [
        ("summary", "Summary", _summary(ev)),
        ("retention", "Retention", _retention(ev)),
        ("calibration", "Judge calibration",
         _calibration(cal, _labels_source(ls, cal), ev, ls)),
        ("coordination", "Coordination", _coordination(ev, inp.max_worst)),
        ("provenance", "Provenance", _provenance(ev, ls, inp.judge_card, now)),
    ]
    if has_probes(cal):  # right after the calibration it probes
        at = [anchor for anchor, _, _ in sections].index("calibration") + 1
        sections.insert(at, ("robustness", "Judge robustness", robustness_html(cal)))
    if ev is not None and getattr(ev, "criteria", None):  # your own criteria, after retention
        from maev_kit.reporting._sections_criteria import criteria_sections

        sections[2:2] = criteria_sections(ev)
    if inp.prompt_comparison is not None:
        from maev_kit.reporting._prompt_section import prompt_comparison_html

        at = [anchor for anchor, _, _ in sections].index("coordination")
        sections.insert(at, ("prompts", "Prompt comparison",
                            prompt_comparison_html(inp.prompt_comparison)))
    return sections


def _page(title: str, subtitle: str, banner: str, sections: list[tuple[str, str, str]]) -> str:
    """The whole page: the banner, then each section, with a link to each in the header."""
    from maev_kit.internal import __version__

    nav = [(anchor, name) for anchor, name, _ in sections]
    body = banner + "".join(h.section(anchor, name, html) for anchor, name, html in sections)
    return h.page(title, subtitle, nav, body,
                  f"maev-kit {__version__} · self-contained report: no scripts, no external "
                  "resources")


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
    ...     loops=[], violations=[], routing=None, judge={"name": "heuristic"}, provenance={})
    >>> r = report(ev, title="Demo <1>")
    >>> "Demo &lt;1&gt;" in r.html, "<script" in r.html
    (True, False)
    """
    _check_arguments(evaluation, max_worst, title)
    je = _judge_errors(evaluation)
    _check_judged(je)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    sections = _sections(_Inputs(evaluation, calibration, labeled_set, judge_card, max_worst,
                                 prompt_comparison), now)
    page = _page(title, _subtitle(evaluation, labeled_set, now), _judge_error_banner(je),
                 sections)
    return Report(page, title)
