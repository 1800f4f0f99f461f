"""The ``maev`` subcommands that run the main job: demo, calibrate, score, agree, report.

Each is a thin shell over the library (``evaluate``, ``calibrate``, ``report``, ``agreement``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from maev_kit.errors import InputError

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


def _frame_text(df: Any, max_rows: int = 30) -> str:
    import pandas as pd

    with pd.option_context("display.max_columns", 20, "display.width", 120,
                           "display.float_format", "{:.3f}".format):
        return df.to_string(max_rows=max_rows)


def _read_labels(path: str) -> list[dict[str, Any]]:
    from maev_kit.labels import latest_labels, read_label_file

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such labels file")
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

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such judge-run file")
    try:
        df = pd.read_json(p, lines=True) if p.suffix in (".jsonl", ".json") else pd.read_csv(p)
    except ValueError as e:
        raise InputError(f"{path}: cannot read as {'JSONL' if p.suffix != '.csv' else 'CSV'}: {e}")
    missing = {"item_id", "label"} - set(df.columns)
    if missing:
        raise InputError(f"{path}: missing column(s) {sorted(missing)}; a judge run needs "
                         "`item_id` and `label` (e.g. the ledger written by `maev score --ledger`)")
    return {str(i): (None if pd.isna(lab) else str(lab)) for i, lab in zip(df["item_id"], df["label"])}


@click.command()
@click.argument("labels_path", metavar="LABELS.jsonl")
@click.option("--judge-run", "judge_run", type=click.Path(), default=None,
              help="CSV/JSONL of a judge's verdicts (item_id, label), e.g. from `maev score --ledger`.")
@click.option("--resamples", default=10_000, show_default=True, help="Bootstrap resamples.")
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
    for key, val in out.items():
        if isinstance(val, dict):
            click.echo(f"\n{key}:")
            for k, v in val.items():
                if isinstance(v, (int, float, str)) or v is None:
                    click.echo(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
                elif isinstance(v, (list, tuple)) and len(v) == 2 and all(
                        isinstance(x, float) for x in v):
                    click.echo(f"  {k}: ({v[0]:.3f}, {v[1]:.3f})")


def _judge_options(f: Any) -> Any:
    f = click.option("--api-base", default=None,
                     help="Base URL of an OpenAI-compatible server (with an `openai/<name>` model).")(f)
    f = click.option("--prompt", "prompt", default=None, type=click.Choice(["v1", "v2"]),
                     help="Prompt variant when --judge is a model string.")(f)
    f = click.option("--no-progress", is_flag=True, help="No progress bar.")(f)
    f = click.option("--no-cache", is_flag=True, help="Do not read or write the reply cache.")(f)
    return f


def _backend(judge: str, api_base: str | None) -> Any:
    """A LiteLLM backend when ``--api-base`` is given for a model string, else None."""
    if api_base is None:
        return None
    from maev_kit.backends import LiteLLMBackend

    import os
    return LiteLLMBackend(judge, api_base=api_base,
                          api_key=os.environ.get("OPENAI_API_KEY", "not-needed"))


@click.command()
@click.argument("set_path", metavar="SET")
@click.option("--judge", default="heuristic", show_default=True,
              help="Offline judge name or a litellm model string.")
@click.option("--judge-card", type=click.Path(), default=None,
              help="Judge card from `maev calibrate`: warns when the judge no longer matches it.")
@click.option("--split", default=None, help="Score only this split (e.g. test).")
@click.option("--out", "out", type=click.Path(), default=None,
              help="Write per-conversation scores (.csv or .parquet).")
@click.option("--ledger", type=click.Path(), default=None,
              help="Write the per-fact retention ledger (.csv or .jsonl).")
@click.option("--json", "as_json", is_flag=True, help="Print the aggregates as JSON.")
@_judge_options
def score(set_path: str, judge: str, judge_card: str | None, split: str | None, out: str | None,
          ledger: str | None, as_json: bool, api_base: str | None, prompt: str | None,
          no_progress: bool, no_cache: bool) -> None:
    """Score every conversation of a labeled set (or a trace file)."""
    from maev_kit.evaluation import evaluate

    t0 = time.perf_counter()
    result = evaluate(set_path, judge=judge, judge_card=judge_card, split=split,
                      backend=_backend(judge, api_base), prompt=prompt,
                      progress=not no_progress, cache=False if no_cache else None)
    if out:
        _write_frame(result.per_conversation, out)
    if ledger:
        _write_frame(result.ledger, ledger)
    if as_json:
        _echo_json({"aggregates": result.aggregates.to_dict(orient="records"),
                    "judge": result.judge, "out": out, "ledger": ledger})
        return
    click.echo(_frame_text(result.summary()))
    click.echo(f"\n{len(result.per_conversation)} conversations scored with "
               f"{result.judge['name']} in {time.perf_counter() - t0:.1f} s"
               + (f"; scores written to {out}" if out else ""))


def _write_frame(df: Any, path: str) -> None:
    p = Path(path)
    if p.parent and not p.parent.exists():
        p.parent.mkdir(parents=True)
    if p.suffix == ".parquet":
        try:
            df.to_parquet(p, index=False)
        except ImportError as e:
            raise InputError(f"{path}: writing parquet needs pyarrow ({e}); use .csv") from None
    elif p.suffix == ".jsonl":
        df.to_json(p, orient="records", lines=True, force_ascii=False)
    elif p.suffix == ".csv":
        df.to_csv(p, index=False)
    else:
        raise InputError(f"{path}: unknown output type {p.suffix!r}; use .csv, .jsonl or .parquet")


@click.command("report")
@click.argument("set_path", metavar="SET")
@click.option("--out", "out", type=click.Path(), default="report.html", show_default=True)
@click.option("--judge", default="heuristic", show_default=True,
              help="Judge that scores retention (offline name or litellm model string).")
@click.option("--calibrate/--no-calibrate", "do_calibrate", default=True, show_default=True,
              help="Include a calibration of the offline judges against the set's labels.")
@_judge_options
def report_command(set_path: str, out: str, judge: str, do_calibrate: bool,
                   api_base: str | None, prompt: str | None, no_progress: bool,
                   no_cache: bool) -> None:
    """Write the self-contained HTML report for a labeled set."""
    from maev_kit.datasets import load_labeled_set
    from maev_kit.evaluation import evaluate
    from maev_kit.reporting import report

    ls = load_labeled_set(set_path)
    cal = _calibrate_offline(ls, progress=not no_progress) if do_calibrate else None
    result = evaluate(ls, judge=judge, backend=_backend(judge, api_base), prompt=prompt,
                      progress=not no_progress, cache=False if no_cache else None)
    path = report(result, calibration=cal, labeled_set=ls).save(out)
    click.echo(f"report written to {path}")


OFFLINE_JUDGES = ("heuristic", "tfidf-logreg")


def _calibrate_offline(ls: Any, *, progress: bool, n_resamples: int = 2000) -> Any:
    """Calibrate the offline judges on a labeled set's test split (None if it has no labels)."""
    from maev_kit.calibration import calibrate

    if not ls.label_records:
        return None
    judges = list(OFFLINE_JUDGES) if len(ls.manifest.splits) >= 2 else ["heuristic"]
    return calibrate(ls, judges=judges, progress=progress, n_resamples=n_resamples)


@click.command()
@click.option("--out", "out", type=click.Path(), default="maev-demo", show_default=True,
              help="Folder for the report and tables.")
@click.option("--set", "set_path", default="support_desk", show_default=True, help=SET_HELP)
@click.option("--no-progress", is_flag=True, help="No progress bars.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def demo(out: str, set_path: str, no_progress: bool, as_json: bool) -> None:
    """The main job, offline, on the bundled support_desk set.

    Calibrates the two offline judges against the set's labels (on its test split), scores
    every conversation with the heuristic judge (the learned judge would refuse the items it
    was trained on), writes a self-contained HTML report and prints a summary.
    """
    from maev_kit.datasets import load_labeled_set
    from maev_kit.evaluation import evaluate
    from maev_kit.reporting import report

    t0 = time.perf_counter()
    progress = not no_progress and not as_json
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    ls = load_labeled_set(set_path)
    cal = _calibrate_offline(ls, progress=progress)
    card = cal.card("heuristic") if cal is not None else None
    if card is not None:
        card.save(out_dir / "judge_card.json")
        cal.leaderboard.to_csv(out_dir / "calibration.csv", index=False)
    result = evaluate(ls, judge="heuristic", judge_card=card, progress=progress)
    result.per_conversation.to_csv(out_dir / "scores.csv", index=False)
    result.ledger.to_csv(out_dir / "retention_ledger.csv", index=False)
    path = report(result, calibration=cal, labeled_set=ls,
                  title=f"maev-kit coordination report — {ls.name}").save(out_dir / "report.html")
    wall = time.perf_counter() - t0

    summary = result.aggregates.set_index("metric")
    if as_json:
        _echo_json({"labeled_set": ls.name, "conversations": len(result.per_conversation),
                    "retention_items": len(result.ledger),
                    "aggregates": result.aggregates.to_dict(orient="records"),
                    "calibration": (cal.leaderboard[["judge", "prompt", "kappa", "kappa_low",
                                                     "kappa_high"]].to_dict(orient="records")
                                    if cal is not None else None),
                    "recommendation": cal.recommendation if cal is not None else None,
                    "report": str(path), "seconds": round(wall, 2)})
        return
    click.echo(f"\nmaev demo — {ls.name} v{ls.version}: {len(result.per_conversation)} "
               f"conversations, {len(result.ledger)} retention items")
    if cal is not None:
        click.echo("\nJudge calibration (test split; κ vs the set's labels, 95 % bootstrap CI):")
        board = cal.leaderboard[["judge", "kappa", "kappa_low", "kappa_high", "accuracy",
                                 "recall_contradicted"]]
        click.echo(_frame_text(board.set_index("judge")))
        click.echo(cal.recommendation)
        if cal.recommended not in (None, "heuristic"):
            click.echo(f"Scoring below uses heuristic: {cal.recommended} was fit on the dev split "
                       "and refuses to score the items it learned from "
                       "(`maev score SET --judge tfidf-logreg --split test` scores the rest).")
    click.echo("\nCoordination (mean over conversations, 95 % bootstrap CI; judge: heuristic):")
    click.echo(_frame_text(summary[["mean", "ci_low", "ci_high"]]))
    if cal is not None and "heuristic" in cal.confusions:
        from maev_kit.calibration import corrected_prevalence

        prev = corrected_prevalence(result.ledger["label"].tolist(), cal.confusions["heuristic"],
                                    n_resamples=1000)
        click.echo("\nShare of facts per label: the judge's raw shares, and corrected for its "
                   "measured errors (95 % CI):")
        click.echo(_frame_text(prev))
    pc = result.per_conversation
    click.echo(f"\n{int((pc['n_loops'] > 0).sum())} conversations with circular handoffs, "
               f"{int(pc['should_escalate'].sum())} should escalate to a human, "
               f"{int(pc['contract_violations'].sum())} contract violations, "
               f"{int(pc['contradicted'].sum())} contradicted facts.")
    click.echo(f"\nReport: {path}\nTables: {out_dir / 'scores.csv'}, "
               f"{out_dir / 'retention_ledger.csv'}" + (f", {out_dir / 'calibration.csv'}"
                                                        if cal is not None else ""))
    click.echo(f"Done in {wall:.1f} s.")
