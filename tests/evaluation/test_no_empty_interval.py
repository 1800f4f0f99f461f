"""No interval that isn't one: below the minimum number of conversations, or when every
conversation has the same value, the aggregates give no CI and say why — in the DataFrame,
the report and the CLI (whose JSON is strict: null, never NaN)."""

import json
import math
import warnings

from maev_kit import report
from maev_kit.evaluation import evaluate
from maev_kit.evaluation._aggregate import MIN_CONVERSATIONS_FOR_INTERVAL

from ._cases import two_conversations
from cli_helpers import run_cli

SAMPLE = "tests/data/trace_samples/openai_agents_trace.json"


def _evaluate(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(source, progress=False, n_resamples=200, **kw)


def test_one_conversation_has_no_interval_and_says_why():
    result = _evaluate(SAMPLE)
    row = result.summary().loc["composite"]
    assert row["n"] == 1 and not math.isnan(row["mean"])
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    assert f"no interval: 1 conversation, fewer than {MIN_CONVERSATIONS_FOR_INTERVAL}" \
        in row["note"]
    page = report(result).html
    assert "no interval: 1 conversation" in page
    assert "0.600 – 0.600" not in page


def test_the_same_value_everywhere_is_no_interval():
    traces, exps = two_conversations()
    good = traces[0]
    many = [type(good)(f"c{i}", turns=good.turns, handoffs=good.handoffs,
                       user_messages=good.user_messages) for i in range(24)]
    exp = exps["good"]
    result = _evaluate(many, expectations=[{**_exp_dict(exp), "conversation_id": f"c{i}"}
                                           for i in range(24)])
    row = result.summary().loc["routing_exact"]
    assert row["n"] == 24 and row["mean"] == 1.0
    assert math.isnan(row["ci_low"]) and "all 24 conversations have the same value" in \
        row["note"]


def test_enough_varied_conversations_keep_their_interval():
    row = _evaluate("support_desk").summary().loc["composite"]
    assert row["ci_low"] < row["mean"] < row["ci_high"] and "no interval" not in row["note"]


def test_cli_json_is_strict_and_says_why(capsys):
    code, out, err = run_cli(["score", SAMPLE, "--json"], capsys)
    assert code == 0, err
    data = json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(
        ValueError(f"non-standard JSON constant {c}")))
    comp = next(r for r in data["aggregates"] if r["metric"] == "composite")
    assert comp["ci_low"] is None and comp["ci_high"] is None
    assert comp["note"].startswith("no interval: 1 conversation")
    hq = next(r for r in data["aggregates"] if r["metric"] == "handoff_quality")
    assert hq["mean"] is None  # n/a is null too


def _exp_dict(exp):
    from maev_kit.expectations import expectations_to_dict

    return expectations_to_dict(exp)
