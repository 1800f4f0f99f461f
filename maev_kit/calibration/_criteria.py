"""``calibrate`` on criterion items: every judge (a Python callable, ``module:function``, a model
asked the criterion prompt) against people's labels of the criterion, with κ (weighted when the
criterion is ordinal), its CI, accuracy and the human–human ceiling — the same leaderboard,
scoring and recommendation as retention (:func:`calibration_from_runs`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from maev_kit.calibration._human import load_human_labels
from maev_kit.calibration._result import (
    CalibrationResult,
    JudgeMeta,
    calibration_from_runs,
    labels_are_reference,
)
from maev_kit.errors import InputError, JudgeUnavailableError

__all__ = ["calibrate_criterion", "is_criterion_items"]


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


def _check_labels(human: Mapping[str, Mapping[str, str]], ids: set[str], labels: tuple[str, ...],
                  name: str) -> None:
    """Every label of this criterion's items is one of its labels (else an InputError that
    names the item, the annotator and the label)."""
    for iid in ids & set(human):
        for annotator, lab in human[iid].items():
            if lab not in labels:
                raise InputError(f"label {lab!r} of {annotator!r} on item {iid!r} is not one of "
                                 f"criterion {name!r}'s labels: {', '.join(labels)}")


def _key(judge: Any, backend: Any) -> tuple[str, JudgeMeta]:
    if backend is None:
        return judge.name, JudgeMeta(judge.name)
    model = str(getattr(backend, "model", backend))
    params = dict(backend.cache_identity().get("params", {}))
    prompt = f"criterion-{judge.prompt.id}"
    return f"{model} [{prompt}]", JudgeMeta(model, prompt, params, judge.prompt.sha256)


def _failed_run(judge: Any, backend: Any, items: list[Any], exc: JudgeUnavailableError) -> Any:
    from maev_kit.criteria._judge import CriterionRun, CriterionVerdict

    verdicts = [CriterionVerdict(it.item_id, None, error=str(exc), cause=exc.cause)
                for it in items]
    stats = {"items": len(items), "requests": None, "cache_hits": 0, "errors": len(items),
             "errors_by_cause": {exc.cause: len(items)}, "unavailable": str(exc),
             "cost": None, "tokens": None, "latency_p50": None, "latency_p95": None}
    return CriterionRun(verdicts, judge.name, str(judge.version),
                        getattr(backend, "model", None), stats, tuple(items))


def _runs(judges: Sequence[Any], scored: list[Any], backend_params: Mapping[str, Any],
          run_options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, JudgeMeta]]:
    from maev_kit.criteria._judge import criterion_judge, judge_criterion

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


def calibrate_criterion(items: Sequence[Any], human_labels: Any, *, judges: Sequence[Any],
                        backend_params: Mapping[str, Any] | None = None,
                        split: Mapping[str, Sequence[str]] | None = None,
                        threshold: float = 0.6, max_judge_errors: float = 0.05,
                        n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
                        **run_options: Any) -> CalibrationResult:
    """:func:`~maev_kit.calibration.calibrate` for criterion items (it calls this).

    ``human_labels``: a label store or labels file (lines with this criterion's name), a list
    of label dicts (``criterion`` may be left out) or ``{item_id: {annotator: label}}``. Only
    the items people labeled are judged. ``split``: a mapping ``{"dev": ids, "test": ids}``
    (conversation or item ids); the ``test`` split is scored.
    """
    from maev_kit.criteria._judge import criterion_of

    items = list(items)
    criterion = criterion_of(items)
    if human_labels is None:
        raise InputError("`human_labels` is required for criterion items: a labels file or "
                         "LabelStore, a list of label dicts or {item_id: {annotator: label}}")
    human = load_human_labels(_with_criterion(human_labels, criterion.name))
    ids = {it.item_id for it in items}
    _check_labels(human, ids, criterion.labels, criterion.name)
    if split is not None:
        if not isinstance(split, Mapping) or "test" not in split:
            raise InputError("`split` for criterion items is a mapping {'dev': ids, 'test': "
                             "ids}; the test split is scored")
        keep = {str(x) for x in split["test"]}
        items = [it for it in items if it.item_id in keep or it.conversation_id in keep]
    scored = [it for it in items if human.get(it.item_id)]
    if not scored:
        raise InputError(f"no item of criterion {criterion.name!r} has a human label"
                         + (f" (labels hold {len(human)} other item(s): check their item ids, "
                            f"e.g. {items[0].item_id!r})" if human else "")
                         + ": label items with maev_kit.widgets.Labeler(items, store, "
                           "annotator='<your name>')")
    runs, meta = _runs(judges, scored, backend_params or {}, run_options)
    result = calibration_from_runs(
        runs, {iid: human[iid] for iid in ids if iid in human}, items=scored, meta=meta,
        labels=criterion.labels, weights="linear" if criterion.ordinal else None,
        threshold=threshold, n_resamples=n_resamples, confidence=confidence, seed=seed,
        split="test" if split is not None else None, max_judge_errors=max_judge_errors,
        reference_labels=labels_are_reference(human_labels))
    result.criterion = criterion
    return result

