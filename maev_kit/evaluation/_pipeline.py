"""``evaluate``: load → judge → score each conversation → aggregate, each stage a function."""

from __future__ import annotations

import datetime as _dt
import math
import os
import warnings
from collections import Counter
from itertools import chain
from operator import attrgetter, itemgetter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit._version import __version__
from maev_kit._gc import paused_gc
from maev_kit.errors import InputError, JudgeErrorWarning, NotApplicableWarning
from maev_kit.evaluation._result import METRIC_COMPONENT, EvaluationResult, JudgeErrorSummary
from maev_kit.evaluation._score import COLUMNS, ConversationScore, NotApplicable, score_conversation
from maev_kit.metrics._routing import confusion_from_counts, count_routes, routing_report

if TYPE_CHECKING:
    import pandas as pd

    from maev_kit.datasets import LabeledSet
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.judges import Verdict
    from maev_kit.metrics import HandoffContract
    from maev_kit.retention import RetentionItem
    from maev_kit.runner import JudgeRun
    from maev_kit.traces import MultiAgentTrace

__all__ = ["evaluate"]


class _DefaultJudge(str):
    """The default judge name: ``"heuristic"``, unless a judge card names another."""


#: ``evaluate``'s default ``judge``: the heuristic, or the card's judge when a card is given.
DEFAULT_JUDGE = _DefaultJudge("heuristic")

#: Per-conversation columns whose mean (with a bootstrap CI) is reported in ``aggregates``.
AGGREGATED = ("composite", "handoff_quality", "information_retention", "routing_quality",
              "target_accuracy", "reason_accuracy", "context_completeness", "retention_rate",
              "routing_exact", "routing_acceptable")
_LEDGER = ("item_id", "conversation_id", "handoff_index", "hop", "from_agent", "to_agent",
           "fact_id", "fact_key", "fact", "fact_source", "label", "rationale", "evidence",
           "evidence_at", "evidence_turn", "evidence_part", "evidence_field", "evidence_start",
           "evidence_end", "error", "error_cause")
_PAIRS = ("from_agent", "to_agent", "handoffs", "facts", "retained", "lost", "contradicted",
          "judge_errors", "retention_rate", "context_complete")
_LABELS = ("retained", "lost", "contradicted")


@dataclass
class _Inputs:
    """What the load stage produces: the traces to score and what they are scored against."""

    traces: list[MultiAgentTrace]
    expectations: dict[str, ConversationExpectations]
    contracts: list[HandoffContract] | None
    items: list[RetentionItem]
    labeled_set: LabeledSet | None = None
    split: str | None = None
    splits: dict[str, str | None] = field(default_factory=dict)
    fact_sources: dict[str, str] = field(default_factory=dict)  # item id -> source
    facts: dict[str, Any] | None = None  # provenance["facts"]


def evaluate(
    labeled_set_or_traces: LabeledSet | str | os.PathLike[str] | Sequence[MultiAgentTrace],
    *,
    judge: Any = DEFAULT_JUDGE,
    judge_card: Any = None,
    backend: Any = None,
    prompt: Any = None,
    allow_mismatch: bool = False,
    expectations: Any = None,
    facts: Any = "auto",
    contracts: Any = None,
    split: str | None = None,
    triage_agent: str | None = "triage",
    max_handoffs: int = 5,
    weights: dict[str, float] | None = None,
    not_applicable: NotApplicable = "na",
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
    cache: Any = None,
    progress: bool = True,
    max_concurrency: int = 16,
    timeout: float = 60.0,
    mode: str = "sync",
) -> EvaluationResult:
    """Score every conversation for coordination quality.

    Four stages: load the traces and expectations, judge every key fact across its handoff,
    score each conversation (:func:`score_conversation`), aggregate with bootstrap CIs.

    Parameters
    ----------
    labeled_set_or_traces : LabeledSet, path to a labeled-set folder (or a bundled set's name,
        e.g. ``"support_desk"``), path to a trace JSONL file or to any framework export the
        importers read (:func:`~maev_kit.traces.importers.load_any`), or a list of traces.
    judge : judge object, offline judge name (``"heuristic"``), or a litellm model string
        (``"gpt-4o-mini"``, ``"openai/<name>"`` with ``backend`` params) for the LLM judge;
        None skips retention (n/a, "not judged") and scores the deterministic metrics only.
    judge_card : JudgeCard or path, optional
        The card pinned by calibration; a warning is issued when ``judge`` or the labeled set
        no longer matches it.
    backend : backend object or litellm model string, for LLM judges.
    prompt : ``"v1"`` or ``"v2"`` when ``judge`` is a model string.
    expectations : path or records, when ``labeled_set_or_traces`` is traces.
    facts : {"auto", "context", "offline", "llm"}, a list of them, a list of
        :class:`~maev_kit.facts.ProposedFact`, or a path to a facts JSONL or an
        ``expectations.jsonl``; default "auto"
        The key facts retention is judged on. ``"auto"``: per conversation, the expectations'
        key facts when it has any; else, handoff by handoff, one fact per ``context_passed``
        value, else the offline proposer's facts (:func:`~maev_kit.facts.propose_facts`).
        ``"context"``, ``"offline"``, ``"llm"`` (or several): that proposer for every
        conversation, in place of the expectations' key facts (``"llm"`` asks ``backend``, or
        the judge's model). A file or list: those facts. Expected handoffs and routing cases are
        kept whatever the facts. The ledger's ``fact_source`` column says where each fact came
        from (``expectations``, ``reviewed``, or the proposer: ``offline``, ``context``,
        ``llm:<model>``, ``context+offline``…); ``result.provenance["facts"]`` counts them;
        conversations and handoffs that got no fact are one warning line, never an error.
    contracts : list of HandoffContract, a path (YAML/JSON) or records; a labeled set's
        manifest contracts are used by default.
    split : score only this split of a labeled set (e.g. ``"test"``).
    triage_agent : the agent whose first handoff is the routing decision.
    max_handoffs : handoff-count limit for :func:`~maev_kit.metrics.detect_circular_handoffs`.
    weights : composite weights, see :func:`~maev_kit.metrics.coordination_score`.
    not_applicable : {"na", "article"}, default "na"
        ``"na"``: a component with nothing to measure (no expected handoff, no routing case,
        no judged fact) is NaN and the composite is over the applicable components, weights
        renormalised; one :class:`~maev_kit.errors.NotApplicableWarning` says how many
        conversations lack what. ``"article"``: the article's numbers, for parity.
    n_resamples, confidence, seed : bootstrap over conversations for the aggregates' CIs.
    cache, progress, max_concurrency, timeout, mode : passed to
        :func:`~maev_kit.runner.run_judge` (``timeout``: seconds per request; ``mode="batch"``
        judges through the provider's batch API at batch prices).

    Returns
    -------
    EvaluationResult

    Warns
    -----
    JudgeErrorWarning
        When some facts could not be judged (counts by cause); they are left out of every rate.
        :meth:`EvaluationResult.raise_for_judge_errors` turns too many into an error.
    NotApplicableWarning
        Once, when a component is n/a for some conversations (``"na"`` mode).

    Examples
    --------
    >>> from maev_kit import evaluate
    >>> result = evaluate("support_desk", judge="heuristic", progress=False)  # doctest: +SKIP
    >>> result.summary().loc["composite", "mean"]  # doctest: +SKIP
    0.71
    """
    if not_applicable not in ("na", "article"):
        raise InputError(f"`not_applicable` must be 'na' or 'article', got {not_applicable!r}")
    if judge is None and not_applicable == "article":
        raise InputError("judge=None scores no retention, which the article's composite needs: "
                         "pass not_applicable='na' or name a judge")
    inputs = _load(labeled_set_or_traces, expectations=expectations, contracts=contracts,
                   split=split, retention=judge is not None, facts=facts,
                   fact_backend=_fact_backend(judge, backend),
                   fact_options={"cache": cache, "progress": progress,
                                 "max_concurrency": max_concurrency, "timeout": timeout})
    judge_obj, judge_backend = (_resolve(judge, backend, prompt, judge_card, inputs,
                                         allow_mismatch=allow_mismatch)
                                if judge is not None else (None, None))
    run = _judge(inputs.items, judge_obj, judge_backend, cache=cache, progress=progress,
                 max_concurrency=max_concurrency, timeout=timeout, mode=mode)
    verdicts = _verdicts_by_conversation(inputs.items, run)
    scores = score_traces(inputs.traces, inputs.expectations, verdicts, inputs.contracts,
                          inputs.splits, retention=judge is not None, triage_agent=triage_agent,
                          max_handoffs=max_handoffs, weights=weights,
                          not_applicable=not_applicable)
    result = _aggregate(scores, inputs, run, n_resamples=n_resamples, confidence=confidence,
                        seed=seed)
    result.weights = weights
    result.judge = _judge_info(judge_obj, judge, run)
    result.provenance.update(
        judge_card=(judge_card.model_dump() if hasattr(judge_card, "model_dump")
                    else (str(judge_card) if judge_card is not None else None)),
        not_applicable=not_applicable)
    if inputs.facts is not None:
        result.provenance["facts"] = inputs.facts
    _warn(result)
    return result


# -- load -------------------------------------------------------------------------------------

def _load(source: Any, *, expectations: Any = None, contracts: Any = None,
          split: str | None = None, retention: bool = True, facts: Any = "auto",
          fact_backend: Any = None, fact_options: dict[str, Any] | None = None) -> _Inputs:
    """Traces, expectations (with the key facts ``facts`` names), contracts and retention
    items from what the caller gave."""
    from maev_kit import metrics
    from maev_kit.datasets import LabeledSet, load_labeled_set
    from maev_kit.expectations import load_expectations
    from maev_kit.retention import build_retention_items

    labeled_set: LabeledSet | None = None
    if isinstance(source, LabeledSet):
        labeled_set = source
    elif isinstance(source, (str, os.PathLike)):
        from pathlib import Path

        p = Path(source)
        if p.is_file():
            traces = _read_traces(p)
        else:
            labeled_set = load_labeled_set(p)
    else:
        traces = list(source)
    if labeled_set is not None:
        if expectations is not None:
            raise InputError(f"labeled set {labeled_set.name!r} brings its own expectations "
                             "(its expectations.jsonl): drop `expectations`, or pass its "
                             "traces with the expectations to use")
        traces = labeled_set.traces_in(split)
        exp_by_conv = labeled_set.expectations
        if contracts is None:
            contracts = labeled_set.manifest.contracts or None
    else:
        if split is not None:
            raise InputError("`split` needs a labeled set; got traces")
        exp_by_conv = load_expectations(expectations) if expectations is not None else {}
    if contracts is not None and not isinstance(contracts, (list, tuple)):
        contracts = metrics.load_contracts(contracts)
    elif contracts:
        contracts = metrics.parse_contracts(contracts)
    if not traces:
        raise InputError("nothing to evaluate: no traces"
                         + (f" in split {split!r}" if split else ""))
    splits = ({t.conversation_id: labeled_set.split_of(t.conversation_id) for t in traces}
              if labeled_set is not None else {})
    exp_by_conv = dict(exp_by_conv)
    sources: dict[str, str] = {}
    info = None
    if retention:
        exp_by_conv, sources, info = _with_facts(traces, exp_by_conv, facts, fact_backend,
                                                 fact_options or {})
    items = build_retention_items(traces, exp_by_conv) if retention else []
    if info is not None:
        info["by_source"] = facts_by_source(items, sources)
    return _Inputs(traces, exp_by_conv, list(contracts) if contracts else None, items,
                   labeled_set, split, splits, sources, info)


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
#: How many proposer notes the warning quotes.
_SHOWN_NOTES = 3


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


def _read_traces(path: Any) -> list[MultiAgentTrace]:
    """A trace file or a framework export; what the import could not map is one warning."""
    from maev_kit.errors import TraceWarning
    from maev_kit.traces.importers import load_any

    traces, issues = load_any(path)
    if issues:
        shown = "; ".join(str(i) for i in issues[:_SHOWN_NOTES])
        more = f" (and {len(issues) - _SHOWN_NOTES} more)" if len(issues) > _SHOWN_NOTES else ""
        warnings.warn(f"{len(issues)} import warning(s) reading {os.path.basename(path)}: "
                      f"{shown}{more}", TraceWarning, stacklevel=4)
    return traces


def _fact_backend(judge: Any, backend: Any) -> Any:
    """The model the llm fact proposer asks: ``backend``, else the judge's model, else None."""
    if backend is not None:
        return backend
    from maev_kit.judges._registry import OFFLINE_JUDGES, _is_backend

    if isinstance(judge, str) and not isinstance(judge, _DefaultJudge) and \
            judge.strip().lower() not in OFFLINE_JUDGES:
        return judge.strip()
    return judge if judge is not None and _is_backend(judge) else None


def _fact_methods(facts: Any) -> list[str] | None:
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


def _with_facts(traces: Sequence[MultiAgentTrace],
                given: dict[str, ConversationExpectations], facts: Any, backend: Any,
                options: dict[str, Any]) -> tuple[dict[str, ConversationExpectations],
                                                  dict[str, str], dict[str, Any]]:
    """The expectations with the key facts ``facts`` names (expected handoffs and routing
    cases kept), each fact's source, and ``provenance["facts"]``; one warning for the
    conversations and handoffs that got no fact."""
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.facts import METHODS, first_statements, propose_facts
    from maev_kit.facts._labeled_set import resolve_facts

    keep: dict[str, ConversationExpectations] = {}  # conversations scored on expectations
    proposed: list[Any] = []
    notes: list[Any] = []
    methods = _fact_methods(facts)
    if isinstance(facts, str) and facts == "auto":
        mode = "auto"
        keep = {t.conversation_id: given[t.conversation_id] for t in traces
                if t.conversation_id in given and given[t.conversation_id].key_facts}
        rest = [t for t in traces if t.conversation_id not in keep]
        ctx = propose_facts(rest, method="context")
        filled = {(f.conversation_id, f.handoff_index) for f in ctx}
        # the offline proposer for the handoffs without context: a trace whose every handoff
        # has some is left out (the proposer works trace by trace, and all it would propose
        # or note for it is dropped below)
        # (with every value at each handoff, so a value said before a handoff the context
        # filled is proposed at the next one without; then each fact once)
        off = propose_facts([t for t in rest if not t.handoffs or any(
            (t.conversation_id, i) not in filled for i in range(len(t.handoffs)))],
            method="offline", carry_over=True)
        proposed = first_statements([*ctx, *(f for f in off if (f.conversation_id,
                                                                f.handoff_index) not in filled)],
                                    rest)
        convs = {cid for cid, _ in filled}
        notes = [n for n in off.notes if (n.conversation_id, n.handoff_index) not in filled
                 and not (n.handoff_index is None and n.conversation_id in convs)]
    elif methods is not None:
        mode = "+".join(methods)
        llm = {k: v for k, v in options.items() if v is not None} if "llm" in methods else {}
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
    out, sources = _merge_facts(traces, given, keep, proposed)
    by_source: Counter[str] = Counter(sources.values())
    with_facts = sum(1 for e in out.values() if e.key_facts)
    info = {"mode": mode, "by_source": dict(by_source.most_common()),
            "conversations_with_facts": with_facts,
            "conversations_without_facts": len(traces) - with_facts,
            "notes": len(notes)}
    if notes:
        shown = "; ".join(str(n) for n in notes[:_SHOWN_NOTES])
        more = f" (and {len(notes) - _SHOWN_NOTES} more)" if len(notes) > _SHOWN_NOTES else ""
        from maev_kit.errors import TraceWarning

        warnings.warn(f"no key fact proposed for {len(notes)} conversation(s) or handoff(s): "
                      f"{shown}{more}", TraceWarning, stacklevel=5)
    return out, sources, info


def _merge_facts(traces: Sequence[MultiAgentTrace], given: dict[str, ConversationExpectations],
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
                                         derived=src == "context"))
            metadata = dict(base.metadata) if base else {}
        if base is None and not key_facts:
            continue
        out[cid] = (dataclasses.replace(base, key_facts=key_facts, metadata=metadata)
                    if base is not None else
                    ConversationExpectations(cid, key_facts=key_facts, metadata=metadata))
    return out, sources


# -- judge ------------------------------------------------------------------------------------

def _resolve(judge: Any, backend: Any, prompt: Any, judge_card: Any, inputs: _Inputs, *,
             allow_mismatch: bool = False) -> tuple[Any, Any]:
    """The judge object and backend: the card's judge when only a card is given, else
    :func:`~maev_kit.judges.resolve_judge` (checked against the card); fit on the other splits
    when it learns from labels; worked examples drawn from their split."""
    from maev_kit.calibration._card import JudgeCard, judge_from_card
    from maev_kit.calibration._human import fit_on_other_splits
    from maev_kit.judges import resolve_judge

    card = None
    if judge_card is not None:
        card = judge_card if isinstance(judge_card, JudgeCard) else JudgeCard.load(judge_card)
    if card is not None and judge is DEFAULT_JUDGE and prompt is None:
        judge_obj, judge_backend = judge_from_card(card, backend=backend,
                                                   labeled_set=inputs.labeled_set)
        _bind_examples(judge_obj, inputs)
        if inputs.labeled_set is not None:
            card.check(judge_obj, model=card.model, labeled_set=inputs.labeled_set)
        return judge_obj, judge_backend
    judge_obj, judge_backend = resolve_judge(str(judge) if judge is DEFAULT_JUDGE else judge,
                                             prompt=prompt, backend=backend)
    fit_on_other_splits(judge_obj, inputs.labeled_set, inputs.split)
    _bind_examples(judge_obj, inputs)
    if card is not None:
        model = (judge_backend if isinstance(judge_backend, str)
                 else getattr(judge_backend, "model", None))
        differ = card.differences(judge_obj, model=model)
        if differ and not allow_mismatch:
            raise InputError("the judge given differs from the judge card: " + "; ".join(differ)
                             + " — leave the judge out to score with the card's judge, or allow "
                             "the mismatch (allow_mismatch=True, --allow-mismatch)")
        card.check(judge_obj, model=model, labeled_set=inputs.labeled_set)
    return judge_obj, judge_backend


def _bind_examples(judge: Any, inputs: _Inputs) -> None:
    """Draw a judge's worked examples from its split of the labeled set (never the scored one)."""
    if not getattr(judge, "n_examples", 0) or not callable(getattr(judge, "bind_examples", None)):
        return
    ls = inputs.labeled_set
    if ls is None:
        if judge.examples:  # given (or from a card): only the overlap check applies
            return
        raise InputError(f"{judge.name} draws worked examples from split "
                         f"{judge.example_split!r} of a labeled set, but traces were given: "
                         "score a labeled set's split, or give the examples (examples=[(item, "
                         "label), ...] or example_pool=...)")
    from maev_kit.calibration._human import load_human_labels

    judge.bind_examples(ls.items, load_human_labels(ls), scored_split=inputs.split,
                        split_of=ls.split_of)


def _judge(items: Sequence[RetentionItem], judge: Any, backend: Any, *, cache: Any = None,
           progress: bool = True, max_concurrency: int = 16, timeout: float = 60.0,
           mode: str = "sync") -> JudgeRun | None:
    """Judge every item (None when there is nothing to judge)."""
    if not items:
        return None
    from maev_kit.runner import run_judge

    return run_judge(judge, list(items), backend, cache=cache, progress=progress,
                     max_concurrency=max_concurrency, timeout=timeout, mode=mode)


def _verdicts_by_conversation(items: Sequence[RetentionItem], run: JudgeRun | None
                              ) -> dict[str, list[Verdict]]:
    """Each conversation's verdicts, in item order; every item must have one."""
    by_id = {v.item_id: v for v in (run.verdicts if run else [])}
    missing = [it.item_id for it in items if it.item_id not in by_id]
    if missing:
        raise RuntimeError(f"the judge run returned no verdict for {len(missing)} item(s), "
                           f"e.g. {missing[0]!r}")
    out: dict[str, list[Verdict]] = {}
    for it in items:
        out.setdefault(it.conversation_id, []).append(by_id[it.item_id])
    return out


def _judge_info(judge_obj: Any, judge: Any, run: JudgeRun | None) -> dict[str, Any]:
    if judge is None:
        return {"name": None, "version": "", "model": None, "offline": True, "stats": {}}
    template = getattr(judge_obj, "template", None)
    return {"name": getattr(judge_obj, "name", str(judge)),
            "version": getattr(judge_obj, "version", ""),
            "prompt": getattr(template, "name", None),
            "prompt_sha256": getattr(template, "sha256", None),
            "example_ids": list(getattr(judge_obj, "example_ids", []) or []),
            "model": run.model if run else None,
            "offline": bool(getattr(judge_obj, "offline", False)),
            "stats": dict(run.stats) if run else {}}


# -- score ------------------------------------------------------------------------------------

def score_traces(traces: Sequence[MultiAgentTrace],
                 expectations: dict[str, ConversationExpectations],
                 verdicts: dict[str, list[Verdict]], contracts: Sequence[HandoffContract] | None,
                 splits: dict[str, str | None], *, retention: bool = True,
                 **kwargs: Any) -> list[ConversationScore]:
    """:func:`score_conversation` for each trace, in order (``evaluate`` and
    ``maev_kit.scale.evaluate_dataset`` both score through here). ``retention=False``: no
    judge was asked, retention is n/a with reason :data:`NOT_JUDGED`."""
    with paused_gc():  # scores hold no reference cycles (see maev_kit._gc)
        return [score_conversation(t, expectations.get(t.conversation_id),
                                   verdicts.get(t.conversation_id, []) if retention else None,
                                   contracts, split=splits.get(t.conversation_id), **kwargs)
                for t in traces]


# -- aggregate --------------------------------------------------------------------------------

def _aggregate(scores: Sequence[ConversationScore], inputs: _Inputs, run: JudgeRun | None, *,
               n_resamples: int = 2000, confidence: float = 0.95,
               seed: int = 0) -> EvaluationResult:
    """The result from every conversation's score: aggregates, pairs, ledger, routing."""
    with paused_gc():  # the handoff pairs: one tuple per handoff of every trace
        handoffs = [(h.from_agent, h.to_agent) for t in inputs.traces for h in t.handoffs]
    return aggregate_scores(
        scores, _ledger(inputs.items, run, inputs.fact_sources), handoffs,
        labeled_set=inputs.labeled_set, split=inputs.split, traces=inputs.traces,
        n_resamples=n_resamples, confidence=confidence, seed=seed)


def aggregate_scores(scores: Sequence[ConversationScore], ledger: pd.DataFrame,
                     handoffs: Sequence[tuple[str, str]], *,
                     labeled_set: LabeledSet | None = None, split: str | None = None,
                     traces: Sequence[MultiAgentTrace] = (), n_resamples: int = 2000,
                     confidence: float = 0.95, seed: int = 0) -> EvaluationResult:
    """The aggregate stage from rows alone: every conversation's score (in order), the ledger
    and the (from_agent, to_agent) of every handoff: :func:`summarize_scores` and the scores'
    columns, then :func:`aggregate_summary` (``maev_kit.scale`` calls those two itself, with
    the blocks' summaries added up and their columns read from Arrow)."""
    with paused_gc():  # a million scores are tens of millions of objects for each collection
        per_conv = pd_frame(score_columns(scores))
        summary = summarize_scores(scores, [(i,) for i in range(len(scores))],
                                   (((i,), pair) for i, pair in enumerate(handoffs)))
        return aggregate_summary(per_conv, summary, ledger, labeled_set=labeled_set,
                                 split=split, traces=traces, n_resamples=n_resamples,
                                 confidence=confidence, seed=seed)


def score_columns(scores: Sequence[ConversationScore]) -> dict[str, list[Any]]:
    """The per-conversation columns (:data:`COLUMNS`) of some scores, as lists: column by
    column, one C-level attribute fetch per score."""
    columns = list(zip(*map(attrgetter(*COLUMNS), scores))) or [()] * len(COLUMNS)
    return dict(zip(COLUMNS, map(list, columns)))


def pd_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """The per-conversation frame from its columns (lists or arrays), in :data:`COLUMNS`
    order."""
    import pandas as pd

    return pd.DataFrame(columns, columns=list(COLUMNS))


@dataclass
class ScoreSummary:
    """What the aggregate stage needs from the scores besides their columns, in a form that
    adds up block by block (:meth:`add`) to what all the scores at once give.

    What is reported in order of first appearance carries the sort key of where it first
    appeared (a conversation's key, a handoff's key), so the order of the sum does not depend
    on the order the blocks are added in.
    """

    facts: int = 0
    failed: int = 0
    by_cause: Counter[str] = field(default_factory=Counter)
    #: the not_applicable items of a conversation -> [conversations, first key]
    na: dict[tuple[tuple[str, str], ...], list[Any]] = field(default_factory=dict)
    #: (from_agent, to_agent) -> [handoffs, first key]
    pairs: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    pair_context: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    loops: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    violations: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    #: routing cases counted with the route each took (``metrics._routing.count_routes``)
    routes: dict[Any, int] = field(default_factory=dict)

    def add(self, other: ScoreSummary) -> None:
        """Add another block's summary to this one."""
        self.facts += other.facts
        self.failed += other.failed
        self.by_cause.update(other.by_cause)
        # the na and the pairs dicts: [count, first key] by key
        both: tuple[tuple[dict[Any, list[Any]], dict[Any, list[Any]]], ...] = (
            (self.na, other.na), (self.pairs, other.pairs))
        for mine, theirs in both:
            for k, (n, first) in theirs.items():
                got = mine.get(k)
                if got is None:
                    mine[k] = [n, first]
                else:
                    got[0] += n
                    got[1] = min(got[1], first)
        self.pair_context.update(other.pair_context)
        self.loops.extend(other.loops)
        self.violations.extend(other.violations)
        for k, n in other.routes.items():
            self.routes[k] = self.routes.get(k, 0) + n


def summarize_scores(scores: Sequence[ConversationScore], keys: Sequence[Any],
                     handoffs: Any) -> ScoreSummary:
    """The :class:`ScoreSummary` of some scores: ``keys`` sorts each score's conversation
    among all of a run's, and ``handoffs`` yields ``(key, (from_agent, to_agent))`` for every
    handoff of these conversations, its key sorting it among all of a run's handoffs."""
    out = ScoreSummary()
    out.failed = sum(map(attrgetter("judge_errors"), scores))
    out.facts = sum(map(attrgetter("n_facts"), scores))
    for d in filter(None, map(attrgetter("errors_by_cause"), scores)):
        out.by_cause.update(d)
    na = out.na
    for key, s in zip(keys, scores):
        items = tuple(s.not_applicable.items())
        got = na.get(items)
        if got is None:
            na[items] = [1, key]
        else:
            got[0] += 1
            if key < got[1]:  # a block's rows need not come in key order
                got[1] = key
        if s.loops:
            out.loops.extend((key, lp) for lp in s.loops)
        if s.violations:
            out.violations.extend((key, v) for v in s.violations)
    pairs = out.pairs
    for key, pair in handoffs:
        pair = tuple(pair)
        got = pairs.get(pair)
        if got is None:
            pairs[pair] = [1, key]
        else:
            got[0] += 1
            if key < got[1]:
                got[1] = key
    out.pair_context.update(chain.from_iterable(map(attrgetter("pair_context"), scores)))
    out.routes = count_routes([c for s in scores for c in s.cases],
                              [s.route for s in scores for _ in s.cases])
    return out


def aggregate_summary(per_conv: pd.DataFrame, summary: ScoreSummary, ledger: pd.DataFrame, *,
                      labeled_set: LabeledSet | None = None, split: str | None = None,
                      traces: Sequence[MultiAgentTrace] = (), n_resamples: int = 2000,
                      confidence: float = 0.95, seed: int = 0) -> EvaluationResult:
    """The result from the per-conversation frame (in order), the scores' summary and the
    ledger: aggregates with bootstrap CIs, pairs, matrix, routing."""
    import pandas as pd


    n = len(per_conv)
    judge_errors = JudgeErrorSummary(total=summary.facts, judged=summary.facts - summary.failed,
                                     failed=summary.failed,
                                     by_cause=dict(sorted(summary.by_cause.items())))
    not_applicable = _not_applicable(summary.na)
    aggregates = _bootstrap_means(per_conv, AGGREGATED, n_resamples=n_resamples,
                                  confidence=confidence, seed=seed)
    aggregates["note"] = [_note(m, k, n, judge_errors, not_applicable)
                          for m, k in zip(aggregates["metric"], aggregates["n"])]
    pair_counts = _pair_counts(summary.pairs)
    matrix = (pair_counts.unstack(fill_value=0).rename_axis(index="from_agent",
                                                            columns="to_agent")
              if len(pair_counts) else pd.DataFrame())
    routing: dict[str, Any] = {}
    if summary.routes:  # score_routing and routing_confusion over every case
        routing = routing_report(summary.routes)
        routing["confusion"] = confusion_from_counts(summary.routes)
    provenance = {"maev_kit_version": __version__,
                  "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "labeled_set": ({"name": labeled_set.name,
                                   "version": labeled_set.version,
                                   "hash": labeled_set.content_hash,
                                   "labels_hash": labeled_set.labels_hash}
                                  if labeled_set else None),
                  "split": split, "confidence": confidence, "judge_card": None,
                  "n_conversations": n, "n_items": len(ledger)}
    by_key = itemgetter(0)
    return EvaluationResult(
        per_conversation=per_conv, aggregates=aggregates, handoff_matrix=matrix,
        pair_stats=_pair_stats(pair_counts, ledger, summary.pair_context), ledger=ledger,
        loops=[lp for _, lp in sorted(summary.loops, key=by_key)],
        violations=[v for _, v in sorted(summary.violations, key=by_key)], routing=routing,
        judge={}, provenance=provenance, traces=list(traces),
        judge_errors=judge_errors, not_applicable=not_applicable)


def _pair_counts(pairs: dict[tuple[str, str], list[Any]]) -> pd.Series:
    """Handoffs per (from_agent, to_agent), most first, ties in order of first appearance
    (what ``DataFrame.value_counts`` gives)."""
    import pandas as pd

    if not pairs:
        return pd.Series([], dtype="int64")
    ordered = sorted(pairs.items(), key=lambda kv: kv[1][1])  # first appearance
    index = pd.MultiIndex.from_tuples([k for k, _ in ordered], names=["from_agent", "to_agent"])
    return pd.Series([v[0] for _, v in ordered], index=index, dtype="int64",
                     name="count").sort_values(ascending=False, kind="stable")


def _not_applicable(groups: dict[tuple[tuple[str, str], ...], list[Any]]
                    ) -> dict[str, dict[str, Any]]:
    """Component → how many conversations it was n/a for, and why (``groups``: each
    conversation's n/a items → [conversations, first key])."""
    reasons: dict[str, Counter[str]] = {}
    # a why's first conversation is its first group's first: groups in order of first one
    for items, (n, _) in sorted(groups.items(), key=lambda kv: kv[1][1]):
        for comp, why in items:
            reasons.setdefault(comp, Counter())[why] += n
    out = {}
    for comp in ("handoff", "retention", "routing"):
        if comp not in reasons:
            continue
        counts = reasons[comp]
        reason = (next(iter(counts)) if len(counts) == 1
                  else "; ".join(f"{why} ({n})" for why, n in counts.most_common()))
        out[comp] = {"conversations": sum(counts.values()), "reason": reason}
    return out


def _note(metric: str, n: int, total: int, judge_errors: JudgeErrorSummary,
          not_applicable: dict[str, dict[str, Any]]) -> str:
    """Why a summary row is n/a or over fewer conversations; the retention rows' fact counts."""
    comp = METRIC_COMPONENT.get(metric)
    parts = []
    if comp == "retention" and judge_errors.total:
        parts.append(judge_errors.note())
    if comp is None:  # the composite
        if n == 0 and total:
            parts.append("n/a: no component applies to any conversation")
        elif n < total:
            parts.append(f"n/a for {total - n} of {total} conversations: no component applies")
    elif comp in not_applicable:
        why = not_applicable[comp]["reason"]
        parts.append(f"n/a: {why}" if n == 0 else f"n/a for {total - n} of {total} "
                     f"conversations: {why}")
    return "; ".join(parts)


def _ledger(items: Sequence[RetentionItem], run: JudgeRun | None,
            sources: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per fact judged; ``fact_source`` from ``sources`` (by item id), else ``context`` for a fact derived from ``context_passed``, else ``expectations``."""
    import pandas as pd

    verdicts = {v.item_id: v for v in (run.verdicts if run else [])}
    sources = sources or {}
    first_source: dict[tuple[str, str], str] = {}  # a fact's later hops keep its first source
    rows = []
    for it in items:
        v = verdicts[it.item_id]
        source = sources.get(it.item_id) or first_source.get((it.conversation_id, it.fact_key)) \
            or ("context" if it.derived else "expectations")
        first_source.setdefault((it.conversation_id, it.fact_key), source)
        sp = v.span
        rows.append((it.item_id, it.conversation_id, it.handoff_index, it.hop, it.from_agent,
                     it.to_agent, it.fact_id, it.fact_key, it.fact, source, v.label,
                     v.rationale, "; ".join(v.evidence),
                     sp.describe() if sp else None, sp.turn_index if sp else None,
                     sp.part if sp else None, sp.field if sp else None,
                     sp.start if sp else None, sp.end if sp else None, v.error,
                     (v.cause or "other") if v.error else None))
    return ledger_dtypes(pd.DataFrame(rows, columns=list(_LEDGER)))


#: The ledger's integer columns that may be missing (nullable ``Int64``).
_LEDGER_NULLABLE_INTS = ("evidence_turn", "evidence_part", "evidence_start", "evidence_end")


def ledger_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """The ledger with its nullable integer columns as ``Int64`` (a ledger read back from
    Parquet, or put together from parts, has them as floats)."""
    for col in _LEDGER_NULLABLE_INTS:
        if col in frame.columns and frame[col].dtype != "Int64":
            frame[col] = frame[col].astype("Int64")
    return frame


def _pair_stats(pair_counts: pd.Series, ledger: pd.DataFrame,
                ctx: Counter[tuple[str, str, bool]]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for (fa, ta), n in pair_counts.items():
        sub = ledger[(ledger["from_agent"] == fa) & (ledger["to_agent"] == ta)]
        c = {lab: int((sub["label"] == lab).sum()) for lab in _LABELS}
        judged = sum(c.values())
        ok, checked = ctx[(fa, ta, True)], ctx[(fa, ta, True)] + ctx[(fa, ta, False)]
        rows.append({"from_agent": fa, "to_agent": ta, "handoffs": int(n), "facts": len(sub),
                     **c, "judge_errors": len(sub) - judged,
                     "retention_rate": round(c["retained"] / judged, 3) if judged else math.nan,
                     "context_complete": round(ok / checked, 3) if checked else math.nan})
    return pd.DataFrame(rows, columns=list(_PAIRS))


_BOOTSTRAP_CHUNK = 4_000_000  # draws held at once (32 MB)


def _distinct_rows(columns: Sequence[Any], limit: int) -> tuple[Any, Any] | None:
    """The distinct rows of equal-length float arrays (NaN equal to NaN): ``(first,
    counts)``, the index of each one's first row and how many rows it has, in lexicographic
    order of the rows (so that they do not depend on the order of the rows); None when there
    are more than ``limit``."""
    import numpy as np
    import pandas as pd

    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:  # one code per distinct row, column by column
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        if len(uniques) > limit:
            return None
        key, distinct = pd.factorize(key * len(uniques) + codes)  # < n**2: fits in int64
        if len(distinct) > limit:
            return None
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    order = np.lexsort([column[first] for column in reversed(columns)])
    return first[order], counts[order]


def _bootstrap_means(frame: pd.DataFrame, columns: Sequence[str], *, n_resamples: int,
                     confidence: float, seed: int) -> pd.DataFrame:
    """Mean and percentile-bootstrap CI of each column over the rows where it is not NaN.

    Resampling the ``n`` rows with replacement is done as a multinomial draw of ``n`` over
    the *distinct* rows (as :class:`~maev_kit.agreement._bootstrap.PatternBootstrap` does
    for labels): the same distribution of resampled sums, at a cost that grows with the
    number of distinct rows, not with ``n``. Per-conversation scores take few distinct
    values (525 distinct rows among 200,000 generated conversations), so 200 resamples of a
    million rows take 0.3 s instead of 3.7 s. When more than a quarter of the rows are
    distinct, row indices are drawn instead (cheaper than a multinomial over most rows; then
    the draws depend on the order of the rows). The distinct rows are in lexicographic order,
    so the multinomial's interval does not depend on the order of the rows. Memory is
    bounded by a chunk of ``_BOOTSTRAP_CHUNK`` draws, not by ``n_resamples`` x ``n``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    n = len(frame)
    alpha = (1 - confidence) / 2
    table = {col: frame[col].to_numpy(dtype=float) if n else np.array([]) for col in columns}
    live = [col for col in columns if (~np.isnan(table[col])).any()]
    k = len(live)
    sums_counts = np.empty((n_resamples, 2 * k))
    if live:
        distinct = _distinct_rows([table[col] for col in live], n // 4)
        drawn = distinct[0] if distinct is not None else slice(None)  # distinct rows, or all
        values = np.column_stack([table[col][drawn] for col in live])
        # the values (NaN as 0) and presence (1/0) of what is drawn, side by side: one
        # resample's sums are how often it drew each row times this matrix
        matrix = np.column_stack([np.nan_to_num(values, nan=0.0),
                                  (~np.isnan(values)).astype(float)])
        step = max(1, _BOOTSTRAP_CHUNK // len(values))
        for start in range(0, n_resamples, step):
            m = min(step, n_resamples - start)
            if distinct is not None:  # a multinomial draw over the distinct rows
                draws = rng.multinomial(n, distinct[1] / n, size=m)
            else:  # most rows distinct: draw rows, counted (a BLAS product, not a gather)
                idx = rng.integers(0, n, size=(m, n))
                idx += np.arange(m)[:, None] * n  # resample r's draws counted in row r
                draws = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
                del idx
            sums_counts[start:start + m] = draws.astype(float) @ matrix
    sums = {col: sums_counts[:, j] for j, col in enumerate(live)}
    counts_of = {col: sums_counts[:, k + j] for j, col in enumerate(live)}
    for col in columns:
        values = table[col]
        ok = ~np.isnan(values)
        if not ok.any():
            rows.append((col, float("nan"), float("nan"), float("nan"), 0))
            continue
        mean = float(values[ok].mean())
        kept = counts_of[col] > 0
        boot = sums[col][kept] / counts_of[col][kept]
        lo, hi = (np.quantile(boot, [alpha, 1 - alpha]) if boot.size else (np.nan, np.nan))
        rows.append((col, round(mean, 4), round(float(lo), 4), round(float(hi), 4),
                     int(ok.sum())))
    return pd.DataFrame(rows, columns=["metric", "mean", "ci_low", "ci_high", "n"])


def _warn(result: EvaluationResult) -> None:
    """One JudgeErrorWarning when facts failed; one NotApplicableWarning when components are n/a."""
    s = result.judge_errors
    if s.failed:
        causes = s.causes()
        warnings.warn(f"{s.failed} of {s.total} facts could not be judged"
                      + (f" ({causes})" if causes else "") + ": they are left out of every "
                      "rate (see result.judge_errors and the ledger's error column)",
                      JudgeErrorWarning, stacklevel=3)
    na = result.not_applicable
    if na:
        total = len(result.per_conversation)
        phrases = [f"{info['conversations']} {info['reason']}" for info in na.values()]
        first = next(iter(na.values()))["reason"]  # "no key facts", "not judged (…)"
        verb = "have" if first.startswith("no ") else "were"
        phrases[0] = phrases[0].replace(" ", f" of {total} conversations {verb} ", 1)
        warnings.warn(", ".join(phrases) + ": those components are n/a (NaN) there and the "
                      "composite is over the others (pass not_applicable='article' for the "
                      "article's numbers)", NotApplicableWarning, stacklevel=3)
