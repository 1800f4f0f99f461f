"""The random sample of judged items people label: what makes a corrected estimate valid.

Prediction-powered inference corrects a judge's rates with human labels only when the labeled
items are a random sample of the judged ones (or their inclusion probabilities are known). The
kit draws that sample itself and records it in ``label_sample.json``; items picked because the
judges disagreed, or labeled first because they looked interesting, are not a random sample.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError
from maev_kit.internal import OverwriteRefused, write_text

__all__ = ["SAMPLE_FILE", "LabelSample", "draw_label_sample", "population_hash"]

#: Where a labeled set keeps its sample.
SAMPLE_FILE = "label_sample.json"
#: The only design the kit draws (and the only one a corrected estimate accepts).
SIMPLE_RANDOM = "simple random sample without replacement"
_FORMAT = "maev-kit label sample"


def population_hash(item_ids: Iterable[str]) -> str:
    """SHA-256 of the sorted, distinct item ids: the population a sample was drawn from."""
    h = hashlib.sha256()
    for item in sorted(set(item_ids)):
        h.update(item.encode("utf-8") + b"\n")
    return h.hexdigest()


@dataclass(frozen=True)
class LabelSample:
    """A simple random sample of judged retention items, in the order to label them.

    Any first ``k`` items of ``item_ids`` are themselves a simple random sample of the
    population, so a sample labeled in order is usable before it is finished.

    Attributes
    ----------
    item_ids : the sampled items, in drawing order.
    population : how many items it was drawn from (N + n of a corrected estimate).
    population_hash : :func:`population_hash` of those items' ids.
    seed : the random seed (the same seed and population give the same sample).
    method : the design; always :data:`SIMPLE_RANDOM`.
    created_at : when it was drawn (UTC).
    """

    item_ids: tuple[str, ...]
    population: int
    population_hash: str
    seed: int
    method: str = SIMPLE_RANDOM
    created_at: str = ""
    #: How this sample was narrowed from the one drawn (empty: it is the one drawn).
    note: str = ""

    def within(self, population: Iterable[str], part: Iterable[str], *, what: str = "these"
               ) -> LabelSample | None:
        """This sample narrowed to ``part`` of the ``population`` it was drawn from: the sampled
        items in ``part``, in order — a simple random sample of ``part`` (given how many fall
        there). None when ``population`` is not the one drawn from or ``part`` is not in it.

        >>> ids = [f"c{i}/h0/f1" for i in range(10)]
        >>> s = draw_label_sample(ids, 4, seed=2)
        >>> half = s.within(ids, ids[:5], what="split dev")
        >>> half.population, all(i in ids[:5] for i in half.item_ids)
        (5, True)
        """
        pop, sub = set(population), set(part)
        if population_hash(pop) != self.population_hash or not sub <= pop:
            return None
        kept = tuple(i for i in self.item_ids if i in sub)
        note = (f"the {len(kept)} of the {len(self.item_ids)} sampled items that fall in "
                f"{what} ({len(sub)} of the {len(pop)} items the sample was drawn from): a "
                "random sample of them")
        return LabelSample(kept, len(sub), population_hash(sub), self.seed, self.method,
                           self.created_at, note)

    def to_dict(self) -> dict[str, Any]:
        return {"format": _FORMAT, "schema_version": 1, "method": self.method,
                "seed": self.seed, "population": self.population,
                "population_hash": self.population_hash, "created_at": self.created_at,
                "item_ids": list(self.item_ids)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the sample as JSON. An existing sample is never replaced (labels may already
        follow it): :class:`~maev_kit._files.OverwriteRefused`."""
        p = Path(path)
        if p.exists():
            raise OverwriteRefused(f"{os.fspath(p)}: {_what_is_there(p)}, so it is never "
                                   "replaced — write the new sample to another path")
        return write_text(p, json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> LabelSample:
        """Read a sample written by :meth:`save`; a file of another kind is an InputError
        naming the file and the field."""
        shown = os.fspath(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{shown}: no such label sample (draw one with `maev sample`)"
                             ) from None
        except ValueError as e:
            raise InputError(f"{shown}: not valid JSON ({e})") from None
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise InputError(f"{shown} › format: not a label sample (expected {_FORMAT!r})")
        if data.get("schema_version") != 1:
            raise InputError(f"{shown} › schema_version: {data.get('schema_version')!r} is not "
                             "a version this maev-kit reads (1)")
        ids = data.get("item_ids")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InputError(f"{shown} › item_ids: expected a list of item ids")
        for key in ("population", "seed"):
            if isinstance(data.get(key), bool) or not isinstance(data.get(key), int):
                raise InputError(f"{shown} › {key}: expected an integer")
        if data.get("method") != SIMPLE_RANDOM:
            raise InputError(f"{shown} › method: {data.get('method')!r}; a corrected estimate "
                             f"needs a {SIMPLE_RANDOM}")
        return cls(tuple(ids), data["population"], str(data.get("population_hash", "")),
                   data["seed"], data["method"], str(data.get("created_at", "")))


def _what_is_there(p: Path) -> str:
    """How the file a sample would replace is named: an earlier sample (labels may follow it),
    or what :func:`~maev_kit._files.sniff` recognises (a labels file, a person's work...)."""
    from maev_kit.internal import sniff

    try:
        earlier = json.loads(p.read_text(encoding="utf-8")).get("format") == _FORMAT
    except (OSError, ValueError, AttributeError):
        earlier = False
    if earlier:
        return "a label sample is already there; people may be labeling it"
    found = sniff(p)
    return f"holds {found.what if found else 'a file'}"


def draw_label_sample(item_ids: Sequence[str], n: int, *, seed: int = 0) -> LabelSample:
    """Draw ``n`` of ``item_ids`` uniformly at random, without replacement.

    Parameters
    ----------
    item_ids : the judged items (e.g. ``result.ledger["item_id"]`` of the labels' judge).
    n : how many to label; more than there are is an error.
    seed : the random seed.

    Examples
    --------
    >>> s = draw_label_sample([f"c{i}/h0/f1" for i in range(100)], 5, seed=1)
    >>> len(s.item_ids), s.population
    (5, 100)
    >>> s.item_ids == draw_label_sample([f"c{i}/h0/f1" for i in range(100)], 5, seed=1).item_ids
    True
    """
    ids = sorted(set(item_ids))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"`n` must be a positive integer, got {n!r}")
    if n > len(ids):
        raise InputError(f"`n` is {n} but there are only {len(ids)} judged items to draw from")
    drawn = random.Random(seed).sample(ids, n)
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return LabelSample(tuple(drawn), len(ids), population_hash(ids), seed, SIMPLE_RANDOM, now)
