"""The seam of :mod:`maev_kit.scale` for the other packages of maev_kit (not part of the user API):
the URI helpers and the any-format reader the CLI shares with scale.
"""

from __future__ import annotations

from maev_kit.scale._fs import is_uri, shown_uri
from maev_kit.scale._read import read_any

__all__ = ["is_uri", "read_any", "shown_uri"]
