"""`maev validate FOLDER` and `load_labeled_set`: every file checked, cross-file ids resolved."""

import json
import shutil

import pytest
from click.testing import CliRunner

from maev_kit.cli import cli
from maev_kit.datasets import load_labeled_set, validate_path
from maev_kit.errors import LabelValidationError


@pytest.fixture
def small_set(tmp_path, repo_root):
    """A copy of support_desk cut to its first 5 conversations."""
    src = repo_root / "labeled_sets" / "support_desk"
    dst = tmp_path / "mini"
    dst.mkdir()
    traces = (src / "traces.jsonl").read_text(encoding="utf-8").splitlines()[:5]
    ids = [json.loads(t)["conversation_id"] for t in traces]
    (dst / "traces.jsonl").write_text("\n".join(traces) + "\n", encoding="utf-8")
    exps = [e for e in (src / "expectations.jsonl").read_text(encoding="utf-8").splitlines()
            if json.loads(e)["conversation_id"] in ids]
    (dst / "expectations.jsonl").write_text("\n".join(exps) + "\n", encoding="utf-8")
    labels = [line for line in (src / "labels.jsonl").read_text(encoding="utf-8").splitlines()
              if json.loads(line)["item_id"].split("/")[0] in ids]
    (dst / "labels.jsonl").write_text("\n".join(labels) + "\n", encoding="utf-8")
    manifest = json.loads((src / "manifest.json").read_text(encoding="utf-8"))
    manifest["splits"] = {"dev": ids[:2], "test": ids[2:]}
    (dst / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    shutil.copy(src / "README.md", dst / "README.md")
    return dst, ids


def messages(path):
    report, _ = validate_path(path)
    return [str(p) for p in report.errors]


def test_small_set_is_valid(small_set):
    path, ids = small_set
    ls = load_labeled_set(path)
    assert [t.conversation_id for t in ls.traces] == ids
    assert {it.item_id for it in ls.items} >= {d["item_id"] for d in ls.labels()}
    assert {t.conversation_id for t in ls.traces_in("dev")} == set(ids[:2])


def test_label_pointing_at_no_fact(small_set):
    path, _ = small_set
    with open(path / "labels.jsonl", "a", encoding="utf-8") as f:
        f.write('{"item_id": "nope/h0/f1", "annotator": "ana", "label": "lost"}\n')
    n = len((path / "labels.jsonl").read_text().splitlines())
    # a label on no item is set aside (a warning naming file, line and why), never an error:
    # the person's label stays in the file and `maev labels reattach` can move it
    report, _ = validate_path(path)
    warned = [str(p) for p in report.warnings]
    assert any(f"labels.jsonl:{n} › item_id: 'nope/h0/f1' points at no key fact" in m
               and "set aside" in m for m in warned), warned
    assert not any("nope/h0/f1" in m for m in messages(path))


def test_key_fact_on_a_missing_handoff(small_set):
    path, ids = small_set
    lines = (path / "expectations.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["key_facts"].append({"fact_id": "fx", "handoff_index": 99, "text": "x"})
    lines[0] = json.dumps(rec)
    (path / "expectations.jsonl").write_text("\n".join(lines) + "\n")
    assert any("expectations.jsonl:1 › key_facts[" in m and "handoff 99 does not exist" in m
               for m in messages(path))


def test_expectation_for_unknown_conversation_and_bad_label(small_set):
    path, _ = small_set
    with open(path / "expectations.jsonl", "a") as f:
        f.write('{"conversation_id": "ghost"}\n')
    with open(path / "labels.jsonl", "a") as f:
        f.write('{"item_id": "x/h0/f1", "annotator": "ana", "label": "maybe"}\n')
    msgs = messages(path)
    assert any("'ghost' is not in traces.jsonl" in m for m in msgs)
    assert any("labels.jsonl" in m and "› label:" in m for m in msgs)


def test_bad_contract_in_manifest(small_set):
    path, _ = small_set
    m = json.loads((path / "manifest.json").read_text())
    m["contracts"].append({"from_agent": "*", "reason": "because"})
    (path / "manifest.json").write_text(json.dumps(m))
    msgs = messages(path)
    n = len(m["contracts"]) - 1
    assert any(f"contracts[{n}] › to_agent: field required" in x for x in msgs)
    assert any(f"contracts[{n}] › reason:" in x for x in msgs)


def test_split_naming_unknown_conversation(small_set):
    path, _ = small_set
    m = json.loads((path / "manifest.json").read_text())
    m["splits"]["test"].append("ghost")
    (path / "manifest.json").write_text(json.dumps(m))
    assert any("splits › test: 'ghost' is not in traces.jsonl" in x for x in messages(path))


def test_missing_file_and_bad_manifest(small_set):
    path, _ = small_set
    (path / "manifest.json").write_text("{not json")
    assert any("manifest.json:1: not valid JSON" in m for m in messages(path))
    (path / "expectations.jsonl").unlink()
    assert any("expectations.jsonl: missing" in m for m in messages(path))


def test_torn_last_label_line_is_a_warning_not_an_error(small_set):
    path, _ = small_set
    with open(path / "labels.jsonl", "a") as f:
        f.write('{"item_id": "c-0')
    report, loaded = validate_path(path)
    assert report.ok and loaded is not None
    assert any("torn last line" in str(w) for w in report.warnings)


def test_cli_lists_every_problem_and_exits_2(small_set):
    path, _ = small_set
    with open(path / "labels.jsonl", "a") as f:
        f.write('{"item_id": "nope/h0/f1", "annotator": "ana", "label": "lost"}\n')
        f.write("[]\n")
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 2
    assert "points at no key fact" in result.output and "expected a JSON object" in result.output
    with pytest.raises(LabelValidationError):
        load_labeled_set(path)
