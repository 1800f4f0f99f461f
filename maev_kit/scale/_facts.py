"""``facts=`` on Ray: what ``evaluate`` resolves for all the traces, resolved block by block.

Every way ``evaluate`` picks key facts is per conversation: ``"auto"`` (the expectations' key
facts, else the handoffs' ``context_passed``, else the offline proposer), a proposer or several
(``"context"``, ``"offline"``, ``"llm"``), or a facts / expectations file or a list of
:class:`~maev_kit.facts.ProposedFact`. So each block resolves the facts of its own
conversations through the same functions (``_with_facts`` / ``_merge_facts`` of
:mod:`maev_kit.evaluation.stages`) and gets the same key facts and the same ledger
``fact_source`` as one ``evaluate`` over everything. A file or a list is read once, on the
driver, and each piece is shipped only the facts of its conversations.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from maev_kit.errors import InputError

__all__ = ["FactPlan", "apply_facts", "check_all_known", "merge_fact_infos", "plan_facts"]


@dataclass
class FactPlan:
    """What ``facts=`` names, ready to ship to the workers.

    ``spec`` is the mode (``"auto"``, a proposer name, names joined by commas or a list of
    names) or None for given facts, which are then in ``proposed`` (conversation id ->
    ``[(where, fact)]``) or ``keep`` (conversation id -> ``(where, expectations)``), ``where``
    being what an error names (``facts.jsonl:3``, ``facts[2]``).
    """

    spec: Any
    mode: str
    fingerprint: str
    backend: Any = None
    options: dict[str, Any] = field(default_factory=dict)
    proposed: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    keep: dict[str, tuple[str, Any]] = field(default_factory=dict)

    @property
    def given(self) -> bool:
        return self.spec is None

    def subset(self, conversation_ids: Any) -> FactPlan:
        """The plan with only the given facts of ``conversation_ids`` (a mode as it is)."""
        if not self.given:
            return self
        ids = set(conversation_ids)
        return FactPlan(None, self.mode, self.fingerprint,
                        proposed={c: v for c, v in self.proposed.items() if c in ids},
                        keep={c: v for c, v in self.keep.items() if c in ids})


def plan_facts(facts: Any, *, judge: Any, backend: Any,
               options: dict[str, Any]) -> FactPlan | None:
    """The :class:`FactPlan` of ``facts`` (None: the expectations' key facts as they are).

    A file is read here, once; its problems are one :class:`~maev_kit.errors.InputError`
    naming ``file:line › field``, as ``evaluate`` reports them.
    """
    from maev_kit.evaluation.stages import fact_backend, fact_methods, unknown_facts
    from maev_kit.facts import METHODS, ProposedFact

    if facts is None:
        return None
    if (isinstance(facts, str) and facts == "auto") or fact_methods(facts) is not None:
        methods = fact_methods(facts)
        mode = "auto" if methods is None else "+".join(methods)
        llm = methods is not None and "llm" in methods
        return FactPlan(facts, mode, f"mode:{mode}",
                        backend=fact_backend(judge, backend) if llm else None,
                        options=options if llm else {})
    if isinstance(facts, (list, tuple)) and facts and all(
            isinstance(f, ProposedFact) for f in facts):
        plan = FactPlan(None, "list of facts", _digest(repr(list(facts)).encode()))
        for i, f in enumerate(facts):
            plan.proposed.setdefault(f.conversation_id, []).append((f"facts[{i}]", f))
        return plan
    if isinstance(facts, (str, os.PathLike)):
        p = Path(facts)
        if not p.exists():
            raise unknown_facts(facts)
        return _plan_file(p)
    raise InputError(f"`facts` must be a proposer name ({', '.join(METHODS)}), a list of them, "
                     f"a list of ProposedFact or a file path, got {type(facts).__name__}")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _plan_file(p: Path) -> FactPlan:
    from maev_kit.facts.internal import read_facts_file

    facts, exps, lines = read_facts_file(p)
    plan = FactPlan(None, os.path.basename(p), _digest(p.read_bytes()))
    if facts is None:
        plan.keep = {e.conversation_id: (f"{p.name}:{lines[e.conversation_id]}", e)
                     for e in exps}
        return plan
    for i, f in enumerate(facts):
        plan.proposed.setdefault(f.conversation_id, []).append((f"{p.name}:{i + 1}", f))
    return plan


def apply_facts(plan: FactPlan, traces: list[Any], given: dict[str, Any]
                ) -> tuple[dict[str, Any], dict[str, str], dict[str, Any], list[str]]:
    """A block's expectations with the key facts of ``plan``, each item's ``fact_source``,
    the block's ``provenance["facts"]`` (``by_source`` in the order first seen, for
    :func:`merge_fact_infos`) and the warnings ``evaluate`` would have issued.

    Raises
    ------
    InputError
        A given fact on a handoff its conversation does not have (``file:line ›
        handoff_index``).
    """
    from maev_kit.evaluation.stages import merge_facts, select_facts
    from maev_kit.facts.internal import check_handoff_index

    if not plan.given:
        key_facts = select_facts(traces, given, plan.spec, backend=plan.backend,
                                 options=plan.options)
        message = key_facts.warning()
        info = {**key_facts.provenance([]), "notes": len(key_facts.notes)}
        # the sources in the order first seen, as evaluate's Counter meets them
        return (key_facts.expectations, key_facts.sources,
                {**info, "by_source": dict(Counter(key_facts.sources.values()))},
                [message] if message else [])
    by_id = {t.conversation_id: t for t in traces}
    proposed = []
    for cid, facts in plan.proposed.items():
        t = by_id.get(cid)
        for where, f in facts:
            if t is not None:
                check_handoff_index(where, f.handoff_index, t)
            proposed.append(f)
    keep = {}
    for cid, (where, e) in plan.keep.items():
        t = by_id.get(cid)
        if t is None:
            continue
        for i, kf in enumerate(e.key_facts):
            check_handoff_index(f"{where} › key_facts[{i}]", kf.handoff_index, t)
        if e.key_facts:
            keep[cid] = e
    out, sources = merge_facts(traces, given, keep, proposed)
    with_facts = sum(1 for e in out.values() if e.key_facts)
    info = {"mode": plan.mode, "by_source": dict(Counter(sources.values())),
            "conversations_with_facts": with_facts,
            "conversations_without_facts": len(traces) - with_facts, "notes": 0}
    return out, sources, info, []


def check_all_known(plan: FactPlan | None, scored: Iterable[str]) -> None:
    """Raise, as ``evaluate`` does, when a given fact names a conversation not scored (the
    ``scored`` ids are read only when facts were given)."""
    if plan is None or not plan.given:
        return
    scored = set(scored)
    unknown = [(where, cid) for cid, facts in plan.proposed.items() if cid not in scored
               for where, _ in facts[:1]]
    unknown += [(where, cid) for cid, (where, _) in plan.keep.items() if cid not in scored]
    if unknown:
        where, cid = min(unknown, key=lambda wc: _where_key(wc[0]))
        more = f" (and {len(unknown) - 1} more conversations)" if len(unknown) > 1 else ""
        raise InputError(f"{where} › conversation_id: {cid!r} is not among the traces{more}")


def _where_key(where: str) -> tuple[int, str]:
    """``facts.jsonl:12`` / ``facts[11]`` sort by their number."""
    digits = "".join(ch for ch in where.rsplit(":", 1)[-1] if ch.isdigit())
    return (int(digits) if digits else 0, where)


def merge_fact_infos(infos: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The blocks' ``provenance["facts"]`` (in input order) summed into one, as ``evaluate``
    counts it over all the conversations."""
    if not infos:
        return None
    by_source: Counter[str] = Counter()
    for info in infos:
        by_source.update(info["by_source"])
    return {"mode": infos[0]["mode"],
            "by_source": dict(sorted(by_source.items(), key=lambda kv: (-kv[1], kv[0]))),
            **{k: sum(info[k] for info in infos)
               for k in ("conversations_with_facts", "conversations_without_facts", "notes")}}
