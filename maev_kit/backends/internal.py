"""The seam of :mod:`maev_kit.backends` for the other packages of maev_kit (not part of the user
API): what the request engine (:mod:`maev_kit.runner`) and the fake server
(:mod:`maev_kit.testing`) share with the backends: the lazy litellm import and its release,
error classification (``kind_for_status``, ``unavailable_error``), the kit's event loops, a
backend's address (``endpoint_of``), the request parameters a backend sends
(``request_params``), the system-message probe (``PROBE_MESSAGES``, ``PROBE_WORD``) and the
local-server preflight (``preflight``: the models served and the parallelism announced,
``VLLM_SLOTS``; ``PreflightError``).
"""

from __future__ import annotations

from maev_kit.backends._base import KIT_LOOPS, endpoint_of, kind_for_status, unavailable_error
from maev_kit.backends._litellm import import_litellm, release_litellm
from maev_kit.backends._local import (
    PROBE_MESSAGES,
    PROBE_WORD,
    VLLM_SLOTS,
    PreflightError,
    preflight,
    request_params,
)

__all__ = ["KIT_LOOPS", "PROBE_MESSAGES", "PROBE_WORD", "VLLM_SLOTS", "PreflightError",
           "endpoint_of", "import_litellm", "kind_for_status", "preflight", "release_litellm",
           "request_params", "unavailable_error"]
