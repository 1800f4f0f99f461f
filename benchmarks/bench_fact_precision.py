"""The offline fact proposer on converted tau-bench conversations: recall of the key values
stated before a handoff, precision, and the share of proposed values that occur only in tool
results.

Run from the repository root (the traces from ``benchmarks/convert_tau_bench.py``)::

    python benchmarks/convert_tau_bench.py airline.json --out tau_airline.jsonl --last-turn-hop
    python benchmarks/bench_fact_precision.py tau_airline.jsonl
    python benchmarks/bench_fact_precision.py tests/data/tau_bench_airline_subset.jsonl --misses

With ``--reference`` the reference is a person's list instead:
``benchmarks/data/fact_reference_tau_airline.json``, reference labels written by the maev-kit
authors for the 48 conversations with a transfer (what matters to the receiver, what is
acceptable, what does not matter; split dev/test by task; its header says how it was written)::

    python benchmarks/convert_tau_bench.py airline.json --out tau_transfers.jsonl --only-transfers
    python benchmarks/bench_fact_precision.py tau_transfers.jsonl --reference --bundled

Per split: recall of the ``matter`` values, precision (proposed values matching ``matter`` or
``acceptable``), the ``not_matter`` values proposed and the tool-result-only share, with Wilson
95 % intervals and a bootstrap over conversations; ``--bundled`` adds support_desk and the
sample exports (``bench_fact_recall``) with Wilson intervals.

Without it the reference is an **automatic proxy**, not a person's list: each tau-bench task names the
*gold actions* its author expected the agent to take (``metadata.gold_actions``: tool names and
keyword arguments). For one conversation and its first handoff (the ``transfer_to_human_agents``
call; with ``--last-turn-hop`` conversations without a transfer get a handoff after their last
turn, reported apart):

- **gold values**: the scalar keyword-argument values of the gold actions — ids, flight
  numbers, dates, amounts, counts, names — left out: booleans, and lower-case words with no
  digit (``economy``, ``one_way``, ``no``: enumerations with no value shape, which the offline
  rules do not claim to find; how many are left out is printed);
- **recall (user)** = gold values the *user* states before the handoff (in their own messages,
  matched as whole words after normalising) that the proposer found / those values;
- **recall (any)** = gold values stated or used by anyone before the handoff (user text, agent
  text, tool-call arguments) found / those values;
- **precision (proxy)** = distinct proposed values that match a gold value, a value the agent
  handed over (the transfer's ``summary``), or a value of the user's messages / distinct proposed
  values. Values an agent stated or relied on that the task's gold actions do not name (a price
  difference it computed) count as wrong, so this is a lower bound; a value of the user's words
  counts as right whatever slot the fact gives it, so it says nothing about slots;
- **tool-result-only share** = distinct proposed values that, before the handoff, occur only in
  tool outputs (not in the user's or the agent's words, not in any tool call's arguments) /
  distinct proposed values.

Matching is ``bench_fact_recall.match`` (normalised, whole words, one inside the other).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import warnings
from pathlib import Path
from typing import Any

import maev_kit
from maev_kit.facts import propose_facts

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fact_recall import _within, match, norm  # noqa: E402

REFERENCE = Path(__file__).resolve().parent / "data" / "fact_reference_tau_airline.json"


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, bool) or value is None:
        return []
    return [str(value)]


def gold_values(trace) -> tuple[list[str], int]:
    """The gold actions' scalar values with a value shape, and how many were left out."""
    kept, left = [], 0
    for action in trace.metadata.get("gold_actions") or []:
        if action.get("name") == "transfer_to_human_agents":
            continue
        for v in _scalars(action.get("kwargs") or {}):
            if not any(c.isdigit() for c in v) and v == v.lower():
                left += 1
                continue
            if norm(v) and norm(v) not in {norm(k) for k in kept}:
                kept.append(v)
    return kept, left


def _before(trace, until: int) -> dict[str, list[str]]:
    """Texts before the handoff at ``until``, by where they are: user, agent words, tool
    arguments, tool outputs, the handoff's context."""
    from maev_kit.traces import AgentTurn, UserMessage

    out: dict[str, list[str]] = {"user": [], "agent": [], "args": [], "outputs": []}
    for e in trace.timeline():
        if e.turn_index > until:
            break
        if isinstance(e, UserMessage):
            out["user"].append(e.content)
        elif isinstance(e, AgentTurn):
            out["agent"].append(e.message)
            for call in e.tool_calls or []:
                out["args"].append(json.dumps(call.get("arguments"), default=str))
                if call.get("output") is not None:
                    out["outputs"].append(json.dumps(call["output"], default=str))
    return out


def _in(value: str, texts: list[str]) -> bool:
    v = norm(value)
    return any(_within(v, norm(t)) for t in texts)


def measure(traces, proposer=propose_facts) -> dict:
    """Counts over ``traces`` (each with one handoff; see the module docstring)."""
    c = {"conversations": 0, "gold_user": 0, "found_user": 0, "gold_any": 0, "found_any": 0,
         "proposed": 0, "supported": 0, "tool_only": 0, "left_out": 0, "misses": [],
         "unsupported": [], "tool_only_values": []}
    facts: dict[str, list[str]] = {}
    for f in proposer(traces):
        if f.value:
            facts.setdefault(f.conversation_id, []).append(f.value)
    for t in traces:
        if not t.handoffs:
            continue
        c["conversations"] += 1
        until = min(h.turn_index for h in t.handoffs)
        texts = _before(t, until)
        gold, left = gold_values(t)
        c["left_out"] += left
        props = list(dict.fromkeys(v for v in facts.get(t.conversation_id, []) if norm(v)))
        found = [g for g in gold if any(match(g, p) for p in props)]
        for g in gold:
            said_by_user = _in(g, texts["user"])
            used = said_by_user or _in(g, texts["agent"]) or _in(g, texts["args"])
            c["gold_user"] += said_by_user
            c["gold_any"] += used
            c["found_user"] += said_by_user and g in found
            c["found_any"] += used and g in found
            if used and g not in found:
                c["misses"].append((t.conversation_id, g, "user" if said_by_user else "agent"))
        summary = [str(v) for h in t.handoffs for v in (h.context_passed or {}).values()]
        for p in props:
            c["proposed"] += 1
            ok = (any(match(g, p) for g in gold) or _in(p, summary) or _in(p, texts["user"]))
            c["supported"] += ok
            if not ok:
                c["unsupported"].append((t.conversation_id, p))
            if _in(p, texts["outputs"]) and not any(_in(p, texts[k])
                                                    for k in ("user", "agent", "args")):
                c["tool_only"] += 1
                c["tool_only_values"].append((t.conversation_id, p))
    return c


def _r(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def row(name: str, c: dict) -> str:
    return (f"| {name} | {c['conversations']} | {c['gold_user']} | "
            f"{_r(c['found_user'], c['gold_user'])} | {c['gold_any']} | "
            f"{_r(c['found_any'], c['gold_any'])} | {c['proposed']} | "
            f"{_r(c['supported'], c['proposed'])} | {_r(c['tool_only'], c['proposed'])} |")


HEAD = ("| set | conversations | gold values the user states | recall (user) | gold values "
        "stated or used | recall (any) | proposed values | precision (proxy) | tool-result-only "
        "share |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of ``k`` successes in ``n`` (95 % by default).

    >>> [round(x, 3) for x in wilson(9, 10)]
    [0.596, 0.982]
    """
    if not n:
        return (float("nan"), float("nan"))
    p = k / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def _ci(k: int, n: int) -> str:
    if not n:
        return "n/a"
    lo, hi = wilson(k, n)
    return f"{k / n:.2f} [{lo:.2f}, {hi:.2f}]"


def _boot(rows: list[tuple[int, int]], seed: int = 0, reps: int = 2000) -> str:
    """A 95 % percentile interval of sum(k)/sum(n) resampling *conversations* (values of one
    conversation are not independent, so this is the honest width; Wilson treats each value as
    independent)."""
    rows = [r for r in rows if r[1]]
    if not rows:
        return "n/a"
    rng = random.Random(seed)
    stats = []
    for _ in range(reps):
        pick = [rows[rng.randrange(len(rows))] for _ in rows]
        n = sum(b for _, b in pick)
        stats.append(sum(a for a, _ in pick) / n if n else 1.0)
    stats.sort()
    return f"[{stats[int(0.025 * reps)]:.2f}, {stats[int(0.975 * reps) - 1]:.2f}]"


def _matches(value: str, groups: list[list[str]]) -> bool:
    return any(match(a, value) for aliases in groups for a in aliases)


def measure_reference(traces, reference: list[dict], proposer=propose_facts) -> dict:
    """Counts against the person-made reference (``benchmarks/data/
    fact_reference_tau_airline.json``), per conversation: ``matter`` found, distinct proposed
    values, those matching ``matter`` or ``acceptable`` (right), those matching ``not_matter``,
    and those that occur only in tool outputs before the handoff."""
    by_id = {t.conversation_id: t for t in traces}
    facts: dict[str, list[str]] = {}
    for f in proposer([by_id[r["conversation_id"]] for r in reference
                       if r["conversation_id"] in by_id]):
        if f.value:
            facts.setdefault(f.conversation_id, []).append(f.value)
    rows = []
    for r in reference:
        t = by_id.get(r["conversation_id"])
        if t is None or not t.handoffs:
            continue
        texts = _before(t, min(h.turn_index for h in t.handoffs))
        props = list(dict.fromkeys(v for v in facts.get(t.conversation_id, []) if norm(v)))
        ok = r["matter"] + r["acceptable"]
        row = {"id": t.conversation_id, "split": r["split"], "matter": len(r["matter"]),
               "found": sum(any(match(a, p) for a in al for p in props) for al in r["matter"]),
               "proposed": len(props), "right": sum(_matches(p, ok) for p in props),
               "not_matter": sum(_matches(p, r["not_matter"]) and not _matches(p, ok)
                                 for p in props),
               "tool_only": sum(_in(p, texts["outputs"]) and not any(
                   _in(p, texts[k]) for k in ("user", "agent", "args")) for p in props),
               "missed": [al[0] for al in r["matter"]
                          if not any(match(a, p) for a in al for p in props)],
               "wrong": [p for p in props if not _matches(p, ok)]}
        rows.append(row)
    return {"rows": rows}


REF_HEAD = ("| split | conversations | key values | recall [95 % Wilson] | by conversation | "
            "proposed values | precision [95 % Wilson] | by conversation | not-matter values "
            "proposed | tool-result-only share [95 % Wilson] |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def ref_row(name: str, rows: list[dict]) -> str:
    tot = {k: sum(r[k] for r in rows) for k in ("matter", "found", "proposed", "right",
                                                 "not_matter", "tool_only")}
    return (f"| {name} | {len(rows)} | {tot['matter']} | {_ci(tot['found'], tot['matter'])} | "
            f"{_boot([(r['found'], r['matter']) for r in rows])} | {tot['proposed']} | "
            f"{_ci(tot['right'], tot['proposed'])} | "
            f"{_boot([(r['right'], r['proposed']) for r in rows])} | {tot['not_matter']} | "
            f"{_ci(tot['tool_only'], tot['proposed'])} |")


def run_reference(traces_path: str, reference_path: str, split: str, misses: bool) -> None:
    """The table against the person-made reference; ``--misses`` lists dev only unless
    ``split`` names another split."""
    doc = json.loads(Path(reference_path).read_text(encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces = maev_kit.load_traces(traces_path)
        rows = measure_reference(traces, doc["conversations"])["rows"]
    known = {r["id"] for r in rows}
    absent = [r["conversation_id"] for r in doc["conversations"]
              if r["conversation_id"] not in known]
    if absent:
        print(f"({len(absent)} reference conversations not in {traces_path}: "
              f"{', '.join(absent[:5])}...)")
    print(REF_HEAD)
    for name in ("dev", "test"):
        part = [r for r in rows if r["split"] == name]
        if part:
            print(ref_row(f"{name} (reference)", part))
    print(ref_row("all", rows))
    if misses:
        for r in rows:
            if r["split"] != split:
                continue
            for v in r["missed"]:
                print(f"  missed  {r['id']}: {v}")
            for v in r["wrong"]:
                print(f"  wrong   {r['id']}: {v}")


def bundled() -> None:
    """The bundled sets with intervals: support_desk's key facts and the sample exports' story
    values (``bench_fact_recall``), and the tool-result-only share of what is proposed."""
    import bench_fact_recall as fr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sd = fr.support_desk()
        folder = fr.REPO / "tests" / "data" / "trace_samples"
        story = json.loads(fr.REFERENCE.read_text(encoding="utf-8"))["stories"][0]
        samples = fr._total([s for _, s in fr.samples(folder, story)])
        labeled = maev_kit.load_labeled_set("support_desk")
        tool = _tool_only_share(labeled.traces)
    print("| set | reference values | recall [95 % Wilson] | proposed values | precision "
          "[95 % Wilson] |\n|---|---:|---:|---:|---:|")
    for name, s in (("support_desk (key facts; precision a lower bound)", sd),
                    ("sample exports (30 files, story values)", samples)):
        print(f"| {name} | {s['reference']} | {_ci(s['found'], s['reference'])} | "
              f"{s['proposed']} | {_ci(s['right'], s['proposed'])} |")
    print(f"\nsupport_desk tool-result-only share: {_ci(tool[0], tool[1])}")


def _tool_only_share(traces) -> tuple[int, int]:
    facts: dict[str, list[str]] = {}
    for f in propose_facts(traces):
        if f.value:
            facts.setdefault(f.conversation_id, []).append(f.value)
    k = n = 0
    for t in traces:
        if not t.handoffs:
            continue
        texts = _before(t, max(h.turn_index for h in t.handoffs))
        for p in dict.fromkeys(v for v in facts.get(t.conversation_id, []) if norm(v)):
            n += 1
            k += _in(p, texts["outputs"]) and not any(_in(p, texts[x])
                                                     for x in ("user", "agent", "args"))
    return k, n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("traces", help="a trace JSONL written by convert_tau_bench.py")
    ap.add_argument("--misses", action="store_true",
                    help="list the gold values missed and the proposed values no proxy supports")
    ap.add_argument("--reference", nargs="?", const=str(REFERENCE), default=None,
                    help="measure against the person-made reference (default "
                         "benchmarks/data/fact_reference_tau_airline.json) instead of the proxy")
    ap.add_argument("--split", default="dev",
                    help="with --reference --misses: the split whose misses are listed (dev)")
    ap.add_argument("--bundled", action="store_true",
                    help="also the bundled sets (support_desk, sample exports) with intervals")
    args = ap.parse_args()
    if args.reference:
        run_reference(args.traces, args.reference, args.split, args.misses)
        if args.bundled:
            print()
            bundled()
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces = maev_kit.load_traces(args.traces)
    transfer = [t for t in traces if any(h.context_passed for h in t.handoffs)]
    last = [t for t in traces if t.handoffs and t not in transfer]
    print(HEAD)
    results = []
    for name, group in (("with a transfer (handoff = the transfer)", transfer),
                        ("without (handoff after the last turn)", last)):
        if group:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                c = measure(group)
            results.append((name, c))
            print(row(name, c))
    for name, c in results:
        print(f"\n{name}: {c['left_out']} gold values without a value shape left out")
        if args.misses:
            for cid, v, who in c["misses"]:
                print(f"  missed ({who}) {cid}: {v}")
            for cid, v in c["unsupported"]:
                print(f"  unsupported  {cid}: {v}")
            for cid, v in c["tool_only_values"]:
                print(f"  tool-only    {cid}: {v}")


if __name__ == "__main__":
    main()
