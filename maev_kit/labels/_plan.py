"""The session plan: which annotator labels which item, with an overlap labeled twice.

:func:`plan_session` gives every item to one annotator and an ``overlap`` share of the items
to two (the items the human ceiling and α/AC1 are computed on), with balanced counts (no
annotator has more than one item more than another, for the overlap items and for all items)
and the same plan for the same inputs and seed. ``session_plan.json`` keeps it
(docs/team-sessions.md); an existing plan is never replaced.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError
from maev_kit.internal import OverwriteRefused, display_name
from maev_kit.labels._records import LabelRecord, check_annotator, latest_labels

__all__ = ["PLAN_FILE", "PLAN_FORMAT", "PLAN_SCHEMA_VERSION", "SessionPlan",
           "annotator_labels", "load_session_plan", "plan_session"]

#: The plan's file name inside a labeled set.
PLAN_FILE = "session_plan.json"
#: The ``format`` field of ``session_plan.json``.
PLAN_FORMAT = "maev-session-plan"
#: The ``schema_version`` this version of the kit writes and reads.
PLAN_SCHEMA_VERSION = 1
#: Sources of label lines that are no annotator's own label (a dataset's gold, a settled
#: label): left out of queues, progress, disagreements and agreement across annotators.
NOT_ANNOTATOR_SOURCES = ("gold", "adjudicated")


def _records_of(labels: Any) -> list[LabelRecord]:
    """Label records from a LabelStore, a path / URL, or a list of LabelRecords."""
    if isinstance(labels, (str, os.PathLike)):
        from maev_kit.labels._store import LabelStore

        labels = LabelStore(labels)
    if hasattr(labels, "records") and callable(labels.records):
        return list(labels.records())
    if isinstance(labels, Iterable) and not isinstance(labels, (str, bytes, Mapping)):
        out = list(labels)
        for i, r in enumerate(out):
            if not isinstance(r, LabelRecord):
                raise TypeError(f"`labels[{i}]` must be a LabelRecord, got {type(r).__name__}")
        return out
    raise TypeError("expected a LabelStore, a labels.jsonl path, a store URL or a list of "
                    f"LabelRecords; got {type(labels).__name__}")


def annotator_labels(labels: Any) -> dict[tuple[str, str], LabelRecord]:
    """Each annotator's own latest label per ``(item_id, annotator)``.

    Adjudicated and gold lines are left out *before* the latest is taken (so an adjudicator
    who also labeled keeps their own label); ``skip`` (and undo) counts as no label.
    """
    own = [r for r in _records_of(labels) if r.source not in NOT_ANNOTATOR_SOURCES]
    return latest_labels(own)


def _check_names(values: Any, what: str) -> list[str]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"`{what}` must be a list of strings, got {type(values).__name__}")
    out = list(values)
    for v in out:
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"`{what}` must hold non-blank strings, got {v!r}")
    if "annotators" in what:
        for v in out:
            check_annotator(v, f"`{what}`:")
    seen: set[str] = set()
    for v in out:
        if v in seen:
            raise ValueError(f"`{what}` lists {v!r} twice")
        seen.add(v)
    if not out:
        raise ValueError(f"`{what}` is empty")
    return out


@dataclass(frozen=True)
class SessionPlan:
    """Who labels what. Build with :func:`plan_session`, read with :meth:`load`.

    ``assignments`` maps each item id to its annotators (one, or two for an overlap item),
    in the plan's seeded labeling order.
    """

    assignments: dict[str, tuple[str, ...]]
    annotators: tuple[str, ...]
    overlap: float
    seed: int
    created_at: str = ""
    schema_version: int = field(default=PLAN_SCHEMA_VERSION)

    @property
    def item_ids(self) -> list[str]:
        """Every planned item, in the labeling order."""
        return list(self.assignments)

    def queue(self, annotator: str) -> list[str]:
        """The item ids ``annotator`` labels, in the plan's order (``order=`` of a Labeler)."""
        if annotator not in self.annotators:
            raise KeyError(f"{annotator!r} is not an annotator of this plan "
                           f"({', '.join(self.annotators)})")
        return [iid for iid, anns in self.assignments.items() if annotator in anns]

    def annotators_of(self, item_id: str) -> tuple[str, ...]:
        """The annotators an item is assigned to (empty when it is not in the plan)."""
        return self.assignments.get(item_id, ())

    def overlap_items(self) -> list[str]:
        """Items labeled by two annotators."""
        return [iid for iid, anns in self.assignments.items() if len(anns) > 1]

    def counts(self) -> dict[str, int]:
        """Items assigned per annotator."""
        return {a: len(self.queue(a)) for a in self.annotators}

    def progress(self, store: Any) -> dict[str, dict[str, int]]:
        """Per annotator: ``assigned``, ``labeled`` (a label other than skip), ``left``.

        Reads ``store`` fresh (a LabelStore, a path, a URL or LabelRecords); only the
        annotator's own labels on their own queue count.
        """
        latest = annotator_labels(store)
        out: dict[str, dict[str, int]] = {}
        for a in self.annotators:
            q = self.queue(a)
            done = sum(1 for iid in q if (iid, a) in latest)
            out[a] = {"assigned": len(q), "labeled": done, "left": len(q) - done}
        return out

    # ------------------------------------------------------------ file
    def to_dict(self) -> dict[str, Any]:
        return {"format": PLAN_FORMAT, "schema_version": PLAN_SCHEMA_VERSION,
                "created_at": self.created_at, "seed": self.seed, "overlap": self.overlap,
                "annotators": list(self.annotators),
                "items": [{"item_id": iid, "annotators": list(anns)}
                          for iid, anns in self.assignments.items()]}

    @classmethod
    def from_dict(cls, d: Any, *, name: str = "session plan") -> SessionPlan:
        """Check and read the content of ``session_plan.json``; :class:`InputError` if bad."""
        if not isinstance(d, Mapping) or d.get("format") != PLAN_FORMAT:
            raise InputError(f"{name}: not a session plan (no \"format\": \"{PLAN_FORMAT}\")")
        version = d.get("schema_version")
        if not isinstance(version, int) or version < 1:
            raise InputError(f"{name}: `schema_version` must be a positive integer")
        if version > PLAN_SCHEMA_VERSION:
            raise InputError(f"{name}: schema_version {version} is newer than this maev-kit "
                             f"reads ({PLAN_SCHEMA_VERSION}); upgrade maev-kit")
        try:
            annotators = tuple(_check_names(d.get("annotators"), "annotators"))
            rows = d.get("items")
            if not isinstance(rows, list):
                raise ValueError("`items` must be a list")
            assignments: dict[str, tuple[str, ...]] = {}
            for i, row in enumerate(rows):
                if not isinstance(row, Mapping):
                    raise ValueError(f"`items[{i}]` must be an object")
                iid, anns = row.get("item_id"), row.get("annotators")
                if not isinstance(iid, str) or not iid.strip() or iid in assignments:
                    raise ValueError(f"`items[{i}].item_id` is blank, not a string or repeated")
                names = _check_names(anns, f"items[{i}].annotators")
                if len(names) > 2 or not set(names) <= set(annotators):
                    raise ValueError(f"`items[{i}].annotators` must be one or two of the "
                                     "plan's annotators")
                assignments[iid] = tuple(names)
            overlap, seed = d.get("overlap"), d.get("seed")
            if not isinstance(overlap, (int, float)) or not 0 <= overlap <= 1 or \
                    not isinstance(seed, int) or isinstance(seed, bool):
                raise ValueError("`overlap` must be a number in [0, 1] and `seed` an integer")
        except (TypeError, ValueError) as e:
            raise InputError(f"{name}: {e}") from None
        return cls(assignments, annotators, float(overlap), seed,
                   str(d.get("created_at") or ""), version)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write ``session_plan.json`` (``path`` a folder, e.g. a labeled set, or the file).

        Never replaces an existing plan (:class:`~maev_kit._files.OverwriteRefused`): people
        may already be labeling by it. The file appears complete or not at all.
        """
        p = Path(path)
        if p.is_dir():
            p = p / PLAN_FILE
        text = json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, p)  # fails when the plan exists: never replaced, even in a race
            except FileExistsError:
                raise OverwriteRefused(f"{display_name(p)}: a session plan is already there; "
                                       "people may be labeling by it, so it is never replaced"
                                       " (delete it yourself to plan again)") from None
        finally:
            tmp.unlink(missing_ok=True)
        return p

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SessionPlan:
        """Read ``session_plan.json`` (``path`` the file or its folder)."""
        p = Path(path)
        if p.is_dir():
            p = p / PLAN_FILE
        if not p.is_file():
            raise InputError(f"{display_name(p)}: no session plan (make one with "
                             "`maev session plan SET --annotator A --annotator B`)")
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise InputError(f"{display_name(p)}: not valid JSON ({e.msg}, line {e.lineno})") \
                from None
        return cls.from_dict(d, name=display_name(p))


def load_session_plan(path: str | os.PathLike[str]) -> SessionPlan:
    """:meth:`SessionPlan.load`."""
    return SessionPlan.load(path)


def _assign(ids: Sequence[str], k: int, counts: dict[str, int], rng: random.Random,
            out: dict[str, tuple[str, ...]]) -> None:
    """Give each item the ``k`` annotators with the fewest items so far (random tie-break).

    Counts start within one of each other and stay so: the ``k`` lowest all move up by one.
    """
    for iid in ids:
        ranked = sorted(counts, key=lambda a: (counts[a], rng.random()))
        chosen = ranked[:k]
        for a in chosen:
            counts[a] += 1
        out[iid] = tuple(sorted(chosen, key=list(counts).index))


def plan_session(item_ids: Iterable[str], annotators: Sequence[str], *, overlap: float = 0.2,
                 seed: int = 0, first: Sequence[str] = ()) -> SessionPlan:
    """Assign items to annotators: each to one, an ``overlap`` share to two.

    ``first``: item ids served first, in this order (the random sample of ``maev sample``),
    in every annotator's queue; the others follow in random order.

    The overlap items (``round(overlap × n)``, half up) are drawn at random; every annotator
    gets as many overlap items and as many items in all as any other, within one. The same
    ids, annotators, overlap and seed give the same plan.

    >>> plan = plan_session([f"c1/h0/f{i}" for i in range(10)], ["ana", "ben"],
    ...                     overlap=0.2, seed=0)
    >>> plan.counts(), len(plan.overlap_items())
    ({'ana': 6, 'ben': 6}, 2)
    """
    ids = _check_names(item_ids, "item_ids")
    anns = _check_names(annotators, "annotators")
    if isinstance(overlap, bool) or not isinstance(overlap, (int, float)) or \
            not 0 <= overlap <= 1:
        raise ValueError(f"`overlap` must be a share in [0, 1], got {overlap!r}")
    if overlap > 0 and len(anns) < 2:
        raise ValueError("an `overlap` needs at least two annotators (or pass overlap=0)")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"`seed` must be an integer, got {seed!r}")
    rng = random.Random(seed)
    order = list(ids)
    rng.shuffle(order)
    n_overlap = math.floor(overlap * len(order) + 0.5)
    twice = set(order[:n_overlap])
    counts = {a: 0 for a in anns}
    assigned: dict[str, tuple[str, ...]] = {}
    _assign([i for i in order if i in twice], 2, counts, rng, assigned)
    _assign([i for i in order if i not in twice], 1, counts, rng, assigned)
    if first:
        lead = list(dict.fromkeys(i for i in first if i in assigned))
        order = lead + [i for i in order if i not in set(lead)]
    created = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    return SessionPlan({iid: assigned[iid] for iid in order}, tuple(anns), float(overlap),
                       seed, created)
