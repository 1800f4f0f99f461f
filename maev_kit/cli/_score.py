"""The ``maev`` subcommands that run the main job: demo, score, agree, report.

Each is a thin shell over the library (``evaluate``, ``report``, ``agreement``).
"""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any, cast

import click

from maev_kit.cli._notes import note

from maev_kit.cli._criteria import (criteria_judge, criteria_json, criteria_text,
                                    criterion_option, load_criteria)
from maev_kit.cli._flags import (OFFLINE_JUDGES, SET_HELP, JudgeFlags, _check_split,
                                 _is_offline, _judge_defaulted, _labeled_set, _load_card, _run_params,
                                 _scoring_judge, _traces_or_set, card_options, facts_options,
                                 judge_options)
from maev_kit.cli._inputs import is_saved_result, load_saved_result
from maev_kit.cli._output import (FRAME_SUFFIXES, _budget_text, _echo_json, _echo_run_lines,
                                  _error_summary_line, _estimates_text, _failed_judges, _frame_text,
                                  _input_file, _judge_line, _na, _one_line, _output_file,
                                  _output_folder, _write_frame, rows_on_disk)
from maev_kit.errors import InputError
from maev_kit.internal import check_output, output_line, write_text


#: What ``maev demo`` writes into its folder, by kind (the judge card is kept by its save).
DEMO_FILES = {"report.html": "report", "scores.csv": "scores",
              "retention_ledger.csv": "ledger", "calibration.csv": "calibration"}

#: ``--mlflow`` alone: a SQLite tracking store in the current folder (docs/mlflow.md).
MLFLOW_DEFAULT = "sqlite:///mlflow.db"
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

mlflow_option = click.option(
    "--mlflow", "mlflow_uri", is_flag=False, flag_value=MLFLOW_DEFAULT, default=None,
    metavar="[URI]", help="Also log the run to MLflow: metrics with their CIs, params (judge, "
    "labeled set hash), the HTML report as an artifact. URI: the tracking store (alone: "
    f"{MLFLOW_DEFAULT}; write --mlflow=URI or put it after SOURCE). pip install "
    "'maev-kit[mlflow]'.")


def _check_mlflow(uri: str | None) -> None:
    """Refuse ``--mlflow`` before anything runs: mlflow missing, no tracking URI, or one
    MLflow cannot use or must not write (a label store, another application's database, a
    server that does not answer)."""
    import importlib.util

    if uri is None:
        return
    if importlib.util.find_spec("mlflow") is None:
        raise InputError("--mlflow: MLflow is not installed: pip install 'maev-kit[mlflow]'")
    if uri != "databricks" and not _SCHEME.match(uri):
        shown = "" if "@" in uri else f" {uri}"
        raise InputError(f"--mlflow{shown}: not a tracking URI (e.g. {MLFLOW_DEFAULT}, "
                         "http://host:5000); `--mlflow` alone logs to "
                         f"{MLFLOW_DEFAULT}: put it after SOURCE or write --mlflow=URI")
    from maev_kit.reporting.internal import check_tracking_uri

    check_tracking_uri(uri)  # a store MLflow cannot use or must not write: exit 2 now


def _log_mlflow(result: Any, uri: str | None, report_html: Any = None) -> str | None:
    """Log ``result`` to the tracking store ``uri`` (None: not asked); the run id."""
    if uri is None:
        return None
    from maev_kit.reporting.internal import log_to_mlflow

    return log_to_mlflow(result, tracking_uri=uri, report_html=report_html)


def _echo_mlflow(run_id: str | None, uri: str | None) -> None:
    """``MLflow: run <id> (experiment maev-kit) in <uri, password hidden>``."""
    if run_id is not None and uri is not None:
        from maev_kit.reporting.internal import shown_tracking_uri

        click.echo(f"MLflow: run {run_id} (experiment maev-kit) in {shown_tracking_uri(uri)}")


def _shown_labels(path: str) -> str:
    """The labels file, or a store URL with its password hidden, as every output shows it."""
    from maev_kit.labels.internal import is_store_url, redact_url

    return redact_url(path) if is_store_url(path) else path


def _store_records(url: str) -> list[Any]:
    """Every label line of the store at ``url`` (``sqlite:///…`` / ``postgresql://…``), read
    through LabelStore; a SQLite file that is not there is refused, never created."""
    from maev_kit.labels import LabelStore
    from maev_kit.labels.internal import SQLiteBackend

    with LabelStore(url) as store:
        db = store.database
        if isinstance(db, SQLiteBackend) and not db.path.is_file():
            raise InputError(f"{store.location}: no SQLite label store at {str(db.path)!r}")
        return store.records()


def _read_labels(path: str) -> list[dict[str, Any]]:
    """Each annotator's latest label per item (gold labels left out) from a labels.jsonl path
    or a label store URL."""
    from maev_kit.labels import latest_labels, read_label_file
    from maev_kit.labels.internal import is_sqlite_file, is_store_url

    if is_store_url(path):
        records = _store_records(path)
    elif is_sqlite_file(path):  # a SQLite store given as a plain path
        records = _store_records("sqlite:///" + path)
    else:
        p = _input_file(path, "", "labels (labels.jsonl or a label store URL)")
        lf = read_label_file(p, name=path)
        if lf.problems:
            from maev_kit.errors import LabelValidationError
            raise LabelValidationError(lf.problems)
        if lf.torn_last_line:
            note(f"{lf.torn_last_line}")
        records = lf.records
    return [{"item_id": k[0], "annotator": k[1], "label": r.label, "in_sample": r.in_sample}
            for k, r in latest_labels(records).items() if r.source != "gold"]


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
@click.argument("labels_path", metavar="LABELS")
@click.option("--judge-run", "judge_run", type=click.Path(), default=None,
              help="CSV/JSONL of a judge's verdicts (item_id, label), e.g. from `maev score --ledger`.")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(100),
              help="Bootstrap resamples.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def agree(labels_path: str, judge_run: str | None, resamples: int, as_json: bool) -> None:
    """Agreement between the annotators of a labels file, and with a judge run.

    LABELS: a labels.jsonl file or a label store URL (sqlite:///labels.db,
    postgresql://user@host/db; docs/label-stores.md), shown with its password hidden.

    With two or more annotators: the human ceiling (mean pairwise Cohen κ with a bootstrap CI,
    Fleiss κ, Krippendorff α). With a judge run: the judge's mean κ against each annotator
    beside the human–human κ (never against the majority, which flatters the judge).
    """
    from maev_kit.calibration.internal import label_problem

    rows, table, acc = _label_table(labels_path)
    out = _agree_summary(labels_path, rows, table)
    out["label_accounting"] = acc
    problem = label_problem(out["labels_per_class"], n_items=len(table))
    one_class = problem is not None and problem.startswith("κ undefined")
    if one_class:
        out["note"] = problem  # κ (human or judge) means nothing on one class
        _add_judge_accuracy(out, table, judge_run)
    else:
        _add_agreement(out, table, judge_run, resamples)
    if as_json:
        _echo_json(out)
    elif one_class:
        _echo_one_class(out)
    else:
        _echo_agreement(out)


def _label_table(labels_path: str) -> tuple[list[dict[str, Any]], Any, dict[str, Any]]:
    """The labels of a labels file (skips and gold labels left out), their table (one row per
    item, one column per annotator, None where an annotator left the item out) and where every
    label went, as calibrate says it. In a labeled set's folder, labels whose item is gone are
    set aside (not counted), as everywhere else."""
    import pandas as pd

    from maev_kit.calibration.internal import account_labels, outside_sample

    rows = _read_labels(labels_path)
    ls = _set_of_labels(labels_path)
    if ls is not None:
        ids = {it.item_id for it in ls.items}
        rows = [r for r in rows if r["item_id"] in ids]
    if not rows:
        raise InputError(f"{_shown_labels(labels_path)}: no labels (skips and gold labels are "
                         "not counted)")
    human = {r["item_id"]: None for r in rows}
    acc = account_labels(ls, human, human, None)
    if ls is None:  # no sample to read: the labels' own marks say it
        acc["outside_sample"] = outside_sample(None, human, rows)
    table = pd.DataFrame(rows).pivot(index="item_id", columns="annotator", values="label")
    return rows, table.astype(object).where(table.notna(), None), acc


def _set_of_labels(labels_path: str) -> Any:
    """The labeled set whose folder holds the labels file ``labels_path`` (None: a store URL,
    or no valid set there)."""
    from maev_kit.errors import MaevError
    from maev_kit.labels.internal import is_store_url

    folder = Path(labels_path).parent
    if is_store_url(labels_path) or not (folder / "manifest.json").is_file():
        return None
    from maev_kit.datasets import load_labeled_set

    try:
        return load_labeled_set(folder)
    except MaevError:
        return None


def _agree_summary(labels_path: str, rows: list[dict[str, Any]], table: Any) -> dict[str, Any]:
    """What ``maev agree`` reports first: the file, its items and annotators, labels per class."""
    from collections import Counter

    out: dict[str, Any] = {"labels_file": _shown_labels(labels_path), "items": len(table),
                           "annotators": list(table.columns)}
    counts = Counter(r["label"] for r in rows)
    out["labels_per_class"] = {lab: counts.get(lab, 0) for lab in
                               ("retained", "lost", "contradicted")}
    return out


def _echo_labels_file(out: dict[str, Any]) -> None:
    """The first line of ``maev agree``'s text: the file, its items and annotators."""
    from maev_kit.calibration.internal import accounting_text

    click.echo(f"{out['labels_file']}: {out['items']} items, annotators: "
               f"{', '.join(out['annotators'])}")
    click.echo(accounting_text(out["label_accounting"]))


def _add_judge_accuracy(out: dict[str, Any], table: Any, judge_run: str | None) -> None:
    """Labels of one class, where κ means nothing: add to ``out`` the judge's accuracy (with its
    n) against every annotator's labels, when a judge run is given and covers any of them."""
    if judge_run:
        verdicts = _read_judge_run(judge_run)
        pairs = [(lab, verdicts.get(i)) for c in table.columns
                 for i, lab in zip(table.index, table[c]) if lab is not None
                 and verdicts.get(i) is not None]
        if pairs:
            out["judge_accuracy"] = {"accuracy": sum(a == b for a, b in pairs) / len(pairs),
                                     "n": len(pairs)}


def _echo_one_class(out: dict[str, Any]) -> None:
    """``maev agree``'s text on labels of one class: the counts, why κ is left out, and the
    judge's accuracy when there is one."""
    _echo_labels_file(out)
    click.echo("labels per class: " + ", ".join(f"{k} {v}" for k, v in
                                                out["labels_per_class"].items()))
    click.echo(out["note"])
    if "judge_accuracy" in out:
        acc = out["judge_accuracy"]
        click.echo(f"judge accuracy: {acc['accuracy']:.3f} (n={acc['n']})")


def _add_agreement(out: dict[str, Any], table: Any, judge_run: str | None,
                   resamples: int) -> None:
    """Add to ``out`` the human ceiling (two or more annotators) and, given a judge run, the
    judge against the annotators: mean κ against each of several, the full report against one."""
    from maev_kit import agreement

    by_ann = {c: table[c].tolist() for c in table.columns}
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
            raise InputError(f"{judge_run}: none of its item ids are in {out['labels_file']}")
        if len(by_ann) >= 2:
            jvh = agreement.judge_vs_humans(judge, by_ann, n_resamples=resamples)
            out["judge_vs_humans"] = jvh.to_dict() if hasattr(jvh, "to_dict") else str(jvh)
        else:
            (ann, human), = by_ann.items()
            rep = agreement.agreement_report(human, judge, n_resamples=resamples)
            out["judge_vs_" + ann] = rep.to_dict()


def _echo_agreement(out: dict[str, Any]) -> None:
    """``maev agree``'s text: the note, then each section's numbers and intervals."""
    _echo_labels_file(out)
    if "note" in out:
        click.echo(out["note"])
    for key, val in out.items():
        if isinstance(val, dict) and key != "label_accounting":
            click.echo(f"\n{key}:")
            for k, v in val.items():
                if isinstance(v, (int, float, str)) or v is None:
                    click.echo(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
                elif isinstance(v, (list, tuple)) and len(v) == 2 and all(
                        isinstance(x, float) for x in v):
                    click.echo(f"  {k}: ({v[0]:.3f}, {v[1]:.3f})")


# --------------------------------------------------------------------------- score


@click.command()
@click.argument("set_path", metavar="SOURCE")
@card_options
@click.option("--split", default=None, help="Score only this split (e.g. test).")
@click.option("--out", "out", type=click.Path(), default=None,
              help="Write per-conversation scores (.csv, .jsonl or .parquet). A missing "
                   "folder is created.")
@click.option("--ledger", type=click.Path(), default=None,
              help="Write the per-fact retention ledger (.csv, .jsonl or .parquet). A "
                   "missing folder is created.")
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
@mlflow_option
@facts_options
@criterion_option
@judge_options()
def score(set_path: str, judge_card: str | None, allow_mismatch: bool, split: str | None,
          out: str | None, ledger: str | None, as_json: bool, force: bool, engine: str,
          address: str | None, output_dir: str | None, expectations: str | None,
          mlflow_uri: str | None, facts: str, format: str, criterion: tuple[str, ...],
          flags: JudgeFlags) -> None:
    """Score every conversation of SOURCE: a labeled set, a trace file (JSONL or Parquet) or a
    framework export. `--judge none` scores the deterministic metrics only. A saved result
    folder (EvaluationResult.save) prints its summary (and --out/--ledger its tables) without
    re-running anything."""
    from maev_kit.evaluation import evaluate

    _check_mlflow(mlflow_uri)
    _output_file(out, "--out", FRAME_SUFFIXES)
    _output_file(ledger, "--ledger", FRAME_SUFFIXES)
    if is_saved_result(set_path):
        _refuse_rerun_flags(set_path, judge_card=judge_card, split=split, engine=engine,
                            expectations=expectations, facts=facts, format=format)
        return _print_saved(set_path, out, ledger, as_json, force, mlflow_uri)
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
        from maev_kit.scale.internal import is_uri, shown_uri

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
    criteria, criteria_judge = _criteria_of(criterion, flags, engine)
    judge, backend = (None, None) if criteria_judge == "only" else _scoring_judge(card, flags)
    if criteria:
        criteria_judge = flags.judge.strip()
    if engine == "ray":
        if flags.batch:
            raise InputError("--batch runs with the local engine; drop --engine ray or --batch")
        result = score_on_ray(set_path, judge=judge, backend=backend, split=split,
                              address=address, output_dir=output_dir, facts=facts,
                              expectations=expectations, **_run_params(flags, as_json))
    else:
        result = evaluate(source, judge=judge, backend=backend, judge_card=card, split=split,
                          allow_mismatch=allow_mismatch, facts=facts,
                          expectations=expectations, criteria=criteria or None,
                          criteria_judge=criteria_judge, **_run_params(flags, as_json))
    result.raise_for_judge_errors(flags.max_judge_errors)  # exit 1 before anything is written
    written = [p for p, df in ((out, result.per_conversation), (ledger, result.ledger))
               if p and _write_frame(df, p)]
    mlflow_run = _log_mlflow(result, mlflow_uri)
    if as_json:
        extra = {"criteria": criteria_json(result)} if criteria else {}
        return _echo_json(_result_json(result, written, mlflow_run, **extra))
    _echo_scores(result, time.perf_counter() - t0, _what_was_written(written, replacing, out))
    if criteria:
        click.echo("\n" + criteria_text(result))
    _echo_mlflow(mlflow_run, mlflow_uri)
    if engine == "ray":
        exit_on_failed_shards(result)


def _criteria_of(specs: tuple[str, ...], flags: JudgeFlags, engine: str
                 ) -> tuple[list[Any], Any]:
    """(criteria, ``"only"`` when --judge is a function that judges them alone, else None)."""
    if not specs:
        return [], None
    if engine == "ray":
        raise InputError("--criterion runs with the local engine; drop --engine ray")
    criteria = load_criteria(specs)
    _, only = criteria_judge(flags.judge)
    return criteria, "only" if only else None


def _echo_scores(result: Any, seconds: float | None, written: dict[str, tuple[bool, str]], *,
                 source: str | None = None) -> None:
    """The summary table, the run's lines, the estimates and label budget, and each file
    written with the rows it holds, read back from disk (``source``: a saved result's folder,
    nothing re-run)."""
    click.echo(_frame_text(_na(result.summary())))
    n = len(result.per_conversation)
    click.echo(f"\n{n} conversations, from the saved result {source} (nothing re-run)"
               if source is not None else f"\n{n} conversations scored in {seconds:.1f} s")
    _echo_run_lines(result)
    for text in (_estimates_text(result.estimates), _budget_text(result.label_budget)):
        if text:
            click.echo(text)
    for path, (replaced, what) in written.items():
        click.echo(f"{output_line(path, replaced)} ({rows_on_disk(path)} {what})")


def _refuse_rerun_flags(source: str, **given: Any) -> None:
    """A saved result is what it is: the flags that would score it again do not apply."""
    defaults = {"engine": "local", "facts": "auto", "format": "auto"}
    used = [f"--{k.replace('_', '-')}" for k, v in given.items() if v not in
            (None, False, defaults.get(k))]
    if not _judge_defaulted():
        used.insert(0, "--judge")
    if used:
        raise InputError(f"{' '.join(used)}: {source} is a saved result, shown as it was scored "
                         "(no judge runs); to score again, give the traces or the labeled set")


def _print_saved(source: str, out: str | None, ledger: str | None, as_json: bool,
                 force: bool, mlflow_uri: str | None) -> None:
    """``maev score RESULT``: the saved result's summary (and tables), nothing re-run."""
    result = load_saved_result(source)
    replacing = {out: check_output(out, "scores", "--out", force=force),
                 ledger: check_output(ledger, "ledger", "--ledger", force=force)}
    written = [p for p, df in ((out, result.per_conversation), (ledger, result.ledger))
               if p and _write_frame(df, p)]
    mlflow_run = _log_mlflow(result, mlflow_uri)
    if as_json:
        return _echo_json(_result_json(result, written, mlflow_run, saved_result=source))
    _echo_scores(result, None, _what_was_written(written, replacing, out), source=source)
    _echo_mlflow(mlflow_run, mlflow_uri)


def _what_was_written(written: list[str], replacing: dict[Any, bool], out: str | None
                      ) -> dict[str, tuple[bool, str]]:
    """Each file written: whether it replaced an earlier one, and what its rows are."""
    return {p: (replacing.get(p, False), "conversations" if p == out else
                "verdicts (one per fact per handoff)") for p in written}


def _result_json(result: Any, written: list[str], mlflow_run: str | None,
                 **extra: Any) -> dict[str, Any]:
    """What ``maev score --json`` prints of a result, fresh or saved."""
    est, budget = result.estimates, result.label_budget
    return {"aggregates": result.aggregates.to_dict(orient="records"),
            "judge": result.judge, "facts": result.provenance.get("facts"),
            "estimates": est.to_dict(orient="records") if est is not None else None,
            "label_budget": budget.to_dict(orient="records") if budget is not None else None,
            "files": written, "mlflow_run_id": mlflow_run, **extra}


def score_on_ray(source: str, *, judge: Any, backend: Any, split: str | None,
                 address: str | None, output_dir: str | None, facts: Any = "auto",
                 **run_params: Any) -> Any:
    """``evaluate_dataset`` with the CLI's arguments (``facts``: ``--facts``, as the local
    engine takes it: a mode, proposers joined by commas, or a facts / expectations file)."""
    from maev_kit.scale import evaluate_dataset

    return evaluate_dataset(source, judge=judge, backend=backend, address=address,
                            output_dir=output_dir, facts=facts,
                            **cast("dict[str, Any]", {"split": split} if split else {}),
                            **run_params)


def exit_on_failed_shards(result: Any) -> None:
    """List the shards that could not be read and exit 1 (the others were scored)."""
    failed = result.provenance.get("failed_shards") or []
    if not failed:
        return
    click.echo(f"{len(failed)} shard(s) could not be read and were left out:", err=True)
    for f in failed:
        click.echo(f"  {f}", err=True)
    click.get_current_context().exit(1)


# --------------------------------------------------------------------------- report
@click.command("report")
@click.argument("set_path", metavar="SOURCE")
@click.option("--out", "out", type=click.Path(), default="report.html", show_default=True,
              help="The HTML file to write. A missing folder is created.")
@click.option("--calibrate/--no-calibrate", "do_calibrate", default=True, show_default=True,
              help="Include a calibration of the offline judges against the set's labels.")
@click.option("--force", is_flag=True, default=False,
              help="Replace an output file that is not this command's own earlier output "
                   "(never a file holding a person's work: labels, review decisions, "
                   "expectations, judge cards).")
@card_options
@mlflow_option
@facts_options
@judge_options()
def report_command(set_path: str, out: str, do_calibrate: bool, force: bool,
                   judge_card: str | None, allow_mismatch: bool, mlflow_uri: str | None,
                   facts: str, format: str, flags: JudgeFlags) -> None:
    """Write the self-contained HTML report for SOURCE: a labeled set, a trace file (JSONL or
    Parquet) or a framework export (a file has no labels: no calibration section). With
    --judge-card the report scores with the card's judge and shows the card. A saved result
    folder (EvaluationResult.save) becomes its report with no judge call."""
    from maev_kit.evaluation import evaluate
    from maev_kit.reporting import report

    _output_file(out, "--out", (".html", ".htm"))
    _check_mlflow(mlflow_uri)
    replacing = check_output(out, "report", "--out", force=force)
    if is_saved_result(set_path):  # the report of a saved result: no judge runs
        _refuse_rerun_flags(set_path, judge_card=judge_card, facts=facts, format=format)
        result = load_saved_result(set_path)
        html = report(result).html
        path = write_text(out, html)
        _echo_mlflow(_log_mlflow(result, mlflow_uri, report_html=html), mlflow_uri)
        click.echo(_judge_line(result.judge) + " (saved result: nothing re-run)")
        click.echo(output_line(path, replacing))
        return
    card = _load_card(judge_card)
    source, is_traces = _traces_or_set(set_path, format)
    ls = None if is_traces else _labeled_set(set_path)
    judge, backend = _scoring_judge(card, flags)
    cal = _calibrate_for_report(ls, flags) if do_calibrate and ls is not None else None
    result = evaluate(ls if ls is not None else source, judge=judge, backend=backend,
                      judge_card=card, allow_mismatch=allow_mismatch, facts=facts,
                      **flags.run_params)
    result.raise_for_judge_errors(flags.max_judge_errors)  # exit 1 before anything is written
    html = report(result, calibration=cal, labeled_set=ls).html
    path = write_text(out, html)
    mlflow_run = _log_mlflow(result, mlflow_uri, report_html=html)
    _echo_run_lines(result)
    click.echo(output_line(path, replacing))
    _echo_mlflow(mlflow_run, mlflow_uri)


def _calibrate_for_report(ls: Any, flags: JudgeFlags, *, n_resamples: int = 2000) -> Any:
    """Calibrate the offline judges (and a model judge that will score) on the set's labels.

    None when the set has no labels. A model judge that fails here stops the command
    (:class:`~maev_kit.errors.JudgeErrorsExceeded`, exit 1) before it scores anything.
    """
    from maev_kit.calibration import calibrate
    from maev_kit.judges.internal import DEFAULT_PROMPT

    if not ls.label_records:
        return None
    judges = list(OFFLINE_JUDGES) if len(ls.manifest.splits) >= 2 else ["heuristic"]
    params: dict[str, Any] = {}
    if not _is_offline(flags.judge):
        judges.append(flags.judge)
        params = {"prompts": [flags.prompt or DEFAULT_PROMPT],
                  "backend_params": flags.backend_params()}
    cal = calibrate(ls, judges=judges, n_resamples=n_resamples, **params, **flags.run_params)
    # a judge that ran and failed stops here (the model judge about to score); an offline
    # judge that could not run (nothing to fit on) is a row of the report's table instead
    failed = {k: why for k, why in _failed_judges(cal).items() if k in cal.runs}
    if failed:
        from maev_kit.errors import JudgeErrorsExceeded

        raise JudgeErrorsExceeded("; ".join(f"judge {k} {why}" for k, why in failed.items())
                                  + "; nothing written")
    return cal


# --------------------------------------------------------------------------- demo
@click.command()
@click.option("--out", "out", type=click.Path(), default="maev-demo", show_default=True,
              help="Folder for the report and tables (created when missing).")
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
        from maev_kit.cli._notes import note

        note(warn)
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
