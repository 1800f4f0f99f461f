"""The report's Provenance section: when and with what the report and its evaluation were
made — versions, the judge, the labeled set and the judge card, each hash named by what it
covers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maev_kit.reporting import _html as h
from maev_kit.reporting._common import _as_dict


#: What each hash the report shows covers. One name per hash: the same hash has the same name
#: wherever it appears (a set's ``content_hash`` is a judge card's ``labeled_set_hash``), and
#: two different hashes never share one.
CONTENT_HASH = "labeled-set content hash (sha256 of every data file of the set)"
LABELS_FILE_HASH = "labels-file hash (sha256 of the set's labels.jsonl)"
CALIBRATION_LABELS_HASH = ("calibration-labels hash (sha256 of the (item, annotator, label) "
                           "triples the κ rests on)")
PROMPT_HASH = "prompt hash (sha256 of the prompt template)"
#: The hashes of a labeled set (``LabeledSet`` attributes, or an evaluation's provenance).
SET_HASH_NAMES = {"content_hash": CONTENT_HASH, "hash": CONTENT_HASH,
                  "labels_hash": LABELS_FILE_HASH}
#: A judge card's hashes: ``labeled_set_hash`` is the ``content_hash`` of the set it was
#: calibrated on, ``labels_hash`` the hash of the (item, annotator, label) triples it used.
CARD_HASH_NAMES = {"labeled_set_hash": CONTENT_HASH, "labels_hash": CALIBRATION_LABELS_HASH,
                   "prompt_hash": PROMPT_HASH}
#: The hashes in an evaluation's judge description.
JUDGE_HASH_NAMES = {"prompt_sha256": PROMPT_HASH}


def _named_hashes(d: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """``d`` with its hash keys renamed to say what each hash covers (a card's per-item
    verdicts, kept for the drift gate, shown as their count)."""
    return {names.get(k, k): (f"{len(v)} items (for maev check)"
                              if k == "item_verdicts" and isinstance(v, Mapping) else v)
            for k, v in d.items()}


def _provenance(ev: Any, labeled_set: Any, judge_card: Any, now: str) -> str:
    """The Provenance section: a warning when the judge card pins another judge, then the
    key-value table."""
    from maev_kit.internal import __version__

    prov = dict(getattr(ev, "provenance", None) or {})
    pairs: list[tuple[str, Any]] = [("report generated", now),
                                    ("maev-kit version (report)", __version__)]
    names = {"maev_kit_version": "maev-kit version (evaluation)", "date": "evaluation date",
             "n_conversations": "conversations", "n_items": "retention items"}
    for k, v in prov.items():
        if k == "judge_card" and judge_card is not None:
            continue
        if k == "labeled_set" and labeled_set is not None:
            continue
        if k == "labeled_set" and isinstance(v, Mapping):
            v = _named_hashes(v, SET_HASH_NAMES)
        if k == "judge_card" and _as_dict(v) is not None:
            v = _named_hashes(_as_dict(v) or {}, CARD_HASH_NAMES)
        pairs.append((names.get(k, k.replace("_", " ")), v))
    judge = getattr(ev, "judge", None)
    if judge:
        pairs.append(("judge", _named_hashes(judge, JUDGE_HASH_NAMES)
                      if isinstance(judge, Mapping) else judge))
    if labeled_set is not None:
        info: dict[str, Any] = {}
        for attr in ("name", "version", "content_hash", "labels_hash"):
            v = getattr(labeled_set, attr, None)
            if callable(v):
                v = v()
            if v is not None:
                info[attr] = v
        if not info:
            info = _as_dict(labeled_set) or {}
        pairs.append(("labeled set", _named_hashes(info, SET_HASH_NAMES)))
    warn = ""
    if judge_card is not None:
        card = _as_dict(judge_card) or {}
        pairs.append(("judge card", _named_hashes(card, CARD_HASH_NAMES)))
        used = (judge or {}).get("name")
        pinned = card.get("judge_name", card.get("judge"))
        if used and pinned and str(used) != str(pinned):
            warn = h.callout(f"The judge card pins {pinned}, but this evaluation was scored "
                             f"with {used}: the card's calibration does not apply.", warn=True)
    if getattr(ev, "weights", None):
        pairs.append(("composite weights", ev.weights))
    return warn + h.kv_table(pairs)
