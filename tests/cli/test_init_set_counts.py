"""`maev init-set` prints the counts of what is on disk: key facts, retention items, handoffs,
proposed facts (it once printed the retention items as "key facts": 62 for a set of 11)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from cli_helpers import run_cli

from maev_kit.datasets import load_labeled_set
from maev_kit.traces import load_traces

DATA = Path(__file__).resolve().parents[1] / "data" / "chat_jsonl"


def test_printed_counts_equal_what_is_on_disk(tmp_path, capsys, monkeypatch):
    shutil.copy(DATA / "conversations.jsonl", tmp_path / "chat.jsonl")
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["init-set", "chat.jsonl", "--out", "s"], capsys)
    assert code == 0, err
    exps = [json.loads(ln) for ln in Path("s/expectations.jsonl").read_text().splitlines()]
    key_facts = sum(len(e["key_facts"]) for e in exps)
    items = len(load_labeled_set("s").items)
    traces = load_traces("s/traces.jsonl")
    handoffs = sum(len(t.handoffs) for t in traces)
    proposed = len(Path("s/facts.jsonl").read_text().splitlines())
    assert key_facts != items  # a fact judged at two handoffs: the counts differ here
    assert f"facts: {key_facts} key facts" in out
    assert f"{items} retention items to label" in out
    assert f"read {len(traces)} conversations with {handoffs} handoffs" in out
    assert f"traces.jsonl  ({len(traces)} conversations, {handoffs} handoffs)" in out
    assert (f"expectations.jsonl  ({key_facts} key facts in {len(exps)} conversations: "
            f"{items} retention items)") in out
    assert f"facts.jsonl  ({proposed} proposed facts, for review)" in out


def test_counts_from_an_expectations_file(tmp_path, capsys, monkeypatch):
    shutil.copy(DATA / "conversations.jsonl", tmp_path / "chat.jsonl")
    monkeypatch.chdir(tmp_path)
    assert run_cli(["init-set", "chat.jsonl", "--out", "a"], capsys)[0] == 0
    code, out, err = run_cli(["init-set", "a/traces.jsonl", "--out", "b", "--facts",
                              "a/expectations.jsonl"], capsys)
    assert code == 0, err
    key_facts = sum(len(e.key_facts) for e in load_labeled_set("b").expectations.values())
    items = len(load_labeled_set("b").items)
    m = re.search(r"facts: (\d+) key facts .*; (\d+) retention items", out)
    assert m, out
    assert (int(m[1]), int(m[2])) == (key_facts, items)


def test_one_default_fact_method_named_alike_everywhere(capsys):
    repo = Path(__file__).resolve().parents[2]
    code, out, _ = run_cli(["init-set", "--help"], capsys)
    assert code == 0
    assert "[default: auto]" in " ".join(out.split())
    code, out, _ = run_cli(["score", "--help"], capsys)
    assert "[default: auto]" in " ".join(out.split())
    assert "maev init-set TRACES --out DIR [--facts auto]" in (repo / "README.md").read_text()
    assert "`--facts` is `auto` (default" in (repo / "docs" / "facts.md").read_text()
