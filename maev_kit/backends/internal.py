"""The seam of :mod:`maev_kit.backends` for the other packages of maev_kit: what the request engine
(:mod:`maev_kit.runner`) and the fake server (:mod:`maev_kit.testing`) share with the backends: the
lazy litellm import, error classification, the kit's event loops and the local-endpoint preflight.

Another package of maev_kit uses ``backends`` through ``maev_kit.backends`` (the user API) or
through this module, never through a private module of it (tests/package/test_private_names.py).
Not part of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.backends._base import KIT_LOOPS, endpoint_of, kind_for_status, unavailable_error
from maev_kit.backends._litellm import import_litellm, release_litellm
from maev_kit.backends._local import PROBE_MESSAGES, PROBE_WORD, PreflightError, request_params

__all__ = ["KIT_LOOPS", "PROBE_MESSAGES", "PROBE_WORD", "PreflightError", "endpoint_of",
           "import_litellm", "kind_for_status", "release_litellm", "request_params",
           "unavailable_error"]
