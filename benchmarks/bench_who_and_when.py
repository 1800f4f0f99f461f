"""Benchmark: failure attribution on the Who&When benchmark — the literature's three baselines
and one offline judge of ours, with Wilson intervals, on all runs and on each subset.

The data are not part of maev-kit (its tasks include GAIA questions and answers, which their
authors ask not to redistribute): clone https://github.com/ag2ai/Agents_Failure_Attribution
and pass the clone (or its ``Who&When`` folder)::

    python benchmarks/bench_who_and_when.py path/to/Agents_Failure_Attribution

The judge of ours, ``first_error_marker``, is a heuristic written before looking at the
scores and not tuned on them: the agent whose turn first holds an error marker (``error``,
``exception``, ``traceback``, a non-zero ``exitcode``, ``failed``), at that turn; else the last
agent, at the last turn. It needs no model. docs/criteria.md shows this script's output.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

_MARKER = re.compile(r"\b(error|exception|traceback|failed)\b|exitcode:\s*[1-9]", re.I)


def first_error_marker(item) -> str:  # type: ignore[no-untyped-def]
    """The agent of the first turn that holds an error marker, at that turn; else the last
    agent, at the last turn."""
    turns = item.trace.turns
    for i, t in enumerate(turns):
        if _MARKER.search(t.message):
            return f"{t.agent_id}@{i}"
    return f"{turns[-1].agent_id}@{len(turns) - 1}"


def _pct(x: float) -> str:
    return "  n/a" if x != x else f"{100 * x:5.1f}"


def show(title: str, board) -> None:  # type: ignore[no-untyped-def]
    print(f"\n{title} (n = {board.attrs['items']} failed runs)")
    print(f"{'judge':<24} {'agent acc. [95 % Wilson]':<26} {'step exact [95 % Wilson]':<26}"
          f" {'±1':>6} {'±3':>6}")
    for name, r in board.iterrows():
        agent = f"{_pct(r.accuracy)} [{_pct(r.accuracy_low)}, {_pct(r.accuracy_high)}]"
        step = (f"{_pct(r.step_accuracy)} [{_pct(r.step_accuracy_low)}, "
                f"{_pct(r.step_accuracy_high)}]")
        print(f"{name:<24} {agent:<26} {step:<26} {_pct(r.step_within_1):>6}"
              f" {_pct(r.step_within_3):>6}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a clone of ag2ai/Agents_Failure_Attribution (or its "
                                   "Who&When folder)")
    args = ap.parse_args(argv)

    from maev_kit.criteria import attribution_leaderboard, failure_attribution
    from maev_kit.datasets import load_who_and_when
    from maev_kit.errors import InputError

    t0 = time.perf_counter()
    try:
        ws = load_who_and_when(args.folder)
    except InputError as e:
        print(e, file=sys.stderr)
        return 2
    loaded = time.perf_counter() - t0
    criterion = failure_attribution()
    judges = {"ours: first error marker": first_error_marker}
    how = sorted({str(t.metadata["handoffs"]) for t in ws.traces})
    agents = {a for t in ws.traces for a in t.agents_involved()}
    print(f"Who&When {ws.version}: {len(ws.traces)} runs, {len(agents)} agents, "
          f"{len(ws.label_records)} labels by {', '.join(ws.annotators)}; handoffs: "
          f"{' / '.join(how)}; loaded in {loaded:.2f} s")
    t0 = time.perf_counter()
    for split in (None, "hand-crafted", "algorithm-generated"):
        items = criterion.items(ws.traces_in(split))
        board = attribution_leaderboard(items, ws, judges)
        show(split or "all runs", board)
    print(f"\nscored in {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
