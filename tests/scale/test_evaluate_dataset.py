"""evaluate_dataset on a local 2-CPU Ray gives exactly evaluate's numbers, resumes, survives
a killed worker and reports corrupt shards."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pandas.testing as pdt
import pytest

from maev_kit import evaluate
from maev_kit.errors import InputError

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_scale",
                                                  ROOT / "benchmarks" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _same(a, b):
    pdt.assert_frame_equal(a.per_conversation, b.per_conversation)
    pdt.assert_frame_equal(a.ledger, b.ledger)
    pdt.assert_frame_equal(a.aggregates, b.aggregates)
    pdt.assert_frame_equal(a.pair_stats, b.pair_stats)
    pdt.assert_frame_equal(a.handoff_matrix, b.handoff_matrix)
    assert a.judge_errors == b.judge_errors and a.not_applicable == b.not_applicable
    assert a.loops == b.loops and a.violations == b.violations
    assert {k: v for k, v in a.routing.items() if k != "confusion"} == \
        {k: v for k, v in b.routing.items() if k != "confusion"}
    if a.routing or b.routing:
        pdt.assert_frame_equal(a.routing["confusion"], b.routing["confusion"])


def test_support_desk_equals_evaluate(ray_cluster, tmp_path):
    from maev_kit.scale import evaluate_dataset

    want = evaluate("support_desk", judge="heuristic", cache=False, progress=False)
    got = evaluate_dataset("support_desk", judge="heuristic", cache=False, batch_size=16,
                           output_dir=tmp_path)
    _same(got, want)
    assert len(got.ledger) > 300 and got.judge["stats"]["items"] == len(want.ledger)
    assert len(list((tmp_path / "conversations").glob("part-*.parquet"))) >= 2
    # a rerun reads everything back, judges nothing
    again = evaluate_dataset("support_desk", judge="heuristic", cache=False, batch_size=16,
                             output_dir=tmp_path)
    _same(again, want)
    assert again.judge["stats"] == {}


def test_blocks_with_and_without_splits_equal_evaluate(ray_cluster, tmp_path):
    """Only the last conversations are in a split: the first blocks' split column is all
    null, the last ones' strings, and the frame is evaluate's."""
    import json
    import shutil

    from maev_kit.datasets import load_labeled_set
    from maev_kit.scale import evaluate_dataset

    folder = tmp_path / "set"
    shutil.copytree(load_labeled_set("support_desk").path, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    ids = [json.loads(line)["conversation_id"]
           for line in (folder / "traces.jsonl").read_text().splitlines() if line.strip()]
    manifest["splits"] = {"test": ids[-5:]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    want = evaluate(str(folder), judge=None, progress=False, n_resamples=100)
    got = evaluate_dataset(str(folder), judge=None, batch_size=8, n_resamples=100,
                           output_dir=tmp_path / "out")
    _same(got, want)
    assert got.per_conversation["split"].notna().sum() == 5


def test_10k_generated_shards_equal_evaluate(ray_cluster, tmp_path):
    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    exps = bench.write_shards(tmp_path / "in", 10_000, 2_500, seed=3)
    traces, _ = bench.make_corpus(10_000, seed=3)
    want = evaluate(traces, judge=None, expectations=exps, contracts=bench.CONTRACTS,
                    progress=False, n_resamples=300)
    got = evaluate_dataset(str(tmp_path / "in" / "parquet" / "*.parquet"), judge=None,
                           expectations=exps, contracts=bench.CONTRACTS, n_resamples=300,
                           batch_size=2_500, output_dir=tmp_path / "out")
    _same(got, want)
    assert got.not_applicable["retention"]["reason"] == "not judged (judge=None)"
    assert got.per_conversation["composite"].notna().all() and len(want.violations) > 100


def test_a_ray_dataset_equals_evaluate_in_conversation_id_order(ray_cluster, tmp_path):
    """A Dataset's rows have no order: results come by conversation id, and what is
    reported in order of first appearance (pair ties, n/a reasons, loops) follows that order
    whatever blocks the rows fall in."""
    import ray.data

    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    exps = bench.write_shards(tmp_path / "in", 1_200, 300, seed=5)
    traces, _ = bench.make_corpus(1_200, seed=5)
    # shuffled ids, so id order is not the files' order; some conversations without
    # expectations, so n/a reasons mix
    import random

    ids = [t.conversation_id for t in traces]
    random.Random(1).shuffle(ids)
    new_id = dict(zip([t.conversation_id for t in traces], ids))
    for t in traces:
        t.conversation_id = new_id[t.conversation_id]
    for e in exps:
        e.conversation_id = new_id[e.conversation_id]
    exps = [e for i, e in enumerate(exps) if i % 7]
    from maev_kit.traces import save_traces

    for k in range(4):
        save_traces(traces[k * 300:(k + 1) * 300], tmp_path / f"s{k}.parquet")
    want = evaluate(sorted(traces, key=lambda t: t.conversation_id), judge=None,
                    expectations=exps, contracts=bench.CONTRACTS, progress=False,
                    n_resamples=100)
    dataset = ray.data.read_parquet([str(tmp_path / f"s{k}.parquet") for k in range(4)])
    got = evaluate_dataset(dataset, judge=None, expectations=exps, contracts=bench.CONTRACTS,
                           n_resamples=100, batch_size=97, output_dir=tmp_path / "out")
    _same(got, want)
    assert len(got.not_applicable["handoff"]) and len(got.loops) > 10


def test_worker_killed_mid_run_loses_nothing(ray_cluster, tmp_path):
    """The worker scoring the marker block dies (os._exit); Ray reruns the task; every
    conversation is scored exactly once, as evaluate scores it."""
    from ray import cloudpickle

    from maev_kit.scale import evaluate_dataset

    sys.path.insert(0, str(Path(__file__).parent))
    import _faulty

    cloudpickle.register_pickle_by_value(_faulty)
    flag = tmp_path / "killed"
    judge = _faulty.ExitOnceJudge("sd-040", str(flag))
    got = evaluate_dataset("support_desk", judge=judge, batch_size=10, output_dir=tmp_path)
    assert flag.exists()  # the worker did die
    _same(got, evaluate("support_desk", judge="heuristic", cache=False, progress=False))


def test_resume_after_a_failed_run_scores_only_what_is_missing(ray_cluster, tmp_path):
    from ray import cloudpickle

    from maev_kit.scale import evaluate_dataset

    sys.path.insert(0, str(Path(__file__).parent))
    import _faulty

    cloudpickle.register_pickle_by_value(_faulty)
    log = tmp_path / "judged.txt"
    out = tmp_path / "out"
    with pytest.raises(Exception, match="preempted"):
        evaluate_dataset("support_desk", judge=_faulty.FailOnJudge("sd-040", str(log)),
                         batch_size=10, output_dir=out)
    first = {p.name: p.read_bytes() for p in (out / "conversations").glob("part-*.parquet")}
    assert first, "no block finished before the failure"
    done_before = set(log.read_text().split())
    log.write_text("")
    got = evaluate_dataset("support_desk", judge=_faulty.FailOnJudge("nobody", str(log)),
                           batch_size=10, output_dir=out)
    # finished blocks kept as they were, and their conversations not judged again
    assert all((out / "conversations" / n).read_bytes() == b for n, b in first.items())
    assert not done_before & set(log.read_text().split())
    _same(got, evaluate("support_desk", judge="heuristic", cache=False, progress=False))


def test_corrupt_shard_is_listed_and_the_rest_scored(ray_cluster, tmp_path):
    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    exps = bench.write_shards(tmp_path, 300, 100, seed=1)
    bad = tmp_path / "jsonl" / "shard-00001.jsonl"
    lines = bad.read_text().splitlines()
    lines[6] = lines[6].replace('"to_agent"', '"to_agnt"', 1)
    bad.write_text("\n".join(lines) + "\n")
    (tmp_path / "parquet" / "shard-00002.parquet").write_bytes(b"PAR1 not really")
    got = evaluate_dataset(str(tmp_path / "jsonl"), judge=None, expectations=exps)
    assert len(got.per_conversation) == 200
    failed = got.provenance["failed_shards"]
    assert [Path(f.source).name for f in failed] == ["shard-00001.jsonl"]
    assert "shard-00001.jsonl:7 › handoffs" in failed[0].message
    got = evaluate_dataset(str(tmp_path / "parquet" / "*.parquet"), judge=None,
                           expectations=exps)
    assert len(got.per_conversation) == 200
    [f] = got.provenance["failed_shards"]
    assert f.source.endswith("shard-00002.parquet") and "not a readable Parquet" in f.message


def test_resume_refuses_a_different_run(ray_cluster, tmp_path):
    from maev_kit.scale import evaluate_dataset

    evaluate_dataset("support_desk", judge=None, output_dir=tmp_path)
    with pytest.raises(InputError, match="different run.*judge"):
        evaluate_dataset("support_desk", judge="heuristic", output_dir=tmp_path)
    got = evaluate_dataset("support_desk", judge="heuristic", output_dir=tmp_path,
                           resume=False, cache=False)
    assert got.judge_errors.total > 300
    # a part without the block's summary (written by another version) is refused, by name
    import pyarrow.parquet as pq

    part = sorted((tmp_path / "conversations").glob("part-*.parquet"))[0]
    pq.write_table(pq.read_table(part).replace_schema_metadata(None), part)
    with pytest.raises(InputError, match=f"{part.name}: written by another version"):
        evaluate_dataset("support_desk", judge="heuristic", output_dir=tmp_path, cache=False)


def test_bad_arguments(ray_cluster):
    from maev_kit.scale import evaluate_dataset

    with pytest.raises(TypeError, match="n_resample"):
        evaluate_dataset("support_desk", n_resample=10)
    with pytest.raises(InputError, match="judge=None"):
        evaluate_dataset("support_desk", judge=None, not_applicable="article")
    with pytest.raises(InputError, match="no trace file"):
        evaluate_dataset("/nonexistent/*.parquet", judge=None)
