"""Labeled sets: a folder of traces, expectations and labels (docs/formats.md, "Labeled-set
folder").

```
labeled_sets/<name>/
  README.md           where the traces and labels came from, license, who labeled and how
  manifest.json       {"name", "version", "description", "agents", "labels", "splits"?, "contracts"?}
  traces.jsonl        conversations
  expectations.jsonl  expected handoffs, key facts per handoff, routing cases
  labels.jsonl        human (or reference) labels, append-only
```
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

from maev_kit._jsonl import NESTING_TOO_DEEP, json_type, display_name, pydantic_problems
from maev_kit.errors import InputError, LabelValidationError, Problem, TraceValidationError
from maev_kit.expectations import ConversationExpectations, read_expectations
from maev_kit.labels import LabelRecord, latest_labels, read_label_file
from maev_kit.retention import RetentionItem, build_retention_items, item_id
from maev_kit.traces import MultiAgentTrace, validate_trace_file
from maev_kit.traces.internal import is_parquet_file

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["LabeledSet", "Manifest", "ValidationReport", "bundled_set_path",
           "load_labeled_set", "load_who_and_when", "validate_path"]

REQUIRED_FILES = ("manifest.json", "traces.jsonl", "expectations.jsonl")


class Manifest(BaseModel):
    """``manifest.json`` of a labeled set."""

    model_config = ConfigDict(extra="allow")

    name: str
    version: str
    description: str = ""
    agents: dict[str, str] = {}
    labels: list[str] = ["retained", "lost", "contradicted"]
    splits: dict[str, list[str]] = {}
    contracts: list[dict[str, Any]] = []


@dataclass
class ValidationReport:
    """What ``maev validate`` found: errors, warnings and what was read."""

    path: str
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """One line: ``path: valid (85 traces, ...)`` or ``path: 2 problems (...)``.

        >>> ValidationReport("t.jsonl", counts={"traces": 3}).summary()
        't.jsonl: valid (3 traces)'
        >>> ValidationReport("t.jsonl", errors=[Problem("t.jsonl", 1, "", "bad")]).summary()
        't.jsonl: 1 problem'
        """
        n = len(self.errors)
        status = "valid" if self.ok else f"{n} problem{'s' if n != 1 else ''}"
        parts = [f"{v:,} {k}" for k, v in self.counts.items()]
        if self.warnings:
            w = len(self.warnings)
            parts.append(f"{w} warning{'s' if w != 1 else ''}")
        return f"{self.path}: {status}" + (f" ({', '.join(parts)})" if parts else "")


@dataclass
class LabeledSet:
    """A loaded labeled set. Build with :func:`load_labeled_set`."""

    path: Path
    manifest: Manifest
    traces: list[MultiAgentTrace]
    expectations: dict[str, ConversationExpectations]
    #: The label lines that count: those on an item of the set, of each (item, annotator)
    #: whose latest label is not ``skip``.
    label_records: list[LabelRecord]
    #: Label lines on an id that is no item of the set (a fact rejected in review, removed
    #: from expectations.jsonl, ...): never counted, never deleted; see
    #: :func:`maev_kit.labels.label_status` and ``maev labels``.
    set_aside_labels: list[Any] = field(default_factory=list)
    #: Label lines of each (item, annotator) whose latest label is ``skip`` (not counted).
    skipped_labels: list[LabelRecord] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def version(self) -> str:
        return self.manifest.version

    @cached_property
    def items(self) -> list[RetentionItem]:
        """One retention item per key fact per handoff."""
        return build_retention_items(self.traces, self.expectations)

    def split_of(self, conversation_id: str) -> str | None:
        for split, ids in self.manifest.splits.items():
            if conversation_id in ids:
                return split
        return None

    def traces_in(self, split: str | None) -> list[MultiAgentTrace]:
        """Traces of one split (all when ``split`` is None)."""
        return self._in_split(self.traces, split)

    def items_in(self, split: str | None) -> list[RetentionItem]:
        """Retention items of one split (all when ``split`` is None)."""
        return self._in_split(self.items, split)

    def _in_split(self, rows: list[Any], split: str | None) -> list[Any]:
        """The ``rows`` (traces or items) whose conversation is in ``split`` (all when None)."""
        if split is None:
            return list(rows)
        if split not in self.manifest.splits:
            have = ", ".join(self.manifest.splits) or "none"
            raise InputError(f"labeled set {self.name!r} has no split {split!r} (splits: {have})")
        ids = set(self.manifest.splits[split])
        return [r for r in rows if r.conversation_id in ids]

    @property
    def annotators(self) -> list[str]:
        return sorted({r.annotator for r in self.label_records})

    def labels(self, *, annotators: list[str] | None = None,
               exclude_sources: tuple[str, ...] = ("gold", "adjudicated")
               ) -> list[dict[str, Any]]:
        """Latest label per (item, annotator) as dicts, skips dropped.

        Records whose ``source`` is in ``exclude_sources`` (by default the ``gold`` majority label
        and a team session's ``adjudicated`` settled labels) are left out, so human-vs-human statistics compare people, not a majority vote.
        """
        latest = latest_labels(self.label_records)
        out = []
        for (iid, ann), r in latest.items():
            if annotators is not None and ann not in annotators:
                continue
            if r.source in exclude_sources:
                continue
            out.append({"item_id": iid, "annotator": ann, "label": r.label})
        return out

    def labels_frame(self) -> pd.DataFrame:
        """Items × annotators table of labels (NaN where an annotator gave none)."""
        import pandas as pd

        df = pd.DataFrame(self.labels(exclude_sources=()))
        if df.empty:
            return pd.DataFrame()
        return df.pivot(index="item_id", columns="annotator", values="label")

    @cached_property
    def labels_hash(self) -> str:
        """sha256 of the labels file's bytes (provenance for judge cards and reports)."""
        p = self.path / "labels.jsonl"
        return file_sha256(p) if p.exists() else ""

    @cached_property
    def content_hash(self) -> str:
        """sha256 over every data file of the set."""
        h = hashlib.sha256()
        for name in (*REQUIRED_FILES, "labels.jsonl"):
            p = self.path / name
            if p.exists():
                h.update(name.encode())
                h.update(file_sha256(p).encode())
        return h.hexdigest()

    def __repr__(self) -> str:
        return (f"LabeledSet({self.name!r} v{self.version}: {len(self.traces)} traces, "
                f"{len(self.items)} retention items, {len(self.label_records)} label lines)")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def bundled_set_path(name: str) -> Path:
    """Path of a labeled set shipped with the repository (``labeled_sets/<name>``)."""
    here = Path(__file__).resolve().parent.parent / "labeled_sets" / name
    if here.is_dir():
        return here
    raise InputError(f"no bundled labeled set {name!r}: expected it at labeled_sets/{name}/ "
                     "in a checkout of the maev-kit repository")


def _resolve(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    if not p.exists() and not p.is_absolute() and len(p.parts) == 1:
        try:
            return bundled_set_path(str(p))
        except InputError:
            pass
    return p


def validate_path(path: str | os.PathLike[str]) -> tuple[ValidationReport, LabeledSet | list[MultiAgentTrace] | None]:
    """Validate a trace file or a labeled-set folder, collecting every problem.

    Returns the report and, when valid, what was loaded. Never raises on content.
    """
    p = _resolve(path)
    report = ValidationReport(str(path))
    if not p.exists():
        report.errors.append(Problem(str(path), None, "", "no such file or folder"))
        return report, None
    if p.is_file() and is_parquet_file(p):  # traces the kit wrote as Parquet
        return _validate_parquet(p, str(path), report)
    if p.is_file():
        return _validate_file(p, str(path), report)
    return _validate_folder(p, str(path), report)


def _validate_file(p: Path, shown: str, report: ValidationReport
                   ) -> tuple[ValidationReport, list[MultiAgentTrace] | None]:
    """Validate the trace file ``p`` (named ``shown``) into ``report``: what it is, the
    importers' detection decides (as for every command that reads traces); a maev trace file's
    problems are listed by line, an export's import problem is one."""
    from maev_kit.traces.importers import detect_file, read_detected

    traces: list[MultiAgentTrace] = []
    try:
        found = detect_file(p, name=shown)
        if found.format == "maev":
            traces, errs, warns = validate_trace_file(p, name=shown)
            report.errors += errs
            report.warnings += warns
        else:
            traces, issues = read_detected(found)
            report.warnings += [Problem(shown, None, "", str(i), "warning") for i in issues]
    except RecursionError:
        report.errors.append(Problem(shown, None, "", "JSON nesting too deep to read"))
    except InputError as e:
        report.errors.append(Problem(shown, None, "", str(e).removeprefix(f"{shown}: ")))
    report.counts["traces"] = len(traces)
    return report, (traces if report.ok else None)


def _validate_parquet(p: Path, shown: str, report: ValidationReport
                      ) -> tuple[ValidationReport, list[MultiAgentTrace] | None]:
    """Validate a trace Parquet file: every problem (row and field) as an error, the
    findings of a valid file as warnings."""
    import warnings as _warnings

    from maev_kit.traces.internal import load_parquet

    traces: list[MultiAgentTrace] = []
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        try:
            traces = load_parquet(p)
        except TraceValidationError as e:
            report.errors += [Problem(shown, None, x.path, x.message) if x.file == p.name
                              and x.line is None else x for x in e.problems]
    report.warnings += [Problem(shown, None, "", str(w.message)) for w in caught]
    report.counts["traces"] = len(traces)
    return report, (traces if report.ok else None)


def _validate_folder(p: Path, shown: str, report: ValidationReport
                     ) -> tuple[ValidationReport, LabeledSet | None]:
    """Validate the labeled-set folder ``p`` (named ``shown`` in problems) into ``report``:
    its files, what each refers to in the others, its labels and the manifest's splits and
    contracts. Returns the report and, when valid, the loaded set."""
    check = _FolderCheck(p, shown, report)
    if not check.required_files():
        return report, None
    manifest = check.manifest()
    traces, errs, warns = validate_trace_file(p / "traces.jsonl", name=check.name("traces.jsonl"))
    report.errors += errs
    report.warnings += warns
    conv = {t.conversation_id: t for t in traces}

    exps, errs, exp_lines = read_expectations(p / "expectations.jsonl",
                                              name=check.name("expectations.jsonl"))
    report.errors += errs
    fact_ids = check.key_facts(exps, exp_lines, conv, file_errors=bool(errs))

    items: list[RetentionItem] | None = None
    if not report.errors:
        try:
            items = build_retention_items(traces, {e.conversation_id: e for e in exps})
            fact_ids = {it.item_id for it in items}
        except InputError:  # reported above; keep the ids of the facts as listed
            items = None
    labels = _SortedLabels()
    if (p / "labels.jsonl").is_file():
        labels = check.labels(manifest, conv, exps, fact_ids)
    if manifest:
        check.manifest_references(manifest, conv)
    report.counts = {"traces": len(traces), "expectations": len(exps),
                     "retention items": len(fact_ids), "labels": len(labels.records)}
    if labels.set_aside:
        report.counts["labels set aside"] = len(labels.set_aside)
    if not report.ok or manifest is None:
        return report, None
    ls = LabeledSet(p, manifest, traces, {e.conversation_id: e for e in exps}, labels.counted,
                    labels.set_aside, labels.skipped)
    if items is not None:
        ls.__dict__["items"] = items  # built once, for the check above
    return report, ls


@dataclass
class _SortedLabels:
    """The label lines of a folder: every one read (``records``), and where each went —
    counted, skipped (its latest label is ``skip``) or set aside (on no item of the set)."""

    records: list[LabelRecord] = field(default_factory=list)
    counted: list[LabelRecord] = field(default_factory=list)
    skipped: list[LabelRecord] = field(default_factory=list)
    set_aside: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class _FolderCheck:
    """The checks of one labeled-set folder ``path``, shown as ``shown`` in the problems they
    add to ``report``."""

    path: Path
    shown: str
    report: ValidationReport

    def name(self, f: str) -> str:
        """How the folder's file ``f`` is named in problems."""
        return f"{self.shown.rstrip('/')}/{f}"

    def required_files(self) -> bool:
        """True when the folder has every file a labeled set needs; else an error per
        missing file."""
        missing = [f for f in REQUIRED_FILES if not (self.path / f).is_file()]
        for f in missing:
            self.report.errors.append(Problem(
                self.name(f), None, "", "missing: a labeled set needs "
                + ", ".join(REQUIRED_FILES) + " (and usually labels.jsonl)"))
        return not missing

    def manifest(self) -> Manifest | None:
        """The parsed ``manifest.json``, or None after an error saying why it cannot be read."""
        name = self.name("manifest.json")
        errors = self.report.errors
        try:
            raw = json.loads((self.path / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(raw, dict):
                raise ValueError(f"expected a JSON object, got {json_type(raw)}")
            return Manifest.model_validate(raw)
        except ValidationError as e:
            errors += pydantic_problems(e, name, None)
        except UnicodeDecodeError as e:
            errors.append(Problem(name, None, "",
                                  f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at "
                                  f"offset {e.start}); save the file as UTF-8"))
        except json.JSONDecodeError as e:
            errors.append(Problem(name, e.lineno, "",
                                  f"not valid JSON: {e.msg} at column {e.colno}"))
        except ValueError as e:
            errors.append(Problem(name, None, "", str(e)))
        except RecursionError:
            errors.append(Problem(name, None, "", NESTING_TOO_DEEP))
        return None

    def key_facts(self, exps: list[ConversationExpectations], exp_lines: dict[str, int],
                  conv: dict[str, MultiAgentTrace], *, file_errors: bool) -> set[str]:
        """Check that each conversation of the expectations is a trace and each key fact sits
        on one of its handoffs (an unknown conversation is not reported when the
        expectations file has errors, which may explain it); the item ids of the facts that
        do."""
        name = self.name("expectations.jsonl")
        fact_ids: set[str] = set()
        for exp in exps:
            line = exp_lines[exp.conversation_id]
            t = conv.get(exp.conversation_id)
            if t is None:
                if not file_errors:  # a trace error may explain it; don't double-report
                    self.report.errors.append(Problem(
                        name, line, "conversation_id",
                        f"{exp.conversation_id!r} is not in traces.jsonl"))
                continue
            for i, kf in enumerate(exp.key_facts):
                if not 0 <= kf.handoff_index < len(t.handoffs):
                    self.report.errors.append(Problem(
                        name, line, f"key_facts[{i}] › handoff_index",
                        f"handoff {kf.handoff_index} does not exist ({exp.conversation_id!r} "
                        f"has {len(t.handoffs)} handoff(s))"))
                else:
                    fact_ids.add(item_id(exp.conversation_id, kf.handoff_index, kf.fact_id))
        return fact_ids

    def labels(self, manifest: Manifest | None, conv: dict[str, MultiAgentTrace],
               exps: list[ConversationExpectations], fact_ids: set[str]) -> _SortedLabels:
        """Read ``labels.jsonl``: an error per label the manifest does not list, a warning per
        line on no item of ``fact_ids`` (set aside, with the reason), and the lines sorted."""
        from maev_kit.labels import SetAsideLabel
        from maev_kit.labels.internal import review_rejections, set_aside_reason

        name = self.name("labels.jsonl")
        lf = read_label_file(self.path / "labels.jsonl", name=name)
        self.report.errors += lf.problems
        if lf.torn_last_line:
            self.report.warnings.append(lf.torn_last_line)
        out = _SortedLabels(lf.records)
        allowed = set(manifest.labels) | {"skip"} if manifest else None
        rejected = review_rejections(self.path)
        exp_by_conv = {e.conversation_id: e for e in exps}
        reasons: dict[str, str] = {}
        latest = latest_labels(out.records, include_skip=True)
        for idx, r in enumerate(out.records):
            line = lf.lines[idx]
            if allowed is not None and r.label not in allowed:
                self.report.errors.append(Problem(
                    name, line, "label", f"{r.label!r} is not in the manifest's labels"))
            if r.item_id not in fact_ids:
                if r.item_id not in reasons:
                    reasons[r.item_id] = set_aside_reason(
                        r.item_id, traces=conv, expectations=exp_by_conv, item_ids=fact_ids,
                        rejected=rejected)
                out.set_aside.append(SetAsideLabel(r, line, reasons[r.item_id]))
                self.report.warnings.append(Problem(
                    name, line, "item_id",
                    f"{r.item_id!r} points at no key fact ({reasons[r.item_id]}): this label "
                    "is set aside, not counted, kept in the file; `maev labels` lists it and "
                    "`maev labels reattach` moves it to another item", severity="warning"))
            elif latest[(r.item_id, r.annotator)].label == "skip":
                out.skipped.append(r)
            else:
                out.counted.append(r)
        return out

    def manifest_references(self, manifest: Manifest, conv: dict[str, MultiAgentTrace]
                            ) -> None:
        """Check the manifest's splits name traces of the set (only while there is no other
        error) and its contracts parse."""
        for split, ids in manifest.splits.items():
            for cid in ids:
                if cid not in conv and not self.report.errors:
                    self.report.errors.append(Problem(self.name("manifest.json"), None,
                                                      f"splits › {split}",
                                                      f"{cid!r} is not in traces.jsonl"))
        if manifest.contracts:
            from maev_kit.metrics import ContractValidationError, parse_contracts

            try:
                parse_contracts(manifest.contracts, source=self.name("manifest.json"))
            except ContractValidationError as e:
                self.report.errors += e.problems


def load_labeled_set(path: str | os.PathLike[str]) -> LabeledSet:
    """Load and validate a labeled-set folder (or the name of a bundled one, e.g. ``"support_desk"``).

    Raises :class:`~maev_kit.errors.LabelValidationError` listing every problem of every file.
    """
    report, loaded = validate_path(path)
    if not report.ok:
        cls: type[LabelValidationError | TraceValidationError] = LabelValidationError
        if all(pr.file.endswith("traces.jsonl") for pr in report.errors):
            cls = TraceValidationError
        raise cls(report.errors, report.warnings)
    if not isinstance(loaded, LabeledSet):
        raise InputError(f"{display_name(path)} is a trace file, not a labeled-set folder")
    return loaded


# ---- the Who&When benchmark -----------------------------------------------------------------

#: The name of :func:`maev_kit.criteria.failure_attribution`'s criterion (its labels' item ids
#: start with it; ``criteria`` sits beside ``datasets`` in the layers, so it is spelled twice
#: and a test keeps the two equal).
ATTRIBUTION = "failure-attribution"
#: Who labeled the Who&When runs, as the annotator of its label records.
WHO_AND_WHEN_ANNOTATOR = "who-and-when-authors"
_WW_SUBSETS = ("Hand-Crafted", "Algorithm-Generated")


def _who_and_when_files(folder: str | os.PathLike[str]) -> tuple[Path, list[tuple[str, Path]]]:
    """The ``Who&When`` folder under ``folder`` (or ``folder`` itself) and its run files as
    ``(subset, path)``, each subset's files in the order of their number."""
    p = Path(folder)
    root = p / "Who&When" if (p / "Who&When").is_dir() else p
    subsets = [s for s in _WW_SUBSETS if (root / s).is_dir()]
    if not p.is_dir() or not subsets:
        raise InputError(
            f"{display_name(folder)}: not a Who&When folder: expected a clone of the benchmark's "
            "repository (https://github.com/ag2ai/Agents_Failure_Attribution) or its Who&When "
            f"folder, holding {' and/or '.join(_WW_SUBSETS)} folders of run files (1.json, …)")

    def order(f: Path) -> tuple[int, int | str]:
        return (0, int(f.stem)) if f.stem.isdigit() else (1, f.stem)

    return root, [(s, f) for s in subsets for f in sorted((root / s).glob("*.json"), key=order)]


def load_who_and_when(folder: str | os.PathLike[str]) -> LabeledSet:
    """The Who&When benchmark (Zhang et al., ICML 2025: failed runs of multi-agent systems,
    each labeled with the responsible agent and the decisive step) as a :class:`LabeledSet`.

    ``folder``: a clone of its public repository (or that clone's ``Who&When`` folder); the
    kit ships none of its data (its tasks include GAIA questions and answers, which their
    authors ask not to redistribute). Each run is a trace (``hand-crafted-1``,
    ``algorithm-generated-7``, …; splits ``hand-crafted`` and ``algorithm-generated``) whose
    handoffs are the recorded delegations where the system records them and the speaker
    changes elsewhere (``trace.metadata["handoffs"]`` says which); each label record is the
    benchmark authors' label for item ``failure-attribution:<conversation_id>`` of
    :func:`maev_kit.criteria.failure_attribution()` (an answer to that run: one of its agents),
    ``agent@step``, ``step`` the 0-based
    position of the decisive turn in ``trace.turns`` (the benchmark's own ``mistake_step``
    indexes its history, which counts the user's message: the note of each record keeps it).
    Conversion: :mod:`maev_kit.traces.importers._who_and_when`.

    A file that cannot be read raises :class:`~maev_kit.errors.LabelValidationError` naming
    every such file and field; nothing is written anywhere.
    """
    import warnings

    from maev_kit.errors import TraceWarning
    from maev_kit.traces.importers import who_and_when_run

    root, files = _who_and_when_files(folder)
    problems: list[Problem] = []
    traces: list[MultiAgentTrace] = []
    records: list[LabelRecord] = []
    splits: dict[str, list[str]] = {}
    digest = hashlib.sha256()
    for subset, f in files:
        shown = f"{subset}/{f.name}"
        raw = f.read_bytes()
        digest.update(shown.encode() + b"\0" + hashlib.sha256(raw).digest())
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            problems.append(Problem(shown, getattr(e, "lineno", None), "",
                                    f"not a JSON file of UTF-8 text: {e}"))
            continue
        cid = f"{subset.lower()}-{f.stem}"
        run = who_and_when_run(data, cid, subset=subset, source=shown)
        problems += [Problem(shown, None, *_field_message(m)) for m in run.problems]
        for note in run.notes:
            warnings.warn(f"{shown}: {note}", TraceWarning, stacklevel=2)
        if run.label is None:
            continue
        traces.append(run.trace)
        splits.setdefault(subset.lower(), []).append(cid)
        records.append(LabelRecord(
            item_id=f"{ATTRIBUTION}:{cid}", annotator=WHO_AND_WHEN_ANNOTATOR, label=run.label,
            criterion=ATTRIBUTION, note=f"{run.reason} (Who&When mistake_step {run.mistake_step},"
                                        " an index into the run's history)".strip()))
    if problems:
        raise LabelValidationError(problems)
    if not traces:
        raise InputError(f"{display_name(folder)}: the Who&When folder holds no run file")
    agents = sorted({a for t in traces for a in t.agents_involved()})
    manifest = Manifest(
        name="who-and-when", version=digest.hexdigest()[:12], labels=agents, splits=splits,
        description="Who&When (Zhang et al., ICML 2025; MIT): failed runs of multi-agent "
                    "systems (Hand-Crafted: Magentic-One; Algorithm-Generated: CaptainAgent "
                    "teams), each labeled by the benchmark's authors with the agent responsible "
                    "for the failure and the decisive step. Labels: annotator "
                    f"{WHO_AND_WHEN_ANNOTATOR!r}, criterion {ATTRIBUTION!r}.")
    ls = LabeledSet(root, manifest, traces, {}, records)
    # no manifest/labels files to hash: the run files are the content, their labels the labels
    ls.__dict__["content_hash"] = digest.hexdigest()
    ls.__dict__["labels_hash"] = hashlib.sha256("\n".join(
        r.model_dump_json() for r in records).encode()).hexdigest()
    return ls


def _field_message(message: str) -> tuple[str, str]:
    """``"field: text"`` → (field, text); a message without a field → ("", message)."""
    head, sep, rest = message.partition(": ")
    return (head, rest) if sep and " " not in head else ("", message)
