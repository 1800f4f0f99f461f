"""Benchmark: load a large trace file and run every deterministic metric on it.

Generates seeded synthetic traces (default 10,000 conversations of ~20 agent turns and ~3
handoffs each), writes them with ``maev_kit.save_traces``, then prints:

- load time (``maev_kit.traces.load_traces``, validation included), beside the time of bare
  ``json.loads`` on every line (the floor for any JSONL loader; its ratio to load time is
  stable when the machine is busy, unlike the absolute times), and the load again with the
  cyclic garbage collector paused;
- time for all deterministic metrics over all traces: handoff accuracy (aligned and
  positional), circular handoffs, handoff contracts, routing (score + confusion frame), the
  composite score per conversation and one weight-sensitivity frame;
- wall and CPU time (CPU time is the steadier number on a shared machine: compare the
  load average printed in the header), traces/s for each;
- peak memory: process peak RSS; with ``--tracemalloc`` also the peak of Python allocations
  during load and during metrics, measured in a second, slower pass.

Usage::

    python benchmarks/bench_metrics.py            # 10,000 traces
    python benchmarks/bench_metrics.py --n 1000 --seed 7 --keep traces.jsonl
    python benchmarks/bench_metrics.py --profile  # cProfile of the load, top 25 entries

Aims (issue 2, on a 2-core machine): load < 3 s, metrics < 2 s. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from maev_kit import (
    AgentTurn,
    Handoff,
    HandoffContract,
    HandoffExpectation,
    MultiAgentTrace,
    RoutingTestCase,
    check_handoff_contracts,
    coordination_score,
    detect_circular_handoffs,
    routing_confusion,
    save_traces,
    score_handoff_accuracy,
    score_routing,
    weight_sensitivity,
)
from maev_kit.traces import UserMessage, load_traces

SPECIALISTS = {"billing": "billing", "refunds": "billing", "tech": "tech", "api": "tech",
               "accounts": "accounts", "general": "general"}
REASONS = ["capability_match", "escalation", "specialization", "fallback", None]
WORDS = ("account invoice refund charge error login password card payment plan upgrade "
         "cancel address email verify transfer balance statement crash timeout api key "
         "the a to of and for your my is was please thanks we can will check").split()

CONTRACTS = [
    HandoffContract("*", "billing", required_context_keys=["account_number"],
                    value_types={"account_number": "string", "amount": ["number", "null"]}),
    HandoffContract("*", "refunds", required_context_keys=["account_number", "amount"],
                    value_types={"amount": "number"}),
    HandoffContract("*", "tech", "escalation", ["error_code"], {"error_code": "string"}),
    HandoffContract("*", "api", required_context_keys=["error_code", "api_key_id"]),
    HandoffContract("triage", "*", required_context_keys=["intent"]),
]


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choices(WORDS, k=n_words)).capitalize() + "."


def _context(rng: random.Random, target: str) -> dict[str, Any]:
    ctx: dict[str, Any] = {"intent": target}
    if rng.random() < 0.9:
        ctx["account_number"] = f"ACCT-{rng.randrange(10000):04d}"
    if rng.random() < 0.1:
        ctx["account_number"] = rng.randrange(10000)  # wrong type now and then
    if target in ("tech", "api") and rng.random() < 0.8:
        ctx["error_code"] = f"E{rng.randrange(100)}"
    if target in ("refunds", "billing") and rng.random() < 0.7:
        ctx["amount"] = round(rng.uniform(1, 500), 2)
    if target == "api" and rng.random() < 0.7:
        ctx["api_key_id"] = f"key-{rng.randrange(1000)}"
    return ctx


def make_trace(i: int, rng: random.Random) -> tuple[MultiAgentTrace, dict[str, Any]]:
    """One synthetic conversation and what it should have done (expectations, routing case)."""
    specialists = list(SPECIALISTS)
    n_handoffs = max(1, min(6, round(rng.gauss(3, 1))))
    route = [rng.choice(specialists)]
    for _ in range(n_handoffs - 1):
        route.append(rng.choice([s for s in specialists if s != route[-1]] + ["triage"]))
    if rng.random() < 0.05 and len(route) >= 2:  # inject a ping-pong
        route += [route[-2], route[-1]]
    n_turns = max(8, round(rng.gauss(20, 3)))
    turns_per_agent = max(1, n_turns // (len(route) + 1))

    turns: list[AgentTurn] = []
    handoffs: list[Handoff] = []
    users: list[UserMessage] = []
    idx = 0
    users.append(UserMessage(_text(rng, rng.randint(8, 25)), idx))
    idx += 1
    agent = "triage"
    for target in [*route, None]:
        for k in range(turns_per_agent):
            if k and rng.random() < 0.3:
                users.append(UserMessage(_text(rng, rng.randint(5, 20)), idx))
                idx += 1
            turns.append(AgentTurn(agent, "router" if agent == "triage" else "specialist",
                                   _text(rng, rng.randint(10, 40)),
                                   [{"name": "lookup", "arguments": {"q": "x"}}]
                                   if rng.random() < 0.2 else [], idx))
            idx += 1
        if target is None:
            break
        handoffs.append(Handoff(agent, target, rng.choice(REASONS), _context(rng, target), idx))
        idx += 1
        agent = target

    # Expectations: the intended route, with an extra/missing/wrong handoff now and then.
    expected_targets = list(route)
    roll = rng.random()
    if roll < 0.1:
        expected_targets = expected_targets[1:]
    elif roll < 0.2:
        expected_targets.insert(rng.randrange(len(expected_targets) + 1), rng.choice(specialists))
    expected = [HandoffExpectation(t, rng.choice(REASONS[:4]) if rng.random() < 0.5 else None,
                                   ["account_number"] + (["error_code"] if t in ("tech", "api")
                                                         else []))
                for t in expected_targets]
    correct = route[0] if rng.random() < 0.85 else rng.choice(specialists)
    case = RoutingTestCase(users[0].content, correct,
                           ["general"] if correct != "general" and rng.random() < 0.3 else [],
                           category=SPECIALISTS[correct])
    retention = {"retention_rate": round(rng.uniform(0.5, 1.0), 3),
                 "contradicted": rng.choice([0, 0, 0, 1])}
    trace = MultiAgentTrace(f"conv-{i:06d}", turns, handoffs, users, {"synthetic": True})
    return trace, {"expected": expected, "routing_case": case, "retention": retention}


def generate(n: int, seed: int) -> Iterator[tuple[MultiAgentTrace, dict[str, Any]]]:
    rng = random.Random(seed)
    for i in range(n):
        yield make_trace(i, rng)


def run_metrics(traces: list[MultiAgentTrace], truth: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Every deterministic metric over every trace; returns a small summary."""
    n_violations = n_loops = n_escalate = 0
    cases, routes, composites = [], [], []
    for t in traces:
        want = truth[t.conversation_id]
        aligned = score_handoff_accuracy(t.handoffs, want["expected"])
        score_handoff_accuracy(t.handoffs, want["expected"], matching="positional")
        loops = detect_circular_handoffs(t, max_handoffs=5)
        n_loops += len(loops.loops)
        n_escalate += loops.should_escalate
        n_violations += len(check_handoff_contracts(t, CONTRACTS))
        case = want["routing_case"]
        route = t.handoffs[0].to_agent if t.handoffs else None
        cases.append(case)
        routes.append(route)
        routing = score_routing([case], [route])
        composites.append(coordination_score(aligned, want["retention"],
                                             routing).composite_coordination)
    overall = score_routing(cases, routes)
    confusion = routing_confusion(cases, routes)
    weight_sensitivity({"target_accuracy": 0.9, "context_completeness": 0.8},
                       {"retention_rate": 0.8, "contradicted": 0}, overall)
    return {"contract_violations": n_violations, "loops": n_loops, "escalations": n_escalate,
            "mean_composite": round(sum(composites) / len(composites), 3) if composites else None,
            "acceptable_routing_accuracy": overall.acceptable_routing_accuracy,
            "category_routing_accuracy": overall.category_routing_accuracy,
            "confusion_shape": confusion.shape}


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes vs KiB


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of traces (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", metavar="PATH", help="write the trace file here and keep it")
    ap.add_argument("--tracemalloc", action="store_true",
                    help="second pass measuring the peak of Python allocations (slower)")
    ap.add_argument("--profile", action="store_true", help="cProfile the load, print top 25")
    args = ap.parse_args(argv)
    if args.n < 1:
        ap.error("--n must be at least 1")

    tmp = None
    if args.keep:
        path = Path(args.keep)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="maev-bench-")
        path = Path(tmp.name) / "traces.jsonl"

    t0 = time.perf_counter()
    truth: dict[str, dict[str, Any]] = {}

    def traces_only() -> Iterator[MultiAgentTrace]:
        for trace, want in generate(args.n, args.seed):
            truth[trace.conversation_id] = want
            yield trace

    save_traces(traces_only(), path)  # streams: the traces are never all in memory here
    gen_s = time.perf_counter() - t0
    size_mb = os.path.getsize(path) / 1e6
    gc.collect()
    rss_before = _peak_rss_mb()

    t0, c0 = time.perf_counter(), time.process_time()
    traces = load_traces(path)
    load_s, load_cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_load = _peak_rss_mb()

    # The floor for any JSONL loader: json.loads of every line, nothing built or validated.
    import json

    t0, c0 = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        for line in f:
            json.loads(line)
    json_s, json_cpu = time.perf_counter() - t0, time.process_time() - c0

    # The same load with the cyclic garbage collector paused: the traces hold no reference
    # cycles, yet each full collection walks every object loaded so far.
    del traces
    gc.collect()
    gc.disable()
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        traces = load_traces(path)
    finally:
        gc.enable()
    nogc_s, nogc_cpu = time.perf_counter() - t0, time.process_time() - c0
    n_turns = sum(len(t.turns) for t in traces)
    n_handoffs = sum(len(t.handoffs) for t in traces)

    # Imported before timing: two metrics return frames, and a notebook has pandas loaded.
    import pandas  # noqa: F401

    t0, c0 = time.perf_counter(), time.process_time()
    summary = run_metrics(traces, truth)
    metrics_s, metrics_cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_metrics = _peak_rss_mb()

    load_avg = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"maev-kit metrics benchmark · python {sys.version.split()[0]} · "
          f"{os.cpu_count()} CPU(s) · load average {load_avg:.1f} · seed {args.seed}")
    print(f"traces            {len(traces):>10,}   ({n_turns / len(traces):.1f} turns, "
          f"{n_handoffs / len(traces):.2f} handoffs per trace)")
    print(f"file              {size_mb:>10.1f} MB   (generated and saved in {gen_s:.2f} s)")
    print(f"load_traces       {load_s:>10.3f} s    {len(traces) / load_s:>10,.0f} traces/s"
          f"   (CPU {load_cpu:.3f} s; aim < 3 s for 10,000)")
    print(f"  json.loads only {json_s:>10.3f} s    (CPU {json_cpu:.3f} s; the floor: load_traces is "
          f"{load_cpu / json_cpu:.1f}× this in CPU time)")
    print(f"  with gc paused  {nogc_s:>10.3f} s    (CPU {nogc_cpu:.3f} s)")
    print(f"all metrics       {metrics_s:>10.3f} s    {len(traces) / metrics_s:>10,.0f} traces/s"
          f"   (CPU {metrics_cpu:.3f} s; aim < 2 s for 10,000)")
    print(f"peak RSS          {rss_metrics:>10.0f} MB   (before load {rss_before:.0f} MB, "
          f"after load {rss_load:.0f} MB)")
    print(f"summary           {summary}")

    if args.tracemalloc:
        del traces
        gc.collect()
        tracemalloc.start()
        traces = load_traces(path)
        _, load_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        run_metrics(traces, truth)
        _, metrics_peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"tracemalloc peak  {load_peak / 1e6:>10.0f} MB during load, "
              f"{metrics_peak / 1e6:.0f} MB during metrics (traces held)")

    if args.profile:
        import cProfile
        import pstats

        del traces
        gc.collect()
        prof = cProfile.Profile()
        prof.enable()
        load_traces(path)
        prof.disable()
        print("\nprofile of load_traces (cumulative, top 25):")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)

    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
