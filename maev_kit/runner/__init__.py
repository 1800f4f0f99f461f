"""Run judges over retention items: one request per handoff, bounded concurrency, retries with
backoff honouring ``Retry-After``, a persistent SQLite cache and cost/latency accounting.

:func:`run_requests` is the engine underneath, for any kind of request (the LLM fact proposer
runs on it too).

>>> from maev_kit.runner import run_judge, arun_judge, JudgeRun, score_information_retention
>>> from maev_kit.runner import run_requests, arun_requests, RequestRun, RequestTask
"""

from maev_kit.runner._article import score_information_retention
from maev_kit.runner._batch import BatchPendingError
from maev_kit.runner._cache import DEFAULT_CACHE_DIR, CachedReply, JudgeCache, cache_key
from maev_kit.runner._requests import RequestRun, RequestTask, arun_requests, run_requests
from maev_kit.runner._run import JudgeRun, arun_judge, run_judge

__all__ = [
    "BatchPendingError",
    "CachedReply",
    "DEFAULT_CACHE_DIR",
    "JudgeCache",
    "JudgeRun",
    "RequestRun",
    "RequestTask",
    "arun_judge",
    "arun_requests",
    "cache_key",
    "run_judge",
    "run_requests",
    "score_information_retention",
]
