"""Failure attribution: which agent caused a failed run, and at which step.

:func:`failure_attribution` is the criterion; :func:`attribution_leaderboard` scores judges and
the literature's baselines against reference labels, as the Who&When benchmark does (Zhang et
al., "Which Agent Causes Task Failures and When?", ICML 2025).

The criterion has agent scope and its answers are the agents of each run (``labels=()``, see
:class:`~maev_kit.criteria.Criterion`): it is asked once per failed run — one item per trace,
``failure-attribution:<conversation_id>`` — and each item's answers are that run's agents
(``item.labels``). The label is the responsible agent, optionally with the decisive step as
``agent@step``: ``step`` is the 0-based position of the decisive turn in ``trace.turns`` (the
``t{step}`` item of a turn-scope criterion). The Labeler shows one button per agent of the run;
``calibrate`` and ``evaluate`` compare the agents; step-level scores come from
:func:`attribution_leaderboard`, whose judges are Python callables ``judge(item) -> "agent"``
or ``"agent@step"`` (or the labels of a judge run, e.g. a model's ``CriterionRun``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.criteria._criterion import Criterion, CriterionItem, parse_attribution
from maev_kit.criteria._load import register
from maev_kit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ATTRIBUTION", "BASELINES", "attribution_leaderboard", "attribution_labels",
           "failure_attribution", "parse_attribution"]

#: The criterion's name (the prefix of its item ids).
ATTRIBUTION = "failure-attribution"
#: How many turns away a step may be and still count, for ``step_within_{k}``.
STEP_TOLERANCES = (1, 3)

_QUESTION = ("This run of the agents failed. Which agent is responsible for the failure: whose "
             "mistake decided it?")
_GUIDELINES = (
    "Name the agent that made the decisive mistake: the earliest mistake that, left "
    "uncorrected, made the run fail (the definition of the Who&When benchmark, Zhang et al., "
    "ICML 2025). An agent that only reports another agent's error (a code executor printing "
    "a traceback) is not responsible for it.")


def failure_attribution() -> Criterion:
    """The failure-attribution criterion (also the built-in ``"failure-attribution"``).

    Agent scope, its answers the agents of each run: one item per failed run, whose label is
    the responsible agent of that run, optionally ``agent@step`` (see
    :meth:`~maev_kit.criteria.CriterionItem.answer` and :func:`parse_attribution`).

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> t = MultiAgentTrace("run-1", turns=[AgentTurn("planner", "", "Plan: search."),
    ...                                      AgentTurn("searcher", "", "Found nothing.")])
    >>> c = failure_attribution()
    >>> c.name, c.scope, [(i.item_id, i.labels) for i in c.items([t])]
    ('failure-attribution', 'agent', [('failure-attribution:run-1', ('planner', 'searcher'))])
    """
    return _CRITERION


_CRITERION = register(Criterion(ATTRIBUTION, scope="agent", labels=(), question=_QUESTION,
                                guidelines=_GUIDELINES))


# ---- baselines: the answers a judge must beat -------------------------------------------------

def first_agent(item: CriterionItem) -> str:
    """The agent of the first turn, at that turn."""
    return f"{item.trace.turns[0].agent_id}@0"


def last_agent(item: CriterionItem) -> str:
    """The agent of the last turn, at that turn."""
    turns = item.trace.turns
    return f"{turns[-1].agent_id}@{len(turns) - 1}"


def most_turns(item: CriterionItem) -> str:
    """The agent with the most turns (on a tie, the one that spoke first); no step."""
    counts = item.trace.turns_per_agent()  # in the order of first turn: max keeps the first
    return max(counts, key=lambda a: counts[a])


#: The baselines the literature reports, by the name the leaderboard shows.
BASELINES: dict[str, Callable[[CriterionItem], str]] = {
    "baseline: first agent": first_agent, "baseline: last agent": last_agent,
    "baseline: most turns": most_turns}


# ---- reference labels ---------------------------------------------------------------------

def attribution_labels(labels: Any, *, steps: bool = True, annotator: str | None = None
                       ) -> dict[str, dict[str, str]]:
    """Reference labels as ``{item_id: {annotator: label}}`` — ``steps=False`` keeps the agent
    only (what ``calibrate`` and ``evaluate`` compare; they also take ``agent@step``).

    ``labels``: a labeled set (its ``label_records``), label records or dicts (``item_id``,
    ``annotator``, ``label``), ``{item_id: label}`` or ``{item_id: {annotator: label}}``.
    ``annotator`` keeps that annotator's labels only. The latest label per item and annotator
    wins; ``skip`` is dropped.

    >>> attribution_labels({"failure-attribution:r1": "coder@3"}, steps=False)
    {'failure-attribution:r1': {'reference': 'coder'}}
    """
    labels = getattr(labels, "label_records", labels)
    out: dict[str, dict[str, str]] = {}
    if isinstance(labels, Mapping):
        for iid, v in labels.items():
            out[str(iid)] = dict(v) if isinstance(v, Mapping) else {"reference": v}
    else:
        for r in labels:
            get = r.get if isinstance(r, Mapping) else lambda k, r=r: getattr(r, k, None)
            if get("criterion") not in (None, ATTRIBUTION):
                continue
            iid, who, lab = get("item_id"), get("annotator") or "reference", get("label")
            if not isinstance(iid, str) or not isinstance(lab, str):
                raise InputError(f"a label record needs item_id and label strings, got {r!r}")
            out.setdefault(iid, {})[who] = lab
    result: dict[str, dict[str, str]] = {}
    for iid, by in out.items():
        kept = {}
        for who, lab in by.items():
            if (annotator is not None and who != annotator) or lab == "skip":
                continue
            agent, step = parse_attribution(lab)
            kept[who] = f"{agent}@{step}" if steps and step is not None else agent
        if kept:
            result[iid] = kept
    return result


def _reference(labels: Any, annotator: str | None, items: Sequence[CriterionItem]
               ) -> dict[str, tuple[str, int | None]]:
    """One reference (agent, step) per item (an InputError when an item has several
    annotators and ``annotator`` names none, or when a label is no answer to its item: an
    agent not in that run, a step outside it)."""
    by_id = {it.item_id: it for it in items}
    out = {}
    for iid, by in attribution_labels(labels, annotator=annotator).items():
        if len(by) > 1:
            raise InputError(f"item {iid!r} has labels by {sorted(by)}: name the reference "
                             "with annotator=...")
        label = next(iter(by.values()))
        item = by_id.get(iid)
        out[iid] = parse_attribution(label if item is None else item.answer(label))
    return out


# ---- the leaderboard ----------------------------------------------------------------------

def _predictor(judge: Any) -> Callable[[CriterionItem], Any]:
    """``judge`` as a function item → answer: a callable (or CallableJudge), a
    ``"module:function"`` string, a judge run (``.labels()``) or ``{item_id: label}``."""
    if hasattr(judge, "labels") and callable(judge.labels) and hasattr(judge, "verdicts"):
        judge = judge.labels()  # a CriterionRun: its labels; its errors stay errors
    if isinstance(judge, Mapping):
        given = judge
        return lambda it: given[it.item_id]
    if isinstance(judge, str):
        from maev_kit.criteria._judge import load_function

        return load_function(judge)
    fn = getattr(judge, "fn", judge)
    if not callable(fn):
        raise InputError(f"a failure-attribution judge is a function item -> 'agent' or "
                         f"'agent@step', 'module:function', a judge run or a mapping "
                         f"{{item_id: label}}; got {type(judge).__name__}")
    return fn  # type: ignore[no-any-return]


def _judge_name(judge: Any) -> str:
    name = getattr(judge, "judge_name", None) or getattr(judge, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(judge, str):
        return judge
    return getattr(judge, "__qualname__", None) or type(judge).__name__


def _answers(predict: Callable[[CriterionItem], Any], items: Sequence[CriterionItem]
             ) -> tuple[dict[str, tuple[str, int | None]], int]:
    """The parsed answer per item id, and how many items got none (the judge raised, had no
    answer, or answered something that is no answer to the item — an agent not in the run, a
    step outside it): errors, never counted as wrong."""
    got: dict[str, tuple[str, int | None]] = {}
    errors = 0
    for it in items:
        try:
            answer = predict(it)
            if isinstance(answer, Mapping):
                answer = answer.get("label")
            got[it.item_id] = parse_attribution(it.answer(answer))
        except Exception:  # a judge's failure (or a non-answer) on one item is no verdict
            errors += 1
    return got, errors


def _share(hits: list[bool], confidence: float) -> tuple[float, float, float]:
    """(share, Wilson low, Wilson high); NaNs for no values."""
    if not hits:
        return float("nan"), float("nan"), float("nan")
    from maev_kit.agreement import human_share

    est = human_share([float(h) for h in hits], confidence=confidence)
    nan = float("nan")
    return (est.estimate, nan if est.ci_low is None else est.ci_low,
            nan if est.ci_high is None else est.ci_high)


def _score(got: dict[str, tuple[str, int | None]], errors: int,
           ref: dict[str, tuple[str, int | None]], confidence: float) -> dict[str, Any]:
    """One leaderboard row from a judge's parsed answers."""
    acc, low, high = _share([got[i][0] == ref[i][0] for i in got], confidence)
    row: dict[str, Any] = {"n": len(got), "errors": errors, "accuracy": acc,
                           "accuracy_low": low, "accuracy_high": high}
    stepped = [i for i in got if ref[i][1] is not None]
    row["step_n"] = len(stepped)
    if not any(got[i][1] is not None for i in stepped):  # the judge names no step: n/a
        stepped = []
    dist = [None if got[i][1] is None else abs(got[i][1] - ref[i][1])  # type: ignore[operator]
            for i in stepped]
    s_acc, s_low, s_high = _share([d == 0 for d in dist], confidence)
    row.update(step_accuracy=s_acc, step_accuracy_low=s_low, step_accuracy_high=s_high)
    for k in STEP_TOLERANCES:
        row[f"step_within_{k}"] = _share([d is not None and d <= k for d in dist],
                                         confidence)[0]
    return row


def attribution_leaderboard(items: Sequence[CriterionItem], labels: Any,
                            judges: Mapping[str, Any] | Sequence[Any] = (), *,
                            baselines: bool = True, annotator: str | None = None,
                            confidence: float = 0.95) -> pd.DataFrame:
    """Score failure-attribution judges and the baselines against reference labels.

    ``items``: the criterion's items (:func:`failure_attribution`); ``labels``: the reference
    (see :func:`attribution_labels`; ``annotator`` picks one when items have several); only
    items with a reference are scored, and a reference that is no answer to its item (an
    agent not in that run, a step outside it) is an :class:`InputError` naming the item.
    ``judges``: ``{name: judge}`` or a list; a judge is a function ``item -> "agent"`` or
    ``"agent@step"``, ``"module:function"``, a judge run or ``{item_id: label}`` (an answer
    that is no answer to its item is an error there). ``baselines`` adds the first agent, the
    last agent and the agent with most turns, on the same items.

    One row per judge: ``n`` items answered, ``errors`` (the judge raised or gave no
    answer: left out, never counted wrong), agent-level ``accuracy`` with its Wilson interval
    (``accuracy_low``, ``accuracy_high``), and over the items whose reference names a step
    (``step_n``): ``step_accuracy`` (exact, with its Wilson interval) and ``step_within_1``,
    ``step_within_3`` (within ±1, ±3 turns) — an item the judge gives no step counts as a miss;
    a judge that gives no step at all has n/a (NaN) there.

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> runs = [MultiAgentTrace(f"r{i}", turns=[AgentTurn("planner", "", "plan"),
    ...         AgentTurn("coder", "", "code"), AgentTurn("planner", "", "done")])
    ...         for i in range(4)]
    >>> c = failure_attribution()
    >>> ref = {f"failure-attribution:r{i}": "coder@1" for i in range(4)}
    >>> board = attribution_leaderboard(c.items(runs), ref, {"always coder": lambda it: "coder@1"})
    >>> board[["n", "accuracy", "step_accuracy"]]  # doctest: +NORMALIZE_WHITESPACE
                           n  accuracy  step_accuracy
    judge
    always coder           4       1.0            1.0
    baseline: first agent  4       0.0            0.0
    baseline: last agent   4       0.0            0.0
    baseline: most turns   4       0.0            NaN
    """
    import pandas as pd

    from maev_kit.criteria._judge import criterion_of

    items = list(items)
    criterion_of(items)
    ref = _reference(labels, annotator, items)
    scored = [it for it in items if it.item_id in ref]
    if not scored:
        raise InputError(f"no item has a reference label ({len(ref)} label(s) on other ids, "
                         f"e.g. {next(iter(ref), None)!r}; items look like "
                         f"{items[0].item_id!r})")
    named = dict(judges) if isinstance(judges, Mapping) else {_judge_name(j): j for j in judges}
    if baselines:
        named.update(BASELINES)
    rows = {}
    for name, judge in named.items():
        got, errors = _answers(_predictor(judge), scored)
        rows[name] = _score(got, errors, ref, confidence)
    board = pd.DataFrame.from_dict(rows, orient="index")
    board.index.name = "judge"
    board.attrs.update(items=len(scored), confidence=confidence)
    return board
