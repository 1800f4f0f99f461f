"""Adaptive concurrency against a one-slot server and a parallel one (issue 34, section C).

The kit's fake server plays both: ``slots=1`` works on one request at a time and queues the
rest (like llama.cpp's server on a small machine); without ``slots`` it answers every request
at once (like a hosted API). Each scenario runs the same judge over the same handoffs twice, in
one process and one sitting so the ratios share the machine's state:

- **adaptive** — the runner as shipped: starts at 4 in flight, doubles the number every round
  trip while latency holds, then grows it by one per round trip, halves it on timeouts, 429s,
  5xx and growing latency, ``max_concurrency`` the ceiling;
- **fixed** — the runner before issue 34: ``max_concurrency`` in flight from the first request.

litellm's first call in a process sets itself up (about a second); one untimed warm-up run
pays for it before the timed ones, so no scenario carries it.

Printed per run: wall time, items lost (no verdict), requests sent, peak in flight, and for the
one-slot server its busy time (seconds spent working on requests, abandoned ones included) and
wall / busy (the target: at most 1.5).

Usage::

    python benchmarks/bench_local_server.py           # 40 handoffs x 2 facts (and 200 on
                                                      # the parallel server), 0.1 s / 0.3 s
    python benchmarks/bench_local_server.py --quick   # 16 handoffs
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from runner.runner_helpers import EchoJudge, echo_responder, make_items  # noqa: E402

from maev_kit.backends import LiteLLMBackend  # noqa: E402
from maev_kit.runner import _requests, run_judge  # noqa: E402
from maev_kit.testing import FakeOpenAIServer  # noqa: E402


_ADAPTIVE = _requests.Window


class _FixedWindow(_ADAPTIVE):
    """The runner before issue 34: the ceiling in flight from the first request, always."""

    def __init__(self, ceiling: int) -> None:
        super().__init__(ceiling, start=ceiling)
        self.limit = float(ceiling)

    def replied(self, latency: float, sent_at: float, in_flight: int) -> None:
        pass

    def failed(self, sent_at: float) -> None:
        pass


def _fixed(on: bool) -> None:
    """Make the runner's window fixed at the ceiling, or adaptive again."""
    _requests.Window = _FixedWindow if on else _ADAPTIVE  # type: ignore[misc]


def _run(slots: int | None, latency: float, handoffs: int, ceiling: int, timeout: float,
         fixed: bool) -> dict[str, float]:
    _fixed(fixed)
    try:
        with FakeOpenAIServer(echo_responder, slots=slots, latency=latency) as server:
            backend = LiteLLMBackend("openai/local", api_base=server.base_url)
            items = make_items(handoffs, 2)
            start = time.perf_counter()
            run = run_judge(EchoJudge(), items, backend, max_concurrency=ceiling,
                            timeout=timeout, cache=False, progress=False, max_retries=3)
            wall = time.perf_counter() - start
            time.sleep(min(2.0, latency * 4))  # let queued abandoned requests drain
            busy = server.busy_time
            worked = sum(1 for r in server.requests if r.outcome != "abandoned")
    finally:
        _fixed(False)
    return {"wall": wall, "lost": run.stats["errors"], "requests": run.stats["requests"],
            "peak": run.stats["peak_in_flight"], "busy": busy, "worked": worked,
            "items": len(items)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    handoffs = 16 if args.quick else 40
    import litellm  # noqa: F401  (the import is not part of any run)

    _run(None, 0.0, 2, 16, 3.0, False)  # warm-up: litellm's first call sets itself up

    print(f"load average {os.getloadavg()[0]:.2f}; {handoffs} handoffs x 2 facts, ceiling 16")
    rows = []
    for name, slots, latency, timeout, n in (
            ("one-slot, 0.1 s/request", 1, 0.1, 1.0, handoffs),
            ("one-slot, 0.3 s/request", 1, 0.3, 3.0, handoffs),
            ("parallel, 0.3 s/request", None, 0.3, 3.0, handoffs),
            (f"parallel, {5 * handoffs} handoffs", None, 0.3, 3.0, 5 * handoffs)):
        for fixed in (False, True):
            r = _run(slots, latency, n, 16, timeout, fixed)
            rows.append((name, "fixed 16" if fixed else "adaptive", r, slots))
    print(f"{'server':26} {'runner':9} {'wall s':>7} {'lost':>5} {'requests':>8} {'peak':>5} "
          f"{'busy s':>7} {'wall/busy':>9}")
    for name, mode, r, slots in rows:
        ratio = f"{r['wall'] / r['busy']:.2f}" if slots and r["busy"] else "-"
        busy = f"{r['busy']:.2f}" if slots else "-"
        print(f"{name:26} {mode:9} {r['wall']:7.2f} {r['lost']:5d} {r['requests']:8d} "
              f"{r['peak']:5d} {busy:>7} {ratio:>9}")
    par = [r for name, _, r, _ in rows if name.startswith("parallel")]
    print(f"parallel server: adaptive / fixed wall time = {par[0]['wall'] / par[1]['wall']:.2f}"
          f" ({handoffs} handoffs), {par[2]['wall'] / par[3]['wall']:.2f} ({5 * handoffs})")


if __name__ == "__main__":
    main()
