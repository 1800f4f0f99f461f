"""Adaptive concurrency against one-slot and parallel servers (issue 34, section C).

The kit's fake server plays each: ``slots=1`` works on one request at a time and queues the
rest (like llama.cpp's server on a small machine, or Ollama by default); ``slots=4`` on four
(like Ollama with ``OLLAMA_NUM_PARALLEL=4``); ``slots=16`` on sixteen (like ``llama-server
--parallel 16``); without ``slots`` it answers every request at once. It may say how many it
works on at once, as real servers do (llama.cpp at ``GET /props``, vLLM by its model list), or
stay silent (Ollama, LM Studio, llama-cpp-python's server). Each scenario runs
the same judge over the same handoffs twice, in one process and one sitting so the ratios share
the machine's state:

- **adaptive** — the runner as shipped: a server that says how many requests it works on
  gets that many from the first request; a silent one gets one request alone, then four,
  doubled every round trip while latency holds; both are halved on timeouts, 429s, 5xx and
  growing latency, ``max_concurrency`` the ceiling;
- **fixed** — the runner before issue 34: ``max_concurrency`` in flight from the first request.

litellm's first call in a process sets itself up (about a second); one untimed warm-up run
pays for it before the timed ones, so no scenario carries it.

Printed per run: wall time, items lost (no verdict), requests sent, peak in flight, how the
window opened, and for the one-slot server its busy time (seconds spent working on requests,
abandoned ones included) and wall / busy (the target: at most 1.5).

Usage::

    python benchmarks/bench_local_server.py           # 40 handoffs x 2 facts (and 200 on
                                                      # the parallel servers), 0.1 s / 0.3 s
    python benchmarks/bench_local_server.py --quick   # 16 handoffs
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from runner.runner_helpers import EchoJudge, echo_responder, make_items  # noqa: E402

from maev_kit.backends import LiteLLMBackend  # noqa: E402
from maev_kit.runner import _requests, run_judge  # noqa: E402
from maev_kit.testing import FakeOpenAIServer  # noqa: E402


_OPENING = _requests.opening


class _FixedWindow(_requests.Window):
    """The runner before issue 34: the ceiling in flight from the first request, always."""

    def __init__(self, ceiling: int) -> None:
        super().__init__(ceiling, start=ceiling, probe=False)

    def replied(self, latency: float, sent_at: float, in_flight: int) -> None:
        pass

    def failed(self, sent_at: float) -> None:
        pass


def _fixed(on: bool) -> None:
    """Make the runner's window fixed at the ceiling, or adaptive again."""
    def fixed(backend: Any, ceiling: int, timeout: float | None = None
              ) -> tuple[_requests.Window, str]:
        return _FixedWindow(ceiling), "fixed"

    _requests.opening = fixed if on else _OPENING  # type: ignore[assignment]


def _run(server_kw: dict, handoffs: int, ceiling: int, timeout: float,
         fixed: bool) -> dict[str, Any]:
    _fixed(fixed)
    try:
        with FakeOpenAIServer(echo_responder, models=["local"], **server_kw) as server:
            backend = LiteLLMBackend("openai/local", api_base=server.base_url)
            items = make_items(handoffs, 2)
            start = time.perf_counter()
            run = run_judge(EchoJudge(), items, backend, max_concurrency=ceiling,
                            timeout=timeout, cache=False, progress=False, max_retries=3)
            wall = time.perf_counter() - start
            time.sleep(min(2.0, server_kw.get("latency", 0.0) * 4))  # let abandoned drain
            busy = server.busy_time
    finally:
        _fixed(False)
    return {"wall": wall, "lost": run.stats["errors"], "requests": run.stats["requests"],
            "peak": run.stats["peak_in_flight"], "busy": busy,
            "opened": run.stats["window_start"], "items": len(items)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n = 16 if args.quick else 40
    import litellm  # noqa: F401  (the import is not part of any run)

    _run({}, 2, 16, 3.0, False)  # warm-up: litellm's first call sets itself up

    print(f"load average {os.getloadavg()[0]:.2f}; handoffs x 2 facts, ceiling 16")
    llama16 = {"slots": 16, "props": {"total_slots": 16}, "latency": 0.3}
    scenarios = [
        ("one slot, silent, 0.1 s", {"slots": 1, "latency": 0.1}, 1.0, n),
        ("one slot, silent, 0.3 s", {"slots": 1, "latency": 0.3}, 3.0, n),
        ("one slot, says 1, 0.3 s", {"slots": 1, "props": {"total_slots": 1},
                                     "latency": 0.3}, 3.0, n),
        ("16 slots, says 16, 0.3 s", llama16, 3.0, n),
        ("16 slots, says 16, 0.3 s", llama16, 3.0, 5 * n),
        ("vLLM (model list), 0.3 s", {"owned_by": "vllm", "latency": 0.3}, 3.0, n),
        ("4 slots, silent, 0.3 s", {"slots": 4, "latency": 0.3}, 3.0, n),
        ("parallel, silent, 0.3 s", {"latency": 0.3}, 3.0, n),
        ("parallel, silent, 0.3 s", {"latency": 0.3}, 3.0, 5 * n),
    ]
    rows = []
    for name, kw, timeout, handoffs in scenarios:
        for fixed in (False, True):
            r = _run(kw, handoffs, 16, timeout, fixed)
            rows.append((name, handoffs, "fixed 16" if fixed else "adaptive", r,
                         kw.get("slots") == 1))
    print(f"{'server':26} {'handoffs':>8} {'runner':9} {'opened':13} {'wall s':>7} {'lost':>5} "
          f"{'requests':>8} {'peak':>5} {'busy s':>7} {'wall/busy':>9} {'vs fixed':>8}")
    for i, (name, handoffs, mode, r, one) in enumerate(rows):
        ratio = f"{r['wall'] / r['busy']:.2f}" if one and r["busy"] else "-"
        busy = f"{r['busy']:.2f}" if one else "-"
        vs = f"{r['wall'] / rows[i + 1][3]['wall']:.2f}" if mode == "adaptive" else ""
        print(f"{name:26} {handoffs:8d} {mode:9} {r['opened']:13} {r['wall']:7.2f} "
              f"{r['lost']:5d} {r['requests']:8d} {r['peak']:5d} {busy:>7} {ratio:>9} {vs:>8}")


if __name__ == "__main__":
    main()
