"""``calibrate``: run every judge × prompt variant on the human-labeled items and rank them."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.calibration._human import fit_on_majority, load_human_labels
from maev_kit.calibration._result import CalibrationResult, JudgeMeta, calibration_from_runs

__all__ = ["calibrate"]

_PROMPT_JUDGES = ("retention-v1", "retention-v2")


@dataclass
class _Spec:
    key: str
    judge: Any
    backend: Any
    meta: JudgeMeta


def _prompt_hash(judge: Any) -> str | None:
    template = getattr(judge, "_template", None)
    return getattr(template, "sha256", None)


def _is_backend(obj: Any) -> bool:
    return callable(getattr(obj, "complete", None)) and hasattr(obj, "cache_identity")


def _resolve(judges: Sequence[Any], prompts: Sequence[str] | None,
             backend_params: Mapping[str, Any]) -> list[_Spec]:
    from maev_kit.judges import JUDGE_NAMES, RetentionJudge, get_judge

    if isinstance(judges, str) or not isinstance(judges, Sequence) or not judges:
        raise ValueError("`judges` must be a non-empty list, e.g. judges=['heuristic', "
                         "'gpt-4o-mini']")
    prompt_list = list(prompts) if prompts is not None else ["v1"]
    if isinstance(prompts, str) or not prompt_list:
        raise ValueError(f"`prompts` must be a list of prompt variants such as ['v1', 'v2'], "
                         f"got {prompts!r}")
    specs: list[_Spec] = []

    def llm(model: str, backend: Any, params: dict[str, Any]) -> None:
        for p in prompt_list:
            judge = RetentionJudge(prompt=p)
            specs.append(_Spec(f"{model} [{p}]", judge, backend,
                               JudgeMeta(model, p, params, _prompt_hash(judge))))

    for spec in judges:
        if isinstance(spec, str):
            name = spec.strip()
            low = name.lower()
            if low in _PROMPT_JUDGES:
                raise ValueError(f"{spec!r} is a prompt variant, not a judge model: pass the model "
                                 f"in `judges` and the variant in `prompts`, e.g. judges="
                                 f"['gpt-4o-mini'], prompts=['{low.rsplit('-', 1)[1]}']")
            if low in JUDGE_NAMES:
                judge = get_judge(low)
                specs.append(_Spec(judge.name, judge, None, JudgeMeta(judge.name)))
                continue
            from maev_kit.backends import LiteLLMBackend

            backend = LiteLLMBackend(name, **dict(backend_params))
            llm(name, backend, backend.cache_identity().get("params", {}))
        elif _is_backend(spec):
            ident = spec.cache_identity()
            llm(str(getattr(spec, "model", ident.get("model"))), spec,
                dict(ident.get("params", {})))
        elif all(hasattr(spec, a) for a in ("name", "version", "offline")) and spec.offline:
            specs.append(_Spec(spec.name, spec, None, JudgeMeta(spec.name)))
        else:
            raise TypeError(f"each judge must be an offline judge name ('heuristic', "
                            f"'tfidf-logreg'), a litellm model string ('gpt-4o-mini', "
                            f"'openai/<name>' with backend_params={{'api_base': ...}}), a backend "
                            f"object or an offline judge object; got {spec!r}")
    keys = [s.key for s in specs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"`judges` names {dup} more than once; list each judge once")
    return specs


def _split_of(split: Any, labeled_set: Any, items: list[Any]
              ) -> tuple[str | None, list[Any], list[Any]]:
    """(split name, items to score, items a learning judge may train on)."""
    if split is None and labeled_set is not None and "test" in labeled_set.manifest.splits:
        split = "test"
    if split is None:
        return None, items, []
    if isinstance(split, str):
        if labeled_set is None:
            raise ValueError(f"`split={split!r}` needs a labeled set (pass its folder as `items`) "
                             "or a mapping {'dev': [...ids], 'test': [...ids]}")
        splits = {k: set(v) for k, v in labeled_set.manifest.splits.items()}
        name = split
    elif isinstance(split, Mapping):
        splits = {str(k): set(v) for k, v in split.items()}
        name = "test" if "test" in splits else next(iter(splits), None)
    else:
        raise TypeError(f"`split` must be None, a split name or a mapping name → ids, got "
                        f"{type(split).__name__}")
    if name not in splits:
        raise ValueError(f"no split {name!r}; splits: {sorted(splits)}")

    def pick(ids: set[str]) -> list[Any]:
        return [it for it in items if it.item_id in ids or it.conversation_id in ids]

    train = pick(set().union(*(v for k, v in splits.items() if k != name)))
    return name, pick(splits[name]), train


def calibrate(
    items: Any,
    human_labels: Any = None,
    *,
    judges: Sequence[Any],
    prompts: Sequence[str] | None = None,
    backend_params: Mapping[str, Any] | None = None,
    split: str | Mapping[str, Sequence[str]] | None = None,
    threshold: float = 0.6,
    cache: Any = None,
    progress: bool = True,
    max_concurrency: int = 16,
    max_retries: int = 3,
    timeout: float = 60,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CalibrationResult:
    """Run every judge × prompt variant on the human-labeled items and rank them by κ.

    Parameters
    ----------
    items : list of RetentionItem, or a labeled-set folder / loaded labeled set (then
        ``human_labels`` defaults to the set's labels and ``split`` to its ``test`` split).
    human_labels : a ``labels.jsonl`` path, a :class:`~maev_kit.labels.LabelStore`, or a list of
        dicts in that file's format (``item_id``, ``annotator``, ``label``). Adjudicated
        ``gold`` records are left out: they are a majority vote, not a person.
    judges : names, as in the rest of the kit: offline judges (``"heuristic"``,
        ``"tfidf-logreg"``) or litellm model strings (``"gpt-4o-mini"``, ``"anthropic/..."``,
        ``"ollama/..."``, ``"openai/<name>"`` with ``backend_params={"api_base": ...}``); a
        backend object or offline judge object works too. Each model runs once per prompt.
    prompts : prompt variants for the model judges (default ``["v1"]``).
    backend_params : litellm parameters for every model string (``api_base``, ``api_key``,
        ``temperature``...).
    split : which items to score: a split name of the labeled set, or a mapping
        ``{"dev": ids, "test": ids}`` (conversation or item ids). Calibration reports on
        ``test``; a judge that learns from labels (``"tfidf-logreg"``) is fit on the other
        splits only, so it never sees a test label.
    threshold : a judge is recommended when its κ CI lower bound is at least this.
    cache, progress, max_concurrency, max_retries, timeout : passed to
        :func:`~maev_kit.runner.run_judge`.
    n_resamples, confidence, seed : bootstrap settings.

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
    from maev_kit.runner import run_judge

    if not (isinstance(threshold, (int, float)) and -1 <= threshold <= 1):
        raise ValueError(f"`threshold` must be a κ value in [-1, 1], e.g. 0.6; got {threshold!r}")
    labeled_set = None
    if isinstance(items, (str, os.PathLike)):
        from maev_kit.datasets import load_labeled_set

        labeled_set = load_labeled_set(items)
    elif hasattr(items, "manifest") and hasattr(items, "label_records"):
        labeled_set = items
    if labeled_set is not None:
        all_items = list(labeled_set.items)
        if human_labels is None:
            human_labels = labeled_set
    else:
        all_items = list(items)
    if human_labels is None:
        raise ValueError("`human_labels` is required when `items` is a list of items: pass a "
                         "labels.jsonl path, a LabelStore or a list of label dicts")
    human = load_human_labels(human_labels)
    specs = _resolve(judges, prompts, backend_params or {})
    split_name, scored, train = _split_of(split, labeled_set, all_items)
    scored = [it for it in scored if human.get(it.item_id)]
    if not scored:
        raise ValueError("no item to score has a human label"
                         + (f" in split {split_name!r}" if split_name else "")
                         + ": check that the labels' item ids match the items")
    scored_ids = {it.item_id for it in scored}
    runs: dict[str, Any] = {}
    for spec in specs:
        judge = spec.judge
        if getattr(judge, "requires_fit", False) and not getattr(judge, "is_fitted", True):
            train_items = [it for it in train if human.get(it.item_id)
                           and it.item_id not in scored_ids]
            if not train_items:
                raise ValueError(f"judge {spec.key!r} learns from labels and needs labeled "
                                 "training items outside the scored ones: give `split` a dev "
                                 "split (e.g. a labeled set with dev/test splits)")
            fit_on_majority(judge, train_items, human)
        runs[spec.key] = run_judge(judge, scored, spec.backend, max_concurrency=max_concurrency,
                                   max_retries=max_retries, timeout=timeout, cache=cache,
                                   progress=progress)
    info = ({"name": labeled_set.name, "version": labeled_set.version,
             "labels_hash": labeled_set.labels_hash} if labeled_set is not None else {})
    return calibration_from_runs(runs, human, items=scored, meta={s.key: s.meta for s in specs},
                                 threshold=threshold, n_resamples=n_resamples,
                                 confidence=confidence, seed=seed, labeled_set=info,
                                 split=split_name)
