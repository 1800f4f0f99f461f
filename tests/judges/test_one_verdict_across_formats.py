"""The same fact, at the same handoff, with the same content at the receiver, gets the same
verdict from every importer's output (the sample exports of one support story)."""

from __future__ import annotations

import warnings
from pathlib import Path

from maev_kit.facts import facts_to_expectations, propose_facts
from maev_kit.judges import HeuristicJudge
from maev_kit.retention import build_retention_items
from maev_kit.traces.importers import import_traces

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "trace_samples"


def _content(item) -> tuple:
    return tuple((m.kind, "user" if m.is_user else "receiver" if m.speaker == item.to_agent
                  else "other", " ".join(m.content.split()).casefold()) for m in item.window)


def test_same_fact_same_hop_same_content_same_verdict():
    groups: dict[tuple, dict[str, str]] = {}
    judge = HeuristicJudge()
    exports = sorted(p for p in SAMPLES.rglob("*.json") if "third_party" not in p.parts)
    assert len(exports) >= 20
    for path in exports:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            traces, _ = import_traces(str(path))
        facts = propose_facts(traces, method=["context", "offline"], carry_over=False)
        items = build_retention_items(traces, facts_to_expectations(list(facts)))
        for it, v in zip(items, judge.judge_items(items)):
            key = (" ".join(it.fact.casefold().split()), it.hop, _content(it))
            groups.setdefault(key, {})[str(path.relative_to(SAMPLES))] = v.label
    shared = {k: g for k, g in groups.items() if len(g) > 1}
    assert len(shared) >= 20 and sum(map(len, shared.values())) >= 200  # not vacuous
    split = {k[:2]: g for k, g in shared.items() if len(set(g.values())) > 1}
    assert not split, split
