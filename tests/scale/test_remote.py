"""Shards, the expectations file and the results on another filesystem, by URI: an S3 server
(moto's, on 127.0.0.1) read and written by pyarrow's own S3 client, from the driver and the
Ray workers."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import random

import pytest

pytest.importorskip("pyarrow")
moto_server = pytest.importorskip("moto.server")

from maev_kit import evaluate  # noqa: E402
from maev_kit.datasets import load_labeled_set  # noqa: E402
from maev_kit.errors import InputError  # noqa: E402
from maev_kit.expectations import save_expectations  # noqa: E402
from maev_kit.traces import save_traces  # noqa: E402

from .test_evaluate_dataset import _same  # noqa: E402

SECRET = "s3cr3t-of-the-test"


@pytest.fixture(scope="module")
def s3():
    """``uri(key)``: the URI of a key of a fresh bucket on a local S3 server, with the
    credentials in the URI (so the workers need no environment) and the endpoint as query."""
    import pyarrow.fs as pafs

    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # never ask for an instance role
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    query = f"?endpoint_override={host}:{port}&scheme=http&region=us-east-1"

    def uri(key: str = "") -> str:
        return f"s3://maev-test:{SECRET}@bucket/{key}{query}"

    fs, _ = pafs.FileSystem.from_uri(uri() + "&allow_bucket_creation=true")
    fs.create_dir("bucket")
    uri.fs = fs
    yield uri
    server.stop()


def _put(s3, local, key):
    import pyarrow.fs as pafs

    pafs.copy_files(str(local), f"bucket/{key}", destination_filesystem=s3.fs)


def _keys(s3, prefix):
    import pyarrow.fs as pafs

    return sorted(f.path for f in s3.fs.get_file_info(pafs.FileSelector(
        f"bucket/{prefix}", recursive=True, allow_not_found=True)) if f.type == pafs.FileType.File)


def test_shards_expectations_and_results_on_s3(ray_cluster, s3, tmp_path):
    """Parquet (two row groups) and JSONL shards and a shipped expectations file read from
    S3, the parts written there: evaluate's numbers; a corrupt shard is named by its URI
    without the key or the endpoint; a rerun resumes from the parts on S3."""
    from maev_kit.scale import evaluate_dataset
    from maev_kit.traces._parquet import save_parquet

    ls = load_labeled_set("support_desk")
    traces = ls.traces
    save_parquet(traces[:50], tmp_path / "a.parquet", row_group_size=20)
    save_traces(traces[50:], tmp_path / "b.jsonl")
    exps = list(ls.expectations.values())
    random.Random(4).shuffle(exps)  # not in shard order: each piece gets its own lines
    save_expectations(exps, tmp_path / "expectations.jsonl")
    (tmp_path / "c.parquet").write_bytes(b"PAR1 not really")
    for name in ("a.parquet", "b.jsonl", "c.parquet"):
        _put(s3, tmp_path / name, f"in/{name}")
    _put(s3, tmp_path / "expectations.jsonl", "expectations.jsonl")
    _put(s3, tmp_path / "a.parquet", "in/.hidden.parquet")  # a glob's * skips it, as locally

    want = evaluate(traces, judge=None, expectations=exps, progress=False, n_resamples=100)
    got = evaluate_dataset(s3("in/*"), judge=None, expectations=s3("expectations.jsonl"),
                           output_dir=s3("out"), batch_size=20, n_resamples=100)
    _same(got, want)
    [failed] = got.provenance["failed_shards"]
    assert failed.source == "s3://bucket/in/c.parquet"
    assert "not a readable Parquet" in failed.message
    assert got.provenance["output_dir"] == "s3://bucket/out"
    parts = _keys(s3, "out")
    assert "bucket/out/run.json" in parts
    # a.parquet in pieces of 20, 20 and 10 rows; b.jsonl whole, scored 20 then 15
    assert len([p for p in parts if p.startswith("bucket/out/conversations/part-")]) == 5
    shown = repr(got.provenance) + s3.fs.open_input_stream("bucket/out/run.json").read().decode()
    assert SECRET not in shown and "endpoint_override" not in shown

    again = evaluate_dataset(s3("in/*"), judge=None, expectations=s3("expectations.jsonl"),
                             output_dir=s3("out"), batch_size=20, n_resamples=100)
    _same(again, want)
    assert _keys(s3, "out") == parts  # every block was read back, none scored again


def test_expectation_lines_on_s3_go_to_their_pieces(ray_cluster, s3, tmp_path):
    """With Parquet shards the driver routes the file's lines and ships each piece its own
    (the workers need not see the driver's copy): evaluate's numbers; a bad line is named by
    the file and line by the worker that reads it."""
    from maev_kit.scale import evaluate_dataset
    from maev_kit.traces._parquet import save_parquet

    ls = load_labeled_set("support_desk")
    traces = ls.traces[:60]
    save_parquet(traces, tmp_path / "t.parquet", row_group_size=15)
    _put(s3, tmp_path / "t.parquet", "lines/t.parquet")
    exps = [ls.expectations[t.conversation_id] for t in traces if t.conversation_id in
            ls.expectations][::-1]
    save_expectations(exps, tmp_path / "exp.jsonl")
    _put(s3, tmp_path / "exp.jsonl", "lines/exp.jsonl")
    want = evaluate(traces, judge=None, expectations=exps, progress=False, n_resamples=100)
    got = evaluate_dataset(s3("lines/t.parquet"), judge=None, expectations=s3("lines/exp.jsonl"),
                           batch_size=15, n_resamples=100)
    _same(got, want)
    # no line for any piece: each gets none (the expectations of no conversation)
    save_expectations([dataclasses.replace(e, conversation_id=f"elsewhere-{i}")
                       for i, e in enumerate(exps)], tmp_path / "none.jsonl")
    _put(s3, tmp_path / "none.jsonl", "lines/none.jsonl")
    got = evaluate_dataset(s3("lines/t.parquet"), judge=None, expectations=s3("lines/none.jsonl"),
                           batch_size=15, n_resamples=100)
    _same(got, evaluate(traces, judge=None, progress=False, n_resamples=100))

    lines = (tmp_path / "exp.jsonl").read_text().splitlines()
    lines[7] = json.dumps({**json.loads(lines[7]), "handoffs": 3})
    (tmp_path / "exp.jsonl").write_text("\n".join(lines) + "\n")
    _put(s3, tmp_path / "exp.jsonl", "lines/exp.jsonl")
    with pytest.raises(InputError, match=r"exp\.jsonl:8 › handoffs") as e:
        evaluate_dataset(s3("lines/t.parquet"), judge=None,
                         expectations=s3("lines/exp.jsonl"), batch_size=15, n_resamples=50)
    assert SECRET not in str(e.value)


def test_uris_that_name_nothing_are_clear_errors_without_secrets(s3, tmp_path):
    from maev_kit.scale._fs import Folder, list_shards, local_file

    with pytest.raises(InputError,
                       match=r"s3://bucket/nothing/here/\*\.parquet: no trace file found"):
        list_shards(s3("nothing/here/*.parquet"))
    with pytest.raises(InputError, match=r"s3://bucket/nope\.jsonl: file not found"):
        with local_file(s3("nope.jsonl")):
            pass
    for name in ("manifest.json", "traces.jsonl"):  # a labeled set's folder is not shards
        (tmp_path / name).write_text("{}")
        _put(s3, tmp_path / name, f"set/{name}")
    with pytest.raises(InputError, match=r"^s3://bucket/set: a labeled set, which is read from "
                                         r"a folder on this machine"):
        list_shards(s3("set"))
    assert list_shards(s3("set/traces.jsonl")).paths == ["bucket/set/traces.jsonl"]
    with pytest.raises(InputError, match=r"^nope://…: not a filesystem pyarrow can open") as e:
        list_shards(f"nope://key:{SECRET}@somewhere/x?token={SECRET}")
    assert SECRET not in str(e.value)
    with pytest.raises(InputError) as e:
        Folder.of(f"nope://key:{SECRET}@somewhere/out")
    assert SECRET not in str(e.value)


def test_file_uris_and_globs_read_as_local_paths(tmp_path, monkeypatch):
    from maev_kit.scale._fs import Folder, list_shards

    monkeypatch.chdir(tmp_path)
    out = Folder.of("results/")  # named as given (reports show no machine path)
    assert str(out) == "results/" and out.path == str(tmp_path / "results")
    out.make("conversations")
    out.write_bytes(b"{}", "conversations", "part-1.parquet")
    assert out.parts("conversations") == [str(tmp_path / "results/conversations/part-1.parquet")]
    assert str(Folder.of(f"file://{tmp_path}/r")) == f"file://{tmp_path}/r"
    assert Folder.of(f"file://{tmp_path}/r").path == str(tmp_path / "r")

    for name in ("a.parquet", "b.jsonl", "c.txt", ".d.parquet"):
        (tmp_path / name).write_text("x")
    local = list_shards(str(tmp_path / "*.parquet"))
    assert local.filesystem is None and [os.path.basename(p) for p in local.paths] == [
        "a.parquet"]
    assert list_shards(f"file://{tmp_path}/*.parquet") == local
    assert [os.path.basename(p) for p in list_shards(f"file://{tmp_path}").paths] == [
        ".d.parquet", "a.parquet", "b.jsonl"]


def test_a_remote_glob_matches_as_a_local_one(s3, tmp_path):
    """``*`` stays within one part of the path; a hidden name needs a pattern with a dot;
    a folder lists its trace files."""
    from maev_kit.scale._fs import list_shards

    for key in ("g/x/a.parquet", "g/x/b.jsonl", "g/x/sub/c.parquet", "g/y/d.parquet",
                "g/x/.e.parquet", "g/x/f.txt"):
        (tmp_path / "f").write_text("x")
        _put(s3, tmp_path / "f", key)
        target = tmp_path / "local" / key
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("x")
    for pattern in ("g/x/*.parquet", "g/*/*.parquet", "g/x/*", "g/*/.*", "g/x/sub/*"):
        remote = list_shards(s3(pattern))
        local = list_shards(str(tmp_path / "local" / pattern))
        assert [p.removeprefix("bucket/") for p in remote.paths] == [
            os.path.relpath(p, tmp_path / "local") for p in local.paths], pattern
    assert list_shards(s3("g/x")).paths == ["bucket/g/x/.e.parquet", "bucket/g/x/a.parquet",
                                            "bucket/g/x/b.jsonl"]


def test_the_local_engine_names_a_uri_it_cannot_read(s3, capsys):
    from maev_kit.cli import main

    for args, shown in (([s3("in/*.parquet")], "s3://bucket/in/*.parquet"),
                        (["support_desk", "--expectations", s3("e.jsonl")], "s3://bucket/e.jsonl")):
        with pytest.raises(SystemExit) as e:
            main(["score", *args, "--judge", "none"])
        assert e.value.code == 2
        assert capsys.readouterr().err == (f"error: {shown}: a URI is read with --engine ray "
                                           "(pip install 'maev-kit[scale]'); the local engine "
                                           "reads files on this machine\n")
