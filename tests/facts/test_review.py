"""FactReviewSession: review proposed facts headlessly, durably, blind to any judge."""

from __future__ import annotations

import dataclasses
import inspect
import json
import warnings
from pathlib import Path

import pytest

from maev_kit.errors import InputError
from maev_kit.expectations import load_expectations
from maev_kit.facts._model import ProposedFact, fact_id_for
from maev_kit.facts._review import (
    DecisionFileError,
    FactReviewSession,
    FactReviewWarning,
    FactUnderReview,
    HandoffUnderReview,
    ReviewDecision,
    Span,
)
from maev_kit.retention import build_retention_items
from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace

LINE_KEYS = {"fact_id", "conversation_id", "handoff_index", "reviewer", "decision", "text",
             "value", "created_at"}


def _traces() -> list[MultiAgentTrace]:
    return [
        MultiAgentTrace(
            "c-001", user_messages=["Hi, I'm Dana. My account is ACCT-4471 and I was charged "
                                    "$120 twice."],
            turns=[AgentTurn("triage", "router", "Passing you to billing.", turn_index=1),
                   AgentTurn("billing", "specialist", "Which account?", turn_index=3),
                   AgentTurn("billing", "specialist", "Sending you to refunds.", turn_index=4)],
            handoffs=[Handoff("triage", "billing", turn_index=2),
                      Handoff("billing", "refunds", turn_index=5)]),
        MultiAgentTrace(
            "c-002", user_messages=["Order #5512 never arrived, 3 boxes."],
            turns=[AgentTurn("triage", "router", "Shipping will help.", turn_index=1)],
            handoffs=[Handoff("triage", "shipping", turn_index=2)]),
    ]


def _fact(cid: str, hi: int, text: str, value: str | None, kind: str = "identifier",
          source: int | None = 0, proposer: str = "offline") -> ProposedFact:
    return ProposedFact(cid, hi, fact_id_for(hi, text), text, value, kind, source, proposer)


ACCOUNT = _fact("c-001", 0, "Account is ACCT-4471", "ACCT-4471")
MONEY = _fact("c-001", 0, "Charged $120 twice", "$120", "money")
NAME = _fact("c-001", 0, "Name is Dana", "dana", "name")  # found case-insensitively
ACCOUNT_H1 = _fact("c-001", 1, "Account is ACCT-4471", "ACCT-4471")
ORDER = _fact("c-002", 0, "Order is #5512", "#5512", proposer="llm:x+offline")
BOXES = _fact("c-002", 0, "3 boxes", "3 boxes", "quantity")
PROPOSALS = [ACCOUNT, MONEY, NAME, ACCOUNT_H1, ORDER, BOXES]


def _session(path: Path, reviewer: str = "ana", proposals=PROPOSALS) -> FactReviewSession:
    return FactReviewSession(_traces(), proposals, path, reviewer=reviewer)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "fact_reviews.jsonl"


def test_walks_handoffs_with_proposals_and_locates_spans(path):
    s = _session(path)
    assert len(s) == 3 and s.position == 0
    h = s.current
    assert isinstance(h, HandoffUnderReview)
    assert (h.conversation_id, h.handoff_index, h.from_agent, h.to_agent) == (
        "c-001", 0, "triage", "billing")
    # the conversation view (since 095b326) shows the handoff itself as an entry
    assert [(m.kind, m.content) for m in h.before] == [
        ("user", "Hi, I'm Dana. My account is ACCT-4471 and I was charged $120 twice."),
        ("text", "Passing you to billing."), ("handoff", "→ billing()")]
    assert [f.fact_id for f in h.facts] == [ACCOUNT.fact_id, MONEY.fact_id, NAME.fact_id]
    text = h.before[0].content
    spans = {f.fact.text: f.span for f in h.facts}
    for fact_text, value in (("Account is ACCT-4471", "ACCT-4471"),
                             ("Charged $120 twice", "$120"), ("Name is Dana", "Dana")):
        sp = spans[fact_text]
        assert sp.message_index == 0 and text[sp.start:sp.end] == value
    # the second handoff sees every message up to it, not the ones after
    h1 = s.next()
    assert (h1.conversation_id, h1.handoff_index) == ("c-001", 1)
    # (the handoff entries, turn indices 2 and 5, are part of the view since 095b326)
    assert [m.turn_index for m in h1.before] == [0, 1, 2, 3, 4, 5]
    assert s.next().conversation_id == "c-002"
    assert s.next().conversation_id == "c-002"  # stays on the last
    assert s.prev().handoff_index == 1 and s.previous().handoff_index == 0
    assert s.previous().handoff_index == 0


def test_span_is_none_when_the_value_is_not_before_the_handoff(path):
    ghost = _fact("c-002", 0, "Refund of $999", "$999", "money")
    s = _session(path, proposals=[ghost])
    assert s.current.facts[0].span is None
    assert s.current.facts[0].fact.value == "$999"


def test_accept_reject_edit_add_undo_on_disk(path):
    s = _session(path)
    assert s.focused.fact_id == ACCOUNT.fact_id
    a = s.accept()
    assert isinstance(a, ReviewDecision) and a.decision == "accept"
    assert s.focused.fact_id == MONEY.fact_id  # focus moves to the next undecided fact
    s.reject()
    e = s.edit(NAME.fact_id, text="Customer's name is Dana Smith", value="Dana")
    assert e.fact_id == NAME.fact_id  # an edit keeps the id, so labels survive
    s.next()
    added = s.add(None, "Account ACCT-4471 was charged twice", value="ACCT-4471")
    assert added.fact_id == fact_id_for(1, "Account ACCT-4471 was charged twice")
    assert added.handoff_index == 1

    lines = _lines(path)
    assert [(x["decision"], x["fact_id"]) for x in lines] == [
        ("accept", ACCOUNT.fact_id), ("reject", MONEY.fact_id), ("edit", NAME.fact_id),
        ("add", added.fact_id)]
    assert all(set(x) == LINE_KEYS for x in lines)
    assert all(x["reviewer"] == "ana" and x["created_at"].endswith("Z") for x in lines)
    assert lines[2]["text"] == "Customer's name is Dana Smith" and lines[2]["value"] == "Dana"
    assert lines[0]["text"] == ACCOUNT.text and lines[0]["value"] == "ACCT-4471"

    got = {f.fact_id: f for f in s.reviewed_facts()}
    assert set(got) == {ACCOUNT.fact_id, NAME.fact_id, added.fact_id}
    assert got[ACCOUNT.fact_id] == dataclasses.replace(ACCOUNT, reviewed=True)
    assert got[NAME.fact_id].text == "Customer's name is Dana Smith"
    assert got[NAME.fact_id].value == "Dana" and got[NAME.fact_id].proposer == "offline"
    new = got[added.fact_id]
    assert (new.proposer, new.reviewed, new.value, new.source_turn_index) == (
        "reviewer", True, "ACCT-4471", 0)
    assert all(f.reviewed for f in got.values())

    # undo: the add is gone (an "undo" line), then the edit is gone, then the reject
    assert s.undo().handoff_index == 1
    assert added.fact_id not in {f.fact_id for f in s.current.facts}
    assert _lines(path)[-1] == {**_lines(path)[-1], "decision": "undo", "text": None,
                                "value": None, "fact_id": added.fact_id}
    back = s.undo()
    assert (back.conversation_id, back.handoff_index) == ("c-001", 0)
    assert s.focused.fact_id == NAME.fact_id and s.focused.decision is None
    assert {f.fact_id for f in s.reviewed_facts()} == {ACCOUNT.fact_id}
    assert s.progress["decided"] == 2


def test_undo_restores_the_earlier_decision(path):
    s = _session(path)
    s.accept(MONEY.fact_id)
    s.edit(MONEY.fact_id, text="Charged $120 two times")
    s.undo()
    assert s.decision_of(MONEY.fact_id).decision == "accept"
    assert [x["decision"] for x in _lines(path)] == ["accept", "edit", "accept"]
    assert s.undo() is not None and s.decision_of(MONEY.fact_id) is None
    assert s.undo() is None  # nothing left this session
    assert not s.can_undo


def test_resume_after_reopening(path):
    s = _session(path)
    s.accept()
    s.accept()
    s.reject()
    s.next()
    s.edit(text="Account ACCT-4471")  # the focused fact of handoff 1
    # a new session (a new kernel) continues at the first handoff with an undecided fact
    s2 = _session(path)
    assert (s2.current.conversation_id, s2.current.handoff_index) == ("c-002", 0)
    assert s2.focused.fact_id == ORDER.fact_id
    assert s2.progress == {"handoffs_done": 2, "handoffs": 3, "decided": 4, "facts": 6,
                           "accepted": 2, "edited": 1, "rejected": 1, "added": 0}
    assert [f.decision for f in s2.handoff("c-001", 0).facts] == ["accept", "accept", "reject"]
    assert s2.handoff("c-001", 1).facts[0].fact.text == "Account ACCT-4471"
    assert not s2.can_undo  # undo covers this session's decisions only
    # another reviewer in the same file starts from scratch
    other = _session(path, reviewer="ben")
    assert other.position == 0 and other.progress["decided"] == 0
    other.reject(ACCOUNT.fact_id)
    assert _session(path).decision_of(ACCOUNT.fact_id).decision == "accept"
    # everything decided: reopening lands on the first handoff, done
    for f in (ORDER, BOXES):
        s2.accept(f.fact_id)
    s3 = _session(path)
    assert s3.done and s3.position == 0 and s3.progress["decided"] == 6


def test_latest_decision_wins(path):
    s = _session(path)
    s.accept(ORDER.fact_id)
    s.reject(ORDER.fact_id)
    s.edit(ORDER.fact_id, text="Order number is #5512")
    s.reject(ORDER.fact_id)
    s.accept(ORDER.fact_id)
    assert len(_lines(path)) == 5
    again = _session(path)
    assert again.decision_of(ORDER.fact_id).decision == "accept"
    # accept means "as proposed": the earlier edit no longer applies
    assert [f.text for f in again.reviewed_facts()] == ["Order is #5512"]


def test_refresh_sees_another_process(path):
    a, b = _session(path), _session(path)
    a.accept(BOXES.fact_id)
    assert b.decision_of(BOXES.fact_id) is None
    b.refresh()
    assert b.decision_of(BOXES.fact_id).decision == "accept"


def test_torn_last_line_is_reported_ignored_and_cut(path):
    s = _session(path)
    s.accept(ACCOUNT.fact_id)
    with open(path, "ab") as f:
        f.write(b'{"fact_id": "p-1", "conversation_id": "c-0')  # a crash mid-write
    with pytest.warns(FactReviewWarning, match=r"fact_reviews.jsonl:2: torn last line"):
        s2 = _session(path)
    assert s2.torn_last_line is not None and s2.torn_last_line.line == 2
    assert s2.decision_of(ACCOUNT.fact_id).decision == "accept"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s2.reject(MONEY.fact_id)  # cuts the fragment off first
        assert s2.torn_last_line is None
        assert [x["decision"] for x in _lines(path)] == ["accept", "reject"]
        assert _session(path).decision_of(MONEY.fact_id).decision == "reject"


@pytest.mark.parametrize("line, where", [
    ('{"fact_id": "p-1", "conversation_id": "c-001", "handoff_index": 0, "reviewer": "ana", '
     '"decision": "maybe"}', ":2 › decision:"),
    ('{"fact_id": "p-1", "conversation_id": "c-001", "handoff_index": "0", "reviewer": "ana", '
     '"decision": "accept"}', ":2 › handoff_index:"),
    ('{"fact_id": "p-1", "conversation_id": "c-001", "handoff_index": 0, "reviewer": "ana", '
     '"decision": "edit", "text": " "}', ":2 › text:"),
    ('{"fact_id": "p-1", "conversation_id": "c-001", "handoff_index": 0, "reviewer": "ana", '
     '"decision": "accept", "verdict": "lost"}', ":2 › verdict: unknown field"),
    ('{"fact_id": "p-1", "conversation_id": "c-001", "handoff_index": 0, "decision": '
     '"accept"}', ":2 › reviewer: field required"),
    ("{not json", ":2: not valid JSON"),
])
def test_malformed_line_is_one_input_error_naming_file_line_field(path, line, where):
    s = _session(path)
    s.accept(ACCOUNT.fact_id)
    with open(path, "a") as f:
        f.write(line + "\n")
        f.write(json.dumps(_lines(path)[0]) + "\n")  # a good line after it: not a torn tail
    with pytest.raises(DecisionFileError) as err:
        _session(path)
    assert isinstance(err.value, InputError)
    assert len(err.value.problems) == 1
    assert f"fact_reviews.jsonl{where}" in str(err.value)


def test_export_feeds_build_retention_items_with_exactly_the_reviewed_facts(path, tmp_path):
    s = _session(path)
    s.accept(ACCOUNT.fact_id)
    s.reject(MONEY.fact_id)
    s.edit(NAME.fact_id, text="Name is Dana Smith")
    s.add(("c-001", 1), "Wants a refund of $120", value="$120")
    s.reject(ORDER.fact_id)
    s.reject(BOXES.fact_id)
    out = tmp_path / "expectations.jsonl"
    written = s.export_expectations(out)
    assert [r.conversation_id for r in written] == ["c-001", "c-002"]
    exp = load_expectations(out)
    assert exp["c-002"].key_facts == []  # reviewed, every proposal rejected
    reviewed = s.reviewed_facts()
    assert len(reviewed) == 3
    assert exp["c-001"].metadata["facts_reviewed_by"] == "ana"
    assert exp["c-001"].metadata["fact_proposers"] == {f.fact_id: f.proposer for f in reviewed}
    items = build_retention_items(_traces(), out)
    # each fact is judged at its first handoff (hop 0) and at every later one (095b326)
    first = {(f"{f.conversation_id}/h{f.handoff_index}/{f.fact_id}", f.text) for f in reviewed}
    assert first <= {(i.item_id, i.fact) for i in items}
    assert {i.fact_key for i in items} == {f.fact_id for f in reviewed}
    assert {i.fact for i in items} == {"Account is ACCT-4471", "Name is Dana Smith",
                                       "Wants a refund of $120"}


def test_export_leaves_out_conversations_not_reviewed(path, tmp_path):
    s = _session(path)
    s.accept(ORDER.fact_id)
    written = s.export_expectations(tmp_path / "e.jsonl")
    assert [(r.conversation_id, [k.text for k in r.key_facts]) for r in written] == [
        ("c-002", ["Order is #5512"])]


def test_blind_no_verdict_anywhere(path):
    params = set(inspect.signature(FactReviewSession).parameters)
    assert params == {"traces", "proposed_facts", "store_path", "reviewer"}
    s = _session(path)
    s.accept()
    s.add(None, "Prefers email", value=None)
    for cls in (FactUnderReview, HandoffUnderReview, Span, ProposedFact):
        names = {f.name for f in dataclasses.fields(cls)}
        assert not names & {"verdict", "verdicts", "judge", "label", "rationale"}, cls
    assert set(ReviewDecision.model_fields) == LINE_KEYS
    for line in _lines(path):
        assert set(line) == LINE_KEYS
    public = [n for n in dir(s) if not n.startswith("_")]
    assert not [n for n in public if "verdict" in n or "judge" in n]


def test_fact_ids_shared_by_two_conversations_need_conversation_id(path):
    twin = _fact("c-002", 0, "Account is ACCT-4471", "ACCT-4471")
    assert twin.fact_id == ACCOUNT.fact_id
    s = _session(path, proposals=[ACCOUNT, ORDER, twin])
    s.next()  # at c-002: the current handoff's fact wins
    assert s.accept(ACCOUNT.fact_id).conversation_id == "c-002"
    s.previous()
    s.next()
    s.go_to("c-001", 0)
    assert s.accept(twin.fact_id).conversation_id == "c-001"
    s.go_to("c-002", 0)
    s.add(None, "Lives in Lyon")
    with pytest.raises(KeyError, match="no fact 'p-0000000000'"):
        s.reject("p-0000000000")


def test_ambiguous_fact_id_outside_the_current_handoff(path):
    twin = _fact("c-002", 0, "Account is ACCT-4471", "ACCT-4471")
    s = _session(path, proposals=[ACCOUNT, ACCOUNT_H1, ORDER, twin])
    s.go_to("c-001", 1)
    with pytest.raises(ValueError, match="pass `conversation_id=`"):
        s.accept(ACCOUNT.fact_id)
    assert s.accept(ACCOUNT.fact_id, conversation_id="c-002").conversation_id == "c-002"
    assert s.current.key == ("c-001", 1)  # deciding elsewhere does not move


def test_add_refuses_a_duplicate_and_blank_text(path):
    s = _session(path)
    with pytest.raises(ValueError, match="already proposed here"):
        s.add(None, "account is acct-4471!")
    with pytest.raises(ValueError, match="non-blank text"):
        s.add(None, "  ")
    s.add(None, "Lives in Lyon", value="Lyon")
    with pytest.raises(ValueError, match="already added here"):
        s.add(None, "Lives in Lyon")
    with pytest.raises(KeyError, match="no handoff 7"):
        s.add(("c-001", 7), "x")
    with pytest.raises(ValueError, match="non-blank text"):
        s.edit(text=" ")
    assert len(_lines(path)) == 1


def test_an_added_fact_can_be_edited_rejected_and_readded(path):
    s = _session(path)
    d = s.add(None, "Lives in Lyon", value="Lyon")
    s.edit(d.fact_id, text="Lives in Lyon, France")
    assert [f.text for f in s.reviewed_facts() if f.proposer == "reviewer"] == [
        "Lives in Lyon, France"]
    s.reject(d.fact_id)
    assert [f.fact_id for f in s.current.facts][-1] == d.fact_id  # shown, rejected
    assert not [f for f in s.reviewed_facts() if f.proposer == "reviewer"]
    s.add(None, "Lives in Lyon")
    reopened = _session(path)
    added = [f for f in reopened.current.facts if f.added]
    assert [(f.fact.text, f.decision) for f in added] == [("Lives in Lyon", "add")]


def test_a_handoff_with_only_added_facts_joins_the_walk(path):
    s = _session(path, proposals=[ORDER])
    assert len(s) == 1
    s.add(("c-001", 1), "Wants a refund", value=None)
    assert len(s) == 2 and s.current.key == ("c-002", 0)
    s.go_to("c-001", 1)
    assert s.position == 0 and _session(path, proposals=[ORDER]).handoff("c-001", 1).facts
    s.undo()
    assert len(s) == 1 and s.current.key == ("c-002", 0)


def test_bad_input(path):
    with pytest.raises(InputError, match=r"proposed_facts\[1\] › conversation_id: 'c-9'"):
        _session(path, proposals=[ACCOUNT, _fact("c-9", 0, "x", None)])
    with pytest.raises(InputError, match=r"proposed_facts\[0\] › handoff_index: 3 but"):
        _session(path, proposals=[_fact("c-002", 3, "x", None)])
    with pytest.raises(InputError, match="proposed twice"):
        _session(path, proposals=[ACCOUNT, ACCOUNT])
    with pytest.raises(ValueError, match="nothing to review"):
        _session(path, proposals=[])
    with pytest.raises(TypeError, match=r"proposed_facts\[0\]` must be a ProposedFact"):
        _session(path, proposals=[ACCOUNT.to_dict()])
    with pytest.raises(ValueError, match="reviewer"):
        _session(path, reviewer=" ")
    with pytest.raises(ValueError, match="is a folder"):
        _session(path.parent)
    assert not path.exists()  # nothing was written


# ---------------------------------------------------------------- export merges, never replaces
def _support_desk_copy(tmp_path: Path) -> Path:
    import shutil

    from maev_kit.datasets import bundled_set_path

    dst = tmp_path / "sd"
    shutil.copytree(bundled_set_path("support_desk"), dst)
    return dst


def _review_two_conversations(folder: Path) -> tuple[FactReviewSession, list[ProposedFact]]:
    """A real review on the bundled set: offline proposals for sd-001 and sd-002, plus the
    hand-written facts of sd-001 shown for review (proposer "expectations"). The reviewer
    accepts one proposal, edits one, adds one, rejects one proposal and one hand-written
    fact; nothing else is decided."""
    from maev_kit.datasets import load_labeled_set
    from maev_kit.facts import propose_facts

    ls = load_labeled_set(folder)
    props = [f for f in propose_facts(ls.traces, method=["offline"])
             if f.conversation_id in ("sd-001", "sd-002")]
    hand = [ProposedFact("sd-001", k.handoff_index, k.fact_id, k.text, None, "other", None,
                         "expectations") for k in ls.expectations["sd-001"].key_facts]
    s = FactReviewSession(ls.traces, props + hand, folder / "fact_reviews.jsonl",
                          reviewer="ana")
    p1 = [f for f in props if f.conversation_id == "sd-001"]
    p2 = [f for f in props if f.conversation_id == "sd-002"]
    s.accept(p1[0].fact_id)
    s.edit(p1[1].fact_id, text="Account ACCT-5949 (edited)")
    s.reject(p1[2].fact_id)
    s.reject("f3_router", conversation_id="sd-001")      # a hand-written fact, rejected
    s.add(("sd-002", 0), "Customer wants a refund")
    s.accept(p2[0].fact_id)
    return s, props


def _facts_per_line(path: Path) -> dict[str, list[str]]:
    return {d["conversation_id"]: [k["fact_id"] for k in d["key_facts"]]
            for d in map(json.loads, path.read_text().splitlines())}


def test_export_merges_into_the_file_and_keeps_everything_not_reviewed(tmp_path):
    folder = _support_desk_copy(tmp_path)
    exp = folder / "expectations.jsonl"
    before_bytes = exp.read_bytes()
    before_lines = before_bytes.splitlines(keepends=True)
    before = _facts_per_line(exp)
    n_facts = sum(map(len, before.values()))
    s, props = _review_two_conversations(folder)
    decisions = (folder / "fact_reviews.jsonl").read_text().splitlines()

    written = s.export_expectations(exp)

    after_lines = exp.read_bytes().splitlines(keepends=True)
    after = _facts_per_line(exp)
    assert len(after_lines) == len(before_lines) == 85
    # every conversation not reviewed: the same bytes, line for line
    same = [a == b for a, b in zip(before_lines, after_lines)]
    assert sum(same) == 83
    assert [cid for cid, ok in zip(before, same) if not ok] == ["sd-001", "sd-002"]
    # sd-001: hand-written facts kept except the rejected one; kept proposals added
    assert after["sd-001"] == ["f1_appointment", "f2_account_number",
                               props[0].fact_id, props[1].fact_id]
    # sd-002: its hand-written fact kept, the accepted proposal and the added fact appended
    assert after["sd-002"][0] == "f1_account_number" and len(after["sd-002"]) == 3
    assert sum(map(len, after.values())) == n_facts - 1 + 4
    texts = {k["fact_id"]: k["text"] for k in json.loads(after_lines[0])["key_facts"]}
    assert texts[props[1].fact_id] == "Account ACCT-5949 (edited)"
    line = json.loads(after_lines[0])
    assert line["handoffs"] and line["routing"] and line["metadata"]["scenario"] == "clean"
    assert line["metadata"]["facts_reviewed_by"] == "ana"
    assert written.changed == ["sd-001", "sd-002"] and written.added == []
    assert written.removed == [("sd-001", "f3_router")] and written.unchanged == 83
    assert [r.conversation_id for r in written] == ["sd-001", "sd-002"]
    # the decisions file is untouched by an export; no temporary file is left behind
    assert (folder / "fact_reviews.jsonl").read_text().splitlines() == decisions
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md", "expectations.jsonl", "fact_reviews.jsonl", "labels.jsonl",
        "manifest.json", "traces.jsonl"]
    # exporting again changes nothing: the merge is idempotent
    again = s.export_expectations(exp)
    assert exp.read_bytes().splitlines(keepends=True) == after_lines
    assert again.changed == [] and again.diff == ""


def test_export_dry_run_returns_the_diff_and_writes_nothing(tmp_path):
    folder = _support_desk_copy(tmp_path)
    exp = folder / "expectations.jsonl"
    before = exp.read_bytes()
    s, _ = _review_two_conversations(folder)
    dry = s.export_expectations(exp, dry_run=True)
    assert exp.read_bytes() == before and not dry.written and dry.dry_run
    minus = [ln for ln in dry.diff.splitlines() if ln.startswith("-{")]
    plus = [ln for ln in dry.diff.splitlines() if ln.startswith("+{")]
    assert len(minus) == len(plus) == 2 and '"sd-001"' in minus[0]
    assert "f3_router" in minus[0] and "f3_router" not in plus[0]
    assert "would change" in dry.summary() and "nothing written" in repr(dry)
    real = s.export_expectations(exp)
    assert real.diff == dry.diff and real.written


def test_export_to_a_new_file_and_a_conversation_the_file_lacks(tmp_path):
    folder = _support_desk_copy(tmp_path)
    s, _ = _review_two_conversations(folder)
    new = tmp_path / "fresh" / "expectations.jsonl"
    written = s.export_expectations(new)
    assert written.added == ["sd-001", "sd-002"]
    got = _facts_per_line(new)
    assert len(got["sd-001"]) == 2 and len(got["sd-002"]) == 2  # only reviewed facts
    # a file listing other conversations: theirs stay, the reviewed ones are appended
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"conversation_id": "sd-050", "key_facts": []}')  # no final newline
    s.export_expectations(other)
    lines = other.read_bytes().splitlines(keepends=True)
    assert lines[0] == b'{"conversation_id": "sd-050", "key_facts": []}\n'
    assert [json.loads(x)["conversation_id"] for x in lines] == ["sd-050", "sd-001", "sd-002"]


def test_export_refuses_a_malformed_file_and_writes_nothing(tmp_path):
    from maev_kit.facts._review import ExpectationsFileError

    folder = _support_desk_copy(tmp_path)
    exp = folder / "expectations.jsonl"
    s, _ = _review_two_conversations(folder)
    exp.write_bytes(exp.read_bytes() + b'{"conversation_id": 7}\n')
    before = exp.read_bytes()
    with pytest.raises(ExpectationsFileError, match=r"expectations.jsonl:86"):
        s.export_expectations(exp)
    assert exp.read_bytes() == before
