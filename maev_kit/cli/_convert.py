"""``maev convert``: traces between JSONL and Parquet, or from a framework export."""

from __future__ import annotations

from pathlib import Path

import click

from maev_kit.cli._notes import note

from maev_kit.errors import InputError
from maev_kit.scale.internal import read_any

_FORMATS = ("auto", "maev", "parquet", "openai-agents", "otel", "openinference", "langgraph",
            "autogen", "crewai", "chat")


@click.command("convert")
@click.argument("src", metavar="IN", type=click.Path())
@click.argument("dst", metavar="OUT", type=click.Path())
@click.option("--from", "fmt", type=click.Choice(_FORMATS), default="auto", show_default=True,
              help="What IN is: maev JSONL, Parquet or a framework export (auto: by suffix "
                   "and content).")
@click.option("--force", is_flag=True, default=False,
              help="Replace an OUT file that is not a trace file (never labels, review "
                   "decisions, expectations or a judge card).")
def convert_command(src: str, dst: str, fmt: str, force: bool) -> None:
    """Convert traces IN to OUT: JSONL <-> Parquet (by OUT's suffix), or a framework export to
    either. An OUT file is replaced only when it is a trace file (the command then says so);
    a missing folder of OUT is created."""
    from maev_kit.internal import check_output
    from maev_kit.traces import load_traces, save_traces

    if not dst.endswith((".jsonl", ".parquet")):
        raise InputError(f"{dst}: OUT must end in .jsonl or .parquet")
    if Path(src).resolve() == Path(dst).resolve():
        raise InputError("IN and OUT are the same file; give two paths")
    replacing = check_output(dst, "traces", "OUT", force=force)
    traces, warns = read_any(src, fmt)
    for w in warns[:10]:
        note(f"{w}")
    if len(warns) > 10:
        note(f"… and {len(warns) - 10} more")
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    save_traces(traces, dst)
    import warnings

    with warnings.catch_warnings():  # the findings were shown above
        warnings.simplefilter("ignore")
        written = load_traces(dst)  # the counts are of what is on disk
    n_h = sum(len(t.handoffs) for t in written)
    click.echo(f"{len(written)} trace{'s' if len(written) != 1 else ''} ({n_h} handoff"
               f"{'s' if n_h != 1 else ''}) written to {dst}")
    if replacing:
        click.echo(f"replaced: {dst} (the trace file there before)")
