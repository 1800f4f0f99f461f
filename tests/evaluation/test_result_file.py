"""EvaluationResult.save / load_result: a versioned folder (Parquet tables + JSON manifest)
that loads back equal, refuses what it cannot read, and never replaces anything but an
earlier saved result."""

import json
import re
import shutil
import warnings
from pathlib import Path

import pytest

from maev_kit import report
from maev_kit._files import OverwriteRefused
from maev_kit.errors import InputError
from maev_kit.evaluation import evaluate, load_result

from ._cases import two_conversations

GOLDEN_V1 = Path(__file__).resolve().parents[1] / "data" / "results" / "v1_two_conversations"


def _evaluate(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(source, progress=False, n_resamples=200, **kw)


@pytest.fixture(scope="module")
def support_desk():
    return _evaluate("support_desk")


def _two():
    traces, exps = two_conversations()
    return _evaluate(traces, expectations=list(exps.values()))


def test_round_trip_is_equal_tables_dtypes_and_all(tmp_path, support_desk):
    folder = support_desk.save(tmp_path / "run")
    back = load_result(folder)
    assert back.equals(support_desk) and support_desk.equals(back)
    # dtypes survive (nullable integers of the ledger, strings, booleans)
    assert (back.ledger.dtypes == support_desk.ledger.dtypes).all()
    assert (back.per_conversation.dtypes == support_desk.per_conversation.dtypes).all()
    assert back.ledger["evidence_turn"].dtype == "Int64"
    assert back.handoff_matrix.index.name == "from_agent"
    assert back.routing == support_desk.routing and back.routing is not None
    assert back.routing_confusion.equals(support_desk.routing_confusion)
    assert [t.conversation_id for t in back.traces] == \
        [t.conversation_id for t in support_desk.traces]
    assert back.traces == support_desk.traces
    assert back.judge_errors == support_desk.judge_errors
    assert back.fact_ledger.equals(support_desk.fact_ledger)


def test_equals_sees_any_change(tmp_path):
    result = _two()
    back = load_result(result.save(tmp_path / "r"))
    assert back.equals(result)
    back.ledger.loc[0, "label"] = "lost" if back.ledger.loc[0, "label"] != "lost" else "retained"
    assert not back.equals(result)
    back = load_result(tmp_path / "r")
    back.provenance["split"] = "test"
    assert not back.equals(result)
    back = load_result(tmp_path / "r")
    back.traces.pop()
    assert not back.equals(result)
    assert not result.equals("not a result")


def test_the_report_of_a_loaded_result_is_the_report_of_the_result(tmp_path, support_desk):
    back = load_result(support_desk.save(tmp_path / "run"))

    def html(ev):
        text = report(ev).html
        text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "TS", text)
        return re.sub(r"mk\d+-", "mk-", text)  # each page's own plot id prefix
    assert html(back) == html(support_desk)


def test_manifest_is_versioned_and_documented(tmp_path):
    folder = _two().save(tmp_path / "r")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["format"] == "maev-kit evaluation result"
    assert manifest["schema_version"] == 1
    assert set(manifest["tables"]) == {"per_conversation", "aggregates", "handoff_matrix",
                                       "pair_stats", "ledger", "traces", "routing_confusion",
                                       "estimates", "label_budget"}
    for name, info in manifest["tables"].items():
        assert (folder / info["file"]).is_file() and len(info["sha256"]) == 64
    doc = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    assert "maev-kit evaluation result" in doc and "schema_version" in doc


def test_a_newer_version_is_refused_clearly(tmp_path):
    folder = _two().save(tmp_path / "r")
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["schema_version"] = 2
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"manifest\.json › schema_version: 2 is newer than "
                                         r"this maev-kit reads \(1\).*upgrade maev-kit"):
        load_result(folder)
    manifest["schema_version"] = "1"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="schema_version: expected an integer"):
        load_result(folder)


def test_what_is_not_a_result_is_named(tmp_path):
    with pytest.raises(InputError, match="manifest.json: missing"):
        load_result(tmp_path)
    with pytest.raises(InputError, match="no such folder"):
        load_result(tmp_path / "nope")
    (tmp_path / "manifest.json").write_text('{"format": "something else"}')
    with pytest.raises(InputError, match="› format: not a saved maev-kit result"):
        load_result(tmp_path)
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_result(tmp_path)


def test_a_changed_or_missing_table_is_refused(tmp_path):
    folder = _two().save(tmp_path / "r")
    shutil.copy(folder / "aggregates.parquet", folder / "ledger.parquet")
    with pytest.raises(InputError, match=r"› tables\.ledger\.sha256: ledger\.parquet does not "
                                         "match the manifest"):
        load_result(folder)
    (folder / "ledger.parquet").unlink()
    with pytest.raises(InputError, match=r"› tables\.ledger: ledger\.parquet is missing"):
        load_result(folder)


def test_save_replaces_an_earlier_result_only(tmp_path, support_desk):
    target = tmp_path / "r"
    _two().save(target)
    support_desk.save(target)  # an earlier result: replaced
    assert load_result(target).equals(support_desk)
    assert not list(target.glob(".*tmp*"))  # no temporary file left behind

    other = tmp_path / "mine"
    other.mkdir()
    (other / "labels.jsonl").write_text('{"item_id": "a/h0/f1", "annotator": "ana", '
                                        '"label": "lost"}\n')
    with pytest.raises(OverwriteRefused, match="not a saved maev-kit result"):
        support_desk.save(other)
    assert sorted(p.name for p in other.iterdir()) == ["labels.jsonl"]  # nothing written
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(OverwriteRefused, match="is a file"):
        support_desk.save(a_file)
    assert a_file.read_text() == "x"


def test_the_v1_golden_folder_still_loads():
    """A result saved by the first schema version (kept in tests/data) loads and holds the
    numbers it was saved with."""
    back = load_result(GOLDEN_V1)
    assert list(back.per_conversation["conversation_id"]) == ["good", "bad"]
    assert back.summary().loc["retention_rate", "n"] == 2
    assert list(back.ledger["label"]) == ["retained", "lost", "lost", "lost", "lost"]
    assert back.provenance["maev_kit_version"] == "0.1.0"
