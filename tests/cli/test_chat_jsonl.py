"""The common chat JSONL shapes are accepted by every command that reads traces, read the same
way by each; a file of no known shape gets one message from each (exit 2, no traceback)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_cli

from maev_kit.traces import load_traces, trace_to_dict
from maev_kit.traces.importers import import_traces

DATA = Path(__file__).resolve().parents[1] / "data" / "chat_jsonl"
SHAPES = ["conversations.jsonl", "messages.jsonl"]

#: every command that reads a trace file, with what it writes (if anything) under tmp
COMMANDS: dict[str, list[str]] = {
    "import": ["import", "auto", "{src}", "-o", "out.jsonl"],
    "validate": ["validate", "{src}"],
    "score": ["score", "{src}", "--no-progress"],
    "init-set": ["init-set", "{src}", "--out", "newset"],
    "report": ["report", "{src}", "--out", "report.html"],
}


def _args(command: str, src: str) -> list[str]:
    return [a.format(src=src) for a in COMMANDS[command]]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_accepts_the_chat_jsonl_shapes(shape, command, tmp_path, capsys,
                                                     monkeypatch):
    shutil.copy(DATA / shape, tmp_path / shape)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(_args(command, shape), capsys)
    assert code == 0, err
    assert "Traceback" not in err and "error:" not in err
    expected = import_traces(DATA / shape).traces
    assert len(expected) == 2  # both files hold two conversations (c1, c2)
    if command == "import":
        assert [trace_to_dict(t) for t in load_traces("out.jsonl")] == [
            trace_to_dict(t) for t in expected]
    elif command == "validate":
        assert f"{shape}: valid (2 traces)" in out + err
    elif command == "score":
        assert "2 conversations scored" in out
    elif command == "init-set":
        assert [t.conversation_id for t in load_traces("newset/traces.jsonl")] == ["c1", "c2"]
    else:
        assert "written: report.html" in out and Path("report.html").stat().st_size > 0


@pytest.mark.parametrize("shape", SHAPES)
def test_load_traces_reads_what_import_reads(shape):
    loaded = load_traces(DATA / shape)
    imported = import_traces(DATA / shape).traces
    assert [trace_to_dict(t) for t in loaded] == [trace_to_dict(t) for t in imported]
    c1 = loaded[0]
    assert (c1.handoffs[0].from_agent, c1.handoffs[0].to_agent) == ("triage", "booking")
    assert c1.handoffs[0].context_passed == {"summary": "Booking ZX4821, wants 14 May"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_file_of_no_known_shape_gets_the_one_message(command, tmp_path, capsys, monkeypatch):
    shutil.copy(DATA / "unknown_shape.jsonl", tmp_path / "unknown_shape.jsonl")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(_args(command, "unknown_shape.jsonl"), capsys)
    assert code == 2, err
    assert "Traceback" not in err
    errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, err  # one message, not one per line and field
    msg = errors[0]
    assert msg.startswith("error: unknown_shape.jsonl: not a trace file maev-kit can read "
                          "(it holds lines whose first is an object with the key foo)")
    for shape in ("maev trace JSONL", "one conversation per line with `messages`",
                  "one message per line with `conversation_id`", "LangGraph"):
        assert shape in msg
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_the_one_message_is_the_same_for_every_command(tmp_path, capsys, monkeypatch):
    shutil.copy(DATA / "unknown_shape.jsonl", tmp_path / "unknown_shape.jsonl")
    monkeypatch.chdir(tmp_path)
    seen = set()
    for command in COMMANDS:
        _, _, err = run_cli(_args(command, "unknown_shape.jsonl"), capsys)
        seen.add(next(ln for ln in err.splitlines() if ln.startswith("error:")))
    assert len(seen) == 1, seen


def test_a_maev_trace_file_is_still_one_to_import(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli(_args("import", str(DATA / "conversations.jsonl")), capsys)
    assert code == 0
    code, _, err = run_cli(["import", "auto", "out.jsonl", "-o", "again.jsonl"], capsys)
    assert code == 2 and "already a maev trace file" in err


def test_import_prints_the_counts_of_the_file_it_wrote(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(_args("import", str(DATA / "conversations.jsonl")), capsys)
    assert code == 0
    written = load_traces("out.jsonl")
    m = re.search(r"imported (\d+) traces \((\d+) agents, (\d+) turns, (\d+) handoffs\)", out)
    assert m, out
    assert int(m[1]) == len(written) == 2
    assert int(m[3]) == sum(len(t.turns) for t in written)
    assert int(m[4]) == sum(len(t.handoffs) for t in written) == 3


def test_convert_prints_the_counts_of_the_file_it_wrote(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(["convert", str(DATA / "messages.jsonl"), "t.jsonl"], capsys)
    assert code == 0, err
    written = load_traces("t.jsonl")
    n_h = sum(len(t.handoffs) for t in written)
    assert f"{len(written)} traces ({n_h} handoffs) written to t.jsonl" in out
    assert (len(written), n_h) == (2, 2)
    assert json.loads(Path("t.jsonl").read_text().splitlines()[0])["conversation_id"] == "c1"
