"""``compare_prompts``: why one judge prompt beats another, item by item.

Two judges scored on the same labeled items: both prompt texts (for a side-by-side diff), κ
with CIs, the paired Δκ (bootstrap CI, McNemar p — from :func:`maev_kit.agreement.compare_judges`),
both confusion matrices and their difference, and every item whose verdict changed, with the
human label. The notebook dashboard and the HTML report both show it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from maev_kit.agreement import LABELS, compare_judges
from maev_kit.agreement.internal import finite_float
from maev_kit.errors import InputError
from maev_kit.calibration._result import (
    HumanTable,
    confusion_table,
    human_table,
    items_of_runs,
    labels_are_reference,
)

__all__ = ["PromptComparison", "compare_prompts"]

CHANGED_COLUMNS = ["item_id", "conversation_id", "handoff_index", "human", "human_label_text",
                   "label_a", "label_b", "change", "rationale_a", "rationale_b", "fact",
                   "after_text"]


@dataclass(frozen=True)
class PromptComparison:
    """Judge ``b`` against judge ``a`` on the same items (Δ = b − a).

    Attributes
    ----------
    a, b : the two judges' keys (``b`` is the new prompt, e.g. the alignment's winner).
    text_a, text_b : the prompt templates' text ("" for a judge without one).
    kappas : DataFrame indexed by ``a`` and ``b``: ``kappa``, ``kappa_low``, ``kappa_high``,
        ``n_items``.
    delta, delta_low, delta_high : paired Δκ (b − a) with its paired percentile bootstrap CI.
    p_value : the paired bootstrap p-value of Δκ; ``mcnemar_p``: exact McNemar on per-item
        correctness.
    confusion_a, confusion_b : item counts, rows the human majority label, columns the judge's.
    changed : the items whose verdict changed, with the human majority (``human``), both labels
        and ``change``: ``"fixed"`` (b right, a wrong), ``"broke"`` (a right, b wrong) or
        ``"changed"`` (both wrong, or a failed call on one side).
    items : item id → RetentionItem, to open a changed item in its conversation.
    labels_kind : ``"human"``, or ``"reference"`` when every label is a reference label written
        by the set's authors (the views then never call them human labels).
    """

    a: str
    b: str
    text_a: str
    text_b: str
    kappas: pd.DataFrame
    delta: float
    delta_low: float
    delta_high: float
    p_value: float
    mcnemar_p: float
    confusion_a: pd.DataFrame
    confusion_b: pd.DataFrame
    changed: pd.DataFrame
    n_items: int
    split: str | None = None
    confidence: float = 0.95
    items: dict[str, Any] = field(default_factory=dict, repr=False)
    labels_kind: str = "human"

    @property
    def confusion_delta(self) -> pd.DataFrame:
        """``confusion_b − confusion_a``: where b moved items (diagonal up is better)."""
        return self.confusion_b - self.confusion_a

    @property
    def n_fixed(self) -> int:
        return int((self.changed["change"] == "fixed").sum())

    @property
    def n_broke(self) -> int:
        return int((self.changed["change"] == "broke").sum())

    def __str__(self) -> str:
        ka, kb = self.kappas.loc[self.a], self.kappas.loc[self.b]
        ci = f"{_pct(self.confidence)} CI"
        return (f"{self.b} vs {self.a} on {self.n_items} items"
                f"{f' ({self.split} split)' if self.split else ''}: κ {_n(kb['kappa'])} vs "
                f"{_n(ka['kappa'])}, Δκ {_n(self.delta, signed=True)} ({ci} "
                f"{_n(self.delta_low, signed=True)} to {_n(self.delta_high, signed=True)}), "
                f"McNemar p {_n(self.mcnemar_p)}; {len(self.changed)} verdicts changed "
                f"({self.n_fixed} fixed, {self.n_broke} broke)")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly (NaN → None); the items themselves are left out."""
        def conf(df: pd.DataFrame) -> dict[str, Any]:
            return {"labels": list(df.index), "counts": df.astype(int).values.tolist()}
        return {"a": self.a, "b": self.b, "text_a": self.text_a, "text_b": self.text_b,
                "kappas": {k: {c: finite_float(v) for c, v in row.items()}
                           for k, row in self.kappas.to_dict("index").items()},
                "delta": finite_float(self.delta), "delta_low": finite_float(self.delta_low),
                "delta_high": finite_float(self.delta_high), "p_value": finite_float(self.p_value),
                "mcnemar_p": finite_float(self.mcnemar_p), "confusion_a": conf(self.confusion_a),
                "confusion_b": conf(self.confusion_b), "n_items": self.n_items,
                "changed": [{k: finite_float(v) for k, v in r.items()}
                            for r in self.changed.to_dict("records")],
                "split": self.split, "confidence": self.confidence}


def _pct(confidence: float) -> str:
    return f"{confidence * 100:g}%"


def _n(x: Any, signed: bool = False) -> str:
    v = finite_float(x)
    if v is None:
        return "n/a"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _template_text(prompt: Any) -> str:
    """The template text of a PromptTemplate, a builtin id or a text ("" when unknown)."""
    if prompt is None:
        return ""
    text = getattr(prompt, "text", None)
    if isinstance(text, str):
        return text
    template = getattr(prompt, "_template", None) or getattr(prompt, "template", None)
    if template is not None and template is not prompt:
        return _template_text(template)
    if isinstance(prompt, str):
        from maev_kit.judges import PROMPT_IDS

        if prompt.strip().lower() in PROMPT_IDS:
            from maev_kit.judges.internal import load_prompt

            t = load_prompt(prompt.strip().lower())
            return getattr(t, "text", None) or f"=== system ===\n{t.system}\n=== user ===\n{t.user}"
        return prompt
    return ""


def _human(result: Any, human_labels: Any) -> dict[str, dict[str, str]]:
    if human_labels is not None:
        from maev_kit.calibration._human import load_human_labels

        return {k: dict(v) for k, v in load_human_labels(human_labels).items()}
    got = getattr(result, "human_labels", None)
    if got:
        return {k: dict(v) for k, v in got.items()}
    raise InputError("this calibration result keeps no per-item human labels: pass "
                     "human_labels= (the labeled set, a labels.jsonl path or label dicts)")


def _after_text(item: Any) -> str | None:
    if item is None:
        return None
    return "\n".join(f"{m.speaker}: {m.content}" for m in getattr(item, "after", ()))


def compare_prompts(
    result: Any,
    a: str | None = None,
    b: str | None = None,
    *,
    prompts: Mapping[str, Any] | None = None,
    human_labels: Any = None,
    labels: Sequence[str] = LABELS,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> PromptComparison:
    """Compare two judges of a :class:`~maev_kit.calibration.CalibrationResult`, item by item.

    Parameters
    ----------
    result : CalibrationResult holding both judges' runs (same items, same human labels).
    a, b : leaderboard keys. Default: ``b`` the best ranked judge, ``a`` the next one.
    prompts : key → prompt (a PromptTemplate, a builtin id such as ``"v2"`` or the template
        text), for the text diff. Default: the leaderboard's prompt column (builtin ids only).
    human_labels : the human labels, when ``result`` does not keep them per item.

    Δκ, its CI, the paired bootstrap p and McNemar's p come from
    :func:`maev_kit.agreement.compare_judges`, on the items both judges labeled.

    Examples
    --------
    >>> from maev_kit.calibration import calibration_from_runs
    >>> from maev_kit.judges import Verdict
    >>> from maev_kit.runner import JudgeRun
    >>> truth = ["retained", "lost", "contradicted", "retained"] * 5
    >>> def run(said, name):
    ...     return JudgeRun([Verdict(f"c{i}/h0/f1", lab) for i, lab in enumerate(said)],
    ...                     name, "1", None, {"requests": 0})
    >>> humans = [{"item_id": f"c{i}/h0/f1", "annotator": "ana", "label": lab}
    ...           for i, lab in enumerate(truth)]
    >>> res = calibration_from_runs({"old": run(["lost"] * 4 + truth[4:], "old"),
    ...                              "new": run(truth, "new")}, humans, n_resamples=200)
    >>> cmp = compare_prompts(res, "old", "new", human_labels=humans, n_resamples=200)
    >>> len(cmp.changed), cmp.n_fixed, cmp.delta > 0
    (3, 3, True)
    """
    a, b = _pick_pair(result, a, b)
    labels = tuple(labels)
    human = _human(result, human_labels)
    item_ids = [i for i in (getattr(result, "item_ids", None) or human) if human.get(i)]
    table = human_table(human, item_ids, labels)
    side_a, side_b = _side(result, a, item_ids), _side(result, b, item_ids)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_judges(table.reference, side_b.labels, side_a.labels, names=[b, a],
                             labels=labels, n_resamples=n_resamples,
                             confidence=result.confidence, seed=seed)
    pair = cmp.pairs.iloc[0]
    kappas = _kappas(result.leaderboard, a, b)
    items = items_of_runs(result.runs[k] for k in (a, b))
    changed = _changed(table, human, items, side_a, side_b)
    return PromptComparison(
        a=a, b=b, text_a=_prompt_text(result, prompts, a),
        text_b=_prompt_text(result, prompts, b), kappas=kappas,
        delta=float(pair["delta"]), delta_low=float(pair["delta_low"]),
        delta_high=float(pair["delta_high"]), p_value=float(pair["p_value"]),
        mcnemar_p=float(pair["mcnemar_p"]),
        confusion_a=confusion_table(table.majority, side_a.labels, labels),
        confusion_b=confusion_table(table.majority, side_b.labels, labels),
        changed=pd.DataFrame(changed, columns=CHANGED_COLUMNS),
        n_items=int(cmp.n_used), split=getattr(result, "split", None),
        confidence=float(result.confidence), items=items,
        labels_kind=_labels_kind(result, human_labels))


def _pick_pair(result: Any, a: str | None, b: str | None) -> tuple[str, str]:
    """The two judges to compare: ``b`` defaults to the best ranked judge, ``a`` to the next
    one; both must be in the result and differ."""
    board = result.leaderboard
    ok = [k for k, st in zip(board["key"], board["status"]) if st == "ok"]
    if b is None:
        if not ok:
            raise InputError("no judge to compare: every judge failed")
        b = ok[0]
    if a is None:
        rest = [k for k in ok if k != b]
        if not rest:
            raise InputError("compare_prompts needs two judges that ran; this result has "
                             f"{len(ok)}")
        a = rest[0]
    for key in (a, b):
        if key not in result.runs:
            raise InputError(f"no judge {key!r} in this result; keys: {list(result.runs)}")
    if a == b:
        raise InputError(f"compare two different judges, not {a!r} with itself")
    return a, b


@dataclass(frozen=True)
class _Side:
    """One judge of the pair: its verdicts by item id and its label per scored item."""

    verdicts: dict[str, Any]
    labels: list[str | None]


def _side(result: Any, key: str, item_ids: Sequence[str]) -> _Side:
    """Judge ``key``'s verdicts in ``result`` and its label (None when missing) per item."""
    got = {v.item_id: v for v in result.runs[key].verdicts}
    return _Side(got, [got[i].label if i in got else None for i in item_ids])


def _kappas(board: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """κ with its CI and n_items of ``a`` and ``b``, from the leaderboard."""
    rows = board.set_index("key")
    return pd.DataFrame(
        {c: [rows.loc[k, c] for k in (a, b)] for c in ("kappa", "kappa_low", "kappa_high",
                                                       "n_items")},
        index=pd.Index([a, b], name="judge"))


def _changed(table: HumanTable, human: Mapping[str, Mapping[str, str]], items: Mapping[str, Any],
             a: _Side, b: _Side) -> list[dict[str, Any]]:
    """The items whose verdict changed from ``a`` to ``b``: fixed, broke or changed."""
    changed = []
    for n, iid in enumerate(table.item_ids):
        la, lb, h = a.labels[n], b.labels[n], table.majority[n]
        if la == lb:
            continue
        change = ("fixed" if lb == h and la is not None else
                  "broke" if la == h and lb is not None else "changed")
        it = items.get(iid)
        va, vb = a.verdicts.get(iid), b.verdicts.get(iid)
        changed.append({
            "item_id": iid,
            "conversation_id": getattr(it, "conversation_id", None) or iid.split("/h")[0],
            "handoff_index": getattr(it, "handoff_index", None), "human": h,
            "human_label_text": ", ".join(f"{x}={lab}" for x, lab in sorted(human[iid].items())),
            "label_a": la, "label_b": lb, "change": change,
            "rationale_a": _why(va), "rationale_b": _why(vb),
            "fact": getattr(it, "fact", None), "after_text": _after_text(it)})
    return changed


def _prompt_text(result: Any, prompts: Mapping[str, Any] | None, key: str) -> str:
    """Judge ``key``'s prompt text: from ``prompts``, else the result's metadata ("" when
    unknown)."""
    texts = dict(prompts or {})
    if key in texts:
        return _template_text(texts[key])
    m = (getattr(result, "meta", {}) or {}).get(key)
    return _template_text(getattr(m, "prompt", None)) if m is not None else ""


def _labels_kind(result: Any, human_labels: Any) -> str:
    """``"reference"`` when every label compared against is a reference label, else
    ``"human"``."""
    reference = (labels_are_reference(human_labels) if human_labels is not None
                 else getattr(result, "reference_labels", False))
    return "reference" if reference else "human"

def _why(v: Any) -> str:
    if v is None:
        return "no verdict"
    if v.label is None:
        return f"error: {v.error}"
    text = v.rationale or ""
    return "" if isinstance(text, float) and math.isnan(text) else str(text)
