"""The seam of :mod:`maev_kit.judges` for the other packages of maev_kit (not part of the user
API): the prompt registry and parsing helpers the calibration, criteria and fact-proposal code
reuses: default prompt, prompt loading and substitution, the JSON candidate of a reply, the example
strategies and what names a judge or a backend.
"""

from __future__ import annotations

from maev_kit.judges._heuristic import value_mentions
from maev_kit.judges._llm import STRATEGIES, Strategy
from maev_kit.judges._parse import json_candidate
from maev_kit.judges._prompts import (
    DEFAULT_PROMPT,
    SECTION,
    load_prompt,
    resolve_prompt,
    substitute,
)
from maev_kit.judges._registry import check_prompt, is_backend, is_judge
from maev_kit.judges._verdict import BaseVerdict

__all__ = ["DEFAULT_PROMPT", "SECTION", "STRATEGIES", "BaseVerdict", "Strategy", "check_prompt",
           "is_backend", "is_judge", "json_candidate", "load_prompt", "resolve_prompt",
           "substitute", "value_mentions"]
