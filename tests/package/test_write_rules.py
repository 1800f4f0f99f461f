"""Nothing a person did is ever lost: every command that writes, against an existing file of
each kind, through the real CLI on real files (docs/formats.md, "What the kit writes, and what
it never replaces").

A file holding a person's work (labels, review decisions, expectations, a judge card) is never
replaced, ``--force`` or not; a derived output is replaced only when the file there is the
kit's own output of the same kind (and the command says "replaced"), else only with
``--force``; ``init-set --force`` carries labels and review decisions over and keeps the whole
previous set in a named backup.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit._files import OverwriteRefused, check_output, sniff, write_text
from maev_kit.datasets import load_labeled_set
from maev_kit.facts import load_facts
from maev_kit.facts._review import FactReviewSession
from maev_kit.labels import LabelStore

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "labeled_sets" / "support_desk"
# the framework sample exports, committed as test fixtures (tests/data/README.md)
SAMPLES = REPO / "tests" / "data" / "trace_samples"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(),
                                   reason="tests/data/trace_samples is missing")

HAND_WRITTEN_EXPECTATIONS = (
    '{"conversation_id": "sd-001", "key_facts": [{"fact_id": "mine", "handoff_index": 0, '
    '"text": "Written by Ana, by hand."}]}\n')


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _lines(p: Path) -> int:
    return sum(1 for ln in p.read_bytes().splitlines() if ln.strip()) if p.is_file() else 0


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight support_desk conversations as a trace JSONL file."""
    out = tmp_path_factory.mktemp("src") / "traces.jsonl"
    out.write_text("\n".join((BUNDLED / "traces.jsonl").read_text().splitlines()[:8]) + "\n")
    return out


@pytest.fixture()
def worked_set(traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A set made by `maev init-set`, then worked on by people: 2 annotators labeled every
    item (plus one label whose item a re-init will drop), a reviewer decided 12 facts."""
    out = tmp_path / "myset"
    code, _, err = run_cli(["init-set", str(traces), "--out", str(out)], capsys)
    assert code == 0, err
    ls = load_labeled_set(out)
    store = LabelStore(out / "labels.jsonl")
    for who in ("ana", "bo"):
        for i, item in enumerate(ls.items):
            store.add(item.item_id, ("retained", "lost", "contradicted")[i % 3], annotator=who)
    session = FactReviewSession(ls.traces, load_facts(out / "facts.jsonl"),
                                out / "fact_reviews.jsonl", reviewer="cy")
    for _ in range(12):
        session.accept()
    assert _lines(out / "labels.jsonl") == 2 * len(ls.items) and _lines(
        out / "fact_reviews.jsonl") == 12
    return out


# ------------------------------------------------------------------ files of each kind
def _kit_files(folder: Path, traces: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """One real file of every kind the kit reads or writes, made by the kit where it writes
    them (scores, ledger, report, traces) and by people where people do (the rest)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "labels": folder / "labels.jsonl",
        "reviews": folder / "fact_reviews.jsonl",
        "expectations": folder / "expectations.jsonl",
        "card": folder / "judge_card.json",
        "scores": folder / "scores.csv",
        "ledger": folder / "ledger.csv",
        "report": folder / "report.html",
        "traces": folder / "imported.jsonl",
        "unknown": folder / "notes.csv",
    }
    files["labels"].write_text("".join(
        json.dumps({"item_id": f"sd-001/h0/f{i}", "annotator": "ana", "label": "lost"}) + "\n"
        for i in range(40)))
    files["reviews"].write_text("".join(json.dumps(
        {"fact_id": f"f{i}", "conversation_id": "sd-001", "handoff_index": 0,
         "reviewer": "cy", "decision": "accept"}) + "\n" for i in range(156)))
    files["expectations"].write_text(HAND_WRITTEN_EXPECTATIONS)
    files["card"].write_text(json.dumps({"judge_name": "heuristic", "judge_version": "1",
                                         "kappa": 0.71}, indent=2))
    code, _, err = run_cli(["score", str(traces), "--judge", "none", "--out",
                            str(files["scores"]), "--ledger", str(files["ledger"])], capsys)
    assert code == 0, err
    code, _, err = run_cli(["report", str(traces), "--judge", "none", "--out",
                            str(files["report"])], capsys)
    assert code == 0, err
    code, _, err = run_cli(["convert", str(traces), str(files["traces"])], capsys)
    assert code == 0, err
    files["unknown"].write_text("my,own,table\n1,2,3\n")
    return files


def test_each_kind_is_recognised_by_its_content(traces: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    files = _kit_files(tmp_path / "k", traces, capsys)
    got = {kind: (sniff(p).kind if sniff(p) else None) for kind, p in files.items()}
    assert got == {"labels": "labels", "reviews": "reviews", "expectations": "expectations",
                   "card": "card", "scores": "scores", "ledger": "ledger", "report": "report",
                   "traces": "traces", "unknown": None}
    assert "40 labels" in sniff(files["labels"]).what
    assert "156 decisions" in sniff(files["reviews"]).what


#: (command, the file kind it writes, how to aim it at PATH)
WRITERS = {
    "import -o": ("traces", lambda p, t: ["import", "openai-agents",
                                           str(SAMPLES / "openai_agents_trace.json"), "-o", p]),
    "convert": ("traces", lambda p, t: ["convert", t, p]),
    "score --out": ("scores", lambda p, t: ["score", t, "--judge", "none", "--out", p]),
    "score --ledger": ("ledger", lambda p, t: ["score", t, "--judge", "none", "--ledger", p]),
    "report --out": ("report", lambda p, t: ["report", t, "--judge", "none", "--out", p]),
}
#: what each writer needs as a suffix; a file of the wrong suffix is renamed to fit
SUFFIX = {"import -o": (".jsonl",), "convert": (".jsonl",), "score --out": (".csv", ".jsonl"),
          "score --ledger": (".csv", ".jsonl"), "report --out": (".html",)}


@needs_samples
@pytest.mark.parametrize("writer", list(WRITERS))
def test_every_writer_against_an_existing_file_of_each_kind(
        writer: str, traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = _kit_files(tmp_path / "kinds", traces, capsys)
    kind_written, argv = WRITERS[writer]
    for kind, original in files.items():
        target = original
        suffixes = SUFFIX[writer]
        if original.suffix not in suffixes:
            target = original.with_name(original.stem + "_as" + suffixes[0])
            shutil.copy(original, target)
        before = _sha(target)
        code, out, err = run_cli(argv(str(target), str(traces)), capsys)
        human = kind in ("labels", "reviews", "expectations", "card")
        if human:
            assert code == 2, (writer, kind, out, err)
            assert "never replaces" in err and "Traceback" not in err, (writer, kind, err)
            assert _sha(target) == before, (writer, kind)
            # --force does not change that
            code, _, err = run_cli([*argv(str(target), str(traces)), "--force"], capsys)
            assert code == 2 and _sha(target) == before, (writer, kind, err)
        elif kind == kind_written:
            assert code == 0, (writer, kind, err)
            assert f"replaced: {target}" in out, (writer, kind, out)
        else:
            assert code == 2, (writer, kind, out, err)
            assert "--force" in err and _sha(target) == before, (writer, kind, err)
            assert len(err.strip().splitlines()) == 1, err
            code, out, err = run_cli([*argv(str(target), str(traces)), "--force"], capsys)
            assert code == 0 and f"replaced: {target}" in out, (writer, kind, out, err)


@needs_samples
def test_a_hand_written_expectations_file_keeps_every_byte(
        traces: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "expectations.jsonl"
    mine.write_text(HAND_WRITTEN_EXPECTATIONS)
    size = mine.stat().st_size
    for argv in (["score", str(traces), "--judge", "none", "--out", str(mine)],
                 ["import", "auto", str(SAMPLES / "openai_agents_trace.json"), "-o", str(mine),
                  "--force"],
                 ["convert", str(traces), str(mine), "--force"]):
        code, _, err = run_cli(argv, capsys)
        assert code == 2 and "expectations file" in err, err
        assert mine.stat().st_size == size and mine.read_text() == HAND_WRITTEN_EXPECTATIONS


def test_demo_keeps_a_different_judge_card_in_a_backup(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    out = tmp_path / "demo"
    out.mkdir()
    mine = json.dumps({"judge_name": "ana's pick", "judge_version": "7"}) + "\n"
    (out / "judge_card.json").write_text(mine)
    (out / "report.html").write_text("<html><body>my own page</body></html>")
    code, _, err = run_cli(["demo", "--out", str(out), "--no-progress"], capsys)
    assert code == 2 and "--force" in err and "report.html" in err, err
    code, out_text, err = run_cli(["demo", "--out", str(out), "--no-progress", "--force"],
                                  capsys)
    assert code == 0, err
    kept = list((out / ".maev-backup").rglob("judge_card.json"))
    assert [p.read_text() for p in kept] == [mine]
    assert str(kept[0]) in err                       # the warning names where it went


def test_writes_are_atomic_and_refuse_a_persons_file_from_python(tmp_path: Path) -> None:
    from maev_kit.traces import MultiAgentTrace, save_traces

    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"item_id": "c/h0/f", "annotator": "ana", "label": "lost"}\n')
    with pytest.raises(OverwriteRefused, match="never replaces"):
        save_traces([MultiAgentTrace("c")], labels)
    assert _lines(labels) == 1
    with pytest.raises(OverwriteRefused):
        check_output(labels, "traces", "--output", force=True)
    target = tmp_path / "page.html"
    write_text(target, "x")
    assert target.read_text() == "x" and [p.name for p in tmp_path.iterdir()
                                          if p.name.startswith(".")] == []


# ------------------------------------------------------------------ re-init keeps human work
def test_init_set_force_keeps_labels_and_review_decisions(
        worked_set: Path, traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n_labels, n_reviews = _lines(worked_set / "labels.jsonl"), _lines(
        worked_set / "fact_reviews.jsonl")
    store = LabelStore(worked_set / "labels.jsonl")
    store.add("gone-conversation/h0/x", "lost", annotator="ana")   # an item the new set lacks
    n_facts = _lines(worked_set / "facts.jsonl")
    code, out, err = run_cli(["init-set", str(traces), "--out", str(worked_set), "--force"],
                             capsys)
    assert code == 0, err
    assert _lines(worked_set / "labels.jsonl") == n_labels               # carried in place
    assert _lines(worked_set / "fact_reviews.jsonl") == n_reviews
    assert _lines(worked_set / "facts.jsonl") == n_facts
    (backup,) = (worked_set / ".maev-backup").iterdir()
    assert _lines(backup / "labels.jsonl") == n_labels + 1              # all, in the backup
    assert _lines(backup / "fact_reviews.jsonl") == n_reviews
    assert f"labels: {n_labels} of {n_labels + 1} carried" in out
    assert f"review decisions: {n_reviews} of {n_reviews} carried" in out
    assert f".maev-backup/{backup.name}/" in out
    assert load_labeled_set(worked_set).label_records                    # still a valid set


@needs_samples
def test_init_set_takes_several_files_and_a_folder(traces: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    lines = (BUNDLED / "traces.jsonl").read_text().splitlines()
    a, b = tmp_path / "in" / "a.jsonl", tmp_path / "in" / "b.jsonl"
    a.parent.mkdir()
    a.write_text("\n".join(lines[:3]) + "\n")
    b.write_text("\n".join(lines[2:6]) + "\n")                          # sd-003 in both
    code, _, err = run_cli(["init-set", str(a), str(b), "--out", str(tmp_path / "s")], capsys)
    assert code == 2 and "--prefix-ids" in err and "'sd-003'" in err, err
    assert not (tmp_path / "s").exists()
    code, out, err = run_cli(["init-set", str(a.parent), "--out", str(tmp_path / "s"),
                              "--prefix-ids"], capsys)
    assert code == 0, err
    ids = [t.conversation_id for t in load_labeled_set(tmp_path / "s").traces]
    assert len(ids) == 7 and {"a:sd-003", "b:sd-003"} <= set(ids)
    assert "prefixed 1 conversation id" in err
    # two different exports of one system make one set
    code, out, err = run_cli(["init-set", str(SAMPLES / "openai_agents_trace.json"),
                              str(SAMPLES / "langgraph_swarm_messages.json"),
                              "--out", str(tmp_path / "two")], capsys)
    assert code == 0, err
    assert len(load_labeled_set(tmp_path / "two").traces) == 2


# ------------------------------------------------------------------ versions and mappings
@needs_samples
def test_an_unknown_schema_version_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    state = json.loads((SAMPLES / "openai_agents_real" /
                        "openai_agents_chat_run_state.json").read_text())
    state["$schemaVersion"] = "9.0"
    p = tmp_path / "state.json"
    p.write_text(json.dumps(state))
    code, _, err = run_cli(["import", "auto", str(p), "-o", str(tmp_path / "t.jsonl")], capsys)
    assert code == 2 and "'9.0'" in err and "1.x" in err, err
    assert not (tmp_path / "t.jsonl").exists()
    line = json.loads((BUNDLED / "traces.jsonl").read_text().splitlines()[0])
    line["schema_version"] = "9.0"
    (tmp_path / "t9.jsonl").write_text(json.dumps(line) + "\n")
    code, _, err = run_cli(["score", str(tmp_path / "t9.jsonl"), "--judge", "none"], capsys)
    assert code == 2 and "'9.0'" in err and "reads schema_version 1" in err, err


@needs_samples
def test_a_renamed_handoff_span_type_is_named_and_can_be_mapped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from maev_kit.traces.importers import import_traces

    src = SAMPLES / "openai_agents_real" / "openai_agents_chat_nofilter_spans.json"
    original, _ = import_traces(src)
    n_handoffs = sum(len(t.handoffs) for t in original)
    data = json.loads(src.read_text())
    for span in data["spans"]:
        if span["span_data"]["type"] == "handoff":
            span["span_data"]["type"] = "transfer"
    renamed = tmp_path / "renamed.json"
    renamed.write_text(json.dumps(data))
    out = tmp_path / "t.jsonl"
    code, text, err = run_cli(["import", "auto", str(renamed), "-o", str(out)], capsys)
    assert code == 0 and "0 handoffs" in text
    assert "'transfer' ×2" in text and "--handoff-type transfer" in text, text
    code, text, err = run_cli(["import", "auto", str(renamed), "-o", str(out),
                               "--handoff-type", "transfer"], capsys)
    assert code == 0, err
    assert f"{n_handoffs} handoffs" in text and n_handoffs == 2
    traces, _ = import_traces(renamed, handoff_type="transfer")            # the same in Python
    assert sum(len(t.handoffs) for t in traces) == n_handoffs


# ------------------------------------------------------------------ messages that name the cause
@needs_samples
def test_messages_name_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    code, _, err = run_cli(["score", str(empty), "--judge", "none"], capsys)
    assert code == 2 and "no traces in empty.json" in err, err
    labels = tmp_path / "labels.jsonl"
    shutil.copy(BUNDLED / "labels.jsonl", labels)
    for argv in (["score", str(labels)], ["init-set", str(labels), "--out", str(tmp_path / "s")],
                 ["import", "auto", str(labels), "-o", str(tmp_path / "o.jsonl")]):
        code, _, err = run_cli(argv, capsys)
        assert code == 2 and "looks like a labels file" in err and "--labels" in err, err
        assert "cannot detect" not in err
    # a byte-order mark and CRLF line ends are read as the same traces
    bom = tmp_path / "bom.jsonl"
    text = "\r\n".join((BUNDLED / "traces.jsonl").read_text().splitlines()[:3]) + "\r\n"
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, out, err = run_cli(["score", str(bom), "--judge", "none", "--json"], capsys)
    assert code == 0 and "utf-8-sig" not in err, err
    export = tmp_path / "bom_export.json"
    export.write_bytes(b"\xef\xbb\xbf" + (SAMPLES / "openai_agents_trace.json").read_bytes())
    code, out, err = run_cli(["import", "auto", str(export), "-o", str(tmp_path / "x.jsonl")],
                             capsys)
    assert code == 0 and "imported 1 trace" in out, err


# ------------------------------------------------------------------ the property
def _reachable(folder: Path) -> set[bytes]:
    """Every distinct human label and review line in the set or any of its backups."""
    found: set[bytes] = set()
    for name in ("labels.jsonl", "fact_reviews.jsonl"):
        for p in [folder / name, *(folder / ".maev-backup").rglob(name)]:
            if p.is_file():
                found |= {ln for ln in p.read_bytes().splitlines() if ln.strip()}
    return found


STEPS = st.lists(st.sampled_from(["reinit", "reinit-context", "import", "score-out", "ledger",
                                  "report", "label", "convert"]), min_size=1, max_size=6)


@needs_samples
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_no_sequence_of_commands_loses_a_label_or_a_review_decision(
        steps: list[str], worked_set: Path, traces: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / f"p{abs(hash(tuple(steps)))}"
    shutil.copytree(worked_set, folder)
    before = _reachable(folder)
    n = 0
    for step in steps:
        n += 1
        argv = {
            "reinit": ["init-set", str(traces), "--out", str(folder), "--force"],
            "reinit-context": ["init-set", str(traces), "--out", str(folder), "--force",
                               "--facts", "context"],
            "import": ["import", "auto", str(SAMPLES / "openai_agents_trace.json"), "-o",
                       str(folder / "labels.jsonl"), "--force"],
            "score-out": ["score", str(folder), "--judge", "none", "--out",
                          str(folder / "fact_reviews.jsonl"), "--force"],
            "ledger": ["score", str(folder), "--judge", "none", "--ledger",
                       str(folder / "labels.jsonl"), "--force"],
            "report": ["report", str(folder), "--judge", "none", "--no-calibrate", "--out",
                       str(folder / "report.html"), "--force"],
            "convert": ["convert", str(traces), str(folder / "expectations.jsonl"), "--force"],
        }.get(step)
        if step == "label":
            items = load_labeled_set(folder).items
            if items:
                LabelStore(folder / "labels.jsonl").add(items[n % len(items)].item_id, "lost",
                                                        annotator=f"p{n}")
                before |= {(folder / "labels.jsonl").read_bytes().splitlines()[-1]}
            continue
        code, _, err = run_cli(argv, capsys)
        assert code in (0, 2) and "Traceback" not in err, (step, err)
        after = _reachable(folder)
        assert before <= after, (steps, step, len(before - after))


def test_calibrate_and_align_outputs_never_replace_a_persons_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`calibrate --out DIR` into a folder where leaderboard.csv is someone's labels: exit 2,
    the labels untouched; the folder's own earlier tables are replaced."""
    out = tmp_path / "cal"
    out.mkdir()
    mine = out / "leaderboard.csv"
    mine.write_text('{"item_id": "a/h0/f1", "annotator": "ana", "label": "lost"}\n')
    before = _sha(mine)
    args = ["calibrate", str(BUNDLED), "--judge", "heuristic", "--resamples", "100",
            "--no-progress", "--out", str(out)]
    code, _, err = run_cli(args, capsys)
    assert code == 2 and "a person's work" in err and _sha(mine) == before, err
    mine.unlink()
    code, _, err = run_cli(args, capsys)
    assert code == 0, err
    first = (out / "leaderboard.csv").read_text()
    code, _, err = run_cli(args, capsys)  # its own tables: replaced
    assert code == 0 and (out / "leaderboard.csv").read_text() == first, err
    assert not list(out.glob(".*.tmp-*"))  # atomic: no temporary file left
