"""The report's sections of your own criteria (``EvaluationResult.criteria``): per criterion,
its question, each label's share with its CI over conversations, and the corrected estimate
where people labeled."""

from __future__ import annotations

from typing import Any

from maev_kit.rendering.internal import num as _value
from maev_kit.reporting import _html as h
from maev_kit.reporting import _plots

__all__ = ["criteria_sections"]


def criteria_sections(ev: Any) -> list[tuple[str, str, str]]:
    """One (anchor, title, body) per criterion of the result (none without criteria)."""
    out = []
    for k, (name, table) in enumerate((getattr(ev, "criteria", None) or {}).items()):
        info = (ev.provenance.get("criteria") or {}).get(name, {})
        out.append((f"criterion-{k}", f"Criterion: {name}", _body(name, table, info)))
    return out


def _body(name: str, table: Any, info: dict[str, Any]) -> str:
    parts = [f"<p><b>{h.esc(info.get('question', ''))}</b></p>"]
    n = int(table["n"].iloc[0]) if len(table) else 0
    errors = int(info.get("errors") or 0)
    unit = "which-agent" if info.get("answers") else str(info.get("scope", ""))
    judged = (f"{n} {h.esc(unit)} item(s) of "
              f"{int(table['n_conversations'].iloc[0]) if len(table) else 0} conversation(s), "
              f"judged by {h.esc(info.get('judge', 'n/a'))}"
              + (f" ({h.esc(info.get('model'))})" if info.get("model") else ""))
    if info.get("answers"):
        judged += f"; the answers are {h.esc(info['answers'])}, one row per agent named"
    parts.append(f'<p class="note">{judged}.</p>')
    if errors:
        causes = ", ".join(f"{h.esc(c)} {v}"
                           for c, v in (info.get("errors_by_cause") or {}).items())
        parts.append(h.callout(f"{errors} item(s) could not be judged ({causes}): they are left "
                               "out of every share, never counted as a label.", warn=True))
    if n == 0:
        parts.append(h.callout(f"Nothing judged for {h.esc(name)}: its shares are n/a.",
                               warn=True))
        return "".join(parts)
    rows = [(str(lab), _value(r["share"]), _value(r["share_low"]), _value(r["share_high"]))
            for lab, r in table.iterrows()]
    positive = [str(lab) for lab, r in table.iterrows() if bool(r["positive"])]
    svg = _plots.forest_svg(rows, title=f"{name}: share of each label (95 % CI)",
                            highlight=positive, width=6.0)
    parts.append(h.figure(svg, "Judge's labels, not corrected for judge error; the interval "
                               "resamples conversations."))
    shown = table.reset_index()
    columns = ["label", "share", "share_low", "share_high", "n"]
    if shown["n_human"].any():
        columns += ["corrected", "corrected_low", "corrected_high", "n_human"]
        parts.append('<p class="note">Corrected: PPI++ from the items people labeled; valid '
                     "when those are a random sample of the judged items.</p>")
    parts.append(h.records_table(shown.to_dict("records"), columns,
                                 headers={"share_low": "95 % CI low",
                                          "share_high": "95 % CI high",
                                          "corrected_low": "corrected low",
                                          "corrected_high": "corrected high"}))
    return "".join(parts)
