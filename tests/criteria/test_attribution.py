"""Failure attribution: the criterion, its labels and the leaderboard against a direct
computation (agent and step accuracy, Wilson intervals, the three baselines)."""

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from maev_kit.criteria import (ATTRIBUTION, BASELINES, CallableJudge, Criterion,
                               attribution_labels,
                               attribution_leaderboard, builtin, failure_attribution,
                               judge_criterion, parse_attribution, resolve)
from maev_kit.errors import InputError
from maev_kit.traces import AgentTurn, MultiAgentTrace, UserMessage

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ["planner", "searcher", "coder", "terminal"]


def runs(n=60, seed=3):
    """``n`` failed runs of 3–12 turns by random agents."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        k = rng.randint(3, 12)
        turns = [AgentTurn(rng.choice(AGENTS), "", f"turn {j}", turn_index=j + 1)
                 for j in range(k)]
        out.append(MultiAgentTrace(f"run-{i}", turns=turns,
                                   user_messages=[UserMessage("task", 0)]))
    return out


def reference(traces, seed=5):
    """A reference label per run: a random turn's agent at that turn (a few without step)."""
    rng = random.Random(seed)
    out = {}
    for t in traces:
        j = rng.randrange(len(t.turns))
        out[f"{ATTRIBUTION}:{t.conversation_id}"] = (
            t.turns[j].agent_id if rng.random() < 0.1 else f"{t.turns[j].agent_id}@{j}")
    return out


def noisy_judge(seed=7):
    """A judge right about half the time, sometimes without step, raising on some items."""
    rng = random.Random(seed)

    def judge(item):
        r = rng.random()
        if r < 0.08:
            raise RuntimeError("the judge broke")
        j = rng.randrange(len(item.trace.turns))
        agent = item.trace.turns[j].agent_id
        return agent if r > 0.85 else f"{agent}@{j}"
    return judge


def first_agent_name(item):
    return item.trace.turns[0].agent_id


def wilson(k, n):
    return proportion_confint(k, n, alpha=0.05, method="wilson")


def direct_row(answers, ref):
    """The leaderboard row computed by hand from {item_id: answer or None}."""
    got = {i: a for i, a in answers.items() if a is not None}
    split = {i: (a.rsplit("@", 1) if "@" in a else [a, None]) for i, a in got.items()}
    rsplit = {i: (r.rsplit("@", 1) if "@" in r else [r, None]) for i, r in ref.items()}
    k = sum(split[i][0] == rsplit[i][0] for i in got)
    n = len(got)
    row = {"n": n, "errors": len(answers) - n, "accuracy": k / n,
           "accuracy_low": wilson(k, n)[0], "accuracy_high": wilson(k, n)[1]}
    stepped = [i for i in got if rsplit[i][1] is not None]
    row["step_n"] = len(stepped)
    if any(split[i][1] is not None for i in stepped):
        d = [None if split[i][1] is None else abs(int(split[i][1]) - int(rsplit[i][1]))
             for i in stepped]
        e = sum(x == 0 for x in d)
        row.update(step_accuracy=e / len(d), step_accuracy_low=wilson(e, len(d))[0],
                   step_accuracy_high=wilson(e, len(d))[1],
                   step_within_1=sum(x is not None and x <= 1 for x in d) / len(d),
                   step_within_3=sum(x is not None and x <= 3 for x in d) / len(d))
    else:
        row.update({c: math.nan for c in ("step_accuracy", "step_accuracy_low",
                                          "step_accuracy_high", "step_within_1",
                                          "step_within_3")})
    return row


def by_hand(traces):
    """The three baselines, written out again without the kit's code."""
    out = {"first": {}, "last": {}, "most": {}}
    for t in traces:
        iid = f"{ATTRIBUTION}:{t.conversation_id}"
        agents = [x.agent_id for x in t.turns]
        out["first"][iid] = f"{agents[0]}@0"
        out["last"][iid] = f"{agents[-1]}@{len(agents) - 1}"
        top = max(agents.count(a) for a in agents)
        out["most"][iid] = next(a for a in agents if agents.count(a) == top)
    return out


def test_leaderboard_equals_a_direct_computation():
    traces = runs()
    ref = reference(traces)
    c = failure_attribution()
    items = c.items(traces)
    answers = {}
    judge = noisy_judge()
    for it in items:  # the same random sequence the leaderboard will draw
        try:
            answers[it.item_id] = judge(it)
        except RuntimeError:
            answers[it.item_id] = None
    board = attribution_leaderboard(items, ref, {"noisy": noisy_judge()})
    hand = by_hand(traces)
    expected = {"noisy": direct_row(answers, ref),
                "baseline: first agent": direct_row(hand["first"], ref),
                "baseline: last agent": direct_row(hand["last"], ref),
                "baseline: most turns": direct_row(hand["most"], ref)}
    assert list(board.index) == list(expected)
    assert board.loc["noisy", "errors"] > 0 and board.loc["noisy", "n"] < len(items)
    for name, row in expected.items():
        for col, want in row.items():
            got = board.loc[name, col]
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want), \
                (name, col)
    assert math.isnan(board.loc["baseline: most turns", "step_accuracy"])
    assert board.attrs["items"] == len(items)


def test_only_items_with_a_reference_are_scored_and_baselines_can_be_left_out():
    traces = runs(10)
    ref = dict(list(reference(traces).items())[:4])
    c = failure_attribution()
    board = attribution_leaderboard(c.items(traces), ref, {"x": first_agent_name},
                                    baselines=False)
    assert list(board.index) == ["x"] and board.loc["x", "n"] == 4
    with pytest.raises(InputError, match="no item has a reference label"):
        attribution_leaderboard(c.items(traces), {"failure-attribution:other": "planner"})


def test_judges_as_mapping_run_and_module_function():
    traces = runs(20)
    ref = reference(traces)
    c = failure_attribution()
    items = c.items(traces)
    fixed = {it.item_id: it.trace.turns[-1].agent_id for it in items}
    # a judge run of the kit (agent names only, as an LLM judge of the criterion gives)
    run = judge_criterion(lambda it: it.trace.turns[-1].agent_id, items, progress=False)
    board = attribution_leaderboard(
        items, ref, {"mapping": fixed, "run": run,
                     "module": "maev_kit.criteria._attribution:last_agent"})
    last = board.loc["baseline: last agent"]
    for name in ("mapping", "run", "module"):
        assert board.loc[name, "accuracy"] == pytest.approx(last["accuracy"])
    assert math.isnan(board.loc["run", "step_accuracy"])  # no step given: n/a, not 0
    assert board.loc["module", "step_accuracy"] == pytest.approx(last["step_accuracy"])


def test_labels_from_records_and_several_annotators():
    traces = runs(6)
    c = failure_attribution()
    items = c.items(traces)
    recs = [{"item_id": it.item_id, "annotator": who, "label": lab, "criterion": ATTRIBUTION}
            for it in items for who, lab in (("ana", f"{it.trace.turns[0].agent_id}@0"),
                                             ("ben", "terminal"))]
    recs.append({"item_id": items[0].item_id, "annotator": "ana", "label": "skip"})
    recs.append({"item_id": "other:x", "annotator": "ana", "label": "yes", "criterion": "other"})
    with pytest.raises(InputError, match="name the reference with annotator"):
        attribution_leaderboard(items, recs)
    board = attribution_leaderboard(items, recs, annotator="ana")
    assert board.loc["baseline: first agent", "n"] == 5  # ana skipped the first item
    assert board.loc["baseline: first agent", "accuracy"] == 1.0
    assert attribution_labels(recs, steps=False)[items[1].item_id] == {
        "ana": traces[1].turns[0].agent_id, "ben": "terminal"}


def test_criterion_labels_items_and_parsing():
    traces = runs(5)
    c = failure_attribution()
    assert c.scope == "agent" and c.name == ATTRIBUTION and c.names_agents
    assert c == builtin(ATTRIBUTION) and resolve(ATTRIBUTION) == [c]
    items = c.items(traces)
    assert [i.item_id for i in items] == [f"{ATTRIBUTION}:run-{i}" for i in range(5)]
    for it, t in zip(items, traces):  # each item's answers are its own run's agents
        assert it.labels == tuple(dict.fromkeys(x.agent_id for x in t.turns))
        assert it.agent is None and it.conversation_id == t.conversation_id
    assert parse_attribution(" coder @ 7 ") == ("coder", 7)
    assert parse_attribution("a@b@2") == ("a@b", 2)
    with pytest.raises(InputError):
        parse_attribution("")


def test_items_are_stable_across_calls_and_processes():
    traces = runs(8)
    ids = [(it.item_id, it.labels) for it in failure_attribution().items(traces)]
    assert ids == [(it.item_id, it.labels) for it in failure_attribution().items(runs(8))]
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            "from test_attribution import runs; "
            "from maev_kit.criteria import failure_attribution; "
            "print(json.dumps([[i.item_id, list(i.labels)] for i in "
            "failure_attribution().items(runs(8))]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT, env={**os.environ, "PYTHONHASHSEED": "123",
                                                    "PYTHONPATH": str(ROOT)}).stdout
    assert [tuple([i, tuple(labs)]) for i, labs in json.loads(out)] == ids


def test_an_answer_must_be_an_agent_of_that_run_at_one_of_its_turns():
    t = MultiAgentTrace("r", turns=[AgentTurn("planner", "", "p"), AgentTurn("coder", "", "c")])
    other = MultiAgentTrace("s", turns=[AgentTurn("terminal", "", "x")])
    item, solo = failure_attribution().items([t, other])
    assert item.answer("coder") == "coder" and item.answer("planner @0") == "planner@0"
    with pytest.raises(InputError, match=r"item 'failure-attribution:r'.*'terminal' is not an "
                                         r"agent of conversation 'r'"):
        item.answer("terminal@1")
    with pytest.raises(InputError, match=r"item 'failure-attribution:r': step 2 .* 0 to 1"):
        item.answer("coder@2")
    assert solo.labels == ("terminal",)
    # a judge naming another run's agent gets an error there, never a label
    run = judge_criterion(lambda it: "terminal", [item, solo], progress=False)
    assert run.labels() == {solo.item_id: "terminal"}
    assert run.verdicts[0].cause == "unparseable" and "planner, coder" in run.verdicts[0].error
    with pytest.raises(InputError, match="'failure-attribution:r'.*step 5"):
        attribution_leaderboard([item, solo], {item.item_id: "coder@5"})
    assert failure_attribution().items([MultiAgentTrace("empty")]) == []


def test_criteria_with_agents_as_answers_are_agent_scope_only():
    assert Criterion("who", scope="agent", labels=(), question="Who?").names_agents
    with pytest.raises(InputError, match="at least two labels .*agent scope only"):
        Criterion("who", scope="conversation", labels=(), question="Who?")
    with pytest.raises(InputError, match="positive must be left out"):
        Criterion("who", scope="agent", labels=(), question="Who?", positive="a")
    with pytest.raises(InputError, match="ordinal must be false"):
        Criterion("who", scope="agent", labels=(), question="Who?", ordinal=True)


def test_an_agent_scope_yes_no_criterion_still_asks_each_agent():
    traces = runs(4)
    c = Criterion("followed", scope="agent", labels=("yes", "no"),
                  question="Did this agent follow its instructions?")
    items = c.items(traces)
    assert not c.names_agents
    assert [i.item_id for i in items] == [f"followed:{t.conversation_id}:a:{a}"
                                         for t in traces for a in t.agents_involved()]
    assert all(i.labels == ("yes", "no") for i in items)
    with pytest.raises(InputError, match="not one of its labels"):
        items[0].answer(items[0].agent)


def test_baselines_on_a_hand_made_run():
    t = MultiAgentTrace("r", turns=[AgentTurn(a, "", "x") for a in
                                    ["planner", "coder", "coder", "planner", "terminal"]])
    item = failure_attribution().items([t])[0]
    assert [f(item) for f in BASELINES.values()] == ["planner@0", "terminal@4", "planner"]


def guess(item):
    """A deterministic judge: a turn chosen from the run's id, as ``agent@turn``."""
    j = sum(map(ord, item.conversation_id)) % len(item.trace.turns)
    return f"{item.trace.turns[j].agent_id}@{j}"


def test_calibrate_compares_agents_and_its_kappa_is_sklearns():
    from sklearn.metrics import cohen_kappa_score

    from maev_kit import calibrate, evaluate

    traces = runs(50)
    c = failure_attribution()
    items = c.items(traces)
    ref = reference(traces)
    ben = {i: lab if k % 4 else parse_attribution(lab)[0].replace("coder", "planner")
           for k, (i, lab) in enumerate(ref.items())}
    human = {i: {"ana": ref[i], "ben": ben[i]} for i in ref}
    res = calibrate(items, human, judges=[CallableJudge(guess, name="guess")],
                    n_resamples=300, progress=False)
    row = res.leaderboard.iloc[0]
    h = [parse_attribution(ref[it.item_id])[0] for it in items]
    j = [parse_attribution(guess(it))[0] for it in items]
    # several annotators: κ is the mean over annotators; ana's alone equals sklearn's
    solo = calibrate(items, {i: {"ana": ref[i]} for i in ref},
                     judges=[CallableJudge(guess, name="guess")], n_resamples=300,
                     progress=False)
    assert solo.leaderboard.iloc[0]["kappa"] == pytest.approx(cohen_kappa_score(h, j))
    assert solo.leaderboard.iloc[0]["accuracy"] == pytest.approx(
        sum(a == b for a, b in zip(h, j)) / len(h))
    assert list(solo.confusions["guess"].index) == sorted(set(h) | set(j))
    assert row["status"] == "ok" and res.ceiling is not None
    b = [parse_attribution(ben[it.item_id])[0] for it in items]
    assert res.ceiling["kappa"] == pytest.approx(cohen_kappa_score(h, b))
    # evaluate: one row per agent the judge named, agent@step counted for its agent
    scores = evaluate(traces, criteria=[c], judge=guess, progress=False, n_resamples=200)
    table = scores.criteria[ATTRIBUTION]
    assert list(table.index) == sorted(set(j))
    for agent in table.index:
        assert table.loc[agent, "share"] == pytest.approx(j.count(agent) / len(j))
    with pytest.raises(InputError, match=r"'ana' on item 'failure-attribution:run-0'.*"
                                         r"not an agent"):
        calibrate(items, {items[0].item_id: {"ana": "nobody"}}, judges=[guess],
                  progress=False)
