"""The 14 failure modes of MAST, the Multi-Agent System Failure Taxonomy, as built-in criteria.

Source: Cemri, Pan, Yang et al., "Why Do Multi-Agent LLM Systems Fail?" (arXiv:2503.13657,
2025). The taxonomy groups 14 modes under three categories: specification issues (1.x),
inter-agent misalignment (2.x) and task verification (3.x). The definitions below are written
for this kit in its own words; the paper's wording, examples and annotation guide are the
authority.

Each mode is a conversation-scope yes/no criterion (``positive="yes"``: the share a score
reports is the share of conversations where the mode occurs), registered under a stable name
``mast-<category>-<mode>-<slug>`` (criterion names allow no ``.``): e.g.
``builtin("mast-1-1-disobey-task-specification")`` or :func:`mast_mode` ``("1.1")``.
:func:`mast_modes` gives all 14 and :func:`find_mast_modes` asks a judge about each and says
which modes occur in each trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from maev_kit.criteria._criterion import Criterion
from maev_kit.criteria._load import register
from maev_kit.errors import InputError
from maev_kit.traces import MultiAgentTrace

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MAST_CATEGORIES", "MAST_SOURCE", "MastFindings", "find_mast_modes", "mast_mode",
           "mast_modes"]

MAST_SOURCE = ('Cemri et al., "Why Do Multi-Agent LLM Systems Fail?", arXiv:2503.13657 (2025), '
               "MAST taxonomy")
MAST_CATEGORIES = {"1": "specification issues", "2": "inter-agent misalignment",
                   "3": "task verification"}

#: (code, slug, title, definition in the kit's words)
_MODES: tuple[tuple[str, str, str, str], ...] = (
    ("1.1", "disobey-task-specification", "Disobey task specification",
     "An agent does not respect a constraint or requirement the task states (the format, a "
     "limit, what must or must not be done), so the output is not what was asked for."),
    ("1.2", "disobey-role-specification", "Disobey role specification",
     "An agent acts outside the responsibilities its role was given — takes over another "
     "agent's job or decides what its role leaves to someone else."),
    ("1.3", "step-repetition", "Step repetition",
     "A step that is already done is done again without need (the same question, search, "
     "call or plan repeated), delaying or stalling the work."),
    ("1.4", "loss-of-conversation-history", "Loss of conversation history",
     "The context is unexpectedly cut short: an agent acts as if recent turns did not "
     "happen and falls back to an earlier state of the conversation."),
    ("1.5", "unaware-of-termination-conditions", "Unaware of termination conditions",
     "The agents miss or ignore when the conversation should end, and keep going after the "
     "goal is met or after it became clear it cannot be met."),
    ("2.1", "conversation-reset", "Conversation reset",
     "The dialogue is restarted without a reason, and the progress and context built so far "
     "are lost."),
    ("2.2", "fail-to-ask-for-clarification", "Fail to ask for clarification",
     "An agent meets unclear, ambiguous or missing information and goes on with a guess "
     "instead of asking the user or another agent."),
    ("2.3", "task-derailment", "Task derailment",
     "The agents drift from the task's goal and spend turns on something irrelevant or "
     "unproductive."),
    ("2.4", "information-withholding", "Information withholding",
     "An agent has information another agent needs for its decision and does not pass it "
     "on."),
    ("2.5", "ignored-other-agents-input", "Ignored other agent's input",
     "An agent disregards or does not properly weigh what another agent said or suggested "
     "(a correction, a warning, a better plan)."),
    ("2.6", "reasoning-action-mismatch", "Reasoning-action mismatch",
     "What an agent does differs from what its own reasoning concluded it should do."),
    ("3.1", "premature-termination", "Premature termination",
     "The conversation or the task ends before the necessary information was exchanged or "
     "the goal was reached."),
    ("3.2", "no-or-incomplete-verification", "No or incomplete verification",
     "The result is not checked, or only partly, so errors that a check would catch pass "
     "through."),
    ("3.3", "incorrect-verification", "Incorrect verification",
     "A check is made but is wrong or inadequate: it confirms a faulty result or decision."),
)


def _criterion(code: str, slug: str, title: str, definition: str) -> Criterion:
    category = MAST_CATEGORIES[code.split(".")[0]]
    return Criterion(
        f"mast-{code.replace('.', '-')}-{slug}", scope="conversation", labels=("yes", "no"),
        positive="yes",
        question=f"Does the failure mode '{title}' (MAST {code}, {category}) occur in this "
                 "conversation?",
        guidelines=f"{definition} Answer yes when it occurs at least once, whether or not the "
                   f"task failed because of it. Source: {MAST_SOURCE}, mode {code}.")


_BY_CODE: dict[str, Criterion] = {
    code: register(_criterion(code, slug, title, definition))
    for code, slug, title, definition in _MODES}


def mast_modes() -> list[Criterion]:
    """The 14 MAST failure modes as conversation-scope yes/no criteria, in taxonomy order.

    >>> modes = mast_modes()
    >>> len(modes), modes[0].name, modes[-1].name
    (14, 'mast-1-1-disobey-task-specification', 'mast-3-3-incorrect-verification')
    """
    return list(_BY_CODE.values())


def mast_mode(code: str) -> Criterion:
    """One MAST mode by its code (``"1.1"``, ``"FM-1.1"``) or its criterion name.

    >>> mast_mode("FM-2.6").name
    'mast-2-6-reasoning-action-mismatch'
    """
    key = str(code).strip().upper().removeprefix("FM-").removeprefix("FM")
    if key in _BY_CODE:
        return _BY_CODE[key]
    for c in _BY_CODE.values():
        if c.name == code:
            return c
    raise InputError(f"no MAST mode {code!r}: the codes are {', '.join(_BY_CODE)}")


@dataclass
class MastFindings:
    """A judge's answer on each MAST mode for each trace: ``runs`` maps each mode's criterion
    name to its judge run (:class:`~maev_kit.criteria.CriterionRun`)."""

    runs: dict[str, Any]
    conversation_ids: list[str] = field(default_factory=list)

    def _modes(self, conversation_id: str, label: str | None) -> frozenset[str]:
        return frozenset(name for name, run in self.runs.items() for v in run.verdicts
                         if v.item_id == f"{name}:{conversation_id}" and v.label == label)

    def present(self, conversation_id: str) -> frozenset[str]:
        """The modes the judge found in the conversation (answered yes)."""
        return self._modes(conversation_id, "yes")

    def unjudged(self, conversation_id: str) -> frozenset[str]:
        """The modes the judge gave no answer on for the conversation (a failed call or an
        unreadable reply): neither present nor absent."""
        return self._modes(conversation_id, None)

    def to_frame(self) -> pd.DataFrame:
        """Conversations × modes: True (occurs), False (does not), NA (no answer)."""
        import pandas as pd

        rows = {}
        for cid in self.conversation_ids:
            present, unjudged = self.present(cid), self.unjudged(cid)
            rows[cid] = {n: pd.NA if n in unjudged else n in present for n in self.runs}
        frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(self.runs))
        frame.index.name = "conversation_id"
        return frame.astype("boolean")


def find_mast_modes(traces: Iterable[MultiAgentTrace], judge: Any, *,
                    modes: Sequence[str | Criterion] | None = None,
                    **run_options: Any) -> MastFindings:
    """Which MAST modes occur in each trace: the judge asked about each mode in turn.

    ``judge``: one judge for every mode (a function ``item -> "yes"/"no"`` — ``item.criterion``
    names the mode —, ``"module:function"``, a model name or backend), or a mapping
    ``{mode code or name: judge}``. ``modes`` limits the modes asked (codes, names or
    criteria; all 14 by default). ``run_options`` go to
    :func:`~maev_kit.criteria.judge_criterion` (``cache``, ``max_concurrency``, ...).

    >>> from maev_kit.traces import AgentTurn, MultiAgentTrace
    >>> t = MultiAgentTrace("c1", turns=[AgentTurn("a", "", "Let me search."),
    ...                                   AgentTurn("a", "", "Let me search.")])
    >>> def repeats(item):
    ...     said = [x.message for x in item.trace.turns]
    ...     return "yes" if item.criterion.startswith("mast-1-3") and len(set(said)) < len(said) else "no"
    >>> found = find_mast_modes([t], repeats, progress=False)
    >>> sorted(found.present("c1"))
    ['mast-1-3-step-repetition']
    """
    from maev_kit.criteria._judge import judge_criterion

    traces = list(traces)
    asked = mast_modes() if modes is None else [
        m if isinstance(m, Criterion) else mast_mode(m) for m in modes]
    per_mode = _per_mode(judge, asked)
    runs = {c.name: judge_criterion(per_mode[c.name], c.items(traces), **run_options)
            for c in asked}
    return MastFindings(runs, [t.conversation_id for t in traces])


def _per_mode(judge: Any, asked: list[Criterion]) -> dict[str, Any]:
    """The judge of each asked mode (one judge for all, or a mapping by code or name)."""
    if not isinstance(judge, Mapping):
        return {c.name: judge for c in asked}
    by_name = {mast_mode(k).name: v for k, v in judge.items()}
    missing = [c.name for c in asked if c.name not in by_name]
    if missing:
        raise InputError(f"no judge for MAST mode(s) {', '.join(missing)}; give one judge for "
                         "all or one per mode")
    return by_name
