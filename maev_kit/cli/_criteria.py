"""``--criterion FILE|NAME`` for ``maev score`` and ``maev calibrate``: your own criteria, judged
by a Python function (``--judge module:function``) or a model (``--judge MODEL``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from maev_kit.cli._output import _frame_text
from maev_kit.errors import InputError

__all__ = ["calibrate_criteria", "check_criterion", "criteria_judge", "criteria_json",
           "criteria_text", "criterion_option", "is_criterion_card", "load_criteria"]

criterion_option = click.option(
    "--criterion", "criterion", multiple=True, metavar="FILE|NAME",
    help="Also ask your own criterion: a TOML file of [[criterion]] tables or a built-in "
         "criterion's name; repeat for several. Judged by --judge: a Python function "
         "(module:function), or a model asked the criterion prompt.")


def load_criteria(specs: tuple[str, ...]) -> list[Any]:
    """The criteria the ``--criterion`` flags name (files read now: a bad file is exit 2)."""
    from maev_kit.evaluation.internal import resolve_criteria

    return resolve_criteria(list(specs))


def criteria_judge(judge: str) -> tuple[Any, bool]:
    """(the criteria's judge, whether it judges criteria only) for ``--judge``: a function
    spec judges the criteria only (retention is then not judged); the offline retention
    judges cannot answer a criterion (exit 2)."""
    from maev_kit.evaluation.internal import check_criteria_judge, criteria_only_judge

    check_criteria_judge(judge)
    if criteria_only_judge(judge):
        from maev_kit.criteria.internal import load_function

        load_function(judge.strip())  # an import error is exit 2 before any work
        return judge.strip(), True
    return judge, False


def criteria_text(result: Any) -> str:
    """Each criterion's table, headed by its question and what was judged."""
    blocks = []
    for name, table in result.criteria.items():
        info = result.provenance.get("criteria", {}).get(name, {})
        errors = info.get("errors", 0)
        head = (f"criterion {name}: {info.get('question', '')}\n  {info.get('items', 0)} "
                f"{'which-agent' if info.get('answers') else info.get('scope', '')} item(s), "
                f"judge {info.get('judge', 'n/a')}"
                + (f", {errors} failed call(s) left out" if errors else "")
                + (f"; {info['note']}" if info.get("note") else ""))
        shown = table.drop(columns=["positive"])
        if not shown["n_human"].any():
            shown = shown.drop(columns=["corrected", "corrected_low", "corrected_high",
                                        "n_human"])
        blocks.append(head + "\n" + _frame_text(shown))
    return "\n\n".join(blocks)


def criteria_json(result: Any) -> dict[str, Any]:
    """Criterion name → its table's rows (label included) and what was judged."""
    return {name: {"labels": table.reset_index().to_dict(orient="records"),
                   **result.provenance.get("criteria", {}).get(name, {})}
            for name, table in result.criteria.items()}


def _traces(source: str) -> list[Any]:
    """The traces of SOURCE: a trace file or export, or a labeled set's traces."""
    from maev_kit.cli._flags import _traces_or_set

    got, is_traces = _traces_or_set(source, "auto")
    if is_traces:
        return list(got)
    from maev_kit.datasets import load_labeled_set

    return list(load_labeled_set(source).traces)


def _labels_path(source: str, labels: str | None) -> str:
    if labels is not None:
        return labels
    folder = Path(source)
    if folder.is_dir() and (folder / "labels.jsonl").is_file():
        return str(folder / "labels.jsonl")
    raise InputError("--criterion: give the people's labels with --labels FILE (a labels.jsonl "
                     "whose lines carry the criterion's name)")


def calibrate_criteria(source: str, specs: tuple[str, ...], labels: str | None, flags: Any,
                       *, threshold: float, resamples: int, as_json: bool) -> Any:
    """``maev calibrate --criterion``: every ``--judge`` against the people's labels of each
    criterion; prints each leaderboard; the results by criterion name."""
    from maev_kit.calibration import calibrate

    criteria = load_criteria(specs)
    for judge in flags.judges:
        criteria_judge(judge)
    traces = _traces(source)
    path = _labels_path(source, labels)
    params = flags.run_params
    params.pop("mode", None)
    if as_json:
        params["progress"] = False
    out = {}
    for criterion in criteria:
        items = criterion.items(traces)
        if not items:
            raise InputError(f"criterion {criterion.name!r}: the traces have no "
                             f"{criterion.scope} to ask about")
        out[criterion.name] = calibrate(
            items, path, judges=list(flags.judges), backend_params=flags.backend_params(),
            threshold=threshold, n_resamples=resamples,
            max_judge_errors=flags.max_judge_errors, **params)
        if not as_json:
            click.echo(f"criterion {criterion.name}: {criterion.question}")
            click.echo(str(out[criterion.name]) + "\n")
    return out


def is_criterion_card(path: Any) -> bool:
    """True when the judge card at ``path`` was calibrated on a criterion."""
    from maev_kit.calibration import JudgeCard

    return JudgeCard.load(path).criterion is not None


def check_criterion(card_path: str, source: str | None, labels: str | None, flags: Any, *,
                    tolerance: float | None, min_kappa: float | None, resamples: int,
                    as_json: bool) -> None:
    """``maev check`` of a criterion's card: its function or model on the labeled items of
    SOURCE's traces; exit 1 on FAIL, a MaevError (exit 1) on ERROR."""
    import sys

    from maev_kit.calibration import check_criterion_card
    from maev_kit.cli._flags import _judge_defaulted
    from maev_kit.cli._output import _echo_json
    from maev_kit.errors import MaevError

    if source is None:
        raise InputError("a criterion's card: name the traces with --set (a trace file or a "
                         "labeled set) and the labels with --labels")
    judge = None if _judge_defaulted() else flags.judge
    params = flags.run_params
    params.pop("mode", None)
    if as_json:
        params["progress"] = False
    report = check_criterion_card(card_path, _traces(source), _labels_path(source, labels),
                                  judge=judge, backend_params=flags.backend_params(),
                                  tolerance=tolerance, min_kappa=min_kappa,
                                  max_judge_errors=flags.max_judge_errors,
                                  n_resamples=resamples, **params)
    if as_json:
        _echo_json(report.to_dict())
    else:
        click.echo(str(report))
    if report.status == "ERROR":
        raise MaevError("the drift check has no verdict: " + "; ".join(report.reasons))
    if report.exit_code:
        sys.exit(report.exit_code)
