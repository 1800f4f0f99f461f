"""Benchmark: notebook widgets — build time of a 1,000-turn TraceViewer; click-to-disk latency.

Prints:

- the time to build a :class:`~maev_kit.widgets.TraceViewer` over a seeded 1,000-turn trace
  (with key facts, verdicts and contracts, so every highlight runs), and to turn a page;
- the time of ``MultiAgentTrace._repr_html_`` for the same trace (every event rendered, pages
  after the first collapsed);
- click-to-disk latency of a label: ``Labeler.buttons[...].click()`` returns once the line is
  written and fsync-ed, so the time of the click *is* the click-to-disk time (kernel side;
  a real browser adds its round trip to the kernel, ~0.25-0.45 s measured in the browser
  test's JupyterLab); also ``LabelStore.add`` alone.

Usage::

    python benchmarks/bench_widgets.py
    python benchmarks/bench_widgets.py --turns 5000 --clicks 500 --dir /path/on/the/disk/to/test

Aims (issue 5): build < 0.5 s; click-to-disk < 50 ms. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from maev_kit.expectations import KeyFact
from maev_kit.metrics import HandoffContract
from maev_kit.retention import RetentionItem
from maev_kit.traces import AgentTurn, Handoff, Message, MultiAgentTrace, UserMessage


def make_trace(n_turns: int, seed: int = 0) -> MultiAgentTrace:
    import random

    rng = random.Random(seed)
    agents = ["triage", "billing", "tech", "shipping", "refunds"]
    turns, handoffs, users = [], [], []
    ti, current = 0, "triage"
    for i in range(n_turns):
        if i % 10 == 0:
            users.append(UserMessage(f"user says {i}: my account is ACCT-{i} <b>", ti))
            ti += 1
        turns.append(AgentTurn(current, "agent", f"turn {i}: " + " ".join(
            rng.choice(["account", "ACCT-7", "refund", "order", "please", "wait"])
            for _ in range(20)), [{"name": "lookup", "arguments": {"i": i}}] if i % 7 == 0
            else [], ti))
        ti += 1
        if i % 25 == 24:
            nxt = rng.choice([a for a in agents if a != current])
            handoffs.append(Handoff(current, nxt, None, {"account": f"ACCT-{i}"}, ti))
            ti += 1
            current = nxt
    return MultiAgentTrace("bench", turns=turns, handoffs=handoffs, user_messages=users)


def timed(fn, repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def fmt(res: tuple[list[float], list[float]]) -> str:
    ts, cpu = sorted(res[0]), res[1]
    p95 = ts[min(len(ts) - 1, int(round(0.95 * (len(ts) - 1))))]
    return (f"wall median {statistics.median(ts) * 1000:6.1f} ms  p95 {p95 * 1000:6.1f} ms  "
            f"max {ts[-1] * 1000:6.1f} ms | CPU median {statistics.median(cpu) * 1000:6.1f} ms"
            f"  (n={len(ts)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=1000)
    ap.add_argument("--clicks", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--dir", default=None, help="folder for labels.jsonl (default: a temp dir)")
    args = ap.parse_args()
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) +
          f" on {os.cpu_count()} CPUs")

    t0 = time.perf_counter()
    import ipywidgets  # noqa: F401

    from maev_kit.labels import LabelStore
    from maev_kit.widgets import Labeler, TraceViewer
    print(f"import ipywidgets + maev_kit.widgets: {(time.perf_counter() - t0) * 1000:.0f} ms "
          "(once per kernel)")

    trace = make_trace(args.turns)
    n_events = len(trace.timeline())
    facts = [KeyFact(f"f{i}", i, f"Account is ACCT-{25 * i + 24}")
             for i in range(len(trace.handoffs))]
    verdicts = {f"bench/h{i}/f{i}": ("retained", "lost", "contradicted")[i % 3]
                for i in range(len(trace.handoffs))}
    contracts = [HandoffContract("*", "billing", required_context_keys=["account", "reason"])]
    print(f"\ntrace: {len(trace.turns)} turns, {len(trace.handoffs)} handoffs, "
          f"{len(trace.user_messages)} user messages = {n_events} events")

    TraceViewer(trace)  # warm up
    print("TraceViewer(trace) build              ", fmt(timed(lambda: TraceViewer(trace),
                                                              args.repeat)))
    print("TraceViewer(+facts,verdicts,contracts)", fmt(timed(
        lambda: TraceViewer(trace, facts=facts, verdicts=verdicts, contracts=contracts),
        args.repeat)))
    v = TraceViewer(trace, facts=facts, verdicts=verdicts, contracts=contracts)
    print("next page click                       ", fmt(timed(
        lambda: (v.next_button.click() if v.page < v.n_pages - 1 else v.show_page(0)),
        args.repeat)))
    print("trace._repr_html_() (all events)      ", fmt(timed(trace._repr_html_, args.repeat)))

    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="maev-bench-"))
    path = folder / "labels.jsonl"
    if path.exists():
        path.unlink()
    items = [RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", f"Account is ACCT-{i}",
                           tuple(Message("user", f"m{j} ACCT-{i}", j, True) for j in range(5)),
                           tuple(Message("billing", f"after {j}", 6 + j) for j in range(5)),
                           "triage", "billing") for i in range(args.clicks + 1)]
    lab = Labeler(items, LabelStore(path), annotator="bench", order="random")
    names = ["retained", "lost", "contradicted"]
    k = iter(range(10**9))
    clicks = timed(lambda: lab.buttons[names[next(k) % 3]].click(), args.clicks)
    n_lines = sum(1 for _ in open(path))
    print(f"\nlabels file: {path.name} in a temp folder; {n_lines} lines written")
    print("click → line fsync-ed (Labeler)       ", fmt(clicks))
    store = LabelStore(folder / "store-only.jsonl")
    print("LabelStore.add (write + fsync)        ", fmt(timed(
        lambda: store.add("x/h0/f1", "lost", annotator="bench"), args.clicks)))


if __name__ == "__main__":
    main()
