"""The flags the ``maev`` commands share: the judge flags (:class:`JudgeFlags`), the judge
card, facts and κ options, and the labeled set or trace source they read."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from maev_kit.cli._notes import note

from maev_kit.cli._output import _input_file
from maev_kit.errors import InputError

SET_HELP = "A labeled-set folder, or the name of a bundled one (support_desk, snli_calibration)."


OFFLINE_JUDGES = ("heuristic", "tfidf-logreg")


@dataclass(frozen=True)
class JudgeFlags:
    """The judge flags every judging command takes (``score``, ``report``, ``demo``,
    ``calibrate``), as given on the command line."""

    judges: tuple[str, ...]
    prompts: tuple[str, ...] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed, never written
    no_cache: bool = False
    no_progress: bool = False
    max_concurrency: int | None = None
    max_judge_errors: float = 0.05
    timeout: float | None = None
    batch: bool = False
    max_tokens: str | None = None
    temperature: float | None = None
    judge_params: tuple[str, ...] = ()
    fold_system: bool = False

    def refuse_model_flags(self, offline_judge: str, instead: str) -> None:
        """Raise when a flag that only a model judge reads was given for ``offline_judge``."""
        used = [f for f, v in (("--prompt", self.prompts), ("--api-base", self.api_base),
                               ("--api-key", self.api_key), ("--batch", self.batch),
                               ("--max-tokens", self.max_tokens),
                               ("--temperature", self.temperature is not None),
                               ("--judge-param", self.judge_params),
                               ("--fold-system", self.fold_system)) if v]
        if used:
            verb = "applies" if len(used) == 1 else "apply"
            raise InputError(f"{' and '.join(used)} only {verb} to a model judge; "
                             f"{offline_judge} runs offline (drop the flag, or {instead})")

    @property
    def judge(self) -> str:
        return self.judges[0]

    @property
    def prompt(self) -> str | None:
        return self.prompts[0] if self.prompts else None

    @property
    def cache(self) -> bool | None:
        return False if self.no_cache else None

    @property
    def progress(self) -> bool:
        return not self.no_progress

    @property
    def run_params(self) -> dict[str, Any]:
        """``cache``, ``progress`` and (when given) ``max_concurrency`` for evaluate/calibrate."""
        out: dict[str, Any] = {"cache": self.cache, "progress": self.progress}
        if self.max_concurrency is not None:
            out["max_concurrency"] = self.max_concurrency
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.batch:
            out["mode"] = "batch"
        return out

    def backend_params(self) -> dict[str, Any]:
        """The model judge's backend parameters: ``api_base`` / ``api_key`` (a local server
        needs no real key), then ``--judge-param`` pairs, ``--max-tokens`` and
        ``--temperature`` (recorded in the judge card)."""
        params: dict[str, Any] = generation_params(self.judge_params)
        if self.max_tokens is not None:
            params["max_tokens"] = _max_tokens(self.max_tokens)
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.fold_system:
            params["fold_system"] = True
        if self.api_base:
            params["api_base"] = self.api_base
            params["api_key"] = self.api_key or os.environ.get("OPENAI_API_KEY", "not-needed")
        elif self.api_key:
            params["api_key"] = self.api_key
        return params

    def resolve(self, judge: str) -> tuple[Any, Any]:
        """The judge object and its backend (None offline), via
        :func:`maev_kit.judges.resolve_judge`, with these flags' endpoint and key."""
        from maev_kit.judges import resolve_judge

        return resolve_judge(judge, prompt=self.prompt, backend_params=self.backend_params())

    def check(self) -> None:
        """Reject unknown judges (suggesting the closest), unknown prompts and flags that
        nothing would use, before any work starts."""
        for name in self.judges:
            _check_judge(name, self.prompts)
        if self.batch and self.no_cache:
            raise InputError("--batch keeps its answers and batch ids in the reply cache; "
                             "drop --no-cache")
        if all(_is_offline(j) for j in self.judges):
            self.refuse_model_flags(", ".join(self.judges), "pass --judge MODEL, e.g. "
                                                            "gpt-4o-mini")


#: Parameters --judge-param cannot set: the runner's (other flags) and the connection's.
_NOT_JUDGE_PARAMS = {"timeout": "--timeout", "request_timeout": "--timeout",
                     "num_retries": "the runner's retries", "max_retries": "the runner's retries",
                     "api_key": "--api-key", "api_base": "--api-base", "base_url": "--api-base",
                     "stream": "nothing (judges read whole replies)"}


def generation_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--judge-param KEY=VALUE`` pairs as litellm parameters; VALUE is read as JSON when it
    parses (``0.2``, ``true``, ``{"type": "json_object"}``), else kept as text.

    >>> generation_params(("top_p=0.9", "seed=7", "stop=END"))
    {'top_p': 0.9, 'seed': 7, 'stop': 'END'}
    """
    import json

    out: dict[str, Any] = {}
    for pair in pairs:
        key, eq, raw = pair.partition("=")
        key = key.strip()
        if not eq or not key or not key.replace("_", "").isalnum():
            raise InputError(f"--judge-param {pair!r}: give KEY=VALUE, e.g. --judge-param "
                             "top_p=0.9")
        if key in _NOT_JUDGE_PARAMS:
            raise InputError(f"--judge-param {key}: set it with {_NOT_JUDGE_PARAMS[key]}, "
                             "not --judge-param")
        try:
            out[key] = json.loads(raw)
        except ValueError:
            out[key] = raw
    if "max_tokens" in out:
        out["max_tokens"] = _max_tokens(str(out["max_tokens"]))
    return out


def _max_tokens(raw: str) -> Any:
    """``--max-tokens``: a positive count, ``auto`` (sized to each request) or ``none``."""
    text = str(raw).strip().lower()
    if text == "auto":
        return "auto"
    if text in ("none", "0"):
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise InputError(f"--max-tokens {raw!r}: give a number of tokens, 'auto' (200 + 150 "
                         "per fact, at most 2048) or 'none' (no cap)")
    return n


def _is_offline(judge: str) -> bool:
    return judge.strip().lower() in OFFLINE_JUDGES or judge.strip().lower() == "none"


def _check_judge(name: str, prompts: tuple[str, ...]) -> None:
    """Resolve ``name`` with each prompt the way evaluate and calibrate will (InputError on an
    unknown judge, with the closest name, or an unknown prompt)."""
    from maev_kit.judges import resolve_judge

    if not name.strip():
        raise InputError("--judge is empty; give an offline judge (heuristic, tfidf-logreg) "
                         "or a model string such as gpt-4o-mini")
    if name.strip().lower() == "none":  # `--judge none`: deterministic metrics only
        return
    for prompt in prompts or (None,):
        resolve_judge(name, prompt=prompt)


def judge_options(*, several: bool = False) -> Any:
    """The judge flags shared by score, report, demo and calibrate.

    The command receives one ``flags`` argument, a :class:`JudgeFlags`. With ``several``
    (calibrate) ``--judge`` and ``--prompt`` repeat and ``--judge`` is required; otherwise
    ``--judge`` defaults to the offline heuristic judge.
    """
    def decorate(f: Any) -> Any:
        @functools.wraps(f)
        def command(*args: Any, judge: Any, prompt: Any, api_base: str | None,
                    api_key: str | None, no_cache: bool, no_progress: bool,
                    max_concurrency: int | None, max_judge_errors: float, timeout: float | None,
                    batch: bool, max_tokens: str | None, temperature: float | None,
                    judge_param: tuple[str, ...], fold_system: bool, **kwargs: Any) -> Any:
            flags = JudgeFlags(
                judges=tuple(judge) if several else (judge,),
                prompts=tuple(prompt) if several else ((prompt,) if prompt else ()),
                api_base=api_base, api_key=api_key, no_cache=no_cache, no_progress=no_progress,
                max_concurrency=max_concurrency, max_judge_errors=max_judge_errors,
                timeout=timeout, batch=batch, max_tokens=max_tokens, temperature=temperature,
                judge_params=tuple(judge_param), fold_system=fold_system)
            if not (kwargs.get("judge_card") and _judge_defaulted()):
                flags.check()  # (a card names its own judge: see score)
            return f(*args, flags=flags, **kwargs)

        options = [
            click.option("--judge", "judge", multiple=several, required=several,
                         default=None if several else "heuristic", show_default=not several,
                         help="Offline judge (heuristic, tfidf-logreg) or a litellm model string "
                              "(gpt-4o-mini, openai/<name> with --api-base)"
                              + (". Repeat for several." if several else ".")),
            click.option("--prompt", "prompt", multiple=several, default=None,
                         help="Prompt of a model judge: v1, v2, v3, v4 or a template file "
                              "(default v4; see docs/prompts.md)"
                              + (". Repeat for several." if several else ".")),
            click.option("--api-base", default=None, metavar="URL",
                         help="Base URL of an OpenAI-compatible server for openai/<name>."),
            click.option("--api-key", default=None, envvar="MAEV_API_KEY",
                         help="API key for the model judge (or MAEV_API_KEY; else the provider's "
                              "variable, e.g. OPENAI_API_KEY). Never written anywhere."),
            click.option("--no-cache", is_flag=True, help="Do not read or write the reply cache."),
            click.option("--no-progress", is_flag=True, help="No progress bars."),
            click.option("--max-concurrency", type=click.IntRange(1), default=None,
                         help="Most requests in flight at once (default 16); the run starts "
                              "with 2 and raises the number while the server keeps up."),
            click.option("--max-tokens", default=None, metavar="N|auto|none",
                         help="Reply cap of the model judge in tokens (default auto: 200 + 150 "
                              "per fact, at most 2048; none: no cap). Pinned in the card."),
            click.option("--temperature", type=click.FloatRange(0, 2), default=None,
                         help="Sampling temperature of the model judge (default 0). Pinned "
                              "in the card."),
            click.option("--judge-param", "judge_param", multiple=True, metavar="KEY=VALUE",
                         help="Any other litellm parameter for the model judge (VALUE read as "
                              "JSON when it parses), e.g. top_p=0.9; repeat for several. "
                              "Pinned in the card."),
            click.option("--fold-system", is_flag=True,
                         help="Fold the judge's rules (the system message) into the user "
                              "message, for chat templates that drop system messages (Gemma's). "
                              "Pinned in the card."),
            click.option("--timeout", type=click.FloatRange(0, min_open=True), default=None,
                         metavar="SECONDS", help="Seconds to wait for one reply (default 60)."),
            click.option("--max-judge-errors", type=click.FloatRange(0, 1), default=0.05,
                         show_default=True,
                         help="Fail (exit 1, nothing written) when a larger share of the facts "
                              "could not be judged."),
            click.option("--batch", is_flag=True,
                         help="Send the model judge's requests through the provider's batch API "
                              "(about half price, answers within hours); rerun the same command "
                              "to pick up a batch already submitted."),
        ]
        for option in reversed(options):
            command = option(command)
        return command
    return decorate


def _judge_defaulted() -> bool:
    """True when the running command's ``--judge`` was not given on the command line."""
    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.get_parameter_source("judge") in (
        ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)


def _load_card(path: str | None) -> Any:
    """The judge card at ``path`` (JudgeCard.load names the file and field of any problem)."""
    if path is None:
        return None
    from maev_kit.calibration import JudgeCard

    return JudgeCard.load(_input_file(path, "--judge-card",
                                      "judge card (judge_card.json, from `maev calibrate`)"))


def _check_split(ls: Any, split: str | None) -> None:
    if split is not None and split not in ls.manifest.splits:
        have = ", ".join(ls.manifest.splits) or "none (the set declares no splits)"
        raise InputError(f"--split {split!r}: labeled set {ls.name!r} has no such split; "
                         f"available: {have}")


SOURCE_HELP = ("A labeled-set folder (or a bundled set's name), a trace JSONL file, or a "
               "framework export (OpenAI Agents, OTel, OpenInference, LangGraph, AutoGen, "
               "CrewAI, chat log), imported on the fly.")
#: Import warnings printed before the rest are counted.
_SHOWN_IMPORT_WARNINGS = 20


def card_options(f: Any) -> Any:
    """``--judge-card`` and ``--allow-mismatch``, shared by score and report."""
    f = click.option("--allow-mismatch", is_flag=True,
                     help="With --judge and --judge-card: score even when the judge differs "
                          "from the card's (a warning, not exit 2).")(f)
    return click.option("--judge-card", type=click.Path(), default=None,
                        help="Judge card from `maev calibrate`: without --judge, score with the "
                             "card's judge (model, prompt, examples, parameters).")(f)


def _scoring_judge(card: Any, flags: JudgeFlags) -> tuple[Any, Any]:
    """The judge and backend to score with: the card's when a card is given without --judge
    and --prompt; else --judge (``none``: no judge, retention n/a)."""
    if card is not None and _judge_defaulted() and not flags.prompts:
        from maev_kit.calibration.internal import card_backend
        from maev_kit.evaluation.internal import DEFAULT_JUDGE

        return DEFAULT_JUDGE, card_backend(card, flags.backend_params())
    if flags.judge.strip().lower() == "none":
        return None, None
    return flags.resolve(flags.judge)


def facts_options(f: Any) -> Any:
    """``--facts`` and ``--format``, shared by score and report."""
    f = click.option("--format", "format", default="auto", show_default=True,
                     help="Format of a trace file: 'auto' (maev JSONL or a detected export) or "
                          "an importer format (openai-agents, otel, openinference, langgraph, "
                          "autogen, crewai, chat).")(f)
    return click.option("--facts", "facts", default="auto", show_default=True,
                        metavar="auto|context|offline|llm|FILE",
                        help="Key facts for retention: 'auto' (the expectations' key facts, "
                             "else the handoffs' context_passed, else the offline proposer), "
                             "a proposer (context, offline, llm; several joined by commas) or "
                             "a facts / expectations JSONL file.")(f)


def _traces_or_set(path: str, format: str) -> tuple[Any, bool]:
    """``(source, is_traces)``: the traces of a file (a trace JSONL or any framework export;
    each import warning one ``warning:`` line), or ``path`` itself for a labeled set."""
    if not Path(path).is_file():
        if format != "auto":
            raise InputError(f"--format {format}: applies to a trace file or export, and "
                             f"{path} is not a file")
        return path, False
    from maev_kit.traces.importers import load_any

    traces, issues = load_any(path, format)
    for w in issues[:_SHOWN_IMPORT_WARNINGS]:
        note(f"{w}")
    if len(issues) > _SHOWN_IMPORT_WARNINGS:
        note(f"… and {len(issues) - _SHOWN_IMPORT_WARNINGS} more import "
             "warnings")
    return traces, True


def _run_params(flags: JudgeFlags, quiet: bool) -> dict[str, Any]:
    params = flags.run_params
    if quiet:
        params["progress"] = False
    return params


def _labeled_set(set_path: str) -> Any:
    from maev_kit.datasets import load_labeled_set

    if Path(set_path).is_file():
        raise InputError(f"{set_path}: is a file; give a labeled-set folder (manifest.json, "
                         "traces.jsonl, expectations.jsonl) or a bundled set's name")
    return load_labeled_set(set_path)


def kappa_options(f: Any) -> Any:
    """``--threshold`` and ``--resamples``, shared by calibrate and align."""
    f = click.option("--resamples", default=10_000, show_default=True,
                     type=click.IntRange(100), help="Bootstrap resamples.")(f)
    return click.option("--threshold", default=0.6, show_default=True,
                        type=click.FloatRange(-1, 1),
                        help="Recommend a judge whose κ CI lower bound is at least this.")(f)
