"""The seam of :mod:`maev_kit.runner` for the other packages of maev_kit: the reply cache file and
backend resolution that the prompt alignment and the fact proposer reuse.

Another package of maev_kit uses ``runner`` through ``maev_kit.runner`` (the user API) or through
this module, never through a private module of it (tests/package/test_private_names.py). Not part
of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.runner._cache import CACHE_FILENAME
from maev_kit.runner._requests import open_cache, resolve_backend

__all__ = ["CACHE_FILENAME", "open_cache", "resolve_backend"]
