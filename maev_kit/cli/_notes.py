"""Warnings where a person reads them: collected while a command runs, printed once each,
together, after the progress bars, in one "Notes" block on stderr (``--json`` output carries
them as a ``warnings`` list).

Every command reports what a person should know but that is not its result — a judge set
aside, items left out, a card below the gate's floor — with :func:`note`; Python warnings
raised while it runs land here too (``maev``'s ``main`` installs the collector).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

__all__ = ["collected", "collecting", "note"]

#: The notes of the running command (None: not collecting, a note prints at once).
_NOTES: list[str] | None = None


def note(text: str) -> None:
    """Keep ``text`` (one note per line of it) for the Notes block; the same note twice is
    printed once. Outside a command (no collector) it prints at once as ``warning: …``."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if _NOTES is None:
        click.echo("\n".join(f"warning: {ln}" for ln in lines), err=True)
        return
    for ln in lines:
        if ln.startswith("warning: "):
            ln = ln[len("warning: "):]
        if ln not in _NOTES:
            _NOTES.append(ln)


def collected() -> list[str]:
    """The notes so far (for a ``--json`` output's ``warnings`` list)."""
    return list(_NOTES or [])


@contextmanager
def collecting() -> Iterator[None]:
    """Collect notes while the block runs; print them at its end (also when it fails) as

    .. code-block:: text

        Notes:
        warning: judge tfidf-logreg is not ranked: …
    """
    global _NOTES
    outer, _NOTES = _NOTES, []
    try:
        yield
    finally:
        shown, _NOTES = _NOTES, outer
        if shown:
            click.echo("Notes:\n" + "\n".join(f"warning: {n}" for n in shown), err=True)
