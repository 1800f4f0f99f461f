"""``maev calibrate``: rank judges × prompts on a labeled set and optionally pin a judge card."""

from __future__ import annotations

import json
from typing import Any

import click

from maev_kit.cli._notes import note

from maev_kit.calibration import DegenerateLabelsError
from maev_kit.cli._flags import (JudgeFlags, _check_split, _labeled_set, judge_options,
                                 kappa_options)
from maev_kit.cli._output import (_best_working, _echo_json, _failed_judges, _judge_line,
                                  _output_file, _output_folder, _over_threshold)
from maev_kit.cli._criteria import criterion_option
from maev_kit.errors import InputError, MaevError

__all__ = ["calibrate_command"]


@click.command("calibrate")
@click.argument("labeled_set")
@click.option("--split", default=None, help="Split to score (default: test when declared).")
@kappa_options
@click.option("--card", "card_path", default=None, type=click.Path(),
              help="Write the recommended judge's card (JSON) here. A missing folder is "
                   "created.")
@click.option("--out", "out_dir", default=None, type=click.Path(),
              help="Write leaderboard.csv, disagreements.csv, confusions.csv, "
                   "calibration.json and judge_card.json into this folder. A missing folder is "
                   "created.")
@click.option("--min-kappa", "min_kappa", type=click.FloatRange(-1, 1), default=0.4,
              show_default=True,
              help="The floor `maev check` holds κ's CI upper bound to, written into the card.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@criterion_option
@click.option("--labels", "labels", type=click.Path(dir_okay=False), default=None,
              help="--criterion: the people's labels (labels.jsonl; default: LABELED_SET's).")
@click.option("--probes", "probes", is_flag=True,
              help="Also run the robustness probes (order, padding, injection, paraphrase, "
                   "distractor) on every judge: a flip-rate column per probe, recorded in the "
                   "card for `maev check`.")
@judge_options(several=True)
def calibrate_command(labeled_set: str, split: str | None, threshold: float, resamples: int,
                      card_path: str | None, out_dir: str | None, min_kappa: float,
                      as_json: bool, criterion: tuple[str, ...], labels: str | None,
                      flags: JudgeFlags, probes: bool = False) -> None:
    """Calibrate judges against the human labels of LABELED_SET (a folder or bundled name).

    Prints the leaderboard (κ with CI, Δκ to the best with its paired p-value), the human
    ceiling and a recommendation. A judge whose calls fail is listed as failed with its cause;
    when every judge failed, nothing is written. Labels that cannot support a recommendation
    (one class: κ undefined; too few per class) are said so, with accuracy and n. Labels of
    one class give no judge card: with --card or --out the exit code is then 2 (the tables of
    --out are written). --probes adds each judge's flip rate under the robustness probes
    (with its interval) and records them in the card; `maev check` re-runs them. The exit code
    is 1 whenever a judge failed or lost more than ``--max-judge-errors`` of its items (the
    others are still ranked and written).
    """
    from maev_kit.calibration import calibrate

    if criterion:  # your own criteria: LABELED_SET may be a trace file too
        if probes:
            raise InputError("--probes perturbs retention items; it does not apply to "
                             "--criterion")
        return _calibrate_criteria(labeled_set, criterion, labels, flags, threshold, resamples,
                                   as_json, out_dir or split, card_path, min_kappa)
    _output_file(card_path, "--card", (".json",))
    _output_folder(out_dir, "--out")
    ls = _labeled_set(labeled_set)
    _check_split(ls, split)
    params = flags.run_params
    if as_json:
        params["progress"] = False
    result = calibrate(ls, judges=list(flags.judges), prompts=list(flags.prompts) or None,
                       backend_params=flags.backend_params(), split=split, threshold=threshold,
                       n_resamples=resamples, max_judge_errors=flags.max_judge_errors,
                       probes=probes, **params)
    failed = _failed_judges(result)
    if failed and len(failed) == len(result.leaderboard):
        raise MaevError("every judge failed, nothing written: " + "; ".join(
            f"{k} {why}" for k, why in failed.items()))
    for key, why in failed.items():
        note(f"judge {key} is not ranked: {why}")
    over = _over_threshold(result, flags.max_judge_errors)
    for key, why in over.items():
        note(f"judge {key}: {why}")
    written = []
    problem = result.label_problem if result.kappa_undefined else None
    if result.label_problem is not None and problem is None:
        note(f"{result.label_problem}")
    if card_path and problem is None:
        if result.recommended is None:
            note("no judge cleared the threshold: writing the best judge's card "
                 "anyway")
        card = result.card(_best_working(result, failed), min_kappa=min_kappa)
        card.save(card_path)
        written.append(card_path)
        _warn_below_floor(card, min_kappa)
    if out_dir:
        written += _write_outputs(result, out_dir, _best_working(result, failed), min_kappa)
    if as_json:
        _echo_json({**result.to_dict(), "files": written})
    else:
        click.echo(str(result))
        for key, run in result.runs.items():
            click.echo(_judge_line({"name": key, "model": run.model, "stats": run.stats}))
        for path in written:
            click.echo(f"written: {path}")
    _fail_if_judges_failed(result, failed, over)
    if problem is not None and (card_path or out_dir):
        raise DegenerateLabelsError(f"no judge card written: {problem}")


def _calibrate_criteria(source: str, criterion: tuple[str, ...], labels: str | None,
                        flags: JudgeFlags, threshold: float, resamples: int, as_json: bool,
                        unsupported: Any, card_path: str | None, min_kappa: float) -> None:
    """``--criterion``: each criterion's leaderboard, the best judge's card with ``--card``
    (one criterion; exit 2 when the labels cannot support one), exit 1 when a judge failed."""
    from maev_kit.cli._criteria import calibrate_criteria

    if unsupported:
        raise InputError("--criterion ranks the judges (and --card pins one); --out and "
                         "--split apply to retention calibration only")
    if card_path and len(criterion) != 1:
        raise InputError("--card pins one judge of one criterion: give one --criterion")
    _output_file(card_path, "--card", (".json",))
    results = calibrate_criteria(source, criterion, labels, flags, threshold=threshold,
                                 resamples=resamples, as_json=as_json)
    if card_path:
        (result,) = results.values()
        result.card(_best_working(result, _failed_judges(result)),
                    min_kappa=min_kappa).save(card_path)
        if not as_json:
            click.echo(f"written: {card_path}")
    if as_json:
        _echo_json({name: r.to_dict() for name, r in results.items()})
    for name, result in results.items():
        failed = _failed_judges(result)
        over = _over_threshold(result, flags.max_judge_errors)
        for key, why in {**failed, **over}.items():
            note(f"criterion {name}: judge {key}: {why}")
        _fail_if_judges_failed(result, failed, over)


def _fail_if_judges_failed(result: Any, failed: dict[str, str], over: dict[str, str]) -> None:
    """Exit 1 (after the working judges' results are shown and written) when a judge the user
    asked for failed or lost more than ``--max-judge-errors`` of its items: the comparison
    they asked for did not happen in full."""
    bad = {**failed, **over}
    if bad:
        n = len(result.leaderboard)
        raise MaevError(f"{len(bad)} of {n} judges failed or lost too many items ("
                        + "; ".join(f"{k}: {why.split(' — ')[0]}" for k, why in bad.items())
                        + "); the ranking covers the others")


def _warn_below_floor(card: Any, min_kappa: float) -> None:
    """Say now that the card just written will not pass `maev check`."""
    import math

    from maev_kit.calibration.internal import upper_bound

    if card.kappa is None or math.isnan(card.kappa):
        return
    top, what = upper_bound(card.kappa, card.kappa_low, card.kappa_high, card.n_items,
                            card.confidence)
    if top < min_kappa:
        note(f"the card's judge {card.judge_name} has {what}, "
             f"below --min-kappa {min_kappa:g}: `maev check` will not pass it")


def _write_outputs(result: Any, out_dir: str, card_key: str | None,
                   min_kappa: float) -> list[str]:
    """Write the calibration's tables and the best working judge's card into ``out_dir``."""
    from pathlib import Path

    import pandas as pd

    from maev_kit.internal import check_output, write_stream, write_text

    out = Path(out_dir)
    names = ("leaderboard.csv", "disagreements.csv", "confusions.csv", "calibration.json")
    for name in names:  # a file there that holds a person's work is never replaced
        check_output(out / name, "calibration", "--out", force=True)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "leaderboard.csv", out / "disagreements.csv"]
    write_stream(written[0], lambda f: result.leaderboard.to_csv(f, index=False))
    write_stream(written[1], lambda f: result.disagreements.to_csv(f, index=False))
    frames = [df.rename_axis("human").reset_index().melt(id_vars="human", var_name="judge_label",
                                                         value_name="count").assign(judge=key)
              for key, df in result.confusions.items()]
    if frames:
        both = pd.concat(frames, ignore_index=True)
        write_stream(out / "confusions.csv", lambda f: both.to_csv(f, index=False))
        written.append(out / "confusions.csv")
    write_text(out / "calibration.json", json.dumps(result.to_dict(), indent=2, default=str))
    written.append(out / "calibration.json")
    if not result.kappa_undefined:  # labels of one class cannot support a card
        result.card(card_key, min_kappa=min_kappa).save(out / "judge_card.json")
        written.append(out / "judge_card.json")
    return [str(p) for p in written]
