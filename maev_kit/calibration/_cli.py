"""``maev calibrate``: rank judges × prompts on a labeled set and optionally pin a judge card."""

from __future__ import annotations

import json

import click

__all__ = ["calibrate_command"]


@click.command("calibrate")
@click.argument("labeled_set")
@click.option("--judge", "judges", multiple=True, required=True,
              help="Offline judge name (heuristic, tfidf-logreg) or litellm model string "
                   "(gpt-4o-mini, openai/<name> with --api-base). Repeat for several.")
@click.option("--prompt", "prompts", multiple=True,
              help="Prompt variant for the model judges (v1, v2). Repeat for several; "
                   "default v1.")
@click.option("--api-base", default=None, help="OpenAI-compatible server for openai/<name>.")
@click.option("--api-key", default=None, envvar="MAEV_API_KEY",
              help="API key for --api-base (or MAEV_API_KEY); never written to the card.")
@click.option("--split", default=None, help="Split to score (default: test when declared).")
@click.option("--threshold", default=0.6, show_default=True, type=click.FloatRange(-1, 1),
              help="Recommend a judge whose κ CI lower bound is at least this.")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(100),
              help="Bootstrap resamples.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the reply cache.")
@click.option("--card", "card_path", default=None, type=click.Path(dir_okay=False),
              help="Write the recommended judge's card (JSON) here.")
@click.option("--out", "out_dir", default=None, type=click.Path(file_okay=False),
              help="Write leaderboard.csv, disagreements.csv, confusions.csv, "
                   "calibration.json and judge_card.json into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def calibrate_command(labeled_set: str, judges: tuple[str, ...], prompts: tuple[str, ...],
                      api_base: str | None, api_key: str | None, split: str | None,
                      threshold: float, resamples: int, no_cache: bool, card_path: str | None,
                      out_dir: str | None, as_json: bool) -> None:
    """Calibrate judges against the human labels of LABELED_SET (a folder or bundled name).

    Prints the leaderboard (κ with CI, Δκ to the best with its paired p-value), the human
    ceiling and a recommendation.
    """
    from maev_kit.calibration._calibrate import calibrate

    params = {k: v for k, v in (("api_base", api_base), ("api_key", api_key)) if v}
    result = calibrate(labeled_set, judges=list(judges), prompts=list(prompts) or None,
                       backend_params=params, split=split, threshold=threshold,
                       cache=False if no_cache else None, progress=not as_json,
                       n_resamples=resamples)
    if card_path:
        if result.recommended is None:
            click.echo("no judge cleared the threshold: writing the best judge's card anyway",
                       err=True)
        result.card().save(card_path)
    written = _write_outputs(result, out_dir) if out_dir else None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(str(result))
        if card_path:
            click.echo(f"judge card written to {card_path}")
        if written:
            click.echo(f"results written to {written}/")


def _write_outputs(result, out_dir: str) -> str:
    """Write the calibration's tables and the best judge's card into ``out_dir``."""
    from pathlib import Path

    import pandas as pd

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result.leaderboard.to_csv(out / "leaderboard.csv", index=False)
    result.disagreements.to_csv(out / "disagreements.csv", index=False)
    frames = [df.rename_axis("human").reset_index().melt(id_vars="human", var_name="judge_label",
                                                         value_name="count").assign(judge=key)
              for key, df in result.confusions.items()]
    if frames:
        pd.concat(frames, ignore_index=True).to_csv(out / "confusions.csv", index=False)
    (out / "calibration.json").write_text(json.dumps(result.to_dict(), indent=2, default=str),
                                          encoding="utf-8")
    result.card().save(out / "judge_card.json")
    return str(out)
