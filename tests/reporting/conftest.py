"""Fixtures for the report tests."""

from __future__ import annotations

import pytest

from ._factories import FakeCalibration, make_calibration, make_evaluation
from maev_kit.evaluation import EvaluationResult


@pytest.fixture
def evaluation() -> EvaluationResult:
    return make_evaluation()


@pytest.fixture
def calibration() -> FakeCalibration:
    return make_calibration()
