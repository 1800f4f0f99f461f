"""The report's Retention section: where the key facts came from (counts and outcomes by
source) and what the run could not measure (the n/a components, with the reason)."""

from __future__ import annotations

import math
from typing import Any

from maev_kit.reporting import _html as h
from maev_kit.reporting._common import _plural, _records
from maev_kit.reporting._sections_estimates import _estimates


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
    """What a fact source means, for the table of facts by source."""
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
    out.append(_estimates(ev))
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
