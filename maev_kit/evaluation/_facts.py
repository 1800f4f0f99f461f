"""The facts stage: which key facts retention is judged on, and where each came from."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError
from maev_kit.evaluation._load import quote
from maev_kit.evaluation._options import is_default_judge

if TYPE_CHECKING:
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.retention import RetentionItem
    from maev_kit.traces import MultiAgentTrace

__all__ = ["FACT_MODES", "KeyFacts", "facts_by_source", "merge_facts", "select_facts"]


@dataclass
class KeyFacts:
    """What the facts stage gives: the expectations with the key facts to judge, and where
    each fact came from.

    Attributes
    ----------
    expectations : conversation id → expectations whose ``key_facts`` are the facts to judge
        (expected handoffs, routing cases and metadata as given).
    sources : retention item id → the fact's source (``expectations``, ``reviewed``,
        ``context``, ``offline``, ``llm:<model>``…).
    mode : how the facts were chosen (``"auto"``, ``"context+offline"``, a file name,
        ``"list of facts"``).
    n_conversations : how many conversations were given.
    notes : the proposer's notes on conversations or handoffs that got no fact.
    """

    expectations: dict[str, ConversationExpectations]
    sources: dict[str, str]
    mode: str
    n_conversations: int
    notes: list[Any] = field(default_factory=list)

    def provenance(self, items: Sequence[RetentionItem]) -> dict[str, Any]:
        """``result.provenance["facts"]``: the mode, facts by source (each counted once, see
        :func:`facts_by_source`), conversations with and without facts, notes."""
        with_facts = sum(1 for e in self.expectations.values() if e.key_facts)
        return {"mode": self.mode, "by_source": facts_by_source(items, self.sources),
                "conversations_with_facts": with_facts,
                "conversations_without_facts": self.n_conversations - with_facts,
                "notes": len(self.notes)}

    def warning(self) -> str | None:
        """The one warning line for the conversations and handoffs that got no fact."""
        if not self.notes:
            return None
        return (f"no key fact proposed for {len(self.notes)} conversation(s) or handoff(s): "
                f"{quote(self.notes)}")


def select_facts(traces: Sequence[MultiAgentTrace],
                 expectations: dict[str, ConversationExpectations], facts: Any = "auto", *,
                 backend: Any = None, options: dict[str, Any] | None = None) -> KeyFacts:
    """The facts stage: the key facts ``facts`` names for ``traces`` (see
    :class:`~maev_kit.evaluation.EvaluationOptions` for the modes), merged into
    ``expectations`` with expected handoffs and routing cases kept.

    ``backend`` is the model the ``"llm"`` proposer asks; ``options`` its run options
    (cache, progress, max_concurrency, timeout). Nothing is warned here: the caller issues
    :meth:`KeyFacts.warning`.

    Raises
    ------
    InputError
        A ``facts`` string that is neither a mode nor a file (with a "did you mean"), or a
        fact file's problem located ``file:line › field``.
    """
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.facts import propose_facts, supersede_user_changes
    from maev_kit.facts.internal import auto_facts, resolve_facts

    keep: dict[str, ConversationExpectations] = {}  # conversations scored on expectations
    proposed: list[Any] = []
    notes: list[Any] = []
    methods = fact_methods(facts)
    if isinstance(facts, str) and facts == "auto":
        mode = "auto"
        keep = {t.conversation_id: expectations[t.conversation_id] for t in traces
                if t.conversation_id in expectations
                and expectations[t.conversation_id].key_facts}
        proposed, notes = auto_facts([t for t in traces if t.conversation_id not in keep])
    elif methods is not None:
        mode = "+".join(methods)
        llm = ({k: v for k, v in (options or {}).items() if v is not None}
               if "llm" in methods else {})
        proposal = propose_facts(traces, method=methods, backend=backend, **llm)
        proposed, notes = list(proposal), list(proposal.notes)
    else:
        if isinstance(facts, (str, os.PathLike)) and not os.path.exists(facts):
            raise unknown_facts(facts)
        src = resolve_facts(facts, traces)
        mode = (os.path.basename(facts) if isinstance(facts, (str, os.PathLike))
                else "list of facts")
        if src.expectations is not None:
            keep = {e.conversation_id: e for e in src.expectations if e.key_facts}
        proposed = list(src.facts)
    out, sources = merge_facts(traces, expectations, keep, proposed)
    if proposed:  # proposed facts follow the user's own changes; written ones are as written
        out = {**out, **supersede_user_changes(
            [t for t in traces if t.conversation_id not in keep],
            {cid: e for cid, e in out.items() if cid not in keep})}
    return KeyFacts(out, sources, mode, len(traces), notes)


def facts_by_source(items: Sequence[RetentionItem], sources: dict[str, str] | None
                    ) -> dict[str, int]:
    """How many of the conversations' key facts came from each source (``provenance["facts"]
    ["by_source"]``): a fact is counted once, by where it was first stated, however many
    handoffs it is judged at; most first, ties by name."""
    first: dict[tuple[str, str], str] = {}
    for it in items:
        first.setdefault((it.conversation_id, it.fact_key), (sources or {}).get(it.item_id) or (
            "context" if it.derived else "expectations"))
    return dict(sorted(Counter(first.values()).items(), key=lambda kv: (-kv[1], kv[0])))


#: The ``facts`` modes :func:`evaluate` takes by name (besides a list of facts or a path).
FACT_MODES = ("auto", "context", "offline", "llm")


def unknown_facts(facts: str | os.PathLike[str]) -> InputError:
    """The error for a ``facts=`` string that is neither a mode nor an existing file, with a
    "did you mean" when it is close to a mode (``evaluate`` and ``maev_kit.scale`` raise it)."""
    import difflib

    from maev_kit.facts import METHODS

    close = difflib.get_close_matches(str(facts), FACT_MODES, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return InputError(f"facts {str(facts)!r}: neither a mode nor an existing file; {hint}use one "
                      f"of {', '.join(FACT_MODES)}, several proposers joined by commas "
                      f"({','.join(METHODS[:2])}) or a facts / expectations JSONL file")


def fact_backend(judge: Any, backend: Any) -> Any:
    """The model the llm fact proposer asks: ``backend``, else the judge's model, else None."""
    if backend is not None:
        return backend
    from maev_kit.judges import OFFLINE_JUDGES
    from maev_kit.judges.internal import is_backend

    if isinstance(judge, str) and not is_default_judge(judge) and \
            judge.strip().lower() not in OFFLINE_JUDGES:
        return judge.strip()
    return judge if judge is not None and is_backend(judge) else None


def fact_methods(facts: Any) -> list[str] | None:
    """The proposer names ``facts`` gives (``"offline"``, ``"context,offline"``, a list of
    names), or None when it names none."""
    from maev_kit.facts import METHODS

    if isinstance(facts, str) and (facts in METHODS or "," in facts):
        return [m.strip() for m in facts.split(",") if m.strip()]
    if isinstance(facts, (list, tuple)) and facts and all(isinstance(m, str) for m in facts):
        return list(facts)
    return None


def _source_of(exp: ConversationExpectations, fact_id: str) -> str:
    """Where a key fact of the expectations came from: ``reviewed`` when a person reviewed the
    conversation's facts, else the proposer its metadata names, else ``expectations``."""
    md = exp.metadata or {}
    proposers = md.get("fact_proposers") or {}
    if md.get("facts_reviewed") or md.get("facts_reviewed_by"):
        # a reviewed conversation's proposals count as reviewed; a fact no proposer made was
        # written by hand (a review's export keeps those)
        return "reviewed" if not proposers or fact_id in proposers else "expectations"
    proposer = proposers.get(fact_id)
    return str(proposer) if proposer else "expectations"


def merge_facts(traces: Sequence[MultiAgentTrace], given: dict[str, ConversationExpectations],
                 keep: dict[str, ConversationExpectations], proposed: Sequence[Any]
                 ) -> tuple[dict[str, ConversationExpectations], dict[str, str]]:
    """Per conversation: the key facts of ``keep`` or of ``proposed``, with the expected
    handoffs, routing cases and metadata of ``given``; and each fact's source."""
    import dataclasses

    from maev_kit.expectations import ConversationExpectations, KeyFact
    from maev_kit.facts import facts_to_expectations
    from maev_kit.retention import item_id

    by_conv = facts_to_expectations(proposed)
    proposer = {(f.conversation_id, f.handoff_index, f.fact_id):
                ("reviewed" if f.reviewed else f.proposer) for f in proposed}
    out: dict[str, ConversationExpectations] = {}
    sources: dict[str, str] = {}  # item id -> source
    for t in traces:
        cid = t.conversation_id
        base = given.get(cid)
        if cid in keep:
            e = keep[cid]
            key_facts = list(e.key_facts)
            for kf in key_facts:
                sources[item_id(cid, kf.handoff_index, kf.fact_id)] = _source_of(e, kf.fact_id)
            metadata = {**(base.metadata if base else {}), **e.metadata}
        else:
            key_facts = []
            for kf in (by_conv[cid].key_facts if cid in by_conv else []):
                src = proposer[(cid, kf.handoff_index, kf.fact_id)]
                sources[item_id(cid, kf.handoff_index, kf.fact_id)] = src
                key_facts.append(KeyFact(kf.fact_id, kf.handoff_index, kf.text,
                                         derived=src == "context", slot=kf.slot))
            metadata = dict(base.metadata) if base else {}
        if base is None and not key_facts:
            continue
        out[cid] = (dataclasses.replace(base, key_facts=key_facts, metadata=metadata)
                    if base is not None else
                    ConversationExpectations(cid, key_facts=key_facts, metadata=metadata))
    return out, sources
