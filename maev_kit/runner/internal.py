"""The seam of :mod:`maev_kit.runner` for the other packages of maev_kit (not part of the user
API): the reply cache file and backend resolution that the prompt alignment and the fact proposer
reuse, ``BaseRun`` (what a criterion's run shares with :class:`~maev_kit.runner.JudgeRun`), and
how a run opens its window of requests in flight (``opening``).
"""

from __future__ import annotations

from maev_kit.runner._cache import CACHE_FILENAME
from maev_kit.runner._requests import open_cache, opening, resolve_backend
from maev_kit.runner._run import BaseRun

__all__ = ["CACHE_FILENAME", "BaseRun", "open_cache", "opening", "resolve_backend"]
