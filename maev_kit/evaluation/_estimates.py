"""Corrected estimates: the judge's retention rates corrected with human labels on a random
sample of the judged items (PPI++), beside the judge-only and the human-only estimates.

The judge labels every item; people label a simple random sample of them
(:func:`~maev_kit.labels.draw_label_sample`). For each rate — the share of facts retained,
lost, contradicted, over all handoffs and per agent pair — three estimates:

- **judge-only**: the judge's share over every judged item, its interval from the items alone:
  *not corrected for judge error* (a judge that over-calls "retained" by 10 points gives a
  tight, wrong number);
- **human-only**: the people's share over the labeled sample (several annotators on an item
  count as the share of them who said it);
- **ppi++**: prediction-powered inference with power tuning (Angelopoulos et al., Science
  2023; PPI++, 2024): the judge's share over the unlabeled items, corrected by the judge's error
  measured on the labeled sample — valid like the human-only estimate, and narrower when the
  judge agrees with people.

Labels that exist on items no random sample chose (e.g. picked because judges disagreed) give
no corrected estimate: the row says why. See ``docs/estimates.md``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from maev_kit.labels import LabelSample

__all__ = ["BUDGET_COLUMNS", "ESTIMATE_COLUMNS", "corrected_estimates", "label_budget"]

#: The columns of ``EvaluationResult.estimates``.
ESTIMATE_COLUMNS = ("scope", "rate", "method", "estimate", "ci_low", "ci_high", "n", "N",
                    "lam", "note")
_RATES = ("retained", "lost", "contradicted")
#: The columns of ``EvaluationResult.label_budget``.
BUDGET_COLUMNS = ("rate", "target_half_width", "labels_needed", "more_labels",
                  "expected_half_width", "labels_needed_without_judge", "labeled_now", "note")
#: The half-width the label budget plans for by default (± 5 points).
DEFAULT_HALF_WIDTH = 0.05
#: The note of a judge-only row when no random sample corrects it.
NOT_CORRECTED = "judge-only: not corrected for judge error"


def corrected_estimates(ledger: pd.DataFrame, human_labels: Mapping[str, Mapping[str, str]],
                        sample: LabelSample | None, *, confidence: float = 0.95
                        ) -> pd.DataFrame:
    """The retention rates of ``ledger`` estimated three ways (see the module docstring).

    Parameters
    ----------
    ledger : ``EvaluationResult.ledger`` (its ``item_id``, ``from_agent``, ``to_agent``,
        ``label``; items whose judge call failed are left out).
    human_labels : ``{item_id: {annotator: label}}`` (see
        :func:`~maev_kit.calibration.load_human_labels`).
    sample : the random sample the labels follow, or None (then only judge-only rows, saying
        why nothing is corrected).
    confidence : of every interval.

    Returns
    -------
    DataFrame
        :data:`ESTIMATE_COLUMNS`: ``scope`` (``"all"`` or ``"from → to"``), ``rate``,
        ``method`` (``judge-only``, ``human-only``, ``ppi++``), ``estimate``, ``ci_low``,
        ``ci_high`` (NaN when there is no interval: the note says why), ``n`` (human-labeled
        items used), ``N`` (judged items without a human label), ``lam`` (PPI++'s power-tuning
        λ), ``note``.

    Raises
    ------
    InputError
        The sample was drawn from other items than these judged ones.
    """
    import pandas as pd

    judged = ledger[ledger["label"].notna()] if len(ledger) else ledger
    if not len(judged):  # nothing judged: no rate to estimate
        return pd.DataFrame([], columns=list(ESTIMATE_COLUMNS))
    ids = [str(i) for i in judged["item_id"]]
    blocker = _why_not_corrected([str(i) for i in ledger["item_id"]], ids, human_labels, sample)
    scopes: list[tuple[str, Any]] = [("all", judged)]
    for (fa, ta), part in judged.groupby(["from_agent", "to_agent"], sort=True):
        scopes.append((f"{fa} → {ta}", part))
    rows: list[tuple[Any, ...]] = []
    for scope, part in scopes:
        rows.extend(_scope_rows(scope, part, human_labels, sample, blocker,
                                confidence=confidence))
    out = pd.DataFrame(rows, columns=list(ESTIMATE_COLUMNS))
    if sample is not None and sample.note and blocker is None:
        corrected = out["method"] != "judge-only"
        out.loc[corrected, "note"] = ["; ".join(filter(None, [str(n), sample.note]))
                                      for n in out.loc[corrected, "note"]]
    return out


def _why_not_corrected(population: Sequence[str], ids: Sequence[str],
                       human_labels: Mapping[str, Any], sample: LabelSample | None
                       ) -> str | None:
    """Why the judged items ``ids`` get no corrected estimate (None: they do); raises when
    the sample was drawn from other items than ``population`` (every item to judge, judged
    or failed)."""
    if sample is None:
        labeled = sum(1 for i in ids if human_labels.get(i))
        if labeled:
            return (f"{NOT_CORRECTED}: {labeled} items are labeled, but not as a random "
                    "sample the kit drew (maev sample); labels on items chosen another way "
                    "(by disagreement, by interest, all of a set written by hand) would bias a "
                    "corrected estimate")
        return f"{NOT_CORRECTED}: no labels on a random sample of these items"
    from maev_kit.labels import population_hash

    if sample.population_hash != population_hash(population):
        raise InputError(f"the label sample was drawn from {sample.population} items that are "
                         f"not these {len(set(population))} items (another source, split, set "
                         "of facts or judge run): draw a sample of these items with "
                         "`maev sample`")
    if not any(human_labels.get(i) for i in sample.item_ids):
        return f"{NOT_CORRECTED}: none of the {len(sample.item_ids)} sampled items is labeled yet"
    return None


def _scope_rows(scope: str, part: pd.DataFrame, human_labels: Mapping[str, Mapping[str, str]],
                sample: LabelSample | None, blocker: str | None, *,
                confidence: float) -> list[tuple[Any, ...]]:
    """The rows of one scope: per rate, judge-only, then human-only and ppi++ when corrected."""
    from maev_kit.agreement import human_share, judge_mean, ppi_mean

    ids = [str(i) for i in part["item_id"]]
    judge = dict(zip(ids, (str(v) for v in part["label"])))
    chosen = set(sample.item_ids) if sample is not None and blocker is None else set()
    labeled = [i for i in ids if i in chosen and human_labels.get(i)]
    unlabeled = [i for i in ids if i not in set(labeled)]
    rows = []
    for rate in _RATES:
        est = judge_mean([float(judge[i] == rate) for i in ids], confidence=confidence)
        rows.append(_row(scope, rate, est, blocker or NOT_CORRECTED))  # its note, in full
        if blocker is not None:
            continue
        y = [_share(human_labels[i], rate) for i in labeled]
        if not labeled:
            rows.append((scope, rate, "ppi++", float("nan"), float("nan"), float("nan"), 0,
                         len(unlabeled), float("nan"), "no sampled item of this scope is "
                                                       "labeled"))
            continue
        rows.append(_row(scope, rate, human_share(y, confidence=confidence), ""))
        rows.append(_row(scope, rate, ppi_mean(
            y, [float(judge[i] == rate) for i in labeled],
            [float(judge[i] == rate) for i in unlabeled], confidence=confidence), ""))
    return rows


def _share(labels: Mapping[str, str], rate: str) -> float:
    """The share of an item's annotators who gave ``rate``."""
    values = list(labels.values())
    return sum(v == rate for v in values) / len(values)


def _row(scope: str, rate: str, est: Any, note: str) -> tuple[Any, ...]:
    nan = float("nan")
    notes = est.note
    if est.method == "judge-only":  # our note says it is not corrected, and why
        notes = "; ".join([note, *(p for p in est.note.split("; ")
                                   if p and "not corrected" not in p)])
    lo, hi = est.ci_low, est.ci_high
    if lo is not None and hi is not None and (lo < 0 or hi > 1):  # a share stays in [0, 1]
        lo, hi = max(0.0, lo), min(1.0, hi)
        notes = "; ".join(filter(None, [notes, "the normal interval crossed [0, 1]: clipped "
                                               "to it"]))
    return (scope, rate, est.method, est.estimate, nan if lo is None else lo,
            nan if hi is None else hi, est.n, est.N, nan if est.lam is None else est.lam, notes)


def estimates_for(ledger: pd.DataFrame, *, labeled_set: Any = None, human_labels: Any = None,
                  label_sample: Any = None, confidence: float = 0.95,
                  half_width: float = DEFAULT_HALF_WIDTH) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`corrected_estimates` and :func:`label_budget` with the labels and the sample
    given, or a labeled set's own (its labels, its ``label_sample.json``)."""
    from pathlib import Path

    from maev_kit.calibration import load_human_labels
    from maev_kit.labels import SAMPLE_FILE, LabelSample

    if label_sample is None and labeled_set is not None:
        own = Path(labeled_set.path) / SAMPLE_FILE
        label_sample = own if own.is_file() else None
    sample = (label_sample if label_sample is None or isinstance(label_sample, LabelSample)
              else LabelSample.load(label_sample))
    if sample is not None and labeled_set is not None and len(ledger):
        sample = _sample_of_part(sample, labeled_set, [str(i) for i in ledger["item_id"]])
    source = human_labels if human_labels is not None else labeled_set
    labels = load_human_labels(source) if source is not None else {}
    return (corrected_estimates(ledger, labels, sample, confidence=confidence),
            label_budget(ledger, labels, sample, half_width=half_width, confidence=confidence))


def _sample_of_part(sample: LabelSample, labeled_set: Any, ids: list[str]) -> LabelSample:
    """A sample drawn over a whole labeled set, narrowed to the items scored (a split): its
    sampled items there are a random sample of them. Else the sample as it is."""
    from maev_kit.labels import population_hash

    if sample.population_hash == population_hash(ids):
        return sample
    conv = {it.item_id: it.conversation_id for it in labeled_set.items}
    splits = {labeled_set.split_of(conv[i]) for i in ids if i in conv}
    what = f"split {splits.pop()}" if len(splits) == 1 and None not in splits \
        else "the items scored"
    part = sample.within(list(conv), ids, what=what)
    return part if part is not None else sample


def label_budget(ledger: pd.DataFrame, human_labels: Mapping[str, Mapping[str, str]],
                 sample: LabelSample | None, *, half_width: float = DEFAULT_HALF_WIDTH,
                 confidence: float = 0.95) -> pd.DataFrame:
    """How many human labels of the random sample each overall rate needs for its PPI++
    interval to reach ``± half_width``, planned from the labels there are so far (the pilot;
    :func:`~maev_kit.agreement.plan_labels`), beside the number people alone would need.

    Empty when there is no labeled random sample to plan from (draw one: ``maev sample``)."""
    import pandas as pd

    from maev_kit.agreement import plan_labels

    judged = ledger[ledger["label"].notna()] if len(ledger) else ledger
    ids = [str(i) for i in judged["item_id"]] if len(judged) else []
    if sample is None or not ids or _why_not_corrected(
            [str(i) for i in ledger["item_id"]], ids, human_labels, sample) is not None:
        return pd.DataFrame([], columns=list(BUDGET_COLUMNS))
    judge = dict(zip(ids, (str(v) for v in judged["label"])))
    chosen = set(sample.item_ids)
    pilot = [i for i in ids if i in chosen and human_labels.get(i)]
    rest = [i for i in ids if i not in set(pilot)]
    rows: list[tuple[Any, ...]] = []
    for rate in _RATES:
        try:
            plan = plan_labels([_share(human_labels[i], rate) for i in pilot],
                               [float(judge[i] == rate) for i in pilot],
                               [float(judge[i] == rate) for i in rest],
                               half_width=half_width, confidence=confidence)
        except InputError as e:  # e.g. a pilot of one label: say why, plan nothing
            why = str(e).replace("`y_pilot`", "the sampled labels").replace(
                "`yhat_pilot`", "the judge's verdicts on them")
            rows.append((rate, half_width, None, None, None, None, len(pilot), why))
            continue
        rows.append((rate, half_width, plan.n, plan.more_labels, plan.expected_half_width,
                     plan.n_human_only, len(pilot), plan.note))
    return pd.DataFrame(rows, columns=list(BUDGET_COLUMNS))
