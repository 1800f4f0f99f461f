"""Benchmark: κ with a 10,000-resample percentile bootstrap CI on 10,000 items.

Compares ``maev_kit.agreement.agreement_report`` (a multinomial draw over the confusion cells)
with the naive loop that resamples items and calls scikit-learn's ``cohen_kappa_score`` once
per resample. Both run in this one process; the script prints both times and their ratio.

    python benchmarks/bench_agreement.py           # 10,000 items × 10,000 resamples
    python benchmarks/bench_agreement.py --quick   # 10,000 items × 1,000 resamples
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def make_data(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """Human labels with shares (.6, .3, .1) and a judge that agrees on ~80 % of items."""
    labels = np.array(["retained", "lost", "contradicted"])
    rng = np.random.default_rng(seed)
    human = rng.choice(3, size=n, p=[0.6, 0.3, 0.1])
    judge = np.where(rng.random(n) < 0.8, human, rng.choice(3, size=n))
    return labels[human].tolist(), labels[judge].tolist()


def naive(human: list[str], judge: list[str], n_resamples: int, seed: int = 0
          ) -> tuple[float, float]:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(seed)
    h, j = np.array(human), np.array(judge)
    labels = ["retained", "lost", "contradicted"]
    stars = np.empty(n_resamples)
    for b in range(n_resamples):
        idx = rng.integers(0, len(h), len(h))
        stars[b] = cohen_kappa_score(h[idx], j[idx], labels=labels)
    lo, hi = np.nanquantile(stars, [0.025, 0.975])
    return float(lo), float(hi)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 resamples instead of 10,000")
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    n_resamples = 1_000 if args.quick else 10_000

    from sklearn.metrics import cohen_kappa_score  # import cost outside both timings

    from maev_kit.agreement import agreement_report

    human, judge = make_data(args.items)
    cohen_kappa_score(human[:10], judge[:10])

    t0 = time.perf_counter()
    report = agreement_report(human, judge, n_resamples=n_resamples, seed=0)
    t_fast = time.perf_counter() - t0

    t0 = time.perf_counter()
    lo, hi = naive(human, judge, n_resamples)
    t_naive = time.perf_counter() - t0

    print(f"items={args.items} resamples={n_resamples}")
    print(f"kappa={report.kappa:.4f}")
    print(f"maev_kit agreement_report: {t_fast:8.3f} s  CI ({report.ci[0]:.4f}, {report.ci[1]:.4f})")
    print(f"naive sklearn loop:        {t_naive:8.3f} s  CI ({lo:.4f}, {hi:.4f})")
    print(f"speed-up: {t_naive / t_fast:.0f}x")


if __name__ == "__main__":
    main()
