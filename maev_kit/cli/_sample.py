"""``maev sample``: draw the random sample of retention items people label, the one a corrected
estimate (PPI++) accepts."""

from __future__ import annotations

from pathlib import Path

import click

from maev_kit.errors import InputError

__all__ = ["sample_command"]


@click.command("sample")
@click.argument("source", metavar="SOURCE")
@click.option("--n", "n", type=int, required=True,
              help="How many items to draw for people to label (40 is a good start; once some "
                   "are labeled, `maev score` prints the label budget: how many a target "
                   "interval width needs, docs/estimates.md).")
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--split", default=None, help="Draw from this split of a labeled set only.")
@click.option("--facts", default="auto", show_default=True,
              help="The key facts, as `maev score --facts` takes them (the items are the facts "
                   "at each handoff).")
@click.option("--expectations", type=click.Path(dir_okay=False), default=None,
              help="Expectations JSONL for a trace file.")
@click.option("--out", "out", type=click.Path(dir_okay=False), default=None,
              help="Where to write the sample (default: SET/label_sample.json for a labeled "
                   "set). An existing sample is never replaced. A missing folder is created.")
def sample_command(source: str, n: int, seed: int, split: str | None, facts: str,
                   expectations: str | None, out: str | None) -> None:
    """Draw N retention items of SOURCE at random for people to label.

    The corrected estimates of `maev score` and the report (PPI++) are valid only for labels
    on a random sample of the judged items; this draws it, in the order to label it, and
    records it (method, seed, population) so the estimate can check it.
    """
    from maev_kit.evaluation.stages import (
        build_retention_items,
        load_inputs,
        select_facts,
    )
    from maev_kit.labels import SAMPLE_FILE, LabelSample, draw_label_sample

    inputs = load_inputs(source, expectations=expectations, split=split)
    key_facts = select_facts(inputs.traces, inputs.expectations, facts)
    items = build_retention_items(inputs.traces, key_facts.expectations)
    if out is None:
        if inputs.labeled_set is None:
            raise InputError("--out is needed when SOURCE is not a labeled set (where should "
                             "the sample go?)")
        out = str(Path(inputs.labeled_set.path) / SAMPLE_FILE)
    sample = draw_label_sample([it.item_id for it in items], n, seed=seed)
    sample.save(out)
    written = LabelSample.load(out)  # the counts said are those of the file on disk
    click.echo(f"drew {len(written.item_ids)} of {written.population} items at random "
               f"(seed {seed}); label them in this order (any first k are a random sample)")
    click.echo(f"written: {out} ({len(written.item_ids)} items)")
