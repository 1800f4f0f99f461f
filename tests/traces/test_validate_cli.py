"""`maev validate` on a corpus of malformed files: exit 2, file:line and the field named."""

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from maev_kit.cli import cli

CORPUS = Path(__file__).parent / "malformed"

# file -> substrings that must appear in the output (location, field, message)
EXPECTED = {
    "01_empty.jsonl": ["01_empty.jsonl: file is empty"],
    "02_not_json.jsonl": ["02_not_json.jsonl:2: not valid JSON"],
    "03_array_line.jsonl": ["03_array_line.jsonl:2: expected a JSON object, got an array"],
    "04_string_line.jsonl": ["04_string_line.jsonl:2: expected a JSON object, got a string"],
    "05_truncated.jsonl": ["05_truncated.jsonl:2: not valid JSON", "truncated"],
    "06_latin1.jsonl": ["06_latin1.jsonl:2: not valid UTF-8 (byte 0xe9"],
    "07_missing_to_agent.jsonl": ["07_missing_to_agent.jsonl:1 › handoffs[2] › to_agent: field required"],
    "08_unknown_reason.jsonl": ["08_unknown_reason.jsonl:1 › handoffs[0] › reason:", "'escalation'"],
    "09_schema_version.jsonl": ["09_schema_version.jsonl:1 › schema_version: unsupported schema_version 99",
                                "reads schema_version 1"],
    "10_duplicate_id.jsonl": ["10_duplicate_id.jsonl:2 › conversation_id: duplicate conversation_id 'c-ok'"],
    "11_id_not_string.jsonl": ["11_id_not_string.jsonl:1 › conversation_id: Input should be a valid string"],
    "12_message_not_string.jsonl": ["12_message_not_string.jsonl:1 › turns[0] › message:"],
    "13_turn_index_not_int.jsonl": ["13_turn_index_not_int.jsonl:1 › turns[0] › turn_index:"],
    "14_unknown_mode.jsonl": ["14_unknown_mode.jsonl:1 › handoffs[0] › mode:", "'transfer'"],
    "15_context_not_object.jsonl": ["15_context_not_object.jsonl:1 › handoffs[0] › context_passed:"],
    "16_unknown_field.jsonl": ["16_unknown_field.jsonl:1 › turns[0] › speaker: unknown field"],
    "17_missing_conversation_id.jsonl": ["17_missing_conversation_id.jsonl:1 › conversation_id: field required"],
    "18_turns_not_list.jsonl": ["18_turns_not_list.jsonl:1 › turns:"],
    "19_blank_lines_only.jsonl": ["19_blank_lines_only.jsonl: file is empty"],
    "20_user_message_field.jsonl": ["20_user_message_field.jsonl:1 › user_messages[0] › content: field required"],
}


def test_corpus_is_complete():
    assert sorted(p.name for p in CORPUS.iterdir()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 15


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_file_exits_2_with_location(name, monkeypatch):
    monkeypatch.chdir(CORPUS)
    result = CliRunner().invoke(cli, ["validate", name])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for needle in EXPECTED[name]:
        assert needle in result.output, f"{needle!r} not in:\n{result.output}"


def test_valid_file_prints_one_summary_line(tmp_path, monkeypatch):
    from factories import make_trace
    from maev_kit import save_traces
    save_traces([make_trace()], tmp_path / "ok.jsonl")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "ok.jsonl"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "ok.jsonl: valid (1 traces)"


def test_console_script_exit_code_and_no_traceback(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"{nope\n")
    proc = subprocess.run([sys.executable, "-m", "maev_kit.cli", "validate", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "bad.jsonl:1: not valid JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["validate", "nowhere.jsonl"])
    assert result.exit_code == 2 and "nowhere.jsonl: no such file or folder" in result.output
