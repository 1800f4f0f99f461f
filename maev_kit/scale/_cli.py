"""``maev convert`` and the Ray side of ``maev score --engine ray``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from maev_kit.errors import InputError

_FORMATS = ("auto", "maev", "parquet", "openai-agents", "otel", "openinference", "langgraph",
            "autogen", "crewai", "chat")


def _looks_like_maev_jsonl(path: Path) -> bool:
    """The first non-empty line is a maev-kit trace object (has ``conversation_id``)."""
    try:
        with path.open("rb") as f:
            for raw in f:
                if raw.strip():
                    value = json.loads(raw)
                    return isinstance(value, dict) and "conversation_id" in value
    except (OSError, ValueError):
        return False
    return False


def read_any(path: str | os.PathLike[str], fmt: str = "auto") -> tuple[list[Any], list[str]]:
    """Traces from maev JSONL, Parquet or a framework export; and the import's warnings."""
    from maev_kit.traces import load_traces

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if fmt == "parquet" or (fmt == "auto" and p.suffix == ".parquet"):
        return load_traces(p), []
    if fmt == "maev" or (fmt == "auto" and _looks_like_maev_jsonl(p)):
        return load_traces(p), []
    from maev_kit.traces.importers import import_traces

    result = import_traces(p, format=fmt)
    return list(result.traces), [str(w) for w in result.warnings]


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
    either. An OUT file is replaced only when it is a trace file (the command then says so)."""
    from maev_kit._files import check_output
    from maev_kit.traces import save_traces

    if not dst.endswith((".jsonl", ".parquet")):
        raise InputError(f"{dst}: OUT must end in .jsonl or .parquet")
    if Path(src).resolve() == Path(dst).resolve():
        raise InputError("IN and OUT are the same file; give two paths")
    replacing = check_output(dst, "traces", "OUT", force=force)
    traces, warns = read_any(src, fmt)
    for w in warns[:10]:
        click.echo(f"warning: {w}", err=True)
    if len(warns) > 10:
        click.echo(f"warning: … and {len(warns) - 10} more", err=True)
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    save_traces(traces, dst)
    click.echo(f"{len(traces)} traces written to {dst}")
    if replacing:
        click.echo(f"replaced: {dst} (the trace file there before)")


def score_on_ray(source: str, *, judge: Any, backend: Any, split: str | None,
                 address: str | None, output_dir: str | None, facts: Any = "auto",
                 **run_params: Any) -> Any:
    """``evaluate_dataset`` with the CLI's arguments (``facts``: ``--facts``, as the local
    engine takes it: a mode, proposers joined by commas, or a facts / expectations file)."""
    from maev_kit.scale import evaluate_dataset

    return evaluate_dataset(source, judge=judge, backend=backend, address=address,
                            output_dir=output_dir, facts=facts,
                            **({"split": split} if split else {}), **run_params)


def exit_on_failed_shards(result: Any) -> None:
    """List the shards that could not be read and exit 1 (the others were scored)."""
    failed = result.provenance.get("failed_shards") or []
    if not failed:
        return
    click.echo(f"{len(failed)} shard(s) could not be read and were left out:", err=True)
    for f in failed:
        click.echo(f"  {f}", err=True)
    click.get_current_context().exit(1)
