"""A criterion's verdicts and runs hold what a retention judge's do, in the same order: one
definition (``BaseVerdict``, ``BaseRun``) serves both, and the public constructors keep their
positional order."""

from __future__ import annotations

import dataclasses

import pytest

from maev_kit.criteria import CriterionRun, CriterionVerdict
from maev_kit.judges import Verdict
from maev_kit.judges.internal import BaseVerdict
from maev_kit.runner import JudgeRun
from maev_kit.runner.internal import BaseRun

VERDICT_FIELDS = ["item_id", "label", "rationale", "evidence", "error", "raw", "cause"]
RUN_FIELDS = ["verdicts", "judge_name", "judge_version", "model", "stats", "items"]


def _names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_both_verdicts_hold_the_same_fields_in_the_same_order():
    assert _names(CriterionVerdict) == VERDICT_FIELDS
    assert _names(Verdict) == [*VERDICT_FIELDS, "span"]
    got = CriterionVerdict("c/t0", None, "why", ("e",), "timed out", "raw reply", "timeout")
    assert (got.error, got.raw, got.cause, got.ok) == ("timed out", "raw reply", "timeout", False)
    assert isinstance(got, BaseVerdict) and isinstance(Verdict("a", "lost"), BaseVerdict)
    assert CriterionVerdict("c/t0", "yes").ok


def test_each_verdict_keeps_its_own_rules():
    with pytest.raises(ValueError, match="give a label or an error"):
        CriterionVerdict("c/t0", None)
    assert CriterionVerdict("c/t0", "any label of the criterion").label  # no retention labels
    with pytest.raises(ValueError, match="must be one of"):
        Verdict("a", "yes")
    assert Verdict("a", "lost", evidence=["x"]).evidence == ("x",)  # a list becomes a tuple
    assert CriterionVerdict("a", "yes") != Verdict("a", "lost")  # never equal across kinds
    with pytest.raises(dataclasses.FrozenInstanceError):
        CriterionVerdict("a", "yes").label = "no"  # type: ignore[misc]


def test_both_runs_hold_the_same_fields_and_the_items_stay_out_of_repr():
    assert _names(CriterionRun) == _names(JudgeRun) == RUN_FIELDS
    run = CriterionRun([CriterionVerdict("c/t0", "yes")], "j", "1", None, {"errors": 0})
    assert isinstance(run, BaseRun) and run.items == () and run.labels() == {"c/t0": "yes"}
    assert "items=" not in repr(run) and repr(run).startswith("CriterionRun(verdicts=")
    assert repr(JudgeRun([], "j", "1", None, {})).startswith("JudgeRun(j@1")
