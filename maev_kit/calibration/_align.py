"""``align``: search for a better judge prompt on the dev split, then test the winner once.

The search never sees the test split. Candidates (prompt files × worked-example counts ×
example strategies × models, plus instruction rewrites an LLM proposes from the dev
disagreements) are scored on dev only and ranked by the lower bound of κ's CI on dev. Then the
winner and the base prompt are each scored once on the test split, and the paired Δκ (bootstrap
CI, McNemar p) says whether the winner is really better: that number, not the dev κ the search
maximised, is the one to trust.

This module holds the entry point; the parts live beside it: ``_align_budget`` (the budget,
prices and estimates), ``_align_inputs`` (arguments, splits, the worked-example pool),
``_align_candidates`` (candidate judges and the rewrite request), ``_align_search`` (scoring on
dev, rewrites, the held-out test) and ``_align_result`` (:class:`AlignmentResult`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from maev_kit.calibration._align_budget import Budget, _Meter, _budget
from maev_kit.calibration._align_inputs import _check_args, _prepare, _prices, _stderr_echo
from maev_kit.calibration._align_result import AlignmentResult, _Report
from maev_kit.calibration._align_search import (
    _Search, _Setup, _candidates, _estimate_search, _finish,
)

__all__ = ["AlignmentResult", "Budget", "align"]


# --------------------------------------------------------------------------- align
def align(
    items_or_set: Any, labels: Any = None, *, base_prompt: Any = "v4",
    models: Sequence[str] | str, candidates: Sequence[Any] | None = None,
    examples: Sequence[int] = (0,), strategies: Sequence[str] = ("stratified",),
    rewrites: int = 0, rewriter: str | None = None,
    dev_split: Any = "dev", test_split: Any = "test",
    example_split: str | None = None, example_share: float = 0.25,
    budget: Budget | Mapping[str, Any] | None = None, dry_run: bool = False,
    threshold: float = 0.6, backend_params: Mapping[str, Any] | None = None,
    cache: Any = None, progress: bool = True, echo: Callable[[str], None] | None = None,
    max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
    n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0,
) -> AlignmentResult:
    """Search for the judge prompt that agrees best with people on dev; test the winner once.

    Parameters
    ----------
    items_or_set : a labeled-set folder, bundled name or loaded set (labels default to its
        labels), or a list of RetentionItem with ``labels``.
    labels : human labels (a labels.jsonl path, a LabelStore, label dicts).
    base_prompt : the prompt you start from (``"v4"``, the default; ``"v1"``, ``"v2"``, a
        template file or a PromptTemplate): always a candidate, and what the winner is tested
        against.
    models : litellm model strings (``"gpt-4o-mini"``, ``"openai/<name>"`` with
        ``backend_params={"api_base": ...}``); the first is the base prompt's model.
    candidates : more prompts to try (template files, PromptTemplates, builtin ids).
    examples : worked-example counts to try (0 = none); each k > 0 is tried with every
        strategy in ``strategies`` (``"stratified"``, ``"disagreements"``).
    rewrites : how many instruction rewrites to ask an LLM for. Rewrite n starts from the best
        candidate so far (by κ's CI lower bound on dev) and its dev disagreements, keeps its
        user section, model and examples, and must pass template validation (else it is
        logged as ``invalid``). The request goes through the runner with ``rewriter`` (default:
        the first model).
    dev_split, test_split : split names of the labeled set (or lists of ids). The search scores
        only dev; test is scored once, for the winner and the base prompt, at the end.
    example_split : where worked examples come from: a third split of the set; by default
        ``example_share`` of the dev conversations are held out as the example pool (and left
        out of dev scoring for every candidate, so all are compared on the same items).
    budget : :class:`Budget` or ``{"max_requests": N, "max_cost": USD}``. A candidate whose
        estimated requests do not fit what is left is skipped (``skipped: budget``); no
        request past the limit is ever sent.
    dry_run : only estimate (requests × tokens × litellm's prices): nothing is sent.
    echo : where the estimate and progress lines go (default: stderr when ``progress``).
    threshold, cache, progress, max_concurrency, max_retries, timeout, n_resamples,
    confidence, seed : as in :func:`~maev_kit.calibration.calibrate`.

    Returns
    -------
    AlignmentResult
        Every candidate with its dev κ and cost (``candidates``), the winner, its κ on test
        and the paired test of winner against base (``test_comparison``), the judge card.

    Examples
    --------
    >>> align("support_desk", models=["openai/m"], examples=(-1,), dry_run=True)
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: `examples` must be counts >= 0, e.g. (0, 3); got (-1,)
    """
    models, ks, strategies = _check_args(models, examples, strategies, rewrites, threshold)
    limits, params = _budget(budget), dict(backend_params or {})
    say = echo if echo is not None else _stderr_echo(progress)
    data = _prepare(items_or_set, labels, base_prompt, candidates, ks, dev_split, test_split,
                    example_split, example_share, seed)
    prices, rewriter_model = _prices(models, rewriter, rewrites, params, limits)
    setup = _Setup(data, params, prices, {"max_concurrency": max_concurrency,
                                          "max_retries": max_retries, "timeout": timeout,
                                          "cache": cache, "progress": progress},
                   threshold, n_resamples, confidence, seed, say)
    cands = _candidates(setup, models, ks, strategies)
    report = _Report(cands[0].key, _estimate_search(setup, cands, rewrites, rewriter_model, limits),
                     limits, data.info, data.splits)
    if dry_run:
        return report.dry_run(cands)
    search = _Search(setup, cands, _Meter(limits))
    search.run(rewrites, rewriter_model)
    return _finish(search, report)
