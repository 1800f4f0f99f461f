"""``maev score EXPORT`` and ``maev report EXPORT``: from a framework export to numbers and a
report in one command, for every shared trace sample and for an export built here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli

from maev_kit.traces.importers import load_any

ACCT = "ACCT-4471-9920"


def retention_section(page: str) -> str:
    """The text of the report's Retention section."""
    m = re.search(r'<section[^>]*id="retention".*?</section>', page, re.S)
    assert m, "the report has no retention section"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", m.group(0)))


def samples(data_dir: Path) -> list[Path]:
    files = sorted((data_dir / "trace_samples").rglob("*.json"))
    assert files, "no trace sample found"
    return files


def test_score_and_report_every_shared_sample(data_dir, tmp_path, capsys, subtests):
    for path in samples(data_dir):
        rel = str(path.relative_to(data_dir / "trace_samples"))
        with subtests.test(sample=rel):
            traces, issues = load_any(path)
            code, out, err = run_cli(["score", str(path), "--json", "--no-progress"], capsys)
            assert code == 0, err
            facts = json.loads(out)["facts"]
            assert facts["mode"] == "auto"
            # each import warning is one line of its own
            shown = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
            for issue in issues[:20]:
                assert f"warning: {issue}" in shown
            # a handoff after the user gave the account number gets a fact
            told = any(ACCT in u.content for t in traces for u in t.user_messages)
            if told and any(t.handoffs for t in traces):
                assert sum(facts["by_source"].values()) > 0, (rel, facts)

            out_html = tmp_path / (rel.replace("/", "__") + ".html")
            code, out, err = run_cli(["report", str(path), "--out", str(out_html),
                                      "--no-progress"], capsys)
            assert code == 0, err
            page = out_html.read_text()
            text = retention_section(page)
            assert "n/a" in text
            assert "Handoff quality" in text and "no expected handoffs" in text
            if sum(facts["by_source"].values()):
                assert "fact source" in text and "key fact" in text
                for source, n in facts["by_source"].items():
                    assert f"{source} {n}" in text
                assert "fact_source" in page  # the ledger's column
            else:
                assert "No key fact to judge" in text


EXPORT = {"messages": [
    {"source": "user", "type": "TextMessage",
     "content": "My booking is BK-99812, I need 2 extra bags. My email is ana@example.com."},
    {"source": "triage", "type": "HandoffMessage", "target": "baggage",
     "content": "Transferred to baggage.", "context": []},
    {"source": "baggage", "type": "TextMessage",
     "content": "I have added 2 bags to booking BK-99812."},
    {"source": "baggage", "type": "HandoffMessage", "target": "payments",
     "content": "Transferred to payments.", "context": []},
    {"source": "payments", "type": "TextMessage",
     "content": "The receipt goes to ana@example.com."}]}


@pytest.fixture
def export(tmp_path) -> Path:
    p = tmp_path / "autogen_run.json"
    p.write_text(json.dumps(EXPORT))
    return p


def test_score_an_export_built_here(export, tmp_path, capsys):
    ledger = tmp_path / "ledger.csv"
    code, out, err = run_cli(["score", str(export), "--no-progress", "--ledger", str(ledger)],
                             capsys)
    assert code == 0, err
    assert "facts (auto): " in out and " offline" in out
    import pandas as pd

    led = pd.read_csv(ledger)
    assert set(led["fact_source"]) == {"offline"}
    assert set(led["handoff_index"]) == {0, 1}
    assert any("BK-99812" in f for f in led["fact"])
    assert "handoff_quality" in out and "n/a: no expected handoffs" in out


def test_report_an_export_built_here(export, tmp_path, capsys):
    out_html = tmp_path / "r.html"
    code, out, err = run_cli(["report", str(export), "--out", str(out_html), "--no-progress"],
                             capsys)
    assert code == 0, err
    assert f"written: {out_html}" in out
    text = retention_section(out_html.read_text())
    assert "offline" in text and "not reviewed" in text
    assert "Routing quality" in text and "no routing case" in text


def test_facts_and_format_flags(export, tmp_path, capsys):
    code, out, err = run_cli(["score", str(export), "--facts", "context", "--json",
                              "--no-progress"], capsys)
    assert code == 0, err
    assert json.loads(out)["facts"]["by_source"] == {}  # no handoff passed a context value
    code, out, err = run_cli(["score", str(export), "--format", "autogen", "--facts",
                              "offline,context", "--json", "--no-progress"], capsys)
    assert code == 0, err
    assert json.loads(out)["facts"]["mode"] == "offline+context"
    code, out, err = run_cli(["score", str(export), "--format", "otel", "--no-progress"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "cannot import autogen_run.json as 'otel'" in err


def test_a_bad_facts_file_is_one_line_with_file_line_and_field(export, tmp_path, capsys):
    bad = tmp_path / "facts.jsonl"
    bad.write_text(json.dumps({"conversation_id": "autogen_run", "handoff_index": 0,
                               "fact_id": "p-1", "text": "two bags", "value": "2",
                               "kind": "quantity", "source_turn_index": 0,
                               "proposer": "offline"}) + "\n"
                   + json.dumps({"conversation_id": "autogen_run", "handoff_index": "first",
                                 "fact_id": "p-2", "text": "x", "value": None,
                                 "kind": "other", "source_turn_index": None,
                                 "proposer": "offline"}) + "\n")
    for cmd in (["score", str(export)], ["report", str(export), "--out",
                                         str(tmp_path / "r.html")]):
        code, out, err = run_cli([*cmd, "--facts", str(bad), "--no-progress"], capsys)
        assert code == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in err, err
        assert "facts.jsonl:2 › handoff_index: expected a whole number" in lines[0]
    code, out, err = run_cli(["score", str(export), "--facts", "ofline"], capsys)
    assert code == 2 and "did you mean 'offline'" in err


def test_a_labeled_set_still_scores_on_its_expectations(capsys):
    code, out, err = run_cli(["score", "support_desk", "--json", "--no-progress"], capsys)
    assert code == 0, err
    facts = json.loads(out)["facts"]
    assert list(facts["by_source"]) == ["expectations"]
