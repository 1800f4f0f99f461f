"""``maev check``: the drift gate — re-run a judge card's judge on its labeled items; exit 1
when agreement fell."""

from __future__ import annotations

import sys

import click

from maev_kit.cli._flags import SET_HELP, JudgeFlags, _judge_defaulted, judge_options
from maev_kit.cli._output import _echo_json, _input_file, _judge_line
from maev_kit.errors import InputError, MaevError

__all__ = ["check_command"]


@click.command("check")
@click.argument("judge_card", metavar="CARD")
@click.option("--set", "set_path", default=None, metavar="SET",
              help=SET_HELP + " Default: the set the card names, found by name.")
@click.option("--tolerance", type=click.FloatRange(0, 1), default=None,
              help="The κ fall allowed (default: the card's `tolerance` field, else 0.05).")
@click.option("--min-kappa", "min_kappa", type=click.FloatRange(-1, 1), default=None,
              help="Fail when κ's CI upper bound is below this floor (default: the card's "
                   "`min_kappa`, written by `maev calibrate --min-kappa`, else 0.4).")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(100),
              help="Bootstrap resamples (as calibrate's, to reproduce the card's CI).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--labels", "labels", type=click.Path(dir_okay=False), default=None,
              help="A criterion's card: the people's labels (labels.jsonl; default: SET's); "
                   "--set then names the traces (a trace file or a labeled set).")
@judge_options()
def check_command(judge_card: str, set_path: str | None, tolerance: float | None,
                  min_kappa: float | None, resamples: int, as_json: bool, labels: str | None,
                  flags: JudgeFlags) -> None:
    """Drift gate: re-run the judge of CARD (a judge_card.json from `maev calibrate`) on the
    card's labeled items and compare its agreement with the human labels to what the card
    recorded.

    Without --judge and --prompt the card's own judge runs (model, parameters, prompt, worked
    examples); --judge and/or --prompt check a changed model or prompt against the card. Exit
    0: PASS. Exit 1: FAIL — κ's CI upper bound is below --min-kappa (a useless judge
    never passes), or κ fell by more than the tolerance, significantly (McNemar's exact
    test on the card's recorded per-item verdicts, or the new κ's CI upper bound below the
    recorded κ − tolerance), or with a changed judge — or judge calls failed, so there is no
    verdict; or a flip rate of the card's robustness probes (`maev calibrate --probes`),
    re-run with the card's seed, rose significantly. Exit 2: bad input, or a card that cannot
    be compared with the set — made on
    another labeled set, its split's labels changed since (labels_hash), or labels of one
    class (κ undefined): make a new card with `maev calibrate --card`. See docs/drift-gate.md.
    """
    from maev_kit.calibration import check_card

    path = _input_file(judge_card, "judge card", "judge card (judge_card.json, from "
                       "`maev calibrate --card`)")
    from maev_kit.cli._criteria import check_criterion, is_criterion_card

    if is_criterion_card(path):  # a card calibrated on your own criterion
        return check_criterion(str(path), set_path, labels, flags, tolerance=tolerance,
                               min_kappa=min_kappa, resamples=resamples, as_json=as_json)
    judge = None if _judge_defaulted() else flags.judge
    if judge is None:
        _check_card_judge_flags(str(path), flags)
    elif judge.strip().lower() == "none":
        raise InputError("--judge none: the drift check needs a judge to run")
    params = flags.run_params
    if as_json:
        params["progress"] = False
    report = check_card(judge_card, set_path, judge=judge, prompt=flags.prompt,
                        backend_params=flags.backend_params(), tolerance=tolerance,
                        min_kappa=min_kappa,
                        max_judge_errors=flags.max_judge_errors, n_resamples=resamples,
                        **params)
    if as_json:
        _echo_json(report.to_dict())
    else:
        click.echo(_judge_line({"name": report.judge_now.name,
                                "version": report.judge_now.version,
                                "model": report.judge_now.model, "stats": report.stats}))
        click.echo(str(report))
    if report.status == "ERROR":
        raise MaevError("the drift check has no verdict: " + "; ".join(report.reasons))
    if report.exit_code:
        sys.exit(report.exit_code)


def _check_card_judge_flags(path: str, flags: JudgeFlags) -> None:
    """With the card's own judge: a model flag on an offline card's judge is a mistake."""
    from maev_kit.calibration import JudgeCard

    card = JudgeCard.load(path)
    if card.model is not None:
        return
    flags.refuse_model_flags(f"the card's judge {card.judge_name}",
                             "pass --judge MODEL to check a model against the card")


for _param in check_command.params:  # the card names the judge unless --judge is given
    if _param.name == "judge" and isinstance(_param, click.Option):
        _param.show_default = False
        _param.help = ("The judge to check instead of the card's (default: the card's judge): "
                       "an offline judge (heuristic, tfidf-logreg) or a litellm model string "
                       "(with the card's prompt and examples; --api-base for its endpoint).")
