"""``maev import FORMAT PATH -o OUT.jsonl``: a framework export → trace JSONL."""

from __future__ import annotations

from pathlib import Path

import click

from maev_kit.errors import InputError

__all__ = ["import_command"]


@click.command("import")
@click.argument("format", metavar="FORMAT")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", "output", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="Trace JSONL file to write.")
@click.option("--speaker-change-handoffs", is_flag=True, default=False,
              help="chat format: record each change of speaker as a handoff.")
@click.option("--user-name", default=None,
              help="chat format: the name that marks the user's messages (default 'user').")
def import_command(format: str, path: Path, output: Path, speaker_change_handoffs: bool,
                   user_name: str | None) -> None:
    """Import a framework export at PATH into maev trace JSONL.

    FORMAT is 'auto' (detect) or one of: openai-agents, otel, openinference, langgraph,
    autogen, crewai, chat. Prints a summary line, then every item the import could not map.
    """
    from maev_kit.traces import save_traces
    from maev_kit.traces.importers import FORMATS, import_traces

    if format != "auto" and format not in FORMATS:
        raise InputError(f"unknown FORMAT {format!r}; use 'auto' or one of: "
                         f"{', '.join(FORMATS)}")
    if output.resolve() == path.resolve():
        raise InputError("--output must not be the input file")
    options: dict[str, object] = {}
    if speaker_change_handoffs:
        options["speaker_change_handoffs"] = True
    if user_name is not None:
        options["user_name"] = user_name
    traces, issues = import_traces(path, format, **options)
    if not traces:
        raise InputError(f"{path.name}: the export holds no conversation to import")
    save_traces(traces, output)
    fmt = traces[0].metadata.get("source_format", format)
    n_agents = len({a for t in traces for a in t.agents_involved()})
    n_handoffs = sum(len(t.handoffs) for t in traces)
    n_turns = sum(len(t.turns) for t in traces)
    click.echo(f"imported {len(traces)} trace{'s' if len(traces) != 1 else ''} "
               f"({n_agents} agents, {n_turns} turns, {n_handoffs} handoffs) from {path.name} "
               f"as {fmt!r} → {output}; {len(issues)} unmapped item"
               f"{'s' if len(issues) != 1 else ''}")
    for issue in issues:
        click.echo(f"  warning: {issue}")
