"""``maev import FORMAT PATH -o OUT.jsonl``: a framework export → trace JSONL."""

from __future__ import annotations

from pathlib import Path

import click

from maev_kit.cli._output import _output_file
from maev_kit.errors import InputError
from maev_kit.internal import NESTING_TOO_DEEP, check_output, output_line

__all__ = ["import_command"]


@click.command("import")
@click.argument("format", metavar="FORMAT")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Trace JSONL file to write. A missing folder is created.")
@click.option("--speaker-change-handoffs/--no-speaker-change-handoffs", default=None,
              help="chat format: record each change of speaking agent that no transfer tool "
                   "call announced as a handoff (the default), or only the transfer calls.")
@click.option("--user-name", default=None,
              help="chat format: the name that marks the user's messages (default 'user').")
@click.option("--handoff-type", "handoff_types", multiple=True, metavar="TYPE",
              help="openai-agents: a span type (otel: a gen_ai.operation.name) to read as a "
                   "handoff, for an export whose handoff spans are named otherwise. Repeat "
                   "for several.")
@click.option("--force", is_flag=True, default=False,
              help="Replace an OUTPUT file that is not a trace file (never labels, review "
                   "decisions, expectations or a judge card).")
def import_command(format: str, path: Path, output: Path, speaker_change_handoffs: bool | None,
                   user_name: str | None, handoff_types: tuple[str, ...], force: bool) -> None:
    """Import a framework export at PATH into maev trace JSONL.

    FORMAT is 'auto' (detect) or one of: openai-agents, otel, openinference, langgraph,
    autogen, crewai, chat. Prints a summary line, then every item the import could not map.
    An OUTPUT file is replaced only when it is a trace file (the command then says so).
    """
    from maev_kit.traces import load_traces, save_traces
    from maev_kit.traces.importers import FORMATS, import_traces

    if format != "auto" and format not in FORMATS:
        import difflib

        close = difflib.get_close_matches(format, ("auto", *FORMATS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"unknown FORMAT {format!r}; {hint}use 'auto' or one of: "
                         f"{', '.join(FORMATS)}")
    if output.resolve() == path.resolve():
        raise InputError("--output must not be the input file")
    _output_file(str(output), "--output")
    replacing = check_output(output, "traces", "--output", force=force)
    options: dict[str, object] = {}
    if handoff_types:
        options["handoff_type"] = list(handoff_types)
    if speaker_change_handoffs is not None:
        options["speaker_change_handoffs"] = speaker_change_handoffs
    if user_name is not None:
        options["user_name"] = user_name
    try:
        traces, issues = import_traces(path, format, **options)
    except RecursionError:
        raise InputError(f"{path}:{_deep_line(path)}: {NESTING_TOO_DEEP}") from None
    if not traces:
        raise InputError(f"{path.name}: the export holds no conversation to import")
    output.parent.mkdir(parents=True, exist_ok=True)  # a missing folder is created
    save_traces(traces, output)
    traces = load_traces(output)  # the counts are of what is on disk
    fmt = traces[0].metadata.get("source_format", format)
    n_agents = len({a for t in traces for a in t.agents_involved()})
    n_handoffs = sum(len(t.handoffs) for t in traces)
    n_turns = sum(len(t.turns) for t in traces)
    click.echo(f"imported {len(traces)} trace{'s' if len(traces) != 1 else ''} "
               f"({n_agents} agents, {n_turns} turns, {n_handoffs} handoffs) from {path.name} "
               f"as {fmt!r} → {output}; {len(issues)} unmapped item"
               f"{'s' if len(issues) != 1 else ''}")
    if replacing:
        click.echo(output_line(output, True))
    for issue in issues:
        click.echo(f"  warning: {issue}")


def _deep_line(path: Path, limit: int = 500) -> int:
    """The line where the JSON at ``path`` first nests deeper than ``limit`` (1 if unknown).

    >>> import tempfile, os
    >>> p = Path(tempfile.mkdtemp()) / "x.json"
    >>> _ = p.write_text('{"a": "[[[[",\\n "b": ' + "[" * 600)
    >>> _deep_line(p)
    2
    """
    depth, line, in_string, escaped = 0, 1, False, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for ch in iter(lambda: f.read(1), ""):
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch in "[{":
                depth += 1
                if depth > limit:
                    return line
            elif ch in "]}":
                depth -= 1
            if ch == "\n":
                line += 1
    return 1
