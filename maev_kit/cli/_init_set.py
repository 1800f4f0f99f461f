"""``maev init-set TRACES --facts offline --out DIR``: a labeled set from the user's traces."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from maev_kit.cli._notes import note

__all__ = ["init_set_command"]

#: Import warnings printed before the rest are counted.
_SHOWN_WARNINGS = 20


@click.command("init-set")
@click.argument("traces", metavar="TRACES...", nargs=-1, required=True)
@click.option("--out", "out", required=True, metavar="DIR",
              help="The labeled-set folder to create (missing or empty, unless --force); "
                   "missing folders above it are created too.")
@click.option("--facts", "facts", default="auto", show_default=True,
              metavar="auto|offline|context|A,B|FILE",
              help="Key facts: 'auto' (the context_passed values where a handoff passes "
                   "context, else the offline proposer's; as maev score), a proposer "
                   "(offline, context; several joined by commas), or a facts / expectations "
                   "JSONL file.")
@click.option("--name", default=None, help="The set's name (default: the folder's name).")
@click.option("--dev-fraction", "dev_fraction", type=click.FloatRange(0.0, 1.0), default=0.5,
              show_default=True, help="Share of conversations in the dev split; the rest "
                                      "are test.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the dev/test split.")
@click.option("--format", "format", default="auto", show_default=True,
              help="Format of TRACES: 'auto' (maev JSONL or a detected export) or an importer "
                   "format (openai-agents, otel, openinference, langgraph, autogen, crewai, "
                   "chat).")
@click.option("--force", is_flag=True, default=False,
              help="Re-create a labeled set already in DIR. Its labels and review decisions "
                   "are carried into the new set where their items still exist, and the whole "
                   "previous set is kept in DIR/.maev-backup/<timestamp>/.")
@click.option("--prefix-ids", is_flag=True, default=False,
              help="When several TRACES files hold the same conversation id, prefix each "
                   "clashing id with its file's name (a:c1, b:c1) instead of stopping.")
@click.option("--labels", "labels", type=click.Path(dir_okay=False), default=None,
              metavar="LABELS.jsonl",
              help="Labels to carry into the new set (those whose items are in it).")
def init_set_command(traces: tuple[str, ...], out: str, facts: str, name: str | None,
                     dev_fraction: float, seed: int, format: str, force: bool,
                     prefix_ids: bool, labels: str | None) -> None:
    """Create a labeled-set folder from TRACES: one or more trace JSONL files, framework
    exports or folders of them (conversation ids must not clash, see --prefix-ids).

    Proposes key facts for every handoff ('auto' by default, as maev score), splits the
    conversations into dev and test, and writes manifest.json, traces.jsonl,
    expectations.jsonl, facts.jsonl, an empty labels.jsonl and a README.md, ready for
    label → calibrate → score → report.
    """
    from maev_kit.facts.internal import SHOWN_NOTES, create_set

    made = create_set(list(traces), out, facts=facts, name=name, dev_fraction=dev_fraction,
                      seed=seed, overwrite=force, format=format, prefix_ids=prefix_ids,
                      labels=labels)
    src, fs, ls = made.source, made.facts, made.labeled_set
    for w in src.warnings[:_SHOWN_WARNINGS]:
        note(f"{w}")
    if len(src.warnings) > _SHOWN_WARNINGS:
        note(f"… and {len(src.warnings) - _SHOWN_WARNINGS} more")

    disk = _Written.read(out, ls)
    fmt = ("trace JSONL" if src.format == "maev" else "several formats"
           if src.format == "mixed" else f"{src.format} export")
    unmapped = f"; {len(src.warnings)} unmapped" if src.format != "maev" else ""
    click.echo(f"read {_n(disk.conversations, 'conversation')} with "
               f"{_n(disk.handoffs, 'handoff')} from {src.name} ({fmt}{unmapped})")
    kinds = ", ".join(f"{k} {n}" for k, n in disk.kinds.most_common())
    click.echo(f"facts: {_n(disk.key_facts, 'key fact')} {fs.how}"
               + (f" ({kinds})" if kinds else "") + f"; {_n(disk.items, 'retention item')} "
               "to label (a key fact is judged at its handoff and at each later one)")
    if fs.notes:
        n = len(fs.notes)
        click.echo(f"no fact proposed for {n} conversation{_s(n)} or handoff{_s(n)}:")
        for fact_note in fs.notes[:SHOWN_NOTES]:
            click.echo(f"  {fact_note}")
        if len(fs.notes) > SHOWN_NOTES:
            click.echo(f"  … and {len(fs.notes) - SHOWN_NOTES} more")
    if not disk.items:
        note("no key fact, so nothing to label or score for retention"
             + (" (see why above)" if fs.notes else ""))
    splits = ls.manifest.splits
    click.echo(f"splits (seed {seed}): dev {len(splits['dev'])}, test {len(splits['test'])}"
               + (f" ({made.split_note})" if made.split_note else ""))
    carried = made.kept is not None and made.kept.labels_carried
    detail = {
        "manifest.json": _n(len(ls.manifest.agents), "agent"),
        "traces.jsonl": f"{_n(disk.conversations, 'conversation')}, "
                        f"{_n(disk.handoffs, 'handoff')}",
        "expectations.jsonl": f"{_n(disk.key_facts, 'key fact')} in "
                              f"{_n(disk.fact_conversations, 'conversation')}: "
                              f"{_n(disk.items, 'retention item')}",
        "facts.jsonl": f"{_n(disk.proposed, 'proposed fact')}, for review",
        "labels.jsonl": f"{_n(disk.labels, 'label')} carried over" if carried
        else "empty: a person labels with the Labeler",
        "README.md": "where the data came from and what to do next",
    }
    click.echo(f"wrote {out.rstrip('/')}/")
    for f in made.files:
        click.echo(f"  {f}  ({detail[f]})")
    if made.kept is not None:
        if made.kept.reviews_carried:
            click.echo(f"  fact_reviews.jsonl  ({made.kept.reviews_carried} review decision"
                       f"{_s(made.kept.reviews_carried)} carried over)")
        backup = made.kept.backup
        shown = (f"{out.rstrip('/')}/{backup.relative_to(backup.parents[1])}/"
                 if backup is not None else None)
        for line in made.kept.lines(shown):
            click.echo(f"kept: {line}")
    click.echo(f"next: `maev sample {out} --n 40`, label the sample in a notebook (see "
               f"{out.rstrip('/')}/README.md), then `maev calibrate {out} --judge heuristic "
               f"--judge <model> --card judge_card.json`, `maev score {out} --split test`, "
               f"`maev check judge_card.json`, `maev report {out} --out report.html`")


def _s(n: int) -> str:
    return "" if n == 1 else "s"


def _n(n: int, word: str) -> str:
    """``1 handoff``, ``3 handoffs``."""
    return f"{n} {word}{_s(n)}"


@dataclass(frozen=True)
class _Written:
    """What the set holds, read back from its files on disk (the counts the command
    prints), never from what it meant to write."""

    conversations: int
    handoffs: int
    key_facts: int  #: key facts in expectations.jsonl
    fact_conversations: int  #: conversations with at least one key fact
    items: int  #: retention items: a key fact at each handoff it is judged at
    proposed: int  #: lines of facts.jsonl
    kinds: Counter[str]  #: the proposed facts by kind
    labels: int  #: lines of labels.jsonl

    @classmethod
    def read(cls, out: str, ls: Any) -> _Written:
        """The counts of the set at ``out``, loaded from disk as ``ls``."""
        from maev_kit.facts import load_facts

        folder = Path(out)
        proposed = load_facts(folder / "facts.jsonl") if (folder / "facts.jsonl").is_file() \
            else []
        labels = folder / "labels.jsonl"
        n_labels = sum(1 for ln in labels.read_text(encoding="utf-8").splitlines()
                       if ln.strip()) if labels.is_file() else 0
        with_facts = [e for e in ls.expectations.values() if e.key_facts]
        return cls(len(ls.traces), sum(len(t.handoffs) for t in ls.traces),
                   sum(len(e.key_facts) for e in with_facts), len(with_facts), len(ls.items),
                   len(proposed), Counter(f.kind for f in proposed), n_labels)
