"""``maev init-set TRACES --facts offline --out DIR``: a labeled set from the user's traces."""

from __future__ import annotations

from collections import Counter

import click

from maev_kit.cli._notes import note

__all__ = ["init_set_command"]

#: Import warnings printed before the rest are counted.
_SHOWN_WARNINGS = 20


@click.command("init-set")
@click.argument("traces", metavar="TRACES...", nargs=-1, required=True)
@click.option("--out", "out", required=True, metavar="DIR",
              help="The labeled-set folder to create (missing or empty, unless --force).")
@click.option("--facts", "facts", default="offline", show_default=True,
              metavar="offline|context|A,B|FILE",
              help="Proposer(s) of the key facts, or a facts / expectations JSONL file.")
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

    Proposes key facts for every handoff (offline rules by default), splits the
    conversations into dev and test, and writes manifest.json, traces.jsonl,
    expectations.jsonl, facts.jsonl, an empty labels.jsonl and a README.md, ready for
    label → calibrate → score → report.
    """
    from maev_kit.facts._labeled_set import SHOWN_NOTES, create_set

    made = create_set(list(traces), out, facts=facts, name=name, dev_fraction=dev_fraction,
                      seed=seed, overwrite=force, format=format, prefix_ids=prefix_ids,
                      labels=labels)
    src, fs, ls = made.source, made.facts, made.labeled_set
    for w in src.warnings[:_SHOWN_WARNINGS]:
        note(f"{w}")
    if len(src.warnings) > _SHOWN_WARNINGS:
        note(f"… and {len(src.warnings) - _SHOWN_WARNINGS} more")

    n_conv = len(ls.traces)
    n_h = sum(len(t.handoffs) for t in ls.traces)
    fmt = ("trace JSONL" if src.format == "maev" else "several formats"
           if src.format == "mixed" else f"{src.format} export")
    unmapped = f"; {len(src.warnings)} unmapped" if src.format != "maev" else ""
    click.echo(f"read {n_conv} conversation{_s(n_conv)} with {n_h} handoff{_s(n_h)} from "
               f"{src.name} ({fmt}{unmapped})")
    n_items = len(ls.items)
    if fs.expectations is None:
        kinds = Counter(f.kind for f in fs.facts)
        by_kind = ", ".join(f"{k} {n}" for k, n in kinds.most_common())
        click.echo(f"facts: {len(fs.facts)} {fs.how}" + (f" ({by_kind})" if by_kind else ""))
    else:
        click.echo(f"facts: {n_items} key fact{_s(n_items)} {fs.how}")
    if fs.notes:
        n = len(fs.notes)
        click.echo(f"no fact proposed for {n} conversation{_s(n)} or handoff{_s(n)}:")
        for fact_note in fs.notes[:SHOWN_NOTES]:
            click.echo(f"  {fact_note}")
        if len(fs.notes) > SHOWN_NOTES:
            click.echo(f"  … and {len(fs.notes) - SHOWN_NOTES} more")
    if not n_items:
        note("no key fact, so nothing to label or score for retention"
             + (" (see why above)" if fs.notes else ""))
    splits = ls.manifest.splits
    click.echo(f"splits (seed {seed}): dev {len(splits['dev'])}, test {len(splits['test'])}"
               + (f" ({made.split_note})" if made.split_note else ""))
    n_exp = len(ls.expectations)
    detail = {
        "manifest.json": f"{len(ls.manifest.agents)} agent{_s(len(ls.manifest.agents))}",
        "traces.jsonl": f"{n_conv} conversation{_s(n_conv)}",
        "expectations.jsonl": f"{n_items} key fact{_s(n_items)} in {n_exp} conversation"
                              f"{_s(n_exp)}",
        "facts.jsonl": f"{len(fs.facts)} proposed fact{_s(len(fs.facts))}, for review",
        "labels.jsonl": "empty: a person labels with the Labeler" if not made.kept
        or not made.kept.labels_carried else f"{made.kept.labels_carried} label"
                                             f"{_s(made.kept.labels_carried)} carried over",
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
