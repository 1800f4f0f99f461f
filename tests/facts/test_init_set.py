"""`maev init-set` / `create_labeled_set`: a labeled set from the user's own traces.

Every CLI run goes through ``maev_kit.cli.main`` in-process; the sets written are checked by
``maev validate``, loaded with ``load_labeled_set`` and scored with ``evaluate``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import math
from pathlib import Path

import pytest

from maev_kit import AgentTurn, Handoff, MultiAgentTrace, evaluate, load_labeled_set
from maev_kit.cli import main
from maev_kit.errors import InputError
from maev_kit.facts import create_labeled_set, load_facts, propose_facts, save_facts
from maev_kit.traces import load_traces, save_traces

SHARED_SAMPLE = (Path(__file__).resolve().parents[1] / "data" / "trace_samples"
                 / "openai_agents_trace.json")


def _conversation(i: int) -> MultiAgentTrace:
    return MultiAgentTrace(
        f"conv-{i:02d}",
        user_messages=[f"Hi, my account number is ACCT-{4400 + i} and I was charged $"
                       f"{10 + i}.00 twice.", "Also my email is dana@example.com"],
        turns=[AgentTurn("triage", "router", "Let me pass you to billing.", turn_index=1),
               AgentTurn("billing", "specialist", "I see the double charge.", turn_index=4),
               AgentTurn("billing", "specialist", "Passing you to tech for the app.",
                         turn_index=5),
               AgentTurn("tech", "", "The app is fixed.", turn_index=7)],
        handoffs=[Handoff("triage", "billing", "specialization", turn_index=2),
                  Handoff("billing", "tech", None, turn_index=6)],
    )


TRACES = [_conversation(i) for i in range(8)] + [
    MultiAgentTrace("no-handoff", user_messages=["ACCT-1 please"],
                    turns=[AgentTurn("triage", "router", "Done.", turn_index=1)])]


def run(*args: str) -> int:
    """``maev ARGS`` in-process; the exit code (0 when the command returns)."""
    try:
        main([str(a) for a in args])
    except SystemExit as e:
        return int(e.code or 0)
    return 0


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    p = tmp_path / "prod_traces.jsonl"
    save_traces(TRACES, p)
    return p


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.iterdir())}


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "Traceback" not in err
    return lines[0]


# ---- from a maev trace file ---------------------------------------------------------------

def test_from_trace_jsonl_writes_a_valid_set(trace_file, tmp_path, capsys):
    out = tmp_path / "my_set"
    assert run("init-set", trace_file, "--out", out) == 0
    text = capsys.readouterr().out
    for name in ("manifest.json", "traces.jsonl", "expectations.jsonl", "facts.jsonl",
                 "labels.jsonl", "README.md"):
        assert (out / name).is_file()
        assert f"  {name}  (" in text
    from maev_kit.facts._auto import auto_facts

    proposal, _ = auto_facts(TRACES)  # the default, as maev score's
    kinds = {f.kind for f in proposal}
    assert "read 9 conversations with 16 handoffs from prod_traces.jsonl" in text
    assert f"facts: {len(proposal)} key facts proposed by auto (context_passed" in text
    assert all(f"{k} {sum(f.kind == k for f in proposal)}" in text for k in kinds)
    assert "splits (seed 0): dev 4, test 5" in text
    assert "no fact proposed for 1 conversation" in text
    assert "no-handoff: no handoff" in text

    assert run("validate", out) == 0
    assert ": valid (9 traces, 8 expectations" in capsys.readouterr().out

    ls = load_labeled_set(out)
    m = ls.manifest
    assert (m.name, m.version) == ("my_set", "0.1.0")
    assert m.agents == {"triage": "router", "billing": "specialist", "tech": ""}
    assert m.labels == ["retained", "lost", "contradicted"]
    assert sorted(m.splits["dev"] + m.splits["test"]) == sorted(t.conversation_id
                                                               for t in TRACES)
    assert not set(m.splits["dev"]) & set(m.splits["test"])
    assert [t.conversation_id for t in ls.traces] == [t.conversation_id for t in TRACES]
    assert load_traces(out / "traces.jsonl") == ls.traces
    # the proposed facts are the key facts, one line per conversation that has any
    # (each judged at its handoff and every later one)
    assert {f"{f.conversation_id}/h{f.handoff_index}/{f.fact_id}" for f in proposal} <= {
        i.item_id for i in ls.items}
    assert {(i.conversation_id, i.fact_key) for i in ls.items} == {
        (f.conversation_id, f.fact_id) for f in proposal}
    lines = (out / "expectations.jsonl").read_text().splitlines()
    assert len(lines) == 8 and "no-handoff" not in (out / "expectations.jsonl").read_text()
    for rec in map(json.loads, lines):
        assert rec["handoffs"] == [] and rec["routing"] == []
        assert set(rec["metadata"]["fact_proposers"].values()) == {"offline"}
    assert load_facts(out / "facts.jsonl") == list(proposal)
    assert (out / "labels.jsonl").read_bytes() == b"" and ls.label_records == []

    readme = (out / "README.md").read_text()
    assert "`prod_traces.jsonl`" in readme and str(tmp_path) not in readme
    assert "else the offline proposer), not reviewed" in readme
    assert "no-handoff: no handoff" in readme  # the notes, in a file validation ignores
    assert "Labeler" in readme and "a person" in readme.lower()
    order = [readme.index(s) for s in ("maev sample my_set", 'Labeler("my_set"',
                                       "maev calibrate my_set", "maev score my_set",
                                       "maev check", "maev report my_set")]
    assert order == sorted(order)
    assert str(tmp_path) not in (out / "manifest.json").read_text()


def test_evaluate_scores_retention_and_leaves_handoff_and_routing_na(trace_file, tmp_path):
    out = tmp_path / "s"
    create_labeled_set(trace_file, out)
    with pytest.warns(UserWarning, match="n/a"):
        result = evaluate(out, judge="heuristic", progress=False)
    summary = result.summary()
    assert not math.isnan(summary.loc["information_retention", "mean"])
    assert summary.loc["information_retention", "n"] == 8
    for metric in ("handoff_quality", "routing_quality"):
        assert math.isnan(summary.loc[metric, "mean"])
    assert result.not_applicable["handoff"]["conversations"] == len(TRACES)
    assert result.not_applicable["routing"]["conversations"] == len(TRACES)
    assert result.not_applicable["retention"]["conversations"] == 1  # the one with no handoff
    assert result.per_conversation["composite_components"].iloc[0] == "retention"
    assert result.judge_errors.total == len(load_labeled_set(out).items) > 0


# ---- from a framework export --------------------------------------------------------------

LANGGRAPH = {"messages": [
    {"type": "human", "content": "My order ORD-58213 never arrived, I paid $120.00."},
    {"type": "ai", "name": "supervisor", "content": "",
     "tool_calls": [{"name": "transfer_to_shipping", "args": {}, "id": "t1"}]},
    {"type": "tool", "name": "transfer_to_shipping", "content": "ok", "tool_call_id": "t1"},
    {"type": "ai", "name": "shipping", "content": "I will trace the parcel."},
    {"type": "ai", "name": "shipping", "content": "Transferring back to supervisor",
     "tool_calls": [{"name": "transfer_back_to_supervisor", "args": {}, "id": "t2"}]},
    {"type": "tool", "name": "transfer_back_to_supervisor", "content": "ok",
     "tool_call_id": "t2"},
    {"type": "ai", "name": "supervisor", "content": "Done."}]}


def test_from_a_framework_export(tmp_path, capsys):
    export = tmp_path / "langgraph_run.json"
    export.write_text(json.dumps(LANGGRAPH))
    out = tmp_path / "lg"
    assert run("init-set", export, "--out", out, "--name", "shop") == 0
    cap = capsys.readouterr()
    assert "from langgraph_run.json (langgraph export;" in cap.out
    head, *warnings = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert head == "Notes:"  # one block, after the work
    assert warnings and all(ln.startswith("warning: langgraph") for ln in warnings)
    ls = load_labeled_set(out)
    assert ls.name == "shop" and ls.traces[0].metadata["source_format"] == "langgraph"
    assert {"ORD-58213", "$120.00"} <= {f.value for f in load_facts(out / "facts.jsonl")}
    assert ls.manifest.splits == {"dev": [], "test": [ls.traces[0].conversation_id]}
    assert "one conversation: it is in test" in cap.out
    assert "`langgraph_run.json`" in (out / "README.md").read_text()
    assert run("validate", out) == 0


def test_explicit_format_is_used_and_checked(tmp_path, capsys):
    export = tmp_path / "run.json"
    export.write_text(json.dumps(LANGGRAPH))
    assert run("init-set", export, "--out", tmp_path / "a", "--format", "langgraph") == 0
    capsys.readouterr()
    assert run("init-set", export, "--out", tmp_path / "b", "--format", "langgrap") == 2
    assert "did you mean 'langgraph'" in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "b").exists()


def test_from_the_shared_openai_agents_export(tmp_path, capsys):
    out = tmp_path / "oa"
    assert run("init-set", SHARED_SAMPLE, "--out", out) == 0
    assert "(openai-agents export;" in capsys.readouterr().out
    ls = load_labeled_set(out)
    assert ls.items and {i.handoff_index for i in ls.items} == {0, 1}
    assert run("validate", out) == 0


# ---- facts from elsewhere -----------------------------------------------------------------

def test_facts_from_a_facts_file_and_from_an_expectations_file(trace_file, tmp_path, capsys):
    chosen = [f for f in propose_facts(TRACES) if f.kind == "identifier"]
    facts_file = tmp_path / "reviewed_facts.jsonl"
    save_facts(facts_file, chosen)
    out = tmp_path / "from_facts"
    assert run("init-set", trace_file, "--out", out, "--facts", facts_file) == 0
    assert "taken from the facts file reviewed_facts.jsonl" in capsys.readouterr().out
    ls = load_labeled_set(out)
    assert {i.fact_id for i in ls.items} == {f.fact_id for f in chosen}

    out2 = tmp_path / "from_expectations"
    assert run("init-set", trace_file, "--out", out2, "--facts",
               out / "expectations.jsonl") == 0
    assert "expectations file expectations.jsonl" in capsys.readouterr().out
    assert sorted(i.item_id for i in load_labeled_set(out2).items) == sorted(
        i.item_id for i in ls.items)
    assert not (out2 / "facts.jsonl").exists()


def test_several_proposers_merge(tmp_path):
    t = _conversation(0)
    t.handoffs[0].context_passed = {"account_number": "ACCT-4400"}
    ls = create_labeled_set([t], tmp_path / "m", facts=["context", "offline"])
    proposers = json.loads((tmp_path / "m" / "expectations.jsonl").read_text()
                           )["metadata"]["fact_proposers"]
    assert proposers["ctx:account_number"] == "context+offline"
    assert "ctx:account_number" in {i.fact_id for i in ls.items}


def test_a_facts_file_that_does_not_fit_the_traces_is_refused(trace_file, tmp_path, capsys):
    bad = tmp_path / "facts.jsonl"
    f = propose_facts(TRACES)[0]
    save_facts(bad, [f.__class__(**{**f.to_dict(), "handoff_index": 7})])
    out = tmp_path / "x"
    assert run("init-set", trace_file, "--out", out, "--facts", bad) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "facts.jsonl:1 › handoff_index: handoff 7 does not exist" in line
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "facts.jsonl", "prod_traces.jsonl"]

    bad.write_text('{"conversation_id": "conv-00"}\n')
    assert run("init-set", trace_file, "--out", out, "--facts", bad) == 2
    assert "facts.jsonl:1 › " in _one_error_line(capsys.readouterr().err)


# ---- determinism --------------------------------------------------------------------------

def test_same_seed_same_splits_and_fact_ids(trace_file, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run("init-set", trace_file, "--out", a, "--seed", "7", "--name", "n") == 0
    assert run("init-set", trace_file, "--out", b, "--seed", "7", "--name", "n") == 0
    for name in ("manifest.json", "expectations.jsonl", "facts.jsonl", "traces.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    # the split depends on the seed, and on the seed only (not the order of the traces)
    shuffled = create_labeled_set(list(reversed(TRACES)), tmp_path / "r", seed=7)
    assert shuffled.manifest.splits == load_labeled_set(a).manifest.splits
    seen = {json.dumps(create_labeled_set(TRACES, tmp_path / f"s{s}", seed=s).manifest.splits)
            for s in range(6)}
    assert len(seen) > 1


@pytest.mark.parametrize(("fraction", "dev"), [(0.0, 0), (0.25, 2), (0.9, 8), (1.0, 9)])
def test_dev_fraction(tmp_path, fraction, dev):
    ls = create_labeled_set(TRACES, tmp_path / "f", dev_fraction=fraction)
    assert len(ls.manifest.splits["dev"]) == dev
    assert len(ls.manifest.splits["test"]) == len(TRACES) - dev


# ---- overwriting --------------------------------------------------------------------------

def test_refuses_to_overwrite_unless_forced(trace_file, tmp_path, capsys):
    out = tmp_path / "set"
    assert run("init-set", trace_file, "--out", out) == 0
    (out / "labels.jsonl").write_text(json.dumps({
        "item_id": load_labeled_set(out).items[0].item_id, "annotator": "ana",
        "label": "retained"}) + "\n")
    before = _files(out)
    capsys.readouterr()
    assert run("init-set", trace_file, "--out", out, "--seed", "3") == 2
    assert "--force" in _one_error_line(capsys.readouterr().err)
    assert _files(out) == before

    label_line = (out / "labels.jsonl").read_bytes()
    assert run("init-set", trace_file, "--out", out, "--seed", "3", "--force") == 0
    # the person's label survives the re-init: carried over (its item still exists) ...
    assert (out / "labels.jsonl").read_bytes() == label_line
    # ... and the whole previous set is kept in the backup folder the command names
    (backup,) = (out / ".maev-backup").iterdir()
    assert (backup / "labels.jsonl").read_bytes() == label_line
    assert f".maev-backup/{backup.name}/" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prod_traces.jsonl", "set"]

    with pytest.raises(InputError, match="not empty"):
        create_labeled_set(TRACES, out)


def test_force_never_replaces_a_folder_that_is_not_a_set(trace_file, tmp_path, capsys):
    keep = tmp_path / "notes"
    keep.mkdir()
    (keep / "thesis.txt").write_text("mine")
    assert run("init-set", trace_file, "--out", keep, "--force") == 2
    assert "holds no labeled set" in _one_error_line(capsys.readouterr().err)
    assert _files(keep) == {"thesis.txt": hashlib.sha256(b"mine").hexdigest()}


def test_an_empty_folder_is_used(trace_file, tmp_path):
    (tmp_path / "empty").mkdir()
    assert create_labeled_set(trace_file, tmp_path / "empty").name == "empty"


def test_a_failed_write_leaves_no_half_written_set(trace_file, tmp_path, monkeypatch):
    out = tmp_path / "set"
    create_labeled_set(trace_file, out)
    before = _files(out)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    import maev_kit.expectations
    monkeypatch.setattr(maev_kit.expectations, "save_expectations", disk_full)
    with pytest.raises(InputError, match="No space left"):
        create_labeled_set(trace_file, out, overwrite=True, seed=5)
    with pytest.raises(InputError, match="No space left"):
        create_labeled_set(trace_file, tmp_path / "new")
    assert _files(out) == before  # the old set is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prod_traces.jsonl", "set"]


# ---- bad input ----------------------------------------------------------------------------

@pytest.mark.parametrize(("traces", "out", "expected"), [
    ("missing.jsonl", "o", "missing.jsonl: file not found"),
    ("adir", "o", "adir: is a folder"),
    ("empty.jsonl", "o", "empty.jsonl: file is empty"),
    ("prod_traces.jsonl", "afile/o", "afile is a file, not a folder"),
    ("prod_traces.jsonl", "afile", "afile: is a file"),
    ("unknown.json", "o", "unknown.json: not a trace file maev-kit can read"),
    ("broken.jsonl", "o", "broken.jsonl:1 › conversation_id: field required"),
])
def test_bad_input_is_one_line_exit_2(trace_file, tmp_path, monkeypatch, capsys, traces, out,
                                      expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "afile").write_text("x")
    (tmp_path / "unknown.json").write_text(json.dumps({"hello": "world"}))
    (tmp_path / "broken.jsonl").write_text(json.dumps({"turns": []}) + "\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    assert run("init-set", traces, "--out", out) == 2
    assert expected in _one_error_line(capsys.readouterr().err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize(("args", "expected"), [
    (["--facts", "ofline"], "did you mean 'offline'?"),
    (["--facts", "llm"], "llm proposer"),
    (["--dev-fraction", "1.5"], "--dev-fraction"),
])
def test_bad_options_are_one_line_exit_2(trace_file, tmp_path, capsys, args, expected):
    assert run("init-set", trace_file, "--out", tmp_path / "o", *args) == 2
    assert expected in _one_error_line(capsys.readouterr().err)
    assert not (tmp_path / "o").exists()


def test_listed_in_help(capsys):
    assert run("--help") == 0
    assert "init-set" in capsys.readouterr().out
