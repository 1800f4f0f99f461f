"""What `maev score --out/--ledger` and `maev sample` say they wrote is what is on disk."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from cli_helpers import run_cli

TRACES = "tests/data/tau_bench_airline_subset.jsonl"


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_score_says_the_rows_it_wrote(tmp_path, suffix, capsys):
    out, ledger = tmp_path / f"scores{suffix}", tmp_path / f"ledger{suffix}"
    code, output, err = run_cli(["score", TRACES, "--judge", "heuristic", "--out", str(out),
                                 "--ledger", str(ledger)], capsys)
    assert code == 0, err
    read = {".csv": pd.read_csv, ".parquet": pd.read_parquet,
            ".jsonl": lambda p: pd.read_json(p, lines=True)}[suffix]
    n_out, n_ledger = len(read(out)), len(read(ledger))
    assert n_ledger > n_out > 0
    assert f"written: {out} ({n_out} conversations)" in output
    assert f"written: {ledger} ({n_ledger} verdicts" in output


def test_sample_says_the_items_it_wrote(tmp_path, capsys):
    out = tmp_path / "label_sample.json"
    code, output, err = run_cli(["sample", TRACES, "--n", "7", "--out", str(out)], capsys)
    assert code == 0, err
    on_disk = json.loads(out.read_text())
    n = len(on_disk["item_ids"])
    assert n == 7 and f"({n} items)" in output
    assert re.search(rf"drew {n} of \d+ items", output)
