"""``maev align``: search judge prompts on a labeled set's dev split, test the winner once."""

from __future__ import annotations

import json

import click

from maev_kit.cli._notes import note as add_note

from maev_kit.cli._flags import (JudgeFlags, _is_offline, _labeled_set, judge_options,
                                 kappa_options)
from maev_kit.cli._output import _echo_json, _judge_line, _output_folder
from maev_kit.errors import InputError, MaevError
from maev_kit.judges.internal import DEFAULT_PROMPT

__all__ = ["align_command"]


@click.command("align")
@click.argument("labeled_set", metavar="SET")
@click.option("--examples", "examples", multiple=True, type=click.IntRange(0), metavar="K",
              help="Worked examples per request to try (repeat: --examples 0 --examples 3). "
                   "Default 0.")
@click.option("--strategy", "strategies", multiple=True,
              type=click.Choice(["stratified", "disagreements"]),
              help="How worked examples are chosen (repeat for both). Default stratified.")
@click.option("--rewrites", default=0, show_default=True, type=click.IntRange(0),
              help="Instruction rewrites to ask an LLM for, from the dev disagreements.")
@click.option("--rewriter", default=None, metavar="MODEL",
              help="Model that writes the rewrites (default: the first --judge).")
@click.option("--dev-split", default="dev", show_default=True, help="Split the search scores.")
@click.option("--test-split", default="test", show_default=True,
              help="Split scored once at the end, for the winner and the base prompt.")
@click.option("--max-requests", type=click.IntRange(0), default=None, metavar="N",
              help="Send at most N requests (candidates that do not fit are skipped).")
@click.option("--max-cost", type=click.FloatRange(0), default=None, metavar="USD",
              help="Spend at most this much (litellm's prices).")
@click.option("--dry-run", is_flag=True, help="Print the estimate and send nothing.")
@kappa_options
@click.option("--out", "out_dir", default=None, type=click.Path(),
              help="Write candidates.csv, alignment.json, winner_prompt.txt and "
                   "judge_card.json into this folder. A missing folder is created.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@judge_options(several=True)
def align_command(labeled_set: str, examples: tuple[int, ...], strategies: tuple[str, ...],
                  rewrites: int, rewriter: str | None, dev_split: str, test_split: str,
                  max_requests: int | None, max_cost: float | None, dry_run: bool,
                  threshold: float, resamples: int, out_dir: str | None, as_json: bool,
                  flags: JudgeFlags) -> None:
    """Search judge prompts for the one that agrees best with the labels of SET.

    Candidates (each --prompt × --examples × --strategy × --judge; the first --prompt, default
    v1, is the base) are scored on the dev split only and ranked by the lower bound of κ's CI.
    The winner and the base prompt are then scored once on the test split: the Δκ printed
    there, with its CI and McNemar p, is the number to trust. An estimate is printed before
    anything is sent.
    """
    from maev_kit.calibration import Budget, align

    offline = [j for j in flags.judges if _is_offline(j)]
    if offline:
        raise InputError(f"--judge {offline[0]}: align searches the prompts of a model judge; "
                         f"{offline[0]} runs offline (give a model, e.g. --judge gpt-4o-mini)")
    if flags.batch:
        raise InputError("--batch: align scores candidates one after another on the dev split; "
                         "provider batches (hours each) do not fit a search — run it without "
                         "--batch, then `maev score --batch` with the winner's card")
    _output_folder(out_dir, "--out")
    ls = _labeled_set(labeled_set)
    prompts = list(flags.prompts) or [DEFAULT_PROMPT]
    params = flags.run_params
    result = align(
        ls, base_prompt=prompts[0], models=list(flags.judges), candidates=prompts[1:],
        examples=examples or (0,), strategies=strategies or ("stratified",), rewrites=rewrites,
        rewriter=rewriter, dev_split=dev_split, test_split=test_split,
        budget=Budget(max_requests, max_cost), dry_run=dry_run, threshold=threshold,
        backend_params=flags.backend_params(), n_resamples=resamples,
        echo=lambda s: click.echo(s, err=True), **params)
    if dry_run:
        if as_json:
            click.echo(json.dumps(result.to_dict(), indent=2, default=str))
        else:
            click.echo("dry run: nothing sent")
        return
    cands = result.candidates
    ran = cands[cands["status"] == "ok"]
    if not len(ran):
        why = "; ".join(f"{k} {st}" for k, st in zip(cands["candidate"], cands["status"]))
        raise MaevError(f"no candidate could be scored on dev, nothing written: {why}")
    for key, st, note in zip(cands["candidate"], cands["status"], cands["note"]):
        if st != "ok":
            add_note(f"candidate {key}: {st}" + (f" ({note})" if note else ""))
    written = [str(p) for p in result.save(out_dir)] if out_dir else []
    if as_json:
        _echo_json({**result.to_dict(), "files": written})
    else:
        click.echo(str(result))
        if result.test is not None:
            for key, run in result.test.runs.items():
                click.echo(_judge_line({"name": f"{key} (test)", "model": run.model,
                                        "stats": run.stats}))
        for path in written:
            click.echo(f"written: {path}")
    if result.test is None:
        raise MaevError("the winner was not scored on the test split (the budget ran out): its "
                        "dev κ is not a result; raise --max-requests / --max-cost and rerun "
                        "(finished replies are cached)")
