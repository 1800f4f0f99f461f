"""Hand-made EvaluationResult / calibration stand-ins for the report tests (and the sample
report: ``python -m tests.report._factories OUT.html`` from the repository root)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from maev_kit.evaluation import EvaluationResult
from maev_kit.metrics import RoutingReport
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace

XSS = ('<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2"> </div>'
       '</table></details>')

AGENTS = ("triage", "billing", "tech_support", "account_security", "general_faq", "human")
LABELS = ("retained", "lost", "contradicted")
METRICS = ("composite", "handoff_quality", "information_retention", "routing_quality",
           "target_accuracy", "reason_accuracy", "context_completeness", "retention_rate",
           "routing_exact", "routing_acceptable")


def make_evaluation(n: int = 12, *, seed: int = 0, xss: bool = True) -> EvaluationResult:
    """A plausible evaluation of ``n`` conversations; conversation c-000 carries XSS strings."""
    rng = random.Random(seed)
    traces, rows, ledger, loops, violations = [], [], [], [], []
    for i in range(n):
        cid = f"c-{i:03d}"
        evil = xss and i == 0
        chain = ["triage", rng.choice(AGENTS[1:5])]
        if rng.random() < 0.3:
            chain.append(rng.choice(AGENTS[1:]))
        if rng.random() < 0.1:
            chain += [chain[1], chain[2] if len(chain) > 2 else "human"]
        turns, handoffs, ti = [], [], 1
        user = [f"Hi, my account is ACCT-{1000 + i} and I was charged twice."
                + (f" {XSS}" if evil else "")]
        for k, agent in enumerate(chain):
            msg = f"{agent} here, looking into ACCT-{1000 + i}."
            if evil and k == 1:
                msg += " " + XSS
            turns.append(AgentTurn(agent, "router" if agent == "triage" else "specialist",
                                   msg, turn_index=ti))
            ti += 1
            if k + 1 < len(chain):
                ctx = {"account_number": f"ACCT-{1000 + i}"}
                if evil:
                    ctx["note"] = XSS
                handoffs.append(Handoff(agent, chain[k + 1], "specialization", ctx, ti))
                ti += 1
        traces.append(MultiAgentTrace(cid, turns, handoffs, user))
        counts = dict.fromkeys(LABELS, 0)
        for hi, hoff in enumerate(handoffs):
            for f in range(rng.randint(1, 3)):
                lab = rng.choices(LABELS, weights=(7, 2, 1))[0]
                counts[lab] += 1
                fact = f"Account number is ACCT-{1000 + i}" if f == 0 else f"Fact {f} of {cid}"
                if evil:
                    fact = f"Fact {XSS}"
                ledger.append({
                    "item_id": f"{cid}/h{hi}/f{f}", "conversation_id": cid, "handoff_index": hi,
                    "from_agent": hoff.from_agent, "to_agent": hoff.to_agent,
                    "fact_id": f"f{f}", "fact": fact, "label": lab,
                    "rationale": XSS if evil else f"The {hoff.to_agent} agent used it.",
                    "evidence": "", "error": None})
        judged = sum(counts.values())
        rr = counts["retained"] / judged if judged else 1.0
        hq = rng.uniform(0.4, 1.0)
        rq = rng.choice([0.0, 1.0, 1.0, 1.0])
        n_loops = 1 if len(chain) > 3 else 0
        if n_loops:
            loops.append({"conversation_id": cid, "kind": "ping_pong",
                          "agents": [chain[1], chain[2]], "turn_indices": [4, 6, 8],
                          "handoff_indices": [1, 2, 3]})
        nv = 1 if (evil or rng.random() < 0.15) else 0
        if nv:
            violations.append({"conversation_id": cid, "handoff_index": 0, "turn_index": 2,
                               "from_agent": "triage", "to_agent": chain[1],
                               "contract_index": 0, "contract": "triage→*",
                               "kind": "missing_key", "key": XSS if evil else "account_number",
                               "expected_types": [], "actual_type": None,
                               "message": "required key missing"})
        rows.append({
            "conversation_id": cid, "split": "test", "n_turns": len(turns),
            "n_handoffs": len(handoffs), "target_accuracy": hq, "reason_accuracy": hq,
            "context_completeness": hq, "missing_handoffs": 0, "unexpected_handoffs": 0,
            "n_facts": judged, **counts, "judge_errors": 0, "retention_rate": rr,
            "routing_cases": 1, "routing_exact": rq, "routing_acceptable": rq,
            "n_loops": n_loops, "exceeds_limit": False, "should_escalate": bool(n_loops),
            "contract_violations": nv, "handoff_quality": hq, "information_retention": rr,
            "routing_quality": rq, "composite": 0.4 * hq + 0.4 * rr + 0.2 * rq})
    pc = pd.DataFrame(rows)
    agg = pd.DataFrame([{"metric": m, "mean": pc[m].mean(), "ci_low": pc[m].mean() - 0.05,
                         "ci_high": min(1.0, pc[m].mean() + 0.05), "n": len(pc)}
                        for m in METRICS])
    hf = pd.DataFrame([(h.from_agent, h.to_agent) for t in traces for h in t.handoffs],
                      columns=["from_agent", "to_agent"])
    if xss:  # an agent id that is itself an attack string
        hf.loc[len(hf)] = ["triage", "<b>evil</b>$x$"]
    matrix = pd.crosstab(hf["from_agent"], hf["to_agent"])
    ld = pd.DataFrame(ledger)
    pair_rows = []
    for (fa, ta), cnt in hf.value_counts().items():
        sub = ld[(ld["from_agent"] == fa) & (ld["to_agent"] == ta)]
        c = {lab: int((sub["label"] == lab).sum()) for lab in LABELS}
        j = sum(c.values())
        pair_rows.append({"from_agent": fa, "to_agent": ta, "handoffs": int(cnt),
                          "facts": len(sub), **c,
                          "retention_rate": c["retained"] / j if j else None,
                          "context_complete": 0.9})
    exact = float(pc["routing_exact"].mean())
    routing = RoutingReport(exact_routing_accuracy=round(exact, 3),
                            acceptable_routing_accuracy=round(min(1.0, exact + 0.05), 3),
                            total_cases=n, misrouted=int(round((1 - exact) * n)))
    confusion = pd.DataFrame([[3, 1], [0, 4]], index=["billing", XSS],
                             columns=["billing", "tech_support"])
    return EvaluationResult(
        per_conversation=pc, aggregates=agg, handoff_matrix=matrix,
        pair_stats=pd.DataFrame(pair_rows), ledger=ld, loops=loops, violations=violations,
        routing=routing, routing_confusion=confusion,
        judge={"name": "heuristic", "version": "1", "model": None, "offline": True,
               "stats": {"requests": 0, "cache_hits": 0}},
        provenance={"maev_kit_version": "0.1.0", "date": "2026-11-29T20:00:00Z",
                    "labeled_set": {"name": "support_desk", "version": "1.0",
                                    "hash": "ab" * 32},
                    "split": "test", "judge_card": None, "n_conversations": n, "confidence": 0.95,
                    "n_items": len(ledger)},
        traces=traces)


@dataclass
class FakeCalibration:
    """Duck-typed stand-in for maev_kit.calibration.CalibrationResult."""

    leaderboard: pd.DataFrame
    ceiling: Any
    confusions: dict[Any, pd.DataFrame]
    disagreements: pd.DataFrame
    recommendation: str
    labels_needed: Any = None
    extra: dict = field(default_factory=dict)


def make_calibration(*, xss: bool = True) -> FakeCalibration:
    judges = [("heuristic", None, 0.62, 0.51, 0.72), ("keyword-overlap", None, 0.48, 0.36, 0.6),
              ("gpt-4o-mini", "retention-v2", 0.71, 0.62, 0.8)]
    if xss:
        judges.append((XSS, "v1", 0.3, 0.1, 0.5))
    lb = pd.DataFrame([{
        "judge": j, "prompt": p, "kappa": k, "kappa_low": lo, "kappa_high": hi,
        "delta_kappa": k - 0.71, "p_value": 0.0004 if k < 0.5 else 0.21, "ac1": k + 0.05,
        "accuracy": k + 0.15, "parse_failure_rate": 0.0, "recall_contradicted": k - 0.1,
        "cost": 0.0123 if p else 0.0, "tokens": 1200 if p else 0, "latency_p50": 0.4,
        "latency_p95": 1.2, "requests": 40, "cache_hits": 3} for j, p, k, lo, hi in judges])
    conf = {(j, p): pd.DataFrame([[50, 6, 2], [5, 20, 3], [1, 2, 9]], index=list(LABELS),
                                 columns=list(LABELS)) for j, p, *_ in judges}
    dis = pd.DataFrame([{"item_id": "c-000/h0/f0", "human": "lost", "judge": "retained",
                         "fact": XSS if xss else "Account number is ACCT-1000"}])
    return FakeCalibration(lb, {"kappa": 0.78, "ci": [0.7, 0.85]}, conf, dis,
                           "Use heuristic: κ 0.62 [0.51, 0.72], close to the human ceiling."
                           + (f" {XSS}" if xss else ""), labels_needed=230)



if __name__ == "__main__":  # build the sample report (screenshots, timing)
    import sys
    import time

    ev, cal = make_evaluation(100), make_calibration(xss=False)
    t0 = time.perf_counter()
    from maev_kit.reporting import report

    r = report(ev, calibration=cal, title="maev-kit coordination report — sample")
    print(f"report built in {time.perf_counter() - t0:.2f} s ({len(r.html):,} characters)")
    print(r.save(sys.argv[1] if len(sys.argv) > 1 else "report.html"))
