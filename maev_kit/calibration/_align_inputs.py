"""The inputs of :func:`~maev_kit.calibration.align`, checked before anything is sent.

This module owns the argument checks, the dev and test splits (human-labeled items only, no
conversation shared), the worked-example pool (a third split, or a share of the dev
conversations held out of dev scoring), the prompts to try, and the prices a cost budget needs.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.calibration._align_budget import Budget, _Price, _price
from maev_kit.calibration._calibrate import labeled_set_info, load_items
from maev_kit.calibration._human import load_human_labels
from maev_kit.errors import InputError


# --------------------------------------------------------------------------- inputs
def _check_args(models: Sequence[str] | str, examples: Sequence[int], strategies: Sequence[str],
                rewrites: int, threshold: float) -> tuple[list[str], list[int], list[str]]:
    """(models, worked-example counts, example strategies), each deduplicated and checked; an
    :class:`InputError` names the first bad argument."""
    if isinstance(models, str):
        models = [models]
    models = [m.strip() for m in models or () if isinstance(m, str) and m.strip()]
    if not models:
        raise InputError("`models` must name at least one model judge, e.g. ['gpt-4o-mini']")
    ks: list[int] = (list(dict.fromkeys(examples)) if not isinstance(examples, int)
                     else [examples])
    if not ks or any(isinstance(k, bool) or not isinstance(k, int) or k < 0 for k in ks):
        raise InputError(f"`examples` must be counts >= 0, e.g. (0, 3); got {tuple(examples)!r}")
    strategies = [strategies] if isinstance(strategies, str) else list(dict.fromkeys(strategies))
    from maev_kit.judges.internal import STRATEGIES

    bad = [s for s in strategies if s not in STRATEGIES]
    if bad or not strategies:
        raise InputError(f"unknown example strategy {bad[0] if bad else None!r}; strategies: "
                         + ", ".join(STRATEGIES))
    if isinstance(rewrites, bool) or not isinstance(rewrites, int) or rewrites < 0:
        raise InputError(f"`rewrites` must be a whole number >= 0, got {rewrites!r}")
    if not (isinstance(threshold, (int, float)) and -1 <= threshold <= 1):
        raise InputError(f"`threshold` must be a κ value in [-1, 1], got {threshold!r}")
    return models, ks, strategies


def _stderr_echo(progress: bool) -> Callable[[str], None]:
    """Where progress lines go by default: stderr when ``progress``, else nowhere."""
    if progress:
        return lambda s: print(s, file=sys.stderr, flush=True)
    return lambda s: None


def _split(ls: Any, items: list[Any], split: Any, what: str) -> tuple[str, list[Any]]:
    """(name, items) of a split: a split name of the labeled set, or a sequence of ids."""
    if isinstance(split, str):
        if ls is None:
            raise InputError(f"`{what}={split!r}` names a split, which needs a labeled set; with "
                             "a list of items pass the split's conversation or item ids")
        if split not in ls.manifest.splits:
            have = ", ".join(ls.manifest.splits) or "none"
            raise InputError(f"`{what}`: labeled set {ls.name!r} has no split {split!r}; "
                             f"splits: {have}")
        return split, ls.items_in(split)
    if isinstance(split, Sequence) and split:
        ids = {str(x) for x in split}
        return what.split("_")[0], [it for it in items if it.item_id in ids
                                    or it.conversation_id in ids]
    raise InputError(f"`{what}` must be a split name or a list of ids, got {split!r}")


def _labeled_splits(ls: Any, items: list[Any], human: Mapping[str, Any], dev_split: Any,
                    test_split: Any) -> tuple[str, list[Any], str, list[Any]]:
    """(dev name, dev items, test name, test items), human-labeled items only; the two must
    share no conversation and neither may be empty."""
    dev_name, dev = _split(ls, items, dev_split, "dev_split")
    test_name, test = _split(ls, items, test_split, "test_split")
    dev = [it for it in dev if human.get(it.item_id)]
    test = [it for it in test if human.get(it.item_id)]
    overlap = {it.conversation_id for it in dev} & {it.conversation_id for it in test}
    if overlap:
        raise InputError(f"the dev and test splits share {len(overlap)} conversation(s), e.g. "
                         f"{sorted(overlap)[0]!r}: the test split must be held out")
    if not dev or not test:
        raise InputError(f"no human-labeled item in the {'dev' if not dev else 'test'} split: "
                         "label items there first")
    return dev_name, dev, test_name, test


def _majority(human: Mapping[str, Mapping[str, str]], iid: str) -> str | None:
    from maev_kit.agreement import majority_labels

    votes = human.get(iid) or {}
    if not votes:
        return None
    return majority_labels({a: [lab] for a, lab in votes.items()})[0]


def _example_pool(ls: Any, dev: list[Any], human: Mapping[str, Any], example_split: str | None,
                  share: float, seed: int, dev_name: str, test_name: str
                  ) -> tuple[list[tuple[Any, str]], list[Any], str]:
    """(pool of (item, label), dev items left to score, where the pool came from)."""
    if example_split is not None:
        if example_split in (dev_name, test_name):
            raise InputError(f"`example_split={example_split!r}`: worked examples may come from "
                             f"neither the dev split (scored by the search) nor the test split")
        _, pool_items = _split(ls, [], example_split, "example_split")
        rest, where = dev, f"split {example_split!r}"
    else:
        if not 0 < share < 1:
            raise InputError(f"`example_share` must be between 0 and 1, got {share!r}")
        convs = sorted({it.conversation_id for it in dev})
        random.Random(seed).shuffle(convs)
        n = max(1, round(len(convs) * share))
        held = set(convs[:n])
        pool_items = [it for it in dev if it.conversation_id in held]
        rest = [it for it in dev if it.conversation_id not in held]
        where = f"{n} of the {len(convs)} dev conversations (held out of dev scoring)"
    pool = [(it, lab) for it in pool_items if (lab := _majority(human, it.item_id))]
    return pool, rest, where


@dataclass(frozen=True)
class _Data:
    """What a search works on: the labels, the dev and test splits (human-labeled items only;
    dev without the example pool), the prompts to try and the worked-example pool."""

    human: dict[str, dict[str, str]]
    dev_name: str
    dev: list[Any]
    test_name: str
    test: list[Any]
    base: Any  # the base prompt's template
    templates: list[Any]  # the base first, then each distinct candidate prompt
    pool: list[tuple[Any, str]]
    pool_where: str  # where the pool came from ("" without worked examples)
    info: dict[str, Any]  # the labeled set's name, version and hashes

    @property
    def splits(self) -> dict[str, Any]:
        """The splits' names and sizes, for the result."""
        return {"dev": self.dev_name, "test": self.test_name, "dev_items": len(self.dev),
                "test_items": len(self.test), "example_pool": self.pool_where or None}


def _prepare(items_or_set: Any, labels: Any, base_prompt: Any, candidates: Sequence[Any] | None,
             ks: list[int], dev_split: Any, test_split: Any, example_split: str | None,
             example_share: float, seed: int) -> _Data:
    """Load the items and labels, cut the dev and test splits, resolve the prompts and hold out
    the worked-example pool (when any k > 0)."""
    from maev_kit.judges.internal import resolve_prompt

    ls, all_items, label_src = load_items(items_or_set, labels, items_arg="items_or_set",
                                          labels_arg="labels")
    human = load_human_labels(label_src)
    dev_name, dev, test_name, test = _labeled_splits(ls, all_items, human, dev_split, test_split)
    base_t = resolve_prompt(base_prompt)
    templates = [base_t]
    for c in candidates or ():
        t = resolve_prompt(c)
        if t.sha256 not in {x.sha256 for x in templates}:
            templates.append(t)
    pool: list[tuple[Any, str]] = []
    pool_where = ""
    if any(ks):
        pool, dev, pool_where = _example_pool(ls, dev, human, example_split, example_share, seed,
                                              dev_name, test_name)
        if len(pool) < max(ks):
            raise InputError(f"worked examples: the pool ({pool_where}) has {len(pool)} labeled "
                             f"item(s), fewer than the {max(ks)} asked for; ask for fewer "
                             "examples or pass example_split=")
        if not dev:
            raise InputError("no dev item is left to score once the example pool is held out: "
                             "lower example_share or pass example_split=")
    return _Data(human, dev_name, dev, test_name, test, base_t, templates, pool, pool_where,
                 labeled_set_info(ls))


def _prices(models: list[str], rewriter: str | None, rewrites: int, params: Mapping[str, Any],
            limits: Budget) -> tuple[dict[str, _Price | None], str]:
    """(USD per token by model, the rewriter's model); a cost budget is refused when a model
    has no known price."""
    prices: dict[str, _Price | None] = {m: _price(m, params) for m in models}
    rewriter_model = (rewriter or models[0]).strip()
    if rewrites:
        prices.setdefault(rewriter_model, _price(rewriter_model, params))
    if limits.max_cost is not None:
        unpriced = [m for m, p in prices.items() if p is None]
        if unpriced:
            raise InputError(f"--max-cost: no price is known for model {unpriced[0]} (litellm's "
                             "price table has none): bound the search with --max-requests "
                             "instead, or give backend params input_cost_per_token / "
                             "output_cost_per_token")
    return prices, rewriter_model
