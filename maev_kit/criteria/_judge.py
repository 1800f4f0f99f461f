"""Judges of a criterion: a Python callable ``judge(item) -> label``, or a language model asked
with the criterion prompt; and :func:`judge_criterion`, which runs either over items.

A model judge runs on the kit's request engine (:func:`maev_kit.runner.run_requests`): the
same concurrency, retries, fail-fast, reply cache and accounting as retention judging. A call
that failed, a callable that raised, or an answer that is not one of the criterion's labels is
an error verdict (with its cause), never a label.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit.criteria._criterion import Criterion, CriterionItem
from maev_kit.criteria._prompt import (
    DEFAULT_CRITERION_PROMPT,
    build_messages,
    criterion_prompt,
    parse_reply,
)
from maev_kit.errors import ERROR_CAUSES, InputError
from maev_kit.judges.internal import BaseVerdict
from maev_kit.runner.internal import BaseRun

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CallableJudge", "CriterionRun", "CriterionVerdict", "LLMCriterionJudge",
           "criterion_judge", "criterion_of", "judge_criterion"]

_FUNCTION = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def is_function_name(name: str) -> bool:
    """True when ``name`` names a Python function as ``module:function`` (not a model).

    >>> is_function_name("my_judges:says_yes"), is_function_name("ollama/llama3:8b")
    (True, False)
    """
    name = name.strip()
    return bool(_FUNCTION.fullmatch(name)) and "/" not in name


@dataclass(frozen=True)
class CriterionVerdict(BaseVerdict):
    """A judge's answer for one criterion item: a label (one of the criterion's) with a reason
    and evidence, or an error with its cause (one of :data:`maev_kit.errors.ERROR_CAUSES`)."""

    def __post_init__(self) -> None:
        if (self.label is None) == (self.error is None):
            raise ValueError(f"CriterionVerdict for {self.item_id!r}: give a label or an "
                             "error, not both or neither")
        if self.cause is not None and self.cause not in ERROR_CAUSES:
            raise ValueError(f"`cause` must be one of {ERROR_CAUSES}, got {self.cause!r}")


@dataclass
class CriterionRun(BaseRun[CriterionVerdict, CriterionItem]):
    """The verdicts of one judge over criterion items, in item order, with the run's
    accounting (``stats``: items, requests, cache hits, errors, errors by cause, tokens, cost,
    latency — as :class:`maev_kit.runner.JudgeRun`)."""

    def labels(self) -> dict[str, str]:
        """Item id → label, for the items that got one (errors left out)."""
        return {v.item_id: v.label for v in self.verdicts if v.label is not None}

    def to_frame(self) -> pd.DataFrame:
        """One row per item: item id, conversation id, label, rationale, evidence, error,
        cause, judge, version, model."""
        import pandas as pd

        conv = {it.item_id: it.conversation_id for it in self.items}
        return pd.DataFrame([{
            "item_id": v.item_id, "conversation_id": conv.get(v.item_id), "label": v.label,
            "rationale": v.rationale, "evidence": list(v.evidence), "error": v.error,
            "cause": v.cause, "judge": self.judge_name, "judge_version": self.judge_version,
            "model": self.model} for v in self.verdicts],
            columns=["item_id", "conversation_id", "label", "rationale", "evidence", "error",
                     "cause", "judge", "judge_version", "model"])


def criterion_of(items: Sequence[CriterionItem]) -> Criterion:
    """The one criterion ``items`` were made by (an :class:`InputError` when they mix
    criteria, hold an id twice or are not criterion items)."""
    if not items:
        raise InputError("no criterion items given")
    seen: set[str] = set()
    for i, it in enumerate(items):
        if not isinstance(it, CriterionItem):
            raise InputError(f"item {i} is a {type(it).__name__}, not a CriterionItem "
                             "(make items with criterion.items(traces))")
        if it.item_id in seen:
            raise InputError(f"item id {it.item_id!r} appears twice; pass each item once")
        seen.add(it.item_id)
    names = sorted({it.criterion for it in items})
    if len(names) > 1:
        raise InputError(f"the items belong to several criteria ({', '.join(names)}); "
                         "judge or calibrate one criterion at a time")
    return items[0]._criterion()  # an item made without its criterion: an InputError


class CallableJudge:
    """A Python function ``fn(item) -> label`` as a judge (offline).

    ``fn`` may also return a mapping with ``label`` (and ``reason``, ``evidence``). It raising,
    or returning something that is no answer to the item (:meth:`CriterionItem.answer`: one of
    its labels; for failure attribution an agent of that conversation, or ``agent@step``),
    gives an error verdict (cause ``other`` / ``unparseable``) for that item: the run goes on.

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> c = Criterion("polite", scope="turn", labels=("yes", "no"), question="Polite?")
    >>> items = c.items([MultiAgentTrace("c", turns=[AgentTurn("a", "r", "Please wait")])])
    >>> judge = CallableJudge(lambda it: "yes" if "please" in it.trace.turns[it.turn_index]
    ...                       .message.lower() else "no", name="says-please")
    >>> [v.label for v in judge.judge_items(items)]
    ['yes']
    """

    offline = True

    def __init__(self, fn: Callable[[CriterionItem], Any], *, name: str | None = None,
                 version: str = "1") -> None:
        if not callable(fn):
            raise TypeError(f"a callable judge needs a function, got {type(fn).__name__}")
        self.fn = fn
        self.name = name or _function_name(fn)
        self.version = version

    def __repr__(self) -> str:
        return f"CallableJudge({self.name!r})"

    def judge_items(self, items: Sequence[CriterionItem]) -> list[CriterionVerdict]:
        """One verdict per item, in item order."""
        if items:
            criterion_of(items)
        return [self._one(it) for it in items]

    def _one(self, item: CriterionItem) -> CriterionVerdict:
        try:
            got = self.fn(item)
        except Exception as exc:  # a bug in the function loses this item, not the run
            return CriterionVerdict(item.item_id, None, error=f"{self.name} raised "
                                    f"{type(exc).__name__}: {exc}", cause="other")
        reason = ""
        evidence: tuple[str, ...] = ()
        if isinstance(got, Mapping):
            reason = str(got.get("reason", "") or "")
            ev = got.get("evidence") or ()
            evidence = (ev,) if isinstance(ev, str) else tuple(str(e) for e in ev)
            got = got.get("label")
        try:
            label = item.answer(got)
        except InputError:
            return CriterionVerdict(item.item_id, None, raw=repr(got)[:200], cause="unparseable",
                                    error=f"{self.name} returned {got!r}, not one of "
                                          f"{', '.join(item.labels)}")
        return CriterionVerdict(item.item_id, label, reason, evidence)


def _function_name(fn: Any) -> str:
    module = getattr(fn, "__module__", None) or ""
    qual = getattr(fn, "__qualname__", None) or type(fn).__name__
    return f"{module}:{qual}" if module and module != "__main__" and "<" not in qual else qual


class LLMCriterionJudge:
    """A language model asked the criterion prompt, one request per item (no I/O itself:
    :func:`judge_criterion` sends the requests).

    ``version`` holds the prompt id and the prompt's hash, so the reply cache and a judge
    card change whenever the prompt text does.
    """

    offline = False
    name = "criterion-llm"
    unit = "item"

    def __init__(self, prompt: str = DEFAULT_CRITERION_PROMPT) -> None:
        self.prompt = criterion_prompt(prompt)
        self.version = f"{self.prompt.id}+{self.prompt.sha256[:12]}"

    def __repr__(self) -> str:
        return f"LLMCriterionJudge(prompt={self.prompt.id!r})"

    def build_messages(self, group: Sequence[CriterionItem]) -> list[dict[str, str]]:
        (item,) = group
        return build_messages(criterion_of([item]), item, self.prompt)

    def parse(self, text: str, group: Sequence[CriterionItem]) -> list[CriterionVerdict]:
        (item,) = group
        label, reason, evidence, error = parse_reply(text, item.labels)
        if error is not None:
            return [CriterionVerdict(item.item_id, None, error=error, raw=str(text)[:2000],
                                     cause="unparseable")]
        return [CriterionVerdict(item.item_id, label, reason, evidence)]

    def error_result(self, member: CriterionItem, error: str, cause: str) -> CriterionVerdict:
        return CriterionVerdict(member.item_id, None, error=error, cause=cause)

    def is_ok(self, result: CriterionVerdict) -> bool:
        return result.error is None

    def reply_tokens(self, group: Sequence[CriterionItem]) -> int:
        return 400


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``module:function`` names (an :class:`InputError` when it cannot be
    imported or is not callable)."""
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise InputError(f"judge {spec!r}: cannot import it ({type(exc).__name__}: {exc}); "
                         "name an importable function as module:function") from None
    if not callable(obj):
        raise InputError(f"judge {spec!r} is not callable")
    return obj  # type: ignore[no-any-return]


def criterion_judge(spec: Any, *, prompt: str = DEFAULT_CRITERION_PROMPT,
                    backend_params: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """(judge, backend) for a judge spec: a callable or ``"module:function"`` (offline, no
    backend); a litellm model string (``"gpt-4o-mini"``, ``"openai/<name>"`` with
    ``backend_params={"api_base": ...}``) or a backend object (the criterion prompt on it); or
    a judge object already made (an :class:`LLMCriterionJudge` needs a backend: name the
    model instead).
    """
    if isinstance(spec, (CallableJudge, LLMCriterionJudge)):
        if not spec.offline:
            raise InputError("an LLMCriterionJudge needs a model: name the model as the judge "
                             "(e.g. 'gpt-4o-mini')")
        return spec, None
    if isinstance(spec, str):
        name = spec.strip()
        if is_function_name(name):
            return CallableJudge(load_function(name), name=name), None
        if not name:
            raise InputError("the judge name is empty: name a model or module:function")
        from maev_kit.backends import LiteLLMBackend

        try:
            backend = LiteLLMBackend(name, **dict(backend_params or {}))
        except ValueError as exc:
            raise InputError(str(exc)) from None
        return LLMCriterionJudge(prompt), backend
    if callable(getattr(spec, "complete", None)) and hasattr(spec, "cache_identity"):
        return LLMCriterionJudge(prompt), spec  # a backend object
    if callable(spec):
        return CallableJudge(spec), None
    raise TypeError(f"a criterion judge is a function item -> label, 'module:function', a "
                    f"model string or a backend object; got {type(spec).__name__}")


def judge_criterion(judge: Any, items: Iterable[CriterionItem], backend: Any = None, *,
                    max_concurrency: int = 16, max_retries: int = 3, timeout: float = 60,
                    cache: Any = None, progress: bool = True,
                    backend_params: Mapping[str, Any] | None = None) -> CriterionRun:
    """Judge every criterion item with ``judge`` (a callable, ``"module:function"``, a model
    string or backend object, or a judge object with ``backend``).

    A model judge sends one request per item through :func:`maev_kit.runner.run_requests`
    (concurrent, retried, cached under ``.maev_cache/`` unless ``cache=False``).

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> c = Criterion("short", scope="conversation", labels=("yes", "no"), question="Short?")
    >>> items = c.items([MultiAgentTrace("c1", turns=[AgentTurn("a", "r", "ok")])])
    >>> run = judge_criterion(lambda it: "yes", items, progress=False)
    >>> run.labels(), run.stats["errors"]
    ({'short:c1': 'yes'}, 0)
    """
    items = list(items)
    criterion_of(items)
    if backend is None:
        judge, backend = criterion_judge(judge, backend_params=backend_params)
    elif not isinstance(judge, LLMCriterionJudge):
        raise InputError("`backend` goes with an LLMCriterionJudge; name the model as the judge")
    if backend is None:
        verdicts = judge.judge_items(items)
        errors = [v for v in verdicts if v.error]
        by_cause: dict[str, int] = {}
        for v in errors:
            by_cause[v.cause or "other"] = by_cause.get(v.cause or "other", 0) + 1
        stats = {"items": len(items), "requests": 0, "cache_hits": 0, "errors": len(errors),
                 "errors_by_cause": by_cause, "cost": None, "tokens": None,
                 "latency_p50": None, "latency_p95": None}
        return CriterionRun(verdicts, judge.name, str(judge.version), None, stats, tuple(items))
    from maev_kit.runner import run_requests

    run = run_requests(judge, [(it,) for it in items], backend,
                       max_concurrency=max_concurrency, max_retries=max_retries,
                       timeout=timeout, cache=cache, progress=progress,
                       desc=f"{items[0].criterion} · {getattr(backend, 'model', backend)}")
    verdicts = [got[0] for got in run.results]
    stats = {"items": len(items), **run.stats}
    return CriterionRun(verdicts, judge.name, str(judge.version), run.model, stats,
                        tuple(items))
