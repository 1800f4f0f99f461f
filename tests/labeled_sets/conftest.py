"""Fixtures for the bundled labeled sets (labeled_sets/support_desk, labeled_sets/snli_calibration)."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from maev_kit.expectations import ConversationExpectations, load_expectations
from maev_kit.labels._records import LabelRecord, read_label_file
from maev_kit.retention import RetentionItem, build_retention_items
from maev_kit.traces import MultiAgentTrace, load_traces

SETS_DIR = Path(__file__).resolve().parents[2] / "labeled_sets"
SET_NAMES = ("support_desk", "snli_calibration")


@dataclass
class LoadedSet:
    path: Path
    manifest: dict[str, Any]
    readme: str
    traces: list[MultiAgentTrace]
    expectations: dict[str, ConversationExpectations]
    items: list[RetentionItem]
    labels: list[LabelRecord]


def load_set(name: str) -> LoadedSet:
    path = SETS_DIR / name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a TraceWarning would mean a sloppy trace
        traces = load_traces(path / "traces.jsonl")
    expectations = load_expectations(path / "expectations.jsonl")
    items = build_retention_items(traces, expectations)
    lf = read_label_file(path / "labels.jsonl")
    assert not lf.problems and lf.torn_last_line is None, lf.problems[:3]
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    readme = (path / "README.md").read_text(encoding="utf-8")
    return LoadedSet(path, manifest, readme, traces, expectations, items, lf.records)


_CACHE: dict[str, LoadedSet] = {}


@pytest.fixture(scope="session", params=SET_NAMES)
def labeled_set(request: pytest.FixtureRequest) -> LoadedSet:
    if request.param not in _CACHE:
        _CACHE[request.param] = load_set(request.param)
    return _CACHE[request.param]


@pytest.fixture(scope="session")
def support_desk() -> LoadedSet:
    if "support_desk" not in _CACHE:
        _CACHE["support_desk"] = load_set("support_desk")
    return _CACHE["support_desk"]


@pytest.fixture(scope="session")
def snli() -> LoadedSet:
    if "snli_calibration" not in _CACHE:
        _CACHE["snli_calibration"] = load_set("snli_calibration")
    return _CACHE["snli_calibration"]
