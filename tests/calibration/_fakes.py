"""Hand-made JudgeRun-like inputs: exact control over which items a judge gets wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from maev_kit.judges import Verdict
from maev_kit.retention import RetentionItem
from maev_kit.traces import Message

LAB = ("retained", "lost", "contradicted")


def make_items(n: int, facts_per_handoff: int = 1) -> list[RetentionItem]:
    out = []
    for i in range(n):
        conv, k = divmod(i, facts_per_handoff)
        out.append(RetentionItem(
            f"c{conv:03d}/h0/f{k}", f"c{conv:03d}", 0, f"f{k}",
            f"Fact {i}: the account number is ACCT-{1000 + i}", (),
            (Message("billing", f"Looking at account ACCT-{1000 + i} now.", 2),),
            "triage", "billing"))
    return out


def truth(n: int) -> list[str]:
    """Labels with shares 1/2 retained, 3/10 lost, 1/5 contradicted, interleaved."""
    pattern = ["retained", "lost", "retained", "contradicted", "retained", "lost", "retained",
               "lost", "contradicted", "retained"]
    return [pattern[i % 10] for i in range(n)]


def wrong(label: str) -> str:
    return LAB[(LAB.index(label) + 1) % 3]


def corrupt(labels: list[str], bad: set[int]) -> list[str]:
    return [wrong(lab) if i in bad else lab for i, lab in enumerate(labels)]


@dataclass
class FakeRun:
    verdicts: list[Verdict]
    judge_name: str
    judge_version: str = "1"
    model: str | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    items: tuple = ()


def run_of(items, labels, name, *, model=None, errors=(), stats=None) -> FakeRun:
    vs = []
    for i, (it, lab) in enumerate(zip(items, labels)):
        if i in errors:
            vs.append(Verdict(it.item_id, None, error="unparseable reply", raw="???"))
        else:
            vs.append(Verdict(it.item_id, lab, rationale=f"{name} says {lab}"))
    return FakeRun(vs, name, "1", model, dict(stats or {"requests": len(items), "cache_hits": 0,
                                                         "tokens": 10 * len(items), "cost": 0.01,
                                                         "latency_p50": 0.1,
                                                         "latency_p95": 0.2}),
                   tuple(items))


def label_dicts(items, labels, annotator):
    return [{"item_id": it.item_id, "annotator": annotator, "label": lab}
            for it, lab in zip(items, labels) if lab is not None]
