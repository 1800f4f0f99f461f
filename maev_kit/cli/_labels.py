"""``maev labels``: where each label of a labeled set stands, and re-attaching set-aside ones.

``maev labels SET`` lists the labels per status — attached to an item (counted), skip, set aside
(the item is gone: its fact was rejected in review or removed; with the reason) — and
``maev labels reattach SET OLD_ID NEW_ID`` moves the set-aside labels of ``OLD_ID`` to the item
``NEW_ID`` by appending lines to ``labels.jsonl`` (the file is append-only: nothing is
rewritten, the old lines stay).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from maev_kit.errors import InputError

__all__ = ["labels_command"]

SHOWN = 200


class _ListByDefault(click.Group):
    """A group whose first argument, when it is no subcommand, is the set to list."""

    def resolve_command(self, ctx: click.Context, args: list[str]) -> Any:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["list", *args]
        return super().resolve_command(ctx, args)


@click.group("labels", cls=_ListByDefault, invoke_without_command=False,
             context_settings={"help_option_names": ["-h", "--help"]})
def labels_command() -> None:
    """Labels of a labeled set per status; re-attach set-aside labels.

    \b
    maev labels SET                         attached / skip / set aside (and why)
    maev labels reattach SET OLD_ID NEW_ID  move set-aside labels to another item
    """


def _load(set_path: str) -> Any:
    from maev_kit.datasets import load_labeled_set

    if Path(set_path).is_file():
        raise InputError(f"{set_path}: is a file; give a labeled-set folder (manifest.json, "
                         "traces.jsonl, expectations.jsonl, labels.jsonl)")
    return load_labeled_set(set_path)


@labels_command.command("list")
@click.argument("set_path", metavar="SET")
@click.option("--all", "show_all", is_flag=True,
              help="Also list every attached label (default: counts only).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_command(set_path: str, show_all: bool, as_json: bool) -> None:
    """List the labels of SET per status: attached, skip, set aside (with the reason)."""
    from maev_kit.labels._attach import label_status

    ls = _load(set_path)
    st = label_status(ls)
    counts = st.counts()
    attached = [r for r in st.attached.values() if r.label != "skip"]
    per_label = Counter(r.label for r in attached)
    per_annotator = Counter(r.annotator for r in attached)
    aside = sorted(st.set_aside.values(), key=lambda s: (s.line or 0))
    if as_json:
        click.echo(json.dumps({
            "labeled_set": ls.name, "counts": counts, "attached_per_label": dict(per_label),
            "attached_per_annotator": dict(per_annotator), "set_aside_reasons": st.reasons(),
            "set_aside": [{"item_id": s.item_id, "annotator": s.record.annotator,
                           "label": s.record.label, "line": s.line, "reason": s.reason,
                           "reattached_to": st.reattached.get((s.item_id, s.record.annotator))}
                          for s in aside],
            "attached": ([{"item_id": r.item_id, "annotator": r.annotator, "label": r.label}
                          for r in attached] if show_all else None)}, indent=2,
            ensure_ascii=False))
        return
    click.echo(f"{ls.name}: {counts['attached']} label(s) attached to {len(ls.items)} items "
               f"({', '.join(f'{a} {n}' for a, n in per_annotator.items()) or 'no annotator'})"
               f", {counts['skip']} skip, {counts['set_aside']} set aside")
    if per_label:
        click.echo("attached: " + ", ".join(f"{lab} {per_label[lab]}" for lab in
                                            ("retained", "lost", "contradicted")))
    if show_all:
        for r in sorted(attached, key=lambda r: (r.item_id, r.annotator)):
            click.echo(f"  {r.item_id}  {r.annotator}  {r.label}")
    if not aside:
        if not attached:
            click.echo(f"no human labels yet: label with maev_kit.widgets.Labeler(ls.items, "
                       f"maev_kit.labels.LabelStore('{set_path}/labels.jsonl'), "
                       "annotator='<your name>') in a notebook")
        return
    click.echo(f"set aside (not counted; their item is gone), {len(aside)}:")
    for s in aside[:SHOWN]:
        moved = st.reattached.get((s.item_id, s.record.annotator))
        then = f" — re-attached to {moved}" if moved else ""
        click.echo(f"  line {s.line}: {s.item_id}  {s.record.annotator}  {s.record.label}  "
                   f"— {s.reason}{then}")
    if len(aside) > SHOWN:
        click.echo(f"  … and {len(aside) - SHOWN} more (--json lists all)")
    if any((s.item_id, s.record.annotator) not in st.reattached for s in aside):
        click.echo(f"re-attach one to another item: maev labels reattach {set_path} OLD_ID "
                   "NEW_ID (appends lines; nothing is rewritten)")


@labels_command.command("reattach")
@click.argument("set_path", metavar="SET")
@click.argument("old_id", metavar="OLD_ID")
@click.argument("new_id", metavar="NEW_ID")
@click.option("--annotator", "annotators", multiple=True,
              help="Only this annotator's label (repeatable; default: every annotator's).")
def reattach_command(set_path: str, old_id: str, new_id: str,
                     annotators: tuple[str, ...]) -> None:
    """Re-attach the set-aside labels of OLD_ID to the item NEW_ID of SET.

    Appends one line per annotator to SET/labels.jsonl (label and source kept, the note says
    where it came from); the old lines stay. Refused when NEW_ID is no item of SET or an
    annotator already gave NEW_ID another label (never overwritten).
    """
    from maev_kit.datasets import bundled_set_path
    from maev_kit.labels._attach import reattach_labels

    if not Path(set_path).exists():
        try:
            bundled_set_path(set_path)
        except InputError:
            pass
        else:
            raise InputError(f"{set_path} is a set bundled with maev-kit: copy its folder and "
                             "re-attach labels in the copy")
    ls = _load(set_path)
    written = reattach_labels(ls, old_id, new_id, annotators=list(annotators) or None)
    if not written:
        click.echo(f"nothing to write: {new_id} already holds the same label(s)")
        return
    for r in written:
        click.echo(f"re-attached: {old_id} → {new_id}  {r.annotator}  {r.label}")
    click.echo(f"written: {len(written)} line(s) appended to {Path(set_path) / 'labels.jsonl'}")
