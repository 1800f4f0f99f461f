"""Measure the offline retention judges against human labels.

Data: the SNLI subset (``tests/data/retention_snli_subset.jsonl`` by
default): ``message`` → the one agent message after the handoff, ``fact`` → the key fact,
``label`` → gold. The file's ``split`` field separates ``dev`` (tuning, and the learned judge's
training data) from ``test`` (reported). Optionally also a labeled-set folder
(``--labeled-set labeled_sets/<name>``): gold is the majority human label per item; the split
is the manifest's ``splits`` (dev/test by conversation), else a deterministic half by
conversation id.

Prints accuracy, per-class precision/recall, Cohen's κ (scikit-learn) and the confusion matrix,
plus the heuristic judge's speed.

    python benchmarks/eval_offline_judges.py [--data PATH] [--labeled-set DIR] [--tune]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from pathlib import Path

from maev_kit.judges import HeuristicJudge, LearnedJudge
from maev_kit.retention import LABELS, RetentionItem
from maev_kit.traces import Message

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "tests" / "data" / "retention_snli_subset.jsonl"


def snli_items(path: Path) -> dict[str, tuple[list[RetentionItem], list[str]]]:
    splits: dict[str, tuple[list[RetentionItem], list[str]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            item = RetentionItem(
                item_id=row["id"], conversation_id=row["id"], handoff_index=0, fact_id="f1",
                fact=row["fact"], before=(),
                after=(Message("agent", row["message"], 1, False),),
                from_agent="", to_agent="agent")
            items, labels = splits.setdefault(row["split"], ([], []))
            items.append(item)
            labels.append(row["label"])
    return splits


def labeled_set_items(folder: Path) -> dict[str, tuple[list[RetentionItem], list[str]]]:
    from maev_kit.labels import latest_labels, read_label_file
    from maev_kit.retention import build_retention_items
    from maev_kit.traces import load_traces

    traces = load_traces(folder / "traces.jsonl")
    items = build_retention_items(traces, folder / "expectations.jsonl")
    records = latest_labels(read_label_file(folder / "labels.jsonl").records)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    split_of = {conv: name for name, convs in (manifest.get("splits") or {}).items()
                for conv in convs}
    votes: dict[str, Counter] = {}
    for r in records.values():
        if r.label != "skip":
            votes.setdefault(r.item_id, Counter())[r.label] += 1
    splits: dict[str, tuple[list[RetentionItem], list[str]]] = {}
    for it in items:
        c = votes.get(it.item_id)
        if not c:
            continue
        (top, n), *rest = c.most_common()
        if rest and rest[0][1] == n:
            continue  # tie: no gold
        split = split_of.get(it.conversation_id)
        if split is None:  # no split in the manifest: a deterministic half by conversation
            half = int(hashlib.sha256(it.conversation_id.encode()).hexdigest(), 16) % 2
            split = "dev" if half == 0 else "test"
        its, labs = splits.setdefault(split, ([], []))
        its.append(it)
        labs.append(top)
    return splits


def report(title: str, gold: list[str], pred: list[str]) -> dict[str, float]:
    from sklearn.metrics import (
        accuracy_score,
        cohen_kappa_score,
        confusion_matrix,
        precision_recall_fscore_support,
    )

    acc = accuracy_score(gold, pred)
    kappa = cohen_kappa_score(gold, pred, labels=list(LABELS))
    p, r, _, support = precision_recall_fscore_support(gold, pred, labels=list(LABELS),
                                                       zero_division=0)
    print(f"\n## {title}: n={len(gold)}  accuracy={acc:.3f}  kappa={kappa:.3f}")
    print(f"{'class':<14}{'precision':>10}{'recall':>8}{'support':>9}")
    for lab, pi, ri, si in zip(LABELS, p, r, support):
        print(f"{lab:<14}{pi:>10.3f}{ri:>8.3f}{si:>9d}")
    cm = confusion_matrix(gold, pred, labels=list(LABELS))
    print("confusion (rows gold, cols predicted; order " + ", ".join(LABELS) + "):")
    for lab, row in zip(LABELS, cm):
        print(f"  {lab:<13}" + "".join(f"{v:>6d}" for v in row))
    return {"accuracy": acc, "kappa": kappa}


def choose_c(items: list[RetentionItem], labels: list[str]) -> float:
    """5-fold cross-validation on the dev split only (folds by sorted id, deterministic)."""
    from sklearn.metrics import cohen_kappa_score

    order = sorted(range(len(items)), key=lambda i: items[i].item_id)
    folds = [order[k::5] for k in range(5)]
    best = (-1.0, 1.0)
    for c in (0.1, 0.3, 1.0, 3.0, 10.0):
        gold, pred = [], []
        for k in range(5):
            test = set(folds[k])
            tr = [i for i in order if i not in test]
            judge = LearnedJudge(C=c).fit([items[i] for i in tr], [labels[i] for i in tr])
            vs = judge.judge_items([items[i] for i in folds[k]])
            gold += [labels[i] for i in folds[k]]
            pred += [v.label for v in vs]
        kappa = cohen_kappa_score(gold, pred, labels=list(LABELS))
        print(f"  C={c:<5g} dev 5-fold CV kappa={kappa:.3f}")
        best = max(best, (kappa, c))
    return best[1]


def evaluate(name: str, splits: dict[str, tuple[list[RetentionItem], list[str]]],
             tune: bool) -> None:
    dev_items, dev_labels = splits["dev"]
    test_items, test_labels = splits["test"]
    print(f"\n# {name}: dev {len(dev_items)} items {dict(Counter(dev_labels))}, "
          f"test {len(test_items)} items {dict(Counter(test_labels))}")
    heuristic = HeuristicJudge()
    for split, (its, labs) in (("dev", (dev_items, dev_labels)),
                               ("test", (test_items, test_labels))):
        t0, c0 = time.perf_counter(), time.process_time()
        verdicts = heuristic.judge_items(its)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        report(f"heuristic {heuristic.version} on {name} {split}", labs,
               [v.label for v in verdicts])
        print(f"heuristic speed (first pass, cold caches): {dc / len(its) * 1e3:.3f} ms CPU "
              f"per pair ({dt / len(its) * 1e3:.3f} ms wall), {len(its) / dt:,.0f} pairs/s")
    c = LearnedJudge().C
    if tune:
        print("\nchoosing C for tfidf-logreg on the dev split:")
        c = choose_c(dev_items, dev_labels)
    t0 = time.perf_counter()
    learned = LearnedJudge(C=c).fit(dev_items, dev_labels)
    fit_s = time.perf_counter() - t0
    again = LearnedJudge(C=c).fit(list(reversed(dev_items)), list(reversed(dev_labels)))
    verdicts = learned.judge_items(test_items)
    same = [v.label for v in verdicts] == [v.label for v in again.judge_items(test_items)]
    report(f"tfidf-logreg (C={c:g}, fit on dev in {fit_s:.1f} s, {learned.version}) on "
           f"{name} test", test_labels, [v.label for v in verdicts])
    print(f"refit with reversed training order gives identical test labels: {same}")
    try:
        learned.judge_items(dev_items[:1])
        print("ERROR: the learned judge scored a training item")
    except ValueError as exc:
        print(f"refuses training items: {type(exc).__name__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--labeled-set", type=Path, default=None)
    ap.add_argument("--tune", action="store_true",
                    help="choose the learned judge's C by cross-validation on dev")
    args = ap.parse_args()
    evaluate("snli-subset", snli_items(args.data), args.tune)
    if args.labeled_set is not None:
        splits = labeled_set_items(args.labeled_set)
        if "dev" in splits and "test" in splits:
            evaluate(args.labeled_set.name, splits, tune=False)
        else:
            print(f"\n{args.labeled_set}: too few labeled items to split")


if __name__ == "__main__":
    main()
