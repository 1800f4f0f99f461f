"""The seam of :mod:`maev_kit.facts` for the other packages of maev_kit: the key facts of a labeled
set and of a run without expectations, as evaluation, the CLI and scale read them.

Another package of maev_kit uses ``facts`` through ``maev_kit.facts`` (the user API) or through
this module, never through a private module of it (tests/package/test_private_names.py). Not part
of the user API: these names may change in any release.
"""

from __future__ import annotations

from maev_kit.facts._auto import auto_facts
from maev_kit.facts._labeled_set import (
    SHOWN_NOTES,
    check_handoff_index,
    create_set,
    read_facts_file,
    resolve_facts,
)

__all__ = ["SHOWN_NOTES", "auto_facts", "check_handoff_index", "create_set", "read_facts_file",
           "resolve_facts"]
