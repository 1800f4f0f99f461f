"""The offline fact proposer, measured: recall and precision on support_desk, and speed.

Run: ``python benchmarks/bench_facts.py`` (``--out FILE`` writes the markdown section).

(a) Quality. ``support_desk``'s key facts are hidden from the proposer and used as the
reference. A reference fact's *value* is derived from its text alone: its value runs — maximal
runs of words that hold a digit, an ``@`` or a capital letter (the sentence's first word
excepted), e.g. ``ACCT-4471``, ``$49.99``, ``Ana Petrović``, ``Tuesday at 10:00`` → runs
``Tuesday`` and ``10:00``. A reference fact is *stated verbatim* when every run occurs in the
messages before its handoff, and *found* when every run appears in the value of a fact the
proposer gave for that handoff. Facts with no run ("has already restarted the router") count as
not found in overall recall and are left out of verbatim recall. A proposed fact is *correct*
when its value contains, or is contained in, a run of a reference fact of the same handoff;
support_desk does not list every fact said (an account number given but not chosen as a key
fact is not in the reference), so precision is a lower bound — also shown against the
reference facts of any handoff of the conversation.

(b) Speed. Handoffs per second of ``propose_facts(method="offline")`` on one core over 10,000
traces: support_desk's 85 conversations replicated under new ids (each copy's messages vary by
a counter, so nothing is cached across copies).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from dataclasses import replace

import maev_kit
from maev_kit.facts import propose_facts

_TOKEN_END = ".,;:!?)\"'”"
_KIND_OF_REFERENCE = {  # support_desk fact-id suffix → the proposer kind that fits it
    "account_number": "identifier", "invoice_number": "identifier", "card_last4": "identifier",
    "error_code": "identifier", "region": "identifier", "router": "identifier",
    "app_version": "identifier", "email": "email", "refund_amount": "money",
    "charge_date": "date", "appointment": "date", "deadline": "date", "seats": "quantity",
    "customer_name": "name", "login_location": "place", "plan": "other", "device": "other",
    "display_name_xss": "other", "tried_steps": "other",
}


def value_runs(text: str) -> list[str]:
    """The value runs of a reference fact's text (see the module docstring).

    >>> value_runs("A technician visit is booked for Tuesday at 10:00 am.")
    ['Tuesday', '10:00']
    >>> value_runs("The customer's name is Ana Petrović.")
    ['Ana Petrović']
    >>> value_runs("The customer has already restarted the router.")
    []
    """
    runs: list[list[str]] = [[]]
    for i, word in enumerate(text.split()):
        w = word.strip(_TOKEN_END).lstrip("(\"'“")
        valuable = bool(w) and i > 0 and (any(c.isdigit() or c == "@" for c in w)
                                          or any(c.isupper() for c in w))
        if valuable:
            runs[-1].append(w)
        elif runs[-1]:
            runs.append([])
        if valuable and w != word.lstrip("(\"'“") and runs[-1]:  # punctuation ends a run
            runs.append([])
    return [" ".join(r) for r in runs if r]


def quality(labeled, *, carry_over: bool = True) -> dict:
    proposed = propose_facts(labeled.traces, carry_over=carry_over)
    by_handoff = defaultdict(list)
    for f in proposed:
        by_handoff[(f.conversation_id, f.handoff_index)].append(f)
    kinds = defaultdict(lambda: [0, 0, 0])  # kind → [reference, verbatim, found]
    ref_runs_by_handoff = defaultdict(list)
    ref_runs_by_conv = defaultdict(list)
    misses = []
    for t in labeled.traces:
        exp = labeled.expectations.get(t.conversation_id)
        for kf in exp.key_facts if exp else []:
            h = t.handoffs[kf.handoff_index]
            before = "\n".join(m.content for m in t.messages() if m.turn_index <= h.turn_index)
            runs = value_runs(kf.text)
            ref_runs_by_handoff[(t.conversation_id, kf.handoff_index)].extend(runs)
            ref_runs_by_conv[t.conversation_id].extend(runs)
            kind = kf.fact_id.split("_", 1)[-1]  # support_desk's name for the fact
            verbatim = bool(runs) and all(r in before for r in runs)
            values = [f.value or "" for f in by_handoff[(t.conversation_id, kf.handoff_index)]]
            found = bool(runs) and all(any(r in v for v in values) for r in runs)
            k = kinds[kind]
            k[0] += 1
            k[1] += verbatim
            k[2] += found and verbatim
            if verbatim and not found:
                misses.append((t.conversation_id, kf.handoff_index, kf.text))

    def correct(f, runs) -> bool:
        v = f.value or ""
        return any(r in v or (v and v in r) for r in runs)

    right = sum(correct(f, ref_runs_by_handoff[(f.conversation_id, f.handoff_index)])
                for f in proposed)
    right_conv = sum(correct(f, ref_runs_by_conv[f.conversation_id]) for f in proposed)
    by_kind_proposed = defaultdict(lambda: [0, 0])
    for f in proposed:
        by_kind_proposed[f.kind][0] += 1
        by_kind_proposed[f.kind][1] += correct(
            f, ref_runs_by_handoff[(f.conversation_id, f.handoff_index)])
    n_ref = sum(k[0] for k in kinds.values())
    n_verbatim = sum(k[1] for k in kinds.values())
    n_found = sum(k[2] for k in kinds.values())
    return {"kinds": dict(kinds), "proposed": len(proposed), "right": right,
            "right_conv": right_conv, "n_ref": n_ref, "n_verbatim": n_verbatim,
            "n_found": n_found, "misses": misses, "by_kind_proposed": dict(by_kind_proposed),
            "handoffs": sum(len(t.handoffs) for t in labeled.traces)}


def _vary(trace, i: int):
    """A copy of ``trace`` under a new id whose messages differ (no cache can help)."""
    from maev_kit.traces import AgentTurn, UserMessage

    return replace(
        trace, conversation_id=f"{trace.conversation_id}-{i}",
        user_messages=[UserMessage(f"{m.content} (ref {i})", m.turn_index)
                       for m in trace.user_messages],
        turns=[AgentTurn(t.agent_id, t.agent_role, f"{t.message} #{i}", t.tool_calls,
                         t.turn_index) for t in trace.turns])


def speed(labeled, n_traces: int = 10_000, repeats: int = 5) -> dict:
    base = labeled.traces
    traces = [_vary(base[i % len(base)], i) for i in range(n_traces)]
    handoffs = sum(len(t.handoffs) for t in traces)
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        propose_facts(traces)
        times.append(time.process_time() - t0)
    best, median = min(times), statistics.median(times)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return {"load": load, "cpus": os.cpu_count(), "traces": n_traces, "handoffs": handoffs,
            "best_s": best, "median_s": median,
            "per_s_best": handoffs / best, "per_s_median": handoffs / median}


def _pct(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def markdown(q: dict, q_once: dict, s: dict) -> str:
    lines = [
        "## Proposed facts (offline proposer)",
        "",
        "`python benchmarks/bench_facts.py` — support_desk with its key facts hidden; the "
        "reference facts are its key facts. A reference fact is *stated verbatim* when each of "
        "its value runs (the words of its text with a digit, an `@` or a capital letter, "
        "e.g. `ACCT-4471`, `$49.99`, `Ana Petrović`) occurs in the messages before its "
        "handoff, and *found* when each run lies in the value of a fact proposed for that "
        "handoff.",
        "",
        "| reference fact | proposer kind | reference facts | stated verbatim | found | "
        "recall (verbatim) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for kind, (n, v, f) in sorted(q["kinds"].items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {kind} | {_KIND_OF_REFERENCE.get(kind, '?')} | {n} | {v} | {f} | "
                     f"{_pct(f, v)} |")
    lines += [
        f"| **all** | | **{q['n_ref']}** | **{q['n_verbatim']}** | **{q['n_found']}** | "
        f"**{_pct(q['n_found'], q['n_verbatim'])}** |",
        "",
        f"- Recall on facts stated verbatim: **{_pct(q['n_found'], q['n_verbatim'])}** "
        f"(target ≥ 0.8); over all {q['n_ref']} reference facts: "
        f"{_pct(q['n_found'], q['n_ref'])} (facts such as \"has already restarted the router\" "
        "have no value to find).",
        f"- Precision: {q['proposed']} facts proposed for {q['handoffs']} handoffs; "
        f"{_pct(q['right'], q['proposed'])} match a reference fact of the same handoff, "
        f"{_pct(q['right_conv'], q['proposed'])} one of the same conversation. A lower bound: "
        "the reference leaves out facts that were said (an account number given but not "
        "chosen as a key fact, an error code such as `E-PAY-402`, the customer's name) and the "
        "agent's own identifiers and amounts.",
        "",
        "| proposed kind | proposed | match a reference fact | precision |",
        "|---|---:|---:|---:|",
    ]
    for kind, (n, r) in sorted(q["by_kind_proposed"].items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {kind} | {n} | {r} | {_pct(r, n)} |")
    lines += [
        "",
        f"- With `carry_over=False` (each value proposed once, at the first handoff after it "
        f"was said): recall (verbatim) {_pct(q_once['n_found'], q_once['n_verbatim'])}, "
        f"{q_once['proposed']} facts proposed, precision "
        f"{_pct(q_once['right'], q_once['proposed'])} — support_desk repeats earlier facts at "
        "later handoffs, hence the default `carry_over=True`.",
        f"- Speed: {s['per_s_median']:,.0f} handoffs/s (median of 5; best "
        f"{s['per_s_best']:,.0f}/s) on one core, {s['traces']:,} traces with "
        f"{s['handoffs']:,} handoffs (target ≥ 5,000/s); CPU time, measured with a load "
        f"average of {s['load']:.1f} on {s['cpus']} cores.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="write the markdown section to this file")
    ap.add_argument("--traces", type=int, default=10_000)
    ap.add_argument("--misses", action="store_true", help="list verbatim facts not found")
    args = ap.parse_args()
    labeled = maev_kit.load_labeled_set("support_desk")
    q = quality(labeled)
    q_once = quality(labeled, carry_over=False)
    s = speed(labeled, args.traces)
    md = markdown(q, q_once, s)
    print(md)
    if args.misses:
        for m in q["misses"]:
            print("missed:", *m)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(md)


if __name__ == "__main__":
    main()

