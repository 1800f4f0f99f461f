"""The seam of :mod:`maev_kit.runner` for the other packages of maev_kit (not part of the user
API): the reply cache file and backend resolution that the prompt alignment and the fact proposer
reuse.
"""

from __future__ import annotations

from maev_kit.runner._cache import CACHE_FILENAME
from maev_kit.runner._requests import open_cache, resolve_backend
from maev_kit.runner._run import BaseRun

__all__ = ["CACHE_FILENAME", "BaseRun", "open_cache", "resolve_backend"]
