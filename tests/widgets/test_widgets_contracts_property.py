"""The trace viewer marks exactly what the metrics count (one rule in one place).

Contracts: the viewer flags each violation :func:`check_handoff_contracts` finds, no more.
Expectations: the viewer pairs expected handoffs with actual ones as
:func:`score_handoff_accuracy` does (aligned), so its missing keys are the metric's.
"""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit.expectations import ConversationExpectations, HandoffExpectation
from maev_kit.metrics import (
    HandoffContract,
    check_handoff_contracts,
    contract_violations_by_handoff,
    score_handoff_accuracy,
)
from maev_kit.traces import Handoff, HandoffReason, MultiAgentTrace
from maev_kit.widgets._render import trace_html

AGENTS = ["triage", "billing", "tech", "general"]
KEYS = ["account_number", "error_code", "amount", "<k>"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                   st.text(max_size=3), st.lists(st.integers(), max_size=2),
                   st.dictionaries(st.just("x"), st.integers(), max_size=1))
REASONS = st.sampled_from(list(HandoffReason))


class Flags(HTMLParser):
    """(handoff index, kind, key) of every flagged row, and the expected handoffs never made."""

    def __init__(self) -> None:
        super().__init__()
        self.handoff: int | None = None
        self.flags: Counter[tuple[int, str, str]] = Counter()
        self.never_made: list[int] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-handoff" in a:
            self.handoff = int(a["data-handoff"])
        if tag == "tr" and a.get("class") == "missing":
            assert self.handoff is not None
            self.flags[(self.handoff, a["data-kind"], a["data-key"])] += 1
        if "data-expected" in a:
            self.never_made.append(int(a["data-expected"]))


def flags_of(page: str) -> Flags:
    p = Flags()
    p.feed(page)
    return p


@st.composite
def traces(draw) -> MultiAgentTrace:
    n = draw(st.integers(0, 6))
    handoffs = []
    for i in range(n):
        ctx = draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=3))
        handoffs.append(Handoff(draw(st.sampled_from(AGENTS)), draw(st.sampled_from(AGENTS)),
                                draw(REASONS), ctx, turn_index=i + 1))
    return MultiAgentTrace("c-prop", handoffs=handoffs)


@st.composite
def contracts(draw) -> list[HandoffContract]:
    out = []
    for _ in range(draw(st.integers(0, 4))):
        types = draw(st.dictionaries(st.sampled_from(KEYS), st.lists(
            st.sampled_from(["string", "integer", "number", "boolean", "array", "object",
                             "null", "any"]), min_size=1, max_size=2), max_size=2))
        out.append(HandoffContract(
            draw(st.sampled_from(["*", *AGENTS])), draw(st.sampled_from(["*", *AGENTS])),
            draw(st.one_of(st.none(), REASONS)),
            draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)), types))
    return out


@st.composite
def expectations(draw) -> list[HandoffExpectation]:
    return [HandoffExpectation(draw(st.sampled_from(AGENTS)), draw(st.one_of(st.none(), REASONS)),
                               draw(st.lists(st.sampled_from(KEYS), max_size=2, unique=True)))
            for _ in range(draw(st.integers(0, 5)))]


SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(traces(), contracts())
def test_viewer_flags_exactly_the_contract_violations(trace, rules):
    found = check_handoff_contracts(trace, rules)
    want = Counter((v.handoff_index, v.kind, v.key) for v in found)
    assert flags_of(trace_html(trace, contracts=rules)).flags == want
    grouped = contract_violations_by_handoff(trace, rules)
    assert [v for i in sorted(grouped) for v in grouped[i]] == found


@SETTINGS
@given(traces(), expectations())
def test_viewer_pairs_expectations_as_the_metric_does(trace, exps):
    ce = ConversationExpectations("c-prop", handoffs=exps)
    page = flags_of(trace_html(trace, contracts=ce))
    if not exps:
        assert not page.flags and not page.never_made
        return
    details = score_handoff_accuracy(trace, exps)["handoff_details"]
    want = Counter((d["actual_index"], "missing_key", k) for d in details
                   if d["actual_index"] is not None for k in d["missing_context_keys"])
    assert page.flags == want
    assert page.never_made == [d["expected_index"] for d in details if d["actual_index"] is None]
    # a handoff the viewer leaves unflagged is one the metric calls context-complete
    complete = {d["actual_index"] for d in details if d["context_complete"]}
    assert not {i for i, _, _ in page.flags} & complete


def test_one_extra_early_handoff_flags_nothing():
    """The issue's case: the metric says context complete, so the viewer flags nothing."""
    exps = [HandoffExpectation("billing", "specialization", ["account_number"]),
            HandoffExpectation("tech", "escalation", ["account_number", "error_code"])]
    trace = MultiAgentTrace("c-1", handoffs=[
        Handoff("triage", "general", "fallback", {}, turn_index=1),
        Handoff("general", "billing", "specialization", {"account_number": "A-1"}, turn_index=2),
        Handoff("billing", "tech", "escalation", {"account_number": "A-1", "error_code": "E42"},
                turn_index=3)])
    assert score_handoff_accuracy(trace, exps)["context_completeness"] == 1.0
    page = flags_of(trace_html(trace, contracts=ConversationExpectations("c-1", handoffs=exps)))
    assert not page.flags and page.never_made == []


def test_a_dict_of_required_keys_is_checked_as_contracts():
    trace = MultiAgentTrace("c-1", handoffs=[
        Handoff("triage", "billing", "specialization", {}, turn_index=1),
        Handoff("billing", "tech", "escalation", {"error_code": 1}, turn_index=2)])
    page = flags_of(trace_html(trace, contracts={"billing": ["account_number"],
                                                 ("billing", "tech"): ["error_code"]}))
    assert page.flags == Counter({(0, "missing_key", "account_number"): 1})
