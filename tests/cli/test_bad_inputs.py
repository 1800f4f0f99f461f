"""Every bad input to every `maev` command: exit 2, one readable line, no traceback, no file
touched.

Each row runs the CLI in-process through ``maev_kit.cli.main`` (a few also through the real
console script) inside a folder of prepared inputs, and checks:

- exit code 2;
- stderr is exactly one line naming what is wrong (``validate`` and multi-problem reports may
  print several lines, each located by the path the user gave);
- no "Traceback" anywhere;
- no file changed, appeared or vanished, in the working folder or the bundled labeled set.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli


REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "labeled_sets" / "support_desk"
MAEV = Path(sys.executable).parent / "maev"

TRACE = {"conversation_id": "c-1",
         "turns": [{"agent_id": "triage", "agent_role": "router", "message": "hi",
                    "turn_index": 0}],
         "handoffs": [], "user_messages": [], "metadata": {}}
CARD = {"judge_name": "heuristic", "judge_version": "1", "kappa": 0.7}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of good and bad inputs the rows point at (relative paths from inside it)."""
    w = tmp_path_factory.mktemp("bad_inputs")
    shutil.copytree(BUNDLED, w / "set")
    (w / "adir").mkdir()
    (w / "traces.jsonl").write_text(json.dumps(TRACE) + "\n")
    (w / "deep.jsonl").write_text("[" * 100_000 + "\n")
    (w / "deep_obj.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    (w / "binary.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary \x00" * 20)
    (w / "empty.jsonl").write_text("")
    (w / "array.jsonl").write_text("[1, 2, 3]\n")
    (w / "missing_field.jsonl").write_text(json.dumps({"turns": []}) + "\n")
    (w / "two_problems.jsonl").write_text('{"turns": []}\nnot json\n')
    (w / "long.jsonl").write_bytes(b'{"conversation_id": "' + b"a" * (16 * 1024 * 1024 + 10)
                                   + b'", "turns": []}\n')
    (w / "obj.json").write_text(json.dumps({"hello": "world"}))
    (w / "cards.jsonl").write_text(json.dumps(CARD) + "\n" + json.dumps(CARD) + "\n")
    (w / "card_list.json").write_text(json.dumps([CARD]))
    (w / "chat.json").write_text(json.dumps([{"role": "user", "content": "hi"},
                                             {"role": "assistant", "name": "a", "content": "yo"}]))
    (w / "run_bad_columns.csv").write_text("id,verdict\nx,lost\n")
    (w / "run.xlsx").write_bytes(b"PK\x03\x04 not really excel")
    (w / "existing.csv").write_text("keep,me\n1,2\n")
    (w / "empty_set").mkdir()
    from maev_kit.calibration import calibrate
    from maev_kit.datasets import load_labeled_set

    learned = calibrate(load_labeled_set(w / "set"), judges=["tfidf-logreg"], progress=False)
    learned.card("tfidf-logreg").save(w / "learned_card.json")  # fit on the dev split
    bad_manifest = w / "bad_manifest_set"
    shutil.copytree(BUNDLED, bad_manifest)
    (bad_manifest / "manifest.json").write_text("[" * 100_000)
    return w


def _checksums(*roots: Path) -> dict[str, str]:
    out = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# (args, a piece of text the one line must contain)
ROWS: list[tuple[list[str], str]] = [
    # validate
    (["validate", "deep.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["validate", "binary.bin"], "binary.bin: not UTF-8"),  # as import and score say
    (["validate", "no_such.jsonl"], "no_such.jsonl: no such file or folder"),
    (["validate", "empty.jsonl"], "empty.jsonl: file is empty"),
    (["validate", "array.jsonl"], "array.jsonl:1: expected a JSON object, got an array"),
    (["validate", "missing_field.jsonl"], "missing_field.jsonl:1 › conversation_id"),
    (["validate", "two_problems.jsonl"], "two_problems.jsonl:2: not valid JSON"),
    (["validate", "long.jsonl"], "long.jsonl:1: line too long"),
    (["validate", "empty_set"], "empty_set/manifest.json: missing"),
    (["validate", "bad_manifest_set"], "bad_manifest_set/manifest.json: JSON nesting too deep"),
    (["validate", "--bogus", "traces.jsonl"], "No such option"),
    (["validate"], "Missing argument"),
    # import
    (["import", "chat", "deep.jsonl", "-o", "out.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["import", "auto", "deep_obj.json", "-o", "out.jsonl"], "deep_obj.json:1: JSON nesting"),
    (["import", "auto", "adir", "-o", "out.jsonl"], "'adir' is a directory"),
    (["import", "auto", "binary.bin", "-o", "out.jsonl"], "binary.bin: not UTF-8"),
    (["import", "otle", "chat.json", "-o", "out.jsonl"], "did you mean 'otel'"),
    (["import", "chat", "chat.json", "-o", "adir"], "'adir' is a directory"),
    (["import", "chat", "chat.json", "-o", "existing.csv/out.jsonl"], "existing.csv"),
    (["import", "chat", "chat.json", "-o", "chat.json"], "must not be the input file"),
    (["import", "chat", "no_such.json", "-o", "out.jsonl"], "no_such.json"),
    (["import", "chat", "obj.json", "-o", "out.jsonl"], "cannot import obj.json"),
    (["import", "chat", "chat.json"], "Missing option '-o'"),
    # score
    (["score", "deep.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["score", "binary.bin"], "binary.bin: not UTF-8"),
    (["score", "no_such_set"], "no_such_set: no such file or folder"),
    (["score", "set", "--judge", "heuristc"], "did you mean 'heuristic'"),
    (["score", "set", "--out", "scores.xlsx"], "unknown output type '.xlsx'"),
    (["score", "set", "--out", "adir"], "--out adir: is a folder"),
    (["score", "set", "--out", "existing.csv/scores.csv"], "existing.csv is a file"),
    (["score", "set", "--ledger", "adir"], "--ledger adir: is a folder"),
    (["score", "set", "--out", "a.csv", "--ledger", "a.csv"], "same file"),
    (["score", "set", "--judge-card", "binary.bin"], "binary.bin"),
    (["score", "set", "--judge-card", "cards.jsonl"], "cards.jsonl:2"),
    (["score", "set", "--judge-card", "obj.json"], "obj.json › judge_name"),
    (["score", "set", "--judge-card", "card_list.json"], "card_list.json"),
    (["score", "set", "--judge-card", "deep_obj.json"], "deep_obj.json"),
    (["score", "set", "--judge-card", "adir"], "--judge-card adir: is a folder"),
    (["score", "set", "--judge-card", "no_card.json"], "--judge-card no_card.json: no such"),
    (["score", "set", "--judge-card", "learned_card.json", "--no-progress"],
     "tfidf-logreg was fit on"),  # a whole set scored by a judge fit on its dev split
    (["score", "set", "--split", "tset"], "no such split; available: dev, test"),
    (["score", "traces.jsonl", "--split", "test"], "split"),
    (["score", "set", "--max-judge-errors", "2"], "--max-judge-errors"),
    (["score", "set", "--max-concurrency", "0"], "--max-concurrency"),
    (["score", "set", "--judge", "gpt-4o-mini", "--prompt", "v9"], "prompt 'v9'"),
    (["score", "set", "--api-base", "http://127.0.0.1:9/v1"], "--api-base only applies"),
    (["score", "set", "--judge", ""], "--judge is empty"),
    # report
    (["report", "set", "--out", "adir"], "--out adir: is a folder"),
    (["report", "set", "--out", "report.csv"], "unknown output type '.csv'"),
    (["report", "set", "--out", "existing.csv/r.html"], "existing.csv is a file"),
    (["report", "no_such_set"], "no_such_set: no such file or folder"),
    (["report", "set", "--judge", "heurstic"], "did you mean 'heuristic'"),
    (["report", "empty_set"], "empty_set/manifest.json: missing"),
    # demo
    (["demo", "--out", "existing.csv"], "--out existing.csv: is a file, not a folder"),
    (["demo", "--set", "no_such_set"], "no_such_set: no such file or folder"),
    (["demo", "--set", "traces.jsonl"], "traces.jsonl: is a file"),
    (["demo", "--judge", "tfidf-logreg"], "tfidf-logreg learns"),
    (["demo", "--judge", "heurstc"], "did you mean 'heuristic'"),
    (["demo", "--prompt", "v2"], "--prompt only applies to a model judge"),
    # calibrate
    (["calibrate", "set", "--judge", "heuristic", "--split", "tset"],
     "no such split; available: dev, test"),
    (["calibrate", "set", "--judge", "heurstic"], "did you mean 'heuristic'"),
    (["calibrate", "set"], "Missing option '--judge'"),
    (["calibrate", "set", "--judge", "heuristic", "--card", "adir"], "--card adir: is a folder"),
    (["calibrate", "set", "--judge", "heuristic", "--out", "existing.csv"],
     "--out existing.csv: is a file"),
    (["calibrate", "set", "--judge", "gpt-4o-mini", "--prompt", "v9"], "prompt 'v9'"),
    (["calibrate", "traces.jsonl", "--judge", "heuristic"], "traces.jsonl: is a file"),
    (["calibrate", "set", "--judge", "heuristic", "--threshold", "5"], "--threshold"),
    (["calibrate", "bad_manifest_set", "--judge", "heuristic"], "manifest.json: JSON nesting"),
    # agree
    (["agree", "no_such.jsonl"], "no_such.jsonl: no such file"),
    (["agree", "adir"], "adir: is a folder"),
    (["agree", "binary.bin"], "binary.bin"),
    (["agree", "deep.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["agree", "set/labels.jsonl", "--judge-run", "no_run.csv"], "no_run.csv: no such file"),
    (["agree", "set/labels.jsonl", "--judge-run", "run_bad_columns.csv"], "missing column"),
    (["agree", "set/labels.jsonl", "--judge-run", "run.xlsx"], "unknown file type '.xlsx'"),
    (["agree", "set/labels.jsonl", "--judge-run", "deep.jsonl"], "deep.jsonl"),
    (["agree", "set/labels.jsonl", "--resamples", "0"], "--resamples"),
    # serve-fake
    (["serve-fake", "--port", "70000"], "--port"),
    (["serve-fake", "--latency", "-1"], "--latency"),
    (["serve-fake", "--bogus"], "No such option"),
    (["serve-fake", "--fail", "418"], "--fail"),
    # align
    (["align", "set", "--judge", "heuristic"], "runs offline"),
    (["align", "set", "--judge", "gpt-4o-mini", "--batch"], "--batch"),
    (["align", "set", "--judge", "gpt-4o-mini", "--prompt", "v9"], "prompt 'v9'"),
    (["align", "set", "--judge", "gpt-4o-mini", "--split", "x"], "No such option"),
    # init-set
    (["init-set", "no_such.jsonl", "--out", "newset"], "no_such.jsonl"),
    (["init-set", "adir", "--out", "newset"], "adir"),
    (["init-set", "traces.jsonl", "--out", "newset", "--facts", "ofline"], "did you mean"),
    # convert
    (["convert", "no_such.jsonl", "out.parquet"], "no_such.jsonl"),
    (["convert", "traces.jsonl", "out.xlsx"], "out.xlsx"),
    # batch mode needs a model judge and the cache
    (["score", "set", "--judge", "heuristic", "--batch"], "--batch"),
    (["score", "set", "--judge", "gpt-4o-mini", "--batch", "--no-cache"], "--no-cache"),
    # the group
    (["nosuch"], "No such command 'nosuch'"),
]


def _located(line: str, args: list[str]) -> bool:
    """A line of a multi-problem report names one of the paths given (``file:line``, or
    ``path: N problems`` for validate's summary line)."""
    return any(line.removeprefix("error: ").startswith(a.rstrip("/")) for a in args)


@pytest.mark.parametrize("args, expected", ROWS, ids=[" ".join(r[0])[:60] for r in ROWS])
def test_bad_input(args: list[str], expected: str, world: Path, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(world)
    before = _checksums(world, BUNDLED)
    code, _, err = run_cli(args, capsys)
    lines = err.splitlines()
    assert code == 2, err
    assert "Traceback" not in err
    assert expected in err, err
    if len(lines) > 1:  # several problems: each on its own line, located by the user's path
        assert all(_located(ln, args[1:]) for ln in lines), err
        assert len(lines) <= 5, err
    else:
        assert len(lines) == 1, err
    assert _checksums(world, BUNDLED) == before


def test_at_least_fifty_rows_across_every_command() -> None:
    assert len(ROWS) >= 50
    commands = {r[0][0] for r in ROWS}
    assert {"validate", "import", "score", "report", "demo", "calibrate", "agree",
            "serve-fake"} <= commands


@pytest.mark.parametrize("args, expected", [
    (["validate", "deep.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["import", "chat", "deep.jsonl", "-o", "out.jsonl"], "deep.jsonl:1: JSON nesting too deep"),
    (["score", "deep.jsonl", "--no-progress"], "deep.jsonl:1: JSON nesting too deep"),
    (["calibrate", "set", "--judge", "heurstic"], "did you mean 'heuristic'"),
    (["score", "set", "--judge-card", "cards.jsonl"], "cards.jsonl:2"),
    (["report", "set", "--out", "adir"], "--out adir: is a folder"),
])
def test_bad_input_through_the_console_script(args: list[str], expected: str,
                                              world: Path) -> None:
    """The installed `maev` script: no traceback reaches the terminal, exit 2."""
    before = _checksums(world, BUNDLED)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("MAEV_DEBUG", None)
    proc = subprocess.run([str(MAEV), *args], capture_output=True, text=True, cwd=world,
                          timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert expected in proc.stderr
    assert len(proc.stderr.splitlines()) == (2 if args[0] == "validate" else 1), proc.stderr
    assert _checksums(world, BUNDLED) == before


def test_an_unwritable_output_is_named_as_given_not_as_a_temporary_file(tmp_path: Path) -> None:
    from maev_kit._jsonl import write_jsonl

    target = tmp_path / "no_such_folder" / "out.jsonl"
    with pytest.raises(FileNotFoundError) as info:
        write_jsonl([{"a": 1}], target)
    assert info.value.filename == str(target)
    assert list(tmp_path.iterdir()) == []
