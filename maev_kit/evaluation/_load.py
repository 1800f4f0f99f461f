"""The load stage: traces, expectations and contracts from what the caller gave."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError

if TYPE_CHECKING:
    from maev_kit.datasets import LabeledSet
    from maev_kit.expectations import ConversationExpectations
    from maev_kit.metrics import HandoffContract
    from maev_kit.traces import MultiAgentTrace

__all__ = ["EvaluationInputs", "load_inputs"]

#: How many import or proposer notes a warning quotes.
SHOWN_NOTES = 3


@dataclass
class EvaluationInputs:
    """What the load stage gives the others: the traces to score and what they are scored
    against.

    Attributes
    ----------
    traces : the conversations, in order.
    expectations : conversation id → its expectations (expected handoffs, routing cases, key
        facts); conversations without any are absent.
    contracts : the handoff contracts checked, or None.
    labeled_set : the labeled set scored, when one was given.
    split : the split scored (``None``: all).
    splits : conversation id → its split (a labeled set's; empty for traces).
    """

    traces: list[MultiAgentTrace]
    expectations: dict[str, ConversationExpectations]
    contracts: list[HandoffContract] | None
    labeled_set: LabeledSet | None = None
    split: str | None = None
    splits: dict[str, str | None] = field(default_factory=dict)


def load_inputs(source: Any, *, expectations: Any = None, contracts: Any = None,
                split: str | None = None) -> EvaluationInputs:
    """The load stage: what ``source`` holds, with its expectations and contracts.

    Parameters
    ----------
    source : LabeledSet, a labeled-set folder (or a bundled set's name), a trace JSONL file or
        any framework export (:func:`~maev_kit.traces.importers.load_any`), or traces.
    expectations : path or records, for traces (a labeled set brings its own: an error).
    contracts : HandoffContract list, a path (YAML/JSON) or records; default: a labeled set's
        manifest contracts.
    split : one split of a labeled set.

    Raises
    ------
    InputError
        Expectations given with a labeled set, a split with traces, no traces, or any problem
        of the files read (located ``file:line › field``).
    """
    from maev_kit.datasets import LabeledSet
    from maev_kit.expectations import load_expectations

    labeled_set, traces = _source(source)
    if labeled_set is not None:
        if expectations is not None:
            raise InputError(f"labeled set {labeled_set.name!r} brings its own expectations "
                             "(its expectations.jsonl): drop `expectations`, or pass its "
                             "traces with the expectations to use")
        traces = labeled_set.traces_in(split)
        exp_by_conv = labeled_set.expectations
        if contracts is None:
            contracts = labeled_set.manifest.contracts or None
    else:
        if split is not None:
            raise InputError("`split` needs a labeled set; got traces")
        exp_by_conv = load_expectations(expectations) if expectations is not None else {}
    parsed = read_contracts(contracts)
    if not traces:
        raise InputError("nothing to evaluate: no traces"
                         + (f" in split {split!r}" if split else ""))
    splits = ({t.conversation_id: labeled_set.split_of(t.conversation_id) for t in traces}
              if isinstance(labeled_set, LabeledSet) else {})
    return EvaluationInputs(traces, dict(exp_by_conv), parsed, labeled_set, split, splits)


def _source(source: Any) -> tuple[LabeledSet | None, list[MultiAgentTrace]]:
    """The labeled set ``source`` names, or its traces."""
    from maev_kit.datasets import LabeledSet, load_labeled_set

    if isinstance(source, LabeledSet):
        return source, []
    if isinstance(source, (str, os.PathLike)):
        p = Path(source)
        if p.is_file():
            return None, read_traces(p)
        return load_labeled_set(p), []
    return None, list(source)


def read_contracts(contracts: Any) -> list[HandoffContract] | None:
    """Contracts from a path (YAML/JSON), records or HandoffContract objects; None for none."""
    from maev_kit import metrics

    if contracts is not None and not isinstance(contracts, (list, tuple)):
        contracts = metrics.load_contracts(contracts)
    elif contracts:
        contracts = metrics.parse_contracts(contracts)
    return list(contracts) if contracts else None


def read_traces(path: str | os.PathLike[str]) -> list[MultiAgentTrace]:
    """A trace file or a framework export; what the import could not map is one warning."""
    from maev_kit.errors import TraceWarning
    from maev_kit.traces.importers import load_any

    traces, issues = load_any(path)
    if issues:
        warnings.warn(f"{len(issues)} import warning(s) reading {os.path.basename(path)}: "
                      f"{quote(issues)}", TraceWarning, stacklevel=5)
    return traces


def quote(notes: Sequence[Any]) -> str:
    """The first :data:`SHOWN_NOTES` notes joined, and how many more there are."""
    shown = "; ".join(str(n) for n in notes[:SHOWN_NOTES])
    more = f" (and {len(notes) - SHOWN_NOTES} more)" if len(notes) > SHOWN_NOTES else ""
    return shown + more
