"""``maev labels``: where each label of a labeled set stands, and re-attaching set-aside ones.

``maev labels SET`` lists the labels per status — attached to an item (counted), skip, set aside
(the item is gone: its fact was rejected in review or removed; with the reason) — and
``maev labels reattach SET OLD_ID NEW_ID`` moves the set-aside labels of ``OLD_ID`` to the item
``NEW_ID`` by appending lines to ``labels.jsonl`` (the file is append-only: nothing is
rewritten, the old lines stay).

``maev labels export STORE_URL --to SET_OR_FILE`` and ``maev labels import FILE_OR_SET --to
STORE_URL`` keep a database store (``sqlite:///…``, ``postgresql://…``) and a set's
``labels.jsonl`` in sync, so the set can still be versioned in git: both run
:func:`~maev_kit.labels.copy_labels`, which appends only the lines the destination lacks
(idempotent; a labels file is never rewritten). The URL is shown with its password hidden.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from maev_kit.cli._output import _output_file
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
    maev labels export STORE_URL --to SET   database → the set's labels.jsonl (appends)
    maev labels import SET --to STORE_URL   labels.jsonl → the database (appends)
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
    from maev_kit.labels import label_status

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
    from maev_kit.labels import reattach_labels

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


# --------------------------------------------------------------------------- sync
def _store_url(url: str, what: str) -> str:
    """``url`` when it is a label-store URL, else exit 2 (the value shown only without ``@``)."""
    from maev_kit.labels.internal import is_store_url

    if not is_store_url(url):
        shown = "" if "@" in url else f" {url!r}"
        raise InputError(f"{what}{shown}: not a label store URL; give sqlite:///labels.db, "
                         "sqlite:////absolute/labels.db or postgresql://user@host/db "
                         "(docs/label-stores.md)")
    return url


def _refuse_bundled(given: str) -> None:
    from maev_kit.datasets import bundled_set_path

    try:
        bundled_set_path(given)
    except InputError:
        return
    raise InputError(f"{given} is a set bundled with maev-kit: copy its folder and export into "
                     "the copy")


def _labels_file(given: str, *, writing: bool) -> Path:
    """The labels file named by ``given``: a labeled-set folder (its ``labels.jsonl``) or a
    ``.jsonl`` file; reading also takes the name of a bundled set."""
    from maev_kit.labels.internal import is_store_url

    if is_store_url(given):
        raise InputError("give a labels file or a labeled-set folder here, not a store URL "
                         "(export: maev labels export STORE_URL --to SET)")
    p = Path(given)
    if p.is_dir():
        if not (p / "manifest.json").is_file():
            raise InputError(f"{given}: a folder without manifest.json is no labeled set; give "
                             "a set folder or a labels .jsonl file")
        return p / "labels.jsonl"
    if p.suffix.lower() != ".jsonl":
        if not writing and not p.exists():
            from maev_kit.datasets import bundled_set_path

            return Path(bundled_set_path(given)) / "labels.jsonl"  # exits 2 when unknown
        raise InputError(f"{given}: give a labeled-set folder or a labels file ending in .jsonl")
    if writing and not p.exists():
        _refuse_bundled(given)
    if not writing and not p.is_file():
        raise InputError(f"{given}: no such labels file")
    return p


def _echo_copy(copied: int, src: Any, dst: Any, total: int, extra: int) -> None:
    click.echo(f"{copied} label line(s) copied from {src.location} to {dst.location}"
               + (" (already in sync)" if copied == 0 else ""))
    note = f"; {extra} line(s) it held that the source lacks were kept" if extra else ""
    click.echo(f"{dst.location} now holds {total} line(s){note}")


@labels_command.command("export")
@click.argument("store_url", metavar="STORE_URL")
@click.option("--to", "to", required=True, metavar="SET_OR_FILE",
              help="A labeled-set folder (its labels.jsonl) or a labels .jsonl file "
                   "(a missing folder is created).")
def export_command(store_url: str, to: str) -> None:
    """Export the labels of the database STORE_URL into a set's labels.jsonl.

    Appends only the lines the file lacks (compared by content, repeats counted): running it
    again writes nothing, and a file holding other labels keeps them — nothing is rewritten.
    """
    from maev_kit.labels import LabelStore, copy_labels

    src = LabelStore(_store_url(store_url, "STORE_URL"))
    if not Path(to).exists() and Path(to).suffix.lower() != ".jsonl":
        _refuse_bundled(to)
    dst_path = _labels_file(to, writing=True)
    if not dst_path.exists():
        _output_file(str(dst_path), "--to", (".jsonl",))  # a missing folder is created
    db = src.database
    if db is not None and db.kind == "sqlite" and not Path(getattr(db, "path", "")).is_file():
        raise InputError(f"STORE_URL {src.location}: no SQLite label store there (nothing to "
                         "export; a read never creates one)")
    with src:
        dst = LabelStore(dst_path)
        copied = copy_labels(src, dst)
        total, n_src = len(dst), len(src)
    _echo_copy(copied, src, dst, total, total - n_src)


@labels_command.command("import")
@click.argument("source", metavar="FILE_OR_SET")
@click.option("--to", "to", required=True, metavar="STORE_URL",
              help="The database store: sqlite:///labels.db or postgresql://user@host/db.")
def import_command(source: str, to: str) -> None:
    """Import a labels file (or a set's labels.jsonl) into the database STORE_URL.

    Appends only the lines the store lacks: running it again stores nothing new.
    """
    from maev_kit.labels import LabelStore, copy_labels

    url = _store_url(to, "--to")
    src = LabelStore(_labels_file(source, writing=False))
    with LabelStore(url) as dst:
        copied = copy_labels(src, dst)
        total, n_src = len(dst), len(src)
    _echo_copy(copied, src, dst, total, total - n_src)
