"""The report's Judge calibration section: the leaderboard, each judge's κ against the
annotators' ceiling, the confusion matrices, how many more labels are needed and the
disagreements between judges and labels."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from maev_kit.reporting import _html as h, _plots
from maev_kit.reporting._common import _as_dict, _ci_name, _records
from maev_kit.rendering.internal import (
    ceiling as _ceiling,
    judge_label as _judge_label,
    key_label as _key_label,
    num as _num,
)

LEADERBOARD_HEADERS = {
    "kappa": "κ", "kappa_low": "κ low", "kappa_high": "κ high", "delta_kappa": "Δκ",
    "p_value": "p", "ac1": "AC1", "accuracy": "accuracy", "parse_failure_rate": "parse fail",
    "recall_contradicted": "recall contra.", "cost": "cost $", "latency_p50": "lat. p50 s",
    "latency_p95": "lat. p95 s", "cache_hits": "cache hits", "n_items": "items",
    "judge_version": "version"}

DIS_HEADERS = {"human_label_text": "human labels", "human_majority": "human majority",
               "judge_label": "judge label", "after_text": "after the handoff"}

#: How many confusion matrices the section draws.
_MAX_CONFUSIONS = 12


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
    from maev_kit.calibration.internal import labels_are_reference

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


@dataclass(frozen=True)
class _CalView:
    """A calibration as the section draws it: the result, how its labels are named, the name of
    its CI and the annotators' ceiling (κ, low, high), if it has one."""

    cal: Any
    labels: _Labels
    ci_name: str
    ceiling: tuple[float, float, float] | None


def _no_calibration(labeled_set: Any) -> str:
    """What the section says without a calibration: label the set first when it has no labels,
    else calibrate and pass the result."""
    if labeled_set is not None and not getattr(labeled_set, "label_records", True):
        aside = len(getattr(labeled_set, "set_aside_labels", None) or [])
        more = (f" ({aside} label line(s) are set aside: their items are gone; "
                "<code>maev labels SET</code> lists them)" if aside else "")
        return ('<p class="empty">No human labels yet, so no judge calibration' + more
                + ": label with <code>maev_kit.widgets.Labeler(ls.items, "
                "maev_kit.labels.LabelStore('SET/labels.jsonl'), annotator=...)</code> in a "
                "notebook, then <code>maev calibrate SET --judge X</code>.</p>")
    return ('<p class="empty">No calibration in this report. Calibrate the judge against '
            "labeled items (<code>maev calibrate SET --judge X</code>, or "
            "<code>calibrate(...)</code>) and pass <code>calibration=</code> to "
            "<code>report()</code>.</p>")


def _calibration_notes(cal: Any, labels: _Labels, ev: Any) -> list[str]:
    """The notes that open the section: what the labels are, the recommendation, the labels per
    class, the calibration's own notes and which judge scored this report."""
    out = [f'<p class="note">{h.esc(labels.note)}</p>'] if labels.note else []
    rec = getattr(cal, "recommendation", None)
    if rec:
        # A calibration that recommends no judge says so in `recommended` (None).
        none_ok = hasattr(cal, "recommended") and getattr(cal, "recommended") is None
        out.append(h.callout(str(rec), warn=none_ok))
    acc = getattr(cal, "label_accounting", None) or {}
    if acc:
        from maev_kit.calibration.internal import accounting_text

        out.append(f'<p class="note label-accounting">{h.esc(accounting_text(acc))}.</p>')
    counts = getattr(cal, "label_counts", None) or {}
    if counts:
        out.append(f'<p class="note">{h.esc(labels.name.capitalize())} per class: '
                   + h.esc(", ".join(f"{k} {v}" for k, v in counts.items())) + ".</p>")
    for note in getattr(cal, "notes", None) or []:
        out.append(f'<p class="note">{h.esc(str(note))}</p>')
    choice = _judge_choice(ev, cal) if ev is not None else ""
    if choice:
        out.append(f'<p class="note judge-choice">{h.esc(choice)}</p>')
    return out


def _leaderboard_frame(lb: Any, ci_name: str) -> Any:
    """A copy of the leaderboard as shown: p-values as text (``<0.001`` below it) and a κ CI
    column before ``kappa_low``."""
    lb = lb.copy()
    if "p_value" in lb.columns:
        lb["p_value"] = [("<0.001" if (v := _num(x)) is not None and v < 0.001
                          else h.fmt(x)) for x in lb["p_value"]]
    if "kappa_low" in lb.columns and "kappa_high" in lb.columns:
        ci = [_ci_cell(k, lo, hi, n) for k, lo, hi, n in zip(
            lb["kappa"], lb["kappa_low"], lb["kappa_high"],
            lb["n_items"] if "n_items" in lb.columns else [None] * len(lb))]
        at = list(lb.columns).index("kappa_low")
        lb.insert(at, f"κ {ci_name}", ci)
    if "kappa" in lb.columns:
        from maev_kit.calibration.internal import rank_labels

        lb.insert(0, "rank", rank_labels(list(lb["kappa"]), list(lb["status"])
                                         if "status" in lb.columns else None))
    return lb


def _ci_cell(k: Any, lo: Any, hi: Any, n: Any) -> str:
    """A κ CI cell: ``0.303 – 0.912``, or in words (the one rendering, kappa_text) when κ is
    undefined or there is no interval."""
    if _num(k) is None:
        return "undefined — labels hold one class"
    if _num(lo) is None or _num(hi) is None or lo == hi:
        return f"no interval — n = {int(n)}" if _num(n) is not None else "no interval"
    return f"{h.fmt(lo)} – {h.fmt(hi)}"


def _best_kappa_row(recs: list[dict[str, Any]]) -> int | None:
    """The position of the row with the highest κ (the first of equals); None when no row has
    a κ."""
    kappas = [_num(r.get("kappa")) for r in recs]
    if not any(k is not None for k in kappas):
        return None
    return max(range(len(recs)), key=lambda i: -math.inf if kappas[i] is None
               else cast(float, kappas[i]))


def _kappa_figure(cv: _CalView, recs: list[dict[str, Any]]) -> str:
    """The forest plot of each judge's κ with its CI, the annotators' ceiling as a band and the
    calibration's threshold as a line."""
    labels, ceiling, ci_name = cv.labels, cv.ceiling, cv.ci_name
    rows = [(_judge_label(r), r.get("kappa"), r.get("kappa_low"), r.get("kappa_high"))
            for r in recs]
    band = (ceiling[0], ceiling[1], ceiling[2], f"{labels.ceiling} κ (between annotators, {ci_name})") \
        if ceiling else None
    threshold = _num(getattr(cv.cal, "threshold", None))
    refs = [(threshold, f"threshold κ = {threshold:g}")] if threshold is not None else []
    svg = _plots.forest_svg(rows, title=f"Judge κ against the {labels.name} ({ci_name})", xlim=None, bars=False,
                            band=band, refs=refs, xlabel="Cohen's κ", width=6.2)
    cap = (f"The shaded band is the {labels.ceiling}: how well the annotators of the "
           f"{labels.name} agree with each other." if ceiling else f"No {labels.ceiling} "
           "(the labeled set has one "
           "annotator per item).")
    return h.figure(svg, cap)


def _leaderboard(cv: _CalView, lb: Any) -> str:
    """The leaderboard table (the row with the highest κ highlighted), what its columns mean,
    and the κ plot."""
    lb = _leaderboard_frame(lb, cv.ci_name)
    recs = _records(lb)
    best = _best_kappa_row(recs)
    hidden = {"kappa_low", "kappa_high"} | ({"key"} if "judge" in lb.columns else set())
    shown = [c for c in lb.columns if c not in hidden]
    return ("<h3>Leaderboard</h3>"
            + h.records_table(
                recs, shown, formats={"cost": "{:.4f}"}, headers=LEADERBOARD_HEADERS,
                row_class=["best" if i == best else None for i in range(len(recs))])
            + '<p class="note">κ: Cohen\'s kappa of the judge against the '
            f"{h.esc(cv.labels.name)}, with a bootstrap CI; Δκ and p compare with the best judge; AC1: Gwet's "
            "agreement coefficient. The highlighted row has the highest κ; “= 1st” marks judges "
            "whose κ is the same to 3 decimals.</p>"
            + _kappa_figure(cv, recs))


def _ceiling_note(cv: _CalView, ceiling: tuple[float, float, float]) -> str:
    """The annotators' ceiling κ with its CI and, when the calibration has them, Fleiss κ,
    Krippendorff α and the numbers of annotators and items."""
    extra = ""
    cd = _as_dict(getattr(cv.cal, "ceiling", None)) or {}
    more_ceiling = [f"{name} {h.fmt(cd[k])}" for k, name in (
        ("fleiss_kappa", "Fleiss κ"), ("krippendorff_alpha", "Krippendorff α"),
        ("n_annotators", "annotators"), ("n_items", "items")) if _num(cd.get(k)) is not None]
    if more_ceiling:
        extra = "; " + ", ".join(more_ceiling)
    return (f'<p class="note">{h.esc(cv.labels.ceiling.capitalize())} κ = '
            f"{h.esc(h.fmt(ceiling[0]))} "
            f"({cv.ci_name} {h.esc(h.fmt(ceiling[1]))} – {h.esc(h.fmt(ceiling[2]))})"
            f"{h.esc(extra)}.</p>")


def _confusion_matrices(cv: _CalView) -> str:
    """The judges' confusion matrices against the labels (the first 12); "" without any."""
    confusions = getattr(cv.cal, "confusions", None) or {}
    if not confusions:
        return ""
    label = cv.labels.name[:-1]
    out = [f"<h3>Confusion matrices (rows: {h.esc(label)}, columns: judge label)</h3>"]
    figs = []
    items = list(confusions.items())
    for key, df in items[:_MAX_CONFUSIONS]:
        if df is None or not hasattr(df, "values") or len(df) == 0:
            continue
        figs.append(h.figure(_plots.heatmap_svg(
            df.values, list(df.index), list(df.columns), title=_key_label(key),
            xlabel="judge", ylabel=label, size=(0.7, 0.5))))
    out.append('<div class="gridm">' + "".join(figs) + "</div>")
    if len(items) > _MAX_CONFUSIONS:
        out.append(f'<p class="note">{len(items) - _MAX_CONFUSIONS} more confusion matrices '
                   "not shown.</p>")
    return "".join(out)


def _disagreements(cv: _CalView) -> str:
    """The items where a judge and the labels disagree, collapsed; "" without that table."""
    dis = getattr(cv.cal, "disagreements", None)
    if dis is None or not hasattr(dis, "columns"):
        return ""
    labels_name = cv.labels.name
    recs = _records(dis)
    cols = [c for c in dis.columns
            if not any(isinstance(r.get(c), Mapping) for r in recs[:50])]
    order = ["judge", "item_id", "human_label_text", "human_majority", "judge_label",
             "fact", "rationale", "error", "after_text"]
    cols = [c for c in order if c in cols] + [c for c in cols if c not in order]
    headers = {**DIS_HEADERS, "human_label_text": labels_name,
               "human_majority": f"{cv.labels.kind} majority",
               "human": labels_name[:-1], "human_label": labels_name[:-1]}
    return h.details(f"Disagreements between judges and the {labels_name}",
                     h.records_table(recs, cols, max_rows=300, headers=headers,
                                     empty="No disagreements."),
                     meta=f"{len(dis)} items", scroll=True)


def _calibration(cal: Any, labels: _Labels | None = None, ev: Any = None,
                 labeled_set: Any = None) -> str:
    """The Judge calibration section of ``cal`` (a CalibrationResult), its labels named as
    ``labels`` says; without one, how to get one."""
    if cal is None:
        return _no_calibration(labeled_set)
    labels = labels or _Labels()
    cv = _CalView(cal, labels, _ci_name(getattr(cal, "confidence", 0.95)),
                  _ceiling(getattr(cal, "ceiling", None)))
    out = _calibration_notes(cal, labels, ev)
    lb = getattr(cal, "leaderboard", None)
    if lb is not None and len(lb):
        out.append(_leaderboard(cv, lb))
    elif cv.ceiling:
        out.append(h.kv_table([(f"{labels.ceiling} κ", cv.ceiling[0]),
                               (cv.ci_name,
                                f"{h.fmt(cv.ceiling[1])} – {h.fmt(cv.ceiling[2])}")]))
    if cv.ceiling:
        out.append(_ceiling_note(cv, cv.ceiling))
    out.append(_confusion_matrices(cv))
    out.append(_labels_needed(cal, labels))
    out.append(_disagreements(cv))
    return "".join(out)


def _labels_needed(cal: Any, labels: _Labels | None = None) -> str:
    """How many more labels are needed: what the calibration says (a figure, a table, a number
    or a text), else an estimate."""
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
