"""Shared fixtures and options for the maev-kit test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factories import make_trace

# Never let a test reach litellm's network price map.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

REPO = Path(__file__).resolve().parent.parent
# Real human-labeled data and framework trace exports the tests read (see tests/data/README.md).
DATA = REPO / "tests" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--live", action="store_true", default=False,
                     help="run tests that call a real, paid LLM provider (needs an API key)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # A real small model on this machine (minutes): only when selected with -m local_llm.
    if "local_llm" not in (config.getoption("-m") or ""):
        skip_llm = pytest.mark.skip(reason="runs a real local model: select with -m local_llm")
        for item in items:
            if "local_llm" in item.keywords:
                item.add_marker(skip_llm)
    if config.getoption("--live"):
        return
    skip = pytest.mark.skip(reason="live provider test: pass --live and set an API key")
    for item in items:
        if "live" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: the SNLI subset, the framework trace samples and their licences."""
    return DATA


@pytest.fixture
def sample_trace():
    """A triage → billing → tech → billing conversation (a ping-pong at the end)."""
    return make_trace()


@pytest.fixture(scope="session")
def litellm_module():
    """litellm imported once per test session (the import takes seconds)."""
    from maev_kit.backends._litellm import import_litellm

    return import_litellm()
