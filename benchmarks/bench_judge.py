"""Benchmark the judge runner against the local OpenAI-compatible server (issue 3, section 7).

Measures, in one run (so the ratios share the machine's state):

- cold run: N facts in H handoffs, server latency L, concurrency C, through the openai client
  and through litellm — wall time against the latency-bound ideal ``H * L / C``;
- one request at a time (the article's way): measured on a subset of handoffs and extrapolated
  to H (printed as such);
- warm rerun: requests sent (should be 0) and wall time as a fraction of the cold run;
- the heuristic judge: pairs per second.

The server runs in its own process (``python -m maev_kit.cli._serve_fake``, i.e. ``maev
serve-fake``) so its threads do not compete with the runner for this process's GIL.

Usage::

    python benchmarks/bench_judge.py            # 2,000 facts in 400 handoffs, 500 ms, C=16
    python benchmarks/bench_judge.py --quick    # 400 facts in 80 handoffs, 200 ms
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from maev_kit.judges import HeuristicJudge, RetentionJudge  # noqa: E402
from maev_kit.retention import RetentionItem  # noqa: E402
from maev_kit.runner import run_judge  # noqa: E402
from maev_kit.traces import Message  # noqa: E402

CITIES = ["Lyon", "Porto", "Leeds", "Graz", "Turin", "Ghent", "Malmo", "Brno", "Cork", "Bergen"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
# (fact, what the receiving agent says): retained, retained, lost, contradicted, retained
FACTS = [
    ("Account number is ACCT-{n:04d}", "I have account ACCT-{n:04d} open for the refund."),
    ("The customer was charged ${amount}.99 twice", "I see two charges of ${amount}.99 on your card."),
    ("The customer lives in {city}", "Which city do you live in?"),
    ("The order shipped on {day}", "Your order shipped on {other_day}, not {day}."),
    ("The region is eu-west-{region}", "Your instances in eu-west-{region} look healthy."),
]


def _slots(n: int) -> dict[str, object]:
    return {"n": n, "amount": 10 + n % 90, "city": CITIES[n % len(CITIES)],
            "day": DAYS[n % 7], "other_day": DAYS[(n + 1) % 7], "region": 1 + n % 3}


def make_items(handoffs: int, first: int = 0) -> list[RetentionItem]:
    """``handoffs`` handoffs with 5 facts each (retained, lost and contradicted mixed); ``first``
    shifts the account numbers so two sets share no text."""
    items = []
    for h in range(first, first + handoffs):
        slots = _slots(h)
        after = tuple(Message("billing", said.format(**slots), 3 + k)
                      for k, (_, said) in enumerate(FACTS))
        before = (Message("user", "Hi, I need help with my bill.", 0),)
        for k, (fact, _) in enumerate(FACTS):
            items.append(RetentionItem(f"c{h}/h0/f{k}", f"c{h}", 0, f"f{k}", fact.format(**slots),
                                       before, after, "triage", "billing"))
    return items


class ServerProcess:
    """A fake server in a subprocess (``maev serve-fake`` unless ``command`` says otherwise: it
    must print the base URL on its first line); ``.base_url`` once it listens."""

    def __init__(self, latency: float, command: list[str] | None = None) -> None:
        command = command or [sys.executable, "-m", "maev_kit.cli._serve_fake", "--port", "0"]
        self.proc = subprocess.Popen([*command, "--latency", str(latency)],
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/v1", line)
        if not match:
            self.proc.kill()
            raise RuntimeError(f"the fake server did not start: {line!r}")
        self.base_url = match.group(0)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="80 handoffs at 200 ms (about 10 s)")
    ap.add_argument("--handoffs", type=int, help="handoffs (5 facts each); default 400")
    ap.add_argument("--latency", type=float, help="server latency in seconds; default 0.5")
    ap.add_argument("--prompt", default="v3",
                    help="the judge's prompt (default v3, the kit's default; v1/v2 render the "
                         "text-only view of earlier versions)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--sequential-subset", type=int,
                    help="handoffs measured one at a time, extrapolated; default 20")
    args = ap.parse_args(argv)
    handoffs = args.handoffs or (80 if args.quick else 400)
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 0.5)
    subset = args.sequential_subset or (5 if args.quick else 20)
    conc = args.concurrency

    from openai import AsyncOpenAI

    from maev_kit.backends import LiteLLMBackend, OpenAIClientBackend
    from maev_kit.backends._litellm import import_litellm

    _, import_s = timed(import_litellm)
    items = make_items(handoffs)
    judge = RetentionJudge(args.prompt)
    ideal = handoffs * latency / conc
    print(f"maev-kit judge benchmark: {len(items)} facts in {handoffs} handoffs, server latency "
          f"{latency * 1000:.0f} ms, concurrency {conc}, Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} cores")
    print(f"(litellm import took {import_s:.1f} s, outside every timing below; load average "
          f"{os.getloadavg()[0]:.1f} at start)")
    print(f"latency-bound ideal: {handoffs} × {latency} s / {conc} = {ideal:.2f} s")
    litellm = sys.modules["litellm"]
    per_item = {}
    for p in ("v1", "v2", "v3"):  # the same requests rendered by each prompt, side by side
        j = RetentionJudge(p)
        groups = [items[i:i + len(FACTS)] for i in range(0, len(items), len(FACTS))]
        n = sum(litellm.token_counter(model="gpt-4o-mini", messages=j.build_messages(g))
                for g in groups[:100])
        per_item[p] = n / (min(100, len(groups)) * len(FACTS))
    print("prompt tokens per judged item (the first 100 requests, litellm.token_counter, "
          "gpt-4o-mini): " + ", ".join(f"{p} {v:.1f}" for p, v in per_item.items())
          + f"  (judging with {args.prompt})\n")

    server = ServerProcess(latency)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            client = AsyncOpenAI(base_url=server.base_url, api_key="sk-local")
            via_openai = OpenAIClientBackend(client, "fake-judge")
            via_litellm = LiteLLMBackend("openai/fake-judge", api_base=server.base_url,
                                         api_key="sk-local")
            # Warm-up (connections, first-call costs), on its own cache.
            run_judge(judge, make_items(2), via_openai, cache=False, progress=False)
            run_judge(judge, make_items(2), via_litellm, cache=False, progress=False)

            for name, backend in (("openai client", via_openai), ("litellm", via_litellm)):
                cache = os.path.join(tmp, name.replace(" ", "-"))
                cpu = time.process_time()
                run, wall = timed(lambda: run_judge(judge, items, backend, max_concurrency=conc,
                                                    cache=cache, progress=False))
                cpu = time.process_time() - cpu
                s = run.stats
                assert s["requests"] == handoffs and s["errors"] == 0, s
                rows.append((name, wall, s))
                print(f"cold, {name:13s}: {wall:6.2f} s  = {ideal / wall:.3f} of ideal  "
                      f"({s['requests']} requests, p50 {s['latency_p50'] * 1000:.0f} ms, "
                      f"p95 {s['latency_p95'] * 1000:.0f} ms, {s['tokens']} tokens, "
                      f"cost {s['cost']}, runner CPU {cpu / handoffs * 1000:.1f} ms/request)")

            seq_items = items[: subset * len(FACTS)]
            seq, seq_wall = timed(lambda: run_judge(judge, seq_items, via_openai,
                                                    max_concurrency=1, cache=False,
                                                    progress=False))
            assert seq.stats["requests"] == subset
            seq_est = seq_wall * handoffs / subset
            print(f"\none at a time (openai client): {subset} handoffs in {seq_wall:.2f} s "
                  f"→ extrapolated to {handoffs}: {seq_est:.1f} s")
            for name, wall, _ in rows:
                print(f"speed-up over one at a time, {name:13s}: {seq_est / wall:5.1f}×")

            cold_wall = rows[0][1]
            cache = os.path.join(tmp, "openai-client")
            warm, warm_wall = timed(lambda: run_judge(judge, items, via_openai,
                                                      max_concurrency=conc, cache=cache,
                                                      progress=False))
            print(f"\nwarm rerun (openai client): {warm.stats['requests']} requests, "
                  f"{warm.stats['cache_hits']} cache hits, {warm_wall:.3f} s "
                  f"= {warm_wall / cold_wall:.4f} of the cold run")
    finally:
        server.close()

    heuristic = HeuristicJudge()
    heuristic.judge_items(items[:50])  # warm-up
    cpu = time.process_time()
    run, wall = timed(lambda: run_judge(heuristic, items, progress=False))
    cpu = time.process_time() - cpu
    fresh = make_items(handoffs, first=handoffs)  # no text in common with `items`
    direct, direct_wall = timed(lambda: heuristic.judge_items(fresh))
    print(f"\nheuristic judge: {len(items)} pairs through run_judge in {wall:.3f} s "
          f"= {len(items) / wall:,.0f} pairs/s ({wall / len(items) * 1000:.3f} ms/pair wall, "
          f"{cpu / len(items) * 1000:.3f} ms/pair CPU); judge_items alone, other items: "
          f"{len(items) / direct_wall:,.0f} pairs/s")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")

if __name__ == "__main__":
    main()
