"""The judging stage: the judge to use (checked against its card), then a verdict per item."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.evaluation._options import is_default_judge

if TYPE_CHECKING:
    from maev_kit.datasets import LabeledSet
    from maev_kit.judges import Verdict
    from maev_kit.retention import RetentionItem
    from maev_kit.runner import JudgeRun

__all__ = ["judge_info", "judge_items", "resolve_evaluation_judge", "verdicts_by_conversation"]


def resolve_evaluation_judge(judge: Any, *, backend: Any = None, prompt: Any = None,
                             judge_card: Any = None, labeled_set: LabeledSet | None = None,
                             split: str | None = None, allow_mismatch: bool = False
                             ) -> tuple[Any, Any]:
    """The judge object and backend: the card's judge when only a card is given, else
    :func:`~maev_kit.judges.resolve_judge` (checked against the card); fit on the other splits
    when it learns from labels; worked examples drawn from their split."""
    from maev_kit.calibration import JudgeCard, fit_on_other_splits, judge_from_card
    from maev_kit.judges import resolve_judge

    card = None
    if judge_card is not None:
        card = judge_card if isinstance(judge_card, JudgeCard) else JudgeCard.load(judge_card)
    if card is not None and is_default_judge(judge) and prompt is None:
        judge_obj, judge_backend = judge_from_card(card, backend=backend,
                                                   labeled_set=labeled_set)
        _bind_examples(judge_obj, labeled_set, split)
        if labeled_set is not None:
            card.check(judge_obj, model=card.model, labeled_set=labeled_set)
        return judge_obj, judge_backend
    judge_obj, judge_backend = resolve_judge(str(judge) if is_default_judge(judge) else judge,
                                             prompt=prompt, backend=backend)
    fit_on_other_splits(judge_obj, labeled_set, split)
    _bind_examples(judge_obj, labeled_set, split)
    if card is not None:
        model = (judge_backend if isinstance(judge_backend, str)
                 else getattr(judge_backend, "model", None))
        differ = card.differences(judge_obj, model=model)
        if differ and not allow_mismatch:
            raise InputError("the judge given differs from the judge card: " + "; ".join(differ)
                             + " — leave the judge out to score with the card's judge, or allow "
                             "the mismatch (allow_mismatch=True, --allow-mismatch)")
        card.check(judge_obj, model=model, labeled_set=labeled_set)
    return judge_obj, judge_backend


def _bind_examples(judge: Any, labeled_set: LabeledSet | None, split: str | None) -> None:
    """Draw a judge's worked examples from its split of the labeled set (never the scored one)."""
    if not getattr(judge, "n_examples", 0) or not callable(getattr(judge, "bind_examples", None)):
        return
    ls = labeled_set
    if ls is None:
        if judge.examples:  # given (or from a card): only the overlap check applies
            return
        raise InputError(f"{judge.name} draws worked examples from split "
                         f"{judge.example_split!r} of a labeled set, but traces were given: "
                         "score a labeled set's split, or give the examples (examples=[(item, "
                         "label), ...] or example_pool=...)")
    from maev_kit.calibration import load_human_labels

    judge.bind_examples(ls.items, load_human_labels(ls), scored_split=split,
                        split_of=ls.split_of)


def judge_items(items: Sequence[RetentionItem], judge: Any, backend: Any, *, cache: Any = None,
           progress: bool = True, max_concurrency: int = 16, timeout: float = 60.0,
           mode: str = "sync") -> JudgeRun | None:
    """Judge every item (None when there is nothing to judge)."""
    if not items:
        return None
    from maev_kit.runner import run_judge

    return run_judge(judge, list(items), backend, cache=cache, progress=progress,
                     max_concurrency=max_concurrency, timeout=timeout, mode=mode)


def verdicts_by_conversation(items: Sequence[RetentionItem], run: JudgeRun | None
                              ) -> dict[str, list[Verdict]]:
    """Each conversation's verdicts, in item order; every item must have one."""
    by_id = {v.item_id: v for v in (run.verdicts if run else [])}
    missing = [it.item_id for it in items if it.item_id not in by_id]
    if missing:
        raise RuntimeError(f"the judge run returned no verdict for {len(missing)} item(s), "
                           f"e.g. {missing[0]!r}")
    out: dict[str, list[Verdict]] = {}
    for it in items:
        out.setdefault(it.conversation_id, []).append(by_id[it.item_id])
    return out


def judge_info(judge_obj: Any, judge: Any, run: JudgeRun | None) -> dict[str, Any]:
    if judge is None:
        return {"name": None, "version": "", "model": None, "offline": True, "stats": {}}
    template = getattr(judge_obj, "template", None)
    return {"name": getattr(judge_obj, "name", str(judge)),
            "version": getattr(judge_obj, "version", ""),
            "prompt": getattr(template, "name", None),
            "prompt_sha256": getattr(template, "sha256", None),
            "example_ids": list(getattr(judge_obj, "example_ids", []) or []),
            "model": run.model if run else None,
            "offline": bool(getattr(judge_obj, "offline", False)),
            "stats": dict(run.stats) if run else {}}
