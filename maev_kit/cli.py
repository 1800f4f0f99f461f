"""The ``maev`` command: a thin shell over the library.

Exit codes: 0 ok, 1 the run failed, 2 bad input (one readable message, never a traceback).
Subcommands load their modules only when run, so ``maev --help`` stays fast.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from maev_kit import __version__
from maev_kit.errors import InputError, MaevError

# command name -> "module:attribute" of a click command, imported when the command is used
_LAZY_COMMANDS: dict[str, str] = {
    "validate": "maev_kit.cli:validate",
    "import": "maev_kit.traces.importers._cli:import_command",
    "serve-fake": "maev_kit.testing._cli:serve_fake",
    "demo": "maev_kit._cli_main:demo",
    "calibrate": "maev_kit.calibration._cli:calibrate_command",
    "score": "maev_kit._cli_main:score",
    "agree": "maev_kit._cli_main:agree",
    "report": "maev_kit._cli_main:report_command",
}

_HELP = {
    "validate": "Check trace files or labeled-set folders; list every problem.",
    "import": "Convert a framework's trace export to maev-kit JSONL.",
    "serve-fake": "Serve a local OpenAI-compatible endpoint for offline tests.",
    "demo": "The main job, offline: calibrate, score and report on the bundled set.",
    "calibrate": "Compare judges and prompt variants against human labels.",
    "score": "Score every conversation of a labeled set or trace file.",
    "agree": "Agreement statistics between annotators (and a judge run).",
    "report": "Write the self-contained HTML report.",
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
    """maev-kit: evaluate how the agents of a multi-agent LLM system coordinate."""


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--json", "as_json", is_flag=True, help="Print a JSON report instead of text.")
@click.option("--quiet", "-q", is_flag=True, help="Do not print warnings.")
def validate(paths: tuple[str, ...], as_json: bool, quiet: bool) -> None:
    """Check trace files (JSONL) or labeled-set folders.

    Prints one summary line per valid path; otherwise every problem as
    ``file:line › field: message`` and exits 2.
    """
    from maev_kit.datasets import validate_path

    reports = [validate_path(p)[0] for p in paths]
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


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``maev`` console script."""
    try:
        return cli.main(args=argv, prog_name="maev", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except InputError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(2)
    except MaevError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as e:
        click.echo(f"error: {e.strerror}: {e.filename}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted: finished work is kept (cached); rerun to continue", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
