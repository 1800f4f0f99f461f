"""Which items to label next: where the judges (or prompt variants) disagree most."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["next_items_to_label"]


def _labels_of(run: Any) -> dict[str, str | None]:
    """``{item_id: label}`` from a JudgeRun, a list of Verdicts or a mapping."""
    if isinstance(run, Mapping):
        return {str(k): v for k, v in run.items()}
    verdicts = getattr(run, "verdicts", run)
    return {v.item_id: v.label for v in verdicts}


def next_items_to_label(
    items: Sequence[Any],
    judge_runs: Sequence[Any] | Mapping[str, Any],
    k: int = 20,
    *,
    exclude: Sequence[str] = (),
) -> pd.DataFrame:
    """The ``k`` items the judges disagree on most (vote entropy), to label next.

    Vote entropy is ``−Σ_c (v_c/V) log(v_c/V)`` over the labels the judges gave an item (``V``
    votes, errors not counted): 0 when all agree, highest when votes split evenly. Labeling those
    items first narrows the κ intervals where the judges differ. Ties keep ``items`` order.

    Parameters
    ----------
    items : retention items (or item ids) that are candidates, usually the unlabeled ones.
    judge_runs : JudgeRuns (or verdict lists, or ``{item_id: label}`` dicts), one per judge or
        prompt variant; a mapping name → run names the columns.
    k : how many items to return.
    exclude : item ids to leave out (e.g. those already labeled).

    Returns
    -------
    DataFrame with ``item_id``, ``vote_entropy``, ``n_votes``, ``votes`` (label → count) and
    one column per judge, most contested first.

    Examples
    --------
    >>> runs = {"a": {"i1": "lost", "i2": "retained", "i3": "lost"},
    ...         "b": {"i1": "lost", "i2": "contradicted", "i3": "retained"},
    ...         "c": {"i1": "lost", "i2": "lost", "i3": "lost"}}
    >>> next_items_to_label(["i1", "i2", "i3"], runs, k=2)["item_id"].tolist()
    ['i2', 'i3']
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive int, got {k!r}")
    if isinstance(judge_runs, Mapping):
        names = [str(n) for n in judge_runs]
        runs = list(judge_runs.values())
    else:
        runs = list(judge_runs)
        names = []
        for i, r in enumerate(runs):
            base = getattr(r, "judge_name", None) or f"judge_{i + 1}"
            model = getattr(r, "model", None)
            name = f"{model} [{base}]" if model else base
            names.append(name if name not in names else f"{name} #{i + 1}")
    if len(runs) < 2:
        raise ValueError("`judge_runs` needs two or more runs (judges or prompt variants) to "
                         "measure disagreement")
    by_judge = [_labels_of(r) for r in runs]
    skip = set(exclude)
    rows = []
    for pos, it in enumerate(items):
        iid = it if isinstance(it, str) else it.item_id
        if iid in skip:
            continue
        got = [lab.get(iid) for lab in by_judge]
        votes = Counter(x for x in got if x is not None)
        total = sum(votes.values())
        h = -sum(c / total * math.log(c / total) for c in votes.values()) if total else 0.0
        rows.append({"item_id": iid, "vote_entropy": h + 0.0, "n_votes": total,
                     "votes": dict(votes), **dict(zip(names, got)), "_pos": pos})
    frame = pd.DataFrame(rows, columns=["item_id", "vote_entropy", "n_votes", "votes", *names,
                                        "_pos"])
    frame = frame.sort_values(["vote_entropy", "n_votes", "_pos"], ascending=[False, False, True],
                              kind="stable")
    return frame.drop(columns="_pos").head(k).reset_index(drop=True)
