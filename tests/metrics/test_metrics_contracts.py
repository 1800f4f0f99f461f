"""Handoff contracts: the dataclass, loading from YAML/JSON, checking traces."""

from __future__ import annotations

import json

import pytest

from maev_kit import Handoff, HandoffContract, MultiAgentTrace, check_handoff_contracts
from maev_kit.errors import InputError
from maev_kit.metrics import ContractValidationError, ContractViolation, load_contracts

TRACE = MultiAgentTrace("c-1", handoffs=[
    Handoff("triage", "billing", "specialization", {"account_number": 4471}, 2),
    Handoff("billing", "tech", "escalation", {"account_number": "ACCT-4471"}, 4),
    Handoff("tech", "general", None, {}, 6),
])

CONTRACTS = [
    HandoffContract("*", "billing", required_context_keys=["account_number"],
                    value_types={"account_number": "string"}),
    HandoffContract("billing", "tech", "escalation", ["error_code", "account_number"],
                    {"error_code": "string"}),
]


def test_violations_name_handoff_contract_and_key():
    vs = check_handoff_contracts(TRACE, CONTRACTS)
    assert [(v.handoff_index, v.contract_index, v.kind, v.key) for v in vs] == [
        (0, 0, "wrong_type", "account_number"), (1, 1, "missing_key", "error_code")]
    wrong = vs[0]
    assert wrong.contract is CONTRACTS[0]
    assert (wrong.expected_types, wrong.actual_type) == (("string",), "integer")
    assert (wrong.conversation_id, wrong.turn_index, wrong.from_agent, wrong.to_agent) == (
        "c-1", 2, "triage", "billing")
    assert str(vs[1]) == ("handoffs[1] (billing→tech) breaks contract 'billing→tech "
                          "(escalation)': context key 'error_code' missing")
    d = vs[1].to_dict()
    assert d["contract"] == "billing→tech (escalation)" and d["kind"] == "missing_key"
    json.dumps(d)  # JSON-ready


def test_honoured_contracts_give_no_violations():
    t = MultiAgentTrace("c", handoffs=[Handoff("triage", "billing", None, {"account_number": "A"})])
    assert check_handoff_contracts(t, CONTRACTS) == []


def test_reason_limits_a_contract():
    t = MultiAgentTrace("c", handoffs=[Handoff("billing", "tech", "fallback", {})])
    assert check_handoff_contracts(t, CONTRACTS) == []


def test_wildcards_and_several_contracts_per_handoff():
    contracts = [HandoffContract(required_context_keys=["conversation_summary"]),
                 HandoffContract("triage", "*", required_context_keys=["intent"])]
    vs = check_handoff_contracts(TRACE, contracts)
    assert [(v.handoff_index, v.key) for v in vs] == [
        (0, "conversation_summary"), (0, "intent"), (1, "conversation_summary"),
        (2, "conversation_summary")]


@pytest.mark.parametrize(("types", "value", "ok"), [
    ("string", "x", True), ("string", 1, False),
    ("integer", 3, True), ("integer", 3.5, False), ("integer", True, False),
    ("number", 3, True), ("number", 3.5, True), ("number", False, False),
    ("boolean", False, True), ("boolean", 0, False),
    ("array", [1], True), ("object", {"a": 1}, True), ("object", [1], False),
    ("null", None, True), (["number", "null"], None, True), (["number", "null"], "1", False),
    ("any", object(), True), (float, 2, True), (str, 2, False), (bool, True, True),
])
def test_value_types(types, value, ok):
    c = HandoffContract(to_agent="b", value_types={"k": types})
    t = MultiAgentTrace("c", handoffs=[Handoff("a", "b", None, {"k": value})])
    assert (check_handoff_contracts(t, [c]) == []) is ok


def test_declared_type_of_optional_key_checked_only_when_present():
    c = HandoffContract(to_agent="b", value_types={"amount": "number"})
    absent = MultiAgentTrace("c", handoffs=[Handoff("a", "b", None, {})])
    present = MultiAgentTrace("c", handoffs=[Handoff("a", "b", None, {"amount": "12"})])
    assert check_handoff_contracts(absent, [c]) == []
    assert [v.kind for v in check_handoff_contracts(present, [c])] == ["wrong_type"]


def test_require_contract():
    vs = check_handoff_contracts(TRACE, CONTRACTS, require_contract=True)
    assert [(v.handoff_index, v.kind) for v in vs][-1] == (2, "no_contract")
    assert vs[-1].contract is None and "no contract covers" in str(vs[-1])


def test_contract_validation():
    with pytest.raises(ValueError, match="`reason` must be one of capability_match"):
        HandoffContract(to_agent="b", reason="urgent")
    with pytest.raises(ValueError, match=r"`value_types\['k'\]`: unknown type 'text'"):
        HandoffContract(to_agent="b", value_types={"k": "text"})
    with pytest.raises(TypeError, match="`required_context_keys`"):
        HandoffContract(to_agent="b", required_context_keys="account_number")


def test_contract_round_trips_through_to_dict(tmp_path):
    c = HandoffContract("triage", "billing", "specialization", ["a"],
                        {"a": "string", "b": ["number", "null"]}, name="intake")
    p = tmp_path / "c.json"
    p.write_text(json.dumps([c.to_dict()]))
    assert load_contracts(p) == [c]
    assert hash(load_contracts(p)[0]) == hash(c)


YAML = """\
contracts:
  - name: billing intake
    to_agent: billing
    required_context_keys: [account_number]
    value_types: {account_number: string}
  - from_agent: billing
    to_agent: tech
    reason: escalation
    required_context_keys: [error_code, account_number]
    value_types:
      error_code: string
"""


def test_load_yaml_and_check_by_path(tmp_path):
    p = tmp_path / "contracts.yaml"
    p.write_text(YAML)
    loaded = load_contracts(p)
    assert loaded[0].name == "billing intake" and loaded[0].from_agent == "*"
    assert loaded[1].reason.value == "escalation"
    vs = check_handoff_contracts(TRACE, p)
    assert [(v.handoff_index, v.kind, v.key) for v in vs] == [
        (0, "wrong_type", "account_number"), (1, "missing_key", "error_code")]
    assert str(vs[0]).startswith("handoffs[0] (triage→billing) breaks contract 'billing intake'")


def test_load_json_list(tmp_path):
    p = tmp_path / "contracts.json"
    p.write_text(json.dumps([{"to_agent": "billing", "required_context_keys": ["x"]}]))
    assert load_contracts(p) == [HandoffContract("*", "billing", None, ["x"])]


def _problems(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ContractValidationError) as e:
        load_contracts(p)
    assert isinstance(e.value, InputError)
    return [str(pr) for pr in e.value.problems], str(e.value)


def test_errors_name_file_line_and_entry_and_are_all_collected(tmp_path):
    problems, message = _problems(tmp_path, "contracts.yaml", """\
- to_agent: billing
  reason: urgent
- from_agent: triage
- to_agent: tech
  value_types: {error_code: text}
- to_agent: tech
  requried_context_keys: [x]
- just a string
""")
    assert problems[0].startswith("contracts.yaml:1 › contracts[0] › reason: Input should be")
    assert "'escalation'" in problems[0] and problems[0].endswith("(or null for any reason)")
    assert 'contracts.yaml:3 › contracts[1] › to_agent: field required (use "*" for any agent)' \
        in problems
    assert ("contracts.yaml:4 › contracts[2] › value_types › error_code: unknown type 'text'; "
            "use one of string, str,") in "".join(problems)
    assert ("contracts.yaml:6 › contracts[3] › requried_context_keys: unknown field; a contract "
            "has from_agent, to_agent, reason, required_context_keys, value_types and name"
            ) in problems
    assert "contracts.yaml:8 › contracts[4]: expected a mapping (a contract), got str" in problems
    assert message.startswith("5 problems in handoff contracts:")


def test_type_and_field_problems_of_one_entry_are_both_reported(tmp_path):
    problems, _ = _problems(tmp_path, "c.yaml", "- to_agent: a\n  reason: urgent\n"
                                                "  value_types: {k: text}\n")
    assert [p.split(":", 2)[1].strip() for p in problems] == [
        "1 › contracts[0] › value_types › k", "1 › contracts[0] › reason"]


def test_yaml_lines_under_a_contracts_key(tmp_path):
    problems, _ = _problems(tmp_path, "c.yaml", "contracts:\n  - to_agent: a\n  - to_agent: 3\n")
    assert problems == ["c.yaml:3 › contracts[1] › to_agent: Input should be a valid string"]


def test_json_errors_name_the_entry(tmp_path):
    problems, _ = _problems(tmp_path, "c.json", json.dumps([{"to_agent": "a"}, {"reason": "x"}]))
    assert problems[0] == 'c.json › contracts[1] › to_agent: field required (use "*" for any agent)'
    assert problems[1].startswith("c.json › contracts[1] › reason: Input should be")


def test_bad_yaml_gives_line(tmp_path):
    problems, _ = _problems(tmp_path, "c.yml", "- to_agent: billing\n  reason: [unclosed\n")
    assert problems[0].startswith("c.yml:") and "not valid YAML" in problems[0]


def test_bad_json_gives_line(tmp_path):
    problems, _ = _problems(tmp_path, "c.json", '[\n{"to_agent": }\n]')
    assert problems == ["c.json:2: not valid JSON: Expecting value at column 14"]


@pytest.mark.parametrize(("name", "text", "needle"), [
    ("c.yaml", "", "file is empty"),
    ("c.yaml", "to_agent: billing\n", "expected a list of contracts, or a mapping with only"),
    ("c.json", '{"contracts": 3}', "contracts: expected a list of contracts, got int"),
    ("c.toml", "x = 1", "unknown file type '.toml'"),
])
def test_file_level_errors(tmp_path, name, text, needle):
    problems, _ = _problems(tmp_path, name, text)
    assert problems[0].startswith(name) and needle in problems[0]


def test_missing_file(tmp_path):
    with pytest.raises(ContractValidationError, match="nope.yaml: file not found"):
        load_contracts(tmp_path / "nope.yaml")


def test_dict_contracts_in_code_are_validated():
    assert check_handoff_contracts(TRACE, [{"to_agent": "general",
                                            "required_context_keys": ["x"]}])[0].key == "x"
    with pytest.raises(ContractValidationError, match=r"<contracts> › contracts\[0\] › reason"):
        check_handoff_contracts(TRACE, [{"to_agent": "general", "reason": "urgent"}])


def test_violation_is_frozen():
    v = check_handoff_contracts(TRACE, CONTRACTS)[0]
    assert isinstance(v, ContractViolation)
    with pytest.raises(AttributeError):
        v.key = "other"  # type: ignore[misc]
