"""``CalibrationResult``: judges × prompts ranked by agreement with humans, from judge runs."""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from maev_kit.agreement import (
    LABELS,
    agreement_report,
    ci_label,
    compare_judges,
    holm,
    human_ceiling,
    judge_vs_humans,
    labels_needed,
    majority_labels,
)
from maev_kit.agreement.internal import ac_from_table, encode, finite_float, kappa_text
from maev_kit.calibration._card import JudgeCard, labels_hash, verdict_fields
from maev_kit.calibration._human import load_human_labels
from maev_kit.errors import ERROR_CAUSES, InputError, JudgeErrorsExceeded

__all__ = ["CalibrationResult", "DegenerateLabelsError", "JudgeMeta", "MIN_PER_CLASS",
           "calibration_from_runs", "label_problem", "labels_are_reference"]

#: Labels needed in each of at least two classes before a judge is recommended or carded.
MIN_PER_CLASS = 5


class DegenerateLabelsError(InputError):
    """The human labels cannot support a judge card or a recommendation (one class, or too few
    labels per class); the message says what to label next."""


def label_problem(counts: Mapping[str, int], *, n_items: int | None = None) -> str | None:
    """Why labels with these per-class ``counts`` cannot support a recommendation, or None.

    One class: κ is undefined (chance agreement is the observed one, whatever the judge).
    Fewer than :data:`MIN_PER_CLASS` labels in each of two classes: κ is computed but its CI
    cannot be trusted, so no judge is recommended.

    >>> label_problem({"retained": 40, "lost": 0, "contradicted": 0})[:36]
    'κ undefined: your labels hold one cl'
    >>> label_problem({"retained": 40, "lost": 2, "contradicted": 0})[:40]
    'too few labels per class to recommend a '
    >>> label_problem({"retained": 40, "lost": 9, "contradicted": 1}) is None
    True
    """
    present = {k: int(v) for k, v in counts.items() if v}
    shown = ", ".join(f"{k} {int(v)}" for k, v in counts.items())
    if not present:
        return ("no human labels on the scored items: label items with "
                "maev_kit.widgets.Labeler")
    if len(present) == 1:
        (lab, n), = present.items()
        on = f" on {n_items} item{'s' if n_items != 1 else ''}" if n_items is not None else ""
        return (f"κ undefined: your labels hold one class ({lab}: {n} label"
                f"{'s' if n != 1 else ''}{on}) — κ needs at least two, so no judge is ranked "
                "or recommended; accuracy with its n is shown. Label items the judges disagree "
                "on (the disagreements list them: the likeliest to be lost or contradicted)")
    if sum(v >= MIN_PER_CLASS for v in present.values()) < 2:
        return (f"too few labels per class to recommend a judge ({shown}; a recommendation "
                f"needs at least {MIN_PER_CLASS} in each of two classes) — κ is shown, not "
                "trusted. Next: label the items the judges disagree on, then more of each "
                "class")
    return None

LEADERBOARD_COLUMNS = [
    "judge", "prompt", "status", "kappa", "kappa_low", "kappa_high", "delta_kappa", "p_value", "ac1",
    "accuracy", "parse_failure_rate", "recall_contradicted", "n_items", "cost", "tokens",
    "latency_p50", "latency_p95", "requests", "cache_hits", "judge_version", "prompt_sha256",
    "key",
]


@dataclass(frozen=True)
class JudgeMeta:
    """What a leaderboard row ran: display ``judge`` (model string or offline name), ``prompt``
    variant (None for offline judges), backend ``params`` and the prompt template's hash."""

    judge: str
    prompt: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    prompt_hash: str | None = None
    card_fields: dict[str, Any] = field(default_factory=dict)  # custom prompt text, examples


@dataclass
class CalibrationResult:
    """How well each judge × prompt variant agrees with the human labels.

    Attributes
    ----------
    leaderboard : DataFrame, best first. ``status`` is ``"ok"``, or for a judge whose calls
        failed for more than half the items ``"failed: auth (382 of 382 items)"`` (the causes
        of :data:`maev_kit.errors.ERROR_CAUSES` with their counts): such a judge has no κ (NaN,
        shown as n/a), comes last and takes no part in the Δκ tests or the recommendation.
        ``kappa`` is the judge's mean Cohen κ against each
        annotator (κ against the one annotator when there is one) with a percentile bootstrap
        CI (``kappa_low``, ``kappa_high``). ``delta_kappa`` is the paired Δκ to the best row on
        the items both judged, ``p_value`` its paired-bootstrap p-value (Holm-adjusted over the
        rows). ``ac1``: mean Gwet AC1 against each annotator; ``accuracy`` and
        ``recall_contradicted``: over all (item, annotator) label pairs; ``parse_failure_rate``:
        share of items without a verdict (a failed call or an unreadable reply), reported for
        every judge. Cost, tokens, latency, requests and cache hits come from the run.
    ceiling : Series or None. The human–human row (mean pairwise κ with CI, Fleiss κ, α), or
        None with a single annotator.
    confusions : dict key → DataFrame of item counts, rows = human majority label (ties to the
        more severe label), columns = judge label.
    disagreements : DataFrame of items where the judge's label differs from the human majority
        (or it gave none): item_id, human_labels, human_majority, judge_label, error, rationale,
        fact, after_text.
    recommendation : str. The best judge whose κ CI lower bound clears ``threshold``, or why
        none does and what to do next — when every judge failed, the failure and its fix.
    runs : dict key → JudgeRun.
    reference_labels : bool. True when every label calibrated against is a reference label
        (``source == "reference"``, written by the set's authors, not by independent
        annotators; see :func:`labels_are_reference`): views then say "reference labels", not
        "human labels".
    label_counts : dict label → number of human labels (every annotator's) on the scored
        items.
    label_problem : str or None. Why the labels cannot support a recommendation
        (:func:`label_problem`: one class — then κ is undefined, n/a, for every judge — or too
        few labels per class); the recommendation then says it, no judge is recommended and
        :meth:`card` refuses.
    notes : list of str. What else the calibration set aside: labels whose item is gone.
    criterion : the :class:`~maev_kit.criteria.Criterion` the items ask (None for retention);
        its labels are the leaderboard's, its κ weighted when it is ordinal.
    label_accounting : dict. Where every human-labeled item went (from :func:`calibrate`):
        ``labeled_items``, ``scored`` (used for κ) on ``scored_split``, ``other_splits``
        (split → items; they fit the learned judges ``fitted``), ``set_aside``. A judge that
        could not run (nothing to fit on) is a leaderboard row with status ``"not run: …"``.
    """

    leaderboard: pd.DataFrame
    ceiling: pd.Series | None
    confusions: dict[str, pd.DataFrame]
    disagreements: pd.DataFrame
    recommendation: str
    runs: dict[str, Any]
    recommended: str | None = None
    threshold: float = 0.6
    item_ids: tuple[str, ...] = ()
    annotators: tuple[str, ...] = ()
    meta: dict[str, JudgeMeta] = field(default_factory=dict, repr=False)
    labels_hash: str = ""
    labeled_set: dict[str, Any] = field(default_factory=dict)
    split: str | None = None
    confidence: float = 0.95
    human_ceiling: Any = field(default=None, repr=False)
    reference_labels: bool = False
    label_counts: dict[str, int] = field(default_factory=dict)
    label_problem: str | None = None
    notes: list[str] = field(default_factory=list)
    label_accounting: dict[str, Any] = field(default_factory=dict)
    criterion: Any = None  # the Criterion calibrated on (None: retention)
    #: key → :class:`~maev_kit.calibration.ProbeReport` (``calibrate(..., probes=True)``).
    probes: dict[str, Any] = field(default_factory=dict)

    @property
    def kappa_undefined(self) -> bool:
        """True when the human labels on the scored items hold one class (or none): κ is then
        undefined for every judge and no card can vouch for one."""
        return bool(self.label_counts) and sum(1 for v in self.label_counts.values() if v) < 2

    @property
    def failed(self) -> dict[str, str]:
        """Judges that failed (key → status), left out of the ranking."""
        board = self.leaderboard
        return {k: st for k, st in zip(board["key"], board["status"]) if st != "ok"}

    def __repr__(self) -> str:
        ok = self.leaderboard[self.leaderboard["status"] == "ok"]
        best = ok.iloc[0] if len(ok) else None
        kappa = ("n/a" if best is None or math.isnan(best["kappa"])
                 else f"{best['kappa']:.3f}")
        head = (f"best {best['key']} κ={kappa}" if best is not None
                else "every judge failed" if len(self.leaderboard) else "no judges")
        if self.label_problem is not None:
            head = self.label_problem.split(" — ")[0].split(" (")[0]
        return (f"CalibrationResult({len(self.leaderboard)} judges on {len(self.item_ids)} items, "
                f"{len(self.annotators)} annotators; {head})")

    def __str__(self) -> str:
        cols = ["rank", "judge", "prompt", "kappa", "kappa_low", "kappa_high", "delta_kappa",
                "p_value", "accuracy", "n_items", "parse_failure_rate", "status"]
        board = self.leaderboard.assign(rank=rank_labels(list(self.leaderboard["kappa"]),
                                                         list(self.leaderboard["status"])))
        flat = board["kappa_low"] == board["kappa_high"]  # a zero-width interval is none
        board.loc[flat, ["kappa_low", "kappa_high"]] = np.nan
        lines = [board[cols].to_string(index=False, na_rep="n/a",
                                       float_format=lambda x: f"{x:.3f}")]
        if self.label_accounting:
            lines.append(accounting_text(self.label_accounting))
        if self.label_counts:
            who = "reference" if self.reference_labels else "human"
            lines.append(f"{who} labels on the {len(self.item_ids)} items used for κ: "
                         + ", ".join(f"{k} {v}" for k, v in self.label_counts.items()))
        lines += [f"note: {n}" for n in self.notes]
        if self.ceiling is not None:
            c = self.ceiling
            who = "reference–reference" if self.reference_labels else "human–human"
            lines.append(f"{who} κ {c['kappa']:.3f} ({ci_label(self.confidence)} "
                         f"{c['kappa_low']:.3f} to {c['kappa_high']:.3f}), "
                         f"{int(c['n_annotators'])} annotators")
        if self.probes:
            from maev_kit.calibration._probes import probes_text

            lines.append(probes_text(self.probes))
        lines.append(self.recommendation)
        return "\n".join(lines)

    def card(self, key: str | None = None, *, min_kappa: float | None = None) -> JudgeCard:
        """A :class:`JudgeCard` for ``key`` (default: the recommended judge, else the best).

        ``min_kappa``: the floor the drift gate (``maev check``) holds κ's CI upper bound to,
        written into the card (``maev calibrate --min-kappa``, default 0.4).

        Raises :class:`~maev_kit.errors.JudgeErrorsExceeded` for a judge that failed (or when
        every judge did): a failed run vouches for nothing; :class:`DegenerateLabelsError`
        when the labels hold one class (κ undefined: :attr:`kappa_undefined`). A card from too
        few labels per class can be made (it records ``n_items``), but no judge is recommended.
        """
        if self.kappa_undefined:
            raise DegenerateLabelsError(f"no judge card: {self.label_problem}")
        ok = self.leaderboard[self.leaderboard["status"] == "ok"]
        key = key or self.recommended or (ok["key"].iloc[0] if len(ok) else None)
        if key is None:
            raise JudgeErrorsExceeded(f"no judge card: {self.recommendation}")
        if key not in self.runs:
            raise KeyError(f"no judge {key!r} in this result; keys: {list(self.runs)}")
        row = self.leaderboard.set_index("key").loc[key]
        if row["status"] != "ok":
            raise JudgeErrorsExceeded(f"no judge card for {key}: it {row['status']}")
        run, meta = self.runs[key], self.meta.get(key, JudgeMeta(key))
        flat = row["kappa_low"] == row["kappa_high"]  # a zero-width interval: no interval
        return JudgeCard(
            judge_name=run.judge_name, judge_version=str(run.judge_version), model=run.model,
            params=meta.params, prompt=meta.prompt, prompt_hash=meta.prompt_hash,
            labeled_set=self.labeled_set.get("name"),
            labeled_set_version=self.labeled_set.get("version"),
            labeled_set_hash=self.labeled_set.get("content_hash"), labels_hash=self.labels_hash,
            split=self.split, n_items=int(row["n_items"]), annotators=list(self.annotators),
            kappa=finite_float(row["kappa"]),
            kappa_low=None if flat else finite_float(row["kappa_low"]),
            kappa_high=None if flat else finite_float(row["kappa_high"]),
            confidence=self.confidence,
            human_kappa=None if self.ceiling is None else finite_float(self.ceiling["kappa"]),
            threshold=self.threshold, min_kappa=min_kappa, **meta.card_fields,
            probes=self.probes[key].card_fields() if key in self.probes else None,
            **self._criterion_fields(verdict_fields(run, finite_float(row["accuracy"]))))
        # (the drift gate pairs a later run with the verdicts)

    def _criterion_fields(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A criterion card keeps its criterion, and its verdicts as ``criterion_verdicts``."""
        if self.criterion is None:
            return fields
        return {**{k: v for k, v in fields.items() if k != "item_verdicts"},
                "criterion": criterion_fields(self.criterion),
                "criterion_verdicts": fields.get("item_verdicts")}

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (NaN → None)."""
        def recs(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: finite_float(v) for k, v in r.items()} for r in df.to_dict("records")]
        board = self.leaderboard.assign(
            kappa_text=[kappa_text(k, lo, hi, n=None if pd.isna(n) else int(n),
                                   confidence=self.confidence)
                        for k, lo, hi, n in zip(self.leaderboard["kappa"],
                                                self.leaderboard["kappa_low"],
                                                self.leaderboard["kappa_high"],
                                                self.leaderboard["n_items"])],
            rank=rank_labels(list(self.leaderboard["kappa"]), list(self.leaderboard["status"])))
        return {
            "leaderboard": recs(board),
            "ceiling": None if self.ceiling is None else {k: finite_float(v) for k, v in
                                                          self.ceiling.to_dict().items()},
            "confusions": {k: {"labels": list(df.index), "counts": df.astype(int).values.tolist()}
                           for k, df in self.confusions.items()},
            "disagreements": recs(self.disagreements.drop(columns=["human_labels"])),
            "recommendation": self.recommendation, "recommended": self.recommended,
            "threshold": self.threshold, "n_items": len(self.item_ids),
            "annotators": list(self.annotators), "labels_hash": self.labels_hash,
            "labeled_set": dict(self.labeled_set), "split": self.split,
            "confidence": self.confidence, "reference_labels": self.reference_labels,
            "label_counts": dict(self.label_counts), "label_problem": self.label_problem,
            "notes": list(self.notes), "label_accounting": dict(self.label_accounting),
            **({"probes": {k: r.to_dict() for k, r in self.probes.items()}}
               if self.probes else {}),
        }


def criterion_fields(criterion: Any) -> dict[str, Any]:
    """A criterion as the JSON fields a judge card keeps (labels as a list)."""
    import dataclasses

    return {k: list(v) if isinstance(v, tuple) else v
            for k, v in dataclasses.asdict(criterion).items()}


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def rank_labels(kappas: Sequence[Any], statuses: Sequence[str] | None = None) -> list[str]:
    """Each row's place by κ (best first), ties marked: ``"= 1st"`` for two judges whose κ is
    the same to 3 decimals; ``"—"`` for a row with no κ or whose judge did not run.

    >>> rank_labels([0.8, 0.8, 0.5, float("nan")])
    ['= 1st', '= 1st', '3rd', '—']
    """
    ks = [None if k is None or (isinstance(k, float) and math.isnan(k))
          or (statuses is not None and statuses[i] != "ok") else round(float(k), 3)
          for i, k in enumerate(kappas)]
    out = []
    for k in ks:
        if k is None:
            out.append("—")
            continue
        place = 1 + sum(1 for o in ks if o is not None and o > k)
        tied = sum(1 for o in ks if o == k) > 1
        out.append(("= " if tied else "") + _ordinal(place))
    return out


def account_labels(labeled_set: Any, human: Mapping[str, Any], scored: Iterable[str],
                   split: str | None, fitted: Sequence[str] = ()) -> dict[str, Any]:
    """Where every human-labeled item went: the ``scored`` ones (used for κ, on ``split``),
    the others by split (they fit the learned judges ``fitted``, or are unused), and those
    set aside (their item is gone; None: not known, there is no labeled set to check the items
    against). Across these, ``outside_sample`` counts the labeled items outside the set's random
    sample (None: no sample, and no label marked). Every view (calibrate, score, check, agree,
    the report) says these through :func:`accounting_text`."""
    scored = set(scored)
    conv = ({it.item_id: it.conversation_id for it in labeled_set.items}
            if labeled_set is not None else {})
    by_split: dict[str, int] = {}
    for iid in human:
        if iid in scored:
            continue
        where = (labeled_set.split_of(conv[iid]) if iid in conv else None) or "no split"
        by_split[where] = by_split.get(where, 0) + 1
    aside: int | None = None if labeled_set is None else 0
    if getattr(labeled_set, "set_aside_labels", None):  # those not re-attached since
        from maev_kit.labels import label_status

        st = label_status(labeled_set)
        aside = len({k[0] for k in st.set_aside if k not in st.reattached})
    n_scored = sum(1 for i in human if i in scored)
    return {"labeled_items": n_scored + sum(by_split.values()) + (aside or 0),
            "scored_split": split, "scored": n_scored, "other_splits": by_split,
            "fitted": list(fitted), "set_aside": aside,
            "outside_sample": outside_sample(labeled_set, human)}


def outside_sample(labeled_set: Any, item_ids: Iterable[str],
                   records: Iterable[Any] | None = None) -> int | None:
    """How many of ``item_ids`` (labeled items) are outside the random sample: the set's
    ``label_sample.json`` decides when there is one (corrected estimates use only its items);
    without it, the labels' own marks (``in_sample: false``, written by the labeling session
    when it followed a sample). None: no sample and no mark — the question does not arise.
    ``records`` default to the set's label lines."""
    from pathlib import Path

    from maev_kit.labels import SAMPLE_FILE, LabelSample

    ids = set(item_ids)
    folder = getattr(labeled_set, "path", None)
    if folder is not None and (Path(folder) / SAMPLE_FILE).is_file():
        sampled = set(LabelSample.load(Path(folder) / SAMPLE_FILE).item_ids)
        return len(ids - sampled)
    if records is None:
        records = getattr(labeled_set, "label_records", None) or ()
    marks: dict[str, bool] = {}
    for r in records:  # the latest mark per item wins, as the latest label does
        mark = r.get("in_sample") if isinstance(r, Mapping) else getattr(r, "in_sample", None)
        rid = r.get("item_id") if isinstance(r, Mapping) else getattr(r, "item_id", None)
        if mark is not None and rid in ids:
            marks[rid] = bool(mark)
    return sum(1 for m in marks.values() if not m) if marks else None


def accounting_text(acc: dict[str, Any]) -> str:
    """``40 labeled items: 23 on test (used for κ), 17 on dev (fit tfidf-logreg), 0 set
    aside``: where every label went, in one line (and, when there is a random sample, how
    many of those items are outside it).

    >>> print(accounting_text({"labeled_items": 30, "scored_split": None, "scored": 30,
    ...                        "set_aside": None, "outside_sample": 2}))
    30 labeled items: 30 scored (used for κ); 2 outside the random sample (kept; corrected estimates use only the sample's labels)
    """
    where = acc.get("scored_split")
    parts = [f"{acc['scored']} " + (f"on {where}" if where else "scored") + " (used for κ)"]
    fit = ", ".join(acc.get("fitted") or [])
    for split, n in acc.get("other_splits", {}).items():
        parts.append(f"{n} on {split} (" + (f"fit {fit}" if fit else "not used: no judge "
                                            "learns from labels") + ")")
    aside = acc.get("set_aside")
    if aside is not None:  # None: no labeled set to check the items against
        parts.append(f"{aside} set aside" + (" (their item is gone: `maev labels`)"
                                             if aside else ""))
    text = f"{acc['labeled_items']} labeled items: " + ", ".join(parts)
    out = acc.get("outside_sample")
    if out is not None:
        text += (f"; {out} outside the random sample (kept; corrected estimates use only the "
                 "sample's labels)")
    return text


def labels_are_reference(labels: Any) -> bool:
    """True when every label record has ``source == "reference"``.

    Such labels were written by a set's authors, not by independent human annotators: reports
    and dashboards call them "reference labels", never "human labels". ``labels`` is a loaded
    labeled set (its ``label_records``), a :class:`~maev_kit.labels.LabelStore`, a path to a
    ``labels.jsonl`` (or its folder), or a list of label records or dicts; anything else (a
    ``{item_id: {annotator: label}}`` mapping, which keeps no source) and an empty list are
    not reference labels.

    >>> labels_are_reference([{"item_id": "c1/h0/f1", "annotator": "set-authors",
    ...                        "label": "lost", "source": "reference"}])
    True
    >>> labels_are_reference([{"item_id": "c1/h0/f1", "annotator": "ana", "label": "lost"}])
    False
    """
    import os

    from maev_kit.labels import read_label_file

    records: Any = None
    if isinstance(labels, (str, os.PathLike)):
        from maev_kit.labels import LabelStore
        from maev_kit.labels.internal import is_sqlite_file, is_store_url

        path = os.path.join(labels, "labels.jsonl") if os.path.isdir(labels) else labels
        if is_store_url(path) or is_sqlite_file(path):  # a database label store
            with LabelStore(path) as store:
                records = store.records()
        else:
            records = read_label_file(path).records if os.path.isfile(path) else []
    elif hasattr(labels, "label_records"):
        records = labels.label_records
    elif hasattr(labels, "records") and callable(labels.records):
        records = labels.records()
    elif isinstance(labels, Sequence):
        records = labels
    sources = {r.get("source") if isinstance(r, Mapping) else getattr(r, "source", None)
               for r in records or ()}
    return sources == {"reference"}


def _after_text(item: Any) -> str:
    return "\n".join(f"{m.speaker}: {m.content}" for m in getattr(item, "after", ()))


def _stat(stats: Mapping[str, Any], key: str) -> Any:
    v = stats.get(key)
    return np.nan if v is None else v


#: The share of a judge's items that may go without a verdict before the judge counts as
#: failed (not ranked, not recommended, no card): ``--max-judge-errors``' default.
MAX_JUDGE_ERRORS = 0.05


def _status(got: Mapping[str, Any], item_ids: Sequence[str],
            max_judge_errors: float = MAX_JUDGE_ERRORS) -> str:
    """``"ok"``, or ``"failed: auth (382 of 382 items)"`` when more than ``max_judge_errors``
    of the items have no verdict (a failed call, an unreadable reply): a judge that lost items
    — its server died mid-run, say — is scored on a different set of items than the others
    and its κ is not a result."""
    causes: Counter[str] = Counter()
    for iid in item_ids:
        v = got.get(iid)
        if v is None or v.label is None:
            causes[(getattr(v, "cause", None) or "other") if v is not None else "other"] += 1
    n_failed = sum(causes.values())
    if not item_ids or n_failed <= max_judge_errors * len(item_ids):
        return "ok"
    order = [c for c in ERROR_CAUSES if causes[c]] + sorted(set(causes) - set(ERROR_CAUSES))
    what = order[0] if len(order) == 1 else ", ".join(f"{c} {causes[c]}" for c in order)
    return f"failed: {what} ({n_failed} of {len(item_ids)} items)"


#: What to do about a judge that failed mostly for one cause.
CAUSE_FIXES = {
    "auth": "check the API key (--api-key, or the provider's key variable)",
    "unreachable": "check --api-base and that the server is running",
    "rate_limit": "the provider kept answering 429: lower --max-concurrency or rerun later "
                  "(finished replies are cached)",
    "timeout": "the model did not answer in time: check the endpoint or allow a longer timeout",
    "server": "the endpoint kept failing (5xx): check the server and rerun (finished replies "
              "are cached)",
    "content_filter": "the provider refused the content: use another model or provider",
    "unparseable": "the model's replies are not the JSON the judge asks for: try prompt v2 or "
                   "a stronger model",
    "other": "see the judge's errors (disagreements.csv of --out; in Python "
             "result.runs[key].to_frame())",
}


def lost_items_note(stats: Mapping[str, Any]) -> str:
    """Where a judge's items were lost and how to resume: ``"at http://127.0.0.1:8080/v1;
    rerun the same command to resume: 125 answers are cached"`` ('' when nothing says)."""
    parts = []
    if stats.get("endpoint"):
        parts.append(f"at {stats['endpoint']}")
    n, errors = stats.get("items") or 0, stats.get("errors") or 0
    if stats.get("cache") and n and errors < n:
        k = n - errors
        parts.append(f"rerun the same command to resume: {k} answer{'s are' if k != 1 else ' is'}"
                     " cached")
    return "; ".join(parts)


def _failures(board: pd.DataFrame, runs: Mapping[str, Any]) -> str:
    """The failed judges with their causes and fixes, one clause per distinct failure."""
    groups: dict[str, list[str]] = {}
    for key, status in zip(board["key"], board["status"]):
        if status == "ok":
            continue
        if key not in runs:  # not run: its status says why and what to do
            groups.setdefault(str(status), []).append(str(key))
            continue
        stats = getattr(runs[key], "stats", None) or {}
        fix = stats.get("unavailable")
        if not fix:
            by_cause = Counter(stats.get("errors_by_cause") or {})
            top = by_cause.most_common(1)[0][0] if by_cause else "other"
            fix = "; ".join(x for x in (lost_items_note(stats),
                                        CAUSE_FIXES.get(top, CAUSE_FIXES["other"])) if x)
        groups.setdefault(f"{status} — {fix}", []).append(str(key))
    return "; ".join(f"{', '.join(keys)} {what}" for what, keys in groups.items())


def _kappa(jl: list[str | None], by_ann: Mapping[str, list[str | None]],
           annotators: Sequence[str], labels: tuple[str, ...], n_resamples: int,
           confidence: float, seed: int, weights: Any = None) -> tuple[float, tuple[float, float]]:
    """The judge's κ with its bootstrap CI: against the one annotator, else the mean κ against
    each (``weights="linear"``: the weighted κ, for ordered labels)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if len(annotators) == 1:
            rep = agreement_report(by_ann[annotators[0]], jl, labels=labels,
                                   n_resamples=n_resamples, confidence=confidence, seed=seed,
                                   weights=weights)
            k, ci = rep.kappa, rep.ci
        else:
            jv = judge_vs_humans(jl, by_ann, labels=labels, n_resamples=n_resamples,
                                 confidence=confidence, seed=seed, weights=weights)
            k, ci = jv.judge_kappa, jv.judge_ci
    return k, ci  # a zero-width interval is kept as data; kappa_text writes "no interval"


def _recommend(board: pd.DataFrame, ceiling: pd.Series | None, threshold: float,
               marginals: np.ndarray, n_items: int, prompts_tried: set[str],
               confidence: float) -> tuple[str, str | None]:
    ok = board[board["kappa_low"] >= threshold]
    if len(ok):
        row = ok.iloc[0]
        shown = kappa_text(row["kappa"], row["kappa_low"], row["kappa_high"],
                           confidence=confidence)
        text = (f"Use {row['key']}: κ = {shown}, whose lower bound clears the threshold "
                f"{threshold}.")
        if ceiling is not None:
            text += f" Humans agree with each other at κ = {ceiling['kappa']:.3f}."
        return text, str(row["key"])
    if not len(board) or board["kappa"].isna().all():
        return ("No judge is trustworthy yet: no judge's κ could be computed (too few labeled "
                "items, or a single class). Label more items, covering every label."), None
    best = board.iloc[0]
    k = float(best["kappa"])
    shown = kappa_text(k, best["kappa_low"], best["kappa_high"], n=int(best["n_items"]),
                       confidence=confidence)
    text = f"No judge is trustworthy yet: the best, {best['key']}, has κ = {shown}, " + (
        f"whose lower bound is below {threshold}." if "CI" in shown
        else "so nothing bounds it from below.")
    todo = []
    if k > threshold and marginals.sum() > 0 and (marginals > 0).sum() >= 2:
        need = labels_needed(target_halfwidth=k - threshold, kappa=min(k, 0.999),
                             marginals=marginals)
        more = max(need - n_items, 0)
        if more > 0:
            todo.append(f"label ~{more} more items (about {need} in all) to narrow the CI")
    if ceiling is not None and not math.isnan(ceiling["kappa"]) and ceiling["kappa"] < threshold:
        todo.append(f"note the annotators themselves agree only at κ = {ceiling['kappa']:.3f}: "
                    "sharpen the labeling guidelines before expecting a judge to do better")
    if "v2" not in prompts_tried:
        todo.append("try prompt v2 (label definitions and examples): prompts=['v1', 'v2']")
    if k <= threshold:
        todo.append("try a stronger judge model")
    if todo:
        text += " Next: " + "; ".join(todo) + "."
    return text, None


DISAGREEMENT_COLUMNS = ["judge", "item_id", "human_labels", "human_label_text", "human_majority",
                        "judge_label", "error", "rationale", "fact", "after_text"]


@dataclass(frozen=True)
class HumanTable:
    """The human labels on the scored items: one column of labels per annotator (None where
    the annotator did not label the item) and the majority label per item."""

    item_ids: list[str]
    annotators: list[str]
    by_ann: dict[str, list[str | None]]
    majority: list[str | None]

    @property
    def reference(self) -> Any:
        """What a judge is compared against: the one annotator's labels, else every
        annotator's."""
        return self.by_ann[self.annotators[0]] if len(self.annotators) == 1 else self.by_ann

    def label_counts(self, labels: Sequence[str]) -> dict[str, int]:
        """Label → number of labels (every annotator's), for every label in ``labels``."""
        pooled = Counter(lab for labs in self.by_ann.values() for lab in labs if lab is not None)
        return {lab: int(pooled.get(lab, 0)) for lab in labels}


def human_table(human: Mapping[str, Mapping[str, str]], item_ids: list[str],
                labels: tuple[str, ...], *, check: bool = False) -> HumanTable:
    """The :class:`HumanTable` of ``item_ids``; with ``check``, each annotator's labels must be
    in ``labels`` (an :class:`InputError` names the annotator)."""
    annotators = sorted({a for iid in item_ids for a in human[iid]})
    by_ann = {a: [human[iid].get(a) for iid in item_ids] for a in annotators}
    if check:
        for a, labs in by_ann.items():
            encode(labs, labels, name=f"human labels of {a!r}")
    return HumanTable(item_ids, annotators, by_ann, majority_labels(by_ann, labels=labels))


def items_of_runs(runs: Iterable[Any]) -> dict[str, Any]:
    """Item id → item, from the items the runs hold (the first run holding an id wins)."""
    by_id: dict[str, Any] = {}
    for run in runs:
        for it in getattr(run, "items", ()) or ():
            by_id.setdefault(it.item_id, it)
    return by_id


def _pair_counts(humans: Sequence[str | None], judged: Sequence[str | None],
                 labels: tuple[str, ...]) -> np.ndarray:
    """Counts of (human label, judge label) pairs, rows human, columns judge (float); a pair
    with a missing label on either side is left out."""
    idx = {lab: i for i, lab in enumerate(labels)}
    table = np.zeros((len(labels), len(labels)))
    for h, j in zip(humans, judged):
        if h is not None and j is not None:
            table[idx[h], idx[j]] += 1
    return table


def confusion_table(majority: Sequence[str | None], judged: Sequence[str | None],
                    labels: tuple[str, ...]) -> pd.DataFrame:
    """Item counts, rows the human majority label, columns the judge's label."""
    return pd.DataFrame(_pair_counts(majority, judged, labels).astype(int),
                        index=pd.Index(labels, name="human"),
                        columns=pd.Index(labels, name="judge"))


@dataclass(frozen=True)
class _Scoring:
    """What every judge's run is scored against: the scored items' human labels and texts, the
    label set and the bootstrap settings."""

    table: HumanTable
    human: Mapping[str, Mapping[str, str]]
    by_id: Mapping[str, Any]
    labels: tuple[str, ...]
    label_counts: dict[str, int]
    n_resamples: int
    confidence: float
    seed: int
    max_judge_errors: float = MAX_JUDGE_ERRORS
    weights: Any = None  # "linear" for an ordinal criterion's labels

    @property
    def one_class(self) -> bool:
        """True when the labels hold one class (or none): κ is undefined for every judge."""
        return sum(1 for v in self.label_counts.values() if v) < 2


@dataclass(frozen=True)
class _JudgeScore:
    """One judge's leaderboard row, confusion matrix, disagreements and label per item."""

    row: dict[str, Any]
    confusion: pd.DataFrame
    disagreements: list[dict[str, Any]]
    labels: list[str | None]


def _scored_items(runs: Mapping[str, Any], items: Sequence[Any] | None,
                  human: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(item id → item for the texts, the ids to score): the given ``items``, else the items
    the runs judged, kept when a human labeled them."""
    by_id = items_of_runs(runs.values())
    if items is not None:
        by_id = {it.item_id: it for it in items}
        candidates = list(by_id)
    else:
        candidates = list(dict.fromkeys(v.item_id for r in runs.values() for v in r.verdicts))
    item_ids = [iid for iid in candidates if human.get(iid)]
    if not item_ids:
        raise ValueError("no judged item has a human label: check that `human_labels` uses the "
                         "same item ids as the items (<conversation_id>/h<i>/<fact_id>)")
    return by_id, item_ids


def _ceiling(sc: _Scoring) -> tuple[Any, pd.Series | None]:
    """The human–human agreement (its object and its leaderboard-like row); (None, None) with
    a single annotator."""
    table = sc.table
    if len(table.annotators) == 1:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        obj = human_ceiling(table.by_ann, labels=sc.labels, n_resamples=sc.n_resamples,
                            confidence=sc.confidence, seed=sc.seed, weights=sc.weights)
    return obj, pd.Series({"judge": "human–human", "prompt": None, "kappa": obj.kappa,
                           "kappa_low": obj.ci[0], "kappa_high": obj.ci[1],
                           "fleiss_kappa": obj.fleiss_kappa,
                           "krippendorff_alpha": obj.krippendorff_alpha,
                           "n_annotators": len(table.annotators),
                           "n_items": len(table.item_ids)})


def _score_judge(key: str, run: Any, m: JudgeMeta, sc: _Scoring) -> _JudgeScore:
    """Score one judge's run: κ with its CI (n/a for a failed run or one-class labels), AC1,
    accuracy and the other leaderboard columns, its confusion matrix and disagreements."""
    table, labels = sc.table, sc.labels
    item_ids = table.item_ids
    got = {v.item_id: v for v in run.verdicts}
    jl = [got[i].label if i in got else None for i in item_ids]
    status = _status(got, item_ids, sc.max_judge_errors)
    if status != "ok" or sc.one_class:  # a failed run is not a result; one class: undefined
        kappa, ci = np.nan, (np.nan, np.nan)
    else:
        kappa, ci = _kappa(jl, table.by_ann, table.annotators, labels, sc.n_resamples,
                           sc.confidence, sc.seed, sc.weights)
    q = len(labels)
    pooled = np.zeros((q, q))
    ac1s = []
    for a in table.annotators:
        t = _pair_counts(table.by_ann[a], jl, labels)
        pooled += t
        if t.sum():
            ac1s.append(float(ac_from_table(t, np.eye(q))))
    c_at = {lab: i for i, lab in enumerate(labels)}.get("contradicted")
    c_row = pooled[c_at] if c_at is not None else None
    judged = [got[i] for i in item_ids if i in got]
    n_err = sum(1 for i in item_ids if i not in got or got[i].label is None)
    stats = dict(getattr(run, "stats", {}) or {})
    row = {
        "judge": m.judge, "prompt": m.prompt, "kappa": kappa, "kappa_low": ci[0],
        "kappa_high": ci[1], "delta_kappa": np.nan, "p_value": np.nan,
        "status": status,
        "ac1": float(np.mean(ac1s)) if ac1s and status == "ok" else np.nan,
        "accuracy": (np.trace(pooled) / pooled.sum() if pooled.sum() and status == "ok"
                     else np.nan),
        "parse_failure_rate": n_err / len(item_ids),
        "recall_contradicted": (c_row[c_at] / c_row.sum()
                                if c_row is not None and c_row.sum() and status == "ok"
                                else np.nan),
        "n_items": len(judged) - sum(1 for v in judged if v.label is None),
        "cost": _stat(stats, "cost"), "tokens": _stat(stats, "tokens"),
        "latency_p50": _stat(stats, "latency_p50"), "latency_p95": _stat(stats, "latency_p95"),
        "requests": _stat(stats, "requests"), "cache_hits": _stat(stats, "cache_hits"),
        "judge_version": str(run.judge_version), "prompt_sha256": m.prompt_hash,
        "key": key}
    return _JudgeScore(row, confusion_table(table.majority, jl, labels),
                       _disagreement_rows(key, status, got, jl, sc), jl)


def _disagreement_rows(key: str, status: str, got: Mapping[str, Any], jl: list[str | None],
                       sc: _Scoring) -> list[dict[str, Any]]:
    """The items where the judge's label differs from the human majority (none for a failed
    judge: its errors are not disagreements)."""
    rows = []
    for iid, h_major, j in zip(sc.table.item_ids, sc.table.majority, jl):
        if j == h_major or status != "ok":
            continue
        v = got.get(iid)
        it = sc.by_id.get(iid)
        votes = sc.human[iid]
        rows.append({
            "judge": key, "item_id": iid, "human_labels": dict(votes),
            "human_label_text": ", ".join(f"{a}={lab}" for a, lab in sorted(votes.items())),
            "human_majority": h_major, "judge_label": j,
            "error": None if v is None else v.error,
            "rationale": "" if v is None else v.rationale,
            "fact": getattr(it, "fact", None), "after_text": _after_text(it) if it else None})
    return rows


def _not_run_rows(not_run: Mapping[str, str] | None, meta: dict[str, JudgeMeta]
                  ) -> list[dict[str, Any]]:
    """The leaderboard rows of the judges that could not run (e.g. nothing to fit on), after
    the others: the status says why; ``meta`` names each."""
    rows = []
    for key, why in (not_run or {}).items():
        m = meta.setdefault(key, JudgeMeta(judge=key))
        row: dict[str, Any] = {c: np.nan for c in LEADERBOARD_COLUMNS}
        row.update(judge=m.judge, prompt=m.prompt, status=f"not run: {why}", n_items=0,
                   judge_version=None, prompt_sha256=m.prompt_hash, key=key)
        rows.append(row)
    return rows


def _ranked_board(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The leaderboard: judges that ran by κ (best first, n/a last), then the failed ones."""
    board = pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)
    board["_failed"] = board["status"] != "ok"
    board = board.sort_values(["_failed", "kappa"], ascending=[True, False], na_position="last",
                              kind="stable")
    return board.drop(columns="_failed").reset_index(drop=True)


def _add_deltas(board: pd.DataFrame, judge_labels: Mapping[str, list[str | None]],
                sc: _Scoring) -> None:
    """Fill ``delta_kappa`` and ``p_value`` (Holm-adjusted) of each ranked judge against the
    best one, in place; left NaN unless two judges ran and the best has a κ."""
    ranked = board[board["status"] == "ok"]
    if not (len(ranked) > 1 and not math.isnan(board.loc[0, "kappa"])):
        return
    best = board.loc[0, "key"]
    raw_p, deltas = [], []
    for key in ranked["key"].iloc[1:]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cmp = compare_judges(sc.table.reference, judge_labels[key], judge_labels[best],
                                 names=["this", "best"], labels=sc.labels,
                                 n_resamples=sc.n_resamples, confidence=sc.confidence,
                                 seed=sc.seed)
        deltas.append(cmp.delta)
        raw_p.append(float(cmp.pairs.iloc[0]["p_value"]))
    others = ranked.index[1:]
    board.loc[0, "delta_kappa"] = 0.0
    board.loc[others, "delta_kappa"] = deltas
    p_ok = [1.0 if math.isnan(p) else p for p in raw_p]
    board.loc[others, "p_value"] = [np.nan if math.isnan(r) else a
                                    for r, a in zip(raw_p, holm(p_ok))]


def _recommendation(board: pd.DataFrame, runs: Mapping[str, Any], problem: str | None,
                    ceiling: pd.Series | None, threshold: float, sc: _Scoring,
                    meta: Mapping[str, JudgeMeta]) -> tuple[str, str | None]:
    """(recommendation text, recommended key or None): none when the labels cannot support
    one; the failed judges are listed with their fixes."""
    ranked = board[board["status"] == "ok"]
    if not len(ranked):
        return ("No judge could be calibrated: every judge failed. "
                + _failures(board, runs) + "."), None
    if problem is not None:
        text, recommended = f"No judge is recommended: {problem}.", None
    else:
        marg = np.array([sum(1 for x in sc.table.majority if x == lab) for lab in sc.labels],
                        dtype=float)
        tried = {m.prompt for m in meta.values() if m.prompt}
        # the retention prompts' advice (try v2) only where they apply
        has_llm = any(m.prompt for m in meta.values()) and sc.labels == tuple(LABELS)
        text, recommended = _recommend(ranked, ceiling, threshold, marg, len(sc.table.item_ids),
                                       tried if has_llm else {"v2"}, sc.confidence)
    if len(ranked) < len(board):
        text += " Not ranked: " + _failures(board, runs) + "."
    return text, recommended


def _share(max_judge_errors: Any) -> float:
    if not (isinstance(max_judge_errors, (int, float)) and 0 <= max_judge_errors <= 1):
        raise ValueError(f"`max_judge_errors` must be a share in [0, 1], got "
                         f"{max_judge_errors!r}")
    return float(max_judge_errors)


def calibration_from_runs(
    runs: Mapping[str, Any],
    human_labels: Any,
    *,
    items: Sequence[Any] | None = None, meta: Mapping[str, JudgeMeta] | None = None,
    labels: Sequence[str] = LABELS, threshold: float = 0.6, n_resamples: int = 10_000,
    confidence: float = 0.95, seed: int = 0, labeled_set: Mapping[str, Any] | None = None,
    split: str | None = None, reference_labels: bool | None = None, notes: Sequence[str] = (),
    max_judge_errors: float = MAX_JUDGE_ERRORS, not_run: Mapping[str, str] | None = None,
    weights: Any = None,
) -> CalibrationResult:
    """Build a :class:`CalibrationResult` from judge runs already made.

    :func:`calibrate` runs the judges and calls this; call it directly with runs you already
    have (anything with ``verdicts``, ``judge_name``, ``judge_version``, ``model``, ``stats``).

    Parameters
    ----------
    runs : mapping key → JudgeRun (the key names the leaderboard row).
    human_labels : see :func:`~maev_kit.calibration.load_human_labels`.
    items : the retention items (for texts in ``disagreements`` and to restrict the items
        scored); by default, the items the runs hold, else every human-labeled item.
    meta : mapping key → :class:`JudgeMeta` (display name, prompt, params, prompt hash).
    reference_labels : whether every label is a reference label (the result's
        ``reference_labels``); by default decided from ``human_labels`` by
        :func:`labels_are_reference` (a ``{item_id: {annotator: label}}`` mapping keeps no
        source, so pass it with such a mapping).
    notes : what the caller set aside (shown with the result).
    max_judge_errors : the largest share of a judge's items that may lack a verdict; a judge
        that lost more is failed: κ n/a, not ranked, never recommended, no card.
    not_run : judge key → why it could not run: a row with status ``"not run: <why>"``.
    labels, weights : the label set, in order, and ``None`` or ``"linear"`` (the κ of ordered
        labels, such as an ordinal criterion's, weighted; the ceiling too).

    Labels of one class leave κ undefined (n/a); they, or fewer than :data:`MIN_PER_CLASS`
    in each of two classes, leave no judge recommended (:func:`label_problem`).

    Examples
    --------
    >>> from maev_kit.judges import Verdict
    >>> from maev_kit.runner import JudgeRun
    >>> truth = ["retained", "lost", "contradicted", "retained"] * 5
    >>> said = truth[:-2] + ["lost", "lost"]
    >>> run = JudgeRun([Verdict(f"c{i}/h0/f1", lab) for i, lab in enumerate(said)],
    ...                "my-judge", "1", None, {"requests": 0})
    >>> humans = [{"item_id": f"c{i}/h0/f1", "annotator": "ana", "label": lab}
    ...           for i, lab in enumerate(truth)]
    >>> res = calibration_from_runs({"my-judge": run}, humans, n_resamples=500)
    >>> round(float(res.leaderboard.loc[0, "kappa"]), 3), res.ceiling is None
    (0.843, True)
    """
    if not runs:
        raise ValueError("`runs` is empty: pass at least one judge run")
    labels = tuple(labels)
    human = load_human_labels(human_labels)
    by_id, item_ids = _scored_items(runs, items, human)
    table = human_table(human, item_ids, labels, check=True)
    sc = _Scoring(table, human, by_id, labels, table.label_counts(labels), n_resamples,
                  confidence, seed, _share(max_judge_errors), weights)
    problem, meta = label_problem(sc.label_counts, n_items=len(item_ids)), dict(meta or {})
    ceiling_obj, ceiling = _ceiling(sc)
    scores = {key: _score_judge(key, run, meta.setdefault(key, JudgeMeta(judge=key)), sc)
              for key, run in runs.items()}
    board = _ranked_board([s.row for s in scores.values()] + _not_run_rows(not_run, meta))
    _add_deltas(board, {key: s.labels for key, s in scores.items()}, sc)
    text, recommended = _recommendation(board, runs, problem, ceiling, threshold, sc, meta)
    disagreements = [d for s in scores.values() for d in s.disagreements]
    return CalibrationResult(
        leaderboard=board, ceiling=ceiling,
        confusions={key: s.confusion for key, s in scores.items()},
        disagreements=pd.DataFrame(disagreements, columns=DISAGREEMENT_COLUMNS),
        recommendation=text, runs=dict(runs), recommended=recommended, threshold=threshold,
        item_ids=tuple(item_ids), annotators=tuple(table.annotators), meta=meta,
        labels_hash=labels_hash(human, item_ids), labeled_set=dict(labeled_set or {}),
        split=split, confidence=confidence, human_ceiling=ceiling_obj,
        reference_labels=(labels_are_reference(human_labels) if reference_labels is None
                          else reference_labels), label_counts=sc.label_counts,
        label_problem=problem, notes=list(notes))
