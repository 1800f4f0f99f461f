"""Labels whose item is gone: set aside (never counted, never deleted) and re-attached.

A label names its item by id, ``<conversation_id>/h<k>/<fact_id>``. When the fact it judged
is retired — rejected in review, removed from ``expectations.jsonl``, no longer judged at that
handoff — the label points at no retention item of the set. It is then *set aside*: left out
of every statistic, reported with the reason, and kept in the append-only labels file, where a
person can re-attach it to another item (:func:`reattach_labels`, ``maev labels reattach``),
which appends new lines and rewrites nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError
from maev_kit.labels._records import LabelRecord, latest_labels
from maev_kit.labels._reviews import read_decisions

__all__ = ["LabelStatus", "SetAsideLabel", "label_status", "reason_kind", "reattach_labels",
           "set_aside_reason", "split_item_id"]

#: Prefix of the note of a label line written by :func:`reattach_labels`.
REATTACHED = "re-attached from "

_ITEM_ID = re.compile(r"^(?P<cid>.+)/h(?P<k>\d+)/(?P<fid>[^/]+)$")


def split_item_id(item_id: str) -> tuple[str, int, str] | None:
    """``(conversation_id, handoff_index, fact_id)`` of an item id, or None when it is not one.

    >>> split_item_id("sd-001/h2/f1_account"), split_item_id("sd-001-f1")
    (('sd-001', 2, 'f1_account'), None)
    """
    m = _ITEM_ID.match(item_id)
    return (m["cid"], int(m["k"]), m["fid"]) if m else None


@dataclass(frozen=True)
class SetAsideLabel:
    """One label line set aside: its ``record``, ``line`` in the labels file, ``reason`` (in
    words) and its ``kind`` (:func:`reason_kind`)."""

    record: LabelRecord
    line: int | None
    reason: str

    @property
    def kind(self) -> str:
        return reason_kind(self.reason)

    @property
    def item_id(self) -> str:
        return self.record.item_id


def set_aside_reason(item_id: str, *, traces: Mapping[str, Any],
                     expectations: Mapping[str, Any], item_ids: Iterable[str] = (),
                     rejected: Mapping[tuple[str, str], Sequence[str]] | None = None) -> str:
    """Why ``item_id`` names no retention item of a set, in words.

    ``traces`` and ``expectations`` are by conversation id, ``item_ids`` the set's item ids,
    ``rejected`` maps ``(conversation_id, fact_id)`` to the reviewers who rejected that fact.

    >>> set_aside_reason("c9/h0/f1", traces={}, expectations={})
    "conversation 'c9' is not in traces.jsonl"
    """
    parts = split_item_id(item_id)
    if parts is None:
        return "not an item id (<conversation_id>/h<handoff_index>/<fact_id>)"
    cid, k, fid = parts
    trace = traces.get(cid)
    if trace is None:
        return f"conversation {cid!r} is not in traces.jsonl"
    n = len(trace.handoffs)
    if k >= n:
        return f"conversation {cid!r} has {n} handoff(s): there is no handoff {k}"
    who = (rejected or {}).get((cid, fid))
    if who:
        return f"fact {fid!r} was rejected in review (by {', '.join(sorted(set(who)))})"
    exp = expectations.get(cid)
    listed = [f for f in (getattr(exp, "key_facts", None) or [])]
    if not any(f.fact_id == fid for f in listed):
        return (f"conversation {cid!r} has no key fact {fid!r} any more (removed from or "
                "renamed in expectations.jsonl)")
    hops = sorted({p[1] for i in item_ids
                   if (p := split_item_id(i)) is not None and p[0] == cid and p[2] == fid})
    at = ", ".join(f"h{h}" for h in hops) or "no handoff"
    return f"fact {fid!r} is not judged at handoff {k} (it is judged at {at})"


#: (start of a reason, its kind), as :func:`set_aside_reason` words them.
_KINDS = (("not an item id", "not an item id"),
          ("conversation ", "conversation not in traces.jsonl"),
          ("fact ", "fact rejected in review"),
          ("no key fact", "key fact removed from expectations.jsonl"))


def reason_kind(reason: str) -> str:
    """The kind of a set-aside reason, to count reasons of one kind together.

    >>> reason_kind("fact 'f1' was rejected in review (by ana)")
    'fact rejected in review'
    """
    if " has " in reason and "handoff(s)" in reason:
        return "no such handoff"
    if "is not judged at handoff" in reason:
        return "fact not judged at that handoff"
    if "has no key fact" in reason:
        return "key fact removed from expectations.jsonl"
    for start, kind in _KINDS:
        if reason.startswith(start):
            return kind
    return reason


def review_rejections(folder: Path) -> dict[tuple[str, str], list[str]]:
    """``(conversation_id, fact_id)`` → reviewers whose latest decision on it is ``reject``,
    from ``fact_reviews.jsonl`` in ``folder`` (empty when there is none or it cannot be
    read: a reason is a courtesy, never a reason to fail)."""
    path = folder / "fact_reviews.jsonl"
    if not path.is_file():
        return {}
    try:
        records, _ = read_decisions(path)
    except Exception:  # noqa: BLE001 - a malformed decisions file only loses the reason
        return {}
    latest: dict[tuple[str, int, str, str], str] = {}
    for r in records:
        latest[(r.conversation_id, r.handoff_index, r.fact_id, r.reviewer)] = r.decision
    out: dict[tuple[str, str], list[str]] = {}
    for (cid, _, fid, who), decision in latest.items():
        if decision == "reject":
            out.setdefault((cid, fid), []).append(who)
    return out


@dataclass(frozen=True)
class LabelStatus:
    """Where each label of a labeled set stands.

    ``attached``: the latest label per ``(item_id, annotator)`` on an item of the set
    (``skip`` included); ``set_aside``: the latest label per ``(item_id, annotator)`` on an id
    that is no item of the set, with its reason; ``reattached``: ``(old item id, annotator)``
    → the item id a later line re-attached it to.
    """

    attached: dict[tuple[str, str], LabelRecord]
    set_aside: dict[tuple[str, str], SetAsideLabel]
    reattached: dict[tuple[str, str], str]

    def counts(self) -> dict[str, int]:
        """``attached`` (not skip), ``skip``, ``set_aside``, ``reattached``."""
        return {"attached": sum(r.label != "skip" for r in self.attached.values()),
                "skip": sum(r.label == "skip" for r in self.attached.values()),
                "set_aside": len(self.set_aside), "reattached": len(self.reattached)}

    def reasons(self) -> dict[str, int]:
        """Set-aside labels (not yet re-attached) per kind of reason (:func:`reason_kind`),
        most common first."""
        out: dict[str, int] = {}
        for key, s in self.set_aside.items():
            if key not in self.reattached:
                out[s.kind] = out.get(s.kind, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def label_status(labeled_set: Any) -> LabelStatus:
    """The :class:`LabelStatus` of a loaded labeled set (its labels file as it is now)."""
    attached = latest_labels(list(labeled_set.label_records), include_skip=True)
    set_aside: dict[tuple[str, str], SetAsideLabel] = {}
    for s in labeled_set.set_aside_labels:
        set_aside[(s.record.item_id, s.record.annotator)] = s  # the latest line wins
    reattached: dict[tuple[str, str], str] = {}
    for (iid, ann), r in attached.items():
        if r.note.startswith(REATTACHED):
            old = r.note[len(REATTACHED):].split(";")[0].strip()
            if (old, ann) in set_aside:
                reattached[(old, ann)] = iid
    return LabelStatus(attached, set_aside, reattached)


def reattach_labels(labeled_set: Any, old_id: str, new_id: str, *,
                    annotators: Sequence[str] | None = None) -> list[LabelRecord]:
    """Re-attach the set-aside labels of ``old_id`` to the item ``new_id`` by appending one
    line per annotator to the set's ``labels.jsonl`` (nothing is rewritten: the old lines
    stay, set aside). Each new line keeps the label and source, and its note starts with
    ``re-attached from <old_id>``. Returns the lines written.

    Raises
    ------
    InputError
        When ``new_id`` is not an item of the set, ``old_id`` has no set-aside label (of the
        ``annotators`` given), or an annotator already labeled ``new_id`` differently (their
        label is never overwritten: nothing is written then).
    """
    from maev_kit.labels._store import LabelStore, _now

    item_ids = {it.item_id for it in labeled_set.items}
    if new_id not in item_ids:
        raise InputError(f"{new_id!r} is not an item of {labeled_set.name}: re-attach to the id "
                         "of an item (`maev labels SET` lists the set's labeled items)")
    status = label_status(labeled_set)
    if old_id in item_ids:
        raise InputError(f"{old_id!r} is an item of {labeled_set.name}: its labels are "
                         "attached, there is nothing to re-attach")
    chosen = [s for (iid, ann), s in status.set_aside.items() if iid == old_id
              and (annotators is None or ann in annotators)]
    if not chosen:
        who = f" by {', '.join(annotators)}" if annotators else ""
        raise InputError(f"no set-aside label{who} on {old_id!r} (`maev labels SET` lists "
                         "the set-aside labels)")
    out, conflicts = [], []
    for s in chosen:
        r = s.record
        if r.label == "skip":
            continue
        there = status.attached.get((new_id, r.annotator))
        if there is not None and there.label != "skip":
            if there.label != r.label:
                conflicts.append(f"{r.annotator} labeled {new_id!r} {there.label!r}, the "
                                 f"set-aside label is {r.label!r}")
            continue  # the same label is there already: nothing to add
        note = REATTACHED + old_id + (f"; {r.note}" if r.note else "")
        out.append(LabelRecord(item_id=new_id, annotator=r.annotator, label=r.label,
                               note=note, created_at=_now(), source=r.source))
    if conflicts:
        raise InputError("nothing re-attached: " + "; ".join(conflicts) + " (a person's "
                         "label is never overwritten; re-attach the other annotators with "
                         "--annotator)")
    if out:
        LabelStore(Path(labeled_set.path) / "labels.jsonl").extend(out)
    return out
