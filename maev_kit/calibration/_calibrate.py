"""``calibrate``: run every judge × prompt variant on the human-labeled items and rank them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from maev_kit.calibration._criteria import criteria_aware, failed_run
from maev_kit.calibration._human import (
    CannotFitError,
    check_split,
    fit_on_items,
    fit_on_other_splits,
    load_human_labels,
)
from maev_kit.calibration._result import (
    CalibrationResult,
    account_labels,
    JudgeMeta,
    calibration_from_runs,
    labels_are_reference,
)
from maev_kit.errors import InputError, JudgeUnavailableError

__all__ = ["calibrate"]


@dataclass
class _Spec:
    key: str
    judge: Any
    backend: Any
    meta: JudgeMeta


def _prompt_hash(judge: Any) -> str | None:
    template = getattr(judge, "template", None)
    return getattr(template, "sha256", None)


def _is_backend(obj: Any) -> bool:
    return callable(getattr(obj, "complete", None)) and hasattr(obj, "cache_identity")


def _resolve(judges: Sequence[Any], prompts: Sequence[Any] | None,
             backend_params: Mapping[str, Any],
             judge_options: Mapping[str, Any] | None = None) -> list[_Spec]:
    """One spec per judge × prompt: each name goes through :func:`maev_kit.judges.resolve_judge`."""
    from maev_kit.judges import resolve_judge
    from maev_kit.judges.internal import DEFAULT_PROMPT, check_prompt

    if isinstance(judges, str) or not isinstance(judges, Sequence) or not judges:
        raise InputError("`judges` must be a non-empty list, e.g. judges=['heuristic', "
                         "'gpt-4o-mini']")
    if isinstance(prompts, str) or (prompts is not None and not list(prompts)):
        raise InputError(f"`prompts` must be a list of builtin prompt ids, template files or "
                         f"PromptTemplates, such as ['v1', 'v2', 'mine.txt'], got {prompts!r}")
    prompt_list = list(dict.fromkeys(check_prompt(p) for p in prompts or [DEFAULT_PROMPT]))
    names = [t.name for t in prompt_list]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError(f"two different prompts are named {twice[0]!r}: rename one template "
                         "file (a prompt is named by its file's stem)")
    specs: list[_Spec] = []
    for spec in judges:
        if not isinstance(spec, str) and not _is_backend(spec):
            if all(hasattr(spec, a) for a in ("name", "version", "offline")) and spec.offline:
                specs.append(_Spec(spec.name, spec, None, JudgeMeta(spec.name)))
                continue
            raise TypeError(f"each judge must be an offline judge name ('heuristic', "
                            f"'tfidf-logreg'), a litellm model string ('gpt-4o-mini', "
                            f"'openai/<name>' with backend_params={{'api_base': ...}}), a backend "
                            f"object or an offline judge object; got {spec!r}")
        judge, backend = resolve_judge(spec, backend_params=backend_params)
        if backend is None:  # an offline judge
            specs.append(_Spec(judge.name, judge, None, JudgeMeta(judge.name)))
            continue
        model = spec.strip() if isinstance(spec, str) else str(backend.model)
        params = dict(backend.cache_identity().get("params", {}))
        for p in prompt_list:
            judge, backend = resolve_judge(spec, prompt=p, backend_params=backend_params)
            if judge_options and judge_options.get("examples"):
                from maev_kit.judges import RetentionJudge

                judge = RetentionJudge(p, **judge_options)
            ex = f" +{judge.n_examples} ex" if getattr(judge, "n_examples", 0) else ""
            specs.append(_Spec(f"{model} [{p.name}{ex}]", judge, backend,
                               JudgeMeta(model, p.name, params, _prompt_hash(judge))))
    keys = [s.key for s in specs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise InputError(f"`judges` names {dup} more than once; list each judge once")
    return specs


def _split_of(split: Any, labeled_set: Any, items: list[Any]
              ) -> tuple[str | None, list[Any], list[Any]]:
    """(split name, items to score, items a learning judge may train on)."""
    if split is None and labeled_set is not None and "test" in labeled_set.manifest.splits:
        split = "test"
    if split is None:
        return None, items, []
    name: str | None
    if isinstance(split, str):
        if labeled_set is None:
            raise InputError(f"`split={split!r}` needs a labeled set (pass its folder as "
                             "`items`) or a mapping {'dev': [...ids], 'test': [...ids]}")
        name = check_split(labeled_set, split)
        splits = {k: set(v) for k, v in labeled_set.manifest.splits.items()}
    elif isinstance(split, Mapping):
        splits = {str(k): set(v) for k, v in split.items()}
        name = "test" if "test" in splits else next(iter(splits), None)
        if name is None:
            raise InputError("`split` is an empty mapping: give {'dev': [...ids], 'test': "
                             "[...ids]}")
    else:
        raise TypeError(f"`split` must be None, a split name or a mapping name → ids, got "
                        f"{type(split).__name__}")

    def pick(ids: set[str]) -> list[Any]:
        return [it for it in items if it.item_id in ids or it.conversation_id in ids]

    train = pick(set().union(*(v for k, v in splits.items() if k != name)))
    return name, pick(splits[name]), train


def _split_map(split: Any, labeled_set: Any) -> Any:
    """Conversation id → split name (the labeled set's, or the given mapping's)."""
    if isinstance(split, Mapping):
        return {str(cid): str(name) for name, ids in split.items() for cid in ids}
    if labeled_set is not None:
        return labeled_set.split_of
    return {}


LABELER_HINT = ("label with maev_kit.widgets.Labeler(ls.items, "
                "maev_kit.labels.LabelStore('{path}'), annotator='<your name>') in a notebook")


def _labeler_hint(labeled_set: Any) -> str:
    path = (f"{labeled_set.path}/labels.jsonl" if labeled_set is not None
            else "labels.jsonl")
    return LABELER_HINT.format(path=path)


def _set_aside_notes(labeled_set: Any) -> list[str]:
    """One note on the labels set aside because their item is gone (none when none is)."""
    if labeled_set is None or not getattr(labeled_set, "set_aside_labels", None):
        return []
    from maev_kit.labels import label_status

    st = label_status(labeled_set)
    open_ = {k: s for k, s in st.set_aside.items() if k not in st.reattached}
    if not open_:
        return []
    why = "; ".join(f"{n} × {reason}" for reason, n in list(st.reasons().items())[:3])
    more = len(st.reasons()) - 3
    return [f"{len(open_)} label(s) set aside, not counted: their item is gone ({why}"
            + (f"; and {more} more reasons" if more > 0 else "") + "). List them with "
            f"`maev labels {labeled_set.path}`; re-attach one with `maev labels reattach`"]


def _no_labels_error(labeled_set: Any, human: Any, split_name: str | None,
                     items: list[Any]) -> InputError:
    """What to do when no item to score has a human label, by the reason why."""
    hint = _labeler_hint(labeled_set)
    if labeled_set is not None:
        n_skip = len(getattr(labeled_set, "skipped_labels", []))
        aside = getattr(labeled_set, "set_aside_labels", [])
        if not human and aside:
            return InputError(f"no human labels to calibrate against: all {len(aside)} label "
                              f"line(s) are set aside, their items are gone — see `maev labels "
                              f"{labeled_set.path}` (re-attach with `maev labels reattach`), "
                              f"or {hint}")
        if not human:
            skips = (f" (every label is skip: {n_skip} line(s))" if n_skip else "")
            return InputError(f"no human labels yet{skips}: {hint}")
        return InputError(f"no item of split {split_name!r} has a human label ({len(human)} "
                          f"labeled item(s) are in other splits): label items of split "
                          f"{split_name!r} — {hint} — or choose another split")
    ids = {it.item_id for it in items}
    if not human:
        return InputError(f"no human labels yet: {hint}")
    if not any(i in ids for i in human):
        return InputError("no item to score has a human label: none of the labels' item ids "
                          f"({len(human)}) is an item id given (ids are "
                          "<conversation_id>/h<handoff_index>/<fact_id>)")
    return InputError("no item to score has a human label" + (
        f" in split {split_name!r}" if split_name else "") + f": {hint}")


def load_items(items: Any, labels: Any, *, items_arg: str, labels_arg: str
               ) -> tuple[Any, list[Any], Any]:
    """(labeled set or None, the items, the labels) from a labeled-set folder, bundled name or
    loaded set (the labels default to its labels) or a list of items (then ``labels`` is
    required; ``items_arg`` and ``labels_arg`` name the arguments in the error)."""
    labeled_set = None
    if isinstance(items, (str, os.PathLike)):
        from maev_kit.datasets import load_labeled_set

        labeled_set = load_labeled_set(items)
    elif hasattr(items, "manifest") and hasattr(items, "label_records"):
        labeled_set = items
    if labeled_set is not None:
        return labeled_set, list(labeled_set.items), (labels if labels is not None
                                                      else labeled_set)
    if labels is None:
        raise InputError(f"`{labels_arg}` is required when `{items_arg}` is a list of items: "
                         "pass a labels.jsonl path, a LabelStore or a list of label dicts")
    return None, list(items), labels


def labeled_set_info(labeled_set: Any) -> dict[str, Any]:
    """The labeled set's name, version and hashes, for the judge card ({} without a set)."""
    if labeled_set is None:
        return {}
    return {"name": labeled_set.name, "version": labeled_set.version,
            "content_hash": labeled_set.content_hash, "labels_hash": labeled_set.labels_hash}


@dataclass(frozen=True)
class _Plan:
    """What a calibration scores: the judges, the labels, the split and its items."""

    labeled_set: Any
    human_labels: Any  # as given, or the labeled set
    human: dict[str, dict[str, str]]
    specs: list[_Spec]
    split: Any  # as given
    split_name: str | None
    scored: list[Any]  # the split's human-labeled items
    train: list[Any]  # the other splits' items, for a judge that learns from labels
    notes: list[str]


def _plan(items: Any, human_labels: Any, judges: Sequence[Any], prompts: Sequence[Any] | None,
          backend_params: Mapping[str, Any], split: Any, threshold: float,
          judge_options: Mapping[str, Any]) -> _Plan:
    """Check the arguments, load the items and labels, resolve the judges, pick the scored
    split and bind each model judge's worked examples."""
    if not (isinstance(threshold, (int, float)) and -1 <= threshold <= 1):
        raise InputError(f"`threshold` must be a κ value in [-1, 1], e.g. 0.6; got {threshold!r}")
    labeled_set, all_items, human_labels = load_items(items, human_labels, items_arg="items",
                                                      labels_arg="human_labels")
    human = load_human_labels(human_labels)
    specs = _resolve(judges, prompts, backend_params, judge_options)
    split_name, scored, train = _split_of(split, labeled_set, all_items)
    notes = _set_aside_notes(labeled_set)
    scored = [it for it in scored if human.get(it.item_id)]
    if not scored:
        raise _no_labels_error(labeled_set, human, split_name, all_items)
    for spec in specs:
        if getattr(spec.judge, "n_examples", 0):
            spec.judge.bind_examples(all_items, human, scored_split=split_name,
                                     split_of=_split_map(split, labeled_set))
    from maev_kit.calibration._card import card_fields

    for spec in specs:
        spec.meta = replace(spec.meta, card_fields=card_fields(spec.judge))
    return _Plan(labeled_set, human_labels, human, specs, split, split_name, scored, train,
                 notes)


def _fit(spec: _Spec, plan: _Plan) -> CannotFitError | None:
    """Fit a judge that learns from labels on the items outside the scored split (the other
    splits of the set); the error when there is nothing to learn from."""
    judge = spec.judge
    if not (getattr(judge, "requires_fit", False) and not getattr(judge, "is_fitted", True)):
        return None
    scored_ids = {it.item_id for it in plan.scored}
    try:
        if plan.labeled_set is not None and isinstance(plan.split, (str, type(None))):
            fit_on_other_splits(judge, plan.labeled_set, plan.split_name)
        else:
            fit_on_items(judge, [it for it in plan.train if it.item_id not in scored_ids],
                         plan.human, "outside the scored split" if plan.split_name else
                         "(no split given to hold out)")
    except CannotFitError as exc:
        return exc
    return None


def _run_all(plan: _Plan, run_options: Mapping[str, Any]
             ) -> tuple[dict[str, Any], dict[str, JudgeMeta], dict[str, str]]:
    """Run each judge on the scored items: (runs, their metadata, judges not run → why).

    A judge with nothing to learn from is not run (a row of the leaderboard says why; its
    error is raised when no judge is left); a judge that cannot answer at all gets a failed
    run, and so does the same
    model at the same endpoint with another prompt (no retry)."""
    from maev_kit.runner import run_judge

    runs: dict[str, Any] = {}
    dead: dict[str, JudgeUnavailableError] = {}  # endpoint → why it cannot answer
    unfit: dict[str, CannotFitError] = {}
    for spec in plan.specs:
        cannot = _fit(spec, plan)
        if cannot is not None:  # nothing to learn from: the others still run
            unfit[spec.key] = cannot
            continue
        endpoint = repr(spec.backend.cache_identity()) if spec.backend is not None else ""
        if endpoint in dead:
            runs[spec.key] = failed_run(spec.judge, spec.backend, plan.scored,
                                         dead[endpoint])
            continue
        try:
            runs[spec.key] = run_judge(spec.judge, plan.scored, spec.backend, **run_options)
        except JudgeUnavailableError as exc:
            dead[endpoint] = exc
            runs[spec.key] = failed_run(spec.judge, spec.backend, plan.scored, exc)
    if unfit and not runs:
        raise next(iter(unfit.values()))
    return runs, {s.key: s.meta for s in plan.specs}, {k: str(e) for k, e in unfit.items()}


def label_accounting(plan: _Plan, not_run: Mapping[str, str]) -> dict[str, Any]:
    """Where every human-labeled item of a calibration went (see :func:`account_labels`);
    the learned judges that ran were fit on the other splits."""
    fitted = [s.key for s in plan.specs if getattr(s.judge, "requires_fit", False)
              and s.key not in not_run]
    return account_labels(plan.labeled_set, plan.human, {it.item_id for it in plan.scored},
                          plan.split_name, fitted)



@criteria_aware
def calibrate(
    items: Any, human_labels: Any = None, *, judges: Sequence[Any],
    prompts: Sequence[Any] | None = None, examples: int = 0, example_split: str = "dev",
    example_strategy: str = "stratified", backend_params: Mapping[str, Any] | None = None,
    split: str | Mapping[str, Sequence[str]] | None = None, threshold: float = 0.6,
    cache: Any = None, progress: bool = True, max_concurrency: int = 16, max_retries: int = 3,
    timeout: float = 60, mode: str = "sync", max_judge_errors: float = 0.05, seed: int = 0,
    n_resamples: int = 10_000, confidence: float = 0.95, probes: bool | Sequence[str] = False,
) -> CalibrationResult:
    """Run every judge × prompt variant on the human-labeled items and rank them by κ.

    Parameters
    ----------
    items : list of RetentionItem or of a criterion's items (see ``calibrate_criterion``), or
        a labeled-set folder / loaded set (``human_labels``, ``split``: its labels, test split).
    human_labels : a ``labels.jsonl`` path, a :class:`~maev_kit.labels.LabelStore`, or a list of
        dicts in that file's format (``item_id``, ``annotator``, ``label``). Adjudicated
        ``gold`` records are left out: they are a majority vote, not a person.
    judges : names, as in the rest of the kit: offline judges (``"heuristic"``,
        ``"tfidf-logreg"``) or litellm model strings (``"gpt-4o-mini"``, ``"anthropic/..."``,
        ``"ollama/..."``, ``"openai/<name>"`` with ``backend_params={"api_base": ...}``); a
        backend object or offline judge object works too. Each model runs once per prompt.
    prompts : prompts for the model judges (default ``["v4"]``): builtin ids (``"v1"``…
        ``"v4"``), template files or :class:`~maev_kit.judges.PromptTemplate` objects (see
        docs/prompts.md); the leaderboard shows each one's name and content hash.
    examples, example_split, example_strategy : worked examples for the model judges (see
        :class:`~maev_kit.judges.RetentionJudge`): ``examples`` human-labeled items of
        ``example_split`` shown with every request. Drawing them from the scored split is
        refused. The chosen ids go into the judge card.
    backend_params : litellm parameters for every model string (``api_base``, ``api_key``…).
    split : which items to score: a split name of the labeled set, or a mapping
        ``{"dev": ids, "test": ids}`` (conversation or item ids). Calibration reports on
        ``test``; a judge that learns from labels (``"tfidf-logreg"``) is fit on the other
        splits only, so it never sees a test label.
    threshold : a judge is recommended when its κ CI lower bound is at least this.

    A judge whose calls fail for more than ``max_judge_errors`` of the items (no key, nothing
    listening, a server that died mid-run, unreadable replies) is listed as failed with its
    cause (the leaderboard's ``status``), κ n/a, left out of the ranking, the Δκ tests and the
    recommendation; the other judges are still ranked. A judge that cannot answer at all
    (:class:`~maev_kit.errors.JudgeUnavailableError`) is recorded that way too and does not
    stop the others.
    cache, progress, max_concurrency, max_retries, timeout, mode : passed to
        :func:`~maev_kit.runner.run_judge` (``mode="batch"``: the provider's batch API).
    max_judge_errors : a judge that left more than this share of its items without a verdict
        is failed: never ranked, recommended or given a card (rerunning resumes from the cache).
    n_resamples, confidence, seed : bootstrap settings.
    probes : True or probe names: :func:`~maev_kit.calibration.probe_judge` on each judge.

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> from maev_kit.traces import Message
    >>> def item(i, fact, said):
    ...     return RetentionItem(f"c{i}/h0/f1", f"c{i}", 0, "f1", fact, (),
    ...                          (Message("billing", said, 2),))
    >>> items = [item(1, "Account is ACCT-4471", "Account ACCT-4471: refund started."),
    ...          item(2, "Order ORD-9 was damaged", "Which order is this about?"),
    ...          item(3, "Refund goes to card ending 4242", "I refunded card ending 9999."),
    ...          item(4, "Customer email is ana@example.com", "Reply sent to ana@example.com.")]
    >>> labels = [{"item_id": f"c{i}/h0/f1", "annotator": "ana", "label": lab}
    ...           for i, lab in enumerate(["retained", "lost", "contradicted", "retained"], 1)]
    >>> result = calibrate(items, labels, judges=["heuristic"], progress=False, cache=False,
    ...                    n_resamples=200)
    >>> list(result.leaderboard[["judge", "n_items"]].itertuples(index=False, name=None))
    [('heuristic', 4)]
    """
    plan = _plan(items, human_labels, judges, prompts, backend_params or {}, split, threshold,
                 {"examples": examples, "example_split": example_split,
                  "example_strategy": example_strategy, "seed": seed})
    options = {"max_concurrency": max_concurrency, "max_retries": max_retries,
               "timeout": timeout, "cache": cache, "progress": progress}
    runs, meta, not_run = _run_all(plan, {**options, "mode": mode})
    result = calibration_from_runs(
        runs, plan.human, items=plan.scored, meta=meta, threshold=threshold,
        n_resamples=n_resamples, confidence=confidence, seed=seed,
        labeled_set=labeled_set_info(plan.labeled_set), split=plan.split_name,
        reference_labels=labels_are_reference(plan.human_labels), notes=plan.notes,
        not_run=not_run, max_judge_errors=max_judge_errors)
    return _finish(result, plan, not_run, (probes, seed, confidence), options)


def _finish(result: CalibrationResult, plan: _Plan, not_run: Mapping[str, str],
            probing: tuple[bool | Sequence[str], int, float], run_options: Mapping[str, Any]
            ) -> CalibrationResult:
    """``result`` with where every label went and, when asked, the robustness probes of every
    judge that did not fail (its calibration run the baseline): ``probes``, the leaderboard's
    ``flip_<probe>`` columns, and the judge cards made from it."""
    from maev_kit.calibration._probes import probe_columns, probe_judge

    result.label_accounting = label_accounting(plan, not_run)
    probes, seed, confidence = probing
    if not probes:
        return result
    names = None if isinstance(probes, bool) else probes
    failed = result.failed
    for spec in plan.specs:
        run = result.runs.get(spec.key)
        if run is None or spec.key in failed:
            continue
        try:
            result.probes[spec.key] = probe_judge(
                spec.judge, plan.scored, names, seed, backend=spec.backend, baseline=run,
                confidence=confidence, **run_options)
        except JudgeUnavailableError as exc:  # it answered the calibration, not the probes
            result.notes.append(f"the probes of {spec.key} did not run: {exc}")
    result.leaderboard = probe_columns(result.leaderboard, result.probes)
    return result
