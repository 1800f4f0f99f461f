"""The ``maev`` command: a thin shell over the library, and the only place that parses
arguments, prints and chooses exit codes.

Exit codes: 0 ok, 1 the run failed, 2 bad input (one readable message, never a traceback).
Subcommands load their modules only when run, so ``maev --help`` stays fast. One module per
command group: ``_main`` (the group, ``validate``, ``main``), ``_flags`` and ``_output`` (shared
flags and printing), ``_score`` (score, report, demo, agree), ``_calibrate``, ``_align``,
``_init_set``, ``_import``, ``_convert``, ``_serve_fake``, ``_labels``. No other package of
maev-kit imports this one.
"""

from maev_kit.cli._main import cli, main, validate

__all__ = ["cli", "main", "validate"]
