"""``calibrate`` on criterion items: every judge (a Python callable, ``module:function``, a model
asked the criterion prompt) against people's labels of the criterion, with κ (weighted when the
criterion is ordinal), its CI, accuracy and the human–human ceiling — the same leaderboard,
scoring and recommendation as retention (:func:`calibration_from_runs`)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from maev_kit.calibration._human import load_human_labels
from maev_kit.calibration._result import (
    CalibrationResult,
    JudgeMeta,
    calibration_from_runs,
    labels_are_reference,
)
from maev_kit.errors import InputError, JudgeUnavailableError

__all__ = ["CriterionDrift", "calibrate_criterion", "check_criterion_card", "is_criterion_items"]


def is_criterion_items(items: Any) -> bool:
    """True when ``items`` is a non-empty list of criterion items."""
    from maev_kit.criteria import CriterionItem

    return (isinstance(items, Sequence) and not isinstance(items, str) and bool(items)
            and all(isinstance(it, CriterionItem) for it in items))


def _with_criterion(labels: Any, name: str) -> Any:
    """A list of label dicts without ``criterion`` gets ``name`` (they label this criterion's
    items); other forms pass unchanged."""
    if isinstance(labels, (str, bytes, Mapping)) or not isinstance(labels, Iterable) or \
            hasattr(labels, "records"):
        return labels
    return [{**r, "criterion": r.get("criterion", name)} if isinstance(r, Mapping) else r
            for r in labels]


def _answers(human: Mapping[str, Mapping[str, str]], items: Sequence[Any], agents: bool
             ) -> dict[str, dict[str, str]]:
    """People's labels of ``items``, each checked as an answer to its item (an InputError
    names the item, the annotator and the label); with ``agents`` (the answers are each
    conversation's agents), ``agent@step`` is compared on its agent."""
    out: dict[str, dict[str, str]] = {}
    for it in items:
        for annotator, lab in (human.get(it.item_id) or {}).items():
            try:
                got = it.answer(lab)
            except InputError as e:
                why = str(e).removeprefix(f"item {it.item_id!r}: ")
                raise InputError(f"label {lab!r} of {annotator!r} on item {it.item_id!r}: "
                                 f"{why}") from None
            out.setdefault(it.item_id, {})[annotator] = _agent(got) if agents else got
    return out


def _agent(label: str) -> str:
    from maev_kit.criteria import parse_attribution

    return parse_attribution(label)[0]


def _agents_only(run: Any) -> Any:
    """A judge run whose labels are agents (``agent@step`` → ``agent``), for κ on agents."""
    verdicts = [v if v.label is None else dataclasses.replace(v, label=_agent(v.label))
                for v in run.verdicts]
    return dataclasses.replace(run, verdicts=verdicts)


def _used_labels(human: Mapping[str, Mapping[str, str]], runs: Mapping[str, Any]
                 ) -> tuple[str, ...]:
    """The labels people and judges used, sorted: the categories of κ when the answers are
    each conversation's agents."""
    used = {lab for by in human.values() for lab in by.values()}
    used |= {v.label for run in runs.values() for v in run.verdicts if v.label is not None}
    return tuple(sorted(used))


def _key(judge: Any, backend: Any) -> tuple[str, JudgeMeta]:
    if backend is None:
        return judge.name, JudgeMeta(judge.name)
    model = str(getattr(backend, "model", backend))
    params = dict(backend.cache_identity().get("params", {}))
    prompt = f"criterion-{judge.prompt.id}"
    return f"{model} [{prompt}]", JudgeMeta(model, prompt, params, judge.prompt.sha256)


def failed_run(judge: Any, backend: Any, items: list[Any], exc: JudgeUnavailableError, *,
               run: Any = None, verdict: Any = None) -> Any:
    """The run of a judge that could not answer at all: every item an error with its cause
    (a :class:`~maev_kit.runner.JudgeRun` of Verdicts, or the ``run`` / ``verdict`` classes
    given: a criterion's)."""
    from maev_kit.judges import Verdict
    from maev_kit.runner import JudgeRun

    run, verdict = run or JudgeRun, verdict or Verdict
    verdicts = [verdict(it.item_id, None, error=str(exc), cause=exc.cause) for it in items]
    stats = {"items": len(items), "requests": None, "cache_hits": 0, "errors": len(items),
             "errors_by_cause": {exc.cause: len(items)}, "unavailable": str(exc),
             "cost": None, "tokens": None, "latency_p50": None, "latency_p95": None}
    return run(verdicts, judge.name, str(judge.version), getattr(backend, "model", None),
               stats, tuple(items))


def _failed_run(judge: Any, backend: Any, items: list[Any], exc: JudgeUnavailableError) -> Any:
    from maev_kit.criteria import CriterionRun, CriterionVerdict

    return failed_run(judge, backend, items, exc, run=CriterionRun, verdict=CriterionVerdict)


def _runs(judges: Sequence[Any], scored: list[Any], backend_params: Mapping[str, Any],
          run_options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, JudgeMeta]]:
    from maev_kit.criteria import judge_criterion
    from maev_kit.criteria.internal import criterion_judge

    if isinstance(judges, str) or not isinstance(judges, Sequence) or not judges:
        raise InputError("`judges` must be a non-empty list, e.g. judges=[my_function, "
                         "'gpt-4o-mini']")
    runs: dict[str, Any] = {}
    meta: dict[str, JudgeMeta] = {}
    for spec in judges:
        judge, backend = criterion_judge(spec, backend_params=backend_params)
        key, m = _key(judge, backend)
        if key in runs:
            raise InputError(f"`judges` names {key!r} twice; list each judge once (give a "
                             "callable judge its own name with CallableJudge(fn, name=...))")
        try:
            runs[key] = judge_criterion(judge, scored, backend, **run_options)
        except JudgeUnavailableError as exc:
            runs[key] = _failed_run(judge, backend, scored, exc)
        meta[key] = m
    return runs, meta


#: What :func:`calibrate` passes on for a criterion's items (the rest is retention's).
_CRITERION_OPTIONS = frozenset({
    "judges", "backend_params", "split", "threshold", "max_judge_errors", "n_resamples",
    "confidence", "seed", "cache", "progress", "max_concurrency", "max_retries", "timeout"})

_F = TypeVar("_F", bound=Callable[..., Any])


def criteria_aware(calibrate: _F) -> _F:
    """``calibrate``, handing a criterion's items to :func:`calibrate_criterion` (an option
    that applies to retention only, such as ``prompts``, is an InputError there)."""
    @functools.wraps(calibrate)
    def run(items: Any, human_labels: Any = None, **options: Any) -> Any:
        if not is_criterion_items(items):
            return calibrate(items, human_labels, **options)
        other = sorted(set(options) - _CRITERION_OPTIONS)
        if other:
            raise InputError(f"{', '.join(other)}: for retention items only, not for a "
                             "criterion's items")
        return calibrate_criterion(items, human_labels, **options)
    return cast(_F, run)


def calibrate_criterion(items: Sequence[Any], human_labels: Any, *, judges: Sequence[Any],
                        backend_params: Mapping[str, Any] | None = None,
                        split: Mapping[str, Sequence[str]] | None = None,
                        threshold: float = 0.6, max_judge_errors: float = 0.05,
                        n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                        **run_options: Any) -> CalibrationResult:
    """:func:`~maev_kit.calibration.calibrate` for criterion items (it calls this).

    ``human_labels``: a label store or labels file (lines with this criterion's name), a list
    of label dicts (``criterion`` may be left out) or ``{item_id: {annotator: label}}``; a
    label that is no answer to its item is an :class:`InputError` naming the item. Only the
    items people labeled are judged. When the answers are each conversation's agents
    (:func:`~maev_kit.criteria.failure_attribution`), people's and judges' ``agent@step``
    are compared on the agent, and κ's categories are the agents used (people's and judges'
    labels on the scored items). ``split``: a mapping ``{"dev": ids, "test": ids}``
    (conversation or item ids); the ``test`` split is scored.
    """
    from maev_kit.criteria.internal import criterion_of

    items = list(items)
    criterion = criterion_of(items)
    if human_labels is None:
        raise InputError("`human_labels` is required for criterion items: a labels file or "
                         "LabelStore, a list of label dicts or {item_id: {annotator: label}}")
    agents = criterion.names_agents
    given = load_human_labels(_with_criterion(human_labels, criterion.name))
    human = _answers(given, items, agents)
    if split is not None:
        if not isinstance(split, Mapping) or "test" not in split:
            raise InputError("`split` for criterion items is a mapping {'dev': ids, 'test': "
                             "ids}; the test split is scored")
        keep = {str(x) for x in split["test"]}
        items = [it for it in items if it.item_id in keep or it.conversation_id in keep]
    scored = [it for it in items if human.get(it.item_id)]
    if not scored:
        raise InputError(f"no item of criterion {criterion.name!r} has a human label"
                         + (f" (labels hold {len(given)} other item(s): check their item ids, "
                            f"e.g. {items[0].item_id!r})" if given else "")
                         + ": label items with maev_kit.widgets.Labeler(items, store, "
                           "annotator='<your name>')")
    runs, meta = _runs(judges, scored, backend_params or {}, run_options)
    human = {it.item_id: human[it.item_id] for it in scored}
    if agents:
        runs = {key: _agents_only(run) for key, run in runs.items()}
    result = calibration_from_runs(
        runs, human, items=scored, meta=meta,
        labels=_used_labels(human, runs) if agents else criterion.labels,
        weights="linear" if criterion.ordinal else None,
        threshold=threshold, n_resamples=n_resamples, confidence=confidence, seed=seed,
        split="test" if split is not None else None, max_judge_errors=max_judge_errors,
        reference_labels=labels_are_reference(human_labels))
    result.criterion = criterion
    return result



@dataclass(frozen=True)
class CriterionDrift:
    """The drift gate's answer for a criterion card: ``status`` ``"PASS"``, ``"FAIL"`` or
    ``"ERROR"`` (too many failed calls: no verdict), the reasons, κ then and now (with CI),
    McNemar's exact test on per-item correctness over the items both runs judged."""

    status: str
    reasons: tuple[str, ...]
    criterion: str
    judge: str
    kappa_then: float | None
    kappa_now: float
    kappa_now_low: float
    kappa_now_high: float
    n_items: int
    n_paired: int
    then_only_correct: int
    now_only_correct: int
    p_value: float | None
    stats: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def exit_code(self) -> int:
        return 0 if self.status == "PASS" else 1

    def __str__(self) -> str:
        k = (f"κ now {self.kappa_now:.3f} [{self.kappa_now_low:.3f}, {self.kappa_now_high:.3f}]"
             if self.kappa_now == self.kappa_now else "κ now n/a")
        then = "n/a" if self.kappa_then is None else f"{self.kappa_then:.3f}"
        return (f"{self.status}: criterion {self.criterion}, judge {self.judge}: {k} on "
                f"{self.n_items} items, κ then {then}\n  " + "\n  ".join(self.reasons))

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "exit_code": self.exit_code}


def _card_judge(card: Any, judge: Any, backend_params: Mapping[str, Any] | None) -> Any:
    """The judge to check: ``judge`` when given, else the card's function or model."""
    if judge is not None:
        return judge
    if card.model is None:
        return card.judge_name  # module:function
    from maev_kit.calibration._card import card_backend
    from maev_kit.criteria import LLMCriterionJudge

    return LLMCriterionJudge(card.prompt.removeprefix("criterion-") if card.prompt else "v1"), \
        card_backend(card, dict(backend_params or {}))


def _drift(card: Any, now: Any, run: Any, human: Mapping[str, Mapping[str, str]],
           tolerance: float, floor: float, max_judge_errors: float
           ) -> tuple[str, list[str], tuple[int, int, float | None]]:
    """(status, reasons, (then-only correct, now-only correct, p)) of a criterion card."""
    from maev_kit.agreement import mcnemar_exact

    n = len(run.verdicts)
    n_err = sum(1 for v in run.verdicts if v.label is None)
    if n and n_err / n > max_judge_errors:
        return "ERROR", [f"{n_err} of {n} judge calls failed: no verdict"], (0, 0, None)
    board = now.leaderboard.iloc[0]
    k, high = float(board["kappa"]), float(board["kappa_high"])
    then_labels = card.criterion_verdicts or {}
    majority = {iid: max(v.values(), key=list(v.values()).count) for iid, v in human.items()}
    now_labels = run.labels()
    paired = [i for i in now_labels if i in then_labels and i in majority]
    b = sum(1 for i in paired if then_labels[i] == majority[i] != now_labels[i])
    c = sum(1 for i in paired if now_labels[i] == majority[i] != then_labels[i])
    p = mcnemar_exact(b, c)[0] if paired else None
    reasons, status = [], "PASS"
    if not high >= floor:
        status = "FAIL"
        reasons.append(f"κ's CI upper bound {high:.3f} is below the floor {floor}")
    if card.kappa is not None and k < card.kappa - tolerance:
        if (p is not None and p < 0.05) or str(run.judge_version) != card.judge_version:
            status = "FAIL"
        reasons.append(f"κ fell from {card.kappa:.3f} to {k:.3f} (tolerance {tolerance}); "
                       f"McNemar p = {'n/a' if p is None else f'{p:.3g}'}")
    if status == "PASS":
        reasons.append(f"κ {k:.3f} holds (then {card.kappa}, tolerance {tolerance}, "
                       f"floor {floor})")
    return status, reasons, (b, c, p)


def check_criterion_card(card: Any, traces: Sequence[Any], human_labels: Any, *,
                         judge: Any = None, backend_params: Mapping[str, Any] | None = None,
                         tolerance: float | None = None, min_kappa: float | None = None,
                         max_judge_errors: float = 0.05, n_resamples: int = 10_000,
                         confidence: float = 0.95, seed: int = 0,
                         **run_options: Any) -> CriterionDrift:
    """The drift gate for a card calibrated on a criterion: re-run its judge (the function the
    card names as ``module:function``, or its model with the criterion prompt; or ``judge``)
    on the criterion's labeled items of ``traces`` and compare κ with the card's.

    FAIL when κ's CI upper bound is below the floor (``min_kappa``, the card's, else 0.4), or
    κ fell by more than ``tolerance`` (the card's, else 0.05) with McNemar's exact test on
    per-item correctness significant (p < 0.05) or a changed judge version; ERROR when more
    than ``max_judge_errors`` of the calls failed.
    """
    from maev_kit.calibration._card import JudgeCard
    from maev_kit.calibration._check import _min_kappa, _tolerance
    from maev_kit.criteria import Criterion

    if not isinstance(card, JudgeCard):
        card = JudgeCard.load(card)
    if card.criterion is None:
        raise InputError("this judge card was calibrated on retention, not on a criterion: "
                         "check it with check_card")
    criterion = Criterion(**{**card.criterion, "labels": tuple(card.criterion["labels"])})
    items = criterion.items(traces)
    spec = _card_judge(card, judge, backend_params)
    if isinstance(spec, tuple):  # the card's model, on the card's backend
        now = _calibrate_on(items, human_labels, spec, n_resamples, confidence, seed,
                            run_options)
    else:
        now = calibrate_criterion(items, human_labels, judges=[spec],
                                  backend_params=backend_params, max_judge_errors=1.0,
                                  n_resamples=n_resamples, confidence=confidence, seed=seed,
                                  **run_options)
    run = next(iter(now.runs.values()))
    human = _answers(load_human_labels(_with_criterion(human_labels, criterion.name)), items,
                     criterion.names_agents)  # as the card and the rerun hold them
    tol = _tolerance(card, tolerance, [])[0]  # the retention gate's rules: the card pins its
    floor = _min_kappa(card, min_kappa)[0]   # tolerance, the argument sets the floor
    status, reasons, (b, c, p) = _drift(card, now, run, human, tol, floor, max_judge_errors)
    row = now.leaderboard.iloc[0]
    return CriterionDrift(status, tuple(reasons), criterion.name, str(row["key"]), card.kappa,
                          float(row["kappa"]), float(row["kappa_low"]), float(row["kappa_high"]),
                          int(row["n_items"]), len(run.labels()), b, c, p, dict(run.stats))


def _calibrate_on(items: list[Any], human_labels: Any, spec: tuple[Any, Any], n_resamples: int,
                  confidence: float, seed: int, run_options: Mapping[str, Any]) -> Any:
    """:func:`calibrate_criterion`'s result for a model judge on a given backend."""
    from maev_kit.criteria import judge_criterion

    from maev_kit.criteria.internal import criterion_of

    judge, backend = spec
    criterion = criterion_of(items)
    agents = criterion.names_agents
    human = _answers(load_human_labels(_with_criterion(human_labels, criterion.name)), items,
                     agents)
    scored = [it for it in items if human.get(it.item_id)]
    if not scored:
        raise InputError(f"no item of criterion {criterion.name!r} has a human label")
    key, meta = _key(judge, backend)
    try:
        run = judge_criterion(judge, scored, backend, **run_options)
    except JudgeUnavailableError as exc:
        run = _failed_run(judge, backend, scored, exc)
    if agents:
        run = _agents_only(run)
    human = {it.item_id: human[it.item_id] for it in scored}
    return calibration_from_runs(
        {key: run}, human, items=scored, meta={key: meta},
        labels=_used_labels(human, {key: run}) if agents else criterion.labels,
        weights="linear" if criterion.ordinal else None, n_resamples=n_resamples,
        confidence=confidence, seed=seed, max_judge_errors=1.0)
