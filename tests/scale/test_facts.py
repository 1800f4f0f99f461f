"""evaluate_dataset(facts=...) and `maev score --engine ray --facts`: the same key facts, ledger
(``fact_source`` included) and ``provenance["facts"]`` as evaluate, block by block."""

from __future__ import annotations

import dataclasses
import warnings

import pandas.testing as pdt
import pytest

from maev_kit import evaluate
from maev_kit.errors import InputError

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _same(a, b):
    pdt.assert_frame_equal(a.per_conversation, b.per_conversation)
    pdt.assert_frame_equal(a.ledger, b.ledger)
    pdt.assert_frame_equal(a.aggregates, b.aggregates)
    pdt.assert_frame_equal(a.pair_stats, b.pair_stats)
    assert a.judge_errors == b.judge_errors and a.not_applicable == b.not_applicable
    assert a.provenance["facts"] == b.provenance["facts"]
    assert list(a.provenance["facts"]["by_source"]) == list(b.provenance["facts"]["by_source"])


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """support_desk as two Parquet shards (pieces shipped their own facts) and a JSONL shard
    (given the shared ones); expectations with the key facts of every third conversation
    dropped, so "auto" mixes the expectations' facts with proposed ones."""
    from maev_kit.datasets import load_labeled_set
    from maev_kit.expectations import save_expectations
    from maev_kit.traces import save_traces

    d = tmp_path_factory.mktemp("facts")
    ls = load_labeled_set("support_desk")
    traces = ls.traces
    (d / "shards").mkdir()
    save_traces(traces[:30], d / "shards" / "a.parquet")
    save_traces(traces[30:60], d / "shards" / "b.parquet")
    save_traces(traces[60:], d / "shards" / "c.jsonl")
    exps = [dataclasses.replace(e, key_facts=[]) if i % 3 == 0 else e
            for i, e in enumerate(ls.expectations[t.conversation_id] for t in traces)]
    save_expectations(exps, d / "expectations.jsonl")
    return d, traces


def test_facts_file_equals_evaluate_ledger_included(ray_cluster, shards, tmp_path):
    from maev_kit.facts import propose_facts, save_facts
    from maev_kit.scale import evaluate_dataset

    d, traces = shards
    facts = [dataclasses.replace(f, reviewed=i % 4 == 0)
             for i, f in enumerate(propose_facts(traces, method=["context", "offline"]))]
    save_facts(tmp_path / "facts.jsonl", facts)
    want = evaluate(traces, judge="heuristic", expectations=d / "expectations.jsonl",
                    facts=str(tmp_path / "facts.jsonl"), cache=False, progress=False)
    got = evaluate_dataset(str(d / "shards"), judge="heuristic", batch_size=8,
                           expectations=d / "expectations.jsonl",
                           facts=str(tmp_path / "facts.jsonl"), cache=False,
                           output_dir=tmp_path / "out")
    _same(got, want)
    assert got.provenance["failed_shards"] == []
    sources = set(got.ledger["fact_source"])
    assert {"reviewed", "context", "offline"} <= sources and "expectations" not in sources
    assert got.provenance["facts"]["mode"] == "facts.jsonl"


def test_auto_and_proposers_equal_evaluate(ray_cluster, shards, tmp_path):
    from maev_kit.scale import evaluate_dataset

    d, traces = shards
    for facts in ("auto", "offline"):
        with warnings.catch_warnings(record=True) as want_w:
            warnings.simplefilter("always")
            want = evaluate(traces, judge="heuristic", expectations=d / "expectations.jsonl",
                            facts=facts, cache=False, progress=False)
        with warnings.catch_warnings(record=True) as got_w:
            warnings.simplefilter("always")
            got = evaluate_dataset(str(d / "shards"), judge="heuristic", batch_size=8,
                                   expectations=d / "expectations.jsonl", facts=facts,
                                   cache=False, output_dir=tmp_path / facts)
        _same(got, want)
        notes = [str(w.message) for w in want_w if "no key fact" in str(w.message)]
        got_notes = [str(w.message) for w in got_w if "no key fact" in str(w.message)]
        assert len(got_notes) == len(notes)  # one warning when evaluate gives one
        if facts == "auto":
            want_auto = want
    # "auto" (the default) keeps the expectations' facts where there are some, proposes the
    # rest; a rerun resumes: everything read back from the parts (facts counts included)
    auto = evaluate_dataset(str(d / "shards"), judge="heuristic", batch_size=8,
                            expectations=d / "expectations.jsonl", cache=False,
                            output_dir=tmp_path / "auto")
    assert auto.judge["stats"] == {}  # nothing judged again
    _same(auto, want_auto)
    assert {"expectations", "context"} <= set(auto.ledger["fact_source"])
    assert auto.provenance["facts"]["mode"] == "auto"


def test_given_facts_that_do_not_fit_name_file_line_and_field(ray_cluster, shards, tmp_path):
    from maev_kit.facts import propose_facts, save_facts
    from maev_kit.scale import evaluate_dataset

    d, traces = shards
    facts = list(propose_facts(traces[:3], method="context"))
    bad = [*facts[:2], dataclasses.replace(facts[2], handoff_index=9)]
    save_facts(tmp_path / "bad.jsonl", bad)
    with pytest.raises(InputError, match=r"bad.jsonl:3 › handoff_index: handoff 9 does not"):
        evaluate_dataset(str(d / "shards"), judge="heuristic", facts=str(tmp_path / "bad.jsonl"),
                         cache=False, output_dir=tmp_path / "o1")
    stray = [*facts[:2], dataclasses.replace(facts[2], conversation_id="nobody")]
    save_facts(tmp_path / "stray.jsonl", stray)
    with pytest.raises(InputError, match=r"stray.jsonl:3 › conversation_id: 'nobody' is not"):
        evaluate_dataset(str(d / "shards"), judge="heuristic",
                         facts=str(tmp_path / "stray.jsonl"), cache=False,
                         output_dir=tmp_path / "o2")
    with pytest.raises(InputError, match="neither a mode nor an existing file; did you mean "
                                         "'offline'"):
        evaluate_dataset(str(d / "shards"), judge="heuristic", facts="ofline")
    # a resume with other facts is another run
    good = tmp_path / "good.jsonl"
    save_facts(good, facts)
    evaluate_dataset(str(d / "shards"), judge="heuristic", facts=str(good), cache=False,
                     output_dir=tmp_path / "o3")
    with pytest.raises(InputError, match="different run.*facts"):
        evaluate_dataset(str(d / "shards"), judge="heuristic", facts="offline", cache=False,
                         output_dir=tmp_path / "o3")


def test_cli_ray_facts_file_writes_evaluates_ledger(ray_cluster, shards, tmp_path, capsys):
    import pandas as pd

    from cli_helpers import run_cli
    from maev_kit.facts import propose_facts, save_facts
    from maev_kit.traces import save_traces

    d, traces = shards
    save_traces(traces, tmp_path / "all.jsonl")
    save_facts(tmp_path / "facts.jsonl", propose_facts(traces, method="offline"))
    code, local, err = run_cli(["score", str(tmp_path / "all.jsonl"), "--facts",
                                str(tmp_path / "facts.jsonl"), "--no-progress", "--no-cache",
                                "--ledger", str(tmp_path / "local.csv")], capsys)
    assert code == 0, err
    code, ray, err = run_cli(["score", str(d / "shards"), "--engine", "ray", "--facts",
                              str(tmp_path / "facts.jsonl"), "--no-progress", "--no-cache",
                              "--ledger", str(tmp_path / "ray.csv"),
                              "--output-dir", str(tmp_path / "o")], capsys)
    assert code == 0, err
    pdt.assert_frame_equal(pd.read_csv(tmp_path / "ray.csv"), pd.read_csv(tmp_path / "local.csv"))
    line = next(x for x in local.splitlines() if x.startswith("facts ("))
    assert line.startswith("facts (facts.jsonl): ") and line in ray.splitlines()
    code, out, err = run_cli(["score", str(d / "shards"), "--engine", "ray", "--facts", "ofline",
                              "--no-progress"], capsys)
    assert code == 2 and "did you mean 'offline'" in err and len(err.strip().splitlines()) == 1
    code, out, err = run_cli(["score", str(d / "shards"), "--engine", "ray", "--format", "otel",
                              "--no-progress"], capsys)
    assert code == 2 and "--format" in err


def _answer(body):
    """The fake model: a fact extraction prompt answered by the offline extractor, a
    retention prompt by the reference heuristic."""
    from maev_kit.facts._llm import answer_extraction_prompt
    from maev_kit.judges import answer_retention_prompt

    messages = list(body.get("messages") or [])
    if "You propose the key facts" in str(messages[0].get("content")):
        return answer_extraction_prompt(messages)
    return answer_retention_prompt(messages)


def test_a_model_judge_and_llm_facts_over_http_equal_evaluate(ray_cluster, shards, tmp_path):
    """The llm proposer's and the judge's requests, sent from the Ray workers through litellm
    over HTTP to the kit's fake server: the same facts, verdicts and numbers as evaluate, each
    request sent once per run."""
    from maev_kit.backends import LiteLLMBackend
    from maev_kit.scale import evaluate_dataset
    from maev_kit.testing import FakeOpenAIServer

    d, traces = shards
    with FakeOpenAIServer(responder=_answer) as srv:
        backend = LiteLLMBackend("openai/judge", api_base=srv.base_url, api_key="sk-test")
        kw = {"judge": "openai/judge", "backend": backend, "facts": "llm", "cache": False,
              "expectations": d / "expectations.jsonl"}
        want = evaluate(traces, progress=False, **kw)
        local = len(srv.requests)
        got = evaluate_dataset(str(d / "shards"), batch_size=8, output_dir=tmp_path / "o", **kw)
        assert len(srv.requests) == 2 * local
    _same(got, want)
    assert set(got.ledger["fact_source"]) == {"llm:openai/judge"}
    assert got.judge_errors.failed == 0 and {"retained", "lost"} <= set(got.ledger["label"])
    assert got.provenance["facts"]["mode"] == "llm"
