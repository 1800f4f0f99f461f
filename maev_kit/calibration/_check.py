"""``check_card``: the drift gate. Re-run a judge card's judge (or a changed one) on the card's
labeled items and say whether its agreement with the human labels fell since calibration."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError

__all__ = ["DEFAULT_TOLERANCE", "DriftReport", "JudgeIdentity", "check_card"]

#: The κ fall the gate allows when neither the card (``tolerance``) nor the caller says.
DEFAULT_TOLERANCE = 0.05

#: Backend parameters that name an endpoint: a card's apply to its own model only.
_ENDPOINT_PARAMS = ("api_base", "base_url", "api_version")


@dataclass(frozen=True)
class JudgeIdentity:
    """What identifies a judge for the gate: its name and version, the model (None offline),
    the prompt's name and the sha256 of its template."""

    name: str
    version: str
    model: str | None = None
    prompt: str | None = None
    prompt_hash: str | None = None

    def __str__(self) -> str:
        if self.model is None:
            return f"{self.name} ({self.version}), offline"
        sha = f", sha256 {self.prompt_hash[:12]}…" if self.prompt_hash else ""
        return f"{self.model}, prompt {self.prompt}{sha} ({self.name} {self.version})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "model": self.model,
                "prompt": self.prompt, "prompt_hash": self.prompt_hash}


@dataclass(frozen=True)
class DriftReport:
    """The drift gate's answer: the card's numbers then, the judge's now, the test, the verdict.

    ``status`` is ``"PASS"``, ``"FAIL"`` (κ fell by more than ``tolerance`` and the fall is
    significant, or the judge changed and κ fell by more than ``tolerance``) or ``"ERROR"``
    (judge calls failed, so the numbers cannot be trusted: never a verdict); ``exit_code`` is
    0 for PASS, 1 otherwise. ``reasons`` says why in words.

    ``paired`` is True when the card records each item's verdict (``item_verdicts``): then
    ``test`` is ``"mcnemar-exact"``, McNemar's exact test on per-item correctness against the
    human labels (the majority with several annotators) over the ``n_paired`` items both runs
    judged: ``then_only_correct`` / ``now_only_correct`` are the discordant counts,
    ``p_value`` its two-sided p-value, and ``paired_delta`` (κ now − κ then on those items)
    has a paired percentile bootstrap CI (``paired_delta_low``, ``paired_delta_high``) and
    p-value (``paired_delta_p``). Without recorded verdicts (an older card) ``test`` is
    ``"unpaired-ci"``: the new κ's CI is compared with the recorded κ, and ``p_value`` is None.
    """

    status: str
    reasons: tuple[str, ...]
    card: str
    labeled_set: str | None
    split: str | None
    judge_then: JudgeIdentity
    judge_now: JudgeIdentity
    changes: tuple[str, ...]
    kappa_then: float
    kappa_then_low: float | None
    kappa_then_high: float | None
    kappa_now: float
    kappa_now_low: float
    kappa_now_high: float
    confidence: float
    accuracy_then: float | None
    accuracy_now: float
    n_items_then: int
    n_items_now: int
    tolerance: float
    tolerance_source: str  # "card", "argument" or "default"
    paired: bool
    test: str
    p_value: float | None = None
    min_kappa: float = 0.4  # the floor of κ's CI upper bound
    min_kappa_source: str = "default"  # "card", "argument" or "default"
    n_paired: int = 0
    then_only_correct: int | None = None
    now_only_correct: int | None = None
    both_correct: int | None = None
    both_wrong: int | None = None
    paired_delta: float | None = None
    paired_delta_low: float | None = None
    paired_delta_high: float | None = None
    paired_delta_p: float | None = None
    judge_errors: int = 0
    errors_by_cause: dict[str, int] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict, repr=False)
    notes: tuple[str, ...] = ()
    #: Where every labeled item of the set went (as calibrate says it).
    label_accounting: dict[str, Any] = field(default_factory=dict)
    #: The robustness probes the card records, re-run (``ProbeDrift``: rate then and now).
    probes: tuple[Any, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    @property
    def exit_code(self) -> int:
        """0 for PASS; 1 for FAIL, and for ERROR (a run that cannot be trusted)."""
        return 0 if self.passed else 1

    @property
    def delta_kappa(self) -> float:
        """κ now − κ as the card recorded it (negative: agreement fell)."""
        return self.kappa_now - self.kappa_then

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: every field (NaN → None), ``delta_kappa`` and ``exit_code``."""
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if isinstance(value, JudgeIdentity):
                value = value.to_dict()
            elif name == "probes":
                value = [p.to_dict() for p in value]
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, float) and math.isnan(value):
                value = None
            out[name] = value
        out["delta_kappa"] = _num(self.delta_kappa)
        out["exit_code"] = self.exit_code
        return out

    def __str__(self) -> str:
        pct = f"{self.confidence:.0%}"
        lines = [f"drift check of judge card {self.card}: labeled set {self.labeled_set}, "
                 f"split {self.split or '(all)'}, {self.n_items_now} items "
                 f"(card: {self.n_items_then})",
                 *([accounting_text(self.label_accounting)] if self.label_accounting else []),
                 f"judge then: {self.judge_then}",
                 f"judge now:  {self.judge_now}"
                 + (f" — changed: {'; '.join(self.changes)}" if self.changes else
                    " — the card's judge")]
        then_k = _ci(self.kappa_then, self.kappa_then_low, self.kappa_then_high,
                     self.n_items_then, self.confidence)
        if self.status == "ERROR":  # a failed run is not a result: no number of it is shown
            lines.append(f"κ then → now: {then_k} → not measured (see below)")
        else:
            now_k = _ci(self.kappa_now, self.kappa_now_low, self.kappa_now_high,
                        self.n_items_now, self.confidence)
            lines.append(f"κ then → now: {then_k} → {now_k} "
                         f"(Δκ {_signed(self.delta_kappa)}; floor of κ's upper bound "
                         f"{self.min_kappa:g}, {self.min_kappa_source})")
            lines.append(f"accuracy then → now: {_fmt(self.accuracy_then, 'not recorded')} → "
                         f"{_fmt(self.accuracy_now)}")
        if self.status == "ERROR":
            pass
        elif self.paired:
            lines.append(
                f"test: paired on {self.n_paired} items — McNemar exact on per-item correctness: "
                f"card's judge alone right on {self.then_only_correct}, this run alone on "
                f"{self.now_only_correct}, p = {_p(self.p_value)}; paired Δκ "
                f"{_signed(self.paired_delta)} "
                + (f"(no interval: the two runs gave the same verdict on every item)"
                   if self.paired_delta_low == self.paired_delta_high else
                   f"({pct} CI {_signed(self.paired_delta_low)} to "
                   f"{_signed(self.paired_delta_high)}, bootstrap p = "
                   f"{_p(self.paired_delta_p)})"))
        else:
            top = upper_bound(self.kappa_now, self.kappa_now_low, self.kappa_now_high,
                              self.n_items_now, self.confidence)[1]
            lines.append("test: unpaired — the card records no per-item verdicts "
                         f"(item_verdicts): the new {top} against the recorded κ − tolerance "
                         f"{_fmt(self.kappa_then - self.tolerance)}")
        if self.judge_errors:
            by = ", ".join(f"{k} {v}" for k, v in sorted(self.errors_by_cause.items()))
            lines.append(f"judge errors: {self.judge_errors} of {self.n_items_now} items ({by})")
        for p in self.probes:
            lines.append(("PROBE FAIL — " if p.failed else "") + p.reason)
        lines += [f"note: {n}" for n in self.notes]
        lines.append(f"{self.status}: " + "; ".join(self.reasons))
        return "\n".join(lines)


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _fmt(x: float | None, missing: str = "n/a") -> str:
    return missing if _num(x) is None else f"{x:.3f}"


def _signed(x: float | None) -> str:
    return "n/a" if _num(x) is None else f"{x:+.3f}"


def _p(p: float | None) -> str:
    if _num(p) is None:
        return "n/a"
    assert p is not None
    return f"{p:.3g}" if p >= 0.001 else f"{p:.1e}"


def accounting_text(acc: dict[str, Any]) -> str:
    """:func:`~maev_kit.calibration._result.accounting_text` (imported when used)."""
    from maev_kit.calibration._result import accounting_text as text

    return text(acc)


def _ci(k: float | None, lo: float | None, hi: float | None, n: int | None = None,
        confidence: float = 0.95) -> str:
    """κ as every view writes it (:func:`~maev_kit.agreement.kappa_text`)."""
    from maev_kit.agreement.internal import kappa_text

    return kappa_text(k, lo, hi, n=n, confidence=confidence)


def upper_bound(k: float, lo: float | None, hi: float | None, n: int | None = None,
                confidence: float = 0.95) -> tuple[float, str]:
    """κ's CI upper bound and how to say it: ``κ's CI upper bound 0.712``. With no interval
    (none, or a zero-width one) κ itself is all there is, said the one way every view says it
    (``κ 0.000 (no interval — n = 3)``), never as a bound of ``0.000``.

    >>> upper_bound(0.5, 0.2, 0.7)
    (0.7, "κ's CI upper bound 0.700")
    >>> upper_bound(0.0, 0.0, 0.0, n=3)
    (0.0, 'κ 0.000 (no interval — n = 3)')
    """
    if _num(hi) is None or hi == lo:
        return k, f"κ {_ci(k, lo, hi, n, confidence)}"
    assert hi is not None
    return hi, f"κ's CI upper bound {hi:.3f}"


# --- the judge to check -------------------------------------------------------------------


def _card_identity(card: Any) -> JudgeIdentity:
    return JudgeIdentity(card.judge_name, card.judge_version, card.model, card.prompt,
                         card.prompt_hash)


def _identity(judge: Any, backend: Any) -> JudgeIdentity:
    template = getattr(judge, "template", None)
    model = getattr(backend, "model", None)
    return JudgeIdentity(str(judge.name), str(judge.version),
                         None if model is None else str(model),
                         getattr(template, "name", None), getattr(template, "sha256", None))


def _changes(then: JudgeIdentity, now: JudgeIdentity) -> list[str]:
    """What differs between the card's judge and the judge checked, in words."""
    out = []
    if then.model != now.model:
        out.append(f"model {then.model or 'none (offline)'} → {now.model or 'none (offline)'}")
    if then.prompt != now.prompt:
        out.append(f"prompt {then.prompt or 'none'} → {now.prompt or 'none'}")
    elif then.prompt_hash != now.prompt_hash:
        out.append(f"prompt hash {(then.prompt_hash or 'none')[:12]}… → "
                   f"{(now.prompt_hash or 'none')[:12]}… (the prompt's text changed)")
    if not out and then.name != now.name:
        out.append(f"judge {then.name} → {now.name}")
    if not out and then.version != now.version:
        out.append(f"judge version {then.version} → {now.version}")
    return out


def _examples_judge(template: Any, card: Any) -> Any:
    """The LLM judge with ``template`` and the card's worked examples (if any)."""
    from maev_kit.judges import RetentionJudge

    if card.examples:
        return RetentionJudge(template, examples=card.example_pairs(),
                              example_split=card.example_split or "dev")
    return RetentionJudge(template)


def _judge_to_check(card: Any, labeled_set: Any, judge: Any, prompt: Any, backend: Any,
                    backend_params: Mapping[str, Any]) -> tuple[Any, Any]:
    """The judge and backend to check: the card's (``judge_from_card``), or the card's model
    with another prompt, or another judge (with the card's prompt and examples when it is a
    model and no prompt is given)."""
    from maev_kit.calibration._card import card_backend, judge_from_card
    from maev_kit.calibration._human import fit_on_other_splits
    from maev_kit.judges import resolve_judge
    from maev_kit.judges.internal import check_prompt

    template = check_prompt(prompt)
    if judge is None and template is None:
        try:
            return judge_from_card(card, backend=backend, backend_params=dict(backend_params),
                                   labeled_set=labeled_set)
        except InputError as exc:
            raise InputError(f"{exc} — or check the judge this maev-kit builds against the card "
                             f"by naming it (--judge {card.model or card.judge_name})") from None
    if judge is None:  # the card's model with another prompt
        if card.model is None:
            raise InputError(f"a prompt applies to a model judge; the card's judge "
                             f"{card.judge_name} runs offline (name a model to check: --judge "
                             "MODEL, e.g. gpt-4o-mini)")
        if backend is None:
            backend = card_backend(card, dict(backend_params))
        return _examples_judge(template, card), backend
    if isinstance(judge, str) and judge.strip() == card.model and backend is None:
        backend = card_backend(card, dict(backend_params))  # the card's model, endpoint, params
        return _examples_judge(template or card.template(), card), backend
    if not (isinstance(judge, str) or _is_backend(judge)):  # a judge object: as it is
        if template is not None:
            raise InputError("pass the prompt inside the judge object (RetentionJudge(prompt)),"
                             " not as `prompt` as well")
        return resolve_judge(judge, backend=backend)
    carry = {k: v for k, v in card.params.items() if k not in _ENDPOINT_PARAMS}
    obj, backend = resolve_judge(judge, prompt=template or card.template(), backend=backend,
                                 backend_params={**carry, **backend_params})
    if backend is None:  # an offline judge
        if template is not None:
            raise InputError(f"a prompt applies to a model judge; {obj.name} runs offline")
        if getattr(obj, "requires_fit", False) and not getattr(obj, "is_fitted", True):
            fit_on_other_splits(obj, labeled_set, card.split)
        return obj, None
    return _examples_judge(obj.template, card), backend


def _is_backend(obj: Any) -> bool:
    return callable(getattr(obj, "complete", None)) and hasattr(obj, "cache_identity")


# --- the labeled items ----------------------------------------------------------------------


def _load_set(card: Any, labeled_set: Any, where: str) -> Any:
    """The labeled set to check on: the one given (a folder, bundled name or loaded set), else
    the card's, found by name as the other commands find a set."""
    from maev_kit.datasets import bundled_set_path, load_labeled_set

    if labeled_set is not None and not isinstance(labeled_set, (str, os.PathLike)):
        return labeled_set
    if labeled_set is None:
        name = card.labeled_set
        if name is None:
            raise InputError(f"judge card {where} › labeled_set: the card names no labeled set; "
                             "pass the labeled set it was calibrated on (--set FOLDER)")
        try:
            found = Path(name).is_dir() or bundled_set_path(name).is_dir()
        except InputError:
            found = False
        if not found:
            raise InputError(f"judge card {where} › labeled_set: no labeled set {name!r} here "
                             "(neither a folder nor a bundled set); pass its folder with --set")
        labeled_set = name
    if Path(labeled_set).is_file():
        raise InputError(f"{os.fspath(labeled_set)}: is a file; give a labeled-set folder "
                         "(manifest.json, traces.jsonl, expectations.jsonl) or a bundled "
                         "set's name")
    return load_labeled_set(labeled_set)


def _tolerance(card: Any, tolerance: float | None, notes: list[str]) -> tuple[float, str]:
    if tolerance is not None and not (isinstance(tolerance, (int, float))
                                      and 0 <= tolerance <= 1):
        raise InputError(f"tolerance must be a κ difference in [0, 1], e.g. 0.05; got "
                         f"{tolerance!r}")
    if card.tolerance is not None:
        if tolerance is not None and tolerance != card.tolerance:
            notes.append(f"tolerance {tolerance:g} not used: the card pins its own, "
                         f"{card.tolerance:g}")
        return float(card.tolerance), "card"
    if tolerance is not None:
        return float(tolerance), "argument"
    return DEFAULT_TOLERANCE, "default"


def _min_kappa(card: Any, min_kappa: float | None) -> tuple[float, str]:
    """The floor of κ's upper bound and where it came from (the argument wins: it is the
    gate's own setting, e.g. ``maev check --min-kappa``)."""
    from maev_kit.calibration._card import DEFAULT_MIN_KAPPA

    if min_kappa is not None:
        if not (isinstance(min_kappa, (int, float)) and -1 <= min_kappa <= 1):
            raise InputError(f"min_kappa must be a κ value in [-1, 1], e.g. 0.4; got "
                             f"{min_kappa!r}")
        return float(min_kappa), "argument"
    if card.min_kappa is not None:
        return float(card.min_kappa), "card"
    return DEFAULT_MIN_KAPPA, "default"


# --- the check ------------------------------------------------------------------------------


def check_card(
    card: Any, labeled_set: Any = None, *, judge: Any = None, prompt: Any = None,
    backend: Any = None, backend_params: Mapping[str, Any] | None = None,
    tolerance: float | None = None, min_kappa: float | None = None,
    confidence: float | None = None, max_judge_errors: float = 0.05, n_resamples: int = 10_000,
    seed: int = 0, cache: Any = None, progress: bool = True, max_concurrency: int = 16,
    max_retries: int = 3, timeout: float = 60, mode: str = "sync",
) -> DriftReport:
    """Re-run a judge card's judge on the card's labeled items; did agreement fall?

    The drift gate for CI pipelines (``maev check``; docs/drift-gate.md). The judge is rebuilt
    from the card (:func:`~maev_kit.calibration.judge_from_card`: model, params, prompt, worked
    examples), or is the ``judge`` / ``prompt`` given, to test a changed model string or prompt
    against the card; it runs through :func:`~maev_kit.runner.run_judge` (reply cache,
    retries, fail-fast) on the human-labeled items of the card's split, and its κ, CI and
    accuracy are computed as :func:`~maev_kit.calibration.calibrate` computes them.

    Parameters
    ----------
    card : a :class:`~maev_kit.calibration.JudgeCard` or the path of its JSON file.
    labeled_set : a labeled-set folder, bundled name or loaded set; default the card's
        ``labeled_set``, found by name (a folder of that name here, or a bundled set).
    judge : the judge to check instead of the card's: an offline name, a litellm model string
        (with the card's prompt, worked examples and answer-changing params, but not its
        endpoint: pass ``backend_params={"api_base": ...}``), a judge or backend object.
    prompt : a prompt to check instead of the card's (builtin id, template file or
        :class:`~maev_kit.judges.PromptTemplate`), on the card's model unless ``judge`` is given.
    backend, backend_params : as for :func:`~maev_kit.calibration.judge_from_card`.
    tolerance : the κ fall allowed (the card's field wins; default 0.05).
    min_kappa : the floor of κ's CI upper bound (default: the card's ``min_kappa``, else
        0.4): a judge whose κ cannot reach it fails however steady it is. max_judge_errors:
        a larger share of failed judge calls gives ``"ERROR"``.
    confidence : of the κ CIs; default the card's (0.95). Tests are significant at
        ``1 − confidence``.
    n_resamples, seed : bootstrap settings (calibrate's: an unchanged judge reproduces the CI).
    cache, progress, max_concurrency, max_retries, timeout, mode : for ``run_judge``.

    The verdict (docs/drift-gate.md): **FAIL** when κ's CI upper bound is below ``min_kappa``
    (a useless judge never passes, even one as useless as its card), or κ fell by more than
    the tolerance, significantly (McNemar on recorded verdicts, or the new CI's top below the
    recorded κ − tolerance) or with a changed judge, or a flip rate of the card's ``probes``
    (re-run with its seed) rose so (docs/judges.md); **ERROR** when too many calls failed.

    Raises
    ------
    InputError
        Unreadable card or set, no κ, a judge not rebuilt as calibrated, no split or labeled
        item; a card of another set, of changed labels (``labels_hash``) or of one class.
    JudgeUnavailableError
        When the judge cannot answer at all (no key, nothing listening).

    Examples
    --------
    >>> from maev_kit.calibration import calibrate
    >>> res = calibrate("support_desk", judges=["heuristic"], progress=False, cache=False,
    ...                 n_resamples=500)
    >>> report = check_card(res.card(), progress=False, cache=False, n_resamples=500)
    >>> report.status, report.exit_code, round(report.delta_kappa, 6)
    ('PASS', 0, 0.0)
    """
    card, where, confidence = _checked_card(card, max_judge_errors, confidence)
    notes: list[str] = []
    tol, tol_source, floor = *_tolerance(card, tolerance, notes), _min_kappa(card, min_kappa)
    ls, items, scored, human = _labeled_items(card, labeled_set, where)
    notes += _set_notes(card, ls)
    judge_obj, backend_obj = _judge_to_check(card, ls, judge, prompt, backend,
                                             backend_params or {})
    then, now = _card_identity(card), _identity(judge_obj, backend_obj)
    options = dict(max_concurrency=max_concurrency, max_retries=max_retries, timeout=timeout,
                   cache=cache, progress=progress)
    run, row = _measure(judge_obj, backend_obj, scored, human, ls, card.split,
                        (n_resamples, confidence, seed), {**options, "mode": mode})
    base = _then_and_now(card, where, ls.name, (then, now, _changes(then, now)), row,
                         run, len(scored), confidence, (tol, tol_source), notes)
    base.update(_paired(card, run, scored, human, n_resamples, confidence, seed, notes))
    base.update(_floor_and_labels(floor, ls, human, scored, card.split, judge_obj, now))
    base["probes"] = _probe_gate(card, where, (judge_obj, backend_obj), scored, run,
                                 (tol, 1 - confidence, max_judge_errors), options)
    status, reasons = _verdict(base, len(scored), max_judge_errors, 1 - confidence)
    return DriftReport(status=status, reasons=tuple(reasons), notes=tuple(notes), **base)


def _probe_gate(card: Any, where: str, judge: tuple[Any, Any], scored: list[Any], run: Any,
                rule: tuple[float, float, float], run_options: dict[str, Any]
                ) -> tuple[Any, ...]:
    """Re-run the robustness probes the card records (same seed, this run as the baseline)
    and compare each flip rate with the card's (``ProbeDrift``); none without probes on the
    card, or when too many of this run's calls failed (then there is no verdict at all)."""
    from maev_kit.calibration._probes import card_probes, probe_drift, probe_judge

    n_err = sum(1 for v in run.verdicts if v.label is None)
    if not card.probes or (n_err and n_err / max(len(scored), 1) > rule[2]):
        return ()
    seed, conf, recorded = card_probes(card.probes, where)
    now = probe_judge(judge[0], scored, list(recorded), seed, backend=judge[1], baseline=run,
                      confidence=conf, **run_options)
    return tuple(probe_drift(recorded, now, rule[0], rule[1]))


def _measure(judge_obj: Any, backend_obj: Any, scored: list[Any], human: Any, ls: Any,
             split: str | None, stats: tuple[int, float, int], run_options: dict[str, Any]
             ) -> tuple[Any, Any]:
    """Run the judge on the scored items; (its run, its leaderboard row as calibrate scores
    it)."""
    from maev_kit.calibration._result import calibration_from_runs, labels_are_reference
    from maev_kit.runner import run_judge

    n_resamples, confidence, seed = stats
    run = run_judge(judge_obj, scored, backend_obj, **run_options)
    result = calibration_from_runs({"now": run}, human, items=scored, n_resamples=n_resamples,
                                   confidence=confidence, seed=seed, split=split,
                                   reference_labels=labels_are_reference(ls))
    return run, result.leaderboard.iloc[0]


def _floor_and_labels(floor: tuple[float, str], ls: Any, human: Any, scored: list[Any],
                      split: str | None, judge_obj: Any, now: Any) -> dict[str, Any]:
    """The report's floor fields, and where every labeled item went (as calibrate says)."""
    from maev_kit.calibration._result import account_labels

    fitted = [now.name] if getattr(judge_obj, "requires_fit", False) else []
    return {"min_kappa": floor[0], "min_kappa_source": floor[1],
            "label_accounting": account_labels(ls, human, [it.item_id for it in scored],
                                               split, fitted)}


def _then_and_now(card: Any, where: str, set_name: str, judges: tuple[Any, Any, list[str]],
                  row: Any, run: Any, n_scored: int, confidence: float,
                  tolerance: tuple[float, str], notes: list[str]) -> dict[str, Any]:
    """The report's fields that compare the card with this run (κ, accuracy, items, judge)."""
    then, now, changes = judges
    stats = dict(run.stats)
    if card.n_items and card.n_items != n_scored:
        notes.append(f"the card's κ rests on {card.n_items} items, this check on {n_scored}")
    return dict(
        card=where, labeled_set=set_name, split=card.split, judge_then=then, judge_now=now,
        changes=tuple(changes), kappa_then=float(card.kappa), kappa_then_low=card.kappa_low,
        kappa_then_high=card.kappa_high, kappa_now=float(row["kappa"]),
        kappa_now_low=float(row["kappa_low"]), kappa_now_high=float(row["kappa_high"]),
        confidence=confidence, accuracy_then=card.accuracy, accuracy_now=float(row["accuracy"]),
        n_items_then=card.n_items, n_items_now=n_scored, tolerance=tolerance[0],
        tolerance_source=tolerance[1],
        judge_errors=sum(1 for v in run.verdicts if v.label is None),
        errors_by_cause=dict(stats.get("errors_by_cause") or {}), stats=stats)


def _checked_card(card: Any, max_judge_errors: Any, confidence: Any
                  ) -> tuple[Any, str, float]:
    """The card (loaded), how to name it, and the confidence to use; bad values are
    InputErrors naming the field."""
    from maev_kit.calibration._card import JudgeCard

    where = os.fspath(card) if isinstance(card, (str, os.PathLike)) else "(in memory)"
    if not isinstance(card, JudgeCard):
        card = JudgeCard.load(card)
    if card.kappa is None or math.isnan(card.kappa):
        raise InputError(f"judge card {where} › kappa: no κ recorded, nothing to check against; "
                         "recalibrate (maev calibrate --card)")
    if not (isinstance(max_judge_errors, (int, float)) and 0 <= max_judge_errors <= 1):
        raise InputError(f"max_judge_errors must be a share in [0, 1], got {max_judge_errors!r}")
    confidence = card.confidence if confidence is None else confidence
    if not (isinstance(confidence, float) and 0 < confidence < 1):
        raise InputError(f"confidence must be in (0, 1), e.g. 0.95; got {confidence!r}")
    return card, where, confidence


def _labeled_items(card: Any, labeled_set: Any, where: str
                   ) -> tuple[Any, list[Any], list[Any], dict[str, dict[str, str]]]:
    """The labeled set, the items of the card's split, those with a label, and the labels."""
    from maev_kit.calibration._human import load_human_labels

    ls = _load_set(card, labeled_set, where)
    items = ls.items_in(card.split)  # an InputError names the split missing
    human = load_human_labels(ls)
    scored = [it for it in items if human.get(it.item_id)]
    if not scored:
        raise InputError(f"no item of split {card.split!r} of labeled set {ls.name!r} has a "
                         "human label: nothing to check the judge card against")
    _refuse_other_labels(card, ls, scored, human, where)
    return ls, items, scored, human


def _set_notes(card: Any, ls: Any) -> list[str]:
    """What changed in the labeled set since calibration that leaves the card's labels as
    they were (the set's version, or its content outside them): the check still runs."""
    return [f"{d}: the check compares against today's labels"
            for d in card.differences(card, labeled_set=ls)
            if not d.startswith(("labels_hash", "labeled set name"))]


def _refuse_other_labels(card: Any, ls: Any, scored: list[Any],
                         human: Mapping[str, Mapping[str, str]], where: str) -> None:
    """An :class:`InputError` (exit 2: no verdict can be given) when the set is not the one
    the card was made on, its labels of the card's split changed, or they hold one class
    (κ undefined); the message says how to make a card for these labels."""
    from collections import Counter

    split = f" --split {card.split}" if card.split else ""
    remake = (f"to check the judge on these labels, make a new card on them: maev calibrate "
              f"{ls.name} --judge {card.model or card.judge_name}{split} --card NEW_CARD.json")
    if card.labeled_set is not None and card.labeled_set != ls.name:
        raise InputError(f"judge card {where} › labeled_set: the card was made on labeled set "
                         f"{card.labeled_set!r}, not {ls.name!r}: the drift check cannot "
                         f"compare them; pass the card's set (--set), or {remake}")
    problems = [d for d in card.differences(card, labeled_set=ls) if d.startswith("labels_hash")]
    if problems:
        raise InputError(f"judge card {where} › labels_hash: the human labels of split "
                         f"{card.split!r} of {ls.name!r} are not the ones the card's κ rests on "
                         f"(they changed since calibration): the drift check cannot tell a "
                         f"judge's drift from the labels' change; {remake}")
    counts = Counter(lab for it in scored for lab in human[it.item_id].values())
    if len(counts) < 2:
        shown = ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"
        raise InputError(f"labeled set {ls.name!r}, split {card.split!r}: the human labels hold "
                         f"one class ({shown}), so κ is undefined and no drift can be measured; "
                         f"label items of another class, then {remake}")


def _paired(card: Any, run: Any, scored: list[Any], human: Mapping[str, Mapping[str, str]],
            n_resamples: int, confidence: float, seed: int, notes: list[str]
            ) -> dict[str, Any]:
    """The paired comparison with the card's recorded verdicts (``paired`` False without)."""
    if not card.item_verdicts:
        return {"paired": False, "test": "unpaired-ci"}
    from maev_kit.agreement import compare_judges

    now = {v.item_id: v.label for v in run.verdicts if v.label is not None}
    ids = [it.item_id for it in scored if it.item_id in now and it.item_id in card.item_verdicts]
    if not ids:
        notes.append("no item with a recorded verdict was judged now: compared unpaired")
        return {"paired": False, "test": "unpaired-ci"}
    annotators = sorted({a for i in ids for a in human[i]})
    ref: Any = ({a: [human[i].get(a) for i in ids] for a in annotators} if len(annotators) > 1
                else [human[i][annotators[0]] for i in ids])
    cmp = compare_judges(ref, [now[i] for i in ids], [card.item_verdicts[i] for i in ids],
                         names=["now", "then"], n_resamples=n_resamples,
                         confidence=confidence, seed=seed)
    pair = cmp.pairs.iloc[0]
    then_k = float(cmp.kappas["then"])
    if len(ids) < len(scored):
        notes.append(f"{len(scored) - len(ids)} of {len(scored)} items are not paired (no "
                     "recorded verdict, or no verdict now)")
    if not math.isnan(then_k) and abs(then_k - card.kappa) > 1e-9:
        notes.append(f"the card's recorded verdicts give κ {then_k:.3f} on these items and "
                     f"today's labels (the card recorded {card.kappa:.3f})")
    return {"paired": True, "test": "mcnemar-exact", "n_paired": len(ids),
            "p_value": _num(float(pair["mcnemar_p"])),
            "then_only_correct": int(pair["b_only_correct"]),
            "now_only_correct": int(pair["a_only_correct"]),
            "both_correct": int(pair["both_correct"]), "both_wrong": int(pair["both_wrong"]),
            "paired_delta": _num(float(pair["delta"])),
            "paired_delta_low": _num(float(pair["delta_low"])),
            "paired_delta_high": _num(float(pair["delta_high"])),
            "paired_delta_p": _num(float(pair["p_value"]))}


_SOURCES = {"card": "the card's", "argument": "the given", "default": "the default"}


def _verdict(r: Mapping[str, Any], n: int, max_judge_errors: float,
             alpha: float) -> tuple[str, list[str]]:
    """PASS / FAIL / ERROR and why: the drift verdict, and FAIL whenever κ's CI upper bound
    is below the floor ``min_kappa`` (a useless judge never passes)."""
    status, reasons = _drift_verdict(r, r["judge_errors"], n, max_judge_errors, alpha)
    if status == "ERROR":
        return status, reasons
    risen = [p.reason for p in r.get("probes", ()) if p.failed]
    if risen:  # a flip rate of the card's probes rose significantly
        status, reasons = "FAIL", [*reasons, *risen]
    floor = r["min_kappa"]
    top, what = _now_upper(r)
    if top < floor:
        reasons = [*reasons, f"{what} is below the floor min_kappa {floor:g} "
                   f"({_SOURCES[r['min_kappa_source']]}): even at its best this judge agrees "
                   "with people too little to be trusted"]
        return "FAIL", reasons
    return status, reasons


def _now_upper(r: Mapping[str, Any]) -> tuple[float, str]:
    """:func:`upper_bound` of this run's κ in the report's fields ``r``."""
    return upper_bound(r["kappa_now"], r["kappa_now_low"], r["kappa_now_high"],
                       r.get("n_items_now"), r.get("confidence", 0.95))


def _drift_verdict(r: Mapping[str, Any], n_err: int, n: int, max_judge_errors: float,
                   alpha: float) -> tuple[str, list[str]]:
    """PASS / FAIL / ERROR of the κ fall against the card, and why."""
    if n_err and n_err / n > max_judge_errors:
        by = ", ".join(f"{k} {v}" for k, v in sorted(r["errors_by_cause"].items()))
        return "ERROR", [f"{n_err} of {n} items could not be judged ({by}), over the allowed "
                         f"share {max_judge_errors:g}: the numbers cannot be trusted (a failed "
                         "call is never a verdict); fix the judge's endpoint and rerun"]
    k_then, k_now, tol = r["kappa_then"], r["kappa_now"], r["tolerance"]
    if math.isnan(k_now):
        return "ERROR", ["κ is undefined on these items now (the labels hold one class?): "
                         "nothing to compare"]
    fall = k_then - k_now
    src = _SOURCES[r["tolerance_source"]]
    movement = f"{k_then:.3f} → {k_now:.3f}"
    if fall <= 0:
        return "PASS", [f"κ did not fall ({movement}; {src} tolerance {tol:g})"]
    if fall <= tol:
        return "PASS", [f"κ fell by {fall:.3f} ({movement}), within {src} tolerance {tol:g}"]
    bound = k_then - tol
    sig = []
    if r["paired"] and r.get("p_value") is not None and r["p_value"] < alpha \
            and r["then_only_correct"] > r["now_only_correct"]:
        sig.append(f"McNemar exact p = {_p(r['p_value'])} < {alpha:g} (the card's judge alone "
                   f"was right on {r['then_only_correct']} items, this run alone on "
                   f"{r['now_only_correct']})")
    top, what = _now_upper(r)
    if top < bound:
        sig.append(f"the new {what} is below the recorded κ − tolerance = {bound:.3f}")
    head = f"κ fell by {fall:.3f} ({movement}), more than {src} tolerance {tol:g}"
    if sig:
        return "FAIL", [f"{head}, and significantly: " + "; ".join(sig)]
    if r["changes"]:
        return "FAIL", [f"{head}, with a judge that differs from the card's "
                        f"({'; '.join(r['changes'])})"]
    test = (f"McNemar exact p = {_p(r.get('p_value'))}" if r["paired"]
            else f"the new {what} ≥ {bound:.3f}")
    return "PASS", [f"{head}, but not significantly ({test}) and the judge is the card's"]
