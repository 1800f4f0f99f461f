"""The seam of :mod:`maev_kit.backends` for the other packages of maev_kit (not part of the user
API): what the request engine (:mod:`maev_kit.runner`) and the fake server
(:mod:`maev_kit.testing`) share with the backends: the lazy litellm import, error classification,
the kit's event loops and the local-endpoint preflight.
"""

from __future__ import annotations

from maev_kit.backends._base import KIT_LOOPS, endpoint_of, kind_for_status, unavailable_error
from maev_kit.backends._litellm import import_litellm, release_litellm
from maev_kit.backends._local import PROBE_MESSAGES, PROBE_WORD, PreflightError, request_params

__all__ = ["KIT_LOOPS", "PROBE_MESSAGES", "PROBE_WORD", "PreflightError", "endpoint_of",
           "import_litellm", "kind_for_status", "release_litellm", "request_params",
           "unavailable_error"]
