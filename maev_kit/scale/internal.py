"""The seam of :mod:`maev_kit.scale` for the other packages of maev_kit: the URI helpers and the
any-format reader the CLI shares with scale.

Another package of maev_kit uses ``scale`` through ``maev_kit.scale`` (the user API) or through
this module, never through a private module of it (tests/package/test_private_names.py). Not part
of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.scale._fs import is_uri, shown_uri
from maev_kit.scale._read import read_any

__all__ = ["is_uri", "read_any", "shown_uri"]
