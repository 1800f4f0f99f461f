"""Degenerate labels are a message, not a crash: one class, too few per class, all skip,
unknown ids — every command exits 0 with what it can honestly give, or 2 saying what to label
next; never an internal error, never a card from labels that cannot support one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_helpers import run_cli

from maev_kit.datasets import bundled_set_path, load_labeled_set

DEV = ["sd-003", "sd-004", "sd-008"]
TEST = ["sd-001", "sd-002", "sd-005", "sd-006"]


run = run_cli  # maev ARGS in-process: (exit code, stdout, stderr)


def _small_set(dst: Path) -> Path:
    """A real labeled set of seven support_desk conversations (dev 3, test 4)."""
    src = bundled_set_path("support_desk")
    dst.mkdir(parents=True)
    keep = set(DEV + TEST)
    for name in ("traces.jsonl", "expectations.jsonl", "labels.jsonl"):
        lines = (src / name).read_text().splitlines()
        kept = [ln for ln in lines if (json.loads(ln).get("conversation_id")
                                       or json.loads(ln)["item_id"].split("/")[0]) in keep]
        (dst / name).write_text("".join(ln + "\n" for ln in kept))
    manifest = json.loads((src / "manifest.json").read_text())
    manifest["splits"] = {"dev": DEV, "test": TEST}
    manifest.pop("counts", None)
    (dst / "manifest.json").write_text(json.dumps(manifest))
    shutil.copy(src / "README.md", dst / "README.md")
    return dst


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return _small_set(tmp_path_factory.mktemp("small") / "set")


def _with_labels(small: Path, tmp: Path, records: list[dict]) -> Path:
    folder = tmp / "set"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(small, folder)
    (folder / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def _one_class(small: Path) -> list[dict]:
    return [{**json.loads(ln), "label": "retained"}
            for ln in (small / "labels.jsonl").read_text().splitlines()]


def test_one_class_calibrate_says_kappa_undefined_and_writes_no_card(small, tmp_path, capsys):
    folder = _with_labels(small, tmp_path, _one_class(small))
    n_labels = len((folder / "labels.jsonl").read_text().splitlines())
    code, out, err = run(["calibrate", str(folder), "--judge", "heuristic", "--resamples",
                          "200", "--no-progress"], capsys)
    assert code == 0, err
    assert "κ undefined: your labels hold one class (retained" in out
    assert "label items the judges disagree on" in out.lower()
    row = next(ln.split() for ln in out.splitlines() if "heuristic" in ln.split())
    at = row.index("heuristic")
    assert row[0] == "—"  # no κ, no rank
    assert row[at + 2:at + 5] == ["n/a", "n/a", "n/a"]  # κ and its CI
    assert "n_items" in out and "labels on" in out and "lost 0, contradicted 0" in out
    assert "Use " not in out and "stronger judge" not in out
    card, cal = tmp_path / "card.json", tmp_path / "cal"
    code, out, err = run(["calibrate", str(folder), "--judge", "heuristic", "--resamples",
                          "200", "--no-progress", "--card", str(card), "--out", str(cal)],
                         capsys)
    assert code == 2 and "no judge card written" in err and "one class" in err
    assert not card.exists() and not (cal / "judge_card.json").exists()
    assert (cal / "leaderboard.csv").exists()  # the numbers it can give are written
    data = json.loads((cal / "calibration.json").read_text())
    assert data["leaderboard"][0]["kappa"] is None and data["recommended"] is None
    assert data["label_counts"]["retained"] > 0 and data["leaderboard"][0]["accuracy"] > 0
    assert len((folder / "labels.jsonl").read_text().splitlines()) == n_labels


def test_one_class_learned_judge_says_what_to_label(small, tmp_path, capsys):
    folder = _with_labels(small, tmp_path, _one_class(small))
    for argv in (["calibrate", str(folder), "--judge", "tfidf-logreg", "--resamples", "200"],
                 ["score", str(folder), "--judge", "tfidf-logreg", "--split", "test"]):
        code, out, err = run([*argv, "--no-progress"], capsys)
        assert code == 2, (argv, err)
        assert "internal error" not in err and len(err.strip().splitlines()) == 1
        assert "hold one class (retained" in err and "Label items" in err
    # with another judge, the learned one is a row saying why it did not run; the rest runs,
    # and the exit code says the comparison asked for did not happen in full
    code, out, err = run(["calibrate", str(folder), "--judge", "heuristic", "--judge",
                          "tfidf-logreg", "--resamples", "200", "--no-progress"], capsys)
    assert code == 1, err
    assert "tfidf-logreg: not run: " in err and "see the run's errors" not in err
    assert "not run: " in out and "tfidf-logreg" in out and "κ undefined" in out


def test_one_class_report_and_demo(small, tmp_path, capsys):
    folder = _with_labels(small, tmp_path, _one_class(small))
    html = tmp_path / "r.html"
    code, _, err = run(["report", str(folder), "--out", str(html), "--no-progress"], capsys)
    assert code == 0, err
    text = html.read_text()
    assert "κ undefined: your labels hold one class" in text and "per class" in text
    demo = tmp_path / "demo"
    code, out, err = run(["demo", "--set", str(folder), "--out", str(demo), "--no-progress"],
                         capsys)
    assert "internal error" not in err
    # the demo runs (exit 0) with the numbers it can give, and writes no card
    assert code == 0 and "one class" in out, err
    assert not (demo / "judge_card.json").exists()
    assert (demo / "report.html").is_file()


def test_too_few_per_class_recommends_nothing(small, tmp_path, capsys):
    recs = [json.loads(ln) for ln in (small / "labels.jsonl").read_text().splitlines()]
    test_ids = [r for r in recs if r["item_id"].split("/")[0] in TEST]
    lost = [r for r in test_ids if r["label"] != "retained"][:2]
    kept = [r for r in test_ids if r["label"] == "retained"] + lost
    folder = _with_labels(small, tmp_path, kept)
    code, out, err = run(["calibrate", str(folder), "--judge", "heuristic", "--resamples",
                          "200", "--no-progress"], capsys)
    assert code == 0, err
    assert "too few labels per class to recommend a judge" in out
    assert "No judge is recommended" in out and "Use heuristic" not in out
    res_kappa = next(ln for ln in out.splitlines() if "heuristic" in ln.split())
    assert str(len(kept)) in res_kappa.split()  # n shown


def test_one_annotator_agree_and_a_second_one(small, tmp_path, capsys):
    folder = _with_labels(small, tmp_path, _one_class(small))
    code, out, err = run(["agree", str(folder / "labels.jsonl")], capsys)
    assert code == 0 and "annotators: maev-authors" in out
    # one class: κ is undefined, said so, with the counts per class, never "κ 0.000"
    assert "κ undefined: your labels hold one class" in out and "labels per class" in out
    assert "0.000" not in out
    run_file = tmp_path / "run.csv"
    ids = [json.loads(ln)["item_id"] for ln in
           (folder / "labels.jsonl").read_text().splitlines()]
    run_file.write_text("item_id,label\n" + "".join(f"{i},lost\n" for i in ids[:3]))
    code, out, err = run(["agree", str(folder / "labels.jsonl"), "--judge-run",
                          str(run_file)], capsys)
    assert code == 0, err
    assert "judge accuracy: 0.000 (n=3)" in out and "kappa" not in out
    # one annotator with two classes: says there is no human-human agreement to give
    two = _with_labels(small, tmp_path / "two", [
        {**json.loads(ln), "label": "lost" if k % 2 else "retained"}
        for k, ln in enumerate((small / "labels.jsonl").read_text().splitlines())])
    code, out, err = run(["agree", str(two / "labels.jsonl")], capsys)
    assert code == 0 and "one annotator: no human–human agreement" in out, err
    code, _, err = run(["agree", str(tmp_path / "nope.jsonl")], capsys)
    assert code == 2 and "internal error" not in err


# ------------------------------------------------------------------------------ fuzz
ANNOTATORS = ("ana", "ben", "cy")
LABELS = ("retained", "lost", "contradicted", "skip")


@pytest.fixture(scope="module")
def item_ids(small) -> list[str]:
    return [it.item_id for it in load_labeled_set(small).items]


def _label_sets(item_ids: list[str]):
    """Label files the Labeler can write: any items (and ids no longer items), one to three
    annotators, any labels including skip; relabeling (a later line wins) included."""
    ids = st.sampled_from(item_ids + ["sd-001/h0/gone", "sd-099/h0/f1", "sd-002/h9/f1"])
    line = st.fixed_dictionaries({"item_id": ids, "annotator": st.sampled_from(ANNOTATORS),
                                  "label": st.sampled_from(LABELS)})
    one_class = st.builds(lambda lab, picked: [{"item_id": i, "annotator": "ana", "label": lab}
                                               for i in picked],
                          st.sampled_from(LABELS), st.lists(st.sampled_from(item_ids),
                                                            min_size=1, max_size=12,
                                                            unique=True))
    return st.one_of(st.lists(line, max_size=14), one_class)


COMMANDS = (
    ["calibrate", "{set}", "--judge", "heuristic", "--resamples", "100"],
    ["calibrate", "{set}", "--judge", "tfidf-logreg", "--resamples", "100"],
    ["agree", "{set}/labels.jsonl", "--resamples", "100"],
    ["score", "{set}", "--judge", "tfidf-logreg", "--split", "test"],
    ["report", "{set}", "--out", "{tmp}/r.html"],
    ["demo", "--set", "{set}", "--out", "{tmp}/demo"],
)


def test_fuzz_no_command_crashes_on_any_label_file(small, item_ids, tmp_path_factory, capsys):
    @settings(max_examples=20, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(_label_sets(item_ids))
    def check(records):
        tmp = tmp_path_factory.mktemp("fuzz")
        folder = _with_labels(small, tmp, records)
        before = (folder / "labels.jsonl").read_bytes()
        for argv in COMMANDS:
            args = [a.format(set=folder, tmp=tmp) for a in argv]
            if args[0] != "agree":
                args.append("--no-progress")
            code, out, err = run(args, capsys)
            assert "internal error" not in err, (args, records, err)
            assert code in (0, 1, 2), (args, code, err)
            if code == 2:
                assert len(err.strip().splitlines()) >= 1 and err.startswith("error: ")
            if code == 1:  # only a judge that failed may exit 1: never a label problem
                assert "label" not in err.lower() or "judge" in err.lower(), (args, err)
        assert (folder / "labels.jsonl").read_bytes() == before  # never rewritten
        card = tmp / "demo" / "judge_card.json"
        if card.exists():  # a card only from labels that hold two classes
            counted = {r["label"] for r in records if r["label"] != "skip"}
            assert len(counted) >= 2

    check()
