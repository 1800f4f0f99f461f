"""A labeled-set folder from a user's own traces and proposed key facts (``maev init-set``).

:func:`create_labeled_set` reads a trace JSONL file or any framework export the importers
read, proposes key facts (or takes them from a facts or expectations file), splits the
conversations into ``dev`` and ``test``, and writes the folder described in
``docs/formats.md`` so the label → calibrate → score → report loop runs on the user's data.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from maev_kit.errors import InputError, LabelValidationError, Problem
from maev_kit.facts._model import ProposedFact
from maev_kit.facts._propose import METHODS, FactNote, is_user_turn

if TYPE_CHECKING:
    from maev_kit.datasets import LabeledSet
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.traces import MultiAgentTrace

__all__ = ["create_labeled_set"]

#: Files of a labeled set written by :func:`create_labeled_set`, in the order written.
SET_FILES = ("manifest.json", "traces.jsonl", "expectations.jsonl", "facts.jsonl",
             "labels.jsonl", "README.md")
#: How many proposer notes the README and the command show.
SHOWN_NOTES = 5


@dataclass
class TraceSource:
    """Traces read from a file, with where they came from and what the import could not map."""

    traces: list[MultiAgentTrace]
    name: str  # the source file's name only
    format: str  # "maev" or an importer format
    warnings: list[str] = field(default_factory=list)


@dataclass
class FactSource:
    """The key facts of the set and how they were obtained."""

    facts: list[ProposedFact]  # empty when ``expectations`` came from a file
    how: str  # one phrase for the README and the command's output
    notes: list[FactNote] = field(default_factory=list)
    expectations: list[ConversationExpectations] | None = None  # from an expectations file


@dataclass
class CreatedSet:
    """What :func:`create_set` wrote (the command prints it)."""

    labeled_set: LabeledSet
    source: TraceSource
    facts: FactSource
    files: tuple[str, ...]
    split_note: str
    kept: KeptWork | None = None  #: the human work carried over or backed up


# ---- reading the traces -------------------------------------------------------------------

#: Suffixes of the files read from a folder given as traces.
TRACE_SUFFIXES = (".jsonl", ".json")


def expand_trace_paths(paths: Sequence[str | os.PathLike[str]]) -> tuple[list[Path], list[str]]:
    """The trace files named by ``paths`` (files, or folders: their ``.jsonl`` / ``.json``
    files, sorted; a labeled-set folder: its ``traces.jsonl``), and one note per file of a
    folder left out because it is another kind of maev-kit file (labels, expectations …)."""
    from maev_kit.internal import HUMAN_KINDS, sniff

    files: list[Path] = []
    notes: list[str] = []
    for given in paths:
        p = Path(given)
        if not p.is_dir():
            files.append(p)
            continue
        if (p / "manifest.json").is_file():  # a labeled set: its traces
            files.append(p / "traces.jsonl")
            notes.append(f"{given}: a labeled set; read its traces.jsonl")
            continue
        found = []
        for f in sorted(p.iterdir()):
            if f.name.startswith(".") or not f.is_file() or f.suffix.lower() not in \
                    TRACE_SUFFIXES:
                continue
            kind = sniff(f)
            if kind is not None and kind.kind is not None and kind.kind != "traces":
                what = kind.what if kind.kind in HUMAN_KINDS else kind.what
                notes.append(f"skipped {f}: {what}, not traces")
                continue
            found.append(f)
        if not found:
            raise InputError(f"{given}: is a folder with no trace file (.jsonl or .json) in it")
        files.extend(found)
    if not files:
        raise InputError("no trace file given")
    return files, notes


def read_trace_sources(paths: Sequence[str | os.PathLike[str]], format: str = "auto", *,
                       prefix_ids: bool = False) -> TraceSource:
    """Read several trace files / exports / folders (see :func:`expand_trace_paths`) as one
    source.

    A conversation id found in more than one file is refused (:class:`InputError` naming the
    id, the files and ``--prefix-ids``) unless ``prefix_ids``: then each clashing id becomes
    ``<file stem>:<id>`` (the original kept in ``metadata["original_conversation_id"]``), and
    a warning says how many were prefixed.
    """
    files, notes = expand_trace_paths(paths)
    if len(files) == 1 and not notes:
        return read_trace_source(files[0], format)
    sources = [read_trace_source(f, format) for f in files]
    labels = _source_labels(files)
    seen: dict[str, list[int]] = {}
    for i, src in enumerate(sources):
        for t in src.traces:
            seen.setdefault(t.conversation_id, []).append(i)
    clashing = {cid: where for cid, where in seen.items() if len(set(where)) > 1}
    warnings = list(notes)
    if clashing and not prefix_ids:
        cid, where = next(iter(clashing.items()))
        names = " and ".join(str(files[i]) for i in dict.fromkeys(where))
        more = (f" (and {len(clashing) - 1} more clashing id{'s' if len(clashing) > 2 else ''})"
                if len(clashing) > 1 else "")
        example = ", ".join(f"{labels[i]}:{cid}" for i in dict.fromkeys(where))
        raise InputError(f"conversation id {cid!r} is in both {names}{more}; pass "
                         f"--prefix-ids (prefix_ids=True) to prefix each clashing id with its "
                         f"file's name ({example})")
    traces = []
    for i, src in enumerate(sources):
        for t in src.traces:
            t.metadata.setdefault("source_file", src.name)
            if t.conversation_id in clashing:
                t.metadata["original_conversation_id"] = t.conversation_id
                t.conversation_id = f"{labels[i]}:{t.conversation_id}"
            traces.append(t)
        warnings += [f"{src.name}: {w}" for w in src.warnings]
    if clashing:
        shown = ", ".join(list(clashing)[:3]) + (", …" if len(clashing) > 3 else "")
        n = len(clashing)
        warnings.insert(0, f"prefixed {n} conversation id{'s' if n != 1 else ''} found in "
                           f"several files with the file's name ({shown})")
    formats = {s.format for s in sources}
    fmt = formats.pop() if len(formats) == 1 else "mixed"
    name = ", ".join(s.name for s in sources) if len(sources) <= 3 else \
        f"{len(sources)} files ({sources[0].name}, …)"
    return TraceSource(traces, name, fmt, warnings)


def _source_labels(files: Sequence[Path]) -> list[str]:
    """A short, unique label per file for prefixed ids: its stem (``a`` for ``a.jsonl``)."""
    out: list[str] = []
    for f in files:
        label = f.stem.replace("/", "_").replace(":", "_") or "traces"
        base, n = label, 1
        while label in out:
            n += 1
            label = f"{base}{n}"
        out.append(label)
    return out


def read_trace_source(path: str | os.PathLike[str], format: str = "auto") -> TraceSource:
    """Read a trace JSONL file or a framework export (detected, or ``format``).

    Raises
    ------
    InputError
        One line for a missing file, a folder, an undetectable or unreadable export, or a file
        with no conversation; :class:`~maev_kit.errors.TraceValidationError` listing every
        problem of a trace JSONL file.
    """
    from maev_kit.traces.importers import detect_file, load_any, read_detected

    p = Path(path)
    if format != "auto":
        traces, issues = load_any(p, format)  # checks the format's name
        return TraceSource(traces, p.name, format, [str(i) for i in issues])
    try:
        found = detect_file(p)
        traces, issues = read_detected(found)
    except RecursionError:
        raise InputError(f"{p.name}: the JSON nests too deeply to read") from None
    return TraceSource(traces, p.name, found.format, [str(i) for i in issues])


# ---- the facts ----------------------------------------------------------------------------

def _peek_keys(path: Path) -> set[str]:
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.strip():
                    first = json.loads(raw)
                    return set(first) if isinstance(first, dict) else set()
    except (ValueError, RecursionError):
        pass
    return set()


def check_handoff_index(where: str, index: int, trace: MultiAgentTrace) -> None:
    """Raise an :class:`InputError` at ``where › handoff_index`` unless ``trace`` has handoff
    ``index`` (a given fact, or an expectations file's key fact, must sit on a real one)."""
    if not 0 <= index < len(trace.handoffs):
        raise InputError(f"{where} › handoff_index: handoff {index} does not exist "
                         f"({trace.conversation_id!r} has {len(trace.handoffs)} handoff(s))")


def _check_facts_fit(facts: Sequence[ProposedFact], traces: Sequence[MultiAgentTrace],
                     name: str) -> None:
    by_id = {t.conversation_id: t for t in traces}
    for i, f in enumerate(facts):
        t = by_id.get(f.conversation_id)
        where = f"{name}:{i + 1}" if name != "<facts>" else f"facts[{i}]"
        if t is None:
            raise InputError(f"{where} › conversation_id: {f.conversation_id!r} is not among "
                             "the traces")
        check_handoff_index(where, f.handoff_index, t)


def read_facts_file(p: Path) -> tuple[list[ProposedFact] | None, list[Any], dict[str, int]]:
    """A facts file's facts, or an expectations file's expectations with each one's line
    (the first key of its first record decides): ``(facts, [], {})`` or
    ``(None, expectations, lines)``. Problems raise, naming ``file:line › field``."""
    from maev_kit.expectations import read_expectations
    from maev_kit.facts._io import load_facts

    if p.is_dir():
        raise InputError(f"{p.name}: is a folder; give a facts or expectations JSONL file")
    if _peek_keys(p) & {"key_facts", "handoffs", "routing"}:
        exps, problems, lines = read_expectations(p, name=p.name)
        if problems:
            raise LabelValidationError(problems)
        return None, exps, lines
    return load_facts(p), [], {}


def _facts_from_file(p: Path, traces: Sequence[MultiAgentTrace]) -> FactSource:
    name = p.name
    facts, exps, lines = read_facts_file(p)
    if facts is None:
        by_id = {t.conversation_id: t for t in traces}
        for e in exps:
            t = by_id.get(e.conversation_id)
            line = lines[e.conversation_id]
            if t is None:
                raise InputError(f"{name}:{line} › conversation_id: {e.conversation_id!r} is "
                                 "not among the traces")
            for i, kf in enumerate(e.key_facts):
                check_handoff_index(f"{name}:{line} › key_facts[{i}]", kf.handoff_index, t)
        return FactSource([], f"taken from the expectations file {name}", expectations=exps)
    _check_facts_fit(facts, traces, name)
    reviewed = sum(f.reviewed for f in facts)
    return FactSource(facts, f"taken from the facts file {name} ({reviewed} of {len(facts)} "
                             "reviewed by a person)")


def resolve_facts(facts: Any, traces: Sequence[MultiAgentTrace]) -> FactSource:
    """The key facts named by ``facts``: a proposer name, a list of names, a list of
    :class:`ProposedFact`, or a path to a facts or expectations JSONL file."""
    from maev_kit.facts._propose import propose_facts

    if isinstance(facts, (list, tuple)) and facts and all(
            isinstance(f, ProposedFact) for f in facts):
        facts = list(facts)
        _check_facts_fit(facts, traces, "<facts>")
        reviewed = sum(f.reviewed for f in facts)
        return FactSource(facts, f"given as a list ({reviewed} of {len(facts)} reviewed by a "
                                 "person)")
    if isinstance(facts, str) and facts == "auto":
        from maev_kit.facts._auto import AUTO, auto_facts

        proposed, notes = auto_facts(traces)
        return FactSource(proposed, f"proposed by {AUTO}, not reviewed by anyone yet",
                          notes=notes)
    methods: list[str] | None = None
    if isinstance(facts, str) and (facts in METHODS or "," in facts):
        methods = [m.strip() for m in facts.split(",") if m.strip()]
    elif isinstance(facts, (list, tuple)) and all(isinstance(m, str) for m in facts):
        methods = list(facts)
    if methods is not None:
        proposal = propose_facts(traces, method=methods)
        how = f"proposed by the {'+'.join(methods)} proposer{'s' if len(methods) > 1 else ''}"
        return FactSource(list(proposal), how + ", not reviewed by anyone yet",
                          notes=list(proposal.notes))
    if isinstance(facts, (str, os.PathLike)):
        p = Path(facts)
        if p.exists():
            return _facts_from_file(p, traces)
        import difflib

        close = difflib.get_close_matches(str(facts), ("auto", *METHODS), n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(f"facts {str(facts)!r}: neither a proposer nor an existing file; "
                         f"{hint}use auto, one of {', '.join(METHODS)} or a facts/expectations "
                         "file")
    raise InputError(f"`facts` must be 'auto', a proposer name ({', '.join(METHODS)}), a list "
                     f"of them, a list of ProposedFact or a file path, got "
                     f"{type(facts).__name__}")


def _expectations(source: FactSource) -> list[ConversationExpectations]:
    """One record per conversation with any key fact; ``metadata`` names each fact's proposer
    (as :meth:`FactReviewSession.export_expectations` does)."""
    from maev_kit.facts._io import facts_to_expectations

    if source.expectations is not None:
        return list(source.expectations)
    out = []
    for cid, exp in facts_to_expectations(source.facts).items():
        exp.metadata = {"fact_proposers": {f.fact_id: f.proposer for f in source.facts
                                           if f.conversation_id == cid}}
        if any(f.reviewed for f in source.facts if f.conversation_id == cid):
            exp.metadata["facts_reviewed"] = True
        out.append(exp)
    return out


# ---- splits, agents -----------------------------------------------------------------------

def split_conversations(ids: Sequence[str], dev_fraction: float, seed: int
                        ) -> tuple[dict[str, list[str]], str]:
    """``{"dev": [...], "test": [...]}`` by conversation, deterministic from ``seed`` (and
    independent of the order of ``ids``), plus a note when a split had to be left empty.

    >>> split_conversations(["c3", "c1", "c2", "c4"], 0.5, 0)[0] == \\
    ...     split_conversations(["c1", "c2", "c3", "c4"], 0.5, 0)[0]
    True
    >>> split_conversations(["c1"], 0.5, 0)
    ({'dev': [], 'test': ['c1']}, 'one conversation: it is in test, dev is empty')
    """
    if not 0.0 <= dev_fraction <= 1.0:
        raise InputError(f"dev fraction must be between 0 and 1, got {dev_fraction!r}")
    order = sorted(ids)
    random.Random(seed).shuffle(order)
    n = len(order)
    if n == 1:
        return {"dev": [], "test": order}, "one conversation: it is in test, dev is empty"
    n_dev = round(n * dev_fraction)
    if 0.0 < dev_fraction < 1.0:
        n_dev = min(max(n_dev, 1), n - 1)  # both splits get at least one conversation
    dev, test = sorted(order[:n_dev]), sorted(order[n_dev:])
    note = ("dev is empty (dev fraction 0)" if not dev else
            "test is empty (dev fraction 1)" if not test else "")
    return {"dev": dev, "test": test}, note


def infer_agents(traces: Sequence[MultiAgentTrace]) -> dict[str, str]:
    """Agent id → role, in order of first appearance (turns, then handoff ends); the role is
    the first non-blank ``agent_role`` seen, else ``""``. Turns of the user are not agents."""
    agents: dict[str, str] = {}
    for t in traces:
        for turn in t.turns:
            if is_user_turn(turn):
                continue
            role = turn.agent_role.strip()
            if not agents.get(turn.agent_id):
                agents[turn.agent_id] = role
        for h in t.handoffs:
            for a in (h.from_agent, h.to_agent):
                agents.setdefault(a, "")
    return agents


# ---- the folder ---------------------------------------------------------------------------

def _readme(name: str, src: TraceSource, fs: FactSource, splits: dict[str, list[str]],
            split_note: str, n_key_facts: int, seed: int, out_name: str) -> str:
    """The set's ``README.md``: where the traces and key facts came from, the splits, the
    labels, and what to do next."""
    lines = [
        f"# {name}",
        "",
        "A labeled set created by `maev init-set` (maev-kit) from the user's own traces.",
        "",
        *_readme_traces(src),
        "",
        *_readme_facts(fs, n_key_facts),
        "",
        "## Splits",
        "",
        f"By conversation, from seed {seed}: dev {len(splits['dev'])}, test "
        f"{len(splits['test'])}." + (f" Note: {split_note}." if split_note else ""),
        "",
        "## Labels",
        "",
        "`labels.jsonl` holds what people labeled: empty for a new set; a re-init "
        "(`--force`) or `--labels FILE` carries labels over whose items still exist (the "
        "previous set is kept in `.maev-backup/`). A person labels each key fact (retained, "
        "lost, contradicted) with the Labeler; a judge's verdicts are never labels.",
        "",
        *_readme_next(out_name),
    ]
    return "\n".join(lines)


def _readme_traces(src: TraceSource) -> list[str]:
    """The README's "Where the traces came from" section."""
    n = len(src.traces)
    n_h = sum(len(t.handoffs) for t in src.traces)
    fmt = "maev trace JSONL" if src.format == "maev" else f"exported as {src.format}"
    return [
        "## Where the traces came from",
        "",
        f"{n} conversation{'s' if n != 1 else ''} with {n_h} handoff"
        f"{'s' if n_h != 1 else ''}, read from `{src.name}` ({fmt})."
        + (f" The import could not map {len(src.warnings)} item"
           f"{'s' if len(src.warnings) != 1 else ''} (see the output of `maev init-set`)."
           if src.warnings else ""),
    ]


def _readme_facts(fs: FactSource, n_key_facts: int) -> list[str]:
    """The README's "Key facts" section: how many, how they were obtained, what got none."""
    lines = [
        "## Key facts",
        "",
        f"{n_key_facts} key fact{'s' if n_key_facts != 1 else ''} in `expectations.jsonl`, "
        f"{fs.how}.",
    ]
    if fs.expectations is None:
        lines += ["`facts.jsonl` keeps each fact's kind, the exact span it rests on and its "
                  "proposer, for review with `maev_kit.widgets.FactReviewer` (see below)."]
    if fs.notes:
        lines += ["", f"{len(fs.notes)} conversation{'s' if len(fs.notes) != 1 else ''} or "
                  "handoffs got no fact, for example:", ""]
        lines += [f"- {n}" for n in fs.notes[:SHOWN_NOTES]]
    lines += [
        "",
        "There are no expected handoffs and no routing cases: the handoff and routing "
        "components are n/a when scoring until you add them to `expectations.jsonl` "
        "(see `docs/formats.md`).",
    ]
    return lines


def _readme_next(out_name: str) -> list[str]:
    """The README's "Next" section: reviewing the facts, labeling, then calibrating, scoring
    and reporting, with the code and commands for the set ``out_name``."""
    return [
        "## Next",
        "",
        "Review the proposed facts (optional, recommended) in a notebook:",
        "",
        "```python",
        "import maev_kit",
        "from maev_kit.facts import load_facts",
        "from maev_kit.widgets import FactReviewer",
        f'ls = maev_kit.load_labeled_set("{out_name}")',
        f'rev = FactReviewer(ls.traces, load_facts("{out_name}/facts.jsonl"),',
        f'                   "{out_name}/fact_reviews.jsonl", reviewer="<your name>")',
        f'# when done: rev.session.export_expectations("{out_name}/expectations.jsonl")',
        "```",
        "",
        "Draw the random sample people label (its items are served first, in its order;",
        "any first k labeled are a random sample, which corrected estimates need):",
        "",
        "```",
        f"maev sample {out_name} --n 40",
        "```",
        "",
        "Label (a person, in a notebook):",
        "",
        "```python",
        "from maev_kit.widgets import Labeler",
        f'Labeler("{out_name}", "{out_name}/labels.jsonl", annotator="<your name>")',
        "```",
        "",
        "Then calibrate, score, check and report:",
        "",
        "```",
        f"maev calibrate {out_name} --judge heuristic --judge <model> --card judge_card.json",
        f"maev score {out_name} --judge <judge> --split test",
        "maev check judge_card.json",
        f"maev report {out_name} --out report.html",
        "```",
        "",
    ]


def _write_folder(tmp: Path, name: str, description: str, src: TraceSource, fs: FactSource,
                  splits: dict[str, list[str]], split_note: str, seed: int,
                  out_name: str) -> tuple[str, ...]:
    from maev_kit.expectations import save_expectations
    from maev_kit.facts._io import save_facts
    from maev_kit.traces import save_traces

    exps = _expectations(fs)
    n_key_facts = sum(len(e.key_facts) for e in exps)
    manifest = {"name": name, "version": "0.1.0", "description": description,
                "agents": infer_agents(src.traces),
                "labels": ["retained", "lost", "contradicted"], "splits": splits}
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False)
                                       + "\n", encoding="utf-8")
    save_traces(src.traces, tmp / "traces.jsonl")
    save_expectations(exps, tmp / "expectations.jsonl")
    files = ["manifest.json", "traces.jsonl", "expectations.jsonl"]
    if fs.expectations is None:
        save_facts(tmp / "facts.jsonl", fs.facts)
        files.append("facts.jsonl")
    (tmp / "labels.jsonl").write_bytes(b"")
    (tmp / "README.md").write_text(_readme(name, src, fs, splits, split_note, n_key_facts,
                                           seed, out_name), encoding="utf-8")
    return (*files, "labels.jsonl", "README.md")


def _prepare_out(out: Path, overwrite: bool) -> None:
    from maev_kit.internal import display_name

    shown = display_name(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"{shown}: is a file; give a folder for the labeled set")
    for up in out.parents:
        if up.exists():
            if not up.is_dir():
                raise InputError(f"{shown}: {display_name(up)} is a file, not a folder")
            break
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise InputError(f"{shown}: folder is not empty; pass --force (overwrite=True) to "
                             "re-create the labeled set in it (its labels and review decisions "
                             "are kept, the previous set goes to a backup folder inside it)")
        if not (out / "manifest.json").is_file():
            raise InputError(f"{shown}: folder is not empty and holds no labeled set "
                             "(no manifest.json); refusing to replace it even with --force")


def _move_into_place(tmp: Path, out: Path) -> Path | None:
    """Rename the finished ``tmp`` folder to ``out``. A set already there is never deleted: the
    whole previous folder becomes ``out/.maev-backup/<timestamp>/`` (returned), earlier
    backups stay in ``out/.maev-backup/``, and files of the previous folder that are not part
    of a labeled set (the user's own notes, …) are copied into the new one too."""
    from maev_kit.internal import BACKUP_DIR

    if not out.exists():
        os.replace(tmp, out)
        return None
    old = out.with_name(f".{out.name}.old-{os.getpid()}-{secrets.token_hex(4)}")
    os.replace(out, old)
    try:
        os.replace(tmp, out)
    except BaseException:
        os.replace(old, out)
        raise
    if (old / BACKUP_DIR).is_dir():
        os.replace(old / BACKUP_DIR, out / BACKUP_DIR)
    for extra in sorted(old.iterdir()):
        if extra.name in SET_FILES or extra.name in _CARRIED or (out / extra.name).exists():
            continue
        if extra.is_dir():
            shutil.copytree(extra, out / extra.name, symlinks=True)
        else:
            shutil.copy2(extra, out / extra.name)
    from maev_kit.internal import backup_folder

    where = backup_folder(out)
    where.rmdir()
    os.replace(old, where)
    return where


#: Files of a set that hold a person's work and are carried into a re-created set.
_CARRIED = ("labels.jsonl", "fact_reviews.jsonl")


@dataclass
class KeptWork:
    """What re-creating a set did with the human work of the previous one."""

    labels: int = 0  #: label lines in the previous set (and in ``--labels``)
    labels_carried: int = 0  #: of them, carried into the new set (their items still exist)
    reviews: int = 0  #: review decisions in the previous set
    reviews_carried: int = 0
    backup: Path | None = None  #: the folder holding the whole previous set
    human_files: list[str] = field(default_factory=list)  #: other human files in the backup
    given_labels: str | None = None  #: the ``--labels`` file, when one was given

    def lines(self, shown_backup: str | None) -> list[str]:
        """What the command prints about it."""
        out = []
        if self.labels or self.given_labels:
            gone = self.labels - self.labels_carried
            out.append(f"labels: {self.labels_carried} of {self.labels} carried into the new set"
                       + (f"; {gone} more kept in the backup (their items are no longer in it)"
                          if gone and self.backup else
                          f"; {gone} whose items are not in it stay in {self.given_labels}"
                          if gone else ""))
        if self.reviews:
            gone = self.reviews - self.reviews_carried
            out.append(f"review decisions: {self.reviews_carried} of {self.reviews} carried "
                       "into the new set" + (f"; {gone} more kept in the backup (their facts "
                                             "or handoffs are no longer in it)" if gone else ""))
        if self.backup is not None:
            extra = (f" (with {', '.join(self.human_files)})" if self.human_files else "")
            out.append(f"the previous set is kept whole in {shown_backup}{extra}")
        return out


def _raw_lines(path: Path) -> list[tuple[bytes, dict[str, Any] | None]]:
    """Every non-blank line of a JSONL file as (bytes ending in a newline, parsed object or
    None)."""
    from maev_kit.internal import iter_json_lines

    out = []
    for jl in iter_json_lines(path):
        if jl.raw is None:
            continue
        raw = jl.raw if jl.raw.endswith(b"\n") else jl.raw + b"\n"
        out.append((raw, jl.value if jl.problem is None else None))
    return out


def _carry_work(old: Path | None, tmp: Path, labels_file: Path | None,
                traces: Sequence[MultiAgentTrace], item_ids: set[str],
                proposed: set[tuple[str, int, str]]) -> KeptWork:
    """Write into the new set ``tmp`` the labels and review decisions of the previous set
    ``old`` (and of ``labels_file``) whose items still exist; count the rest."""
    kept = KeptWork(given_labels=str(labels_file) if labels_file is not None else None)
    label_lines: list[bytes] = []
    sources = [f for f in ((old / "labels.jsonl") if old else None, labels_file)
               if f is not None and f.is_file()]
    seen: set[bytes] = set()
    for f in sources:
        for raw, value in _raw_lines(f):
            if raw in seen:
                continue
            seen.add(raw)
            kept.labels += 1
            if value is not None and value.get("item_id") in item_ids:
                label_lines.append(raw)
    kept.labels_carried = len(label_lines)
    if label_lines:
        (tmp / "labels.jsonl").write_bytes(b"".join(label_lines))
    reviews = (old / "fact_reviews.jsonl") if old else None
    if reviews is not None and reviews.is_file():
        by_id = {t.conversation_id: t for t in traces}
        lines = _raw_lines(reviews)
        added = {(v.get("conversation_id"), v.get("handoff_index"), v.get("fact_id"))
                 for _, v in lines if v is not None and v.get("decision") == "add"}
        carried = []
        for raw, v in lines:
            kept.reviews += 1
            if v is None:
                continue
            # (a line without an id looks up None: it finds no trace)
            t = by_id.get(cast(str, v.get("conversation_id")))
            hi = v.get("handoff_index")
            key = (v.get("conversation_id"), hi, v.get("fact_id"))
            if t is not None and isinstance(hi, int) and 0 <= hi < len(t.handoffs) and (
                    key in proposed or key in added):
                carried.append(raw)
        kept.reviews_carried = len(carried)
        if carried:
            (tmp / "fact_reviews.jsonl").write_bytes(b"".join(carried))
    if old is not None:
        from maev_kit.internal import sniff

        for name in ("expectations.jsonl", "facts.jsonl", "judge_card.json"):
            found = sniff(old / name)
            if found is not None and found.human and name != "expectations.jsonl" or (
                    name == "expectations.jsonl" and _hand_made(old / name)):
                kept.human_files.append(name)
    return kept


def _hand_made(path: Path) -> bool:
    """True when an expectations file was written or reviewed by a person (a line without
    the proposers ``init-set`` records, or one marked ``facts_reviewed``)."""
    if not path.is_file():
        return False
    for _, v in _raw_lines(path):
        meta = (v or {}).get("metadata") or {}
        if v is None or meta.get("facts_reviewed") or "fact_proposers" not in meta:
            return True
    return False


def create_set(traces_or_path: Any, out_dir: str | os.PathLike[str], *, facts: Any = "auto",
               name: str | None = None, description: str = "", dev_fraction: float = 0.5,
               seed: int = 0, overwrite: bool = False, format: str = "auto",
               prefix_ids: bool = False, labels: str | os.PathLike[str] | None = None
               ) -> CreatedSet:
    """:func:`create_labeled_set`, returning everything the command reports."""
    from maev_kit.internal import display_name
    from maev_kit.datasets import validate_path

    src = _trace_source(traces_or_path, format, prefix_ids)
    out = Path(out_dir)
    name = name if name is not None else (out.resolve().name or "labeled-set")
    if not name.strip():
        raise InputError("the set's name must not be blank")
    _prepare_out(out, overwrite)
    labels_path = _labels_file(labels)
    fs = resolve_facts(facts, src.traces)
    splits, split_note = split_conversations([t.conversation_id for t in src.traces],
                                             float(dev_fraction), int(seed))
    description = description or (f"Conversations from {src.name}; key facts {fs.how}.")
    tmp = _make_tmp_folder(out)
    try:
        written = _write_folder(tmp, name, description, src, fs, splits, split_note, seed,
                                out.name)
        kept = None
        old = out if out.is_dir() and (out / "manifest.json").is_file() else None
        if old is not None or labels_path is not None:
            from maev_kit.datasets import load_labeled_set as _load

            new = _load(tmp)
            proposed = {(f.conversation_id, f.handoff_index, f.fact_id) for f in fs.facts}
            kept = _carry_work(old, tmp, labels_path, new.traces,
                               {i.item_id for i in new.items}, proposed)
        report, loaded = validate_path(tmp)
        if not report.ok:  # a bug, never the user's input: the inputs were checked above
            raise LabelValidationError([Problem(out.name + "/" + Path(p.file).name, p.line,
                                                p.path, p.message) for p in report.errors])
        backup = _move_into_place(tmp, out)
        if kept is not None:
            kept.backup = backup
    except OSError as e:
        raise InputError(f"{display_name(out)}: cannot write the labeled set "
                         f"({e.strerror or e})") from None
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    from maev_kit.datasets import load_labeled_set

    ls = load_labeled_set(out)
    return CreatedSet(ls, src, fs, written, split_note, kept)


def _trace_source(traces_or_path: Any, format: str, prefix_ids: bool) -> TraceSource:
    """The traces of :func:`create_set`: read from a path or a list of paths (see
    :func:`read_trace_sources`), or given as traces (checked), named by their common
    ``source_file`` when they have one."""
    from maev_kit.traces import MultiAgentTrace

    if isinstance(traces_or_path, (str, os.PathLike)):
        return read_trace_sources([traces_or_path], format, prefix_ids=prefix_ids)
    if isinstance(traces_or_path, (list, tuple)) and traces_or_path and all(
            isinstance(x, (str, os.PathLike)) for x in traces_or_path):
        return read_trace_sources(list(traces_or_path), format, prefix_ids=prefix_ids)
    traces = ([traces_or_path] if isinstance(traces_or_path, MultiAgentTrace)
              else list(traces_or_path))
    if not traces:
        raise InputError("no traces given")
    for i, t in enumerate(traces):
        if not isinstance(t, MultiAgentTrace):
            raise InputError(f"traces[{i}] must be a MultiAgentTrace, got "
                             f"{type(t).__name__}")
    files = {str(t.metadata.get("source_file", "")) for t in traces}
    origin = Path(files.pop()).name if len(files) == 1 and "" not in files else "<traces>"
    return TraceSource(traces, origin or "<traces>",
                       str(traces[0].metadata.get("source_format", "maev")))


def _labels_file(labels: str | os.PathLike[str] | None) -> Path | None:
    """The ``--labels`` file to carry labels from, checked to be a labels file (None when
    none is given)."""
    if labels is None:
        return None
    from maev_kit.internal import sniff

    labels_path = Path(labels)
    found = sniff(labels_path)
    if not labels_path.is_file():
        raise InputError(f"--labels {labels}: no such file")
    if found is None or found.kind != "labels":
        raise InputError(f"--labels {labels}: not a labels file ({found.what if found else ''}"
                         "); labels are JSONL lines with item_id, annotator and label")
    return labels_path


def _make_tmp_folder(out: Path) -> Path:
    """A new, empty folder beside ``out`` to build the set in (its parent folders created)."""
    from maev_kit.internal import display_name

    parent = out.resolve().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = parent / f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        tmp.mkdir()  # the default mode, as the folder the user asked for would have
    except OSError as e:
        raise InputError(f"{display_name(out)}: cannot write the labeled set there "
                         f"({e.strerror or e})") from None
    return tmp


def create_labeled_set(traces_or_path: Any, out_dir: str | os.PathLike[str], *,
                       facts: Any = "auto", name: str | None = None, description: str = "",
                       dev_fraction: float = 0.5, seed: int = 0,
                       overwrite: bool = False) -> LabeledSet:
    """Write a labeled-set folder from traces and their key facts; return it loaded.

    Parameters
    ----------
    traces_or_path : path to a trace JSONL file or to any framework export the importers read
        (format detected), or a list of traces.
    out_dir : the folder to create. It must be missing or empty, unless ``overwrite``.
    facts : ``"auto"`` (the default, as for ``evaluate``: the ``context_passed`` values where a
        handoff passes context, else the offline proposer's), a proposer (``"offline"``,
        ``"context"``), a list of proposer names, a list of
        :class:`~maev_kit.facts.ProposedFact`, or a path to a facts JSONL file (as written by
        :func:`~maev_kit.facts.save_facts`) or to an ``expectations.jsonl``.
    name : the set's name (default: the folder's name).
    description : one line for the manifest (default: where the traces and facts came from).
    dev_fraction : share of conversations in the ``dev`` split; the rest are ``test``. With
        one conversation it goes to ``test``.
    seed : the split is deterministic from it.
    overwrite : replace a labeled set already in ``out_dir`` (labels included).

    Writes ``manifest.json`` (agents inferred from the traces, ``dev``/``test`` splits),
    ``traces.jsonl``, ``expectations.jsonl`` (the facts as key facts, one line per
    conversation with any; no expected handoffs or routing cases), ``facts.jsonl`` (the
    proposals with their spans, for review), an empty ``labels.jsonl`` and a ``README.md``.
    The folder is built beside ``out_dir`` and renamed into place once it validates, so a
    failure leaves no half-written set.

    Returns
    -------
    LabeledSet

    Raises
    ------
    InputError
        A missing or unreadable trace file, a folder given as traces, an unknown proposer, a
        facts file that does not fit the traces, a non-empty ``out_dir`` without
        ``overwrite``, a folder that cannot be written.

    Examples
    --------
    >>> import tempfile, os
    >>> from maev_kit.traces import AgentTurn, Handoff, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", user_messages=["My account is ACCT-4471."],
    ...     turns=[AgentTurn("triage", "router", "Passing you on.", turn_index=1)],
    ...     handoffs=[Handoff("triage", "billing", turn_index=2)])
    >>> ls = create_labeled_set([t], os.path.join(tempfile.mkdtemp(), "mine"))
    >>> ls.manifest.splits, [i.fact for i in ls.items]
    ({'dev': [], 'test': ['c1']}, ['Account number is ACCT-4471'])
    """
    return create_set(traces_or_path, out_dir, facts=facts, name=name,
                      description=description, dev_fraction=dev_fraction, seed=seed,
                      overwrite=overwrite).labeled_set
