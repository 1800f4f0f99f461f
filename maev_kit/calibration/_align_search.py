"""The search of :func:`~maev_kit.calibration.align`: dev only, then one held-out test.

This module owns what stays fixed through a search (data, params, prices, run arguments), the
list of candidates and the estimate of the whole search, scoring each candidate on dev within
the budget, the rewrites of the best so far, the choice of the winner (highest lower bound of
κ's CI on dev), and the single scoring of the winner and the base prompt on the test split.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from maev_kit.calibration._align_budget import (
    Budget, _BudgetedBackend, _Estimate, _Meter, _Price, _count_tokens, _estimate, _usd,
)
from maev_kit.calibration._align_candidates import (
    REWRITE_DISAGREEMENTS, _Candidate, _RewriteRequest, _disagreements, _fmt, _key, _make_judge,
    _meta, _rewrite_item, _rewrite_messages,
)
from maev_kit.calibration._align_inputs import _Data
from maev_kit.calibration._align_result import AlignmentResult, _Report
from maev_kit.calibration._compare_prompts import compare_prompts
from maev_kit.calibration._result import CalibrationResult, calibration_from_runs
from maev_kit.errors import InputError, JudgeUnavailableError


# --------------------------------------------------------------------------- search
@dataclass(frozen=True)
class _Setup:
    """What stays fixed through a search: its data, the backend params and prices, how runs
    are made (``run_args`` for :func:`~maev_kit.runner.run_judge`), how κ is computed and where
    progress lines go."""

    data: _Data
    params: dict[str, Any]
    prices: dict[str, _Price | None]
    run_args: dict[str, Any]  # max_concurrency, max_retries, timeout, cache, progress
    threshold: float
    n_resamples: int
    confidence: float
    seed: int
    say: Callable[[str], None]

    def backend_for(self, model: str) -> Any:
        """A fresh backend for ``model`` with the backend params."""
        from maev_kit.judges import resolve_judge

        return resolve_judge(model, backend_params=self.params)[1]

    def estimate(self, c: _Candidate, items: Sequence[Any]) -> _Estimate:
        """What scoring ``c`` on ``items`` should send (cached replies subtracted)."""
        return _estimate(c.judge, c.backend, items, self.prices.get(c.model),
                         self.run_args["cache"])

    def equip(self, c: _Candidate, parent: _Candidate | None = None) -> None:
        """Give ``c`` its judge (with its worked examples), a backend (the parent's for a
        rewrite, else a new one for its model) and its estimate on dev."""
        c.judge = _make_judge(c.template, c.examples, c.strategy, self.data.pool, self.seed)
        c.backend = parent.backend if parent is not None else self.backend_for(c.model)
        c.est = self.estimate(c, self.data.dev)

    def calibration(self, runs: Mapping[str, Any], cands: Sequence[_Candidate], items: list[Any],
                    labeled_set: Mapping[str, Any] | None = None,
                    split: str | None = None) -> CalibrationResult:
        """The calibration of the candidates' ``runs`` on ``items``."""
        return calibration_from_runs(dict(runs), self.data.human, items=items,
                                     meta={c.key: _meta(c, self.params) for c in cands},
                                     threshold=self.threshold, n_resamples=self.n_resamples,
                                     confidence=self.confidence, seed=self.seed,
                                     labeled_set=labeled_set, split=split)

    def split_calibration(self, runs: Mapping[str, Any], cands: Sequence[_Candidate],
                          items: list[Any], split: str) -> CalibrationResult:
        """The calibration reported for a split (dev or test): it names the labeled set and
        the split, and keeps the human labels per item for :func:`compare_prompts`."""
        cal = self.calibration(runs, cands, items, labeled_set=self.data.info, split=split)
        # not a field: an extra attribute compare_prompts reads with getattr (its _human)
        cal.human_labels = {  # type: ignore[attr-defined]
            i: dict(self.data.human[i]) for i in cal.item_ids}
        return cal


def _candidates(setup: _Setup, models: list[str], ks: list[int],
                strategies: list[str]) -> list[_Candidate]:
    """Every model × prompt × example count × strategy, the base prompt on the first model
    first; each equipped with its judge, backend and dev estimate."""
    data = setup.data
    combos: list[tuple[str, Any, int, str | None]] = [(models[0], data.base, 0, None)]
    for model in models:
        for t in data.templates:
            for k in ks:
                combos += [(model, t, k, s) for s in (strategies if k else [None])]
    cands: list[_Candidate] = []
    seen: set[str] = set()
    for model, t, k, strategy in combos:
        key = _key(model, t.name, k, strategy)
        if key not in seen:
            seen.add(key)
            cands.append(_Candidate(key, model, t, k, strategy if k else None,
                                    "base" if t is data.base else "prompt"))
    for c in cands:
        setup.equip(c)
    return cands


def _estimate_search(setup: _Setup, cands: list[_Candidate], rewrites: int,
                     rewriter_model: str, limits: Budget) -> dict[str, Any]:
    """Estimate the whole search (every candidate on dev, each rewrite, then two judges on
    test), say it and the budget, and return the estimate."""
    data, say = setup.data, setup.say
    total = _Estimate()
    for c in cands:
        total.add(c.est)
    base_test = setup.estimate(cands[0], data.test)
    total.add(_Estimate(base_test.requests * 2, base_test.cached * 2, base_test.tokens * 2,
                        None if base_test.cost is None else base_test.cost * 2))
    if rewrites:
        per = _rewrite_estimate(data.base.system, rewriter_model, setup.prices)
        dev_per = cands[0].est
        for _ in range(rewrites):
            total.add(per)
            total.add(_Estimate(dev_per.requests + dev_per.cached, 0, dev_per.tokens,
                                dev_per.cost))
    unpriced = sorted(m for m, p in setup.prices.items() if p is None)
    estimate: dict[str, Any] = {
        "candidates": len(cands) + rewrites, "dev_items": len(data.dev),
        "test_items": len(data.test), "requests": total.requests, "cached": total.cached,
        "tokens": total.tokens, "cost": total.cost,
        "example_pool": data.pool_where or None, "models_unpriced": unpriced}
    say(f"estimate: {len(cands)} candidate(s)"
        + (f" + {rewrites} rewrite(s)" if rewrites else "")
        + f" on {len(data.dev)} dev items, then 2 on {len(data.test)} test items: about "
        f"{total.requests} requests ({total.cached} cached), {total.tokens:,} tokens, cost "
        f"{_usd(total.cost)}"
        + (f" (no price for {', '.join(unpriced)})" if unpriced else ""))
    if limits.max_requests is not None or limits.max_cost is not None:
        say("budget: " + ", ".join(x for x in (
            f"at most {limits.max_requests} requests" if limits.max_requests is not None else "",
            f"at most ${limits.max_cost:g}" if limits.max_cost is not None else "") if x))
    return estimate


def _rewrite_estimate(system: str, rewriter_model: str,
                      prices: Mapping[str, _Price | None]) -> _Estimate:
    """One rewrite request: its prompt tokens (the disagreements guessed at 200 characters
    each) and cost."""
    per = _Estimate(1, 0, 0, None)
    rw_msgs = _rewrite_messages(system, [], 1)
    per.tokens = _count_tokens(rewriter_model, rw_msgs) + 200 * REWRITE_DISAGREEMENTS // 4 \
        + len(system) // 4
    rp = prices.get(rewriter_model)
    per.cost = None if rp is None else rp.cost(per.tokens, len(system) // 3)
    return per


class _Search:
    """The search on dev: scores candidates within the budget (a model that could not answer
    is not asked again), asks for rewrites of the best so far, and keeps every candidate tried,
    in order, in ``cands``."""

    def __init__(self, setup: _Setup, cands: list[_Candidate], meter: _Meter) -> None:
        self.setup, self.cands, self.meter = setup, cands, meter
        self.dead: dict[str, JudgeUnavailableError] = {}  # model → why it cannot answer

    def run(self, rewrites: int, rewriter_model: str) -> None:
        """Score every candidate on dev, then ask for up to ``rewrites`` rewrites."""
        for c in self.cands:
            self.run_dev(c)
        for n in range(1, rewrites + 1):
            parent = self.best()
            if parent is None:
                break
            self.rewrite(n, parent, rewriter_model)

    def score(self, c: _Candidate, items: list[Any]) -> Any:
        """Run ``c`` on ``items`` within the budget; None when skipped."""
        from maev_kit.runner import run_judge

        setup = self.setup
        est = c.est if items is setup.data.dev else setup.estimate(c, items)
        if not self.meter.fits(est.requests, est.cost):
            return None
        if c.model in self.dead:
            raise self.dead[c.model]
        self.meter.tripped = False
        try:
            run = run_judge(c.judge, items, _BudgetedBackend(c.backend, self.meter,
                                                             setup.prices.get(c.model)),
                            **setup.run_args)
        except JudgeUnavailableError as exc:
            self.dead[c.model] = exc
            raise
        return None if self.meter.tripped else run

    def run_dev(self, c: _Candidate) -> None:
        """Score ``c`` on dev and record its status, κ with its CI and disagreements."""
        setup = self.setup
        try:
            run = self.score(c, setup.data.dev)
        except JudgeUnavailableError as exc:
            c.status, c.note = f"failed: {exc.cause}", str(exc)
            return
        if run is None:
            c.status = "skipped: budget"
            c.note = (f"estimated {c.est.requests} requests, {_usd(c.est.cost)}; "
                      f"{self.meter.requests} sent before it")
            return
        c.run = run
        one = setup.calibration({c.key: c.run}, [c], setup.data.dev)
        row = one.leaderboard.iloc[0]
        c.status = str(row["status"])
        c.dev = {k: row[k] for k in ("kappa", "kappa_low", "kappa_high", "n_items")}
        c.dev["disagreements"] = one.disagreements
        setup.say(f"dev: {c.key}: {c.status}, κ {_fmt(c.dev.get('kappa'))} (CI "
                  f"{_fmt(c.dev.get('kappa_low'))} to {_fmt(c.dev.get('kappa_high'))})")

    def best(self) -> _Candidate | None:
        """The candidate with the highest lower bound of κ's CI on dev (then κ, then the
        earliest); None when none ran."""
        cands = self.cands
        ok = [c for c in cands if c.status == "ok" and not math.isnan(c.dev["kappa_low"])]
        if not ok:
            return None
        return max(ok, key=lambda c: (c.dev["kappa_low"], c.dev["kappa"],
                                      -cands.index(c)))

    def rewrite(self, n: int, parent: _Candidate, rewriter_model: str) -> None:
        """Rewrite ``n``: ask for new instructions from ``parent``'s dev disagreements; a valid
        template keeps the parent's user section, model and examples and is scored on dev."""
        dis = _disagreements(parent, self.setup.data.human)
        req = _RewriteRequest(_rewrite_messages(parent.template.system, dis, n))
        name = f"rewrite-{n}"
        c = _Candidate(_key(parent.model, name, parent.examples, parent.strategy), parent.model,
                       parent.template, parent.examples, parent.strategy, name)
        c.judge = parent.judge
        self.cands.append(c)
        if not self.ask(req, c, rewriter_model, len(parent.template.system)):
            return
        from maev_kit.judges import PromptTemplate

        text = f"=== system ===\n{req.instructions}\n=== user ===\n{parent.template.user}\n"
        try:
            c.template = PromptTemplate.from_text(text, name=name, view=parent.template.view)
        except InputError as exc:
            c.status, c.note = "invalid: not a valid template", str(exc)
            self.setup.say(f"dev: {c.key}: invalid rewrite ({exc})")
            return
        c.note = f"rewritten from {parent.key} ({len(dis)} dev disagreements shown)"
        self.setup.equip(c, parent)
        self.run_dev(c)

    def ask(self, req: _RewriteRequest, c: _Candidate, rewriter_model: str,
            system_chars: int) -> bool:
        """Send the rewrite request within the budget; True when the reply holds new
        instructions, else False with ``c``'s status and note saying why."""
        from maev_kit.runner import run_judge

        rb = self.setup.backend_for(rewriter_model)
        rb_price = self.setup.prices.get(rewriter_model)
        est = rb_price.cost(_count_tokens(rewriter_model, req.messages),
                            system_chars // 3) if rb_price else None
        if not self.meter.fits(1, est):
            c.status = "skipped: budget"
            c.note = "the rewrite request did not fit the budget"
            return False
        try:
            rrun = run_judge(req, [_rewrite_item()], _BudgetedBackend(rb, self.meter, rb_price),
                             **{**self.setup.run_args, "progress": False})
        except JudgeUnavailableError as exc:
            c.status, c.note = f"failed: {exc.cause}", str(exc)
            return False
        if req.instructions is None:
            v = rrun.verdicts[0]
            c.status = ("skipped: budget" if "budget" in (v.error or "")
                        else f"failed: {v.cause or 'other'}")
            c.note = f"rewrite request: {v.error}"
            return False
        return True


# --------------------------------------------------------------------------- test
def _score_test(search: _Search, win: _Candidate) -> CalibrationResult | None:
    """Score the base prompt and the winner once on the test split; None (after saying why)
    when one cannot answer or the budget is spent."""
    setup = search.setup
    finals = [search.cands[0]] if win is search.cands[0] else [search.cands[0], win]
    test_runs: dict[str, Any] = {}
    for c in finals:
        try:
            run = search.score(c, setup.data.test)
        except JudgeUnavailableError as exc:
            setup.say(f"test: {c.key}: {exc}")
            return None
        if run is None:
            setup.say(f"test: {c.key} not scored: the budget is spent; the dev κ is not a result")
            return None
        test_runs[c.key] = run
    return setup.split_calibration(test_runs, finals, setup.data.test, setup.data.test_name)


def _finish(search: _Search, report: _Report) -> AlignmentResult:
    """Calibrate the candidates that ran on dev, test the winner against the base prompt once
    on test, and build the result."""
    setup, cands = search.setup, search.cands
    ran = {c.key: c for c in cands if c.run is not None}
    dev_cal = (setup.split_calibration({k: c.run for k, c in ran.items()}, list(ran.values()),
                                       setup.data.dev, setup.data.dev_name) if ran else None)
    win = search.best()
    if win is None:
        return report.result(cands, search.meter.spent, dev=dev_cal)
    test_cal = _score_test(search, win)
    if test_cal is None:
        return report.result(cands, search.meter.spent, winner=win.key, dev=dev_cal)
    base_c = cands[0]
    cmp = None
    if win is not base_c and all(s == "ok" for s in test_cal.leaderboard["status"]):
        cmp = compare_prompts(test_cal, base_c.key, win.key,
                              prompts={c.key: c.template for c in (base_c, win)},
                              n_resamples=setup.n_resamples, seed=setup.seed)
    out = report.result(cands, search.meter.spent, winner=win.key, dev=dev_cal, test=test_cal,
                        cmp=cmp)
    setup.say(str(cmp) if cmp is not None else f"test: the base prompt won on dev; test κ "
              f"{_fmt(out.test_kappa()[0])}")
    return out
