"""Fixtures for the importer tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from importers.importer_samples import HAVE_SAMPLES, SAMPLES, SKIP_REASON


@pytest.fixture
def samples() -> Path:
    if not HAVE_SAMPLES:
        pytest.skip(SKIP_REASON)
    return SAMPLES


@pytest.fixture
def load_sample(samples: Path):
    def load(rel: str) -> Any:
        return json.loads((samples / rel).read_text(encoding="utf-8"))
    return load
