"""The report's retention rates estimated three ways: judge-only, human-only and PPI++
corrected with human labels on a random sample (``EvaluationResult.estimates``)."""

from __future__ import annotations

from typing import Any

from maev_kit.rendering.internal import num as _value
from maev_kit.reporting import _html as h
from maev_kit.reporting import _plots

_METHOD_NAMES = {"judge-only": "judge only", "human-only": "people only",
                 "ppi++": "corrected (PPI++)"}


def _estimates(ev: Any) -> str:
    """The subsection: one sentence when the rates are judge-only (and why), else a plot of the
    three estimates per rate over all handoffs and the table of every scope."""
    est = getattr(ev, "estimates", None)
    if est is None or not len(est):
        return ""
    overall = est[est["scope"] == "all"]
    out = ["<h3>Retention rates: judge, people, corrected</h3>"]
    if set(overall["method"]) == {"judge-only"}:
        out.append(h.callout(str(overall["note"].iloc[0]) + ". Draw a random sample of the "
                             "judged items (maev sample), label it, and the rates come with "
                             "a corrected estimate (docs/estimates.md).", warn=True))
        return "".join(out)
    rows = [(f"{r['rate']} · {_METHOD_NAMES.get(r['method'], r['method'])}", _value(r["estimate"]),
             _value(r["ci_low"]), _value(r["ci_high"])) for r in overall.to_dict("records")]
    svg = _plots.forest_svg(rows, title="Retention rates over all handoffs (95 % CI)",
                            highlight=[r[0] for r in rows if "corrected" in r[0]], width=6.0)
    ppi = overall[overall["method"] == "ppi++"]
    n, big_n = (int(ppi["n"].iloc[0]), int(ppi["N"].iloc[0])) if len(ppi) else (0, 0)
    out.append(h.figure(svg, f"Judge only: every judged item, not corrected for judge error. "
                             f"People only: the {n} items of the random sample people "
                             f"labeled. Corrected: PPI++ over the {big_n} other judged items, "
                             "corrected by the judge's error on the sample."))
    out.append(_budget(getattr(ev, "label_budget", None)))
    out.append('<p class="note">The composite and the per-conversation scores use the judge\'s '
               "verdicts as they are: not corrected for judge error (correcting a composite "
               "needs whole conversations labeled, not a sample of items).</p>")
    table = est.assign(method=est["method"].map(lambda m: _METHOD_NAMES.get(m, m)))
    out.append(h.details("Every rate, overall and per agent pair", h.records_table(
        table.to_dict("records"), ["scope", "rate", "method", "estimate", "ci_low", "ci_high",
                                   "n", "N", "lam", "note"],
        headers={"ci_low": "95 % CI low", "ci_high": "95 % CI high", "lam": "λ"}),
        meta=f"{len(est)} rows"))
    return "".join(out)


def _budget(budget: Any) -> str:
    """The label budget: per rate, the sampled labels its corrected interval needs."""
    if budget is None or not len(budget):
        return ""
    first = budget.iloc[0]
    return (f"<p>Label budget for ± {first['target_half_width']:.2f}, planned from the "
            f"{int(first['labeled_now'])} sampled labels so far (PPI++; people alone need more):"
            "</p>" + h.records_table(budget.to_dict("records"), [
                "rate", "labels_needed", "more_labels", "expected_half_width",
                "labels_needed_without_judge", "note"],
                headers={"labels_needed": "labels needed", "more_labels": "more to label",
                         "expected_half_width": "expected ±",
                         "labels_needed_without_judge": "people alone"}))
