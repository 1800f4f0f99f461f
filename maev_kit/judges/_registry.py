"""Resolve a judge by name: ``get_judge("heuristic")``, ``get_judge("retention-v2")``..."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from maev_kit.retention._items import RetentionItem

__all__ = ["JUDGE_NAMES", "get_judge"]

#: Names :func:`get_judge` accepts.
JUDGE_NAMES: tuple[str, ...] = ("heuristic", "retention-v1", "retention-v2", "tfidf-logreg")


def get_judge(
    spec: Any,
    *,
    train_items: Sequence[RetentionItem] | None = None,
    train_labels: Sequence[str] | Mapping[str, str] | None = None,
) -> Any:
    """A judge from its name.

    ======================  ================================================================
    ``"heuristic"``         :class:`HeuristicJudge`, rule-based, offline
    ``"tfidf-logreg"``      :class:`LearnedJudge`, offline, needs a training split (below)
    ``"retention-v1"``      :class:`RetentionJudge` with the article's prompt (an LLM judge)
    ``"retention-v2"``      :class:`RetentionJudge` with label definitions and examples
    ======================  ================================================================

    A judge object passed as ``spec`` is returned as is.

    **Judges that learn.** ``"tfidf-logreg"`` must be fit on labeled items before it can judge.
    Pass ``train_items`` and ``train_labels`` (a label per item, or ``{item_id: label}``) and
    it comes back fitted; otherwise it comes back unfitted with ``requires_fit = True`` and
    ``is_fitted = False`` — fit it yourself with ``judge.fit(items, labels)``. Calibration
    code can treat every judge alike::

        judge = get_judge(name)
        if getattr(judge, "requires_fit", False):
            judge.fit(dev_items, dev_labels)   # the dev/training split only
        verdicts = judge.judge_items(test_items)  # refuses items it was trained on

    Training data given to a judge that does not learn is an error (it would be ignored).

    Examples
    --------
    >>> get_judge("heuristic").name
    'heuristic'
    >>> get_judge("retention-v2").version.startswith("v2-")
    True
    >>> get_judge("tfidf-logreg").is_fitted
    False
    >>> get_judge("heuristc")
    Traceback (most recent call last):
    ...
    ValueError: unknown judge 'heuristc'; did you mean 'heuristic'? Known judges: heuristic, retention-v1, retention-v2, tfidf-logreg
    """
    if not isinstance(spec, str):
        if all(hasattr(spec, a) for a in ("name", "version", "offline")):
            if train_items is not None or train_labels is not None:
                raise ValueError("`train_items`/`train_labels` go with a judge name, not a "
                                 "judge object; call its `fit` method instead")
            return spec
        raise TypeError(f"`spec` must be a judge name such as 'heuristic' or a judge object, "
                        f"got {type(spec).__name__}")
    name = spec.strip().lower()
    learns = name == "tfidf-logreg"
    if not learns and (train_items is not None or train_labels is not None):
        raise ValueError(f"judge {spec!r} does not learn from labels; drop `train_items` and "
                         "`train_labels` (only 'tfidf-logreg' takes them)")
    if name == "heuristic":
        from maev_kit.judges._heuristic import HeuristicJudge

        return HeuristicJudge()
    if name in ("retention-v1", "retention-v2"):
        from maev_kit.judges._llm import RetentionJudge

        return RetentionJudge(prompt=name.rsplit("-", 1)[1])  # type: ignore[arg-type]
    if learns:
        from maev_kit.judges._learned import LearnedJudge

        judge = LearnedJudge()
        if (train_items is None) != (train_labels is None):
            raise ValueError("pass both `train_items` and `train_labels` (or neither)")
        if train_items is not None:
            judge.fit(train_items, train_labels)  # type: ignore[arg-type]
        return judge
    close = difflib.get_close_matches(name, JUDGE_NAMES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    raise ValueError(f"unknown judge {spec!r}{hint} Known judges: {', '.join(JUDGE_NAMES)}")
