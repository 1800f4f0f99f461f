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
    assert a.routing == b.routing
    if a.routing or b.routing:
        pdt.assert_frame_equal(a.routing_confusion, b.routing_confusion)


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
    """The expectations as a file, shuffled, some missing, some of no conversation: each
    piece is shipped its own lines, and the numbers are evaluate's."""
    import random

    from maev_kit.expectations import ConversationExpectations, save_expectations
    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    exps = bench.write_shards(tmp_path / "in", 10_000, 2_500, seed=3)
    traces, _ = bench.make_corpus(10_000, seed=3)
    exps = [e for i, e in enumerate(exps) if i % 50] + [ConversationExpectations("elsewhere")]
    random.Random(2).shuffle(exps)
    save_expectations(exps, tmp_path / "expectations.jsonl")
    want = evaluate(traces, judge=None, expectations=tmp_path / "expectations.jsonl",
                    contracts=bench.CONTRACTS, progress=False, n_resamples=300)
    got = evaluate_dataset(str(tmp_path / "in" / "parquet" / "*.parquet"), judge=None,
                           expectations=tmp_path / "expectations.jsonl",
                           contracts=bench.CONTRACTS, n_resamples=300,
                           batch_size=2_500, output_dir=tmp_path / "out")
    _same(got, want)
    assert len(got.not_applicable["handoff"])
    assert got.not_applicable["retention"]["reason"] == "not judged (judge=None)"
    assert got.per_conversation["composite"].notna().sum() == 9_800
    assert len(want.violations) > 100


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
    # the caller's Dataset is left as it was (the module sets up only the Datasets it makes)
    assert dataset.context.op_resource_reservation_enabled is True


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
    import pyarrow.parquet as pq
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
    # what was written; a block judged when the run stopped but not written is judged again
    done_before = set(pq.read_table(out / "conversations", columns=["conversation_id"])
                      .column("conversation_id").to_pylist())
    assert done_before and done_before <= set(log.read_text().split())
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


def test_bad_expectation_lines_are_named_wherever_they_are_read(ray_cluster, tmp_path):
    """A bad line of a conversation in a shard is found by the worker that reads it; a bad
    line of no conversation (or with no id) by the driver, before the run; both by file, line
    and field, as evaluate names them."""
    from maev_kit.errors import LabelValidationError
    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    bench.write_shards(tmp_path, 300, 100, seed=1)
    _, exps = bench.make_corpus(300, seed=1)
    from maev_kit.expectations import load_expectations, save_expectations

    path = tmp_path / "expectations.jsonl"
    save_expectations(exps, path)
    lines = path.read_text().splitlines()
    good = list(lines)
    lines[150] = lines[150].replace('"expected_target"', '"expected_targt"', 1)
    path.write_text("\n".join(lines) + "\n")
    shards = str(tmp_path / "parquet" / "*.parquet")
    with pytest.raises(LabelValidationError) as want:  # what evaluate reports
        load_expectations(path)
    with pytest.raises(InputError) as got:
        evaluate_dataset(shards, judge=None, expectations=path, output_dir=tmp_path / "o1")
    assert [str(p) for p in want.value.problems] == [
        "expectations.jsonl:151 › handoffs[0] › expected_target: field required",
        "expectations.jsonl:151 › handoffs[0] › expected_targt: unknown field (remove it, or "
        "put it under `metadata`)"]
    assert str(got.value) == f"{want.value.problems[0]} (and 1 more)"
    # the driver's lines: not JSON; of no conversation
    good[20] = "oops"
    good.append('{"conversation_id": "nobody", "routing": "no"}')
    path.write_text("\n".join(good) + "\n")
    with pytest.raises(LabelValidationError) as got:
        evaluate_dataset(shards, judge=None, expectations=path, output_dir=tmp_path / "o2")
    assert [str(p) for p in got.value.problems] == [
        "expectations.jsonl:21: not valid JSON: Expecting value at column 1",
        "expectations.jsonl:301 › routing: Input should be a valid list"]
    assert not list((tmp_path / "o2" / "conversations").glob("part-*"))  # nothing ran


def test_resume_refuses_changed_expectations_or_contracts(ray_cluster, tmp_path):
    """The parts of a run scored against other expectations (a file) or other contracts are
    not mixed into a resume: the rerun is refused, naming what changed."""
    from maev_kit.expectations import save_expectations
    from maev_kit.scale import evaluate_dataset

    bench = _bench()
    exps = bench.write_shards(tmp_path, 300, 100, seed=2)
    path = tmp_path / "expectations.jsonl"
    save_expectations(exps, path)
    shards = str(tmp_path / "parquet")
    kw = {"judge": None, "expectations": path, "n_resamples": 50, "output_dir": tmp_path / "o"}
    first = evaluate_dataset(shards, contracts=bench.CONTRACTS, **kw)
    again = evaluate_dataset(shards, contracts=bench.CONTRACTS, **kw)  # the same: resumed
    _same(again, first)
    save_expectations(exps[:-1], path)
    with pytest.raises(InputError, match=r"different run \(changed: expectations\)"):
        evaluate_dataset(shards, contracts=bench.CONTRACTS, **kw)
    save_expectations(exps, path)
    with pytest.raises(InputError, match=r"different run \(changed: contracts\)"):
        evaluate_dataset(shards, contracts=bench.CONTRACTS[:1], **kw)
    # the same for the sources whose expectations file is loaded on the driver, not routed:
    # JSONL shards and a ray.data.Dataset
    import ray.data

    for name, source in [("jsonl", str(tmp_path / "jsonl")),
                         ("dataset", ray.data.read_parquet(shards))]:
        save_expectations(exps, path)
        kw["output_dir"] = tmp_path / f"o-{name}"
        first = evaluate_dataset(source, contracts=bench.CONTRACTS, **kw)
        _same(evaluate_dataset(source, contracts=bench.CONTRACTS, **kw), first)
        save_expectations(exps[1:], path)
        with pytest.raises(InputError, match=r"different run \(changed: expectations\)"):
            evaluate_dataset(source, contracts=bench.CONTRACTS, **kw)
    # expectations given as objects: compared by their content, not their order
    import copy

    kw.update(expectations=exps, output_dir=tmp_path / "o-objects")
    first = evaluate_dataset(shards, contracts=bench.CONTRACTS, **kw)
    _same(evaluate_dataset(shards, contracts=bench.CONTRACTS,
                           **{**kw, "expectations": exps[::-1]}), first)
    changed = copy.deepcopy(exps)
    changed[150].routing[0].correct_agent = "somebody-else"
    with pytest.raises(InputError, match=r"different run \(changed: expectations\)"):
        evaluate_dataset(shards, contracts=bench.CONTRACTS, **{**kw, "expectations": changed})


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


def test_a_line_changed_after_the_driver_routed_it_is_refused(tmp_path):
    """A worker builds only the records of its piece: a line that now names another
    conversation than when it was routed is a located problem, never another's expectations."""
    from types import SimpleNamespace

    from maev_kit.errors import LabelValidationError
    from maev_kit.expectations import (ConversationExpectations, route_expectation_lines,
                                       save_expectations)
    from maev_kit.scale._ray import _Job, _ScorePieces

    path = tmp_path / "e.jsonl"
    save_expectations([ConversationExpectations("c-1"), ConversationExpectations("c-2")], path)
    spans, _, _ = route_expectation_lines(path, {"c-1": 0, "c-2": 1})
    job = _Job(out=str(tmp_path), judge=None, backend=None, expectations=None, contracts=None,
               splits={}, done=None, retention=False, expectation_file=(str(path), "e.jsonl"))
    pieces = _ScorePieces(job, 10)
    own = pieces._own({"expectations": spans[0], "done": None, "facts": None},
                      [SimpleNamespace(conversation_id="c-1")])
    assert list(own.expectations) == ["c-1"]
    path.write_text(path.read_text().replace("c-1", "c-3"))  # same offsets
    with pytest.raises(LabelValidationError, match="e.jsonl:1 › conversation_id: 'c-3' is not "
                                                   "the id this line had"):
        pieces._own({"expectations": spans[0], "done": None, "facts": None},
                    [SimpleNamespace(conversation_id="c-1")])
    path.unlink()
    with pytest.raises(InputError, match="e.jsonl: cannot be read where the shards are scored"):
        pieces._own({"expectations": spans[0], "done": None, "facts": None}, [])



def test_the_datasets_a_run_makes_start_their_tasks_without_reservation(ray_cluster):
    """Ray Data's per-operator reservation held a run to one task until the first finished,
    then started each next piece from the driver's 0.1 s loop (~170 ms idle per piece per
    worker). The setting must be a real DataContext field: a renamed one would be set on the
    context silently, with no effect."""
    import dataclasses

    import ray.data

    from maev_kit.scale._plan import _scheduled

    assert "op_resource_reservation_enabled" in {
        f.name for f in dataclasses.fields(ray.data.DataContext)}
    dataset = _scheduled(ray.data.from_items([{"x": 1}]))
    assert dataset.context.op_resource_reservation_enabled is False
    assert ray.data.DataContext.get_current().op_resource_reservation_enabled is True
