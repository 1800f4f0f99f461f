"""Parse an LLM judge's reply into one verdict per fact: lenient on form, strict on content.

Form: the JSON object may stand alone, sit inside a ``` fence (with or without ``json``) or be
surrounded by prose. Content: every fact id must appear exactly once with one of the three
labels; anything else becomes an error verdict that keeps the raw reply. Nothing here raises
and nothing invents a label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from maev_kit.judges._prompts import fact_key
from maev_kit.judges._verdict import Verdict
from maev_kit.retention import LABELS, EvidenceSpan, RetentionItem, locate

__all__ = ["parse_retention_reply"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.S)
_MAX_SCAN = 200  # JSON decode attempts per reply; a reply full of "{" stays cheap


class _DuplicateKeys(dict):
    """A dict that remembers keys seen more than once (json's object_pairs_hook)."""

    duplicates: set[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = _DuplicateKeys()
    d.duplicates = set()
    for k, v in pairs:
        if k in d:
            d.duplicates.add(k)
        d[k] = v
    return d


_STRICT_DECODER = json.JSONDecoder(object_pairs_hook=_pairs_hook)


def _objects_in(text: str) -> list[Any]:
    """Top-level JSON values that start with ``{`` or ``[`` in ``text``, left to right."""
    found: list[Any] = []
    i, attempts, n = 0, 0, len(text)
    while i < n and attempts < _MAX_SCAN:
        j = min((p for p in (text.find("{", i), text.find("[", i)) if p >= 0), default=-1)
        if j < 0:
            break
        attempts += 1
        try:
            value, end = _STRICT_DECODER.raw_decode(text, j)
        except (ValueError, RecursionError):
            i = j + 1
            continue
        found.append(value)
        i = end
    return found


def json_candidate(reply: str) -> tuple[Any, str | None]:
    """The JSON value the reply answers with, or an error message."""
    stripped = reply.strip()
    if not stripped:
        return None, "empty reply"
    try:
        return _STRICT_DECODER.decode(stripped), None
    except (ValueError, RecursionError):
        pass
    fenced = [m.group(2) for m in _FENCE.finditer(reply)]
    pools = [fenced, [reply]] if fenced else [[reply]]
    for pool in pools:
        values = [v for text in pool for v in _objects_in(text)]
        objects = [v for v in values if isinstance(v, dict)]
        if len(objects) == 1:
            return objects[0], None
        if len(objects) > 1:
            first = objects[0]
            if all(o == first for o in objects[1:]):
                return first, None
            return None, f"the reply holds {len(objects)} different JSON objects; expected one"
        if values:
            return values[0], None  # a list or other non-object: reported by the caller
    return None, "no JSON object found in the reply"


def _label_of(value: Any) -> tuple[str | None, str, tuple[str, ...], str | None]:
    """(label, reason, evidence, error) for one fact's value in the reply."""
    reason = ""
    evidence: tuple[str, ...] = ()
    if isinstance(value, str):
        status: Any = value
    elif isinstance(value, dict):
        if "status" in value:
            status = value["status"]
        elif "label" in value:
            status = value["label"]
        else:
            return None, "", (), "no `status` key for this fact"
        r = value.get("reason", value.get("rationale", ""))
        reason = r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)
        ev = value.get("evidence")
        if isinstance(ev, str) and ev:
            evidence = (ev,)
        elif isinstance(ev, list):
            evidence = tuple(e for e in ev if isinstance(e, str))
        elif isinstance(ev, dict) and isinstance(ev.get("quote"), str) and ev["quote"].strip():
            evidence = (f"entry {ev.get('n')}: {ev['quote']!r}",)
    else:
        return None, "", (), (f"the value for this fact is a JSON {type(value).__name__}; "
                              "expected a status object or a label string")
    if not isinstance(status, str):
        return None, "", (), f"status {status!r} is not a string"
    label = status.strip().lower()
    if label not in LABELS:
        return None, "", (), (f"status {status!r} is not one of "
                              f"{', '.join(LABELS)}")
    return label, reason, evidence, None


def _span(value: Any, item: RetentionItem) -> EvidenceSpan | None:
    """Where the reply says the evidence is (``"evidence": {"n": 3, "quote": "BK-1"}``), when
    entry ``n`` is the receiver's and holds the quote; None otherwise (a quote found nowhere,
    or in another speaker's entry, points at nothing)."""
    ev = value.get("evidence") if isinstance(value, dict) else None
    if not isinstance(ev, dict):
        return None
    n, quote = ev.get("n"), ev.get("quote")
    if not isinstance(quote, str) or not quote.strip():
        return None
    evidence = item.evidence
    shown = item.window  # what the prompt numbered (a silent receiver: what was handed over)
    if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(shown):
        entry = shown[n - 1]
        if entry in evidence:
            found = locate([entry], quote)
            if found is not None:
                return found
    return locate(evidence, quote)


def parse_retention_reply(reply: Any, items: Sequence[RetentionItem]) -> list[Verdict]:
    """Turn a reply to a prompt built for ``items`` into one verdict per item, in order.

    Fact ids in the reply are ``F1``, ``F2``... by position in ``items`` (case-insensitive).
    An unknown or extra id makes every fact an error (the reply mixed up the ids, so none of
    its labels can be trusted); a missing fact, a duplicated id, a label outside the three or a
    malformed value makes that fact an error (``cause="unparseable"``). Never raises.

    Examples
    --------
    >>> from maev_kit.retention import RetentionItem
    >>> items = [RetentionItem(f"c/h0/f{i}", "c", 0, f"f{i}", "a fact", (), ()) for i in (1, 2)]
    >>> reply = ('Here you go: ```json {"F1": {"status": "retained", "reason": "quoted"},'
    ...          ' "F2": {"status": "maybe"}} ```')
    >>> [(v.label, v.error) for v in parse_retention_reply(reply, items)]
    [('retained', None), (None, "fact F2: status 'maybe' is not one of retained, lost, contradicted")]
    """
    try:
        verdicts = _parse(reply, items)
    except Exception as exc:  # noqa: BLE001 - parse must never raise
        raw = reply if isinstance(reply, str) else repr(reply)
        verdicts = [Verdict(getattr(it, "item_id", str(i)), None,
                            error=f"could not parse the reply ({type(exc).__name__}: {exc})",
                            raw=raw) for i, it in enumerate(items)]
    return [replace(v, cause="unparseable") if v.error and v.cause is None else v
            for v in verdicts]


def _parse(reply: Any, items: Sequence[RetentionItem]) -> list[Verdict]:
    items = list(items)
    if not items:
        return []
    if not isinstance(reply, str):
        raw = None if reply is None else repr(reply)
        return [Verdict(it.item_id, None, error=f"the reply is {type(reply).__name__}, not text",
                        raw=raw) for it in items]

    def all_error(msg: str) -> list[Verdict]:
        return [Verdict(it.item_id, None, error=msg, raw=reply) for it in items]

    obj, err = json_candidate(reply)
    if err is not None:
        return all_error(err)
    if not isinstance(obj, dict):
        return all_error(f"the reply is a JSON {type(obj).__name__}; expected an object "
                         "keyed by fact id")
    keys = {fact_key(i): i for i in range(len(items))}
    by_fact: dict[int, Any] = {}
    seen_twice: set[int] = set()
    unknown: list[str] = []
    for k, v in obj.items():
        pos = keys.get(k.strip().upper()) if isinstance(k, str) else None
        if pos is None:
            unknown.append(k)
            continue
        if pos in by_fact:
            seen_twice.add(pos)
        by_fact[pos] = v
    for k in getattr(obj, "duplicates", ()):
        pos = keys.get(k.strip().upper())
        if pos is not None:
            seen_twice.add(pos)
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:5])
        return all_error(f"the reply has unknown fact id(s) {shown}; expected exactly "
                         f"{', '.join(keys)}")
    out = []
    for i, it in enumerate(items):
        key = fact_key(i)
        if i in seen_twice:
            out.append(Verdict(it.item_id, None, error=f"fact {key} appears more than once",
                               raw=reply))
        elif i not in by_fact:
            out.append(Verdict(it.item_id, None, error=f"fact {key} is missing from the reply",
                               raw=reply))
        else:
            label, reason, evidence, ferr = _label_of(by_fact[i])
            if ferr is not None:
                out.append(Verdict(it.item_id, None, error=f"fact {key}: {ferr}", raw=reply))
            else:
                out.append(Verdict(it.item_id, label, reason, evidence,
                                   span=_span(by_fact[i], it)))
    return out
