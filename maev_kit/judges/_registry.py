"""Resolve a judge by name: :func:`resolve_judge` turns what a user names (an offline judge, a
model string, a judge or backend object) into a judge and its backend — the one function
``evaluate``, ``calibrate`` and the CLI use; :func:`get_judge` builds a judge by its own name."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from maev_kit.errors import InputError
from maev_kit.judges._prompts import DEFAULT_PROMPT
from maev_kit.retention import RetentionItem

__all__ = ["JUDGE_NAMES", "OFFLINE_JUDGES", "get_judge", "resolve_judge"]

#: Names :func:`get_judge` accepts.
JUDGE_NAMES: tuple[str, ...] = ("heuristic", "retention-v1", "retention-v2", "retention-v3",
                                 "tfidf-logreg")
#: Judges that run without a model (what :func:`resolve_judge` does not take for a model string).
OFFLINE_JUDGES: tuple[str, ...] = ("heuristic", "tfidf-logreg")
_PROMPT_VARIANTS = ("retention-v1", "retention-v2", "retention-v3")


def is_judge(obj: Any) -> bool:
    return all(hasattr(obj, a) for a in ("name", "version", "offline"))


def is_backend(obj: Any) -> bool:
    return callable(getattr(obj, "complete", None)) and hasattr(obj, "cache_identity")


def check_prompt(prompt: Any) -> Any:
    """None, or the :class:`~maev_kit.judges.PromptTemplate` for a builtin id, a template file
    path or a template (an unknown one is an InputError listing the builtins)."""
    from maev_kit.judges._prompts import resolve_prompt

    if prompt is None:
        return None
    return resolve_prompt(prompt)


def resolve_judge(judge: Any, *, prompt: Any = None, backend: Any = None,
                  backend_params: Mapping[str, Any] | None = None) -> tuple[Any, Any]:
    """The judge object and its backend (None for an offline judge) for what a user names.

    The one place names become judges: ``evaluate``, ``calibrate`` and the CLI's ``--judge``
    all go through it, so they accept the same names and reject the same mistakes.

    ====================================  ===================================================
    ``"heuristic"``, ``"tfidf-logreg"``   the offline judge, backend None (``prompt`` and
                                          ``backend_params`` do not apply and are ignored)
    a name close to one of those          :class:`~maev_kit.errors.InputError` suggesting it
    ``"retention-v1"`` / ``-v2`` / ``-v3`` the LLM judge with that prompt; needs ``backend``
    any other string                      a litellm model string: ``RetentionJudge(prompt or
                                          "v3")`` with ``backend`` if given, else
                                          ``LiteLLMBackend(model, **backend_params)``
    a backend object                      ``RetentionJudge(prompt or "v3")`` with it
    a judge object                        itself, with ``backend``
    ====================================  ===================================================

    ``prompt`` is a builtin id (``"v1"``, ``"v2"``, ``"v3"``), a template file path or a
    :class:`~maev_kit.judges.PromptTemplate`; an unknown one is an InputError listing the
    builtins. litellm is not imported.

    Examples
    --------
    >>> judge, backend = resolve_judge("heuristic")
    >>> judge.name, backend
    ('heuristic', None)
    >>> judge, backend = resolve_judge("openai/my-judge", prompt="v2",
    ...                                backend_params={"api_base": "http://127.0.0.1:8000/v1"})
    >>> judge.name, backend.model
    ('retention-v2', 'openai/my-judge')
    >>> resolve_judge("heurstic")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: unknown judge 'heurstic'; did you mean 'heuristic'?
    >>> resolve_judge("gpt-4o-mini", prompt="v5")
    Traceback (most recent call last):
    ...
    maev_kit.errors.InputError: unknown prompt 'v5': not a builtin prompt (v1, v2, v3, v4) and no template file at that path
    """
    prompt = check_prompt(prompt)
    if is_judge(judge):
        return judge, backend
    if is_backend(judge):
        return _judge_for_backend(judge, prompt, backend)
    if not isinstance(judge, str):
        raise TypeError(f"`judge` must be a judge name ('heuristic', 'tfidf-logreg'), a litellm "
                        f"model string ('gpt-4o-mini'), a judge object or a backend object; got "
                        f"{type(judge).__name__}")
    return _judge_for_name(judge, prompt, backend, backend_params)


def _judge_for_backend(judge: Any, prompt: Any, backend: Any) -> tuple[Any, Any]:
    """A backend object named as the judge: the LLM judge with ``prompt`` (or the default) on it."""
    if backend is not None:
        raise InputError("pass the backend once: as `judge` or as `backend`, not both")
    from maev_kit.judges._llm import RetentionJudge

    return RetentionJudge(prompt=prompt or DEFAULT_PROMPT), judge  # type: ignore[arg-type]


def _judge_for_name(judge: str, prompt: Any, backend: Any,
                    backend_params: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """A judge named by a string: an offline judge, a prompt variant or a model string (a near
    miss of an offline judge's name is an InputError suggesting it)."""
    name = judge.strip()
    low = name.lower()
    if not name:
        raise InputError("the judge name is empty: name an offline judge "
                         f"({', '.join(OFFLINE_JUDGES)}) or a model such as gpt-4o-mini")
    if low in OFFLINE_JUDGES:
        return get_judge(low), None
    if low in _PROMPT_VARIANTS:
        return _prompt_variant_judge(judge, low, prompt, backend)
    if "/" not in name:
        close = difflib.get_close_matches(low, OFFLINE_JUDGES, n=1) or [
            n for n in OFFLINE_JUDGES if len(low) >= 4 and n.startswith(low)]
        if close:
            raise InputError(f"unknown judge {judge!r}; did you mean {close[0]!r}?")
    return _model_judge(name, prompt, backend, backend_params)


def _prompt_variant_judge(judge: str, low: str, prompt: Any, backend: Any) -> tuple[Any, Any]:
    """``"retention-v1"``/``-v2``/``-v3`` (``low``): the LLM judge with that prompt on
    ``backend``, which it needs; a different ``prompt`` is an InputError."""
    variant = low.rsplit("-", 1)[1]
    if backend is None:
        raise InputError(f"{judge!r} is a prompt variant, not a judge model: name the model "
                         f"as the judge and the variant as the prompt, e.g. --judge "
                         f"gpt-4o-mini --prompt {variant}")
    if prompt is not None and prompt.builtin_id != variant:
        raise InputError(f"judge {judge!r} uses prompt {variant!r}, but prompt "
                         f"{prompt.name!r} was given; name one")
    from maev_kit.judges._llm import RetentionJudge

    return RetentionJudge(prompt=variant), backend  # type: ignore[arg-type]


def _model_judge(name: str, prompt: Any, backend: Any,
                 backend_params: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """A litellm model string: the LLM judge with ``prompt`` (or the default) on ``backend``,
    else on ``LiteLLMBackend(name, **backend_params)`` (its ValueError an InputError)."""
    from maev_kit.judges._llm import RetentionJudge

    if backend is None:
        from maev_kit.backends import LiteLLMBackend

        try:
            backend = LiteLLMBackend(name, **dict(backend_params or {}))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    return RetentionJudge(prompt=prompt or DEFAULT_PROMPT), backend  # type: ignore[arg-type]


def get_judge(
    spec: Any,
    *,
    train_items: Sequence[RetentionItem] | None = None,
    train_labels: Sequence[str] | Mapping[str, str] | None = None,
) -> Any:
    """A judge from its name.

    ======================  ================================================================
    ``"heuristic"``         :class:`HeuristicJudge`, rule-based, offline
    ``"tfidf-logreg"``      :class:`LearnedJudge`, offline, needs a training split (below)
    ``"retention-v1"``      :class:`RetentionJudge` with the article's prompt (an LLM judge)
    ``"retention-v2"``      :class:`RetentionJudge` with label definitions and examples
    ======================  ================================================================

    A judge object passed as ``spec`` is returned as is.

    **Judges that learn.** ``"tfidf-logreg"`` must be fit on labeled items before it can judge.
    Pass ``train_items`` and ``train_labels`` (a label per item, or ``{item_id: label}``) and
    it comes back fitted; otherwise it comes back unfitted with ``requires_fit = True`` and
    ``is_fitted = False`` — fit it yourself with ``judge.fit(items, labels)``. Calibration
    code can treat every judge alike::

        judge = get_judge(name)
        if getattr(judge, "requires_fit", False):
            judge.fit(dev_items, dev_labels)   # the dev/training split only
        verdicts = judge.judge_items(test_items)  # refuses items it was trained on

    Training data given to a judge that does not learn is an error (it would be ignored).

    Examples
    --------
    >>> get_judge("heuristic").name
    'heuristic'
    >>> get_judge("retention-v2").version.startswith("v2-")
    True
    >>> get_judge("tfidf-logreg").is_fitted
    False
    >>> get_judge("heuristc")
    Traceback (most recent call last):
    ...
    ValueError: unknown judge 'heuristc'; did you mean 'heuristic'? Known judges: heuristic, retention-v1, retention-v2, retention-v3, tfidf-logreg
    """
    if not isinstance(spec, str):
        if all(hasattr(spec, a) for a in ("name", "version", "offline")):
            if train_items is not None or train_labels is not None:
                raise ValueError("`train_items`/`train_labels` go with a judge name, not a "
                                 "judge object; call its `fit` method instead")
            return spec
        raise TypeError(f"`spec` must be a judge name such as 'heuristic' or a judge object, "
                        f"got {type(spec).__name__}")
    name = spec.strip().lower()
    learns = name == "tfidf-logreg"
    if not learns and (train_items is not None or train_labels is not None):
        raise ValueError(f"judge {spec!r} does not learn from labels; drop `train_items` and "
                         "`train_labels` (only 'tfidf-logreg' takes them)")
    if name == "heuristic":
        from maev_kit.judges._heuristic import HeuristicJudge

        return HeuristicJudge()
    if name in _PROMPT_VARIANTS:
        from maev_kit.judges._llm import RetentionJudge

        return RetentionJudge(prompt=name.rsplit("-", 1)[1])  # type: ignore[arg-type]
    if learns:
        from maev_kit.judges._learned import LearnedJudge

        judge = LearnedJudge()
        if (train_items is None) != (train_labels is None):
            raise ValueError("pass both `train_items` and `train_labels` (or neither)")
        if train_items is not None:
            judge.fit(train_items, train_labels)  # type: ignore[arg-type]
        return judge
    close = difflib.get_close_matches(name, JUDGE_NAMES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    raise ValueError(f"unknown judge {spec!r}{hint} Known judges: {', '.join(JUDGE_NAMES)}")
