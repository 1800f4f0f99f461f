"""Run judges over retention items: one request per handoff, bounded concurrency, retries with
backoff honouring ``Retry-After``, a persistent SQLite cache and cost/latency accounting.

>>> from maev_kit.runner import run_judge, arun_judge, JudgeRun, score_information_retention
"""

from maev_kit.runner._article import score_information_retention
from maev_kit.runner._batch import BatchPendingError
from maev_kit.runner._cache import DEFAULT_CACHE_DIR, JudgeCache, cache_key
from maev_kit.runner._run import JudgeRun, arun_judge, run_judge

__all__ = [
    "BatchPendingError",
    "DEFAULT_CACHE_DIR",
    "JudgeCache",
    "JudgeRun",
    "arun_judge",
    "cache_key",
    "run_judge",
    "score_information_retention",
]
