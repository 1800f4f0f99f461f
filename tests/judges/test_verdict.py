import pytest

from maev_kit.judges import Verdict


def test_evidence_becomes_a_tuple_and_round_trips():
    v = Verdict("c/h0/f1", "retained", "quoted", evidence=["a", "b"])
    assert v.evidence == ("a", "b")
    assert Verdict.from_dict(v.to_dict()) == v
    assert v.to_dict() == {"item_id": "c/h0/f1", "label": "retained", "rationale": "quoted",
                           "evidence": ["a", "b"], "error": None, "raw": None, "cause": None,
                           "span": None}


def test_cause_is_one_of_the_agreed_causes_and_goes_with_an_error():
    v = Verdict("c/h0/f1", None, error="401", cause="auth")
    assert Verdict.from_dict(v.to_dict()) == v
    with pytest.raises(ValueError, match="ERROR_CAUSES|one of"):
        Verdict("c/h0/f1", None, error="401", cause="authentication")
    with pytest.raises(ValueError, match="goes with an `error`"):
        Verdict("c/h0/f1", "lost", cause="auth")


def test_parser_errors_are_unparseable():
    from maev_kit.judges import parse_retention_reply
    from maev_kit.retention import RetentionItem

    items = [RetentionItem(f"c/h0/f{i}", "c", 0, f"f{i}", "a fact", (), ()) for i in (1, 2)]
    got = parse_retention_reply('{"F1": "retained"}', items)
    assert [(v.label, v.cause) for v in got] == [("retained", None), (None, "unparseable")]
    assert {v.cause for v in parse_retention_reply("no json", items)} == {"unparseable"}


def test_error_verdict_has_no_label():
    v = Verdict("c/h0/f1", None, error="no JSON", raw="hello")
    assert not v.ok and v.label is None


@pytest.mark.parametrize("kwargs, match", [
    ({"label": "maybe"}, "must be one of"),
    ({"label": None}, "no `error` says why"),
    ({"label": "lost", "error": "boom"}, "has no label"),
])
def test_invalid_verdicts_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Verdict("c/h0/f1", **kwargs)


def test_verdict_is_frozen():
    v = Verdict("c/h0/f1", "lost")
    with pytest.raises(AttributeError):
        v.label = "retained"  # type: ignore[misc]
