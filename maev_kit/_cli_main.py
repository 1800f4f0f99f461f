"""The ``maev`` subcommands that run the main job: demo, calibrate, score, agree, report.

Each is a thin shell over the library (``evaluate``, ``calibrate``, ``report``, ``agreement``).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from maev_kit._files import check_output, output_line, write_text
from maev_kit.errors import InputError

#: What ``maev demo`` writes into its folder, by kind (the judge card is kept by its save).
DEMO_FILES = {"report.html": "report", "scores.csv": "scores",
              "retention_ledger.csv": "ledger", "calibration.csv": "calibration"}

SET_HELP = "A labeled-set folder, or the name of a bundled one (support_desk, snli_calibration)."


def _echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, default=_json_default))


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return None if np.isnan(o) else float(o)
    if isinstance(o, Path):
        return str(o)
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())


def _frame_text(df: Any, max_rows: int = 30) -> str:
    import pandas as pd

    with pd.option_context("display.max_columns", 20, "display.width", 120,
                           "display.float_format", "{:.3f}".format):
        return df.to_string(max_rows=max_rows)


def _read_labels(path: str) -> list[dict[str, Any]]:
    from maev_kit.labels import latest_labels, read_label_file

    p = _input_file(path, "", "labels (labels.jsonl)")
    lf = read_label_file(p, name=path)
    if lf.problems:
        from maev_kit.errors import LabelValidationError
        raise LabelValidationError(lf.problems)
    if lf.torn_last_line:
        click.echo(f"warning: {lf.torn_last_line}", err=True)
    return [{"item_id": k[0], "annotator": k[1], "label": r.label}
            for k, r in latest_labels(lf.records).items() if r.source != "gold"]


def _read_judge_run(path: str) -> dict[str, str | None]:
    """item_id → label from a CSV or JSONL with ``item_id`` and ``label`` columns."""
    import pandas as pd

    p = _input_file(path, "--judge-run", "judge-run (.csv or .jsonl)")
    if p.suffix.lower() not in (".csv", ".jsonl", ".json"):
        raise InputError(f"--judge-run {path}: unknown file type {p.suffix or '(none)'!r}; "
                         "give the .csv or .jsonl ledger written by `maev score --ledger`")
    kind = "CSV" if p.suffix.lower() == ".csv" else "JSONL"
    try:
        df = pd.read_csv(p) if kind == "CSV" else pd.read_json(p, lines=True)
    except (ValueError, UnicodeDecodeError, RecursionError, pd.errors.ParserError) as e:
        reason = "nesting too deep" if isinstance(e, RecursionError) else _one_line(str(e))
        raise InputError(f"--judge-run {path}: cannot read as {kind}: {reason}") from None
    missing = {"item_id", "label"} - set(df.columns)
    if missing:
        raise InputError(f"{path}: missing column(s) {sorted(missing)}; a judge run needs "
                         "`item_id` and `label` (e.g. the ledger written by `maev score --ledger`)")
    return {str(i): (None if pd.isna(lab) else str(lab)) for i, lab in zip(df["item_id"], df["label"])}


@click.command()
@click.argument("labels_path", metavar="LABELS.jsonl")
@click.option("--judge-run", "judge_run", type=click.Path(), default=None,
              help="CSV/JSONL of a judge's verdicts (item_id, label), e.g. from `maev score --ledger`.")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(100),
              help="Bootstrap resamples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def agree(labels_path: str, judge_run: str | None, resamples: int, as_json: bool) -> None:
    """Agreement between the annotators of a labels file, and with a judge run.

    With two or more annotators: the human ceiling (mean pairwise Cohen κ with a bootstrap CI,
    Fleiss κ, Krippendorff α). With a judge run: the judge's mean κ against each annotator
    beside the human–human κ (never against the majority, which flatters the judge).
    """
    import pandas as pd

    from maev_kit import agreement

    rows = _read_labels(labels_path)
    if not rows:
        raise InputError(f"{labels_path}: no labels (skips and gold labels are not counted)")
    table = pd.DataFrame(rows).pivot(index="item_id", columns="annotator", values="label")
    table = table.astype(object).where(table.notna(), None)
    out: dict[str, Any] = {"labels_file": labels_path, "items": len(table),
                           "annotators": list(table.columns)}
    by_ann = {c: table[c].tolist() for c in table.columns}
    from collections import Counter

    from maev_kit.calibration._result import label_problem

    counts = Counter(r["label"] for r in rows)
    out["labels_per_class"] = {lab: counts.get(lab, 0) for lab in
                               ("retained", "lost", "contradicted")}
    problem = label_problem(out["labels_per_class"], n_items=len(table))
    if problem is not None and problem.startswith("κ undefined"):
        out["note"] = problem  # κ (human or judge) means nothing on one class
        if judge_run:
            verdicts = _read_judge_run(judge_run)
            pairs = [(lab, verdicts.get(i)) for c in table.columns
                     for i, lab in zip(table.index, table[c]) if lab is not None
                     and verdicts.get(i) is not None]
            if pairs:
                out["judge_accuracy"] = {"accuracy": sum(a == b for a, b in pairs) / len(pairs),
                                         "n": len(pairs)}
        if as_json:
            _echo_json(out)
            return
        click.echo(f"{labels_path}: {len(table)} items, annotators: {', '.join(table.columns)}")
        click.echo("labels per class: " + ", ".join(f"{k} {v}" for k, v in
                                                    out["labels_per_class"].items()))
        click.echo(problem)
        if "judge_accuracy" in out:
            acc = out["judge_accuracy"]
            click.echo(f"judge accuracy: {acc['accuracy']:.3f} (n={acc['n']})")
        return
    if len(by_ann) < 2 and not judge_run:
        out["note"] = ("one annotator: no human–human agreement; a second annotator labeling "
                       "the same items gives it")
    if len(by_ann) >= 2:
        ceiling = agreement.human_ceiling(by_ann, n_resamples=resamples)
        out["human_ceiling"] = ceiling.to_dict() if hasattr(ceiling, "to_dict") else str(ceiling)
    if judge_run:
        verdicts = _read_judge_run(judge_run)
        judge = [verdicts.get(i) for i in table.index]
        n_cover = sum(v is not None for v in judge)
        if n_cover == 0:
            raise InputError(f"{judge_run}: none of its item ids are in {labels_path}")
        if len(by_ann) >= 2:
            jvh = agreement.judge_vs_humans(judge, by_ann, n_resamples=resamples)
            out["judge_vs_humans"] = jvh.to_dict() if hasattr(jvh, "to_dict") else str(jvh)
        else:
            (ann, human), = by_ann.items()
            rep = agreement.agreement_report(human, judge, n_resamples=resamples)
            out["judge_vs_" + ann] = rep.to_dict()
    if as_json:
        _echo_json(out)
        return
    click.echo(f"{labels_path}: {len(table)} items, annotators: {', '.join(table.columns)}")
    if "note" in out:
        click.echo(out["note"])
    for key, val in out.items():
        if isinstance(val, dict):
            click.echo(f"\n{key}:")
            for k, v in val.items():
                if isinstance(v, (int, float, str)) or v is None:
                    click.echo(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
                elif isinstance(v, (list, tuple)) and len(v) == 2 and all(
                        isinstance(x, float) for x in v):
                    click.echo(f"  {k}: ({v[0]:.3f}, {v[1]:.3f})")


# --------------------------------------------------------------------------- shared judge flags
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
        """``api_base`` / ``api_key`` for a model judge (a local server needs no real key)."""
        params: dict[str, Any] = {}
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
            used = [f for f, v in (("--prompt", self.prompts), ("--api-base", self.api_base),
                                   ("--api-key", self.api_key), ("--batch", self.batch)) if v]
            if used:
                verb = "applies" if len(used) == 1 else "apply"
                raise InputError(f"{' and '.join(used)} only {verb} to a model judge; "
                                 f"{', '.join(self.judges)} runs offline (drop the flag, or "
                                 "pass --judge MODEL, e.g. gpt-4o-mini)")


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
                    batch: bool, **kwargs: Any) -> Any:
            flags = JudgeFlags(
                judges=tuple(judge) if several else (judge,),
                prompts=tuple(prompt) if several else ((prompt,) if prompt else ()),
                api_base=api_base, api_key=api_key, no_cache=no_cache, no_progress=no_progress,
                max_concurrency=max_concurrency, max_judge_errors=max_judge_errors,
                timeout=timeout, batch=batch)
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
                         help="Prompt of a model judge: v1, v2, v3 or a template file (default v3; "
                              "see docs/prompts.md)"
                              + (". Repeat for several." if several else ".")),
            click.option("--api-base", default=None, metavar="URL",
                         help="Base URL of an OpenAI-compatible server for openai/<name>."),
            click.option("--api-key", default=None, envvar="MAEV_API_KEY",
                         help="API key for the model judge (or MAEV_API_KEY; else the provider's "
                              "variable, e.g. OPENAI_API_KEY). Never written anywhere."),
            click.option("--no-cache", is_flag=True, help="Do not read or write the reply cache."),
            click.option("--no-progress", is_flag=True, help="No progress bars."),
            click.option("--max-concurrency", type=click.IntRange(1), default=None,
                         help="Requests in flight at once (default 16)."),
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


def _causes(stats: dict[str, Any]) -> str:
    by = stats.get("errors_by_cause") or stats.get("errors_by_kind") or {}
    return ", ".join(f"{k} {v}" for k, v in sorted(by.items(), key=lambda kv: -kv[1]))


def _judge_line(judge: dict[str, Any]) -> str:
    """``judge: heuristic (1-…), offline: 0 requests, 0 cache hits, 0 errors``."""
    stats = judge.get("stats") or {}
    model = f"model {judge['model']}" if judge.get("model") else "offline"
    n_err = stats.get("errors") or 0
    errors = f"{n_err} error{'s' if n_err != 1 else ''}" + (
        f" ({_causes(stats)})" if n_err and _causes(stats) else "")
    version = f" ({judge['version']})" if judge.get("version") else ""
    requests, hits = stats.get("requests") or 0, stats.get("cache_hits") or 0
    return (f"judge: {judge.get('name')}{version}, {model}: {requests} requests, "
            f"{hits} cache hits, {errors}")


def _error_summary_line(result: Any) -> str | None:
    """The result's "retention over N of M facts; K failed (...)" line when something failed."""
    summary = getattr(result, "judge_errors", None)
    if summary is not None and getattr(summary, "failed", 0):
        return f"warning: {summary}"
    return None


def _failed_judges(result: Any) -> dict[str, str]:
    """Leaderboard key → ``"failed: auth (6 of 6 items) — what to do"`` for each judge whose
    calls failed (the leaderboard's ``status``): their κ is not a result."""
    from collections import Counter

    from maev_kit.calibration._result import _FIXES

    out: dict[str, str] = {}
    board = result.leaderboard
    if "status" not in board.columns:
        return out
    for key, status in zip(board["key"], board["status"]):
        if status == "ok":
            continue
        stats = getattr(result.runs.get(key), "stats", None) or {}
        by_cause = Counter(stats.get("errors_by_cause") or {})
        top = by_cause.most_common(1)[0][0] if by_cause else "other"
        fix = stats.get("unavailable") or _FIXES.get(top, "")
        out[str(key)] = f"{status} — {fix}" if fix else str(status)
    return out


def _over_threshold(result: Any, max_share: float) -> dict[str, str]:
    """Judges ranked (status ok) whose share of failed items still exceeds ``max_share``."""
    out: dict[str, str] = {}
    failed = _failed_judges(result)
    for key, run in result.runs.items():
        stats = getattr(run, "stats", None) or {}
        n, errors = stats.get("items", 0), stats.get("errors", 0)
        if key not in failed and n and errors / n > max_share:
            out[str(key)] = (f"{errors} of {n} items failed ({_causes(stats)}), over "
                             f"--max-judge-errors {max_share:g}; its κ covers the others")
    return out


def _best_working(result: Any, failed: dict[str, str]) -> str | None:
    """The recommended judge, else the best ranked one that did not fail."""
    if result.recommended is not None and result.recommended not in failed:
        return result.recommended
    keys = [k for k in result.leaderboard["key"] if k not in failed]
    return keys[0] if keys else None


# --------------------------------------------------------------------------- paths
def _output_file(path: str | None, option: str, suffixes: tuple[str, ...] = ()) -> None:
    """Fail before any work when ``path`` cannot be written as a file of one of ``suffixes``."""
    if path is None:
        return
    p = Path(path)
    if not path.strip():
        raise InputError(f"{option} is empty; give a file path")
    if p.is_dir():
        example = p / ("report.html" if ".html" in suffixes else f"out{suffixes[0]}"
                       if suffixes else "out")
        raise InputError(f"{option} {path}: is a folder; give a file path such as {example}")
    if suffixes and p.suffix.lower() not in suffixes:
        raise InputError(f"{option} {path}: unknown output type {p.suffix or '(none)'!r}; use "
                         + ", ".join(suffixes))
    if p.suffix.lower() == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(f"{option} {path}: writing parquet needs pyarrow "
                             "(pip install pyarrow); or use .csv") from None
    if p.exists() and not os.access(p, os.W_OK):
        raise InputError(f"{option} {path}: permission denied; cannot overwrite it")
    _writable_parent(p.parent, option, path)


def _output_folder(path: str | None, option: str) -> None:
    """Fail before any work when ``path`` cannot be (or become) a writable folder."""
    if path is None:
        return
    p = Path(path)
    if not path.strip():
        raise InputError(f"{option} is empty; give a folder")
    if p.exists() and not p.is_dir():
        raise InputError(f"{option} {path}: is a file, not a folder; give a folder to write into")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError(f"{option} {path}: permission denied; cannot write into it")
        return
    _writable_parent(p.parent, option, path)


def _writable_parent(parent: Path, option: str, path: str) -> None:
    """The nearest existing ancestor must be a writable folder (missing ones are created)."""
    anc = parent if str(parent) else Path(".")
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"{option} {path}: {anc} is a file, not a folder")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: permission denied; cannot write in {anc}")


def _input_file(path: str, option: str, what: str) -> Path:
    """``path`` as a Path when it is a file; else one error naming the option and the path."""
    p = Path(path)
    where = f"{option} {path}" if option else path
    if p.is_dir():
        raise InputError(f"{where}: is a folder; give the {what} file")
    if not p.is_file():
        raise InputError(f"{where}: no such file")
    return p


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


# --------------------------------------------------------------------------- traces and facts
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
        from maev_kit.calibration._card import card_backend
        from maev_kit.evaluation._pipeline import DEFAULT_JUDGE

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
        click.echo(f"warning: {w}", err=True)
    if len(issues) > _SHOWN_IMPORT_WARNINGS:
        click.echo(f"warning: … and {len(issues) - _SHOWN_IMPORT_WARNINGS} more import "
                   "warnings", err=True)
    return traces, True


def _facts_line(result: Any) -> str | None:
    """``facts: 12 offline, 2 context; 1 conversation without any`` (None without facts)."""
    info = (result.provenance or {}).get("facts")
    if not info:
        return None
    by = ", ".join(f"{n} {src}" for src, n in info["by_source"].items()) or "none"
    none = info.get("conversations_without_facts", 0)
    return (f"facts ({info['mode']}): {by}"
            + (f"; {none} conversation{'s' if none != 1 else ''} without any" if none else ""))


def _echo_run_lines(result: Any) -> None:
    """Echo how the result was judged: the judge line, the facts line (when there are facts)
    and, on stderr, the warning when judge calls failed."""
    click.echo(_judge_line(result.judge))
    facts_line = _facts_line(result)
    if facts_line:
        click.echo(facts_line)
    warn = _error_summary_line(result)
    if warn:
        click.echo(warn, err=True)


# --------------------------------------------------------------------------- score
FRAME_SUFFIXES = (".csv", ".jsonl", ".parquet")


@click.command()
@click.argument("set_path", metavar="SOURCE")
@card_options
@click.option("--split", default=None, help="Score only this split (e.g. test).")
@click.option("--out", "out", type=click.Path(), default=None,
              help="Write per-conversation scores (.csv, .jsonl or .parquet).")
@click.option("--ledger", type=click.Path(), default=None,
              help="Write the per-fact retention ledger (.csv, .jsonl or .parquet).")
@click.option("--json", "as_json", is_flag=True, help="Print the aggregates as JSON.")
@click.option("--force", is_flag=True, default=False,
              help="Replace an output file that is not this command's own earlier output "
                   "(never a file holding a person's work: labels, review decisions, "
                   "expectations, judge cards).")
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              help="ray: score on Ray Data (pip install 'maev-kit[scale]'); SOURCE may then be a "
                   "folder or glob of .jsonl/.parquet shards, here or on any filesystem "
                   "pyarrow opens ('s3://bucket/shards/*.parquet').")
@click.option("--address", default=None, help="Ray cluster address (--engine ray; default: "
                                                "start a local Ray).")
@click.option("--output-dir", type=click.Path(file_okay=False), default=None,
              help="--engine ray: where the Parquet results go (a folder or a URI such as "
                   "s3://bucket/results); a rerun resumes from them.")
@click.option("--expectations", "expectations", type=click.Path(dir_okay=False), default=None,
              help="Expectations JSONL for the traces (expected handoffs, routing cases, key "
                   "facts; with --engine ray also a URI); a labeled set brings its own.")
@facts_options
@judge_options()
def score(set_path: str, judge_card: str | None, allow_mismatch: bool, split: str | None,
          out: str | None, ledger: str | None, as_json: bool, force: bool, engine: str,
          address: str | None, output_dir: str | None, expectations: str | None, facts: str,
          format: str, flags: JudgeFlags) -> None:
    """Score every conversation of SOURCE: a labeled set, a trace file or a framework export.
    `--judge none` scores the deterministic metrics only."""
    from maev_kit.evaluation import evaluate

    _output_file(out, "--out", FRAME_SUFFIXES)
    _output_file(ledger, "--ledger", FRAME_SUFFIXES)
    if out and ledger and Path(out).resolve() == Path(ledger).resolve():
        raise InputError("--out and --ledger name the same file; give two paths")
    replacing = {out: check_output(out, "scores", "--out", force=force),
                 ledger: check_output(ledger, "ledger", "--ledger", force=force)}
    for given in (out, ledger):
        if given and Path(given).resolve() == Path(set_path).resolve():
            raise InputError(f"{given}: is SOURCE, the file being scored; give another path")
    card = _load_card(judge_card)
    source: Any = set_path
    if engine == "ray" and format != "auto":
        raise InputError("--format runs with the local engine; drop --engine ray, or convert "
                         "the export to shards first (maev convert)")
    if engine != "ray":
        from maev_kit.scale._fs import is_uri, shown_uri

        for given in (set_path, expectations):
            if is_uri(given):
                raise InputError(f"{shown_uri(given)}: a URI is read with --engine ray (pip "
                                 "install 'maev-kit[scale]'); the local engine reads files on "
                                 "this machine")
        source, _ = _traces_or_set(set_path, format)
    if split is not None and not Path(set_path).is_file():
        from maev_kit.datasets import load_labeled_set

        source = load_labeled_set(set_path)
        _check_split(source, split)
    t0 = time.perf_counter()
    judge, backend = _scoring_judge(card, flags)
    if engine == "ray":
        from maev_kit.scale._cli import score_on_ray

        if flags.batch:
            raise InputError("--batch runs with the local engine; drop --engine ray or --batch")
        result = score_on_ray(set_path, judge=judge, backend=backend, split=split,
                              address=address, output_dir=output_dir, facts=facts,
                              expectations=expectations, **_run_params(flags, as_json))
    else:
        result = evaluate(source, judge=judge, backend=backend, judge_card=card, split=split,
                          allow_mismatch=allow_mismatch, facts=facts,
                          expectations=expectations, **_run_params(flags, as_json))
    result.raise_for_judge_errors(flags.max_judge_errors)  # exit 1 before anything is written
    written = [p for p, df in ((out, result.per_conversation), (ledger, result.ledger))
               if p and _write_frame(df, p)]
    if as_json:
        _echo_json({"aggregates": result.aggregates.to_dict(orient="records"),
                    "judge": result.judge, "facts": result.provenance.get("facts"),
                    "files": written})
        return
    click.echo(_frame_text(_na(result.summary())))
    click.echo(f"\n{len(result.per_conversation)} conversations scored in "
               f"{time.perf_counter() - t0:.1f} s")
    _echo_run_lines(result)
    for p in written:
        click.echo(output_line(p, replacing.get(p, False)))
    if engine == "ray":
        from maev_kit.scale._cli import exit_on_failed_shards

        exit_on_failed_shards(result)


def _run_params(flags: JudgeFlags, quiet: bool) -> dict[str, Any]:
    params = flags.run_params
    if quiet:
        params["progress"] = False
    return params


def _na(df: Any) -> Any:
    """Show NaN as n/a in text tables."""
    return df.astype(object).where(df.notna(), "n/a")


def _write_frame(df: Any, path: str | Path) -> bool:
    """Write a table atomically (see :mod:`maev_kit._files`) as Parquet, JSONL or CSV by
    the suffix of ``path``."""
    from maev_kit._files import atomic_write

    suffix = Path(path).suffix.lower()

    def write(tmp: Path) -> None:
        if suffix == ".parquet":
            df.to_parquet(tmp, index=False)
        elif suffix == ".jsonl":
            df.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            df.to_csv(tmp, index=False)

    atomic_write(path, write)
    return True


# --------------------------------------------------------------------------- report
@click.command("report")
@click.argument("set_path", metavar="SOURCE")
@click.option("--out", "out", type=click.Path(), default="report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--calibrate/--no-calibrate", "do_calibrate", default=True, show_default=True,
              help="Include a calibration of the offline judges against the set's labels.")
@click.option("--force", is_flag=True, default=False,
              help="Replace an output file that is not this command's own earlier output "
                   "(never a file holding a person's work: labels, review decisions, "
                   "expectations, judge cards).")
@card_options
@facts_options
@judge_options()
def report_command(set_path: str, out: str, do_calibrate: bool, force: bool,
                   judge_card: str | None, allow_mismatch: bool, facts: str, format: str,
                   flags: JudgeFlags) -> None:
    """Write the self-contained HTML report for SOURCE: a labeled set, a trace file or a
    framework export (a file has no labels: no calibration section). With --judge-card the
    report scores with the card's judge and shows the card."""
    from maev_kit.evaluation import evaluate
    from maev_kit.reporting import report

    _output_file(out, "--out", (".html", ".htm"))
    replacing = check_output(out, "report", "--out", force=force)
    card = _load_card(judge_card)
    source, is_traces = _traces_or_set(set_path, format)
    ls = None if is_traces else _labeled_set(set_path)
    judge, backend = _scoring_judge(card, flags)
    cal = _calibrate_for_report(ls, flags) if do_calibrate and ls is not None else None
    result = evaluate(ls if ls is not None else source, judge=judge, backend=backend,
                      judge_card=card, allow_mismatch=allow_mismatch, facts=facts,
                      **flags.run_params)
    result.raise_for_judge_errors(flags.max_judge_errors)  # exit 1 before anything is written
    path = write_text(out, report(result, calibration=cal, labeled_set=ls).html)
    _echo_run_lines(result)
    click.echo(output_line(path, replacing))


def _labeled_set(set_path: str) -> Any:
    from maev_kit.datasets import load_labeled_set

    if Path(set_path).is_file():
        raise InputError(f"{set_path}: is a file; give a labeled-set folder (manifest.json, "
                         "traces.jsonl, expectations.jsonl) or a bundled set's name")
    return load_labeled_set(set_path)


def _calibrate_for_report(ls: Any, flags: JudgeFlags, *, n_resamples: int = 2000) -> Any:
    """Calibrate the offline judges (and a model judge that will score) on the set's labels.

    None when the set has no labels. A model judge that fails here stops the command
    (:class:`~maev_kit.errors.JudgeErrorsExceeded`, exit 1) before it scores anything.
    """
    from maev_kit.calibration import calibrate
    from maev_kit.judges._prompts import DEFAULT_PROMPT

    if not ls.label_records:
        return None
    judges = list(OFFLINE_JUDGES) if len(ls.manifest.splits) >= 2 else ["heuristic"]
    params: dict[str, Any] = {}
    if not _is_offline(flags.judge):
        judges.append(flags.judge)
        params = {"prompts": [flags.prompt or DEFAULT_PROMPT],
                  "backend_params": flags.backend_params()}
    cal = calibrate(ls, judges=judges, n_resamples=n_resamples, **params, **flags.run_params)
    failed = _failed_judges(cal)
    if failed:  # the model judge that is about to score failed already: stop here
        from maev_kit.errors import JudgeErrorsExceeded

        raise JudgeErrorsExceeded("; ".join(f"judge {k} {why}" for k, why in failed.items())
                                  + "; nothing written")
    return cal


# --------------------------------------------------------------------------- demo
@click.command()
@click.option("--out", "out", type=click.Path(), default="maev-demo", show_default=True,
              help="Folder for the report and tables.")
@click.option("--set", "set_path", default="support_desk", show_default=True, help=SET_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--force", is_flag=True, default=False,
              help="Replace an output file that is not this command's own earlier output "
                   "(never a file holding a person's work: labels, review decisions, "
                   "expectations, judge cards).")
@judge_options()
def demo(out: str, set_path: str, as_json: bool, force: bool, flags: JudgeFlags) -> None:
    """The main job on a bundled set: calibrate, score, report.

    Calibrates the offline judges (and --judge when it is a model) against the set's labels
    on its test split, scores every conversation with --judge (default: the offline heuristic
    judge; the learned judge would refuse the items it was trained on), writes a
    self-contained HTML report and tables and prints a summary.
    """
    from maev_kit.evaluation import evaluate
    from maev_kit.reporting import report

    _output_folder(out, "--out")
    for name, kind in DEMO_FILES.items():
        check_output(Path(out) / name, kind, "--out", force=force)
    if flags.judge.strip().lower() == "tfidf-logreg":
        raise InputError("--judge tfidf-logreg learns from the set's labels and refuses the items "
                         "it was trained on, so it cannot score every conversation; use "
                         "`maev score SET --judge tfidf-logreg --split test`")
    t0 = time.perf_counter()
    params = _run_params(flags, as_json)
    quiet_flags = dataclasses.replace(flags, no_progress=not params["progress"])
    ls = _labeled_set(set_path)
    cal = _calibrate_for_report(ls, quiet_flags)
    card = None
    if cal is not None and not cal.kappa_undefined:  # one class: no card, the report says why
        card = next((cal.card(k) for k in cal.runs if cal.runs[k].judge_name == flags.judge
                     or cal.runs[k].model == flags.judge), None)
    judge, backend = flags.resolve(flags.judge)
    result = evaluate(ls, judge=judge, backend=backend, judge_card=card, **params)
    result.raise_for_judge_errors(flags.max_judge_errors)  # exit 1 before anything is written

    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    existed = {p for p in (out_dir / n for n in (*DEMO_FILES, "judge_card.json"))
               if p.exists()}
    written = [out_dir / "scores.csv", out_dir / "retention_ledger.csv"]
    _write_frame(result.per_conversation, written[0])
    _write_frame(result.ledger, written[1])
    if cal is not None:
        _write_frame(cal.leaderboard, out_dir / "calibration.csv")
        written.append(out_dir / "calibration.csv")
    if card is not None:  # a card is never replaced: JudgeCard.save keeps the old one
        card.save(out_dir / "judge_card.json")
        written.append(out_dir / "judge_card.json")
    path = write_text(out_dir / "report.html",
                      report(result, calibration=cal, labeled_set=ls,
                             title=f"maev-kit coordination report — {ls.name}").html)
    written.insert(0, path)
    wall = time.perf_counter() - t0

    summary = result.aggregates.set_index("metric")
    if as_json:
        _echo_json({"labeled_set": ls.name, "conversations": len(result.per_conversation),
                    "retention_items": len(result.ledger),
                    "aggregates": result.aggregates.to_dict(orient="records"),
                    "judge": result.judge,
                    "calibration": (cal.leaderboard[["judge", "prompt", "kappa", "kappa_low",
                                                     "kappa_high"]].to_dict(orient="records")
                                    if cal is not None else None),
                    "recommendation": cal.recommendation if cal is not None else None,
                    "report": str(path), "files": [str(p) for p in written],
                    "seconds": round(wall, 2)})
        return
    _demo_text(ls, result, cal, flags, summary)
    click.echo("\n" + _judge_line(result.judge))
    warn = _error_summary_line(result)
    if warn:
        click.echo(warn, err=True)
    click.echo(f"\nReport: {path}" + (" (replaced)" if path in existed else ""))
    for p in written[1:]:
        click.echo(output_line(p, p in existed and p.name != "judge_card.json"))
    click.echo(f"Done in {wall:.1f} s.")


def _demo_text(ls: Any, result: Any, cal: Any, flags: JudgeFlags, summary: Any) -> None:
    click.echo(f"\nmaev demo — {ls.name} v{ls.version}: {len(result.per_conversation)} "
               f"conversations, {len(result.fact_ledger)} key facts judged at "
               f"{len(result.ledger)} handoff × fact items")
    scorer = result.judge.get("name", flags.judge)
    if cal is not None:
        click.echo("\nJudge calibration (test split; κ vs the set's labels, 95 % bootstrap CI):")
        board = cal.leaderboard
        cols = [c for c in ("judge", "prompt", "kappa", "kappa_low", "kappa_high", "accuracy",
                            "n_items", "recall_contradicted", "status")
                if c in board.columns and (c != "prompt" or board[c].notna().any())]
        click.echo(_frame_text(_na(board[cols].set_index("judge"))))
        click.echo(cal.recommendation)
        if cal.recommended not in (None, flags.judge, scorer) and _is_offline(flags.judge):
            click.echo(f"Scoring below uses {flags.judge}: {cal.recommended} was fit on the dev "
                       "split and refuses to score the items it learned from "
                       "(`maev score SET --judge tfidf-logreg --split test` scores the rest).")
    click.echo(f"\nCoordination (mean over conversations, 95 % bootstrap CI; judge: "
               f"{flags.judge}):")
    click.echo(_frame_text(_na(summary[["mean", "ci_low", "ci_high"]])))
    if cal is not None and scorer in cal.confusions:
        from maev_kit.calibration import corrected_prevalence

        prev = corrected_prevalence(result.ledger["label"].dropna().tolist(),
                                    cal.confusions[scorer], n_resamples=1000)
        click.echo("\nShare of facts per label: the judge's raw shares, and corrected for its "
                   "measured errors (95 % CI):")
        click.echo(_frame_text(prev))
    pc = result.per_conversation
    click.echo(f"\n{int((pc['n_loops'] > 0).sum())} conversations with circular handoffs, "
               f"{int(pc['should_escalate'].sum())} should escalate to a human, "
               f"{int(pc['contract_violations'].sum())} contract violations, "
               f"{int(pc['contradicted'].sum())} contradicted facts.")
