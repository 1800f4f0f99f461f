"""Benchmark: PPI++ retention rates on real SNLI data — coverage, widths, the label planner.

Data: the SNLI subset (``tests/data/retention_snli_subset.jsonl``, 2,527 fact/message pairs,
five crowd labels each; CC BY-SA 4.0). The human value of an item is ``Y = 1`` when its gold
label (3-of-5 majority) is ``retained``, else 0; the **target** is the mean of Y over all
items, what labeling everything would give. Two real judges give ``Ŷ``:

- ``heuristic``: the offline heuristic judge's verdict, ``Ŷ = 1`` when it says ``retained``;
- ``tfidf-logreg``: the learned judge's probability of ``retained`` (a score in [0, 1]),
  cross-fitted: fit on the ``dev`` split to score ``test`` and on ``test`` to score ``dev``, so
  no item is scored by a model that saw its label.

Each draw labels a simple random sample of n items (``Y`` known) and leaves the rest to the
judge, like a user who labels n of their judged items at random. Printed, per judge:

1. n = 100, 500 draws: how often the 95 % PPI++ interval covers the target (must be ≥ 93 %),
   its mean half-width beside the human-only interval's (``human_mean`` on the same n labels)
   and their ratio; the judge-only interval's coverage (not corrected for judge error);
2. small n (5, 10, 20, 30, 50; 2,000 draws each): PPI++ coverage, and how often there is no
   interval (below ``MIN_LABELS_FOR_INTERVAL`` or no spread) — the basis of that minimum;
3. the planner: a random pilot of 50 labeled items, ``plan_labels`` for ±0.05 and ±0.03, then
   the first n items of the same random order labeled (the pilot included): the realised
   PPI++ half-width against the target (mean over 200 draws) and its coverage.

Seeded (``--seed``, default 0); nothing is timed or asserted. ~30 s on 2 cores.

    python benchmarks/bench_ppi.py [--data PATH] [--draws 500] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from maev_kit.agreement import (
    MIN_LABELS_FOR_INTERVAL,
    human_mean,
    judge_mean,
    plan_labels,
    ppi_mean,
)
from maev_kit.judges import HeuristicJudge, LearnedJudge
from maev_kit.retention import LABELS, RetentionItem
from maev_kit.traces import Message

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "tests" / "data" / "retention_snli_subset.jsonl"


def load(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Y (gold is retained) and each judge's Ŷ, one per row of the file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    items = [RetentionItem(item_id=r["id"], conversation_id=r["id"], handoff_index=0,
                           fact_id="f1", fact=r["fact"], before=(),
                           after=(Message("agent", r["message"], 1, False),),
                           from_agent="", to_agent="agent") for r in rows]
    y = np.array([r["label"] == "retained" for r in rows], dtype=float)
    heur = np.array([v.label == "retained" for v in HeuristicJudge().judge_items(items)],
                    dtype=float)
    proba = np.zeros(len(rows))
    splits = sorted({r["split"] for r in rows})
    for held_out in splits:
        train = [i for i, r in enumerate(rows) if r["split"] != held_out]
        test = [i for i, r in enumerate(rows) if r["split"] == held_out]
        judge = LearnedJudge().fit([items[i] for i in train], [rows[i]["label"] for i in train])
        proba[test] = judge.predict_proba([items[i] for i in test])[:, LABELS.index("retained")]
    return y, {"heuristic": heur, "tfidf-logreg": proba}


def coverage_at(y: np.ndarray, f: np.ndarray, n: int, draws: int,
                rng: np.random.Generator) -> dict[str, float]:
    target = y.mean()
    hit = {"ppi++": 0, "human-only": 0, "judge-only": 0}
    widths: dict[str, list[float]] = {"ppi++": [], "human-only": []}
    lams, none = [], 0
    judge = judge_mean(f)
    for _ in range(draws):
        idx = rng.permutation(y.size)
        lab, unl = idx[:n], idx[n:]
        p = ppi_mean(y[lab], f[lab], f[unl])
        h = human_mean(y[lab])
        lams.append(p.lam)
        if p.ci_low is None or p.ci_high is None:
            none += 1
            continue
        hit["ppi++"] += p.ci_low <= target <= p.ci_high
        widths["ppi++"].append(p.half_width)
        if h.ci_low is not None and h.ci_high is not None:
            hit["human-only"] += h.ci_low <= target <= h.ci_high
            widths["human-only"].append(h.half_width)
    given = draws - none
    assert judge.ci_low is not None and judge.ci_high is not None
    return {
        "draws": draws, "with_interval": given, "no_interval": none / draws,
        "cov_ppi": hit["ppi++"] / given if given else float("nan"),
        "cov_human": hit["human-only"] / max(1, len(widths["human-only"])),
        "hw_ppi": float(np.mean(widths["ppi++"])) if given else float("nan"),
        "hw_human": float(np.mean(widths["human-only"])) if widths["human-only"]
        else float("nan"),
        "lam": float(np.mean(lams)),
        "judge_cov": float(judge.ci_low <= target <= judge.ci_high),
        "judge_est": judge.estimate, "judge_hw": judge.half_width or float("nan"),
    }


def planner(y: np.ndarray, f: np.ndarray, target_hw: float, draws: int, pilot: int,
            rng: np.random.Generator) -> dict[str, float]:
    target = y.mean()
    ns, nh, realised, covered = [], [], [], 0
    for _ in range(draws):
        idx = rng.permutation(y.size)
        pil = idx[:pilot]
        plan = plan_labels(y[pil], f[pil], f[idx[pilot:]], half_width=target_hw)
        n = min(plan.n, y.size - 1)
        lab, unl = idx[:n], idx[n:]
        est = ppi_mean(y[lab], f[lab], f[unl])
        assert est.ci_low is not None and est.ci_high is not None and est.half_width
        ns.append(n)
        nh.append(plan.n_human_only)
        realised.append(est.half_width)
        covered += est.ci_low <= target <= est.ci_high
    return {"n": float(np.mean(ns)), "n_min": min(ns), "n_max": max(ns),
            "n_human": float(np.mean(nh)), "realised": float(np.mean(realised)),
            "ratio": float(np.mean(realised)) / target_hw,
            "p10": float(np.percentile(realised, 10)), "p90": float(np.percentile(realised, 90)),
            "coverage": covered / draws}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    t0 = time.perf_counter()
    y, judges = load(args.data)
    print(f"data: {args.data.name}, {y.size} items; target (all-human retained rate, gold "
          f"label) {y.mean():.4f}; judges scored in {time.perf_counter() - t0:.1f} s; "
          f"seed {args.seed}")
    for name, f in judges.items():
        r = np.corrcoef(y, f)[0, 1]
        print(f"\n== judge {name}: mean Ŷ {f.mean():.4f} (bias {f.mean() - y.mean():+.4f}), "
              f"corr(Y, Ŷ) {r:.3f}")
        rng = np.random.default_rng(args.seed)
        c = coverage_at(y, f, 100, args.draws, rng)
        print(f"n = 100 labeled, N = {y.size - 100} judged only, {c['draws']} draws:")
        print(f"  PPI++ 95% CI covers the target: {c['cov_ppi']:.3f} "
              f"({round(c['cov_ppi'] * c['with_interval'])}/{c['with_interval']}); mean λ "
              f"{c['lam']:.3f}")
        print(f"  mean half-width: PPI++ {c['hw_ppi']:.4f}, human-only {c['hw_human']:.4f}, "
              f"ratio {c['hw_ppi'] / c['hw_human']:.3f} (human-only coverage "
              f"{c['cov_human']:.3f})")
        print(f"  judge-only: {c['judge_est']:.4f} ± {c['judge_hw']:.4f}, covers the target: "
              f"{'yes' if c['judge_cov'] else 'no'} (not corrected for judge error)")
        print(f"small n (2,000 draws each; MIN_LABELS_FOR_INTERVAL = "
              f"{MIN_LABELS_FOR_INTERVAL}; coverage of the CLT interval computed anyway):")
        for n in (5, 10, 20, 30, 50):
            rng_n = np.random.default_rng(args.seed + n)
            cov, cov_spread, zero = small_n(y, f, n, 2000, rng_n)
            print(f"  n = {n:3d}: PPI++ coverage {cov:.3f} ({cov_spread:.3f} of the draws with "
                  f"some spread); zero-spread draws {zero:.3f}")
        for hw in (0.05, 0.03):
            p = planner(y, f, hw, 200, 50, np.random.default_rng(args.seed + 1))
            print(f"planner, target ±{hw} (pilot 50, 200 draws): planned n {p['n']:.0f} "
                  f"(range {p['n_min']}–{p['n_max']}; human-only {p['n_human']:.0f}); "
                  f"realised half-width {p['realised']:.4f} = {p['ratio']:.3f} × target "
                  f"(10–90 %: {p['p10']:.4f}–{p['p90']:.4f}); coverage {p['coverage']:.3f}")
    print(f"\ntotal {time.perf_counter() - t0:.1f} s")


def small_n(y: np.ndarray, f: np.ndarray, n: int, draws: int,
            rng: np.random.Generator) -> tuple[float, float, float]:
    """PPI++ coverage at n labels, with the CLT interval computed even below the minimum (as
    ``ppi_py`` would): over all draws, over the draws where it has some width, and the share
    of draws where it has zero width."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.975)
    target = y.mean()
    hit = zero = hit_spread = 0
    for _ in range(draws):
        idx = rng.permutation(y.size)
        lab, unl = idx[:n], idx[n:]
        p = ppi_mean(y[lab], f[lab], f[unl])
        lam = p.lam or 0.0
        se = np.sqrt(np.var(lam * f[unl]) / unl.size + np.var(y[lab] - lam * f[lab]) / n)
        covers = bool(abs(p.estimate - target) <= z * se)
        if se == 0 or (np.ptp(y[lab] - lam * f[lab]) == 0 and (lam == 0 or np.ptp(f[unl]) == 0)):
            zero += 1
        else:
            hit_spread += covers
        hit += covers
    spread = draws - zero
    return hit / draws, hit_spread / spread if spread else float("nan"), zero / draws


if __name__ == "__main__":
    main()
