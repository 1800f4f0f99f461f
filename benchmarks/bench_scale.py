"""Benchmark: load + every deterministic metric for N traces, one process vs Ray Data.

Generates seeded realistic traces (the generator of ``bench_metrics.py``: ~20 agent turns,
~3 handoffs, tool calls, contexts with wrong types now and then, ping-pong loops; plus the
expected handoffs and a routing case per conversation), writes them as JSONL and Parquet shards,
then scores them with ``judge=None`` (handoffs, routing, loops, contracts, composite — no
retention) four ways:

- one process on the JSONL shards: ``load_traces`` and ``evaluate``'s per-conversation stage
  shard by shard (a shard's traces are dropped once scored), then ``evaluate``'s aggregate;
- one process, the same from the Parquet shards;
- ``maev_kit.scale.evaluate_dataset`` on the Parquet shards, Ray with 1 worker, then 2.

The one-process runs are given the expectations as objects, unpickled before the clock starts;
the Ray runs are given the expectations JSONL file, as a user would, and read it in the clock
(the driver routes its lines, each worker builds and validates its own conversations').

Each line: wall time, traces/s, traces/s per core and peak memory (the driver's peak RSS for
the single-process runs; for Ray the driver's and the largest worker's). Also printed: the
Parquet vs JSONL load time for the first 10,000 traces (``load_traces``, same process, best of
5, taking turns) and the 1 → 2 worker scaling.

Usage::

    python benchmarks/bench_scale.py              # 1,000,000 traces
    python benchmarks/bench_scale.py --n 200000 --shard-size 50000
    python benchmarks/bench_scale.py --n 20000 --only load
    python benchmarks/bench_scale.py --n 100000 --only ray --repeat 3   # the 1 -> 2 scaling
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_metrics import CONTRACTS, generate  # noqa: E402

from maev_kit._gc import paused_gc  # noqa: E402
from maev_kit.expectations import ConversationExpectations, save_expectations  # noqa: E402
from maev_kit.traces import MultiAgentTrace, load_traces, save_traces  # noqa: E402


def make_corpus(n: int, seed: int = 0) -> tuple[list[MultiAgentTrace],
                                                list[ConversationExpectations]]:
    """``n`` traces and their expectations (expected handoffs, one routing case)."""
    traces, exps = [], []
    for trace, truth in generate(n, seed):
        traces.append(trace)
        exps.append(ConversationExpectations(trace.conversation_id, handoffs=truth["expected"],
                                             routing=[truth["routing_case"]]))
    return traces, exps


def write_shards(folder: Path, n: int, shard_size: int, seed: int = 0) -> list[ConversationExpectations]:
    """JSONL and Parquet shards of ``shard_size`` traces under ``folder/{jsonl,parquet}``."""
    exps: list[ConversationExpectations] = []
    (folder / "jsonl").mkdir(parents=True, exist_ok=True)
    (folder / "parquet").mkdir(parents=True, exist_ok=True)
    gen = generate(n, seed)
    for shard in range(0, n, shard_size):
        traces = []
        for _ in range(min(shard_size, n - shard)):
            trace, truth = next(gen)
            traces.append(trace)
            exps.append(ConversationExpectations(trace.conversation_id,
                                                 handoffs=truth["expected"],
                                                 routing=[truth["routing_case"]]))
        save_traces(traces, folder / "jsonl" / f"shard-{shard // shard_size:05d}.jsonl")
        save_traces(traces, folder / "parquet" / f"shard-{shard // shard_size:05d}.parquet")
    return exps


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _cpu(f: Any) -> float:
    gc.collect()
    t0 = time.process_time()
    r = f()
    spent = time.process_time() - t0
    del r
    return spent


def bench_load(n: int = 10_000, repeat: int = 5) -> tuple[float, float]:
    """``load_traces`` CPU seconds for ``n`` traces, JSONL vs Parquet: best of ``repeat``,
    the two formats taking turns so both see the same machine and the same heap."""
    traces, _ = make_corpus(n)
    with tempfile.TemporaryDirectory() as d:
        save_traces(traces, Path(d) / "t.jsonl")
        save_traces(traces, Path(d) / "t.parquet")
        del traces
        times: dict[str, list[float]] = {"jsonl": [], "parquet": []}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(repeat):
                for fmt in times:
                    times[fmt].append(_cpu(lambda: load_traces(Path(d) / f"t.{fmt}")))
        return min(times["jsonl"]), min(times["parquet"])


def run_single(folder: Path, fmt: str, exps_path: Path) -> None:
    """One process, shard by shard: ``load_traces``, then ``evaluate``'s per-conversation stage
    (``score_conversation`` for each trace, judge=None); the traces of a shard are dropped once
    scored, so memory holds the scores, not the corpus; then ``evaluate``'s aggregate stage
    (bootstrap CIs, pair stats, routing) over all the scores. Prints seconds and peak RSS."""
    import pickle

    from maev_kit.evaluation.stages import aggregate_scores, ledger_frame, score_traces

    with paused_gc():  # the bench's own input, not timed
        exps = {e.conversation_id: e for e in pickle.loads(exps_path.read_bytes())}
    t0 = time.perf_counter()
    scores: list[Any] = []
    handoffs: list[tuple[str, str]] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for p in sorted((folder / fmt).iterdir()):
            traces = load_traces(p)
            scores.extend(score_traces(traces, exps, {}, CONTRACTS, {}, retention=False))
            with paused_gc():  # as evaluate's aggregate stage lists them
                handoffs.extend((h.from_agent, h.to_agent) for t in traces for h in t.handoffs)
            del traces
        r = aggregate_scores(scores, ledger_frame([], None), handoffs, n_resamples=200)
    print(time.perf_counter() - t0, _peak_rss_mb(), len(r.per_conversation))


def run_ray(folder: Path, workers: int, exps_path: Path, batch_size: int) -> None:
    """``evaluate_dataset`` on the Parquet shards with the expectations file, as a user runs
    it: reading the file is in the clock (each worker builds its own conversations')."""
    import ray

    from maev_kit.scale import evaluate_dataset

    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    out = tempfile.TemporaryDirectory(prefix="maev-bench-")  # the parts: ~430 MB at 1M
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = evaluate_dataset(str(folder / "parquet"), judge=None, expectations=exps_path,
                             contracts=CONTRACTS, batch_size=batch_size, n_resamples=200,
                             output_dir=out.name, resume=False)
    wall = time.perf_counter() - t0
    workers_rss = [0.0]
    try:
        import psutil

        workers_rss = [p.memory_info().rss / 2**20 for p in psutil.process_iter()
                       if "ray::" in " ".join(p.cmdline() or [])] or [0.0]
    except Exception:  # psutil is optional
        pass
    print(wall, _peak_rss_mb(), len(r.per_conversation), max(workers_rss))
    ray.shutdown()
    out.cleanup()


def _child(*args: str) -> list[float]:
    out = subprocess.run([sys.executable, __file__, "--child", *args], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return [float(x) for x in out.split()]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--shard-size", type=int, default=50_000)
    ap.add_argument("--batch-size", type=int, default=5_000)
    ap.add_argument("--only", choices=["load", "all", "ray"], default="all",
                    help="load: the 10,000-trace load comparison only; ray: Ray 1 and 2 workers only")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of the engines, taking turns; the best wall time of each counts")
    ap.add_argument("--data", type=Path, default=None,
                    help="keep the generated shards in this folder, and reuse them when it "
                         "already holds them (generating 1,000,000 traces takes ~10 minutes)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        kind, folder, *rest = args.child
        if kind == "single":
            run_single(Path(folder), rest[0], Path(rest[1]))
        else:
            run_ray(Path(folder), int(rest[0]), Path(rest[1]), int(rest[2]))
        return

    print(f"# bench_scale: N={args.n:,}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.2f}")
    j, p = bench_load(min(10_000, args.n))
    print(f"load_traces, {min(10_000, args.n):,} traces (CPU s, best of 5): JSONL {j:.3f}, "
          f"Parquet {p:.3f} -> Parquet {j / p:.1f}x faster")
    if args.only == "load":
        return
    import pickle

    with contextlib.ExitStack() as stack:
        if args.data is None:
            d = stack.enter_context(tempfile.TemporaryDirectory(prefix="maev-bench-"))
        else:
            d = str(args.data)
        folder = Path(d)
        exps_path, exps_file = folder / "expectations.pickle", folder / "expectations.jsonl"
        if exps_path.exists():
            print(f"reusing the shards in {folder} (generated for --n {args.n:,} with this "
                  "script; delete the folder to regenerate)")
        else:
            t0 = time.perf_counter()
            exps = write_shards(folder, args.n, args.shard_size)
            save_expectations(exps, exps_file)
            exps_path.write_bytes(pickle.dumps(exps))  # last: its presence marks a full corpus
            del exps
            print(f"generated and wrote {args.n:,} traces in {time.perf_counter() - t0:.0f} s")
        if not exps_file.exists():  # a corpus of an earlier version of this script
            with paused_gc():
                save_expectations(pickle.loads(exps_path.read_bytes()), exps_file)
        engines = [
            ("1 process, JSONL", 1, ("single", d, "jsonl", str(exps_path))),
            ("1 process, Parquet", 1, ("single", d, "parquet", str(exps_path))),
            ("Ray, 1 worker", 1, ("ray", d, "1", str(exps_file), str(args.batch_size))),
            ("Ray, 2 workers", 2, ("ray", d, "2", str(exps_file), str(args.batch_size)))]
        if args.only == "ray":
            engines = engines[2:]
        best: dict[str, float] = {}
        for round_ in range(args.repeat):
            for label, cores, argv_ in engines:
                load = os.getloadavg()[0]
                got = _child(*argv_)
                wall, rss = got[0], got[1]
                best[label] = min(best.get(label, wall), wall)
                extra = f", largest worker {got[3]:.0f} MB" if len(got) > 3 else ""
                print(f"{label:<20} {wall:8.1f} s  {args.n / wall:9,.0f} traces/s  "
                      f"{args.n / wall / cores:9,.0f} traces/s/core  peak RSS {rss:,.0f} MB"
                      f"{extra}  (round {round_ + 1}, load average {load:.2f})", flush=True)
        one, two = best["Ray, 1 worker"], best["Ray, 2 workers"]
        print(f"Ray 1 -> 2 workers (best of {args.repeat} each): {one:.1f} s / {two:.1f} s = "
              f"{one / two:.2f}x")


if __name__ == "__main__":
    main()
