"""labeled_sets/snli_calibration: SNLI pairs as traces, five label slots plus gold, attribution."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import pytest

from maev_kit.retention import LABELS

SLOTS = [f"slot{k}" for k in range(1, 6)]


def _by_item(snli) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for r in snli.labels:
        out[r.item_id][r.annotator] = r.label
    return out


def _fleiss(rows: list[list[str]]) -> float:
    """Fleiss' κ written independently of the generator (category proportions over all ratings)."""
    n = len(rows[0])
    tot = Counter(lab for row in rows for lab in row)
    p_e = sum((tot[c] / (n * len(rows))) ** 2 for c in LABELS)
    agree = [sum(v * (v - 1) for v in Counter(row).values()) / (n * (n - 1)) for row in rows]
    p_o = sum(agree) / len(agree)
    return (p_o - p_e) / (1 - p_e)


def test_fleiss_helper_matches_a_published_value():
    # Fleiss (1971) style toy: perfect agreement -> 1; a textbook 2-rater table -> Cohen-like value
    assert _fleiss([["retained"] * 5, ["lost"] * 5, ["contradicted"] * 5]) == pytest.approx(1.0)
    assert _fleiss([["retained", "retained"], ["lost", "lost"], ["retained", "lost"]]) \
        == pytest.approx(1 / 3)


def test_at_least_600_items_one_fact_each(snli):
    assert len(snli.traces) >= 600
    assert len(snli.items) == len(snli.traces)
    assert all(i.item_id == f"{i.conversation_id}/h0/f1" for i in snli.items)
    assert all(t.conversation_id.startswith("snli-") for t in snli.traces)


def test_trace_shape(snli):
    for t, item in zip(snli.traces, snli.items):
        assert [(m.speaker, m.kind) for m in t.messages()] == [
            ("user", "user"), ("intake", "text"), ("intake", "handoff"), ("responder", "text")]
        assert len(t.handoffs) == 1
        h = t.handoffs[0]
        assert (h.from_agent, h.to_agent, h.reason) == ("intake", "responder", None)
        assert t.turns[0].message == item.fact  # the intake agent states the hypothesis
        assert [m.content for m in item.after] == [t.turns[1].message]  # the premise


def test_five_slots_and_gold_per_item(snli):
    by_item = _by_item(snli)
    assert set(by_item) == {i.item_id for i in snli.items}
    for labels in by_item.values():
        assert set(labels) == {*SLOTS, "gold"}
    for r in snli.labels:
        assert r.source == ("gold" if r.annotator == "gold" else "snli_1.0")


def test_gold_is_the_slot_majority(snli):
    for labels in _by_item(snli).values():
        top, n = Counter(labels[s] for s in SLOTS).most_common(1)[0]
        assert n >= 3 and labels["gold"] == top


def test_labels_match_the_source_file(snli, data_dir):
    src = data_dir / "retention_snli_subset.jsonl"
    rows = {}
    with open(src, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            rows[r["id"]] = r
    by_item = _by_item(snli)
    split_of = {cid: s for s, ids in snli.manifest["splits"].items() for cid in ids}
    for t, item in zip(snli.traces, snli.items):
        r = rows[t.conversation_id]
        assert item.fact == r["fact"] and t.turns[1].message == r["message"]
        assert [by_item[item.item_id][s] for s in SLOTS] == r["annotator_labels"]
        assert by_item[item.item_id]["gold"] == r["label"]
        assert split_of[t.conversation_id] == r["split"]


def test_gold_label_mix_is_balanced(snli):
    gold = Counter(r.label for r in snli.labels if r.annotator == "gold")
    assert min(gold.values()) / max(gold.values()) > 0.8


def test_readme_attribution_license_and_wording(snli):
    r = snli.readme
    for needle in ("SNLI 1.0", "Bowman", "2015", "A large annotated corpus for learning natural "
                   "language inference", "CC BY-SA 4.0", "https://creativecommons.org/licenses/by-sa/4.0/",
                   "Creative Commons Attribution-ShareAlike 4.0 International"):
        assert needle in r, needle
    assert "label *slots*, not fixed people" in r
    flat = " ".join(r.split())
    assert "`slot1` is always the worker who wrote the hypothesis" in flat
    assert "each slot is a different crowd worker on each item" in flat.lower()
    for src, dst in (("entailment", "retained"), ("neutral", "lost"),
                     ("contradiction", "contradicted")):
        assert f"| {src} | `{dst}` |" in r
    assert snli.manifest["license"] == "CC BY-SA 4.0"
    assert snli.manifest["label_mapping"] == {"entailment": "retained", "neutral": "lost",
                                              "contradiction": "contradicted"}


def test_readme_kappa_is_the_kappa_of_the_shipped_labels(snli):
    by_item = _by_item(snli)
    kappa = _fleiss([[labels[s] for s in SLOTS] for labels in by_item.values()])
    assert 0.5 < kappa < 0.85  # SNLI's published human agreement is in this range
    assert f"**{kappa:.3f}**" in snli.readme
    assert snli.manifest["counts"]["fleiss_kappa_5_slots"] == pytest.approx(kappa, abs=1e-4)


def test_splits_follow_the_source_split(snli):
    for split, ids in snli.manifest["splits"].items():
        assert all(f"-{split}-" in cid for cid in ids)
        assert len(ids) >= 300
