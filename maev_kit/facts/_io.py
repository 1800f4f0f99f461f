"""Facts files (JSONL of :class:`ProposedFact` dicts) and their export to ``expectations.jsonl``."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.facts._model import FACT_KINDS, ProposedFact

if TYPE_CHECKING:
    from maev_kit.expectations import ConversationExpectations

__all__ = ["facts_to_expectations", "load_facts", "save_facts", "save_facts_as_expectations"]

_FIELDS = {f.name: f for f in dataclasses.fields(ProposedFact)}
_OPTIONAL = {"value", "source_turn_index", "reviewed", "slot"}


def _check(record: dict[str, Any]) -> tuple[str, str] | None:
    """The first bad ``(field, message)`` of one facts record, or None."""
    for name in record:
        if name not in _FIELDS:
            return name, "unknown field (remove it)"
    for name in _FIELDS:
        if name not in record:
            if name in _OPTIONAL:
                continue
            return name, "field required"
        v = record[name]
        if name == "reviewed":
            if not isinstance(v, bool):
                return name, f"expected true or false, got {v!r}"
        elif name in ("handoff_index", "source_turn_index"):
            if v is None and name in _OPTIONAL:
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                return name, f"expected a whole number ≥ 0, got {v!r}"
        elif v is None and name in _OPTIONAL:
            continue
        elif not isinstance(v, str):
            return name, f"expected a string, got {type(v).__name__}"
        elif not v.strip() and name not in _OPTIONAL:
            return name, "must not be empty"
    if record["kind"] not in FACT_KINDS:
        return "kind", f"unknown kind {record['kind']!r} (use one of {', '.join(FACT_KINDS)})"
    return None


def load_facts(path: str | os.PathLike[str]) -> list[ProposedFact]:
    """Read a facts file: one :class:`ProposedFact` object per line.

    Raises
    ------
    InputError
        One line naming ``file:line › field`` and what is wrong (plus how many more problems
        there are), for a missing file, bad JSON, a missing or unknown field, a wrong type or
        a fact id repeated for the same conversation.
    """
    from maev_kit.internal import display_name, iter_json_lines

    name = display_name(path)
    if not os.path.exists(path):
        raise InputError(f"{name}: file not found")
    facts: list[ProposedFact] = []
    problems: list[str] = []
    first_line: dict[tuple[str, int, str], int] = {}
    for jl in iter_json_lines(path, name=name):
        if jl.problem:
            problems.append(str(jl.problem))
            continue
        rec = jl.value or {}
        bad = _check(rec)
        if bad:
            problems.append(f"{name}:{jl.line} › {bad[0]}: {bad[1]}")
            continue
        key = (rec["conversation_id"], rec["handoff_index"], rec["fact_id"])
        if key in first_line:
            problems.append(f"{name}:{jl.line} › fact_id: duplicate fact_id {rec['fact_id']!r} "
                            f"at handoff {rec['handoff_index']} of conversation "
                            f"{rec['conversation_id']!r} (first on line {first_line[key]})")
            continue
        first_line[key] = jl.line
        fields: dict[str, Any] = {k: rec.get(k) for k in _FIELDS if k != "reviewed"}
        facts.append(ProposedFact(**fields,
                                  reviewed=rec.get("reviewed", False)))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InputError(problems[0] + more)
    return facts


def save_facts(path: str | os.PathLike[str], facts: Iterable[ProposedFact]) -> None:
    """Write facts as JSONL (atomically), one :meth:`ProposedFact.to_dict` per line."""
    from maev_kit.internal import write_jsonl

    write_jsonl([f.to_dict() for f in facts], path)


def facts_to_expectations(facts: Iterable[ProposedFact]
                          ) -> dict[str, ConversationExpectations]:
    """Key facts per conversation, ready for :func:`~maev_kit.retention.build_retention_items`.

    Each fact becomes a ``KeyFact(fact_id, handoff_index, text)``; a fact id repeated at the
    same handoff (the same text proposed twice for one handoff) is kept once, while the same id
    at another handoff (a context key passed again) is another fact.

    >>> f = ProposedFact("c1", 0, "p-1", "Account number is ACCT-1", "ACCT-1", "identifier", 0,
    ...                  "offline")
    >>> facts_to_expectations([f])["c1"].key_facts[0].text
    'Account number is ACCT-1'
    """
    from maev_kit.expectations import ConversationExpectations, KeyFact

    out: dict[str, ConversationExpectations] = {}
    for f in facts:
        exp = out.setdefault(f.conversation_id, ConversationExpectations(f.conversation_id))
        if any(k.fact_id == f.fact_id and k.handoff_index == f.handoff_index
               for k in exp.key_facts):
            continue
        exp.key_facts.append(KeyFact(f.fact_id, f.handoff_index, f.text, slot=f.slot))
    return out


def save_facts_as_expectations(path: str | os.PathLike[str],
                               facts: Iterable[ProposedFact]) -> None:
    """Write facts as an ``expectations.jsonl`` (key facts only) that scoring reads."""
    from maev_kit.expectations import save_expectations

    save_expectations(facts_to_expectations(facts).values(), path)
