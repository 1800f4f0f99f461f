"""What :func:`~maev_kit.calibration.align` returns.

This module owns :class:`AlignmentResult` (the candidates table, the winner, the dev and test
calibrations, the paired test of winner against base, the estimate and what was spent; printing,
``to_dict`` and ``save``), the columns of the candidates table, and the part of the result fixed
before anything is sent.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from maev_kit.calibration._align_budget import Budget, _usd
from maev_kit.calibration._align_candidates import _Candidate
from maev_kit.calibration._compare_prompts import PromptComparison
from maev_kit.calibration._result import CalibrationResult


CANDIDATE_COLUMNS = [
    "candidate", "model", "prompt", "prompt_sha256", "source", "examples", "strategy", "status",
    "dev_kappa", "dev_kappa_low", "dev_kappa_high", "dev_items", "requests", "cache_hits",
    "tokens", "cost", "est_requests", "est_cost", "example_ids", "note"]


# --------------------------------------------------------------------------- result
@dataclass
class AlignmentResult:
    """What :func:`align` found.

    Attributes
    ----------
    candidates : DataFrame, one row per candidate judge in the order tried: its model, prompt
        (name, hash, source: base, prompt file or ``rewrite-<n>``), worked examples and
        strategy, ``status`` (``ok``; ``failed: ...``; ``invalid: ...`` for a rewrite that is
        not a valid template; ``skipped: budget``; ``not run: dry run``), dev κ with its CI,
        requests, cache hits, tokens, cost, the estimate made before sending, and the worked
        examples' item ids.
    winner, base : candidate keys. ``winner`` has the highest lower bound of κ's CI on dev
        (None when no candidate ran).
    dev : the dev-split CalibrationResult of the candidates that ran.
    test : the test-split CalibrationResult of the winner and the base prompt (None when the
        search did not get that far: dry run, budget).
    test_comparison : the winner against the base on test (:class:`PromptComparison`; None when
        the winner is the base prompt or the test was not scored). Its ``delta``,
        ``delta_low``/``delta_high`` and ``mcnemar_p`` are the numbers to trust.
    estimate : what was estimated before anything was sent (requests, cached, tokens, cost).
    spent : requests sent and cost (USD, litellm's prices; estimated for unpriced replies).
    """

    candidates: pd.DataFrame
    winner: str | None
    base: str
    dev: CalibrationResult | None
    test: CalibrationResult | None
    test_comparison: PromptComparison | None
    estimate: dict[str, Any]
    spent: dict[str, Any]
    budget: Budget
    dry_run: bool = False
    templates: dict[str, Any] = field(default_factory=dict, repr=False)
    judges: dict[str, Any] = field(default_factory=dict, repr=False)
    labeled_set: dict[str, Any] = field(default_factory=dict)
    splits: dict[str, Any] = field(default_factory=dict)

    @property
    def delta(self) -> float:
        """Δκ (winner − base) on test; 0 when the base won; NaN when test was not scored."""
        if self.test_comparison is not None:
            return self.test_comparison.delta
        return 0.0 if self.test is not None else math.nan

    def test_kappa(self, key: str | None = None) -> tuple[float, float, float]:
        """(κ, CI low, CI high) of ``key`` (default the winner) on the test split."""
        key = key or self.winner
        if self.test is None or key is None:
            return (math.nan, math.nan, math.nan)
        row = self.test.leaderboard.set_index("key").loc[key]
        return float(row["kappa"]), float(row["kappa_low"]), float(row["kappa_high"])

    def comparison(self) -> PromptComparison | None:
        """The winner against the base prompt on test: the text diff, κ, changed verdicts."""
        return self.test_comparison

    def card(self) -> Any:
        """The winner's :class:`~maev_kit.calibration.JudgeCard`, with its κ on the test split."""
        from maev_kit.errors import JudgeErrorsExceeded

        if self.test is None or self.winner is None:
            raise JudgeErrorsExceeded("no judge card: the winner was not scored on the test "
                                      "split (" + ("dry run" if self.dry_run else
                                                   "no candidate ran, or the budget ran out")
                                      + ")")
        return self.test.card(self.winner)

    def __str__(self) -> str:
        lines = []
        cols = ["candidate", "status", "dev_kappa", "dev_kappa_low", "dev_kappa_high",
                "requests", "cost"]
        lines.append(self.candidates[cols].to_string(index=False, na_rep="n/a",
                                                     float_format=lambda x: f"{x:.3f}"))
        if self.dry_run:
            lines.append("dry run: nothing sent")
            return "\n".join(lines)
        if self.winner is None:
            lines.append("no candidate could be scored on dev")
            return "\n".join(lines)
        k, lo, hi = self.test_kappa()
        lines.append(f"winner on dev: {self.winner}")
        if self.test is None:
            lines.append("test split not scored (budget): the winner's dev κ is not a result")
        elif self.test_comparison is None:
            lines.append(f"the base prompt won on dev; its test κ {k:.3f} (CI {lo:.3f} to "
                         f"{hi:.3f})")
        else:
            lines.append(f"on test: {self.test_comparison}")
        lines.append(f"sent {self.spent['requests']} requests, cost {_usd(self.spent['cost'])}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        from maev_kit.agreement.internal import finite_float

        k, lo, hi = self.test_kappa()
        base = self.test_kappa(self.base)
        cmp = self.test_comparison
        return {
            "winner": self.winner, "base": self.base, "dry_run": self.dry_run,
            "test": None if self.test is None else {
                "winner_kappa": finite_float(k), "winner_kappa_low": finite_float(lo),
                "winner_kappa_high": finite_float(hi),
                "base_kappa": finite_float(base[0]), "base_kappa_low": finite_float(base[1]),
                "base_kappa_high": finite_float(base[2]),
                "delta_kappa": finite_float(self.delta),
                "delta_low": None if cmp is None else finite_float(cmp.delta_low),
                "delta_high": None if cmp is None else finite_float(cmp.delta_high),
                "p_value": None if cmp is None else finite_float(cmp.p_value),
                "mcnemar_p": None if cmp is None else finite_float(cmp.mcnemar_p),
                "n_items": None if cmp is None else cmp.n_items},
            "candidates": [{c: finite_float(v) if not isinstance(v, (list, str)) else v
                            for c, v in r.items()}
                           for r in self.candidates.to_dict("records")],
            "estimate": self.estimate, "spent": self.spent,
            "budget": {"max_requests": self.budget.max_requests,
                       "max_cost": self.budget.max_cost},
            "labeled_set": self.labeled_set, "splits": self.splits,
            "winner_prompt": (getattr(self.templates.get(self.winner), "text", None)
                              if self.winner else None)}

    def save(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write ``candidates.csv``, ``alignment.json``, the winner's prompt
        (``winner_prompt.txt``) and its ``judge_card.json`` (when test was scored) into
        ``out_dir``; returns the paths written."""
        from maev_kit.internal import check_output, write_stream, write_text

        out = Path(out_dir)
        for name in ("candidates.csv", "alignment.json", "winner_prompt.txt"):
            # a file there that holds a person's work is never replaced
            check_output(out / name, "calibration", "--out", force=True)
        out.mkdir(parents=True, exist_ok=True)
        written = [out / "candidates.csv", out / "alignment.json"]
        frame = self.candidates.copy()
        frame["example_ids"] = [" ".join(x) for x in frame["example_ids"]]
        write_stream(written[0], lambda f: frame.to_csv(f, index=False))
        write_text(written[1], json.dumps(self.to_dict(), indent=2, default=str))
        text = getattr(self.templates.get(self.winner), "text", None) if self.winner else None
        if text:
            written.append(out / "winner_prompt.txt")
            write_text(written[-1], text if text.endswith("\n") else text + "\n")
        if self.test is not None and self.winner is not None:
            written.append(out / "judge_card.json")
            self.card().save(written[-1])
        return written


def _candidates_frame(cands: Sequence[_Candidate]) -> pd.DataFrame:
    """The ``candidates`` table of the result, one row per candidate in the order tried."""
    rows = []
    for c in cands:
        stats = getattr(c.run, "stats", None) or {}
        rows.append({
            "candidate": c.key, "model": c.model, "prompt": c.template.name,
            "prompt_sha256": c.template.sha256, "source": c.source,
            "examples": c.examples, "strategy": c.strategy, "status": c.status,
            "dev_kappa": c.dev.get("kappa", math.nan),
            "dev_kappa_low": c.dev.get("kappa_low", math.nan),
            "dev_kappa_high": c.dev.get("kappa_high", math.nan),
            "dev_items": c.dev.get("n_items", math.nan),
            "requests": stats.get("requests", 0 if c.run is None else math.nan),
            "cache_hits": stats.get("cache_hits", 0),
            "tokens": stats.get("tokens", 0),
            "cost": stats.get("cost", 0.0) if c.run is not None else 0.0,
            "est_requests": c.est.requests, "est_cost": c.est.cost,
            "example_ids": list(getattr(c.judge, "example_ids", []) or []),
            "note": c.note})
    return pd.DataFrame(rows, columns=CANDIDATE_COLUMNS)


@dataclass(frozen=True)
class _Report:
    """The parts of an :class:`AlignmentResult` fixed before anything is sent."""

    base: str  # the base candidate's key
    estimate: dict[str, Any]
    budget: Budget
    labeled_set: dict[str, Any]
    splits: dict[str, Any]

    def result(self, cands: Sequence[_Candidate], spent: dict[str, Any], *,
               winner: str | None = None, dev: CalibrationResult | None = None,
               test: CalibrationResult | None = None, cmp: PromptComparison | None = None,
               dry_run: bool = False) -> AlignmentResult:
        """The result, with the candidates as they stand now."""
        return AlignmentResult(_candidates_frame(cands), winner, self.base, dev, test, cmp,
                               self.estimate, spent, self.budget, dry_run,
                               {c.key: c.template for c in cands},
                               {c.key: c.judge for c in cands}, self.labeled_set, self.splits)

    def dry_run(self, cands: Sequence[_Candidate]) -> AlignmentResult:
        """The result of a dry run: every candidate marked not run, nothing spent."""
        for c in cands:
            c.status = "not run: dry run"
        return self.result(cands, {"requests": 0, "cost": 0.0}, dry_run=True)
