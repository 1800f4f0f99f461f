"""How :func:`~maev_kit.evaluation.evaluate` is asked to score: one frozen options object."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from maev_kit.errors import InputError

__all__ = ["DEFAULT_JUDGE", "EvaluationOptions", "NotApplicable"]

NotApplicable = Literal["na", "article"]
JudgeMode = Literal["sync", "batch"]


class _DefaultJudge(str):
    """The default judge name: ``"heuristic"``, unless a judge card names another."""


#: ``evaluate``'s default ``judge``: the heuristic, or the card's judge when a card is given.
DEFAULT_JUDGE = _DefaultJudge("heuristic")


@dataclass(frozen=True)
class EvaluationOptions:
    """Everything :func:`~maev_kit.evaluation.evaluate` can be told, checked once.

    ``evaluate(source, options)`` takes one; ``evaluate(source, judge="gpt-4o-mini")`` builds
    one from its keyword arguments, and ``evaluate(source, options, seed=1)`` changes some
    fields of the one given (:meth:`replace`). The same options can be saved beside a result
    and reused for next week's run.

    Attributes
    ----------
    judge : judge object, offline judge name (``"heuristic"``), or a litellm model string
        (``"gpt-4o-mini"``, ``"openai/<name>"`` with ``backend`` params) for the LLM judge;
        None skips retention (n/a, "not judged") and scores the deterministic metrics only.
        Default: the heuristic, or the judge card's judge when ``judge_card`` is given.
    judge_card : JudgeCard or path, optional
        The card pinned by calibration; a warning is issued when ``judge`` or the labeled set
        no longer matches it, an error when the judge given differs (unless
        ``allow_mismatch``).
    backend : backend object or litellm model string, for LLM judges.
    prompt : ``"v1"``, ``"v2"``, ``"v3"`` or a template, when ``judge`` is a model string.
    allow_mismatch : score with a judge that differs from ``judge_card``'s (a warning).
    expectations : path or records, when the source is traces (a labeled set brings its own).
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
    human_labels : labels file, LabelStore or records, optional
        People's labels for the corrected estimates (``result.estimates``); default: a
        labeled set's ``labels.jsonl``.
    label_sample : LabelSample or path, optional
        The random sample of judged items those labels follow (``maev sample``); default: a
        labeled set's ``label_sample.json`` when it has one. Without one the rates are
        judge-only, "not corrected for judge error".
    target_half_width : float, default 0.05
        The ± width the label budget (``result.label_budget``) plans for.
    n_resamples, confidence, seed : bootstrap over conversations for the aggregates' CIs.
    criteria : Criterion, built-in name or TOML file, or a list of them, optional
        Your own questions (:mod:`maev_kit.criteria`), each asked of every conversation,
        handoff, turn or agent it applies to; ``result.criteria[name]`` holds each label's
        share with its CI over conversations (traces need no handoff for conversation, turn
        and agent scope). ``human_labels`` of a criterion's items give its corrected estimate.
    criteria_judge : the judge of the criteria: a Python function ``judge(item) -> label``,
        ``"module:function"``, a model string or a backend object; default ``judge``. A
        function given as ``judge`` judges the criteria only (retention is then not judged).
    cache, progress, max_concurrency, timeout, mode : passed to
        :func:`~maev_kit.runner.run_judge` (``timeout``: seconds per request; ``mode="batch"``
        judges through the provider's batch API at batch prices).

    Examples
    --------
    >>> opts = EvaluationOptions(judge=None, split="test")
    >>> opts.replace(seed=7).seed
    7
    >>> EvaluationOptions(not_applicable="none")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: `not_applicable` must be 'na' or 'article', got 'none'
    >>> opts.replace(sed=1)
    Traceback (most recent call last):
    ...
    TypeError: EvaluationOptions got an unexpected keyword argument 'sed' (did you mean 'seed'?)
    """

    judge: Any = DEFAULT_JUDGE
    judge_card: Any = None
    backend: Any = None
    prompt: Any = None
    allow_mismatch: bool = False
    expectations: Any = None
    facts: Any = "auto"
    contracts: Any = None
    split: str | None = None
    triage_agent: str | None = "triage"
    max_handoffs: int = 5
    weights: Mapping[str, float] | None = None
    not_applicable: NotApplicable = "na"
    human_labels: Any = None
    label_sample: Any = None
    target_half_width: float = 0.05
    n_resamples: int = 2000
    confidence: float = 0.95
    seed: int = 0
    cache: Any = None
    progress: bool = True
    max_concurrency: int = 16
    timeout: float = 60.0
    mode: JudgeMode = "sync"
    criteria: Any = None
    criteria_judge: Any = None

    def __post_init__(self) -> None:
        if self.not_applicable not in ("na", "article"):
            raise InputError("`not_applicable` must be 'na' or 'article', got "
                             f"{self.not_applicable!r}")
        hw = self.target_half_width
        if isinstance(hw, bool) or not isinstance(hw, (int, float)) or not 0 < hw < 1:
            raise InputError(f"`target_half_width` must be a number in (0, 1), e.g. 0.05; got "
                             f"{hw!r}")
        if self.judge is None and self.not_applicable == "article":
            raise InputError("judge=None scores no retention, which the article's composite "
                             "needs: pass not_applicable='na' or name a judge")

    @classmethod
    def build(cls, options: EvaluationOptions | None = None,
              changes: Mapping[str, Any] | None = None) -> EvaluationOptions:
        """``options`` (default: the defaults) with ``changes`` applied; an unknown name is a
        :class:`TypeError` that suggests the closest field."""
        changes = dict(changes or {})
        unknown = [k for k in changes if k not in _FIELDS]
        if unknown:
            close = difflib.get_close_matches(unknown[0], _FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{cls.__name__} got an unexpected keyword argument "
                            f"{unknown[0]!r}{hint}")
        if options is None:
            return cls(**changes)
        if not isinstance(options, EvaluationOptions):
            raise InputError("`options` must be an EvaluationOptions (or leave it out and pass "
                             f"keyword arguments), got {type(options).__name__}")
        return dataclasses.replace(options, **changes) if changes else options

    def replace(self, **changes: Any) -> EvaluationOptions:
        """A copy with some fields changed (checked as the constructor checks them)."""
        return self.build(self, changes)

    @property
    def run_options(self) -> dict[str, Any]:
        """What :func:`~maev_kit.runner.run_judge` takes besides the judge and the items."""
        return {"cache": self.cache, "progress": self.progress,
                "max_concurrency": self.max_concurrency, "timeout": self.timeout,
                "mode": self.mode}

    @property
    def score_options(self) -> dict[str, Any]:
        """What :func:`~maev_kit.evaluation.score_conversation` takes besides its data."""
        return {"triage_agent": self.triage_agent, "max_handoffs": self.max_handoffs,
                "weights": self.weights, "not_applicable": self.not_applicable}

    @property
    def fact_options(self) -> dict[str, Any]:
        """What the llm fact proposer takes (cache, progress, concurrency, timeout)."""
        return {"cache": self.cache, "progress": self.progress,
                "max_concurrency": self.max_concurrency, "timeout": self.timeout}


_FIELDS = tuple(f.name for f in dataclasses.fields(EvaluationOptions))


def is_default_judge(judge: Any) -> bool:
    """Whether ``judge`` is the default (not a judge the caller named)."""
    return isinstance(judge, _DefaultJudge)

