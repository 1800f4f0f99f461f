"""``maev session``: plan who labels what, and follow a team labeling session.

``maev session plan SET --annotator ana --annotator ben [--overlap 0.2] [--seed 0]`` writes
``SET/session_plan.json`` (never replacing one); ``maev session status SET [--json]`` prints
each annotator's progress, the items the annotators disagree on, how many are settled, and
α / AC1 across annotators on the items labeled twice (docs/team-sessions.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from maev_kit.cli._output import _echo_json
from maev_kit.errors import InputError

__all__ = ["session_command"]

SHOWN = 20


@click.group("session", context_settings={"help_option_names": ["-h", "--help"]})
def session_command() -> None:
    """Plan a team labeling session; follow its progress and disagreements.

    \b
    maev session plan SET --annotator ana --annotator ben   write SET/session_plan.json
    maev session status SET                                 progress, disagreements, α/AC1
    """


def _set_folder(set_path: str) -> Path:
    p = Path(set_path)
    if not p.is_dir():
        raise InputError(f"{set_path}: not a labeled-set folder")
    return p


@session_command.command("plan")
@click.argument("set_path", metavar="SET")
@click.option("--annotator", "annotators", multiple=True, required=True,
              help="An annotator's name (repeat for each).")
@click.option("--overlap", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Share of the items labeled by two annotators (for agreement).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the plan.")
def plan_command(set_path: str, annotators: tuple[str, ...], overlap: float, seed: int) -> None:
    """Assign the items of SET to annotators; write SET/session_plan.json.

    The items of SET's random sample (label_sample.json, from `maev sample`) come first in
    every queue, in the sample's order."""
    from maev_kit.datasets import load_labeled_set
    from maev_kit.labels import SAMPLE_FILE, LabelSample, plan_session

    folder = _set_folder(set_path)
    items = load_labeled_set(folder).items
    sample = (LabelSample.load(folder / SAMPLE_FILE) if (folder / SAMPLE_FILE).is_file()
              else None)
    try:
        plan = plan_session([it.item_id for it in items], list(annotators), overlap=overlap,
                            seed=seed, first=sample.item_ids if sample else ())
    except ValueError as e:
        raise InputError(str(e)) from None
    out = plan.save(folder)
    click.echo(f"wrote {out}: {len(plan.item_ids)} items, {len(plan.overlap_items())} labeled "
               f"twice (overlap {overlap:g}, seed {seed})")
    if sample is not None:
        n = sum(1 for i in sample.item_ids if i in plan.assignments)
        click.echo(f"the {n} items of the random sample ({SAMPLE_FILE}) come first in every "
                   "queue, in its order")
    for ann, n in plan.counts().items():
        click.echo(f"  {ann}: {n} items")


def _agreement(plan: Any, latest: dict[tuple[str, str], Any]) -> dict[str, Any] | None:
    """α and AC1 across annotators on the overlap items both annotators labeled."""
    from maev_kit.agreement import multi_rater_agreement

    both = [iid for iid in plan.overlap_items()
            if all((iid, a) in latest for a in plan.annotators_of(iid))]
    if len(both) < 2:
        return None
    ratings = {a: [latest[(iid, a)].label if (iid, a) in latest else None for iid in both]
               for a in plan.annotators}
    ratings = {a: v for a, v in ratings.items() if any(x is not None for x in v)}
    res = multi_rater_agreement(ratings)
    out: dict[str, Any] = {"items": len(both)}
    for key, coef in (("krippendorff_alpha", res.krippendorff_alpha), ("gwet_ac1", res.gwet_ac)):
        lo, hi = coef.ci() if coef.n_items >= 2 and math.isfinite(coef.se) else (math.nan,
                                                                                  math.nan)
        out[key] = {"value": coef.value, "ci_low": lo, "ci_high": hi}
    return out


def status_data(folder: Path, store_arg: str | None) -> dict[str, Any]:
    """What ``maev session status`` reports, as plain data."""
    from maev_kit.labels import (
        LabelStore,
        SessionPlan,
        annotator_labels,
        disagreements,
        settled_labels,
    )

    plan = SessionPlan.load(folder)
    with LabelStore(store_arg or str(folder / "labels.jsonl")) as store:
        records = store.records()
        location = store.location
    found = disagreements(records, plan)
    settled = settled_labels(records)
    return {"plan": str(folder / "session_plan.json"), "store": location,
            "items": len(plan.item_ids), "overlap_items": len(plan.overlap_items()),
            "progress": plan.progress(records),
            "disagreements": [{"item_id": d.item_id, "labels": d.labels,
                               "settled": settled.get(d.item_id)} for d in found],
            "settled": sum(1 for d in found if d.item_id in settled),
            "agreement": _agreement(plan, annotator_labels(records))}


def _fmt(c: dict[str, Any]) -> str:
    ci = "" if math.isnan(c["ci_low"]) else f" [{c['ci_low']:.2f}, {c['ci_high']:.2f}]"
    return f"{c['value']:.2f}{ci}"


@session_command.command("status")
@click.argument("set_path", metavar="SET")
@click.option("--store", "store_arg", default=None,
              help="The label store (a path or a sqlite:// / postgresql:// URL); default "
                   "SET/labels.jsonl.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status_command(set_path: str, store_arg: str | None, as_json: bool) -> None:
    """Progress per annotator, disagreements, settled labels and α/AC1 of SET's session."""
    data = status_data(_set_folder(set_path), store_arg)
    if as_json:
        _echo_json(data)
        return
    click.echo(f"{data['items']} items, {data['overlap_items']} labeled twice · labels: "
               f"{data['store']}")
    for ann, p in data["progress"].items():
        click.echo(f"  {ann:<16} {p['labeled']:>5} / {p['assigned']:<5} labeled  "
                   f"{p['left']} left")
    dis = data["disagreements"]
    click.echo(f"disagreements: {len(dis)} · settled: {data['settled']} · to settle: "
               f"{len(dis) - data['settled']}")
    for d in [d for d in dis if d["settled"] is None][:SHOWN]:
        labs = ", ".join(f"{a} {lab}" for a, lab in d["labels"].items())
        click.echo(f"  {d['item_id']}: {labs}")
    ag = data["agreement"]
    if ag is None:
        click.echo("agreement: n/a (fewer than 2 items labeled by both of their annotators)")
    else:
        click.echo(f"agreement on {ag['items']} items labeled twice: "
                   f"α {_fmt(ag['krippendorff_alpha'])} · AC1 {_fmt(ag['gwet_ac1'])} (95% CI)")
