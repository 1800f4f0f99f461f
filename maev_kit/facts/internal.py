"""The seam of :mod:`maev_kit.facts` for the other packages of maev_kit (not part of the user API):
the key facts of a labeled set and of a run without expectations, as evaluation, the CLI and scale
read them.
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
