"""The ``maev`` group: its lazy command table, ``validate`` and ``main`` (errors → exit codes).

Exit codes: 0 ok, 1 the run failed, 2 bad input (one readable message, never a traceback).
Subcommands load their modules only when run, so ``maev --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import click

from maev_kit.errors import InputError, MaevError, ProblemsError
from maev_kit.internal import __version__

# command name -> "module:attribute" of a click command, imported when the command is used
_LAZY_COMMANDS: dict[str, str] = {
    "validate": "maev_kit.cli._main:validate",
    "import": "maev_kit.cli._import:import_command",
    "serve-fake": "maev_kit.cli._serve_fake:serve_fake",
    "demo": "maev_kit.cli._score:demo",
    "calibrate": "maev_kit.cli._calibrate:calibrate_command",
    "align": "maev_kit.cli._align:align_command",
    "check": "maev_kit.cli._check:check_command",
    "score": "maev_kit.cli._score:score",
    "agree": "maev_kit.cli._score:agree",
    "report": "maev_kit.cli._score:report_command",
    "init-set": "maev_kit.cli._init_set:init_set_command",
    "convert": "maev_kit.cli._convert:convert_command",
    "labels": "maev_kit.cli._labels:labels_command",
    "sample": "maev_kit.cli._sample:sample_command",
    "session": "maev_kit.cli._session:session_command",
}

_HELP = {
    "validate": "Check trace files, labeled-set or saved-result folders; list every problem.",
    "import": "Convert a framework's trace export to maev-kit JSONL.",
    "serve-fake": "Serve a local OpenAI-compatible endpoint for offline tests.",
    "demo": "The main job, offline: calibrate, score and report on the bundled set.",
    "calibrate": "Compare judges and prompt variants against human labels.",
    "align": "Search judge prompts on dev; test the winner once on test.",
    "check": "Drift gate: re-run a judge card's judge; exit 1 when agreement fell.",
    "score": "Score every conversation of a labeled set or trace file.",
    "agree": "Agreement statistics between annotators (and a judge run).",
    "report": "Write the self-contained HTML report.",
    "init-set": "Create a labeled set from your own traces and proposed key facts.",
    "convert": "Convert traces between JSONL and Parquet (or from a framework export).",
    "labels": "Labels per status (attached, set aside and why); re-attach set-aside labels.",
    "sample": "Draw the random sample of items people label (for corrected estimates).",
    "session": "Plan a team labeling session (who labels what); its progress, disagreements.",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_LAZY_COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = _LAZY_COMMANDS.get(name)
        if target is None:
            return None
        if name == "validate":
            return validate
        module, attr = target.split(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:  # a part not installed or not built
            @click.command(name=name, help=_HELP.get(name, ""))
            def unavailable() -> None:
                raise click.ClickException(f"`maev {name}` is not available: {e}")
            return unavailable

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, _HELP.get(n, "")) for n in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="maev")
def cli() -> None:
    """maev-kit: evaluate how the agents of a multi-agent LLM system coordinate.

    Every command that writes a file or folder creates a missing folder on the way; none
    replaces a person's work (labels, review decisions, expectations, judge cards).
    """


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report instead of text.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print warnings.")
def validate(paths: tuple[str, ...], as_json: bool, quiet: bool) -> None:
    """Check trace files (JSONL or Parquet), labeled-set folders or saved result folders
    (EvaluationResult.save: format, version, every table against its checksum).

    Prints one summary line per valid path; otherwise every problem as
    ``file:line › field: message`` and exits 2.
    """
    reports = [_validate_one(p) for p in paths]
    if as_json:
        click.echo(json.dumps([{"path": r.path, "ok": r.ok, "counts": r.counts,
                                "errors": [str(e) for e in r.errors],
                                "warnings": [str(w) for w in r.warnings]} for r in reports],
                              indent=2))
    else:
        for r in reports:
            for e in r.errors:
                click.echo(f"error: {e}", err=True)
            if not quiet:
                for w in r.warnings[:20]:
                    click.echo(f"warning: {w}", err=True)
                if len(r.warnings) > 20:
                    click.echo(f"warning: … and {len(r.warnings) - 20} more", err=True)
            click.echo(r.summary(), err=not r.ok)
    if not all(r.ok for r in reports):
        sys.exit(2)


def _validate_one(path: str) -> Any:
    """The validation report of one path: a saved result folder, or what validate_path reads
    (a trace JSONL or Parquet file, a labeled-set folder)."""
    from maev_kit.cli._inputs import is_saved_result, validate_saved_result
    from maev_kit.datasets import validate_path

    if is_saved_result(path):
        return validate_saved_result(path)
    return validate_path(path)[0]


@contextlib.contextmanager
def _clear_bars() -> Iterator[None]:
    """Progress bars are cleared when done while a command runs (the Notes block and results
    follow on a clean screen); the setting is put back after, so a caller's bars are its own."""
    before = os.environ.get("MAEV_CLEAR_BARS")
    os.environ["MAEV_CLEAR_BARS"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MAEV_CLEAR_BARS", None)
        else:
            os.environ["MAEV_CLEAR_BARS"] = before


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``maev`` console script.

    Every expected failure ends as one readable message on stderr, never a traceback: bad input
    (a file, a flag, a path) exits 2, a run that failed exits 1. Python warnings raised while a
    command runs print as ``warning: ...`` lines.
    """
    from maev_kit.cli._notes import collecting

    with _clear_bars(), warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            with collecting():
                return cli.main(args=argv, prog_name="maev", standalone_mode=False)
        except click.exceptions.Abort:
            _fail("aborted", 130)
        except click.UsageError as e:
            where = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
            _fail(f"error: {_one_line(e.format_message())}{where}", 2)
        except click.ClickException as e:
            _fail(f"error: {_one_line(e.format_message())}", e.exit_code)
        except ProblemsError as e:
            _fail(_problems_text(e), 2)
        except InputError as e:
            _fail(f"error: {e}", 2)
        except MaevError as e:
            _fail(f"error: {e}", 1)
        except OSError as e:
            _fail(f"error: {_os_error_text(e)}", 2)
        except UnicodeDecodeError as e:
            _fail(f"error: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
                  "save the file as UTF-8", 2)
        except RecursionError:
            _fail("error: input nested too deep to read (JSON arrays or objects nested hundreds "
                  "of levels)", 2)
        except KeyboardInterrupt:
            _fail("interrupted: finished work is kept (cached); rerun to continue", 130)
        except Exception as e:  # a bug: still one line, the traceback on request
            if os.environ.get("MAEV_DEBUG"):
                raise
            if _is_validation_error(e):  # a model's check that escaped its file's reader
                _fail(_validation_text(e), 2)
            _fail(f"error: internal error ({type(e).__name__}: {_one_line(str(e))}); this is "
                  "a bug in maev-kit: rerun with MAEV_DEBUG=1 for the traceback and report it",
                  1)


def _fail(message: str, code: int) -> None:
    click.echo(_for_people(message), err=True)
    sys.exit(code)


#: What the model layer (pydantic) adds for programmers: its error codes and documentation URLs.
_INTERNALS = re.compile(r"\s*\[type=[a-z_]+(?:, [^\]]*)?\]|\s*For further information visit "
                        r"https?://errors\.pydantic\.dev/\S*")


def _for_people(text: str) -> str:
    """``text`` without the model layer's error codes and URLs (never meant for people).

    >>> _for_people("x: Input should be a valid string [type=string_type, input_value=3, "
    ...             "input_type=int] For further information visit https://errors.pydantic.dev/2/v")
    'x: Input should be a valid string'
    """
    return _INTERNALS.sub("", text)


def _is_validation_error(e: BaseException) -> bool:
    return type(e).__name__ == "ValidationError" and type(e).__module__.startswith("pydantic")


def _validation_text(e: Any) -> str:
    """One ``error: field: message`` line per problem of a pydantic ValidationError."""
    from maev_kit.internal import pydantic_problems

    return "\n".join(f"error: {p.path or '(value)'}: {p.message}"
                      for p in pydantic_problems(e, "", None)[:50])


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _problems_text(e: ProblemsError) -> str:
    """One ``error: file:line › field: message`` line per problem (at most 50)."""
    shown = e.problems[:50]
    lines = [f"error: {p}" for p in shown]
    if len(e.problems) > len(shown):
        lines.append(f"error: … and {len(e.problems) - len(shown)} more problems")
    return "\n".join(lines)


_OS_HINTS: dict[type[OSError], str] = {
    IsADirectoryError: "is a folder; give a file path",
    NotADirectoryError: "a part of this path is a file, not a folder",
    FileNotFoundError: "no such file or folder",
    PermissionError: "permission denied",
    FileExistsError: "already exists",
}


def _os_error_text(e: OSError) -> str:
    """``path: reason`` for a file-system error, naming the path the user gave."""
    reason = next((hint for cls, hint in _OS_HINTS.items() if isinstance(e, cls)), None)
    detail = e.strerror or (str(e) if e.args else "")
    if reason is None:
        reason = detail or type(e).__name__
    elif detail and detail.lower() not in reason.lower() and e.strerror is None:
        reason = detail  # a message written for the user, e.g. by Report.save
    if e.filename is None:
        return reason
    where = os.fsdecode(e.filename)
    if e.filename2 is not None:
        where += f" → {os.fsdecode(e.filename2)}"
    return f"{where}: {reason}"


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Keep a warning for the command's Notes block (printed once, after the progress bars;
    no source line, no file name); each line of a multi-line warning (a list of findings) is
    a note of its own."""
    from maev_kit.cli._notes import note

    note(str(message))

