"""Benchmark: how long ``import maev_kit`` takes beside ``import pandas``.

A plain install brings the widgets and the LLM clients (ipywidgets, anywidget, openai,
litellm), but ``import maev_kit`` loads none of them: they are imported where they are used.
This script checks the cost of the import itself. Each run is a fresh interpreter
(``python -c``) that times one import with ``time.perf_counter`` around it, so interpreter
start-up is left out; the two imports alternate run by run, so a busy machine slows both
alike. It prints the median (and min and max) of each and the ratio of the medians, and says
which heavy modules ``import maev_kit`` loaded (it should load none of litellm, openai,
ipywidgets).

Usage::

    python benchmarks/bench_import.py            # 15 runs each
    python benchmarks/bench_import.py --runs 31

Aim (issue 12): ``import maev_kit`` within 1.3x the time of ``import pandas``. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HEAVY = ("litellm", "openai", "ipywidgets", "anywidget", "sklearn", "matplotlib", "IPython")

_PROBE = """
import json, sys, time
t = time.perf_counter()
import {module}
dt = time.perf_counter() - t
print(json.dumps({{"seconds": dt, "heavy": sorted({{m.split(".")[0] for m in sys.modules}}
                                               & set({heavy!r}))}}))
"""


def _once(module: str) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, "-c", _PROBE.format(module=module, heavy=HEAVY)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="runs of each import (default 15)")
    args = ap.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"python {sys.version.split()[0]}, {args.runs} runs each, load average {load:.2f}")
    _once("pandas"), _once("maev_kit")  # warm the file cache once
    times: dict[str, list[float]] = {"pandas": [], "maev_kit": []}
    heavy: set[str] = set()
    for _ in range(args.runs):
        for module in times:
            r = _once(module)
            times[module].append(r["seconds"])
            if module == "maev_kit":
                heavy.update(r["heavy"])
    for module, ts in times.items():
        print(f"import {module:<9} median {statistics.median(ts) * 1000:7.1f} ms  "
              f"(min {min(ts) * 1000:.1f}, max {max(ts) * 1000:.1f})")
    ratio = statistics.median(times["maev_kit"]) / statistics.median(times["pandas"])
    print(f"ratio maev_kit / pandas: {ratio:.2f} (aim: at most 1.30)")
    print("heavy modules loaded by import maev_kit: " + (", ".join(sorted(heavy)) or "none"))


if __name__ == "__main__":
    main()
