import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maev_kit.judges import RetentionJudge, parse_retention_reply
from maev_kit.retention import LABELS

from .conftest import make_item

GOOD = {"F1": {"status": "retained", "reason": "quoted the account"},
        "F2": {"status": "lost", "reason": "asked again"},
        "F3": {"status": "contradicted", "reason": "Thursday"}}


def labels(reply, items):
    return [(v.label, v.error) for v in RetentionJudge().parse(reply, items)]


@pytest.mark.parametrize("wrap", [
    "{}",
    "```json\n{}\n```",
    "```\n{}\n```",
    "Here is my assessment:\n```json\n{}\n```\nLet me know if you need more.",
    "Sure! {} Hope this helps.",
    "  \n{}\n\n",
])
def test_json_in_fences_or_prose_is_accepted(wrap, three_items):
    reply = wrap.replace("{}", json.dumps(GOOD))
    verdicts = RetentionJudge().parse(reply, three_items)
    assert [v.label for v in verdicts] == ["retained", "lost", "contradicted"]
    assert [v.item_id for v in verdicts] == [it.item_id for it in three_items]
    assert verdicts[0].rationale == "quoted the account"
    assert all(v.raw is None and v.error is None for v in verdicts)


def test_bare_labels_case_and_evidence_are_accepted(three_items):
    reply = json.dumps({"F1": "Retained", "f2": {"label": " lost "},
                        "F3": {"status": "contradicted", "evidence": ["says Thursday"]}})
    verdicts = RetentionJudge().parse(reply, three_items)
    assert [v.label for v in verdicts] == ["retained", "lost", "contradicted"]
    assert verdicts[2].evidence == ("says Thursday",)


def test_label_outside_the_three_is_an_error_for_that_fact_only(three_items):
    reply = json.dumps({**GOOD, "F2": {"status": "partially retained"}})
    got = labels(reply, three_items)
    assert got[0] == ("retained", None) and got[2] == ("contradicted", None)
    assert got[1][0] is None and "not one of" in got[1][1]
    assert RetentionJudge().parse(reply, three_items)[1].raw == reply


def test_missing_fact_is_an_error_for_that_fact(three_items):
    reply = json.dumps({"F1": GOOD["F1"], "F3": GOOD["F3"]})
    got = labels(reply, three_items)
    assert got[1] == (None, "fact F2 is missing from the reply")
    assert got[0][0] == "retained" and got[2][0] == "contradicted"


@pytest.mark.parametrize("extra", ["F4", "F0", "fact_1", "Account is ACCT-4471", "status"])
def test_extra_or_unknown_fact_id_makes_every_fact_an_error(extra, three_items):
    reply = json.dumps({**GOOD, extra: {"status": "lost"}})
    verdicts = RetentionJudge().parse(reply, three_items)
    assert all(v.label is None and "unknown fact id" in v.error and v.raw == reply
               for v in verdicts)


def test_duplicated_fact_id_is_an_error_for_that_fact(three_items):
    reply = ('{"F1": {"status": "retained"}, "F2": {"status": "lost"}, '
             '"F1": {"status": "contradicted"}, "F3": "lost"}')
    got = labels(reply, three_items)
    assert got[0] == (None, "fact F1 appears more than once")
    assert got[1:] == [("lost", None), ("lost", None)]


@pytest.mark.parametrize("reply, message", [
    ("", "empty reply"),
    ("   ", "empty reply"),
    ("I think everything was retained.", "no JSON object"),
    ('["retained", "lost", "contradicted"]', "JSON list"),
    ('"retained"', "JSON str"),
    ("42", "JSON int"),
    ("null", "JSON NoneType"),
    ('{"F1": {"status": "retained"', "no JSON object"),
    ("{'F1': 'retained'}", "no JSON object"),
    ('{"F1": "retained"} and also {"F1": "lost"}', "2 different JSON objects"),
])
def test_non_object_or_unreadable_replies_are_errors_for_every_fact(reply, message,
                                                                   three_items):
    verdicts = RetentionJudge().parse(reply, three_items)
    assert len(verdicts) == 3
    assert all(v.label is None and message in v.error and v.raw == reply for v in verdicts)


def test_non_string_reply_and_bad_values(three_items):
    assert all(v.error and v.label is None
               for v in RetentionJudge().parse(None, three_items))  # type: ignore[arg-type]
    reply = json.dumps({"F1": 1, "F2": {"reason": "no status"}, "F3": {"status": ["lost"]}})
    got = labels(reply, three_items)
    assert [g[0] for g in got] == [None, None, None]
    assert "JSON int" in got[0][1] and "no `status`" in got[1][1] and "not a string" in got[2][1]


def test_same_object_repeated_is_fine_and_empty_items_give_nothing(three_items):
    one = json.dumps(GOOD)
    assert [v.label for v in RetentionJudge().parse(f"{one}\n\nAgain:\n{one}", three_items)] \
        == ["retained", "lost", "contradicted"]
    assert RetentionJudge().parse(one, []) == []


def test_a_reply_full_of_braces_is_cheap_and_safe(three_items):
    reply = "{" * 100_000 + "[" * 50_000
    verdicts = RetentionJudge().parse(reply, three_items)
    assert all(v.error for v in verdicts)


# --- 10,000 generated malformed replies -------------------------------------------------------
# Hypothesis draws a seed and a mutation; replies are built from them with a seeded generator,
# ten per example: 1,000 examples x 10 = 10,000 replies. (Hypothesis itself costs ~1.5 ms per
# example on this machine and composite strategies ~8 ms, too slow for 10,000 examples.)
REPLIES_PER_EXAMPLE = 10

ITEMS = [make_item(f"fact {i}", "said", fact_id=f"f{i}") for i in range(1, 4)]
KEYS = ["F1", "F2", "F3", "f1", " F2 ", "F4", "F0", "status", "facts", "", "F1 ", "1", "F\u0131"]
LABEL_WORDS = [*LABELS, "RETAINED", "Lost ", "retain", "unknown", "", "null", "partially retained",
               "contradicted.", "lost\n"]
JUNK = ['"', ":", ",", "}", "{", "[", "]", "\\", "```", "\n", "\u0000", "\ud800", "F1", "NaN"]


def _value(rng, depth=0):
    r = rng.random()
    if r < 0.35:
        return rng.choice(LABEL_WORDS)
    if r < 0.45:
        return rng.choice([None, True, 0, -1.5, float("inf"), 10**30])
    if depth >= 2 or r < 0.55:
        return "".join(rng.choice(JUNK + ["a", " ", "é"]) for _ in range(rng.randint(0, 6)))
    if r < 0.65:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["status", "label", "reason", "evidence", "x"]
    return {rng.choice(keys): _value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def malformed_reply(seed, how):
    import random

    rng = random.Random(seed)
    kind = rng.random()
    if kind < 0.6:
        obj = {rng.choice(KEYS): _value(rng) for _ in range(rng.randint(0, 5))}
        if rng.random() < 0.5:
            obj.update({k: {"status": rng.choice(LABEL_WORDS)} for k in ("F1", "F2", "F3")
                        if rng.random() < 0.7})
        base = json.dumps(obj, allow_nan=True)
    elif kind < 0.8:
        base = json.dumps(_value(rng), allow_nan=True)
    else:
        base = "".join(rng.choice(JUNK + LABEL_WORDS + KEYS) for _ in range(rng.randint(0, 12)))
    if how == 1:
        base = f"```{rng.choice(['json', '', 'JSON ', 'py'])}\n{base}\n" + rng.choice(
            ["```", "", "``"])
    elif how == 2:
        base = f"Here is my answer: {base} {rng.choice(['', 'Thanks!', '{', '}'])}"
    elif how == 3:
        base = base[:rng.randint(0, len(base))]
    elif how == 4:
        base = base + rng.choice(["\n", " and ", "```"]) + malformed_reply(seed + 1, 0)
    elif how == 5:
        for _ in range(rng.randint(1, 3)):
            base = base.replace(rng.choice(JUNK), rng.choice(JUNK + [""]), 1)
    elif how == 6:
        base = base.replace('"', "'")
    elif how == 7:
        pos = rng.randint(0, len(base))
        base = base[:pos] + rng.choice(JUNK) + base[pos:]
    return base


@settings(max_examples=1_000, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), how=st.integers(0, 7))
def test_ten_thousand_malformed_replies_never_raise_and_never_invent(seed, how):
    for k in range(REPLIES_PER_EXAMPLE):
        reply = malformed_reply(seed * REPLIES_PER_EXAMPLE + k, (how + k) % 8)
        verdicts = parse_retention_reply(reply, ITEMS)
        assert [v.item_id for v in verdicts] == [it.item_id for it in ITEMS]
        low = reply.lower()
        for i, v in enumerate(verdicts, start=1):
            if v.label is None:
                assert v.error and v.raw == reply
            else:
                assert v.label in LABELS and v.error is None
                # a label only when the reply states it, next to the fact's id
                assert v.label in low and f"f{i}" in low


def test_the_generator_makes_varied_replies():
    replies = [malformed_reply(s, s % 8) for s in range(400)]
    verdicts = [v for r in replies for v in parse_retention_reply(r, ITEMS)]
    labeled = sum(v.label is not None for v in verdicts)
    # both outcomes occur, so the property above is exercised on each side
    assert 0 < labeled < len(verdicts)
    assert len(set(replies)) > 300
