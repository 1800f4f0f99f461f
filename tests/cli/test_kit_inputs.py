"""Everything the kit writes, it reads (issue #35 D): Parquet traces wherever JSONL traces go,
and a saved result folder as input to ``report``, ``validate`` and ``score``.

Real files: ``maev convert`` writes the Parquet twin of a trace file; a result scored by a model
judge (the kit's fake OpenAI-compatible server, over HTTP through litellm) is saved, the server
stopped, and the report is written from the folder — any judge call would have failed.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from cli_helpers import run_cli, small_labeled_set

from maev_kit.testing import FakeOpenAIServer


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small set, its traces as JSONL and (via maev convert) Parquet."""
    w = tmp_path_factory.mktemp("kit_inputs")
    small_labeled_set(w, "set", per_split=4)
    shutil.copy(w / "set" / "traces.jsonl", w / "traces.jsonl")
    shutil.copy(w / "set" / "expectations.jsonl", w / "expectations.jsonl")
    from maev_kit.cli import main

    main(["convert", str(w / "traces.jsonl"), str(w / "traces.parquet")])
    assert (w / "traces.parquet").read_bytes()[:4] == b"PAR1"
    return w


def test_parquet_traces_score_like_their_jsonl_twin(files: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(files)
    got = {}
    for name in ("traces.jsonl", "traces.parquet"):
        code, out, err = run_cli(["score", name, "--expectations", "expectations.jsonl",
                                  "--json", "--no-progress"], capsys)
        assert code == 0, err
        got[name] = json.loads(out)
    assert got["traces.parquet"]["aggregates"] == got["traces.jsonl"]["aggregates"]
    assert any(row["metric"] == "composite" and row["n"] == 8
               for row in got["traces.parquet"]["aggregates"])


def test_parquet_traces_validate_report_init_set_and_sample(files: Path, capsys,
                                                            monkeypatch) -> None:
    monkeypatch.chdir(files)
    code, out, err = run_cli(["validate", "traces.parquet"], capsys)
    assert code == 0 and "traces.parquet: valid (8 traces)" in out + err, err
    code, out, err = run_cli(["report", "traces.parquet", "--no-progress", "--out", "p.html"],
                             capsys)
    assert code == 0, err
    assert "maev-kit" in (files / "p.html").read_text(encoding="utf-8")
    code, out, err = run_cli(["init-set", "traces.parquet", "--out", "from_parquet",
                              "--facts", "offline"], capsys)
    assert code == 0, err
    assert len((files / "from_parquet" / "traces.jsonl").read_text().splitlines()) == 8
    code, out, err = run_cli(["sample", "traces.parquet", "--expectations",
                              "expectations.jsonl", "--n", "5", "--out", "s.json"], capsys)
    assert code == 0, err
    assert len(json.loads((files / "s.json").read_text())["item_ids"]) == 5


def test_a_truncated_parquet_file_is_exit_2_naming_it(files: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(files)
    data = (files / "traces.parquet").read_bytes()
    (files / "cut.parquet").write_bytes(data[: len(data) // 2])
    for args in (["validate", "cut.parquet"], ["score", "cut.parquet", "--no-progress"]):
        code, out, err = run_cli(args, capsys)
        assert code == 2 and "cut.parquet: not a readable Parquet file" in err, err
        assert "Traceback" not in err


@pytest.fixture(scope="module")
def saved(files: Path) -> tuple[Path, int]:
    """A result scored by a model judge, saved; the server is stopped afterwards."""
    from maev_kit.backends import LiteLLMBackend
    from maev_kit.evaluation import evaluate

    with FakeOpenAIServer() as server, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend = LiteLLMBackend("openai/fake-judge", api_base=server.base_url, api_key="x")
        result = evaluate(files / "set", judge="openai/fake-judge", backend=backend,
                          progress=False, cache=False, n_resamples=200)
        calls = len(server.requests)
    assert calls > 0 and result.judge["model"] == "openai/fake-judge"
    return result.save(files / "result"), calls


def test_a_saved_result_becomes_a_report_with_no_judge_call(saved, files, capsys,
                                                            monkeypatch) -> None:
    folder, _ = saved
    monkeypatch.chdir(files)
    code, out, err = run_cli(["report", str(folder), "--out", "from_result.html"], capsys)
    assert code == 0, err  # the server is gone: a judge call would have failed
    html = (files / "from_result.html").read_text(encoding="utf-8")
    assert "openai/fake-judge" in html and "nothing re-run" in out


def test_a_saved_result_validates_and_prints_its_summary(saved, files, capsys,
                                                         monkeypatch) -> None:
    folder, _ = saved
    monkeypatch.chdir(files)
    code, out, err = run_cli(["validate", str(folder)], capsys)
    assert code == 0 and f"{folder}: valid (8 conversations" in out + err, err
    code, out, err = run_cli(["score", str(folder), "--json", "--out", "again.csv"], capsys)
    assert code == 0, err
    assert json.loads(out)["judge"]["model"] == "openai/fake-judge"
    assert len((files / "again.csv").read_text().splitlines()) == 9
    code, out, err = run_cli(["score", str(folder), "--judge", "heuristic"], capsys)
    assert code == 2 and "is a saved result" in err


def test_a_tampered_result_table_is_exit_2_naming_it(saved, files, capsys,
                                                     monkeypatch) -> None:
    folder, _ = saved
    monkeypatch.chdir(files)
    bad = shutil.copytree(folder, files / "tampered")
    table = bad / "aggregates.parquet"
    table.write_bytes(table.read_bytes()[:-40])
    for args in (["validate", "tampered"], ["report", "tampered", "--out", "t.html"],
                 ["score", "tampered"]):
        code, out, err = run_cli(args, capsys)
        assert code == 2, err
        assert "tables.aggregates.sha256: aggregates.parquet does not match" in err, err
    assert not (files / "t.html").exists()
