"""Retention on real framework exports: what the conversation view shows, and whether the same
story gets the same verdict in every format.

Run: ``python benchmarks/bench_retention_exports.py --samples DIR`` (a few seconds; offline).
``DIR`` is a folder of framework exports (JSON files the importers read); every file there tells
one customer-support story (triage → billing → technical support, tool calls ``lookup_invoices``
and ``lift_api_suspension``). The repository keeps the sample exports (test fixtures) in
``tests/data/trace_samples`` (the default).

Part 1 — per export: the key facts proposed offline (``context`` + ``offline``, each stated fact
once), the items (fact × every later handoff), how many of those items have the fact's value
in the receiving agent's entries of the **conversation view** (text, tool calls, tool results,
the handoff it makes next: "reached") against the **text-only view** of earlier versions (any
agent's text: "text view"), and how many the heuristic judge retains, with the conversation view
(the receiver's evidence) and with the text-only view (as earlier versions judged).

Part 2 — same story, same verdict: five facts of the story (account, amount, invoice, refund,
the month) stated before the first handoff are judged by the heuristic at both handoffs of every
export that carries content; the agreement is the share of (export, fact, hop) verdicts equal to
the most common verdict for that (fact, hop) across exports (goal ≥ 0.9). Disagreements are
printed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import warnings
from collections import Counter
from pathlib import Path

from maev_kit.expectations import ConversationExpectations, KeyFact
from maev_kit.facts import facts_to_expectations, propose_facts
from maev_kit.judges import HeuristicJudge
from maev_kit.retention import build_retention_items, locate
from maev_kit.traces.importers import import_traces

REPO = Path(__file__).resolve().parent.parent

#: The story's facts, stated by the user (or looked up) before the first handoff.
STORY = (("account", "The customer's account number is ACCT-4471-9920."),
         ("amount", "The duplicate charge was $49.00."),
         ("invoice", "The duplicate charge is on invoice INV-88213."),
         ("refund", "The refund reference is RF-5521."),
         ("month", "The duplicate charge was on the March invoice."))


def _exports(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.json") if "third_party" not in p.parts)


def _load(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        traces, _ = import_traces(str(path))
    return traces


def per_export(paths: list[Path], root: Path) -> None:
    judge = HeuristicJudge()
    print("Part 1 — per export (heuristic judge; facts: context + offline, each stated once)\n")
    head = (f"{'export':70s} {'facts':>5s} {'items':>5s} {'reached':>7s} {'text view':>9s} "
            f"{'retained':>8s} {'retained (text view)':>20s}")
    print(head)
    print("-" * len(head))
    totals = Counter()
    for path in paths:
        traces = _load(path)
        facts = propose_facts(traces, method=["context", "offline"], carry_over=False)
        values = {(f.conversation_id, f.fact_id): f.value for f in facts}
        items = build_retention_items(traces, facts_to_expectations(list(facts)))
        reached = seen_text = 0
        for it in items:
            value = values.get((it.conversation_id, it.fact_key)) or ""
            if value and locate(it.evidence, value):
                reached += 1
            if value and locate([m for m in it.text_view()[1] if not m.is_user], value):
                seen_text += 1
        new = judge.judge_items(items)
        name = str(path.relative_to(root))
        for it, v in zip(items, new):  # part 3: proposed facts too, keyed by their text
            same_content.setdefault((" ".join(it.fact.casefold().split()), it.hop, _content(it)),
                                    {})[name] = v.label or "error"
        old_items = [dataclasses.replace(it, after=it.text_view()[1], to_agent="")
                     for it in items]
        old = judge.judge_items(old_items)
        kept = sum(v.label == "retained" for v in new)
        kept_old = sum(v.label == "retained" for v in old)
        n_facts = len({(it.conversation_id, it.fact_key) for it in items})
        row = Counter(facts=n_facts, items=len(items), reached=reached, text=seen_text,
                      kept=kept, kept_old=kept_old)
        totals += row
        name = str(path.relative_to(root))
        print(f"{name:70s} {n_facts:5d} {len(items):5d} {reached:7d} {seen_text:9d} "
              f"{kept:8d} {kept_old:20d}")
    print("-" * len(head))
    print(f"{'all':70s} {totals['facts']:5d} {totals['items']:5d} {totals['reached']:7d} "
          f"{totals['text']:9d} {totals['kept']:8d} {totals['kept_old']:20d}")
    if totals["items"]:
        print(f"\nretention (retained / items): conversation view "
              f"{totals['kept'] / totals['items']:.3f}, text-only view "
              f"{totals['kept_old'] / totals['items']:.3f}; value reached the receiver in "
              f"{totals['reached'] / totals['items']:.3f} of items "
              f"(text-only view: {totals['text'] / totals['items']:.3f})")


def _content(item) -> tuple:
    """What the judge reads at the receiver, with the exporters' differences taken out (agent
    names, spacing, case): each entry of the item's window by kind, whose it is and its text."""
    return tuple((m.kind, "user" if m.is_user else "receiver" if m.speaker == item.to_agent
                  else "other", " ".join(m.content.split()).casefold()) for m in item.window)


#: (fact, hop, receiver content) -> {export: verdict}, filled by same_story
same_content: dict[tuple, dict[str, str]] = {}


def same_content_report() -> None:
    """Part 3 — the same fact at the same handoff with the same content at the receiver (as
    the importers give it) must get the same verdict from every export (issue D)."""
    groups = [g for g in same_content.values() if len(g) > 1]
    facts = sum(len(g) for g in groups)
    split = [(key, g) for key, g in same_content.items() if len(set(g.values())) > 1]
    same = facts - sum(len(g) for _, g in split)
    print(f"\nPart 3 — same fact, same hop, same content at the receiver: {len(groups)} groups "
          f"of {facts} verdicts from ≥ 2 exports; {same} of {facts} in a group with one "
          f"verdict ({len(split)} group(s) split)")
    for (fact, hop, _), g in split:
        print(f"  {fact} at hop {hop}: {dict(sorted(g.items()))}")


def same_story(paths: list[Path], root: Path, *, text_view: bool = False) -> float:
    judge = HeuristicJudge()
    verdicts: dict[tuple[str, int], dict[str, str]] = {}
    skipped = []
    for path in paths:
        name = str(path.relative_to(root))
        traces = _load(path)
        if not traces:
            skipped.append((name, "no trace"))
            continue
        t = traces[0]
        if len(t.handoffs) < 2 or not any(m.content.strip() for m in t.messages()
                                          if m.kind in ("text", "tool_result")):
            skipped.append((name, f"{len(t.handoffs)} handoff(s), "
                                  f"{'no' if not t.turns else 'some'} agent content"))
            continue
        exp = ConversationExpectations(t.conversation_id, key_facts=[
            KeyFact(key, 0, text) for key, text in STORY])
        items = build_retention_items([t], {t.conversation_id: exp})
        if text_view:  # as earlier versions judged: any agent's text only
            items = [dataclasses.replace(it, after=it.text_view()[1], to_agent="")
                     for it in items]
        for it, v in zip(items, judge.judge_items(items)):
            verdicts.setdefault((it.fact_key, it.hop), {})[name] = v.label or "error"
            if not text_view:
                same_content.setdefault((it.fact_key, it.hop, _content(it)), {})[name] = (
                    v.label or "error")
    agree = total = 0
    disagreements = []
    for (fact, hop), by_export in sorted(verdicts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        modal, n = Counter(by_export.values()).most_common(1)[0]
        agree += n
        total += len(by_export)
        for export, label in sorted(by_export.items()):
            if label != modal:
                disagreements.append(f"  {fact} at hop {hop}: {export} says {label}, "
                                     f"{n} of {len(by_export)} exports say {modal}")
    exports = {e for by in verdicts.values() for e in by}
    share = agree / total if total else float("nan")
    view = "text-only view (earlier versions)" if text_view else "conversation view"
    print(f"\nPart 2 — same story, same verdict, {view}: {len(exports)} exports × "
          f"{len(STORY)} facts × 2 hops = {total} verdicts; agreement with the modal verdict "
          f"{share:.3f} (goal ≥ 0.9)")
    for (fact, hop), by_export in sorted(verdicts.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        print(f"  hop {hop} {fact:8s} " + " ".join(
            f"{label[0].upper()}" for _, label in sorted(by_export.items()))
            + f"   {dict(Counter(by_export.values()))}")
    if disagreements:
        print("disagreements:")
        print("\n".join(disagreements))
    for name, why in skipped:
        print(f"  left out: {name} ({why})")
    return share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", default=os.fspath(REPO / "tests" / "data" / "trace_samples"),
                    help="folder of framework exports telling the support story")
    args = ap.parse_args()
    root = Path(args.samples)
    paths = _exports(root)
    if not paths:
        raise SystemExit(f"no export (*.json) under {args.samples}: pass --samples DIR")
    per_export(paths, root)
    same_story(paths, root)
    same_story(paths, root, text_view=True)
    same_content_report()


if __name__ == "__main__":
    main()
