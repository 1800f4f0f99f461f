"""Handoff accuracy: did the conversation hand off to the expected agents, for the expected
reasons, with the expected context?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from maev_kit.expectations import HandoffExpectation
from maev_kit.metrics._coerce import as_records, share
from maev_kit.metrics._reports import (
    HandoffDetail,
    HandoffReport,
    new_handoff_detail,
    new_handoff_report,
)
from maev_kit.traces import Handoff, HandoffReason, MultiAgentTrace

__all__ = ["score_handoff_accuracy"]

Matching = Literal["aligned", "positional"]
_MATCHINGS = ("aligned", "positional")
# Enum ``.value`` is a slow descriptor; this runs once per handoff.
_REASON_VALUE: dict[object, str] = {r: r.value for r in HandoffReason}


def score_handoff_accuracy(
    actual_handoffs: Sequence[Handoff] | MultiAgentTrace,
    expected: Sequence[HandoffExpectation],
    *,
    matching: Matching = "aligned",
) -> HandoffReport:
    """Compare a conversation's handoffs with the handoffs it should have made.

    Each expectation is paired with at most one actual handoff, then judged on three things:
    the target (``to_agent == expected_target``), the reason (``reason == expected_reason``;
    an expectation without a reason accepts any) and the context (every
    ``required_context_keys`` is a key of ``context_passed``). An expectation left without a
    handoff (a *missing* handoff) is wrong on all three.

    ``matching`` chooses the pairing:

    - ``"aligned"`` (default): an order-preserving alignment of the actual handoffs to the
      expected ones that minimises the edit distance between the two target sequences (a
      substitution pairs an expectation with a handoff to another agent; an insertion is an
      *unexpected* handoff, a deletion a *missing* one). Among alignments of equal distance the
      one with most matching targets wins, then the earliest. One extra early handoff therefore
      no longer marks every later one wrong, and target accuracy is never below positional.
    - ``"positional"``: the article's behaviour: the i-th expectation is compared with the i-th
      actual handoff.

    Parameters
    ----------
    actual_handoffs : list of Handoff, or a MultiAgentTrace (its ``handoffs`` are used)
    expected : list of HandoffExpectation (or mappings with the same fields)
    matching : {"aligned", "positional"}, default "aligned"

    Returns
    -------
    HandoffReport
        ``target_accuracy``, ``reason_accuracy``, ``context_completeness``: shares of the
        expectations (3 decimals); ``missing_handoffs`` and ``unexpected_handoffs`` (counts);
        ``matching``; ``handoff_details``: one :class:`HandoffDetail` per expectation with
        ``expected_index``, ``expected_target``, ``expected_reason``, ``actual_index`` (None
        when missing), ``actual_target``, ``actual_reason``, ``target_correct``,
        ``reason_correct``, ``context_complete`` and ``missing_context_keys``;
        ``unexpected_handoff_indices``. With no expectations the article's ``handoff_accuracy``
        is set too, and every accuracy is 1.0 when no handoff was made either, else 0.0.
        ``to_dict()`` gives the article's dict; the report also reads as that mapping.

    Examples
    --------
    One extra early handoff (to ``general``) before the two expected ones:

    >>> from maev_kit import Handoff, HandoffExpectation
    >>> expected = [HandoffExpectation("billing", "specialization", ["account_number"]),
    ...             HandoffExpectation("tech", "escalation", ["account_number", "error_code"])]
    >>> actual = [Handoff("triage", "general", "fallback", {}),
    ...           Handoff("general", "billing", "specialization", {"account_number": "A-1"}),
    ...           Handoff("billing", "tech", "escalation",
    ...                   {"account_number": "A-1", "error_code": "E42"})]
    >>> r = score_handoff_accuracy(actual, expected)
    >>> r.target_accuracy, r.reason_accuracy, r.context_completeness
    (1.0, 1.0, 1.0)
    >>> r.missing_handoffs, r.unexpected_handoffs, r.unexpected_handoff_indices
    (0, 1, (0,))
    >>> p = score_handoff_accuracy(actual, expected, matching="positional")
    >>> p.target_accuracy, p.context_completeness, p.unexpected_handoffs
    (0.0, 0.0, 1)
    >>> r.handoff_details[0].actual_index, score_handoff_accuracy([], []).handoff_accuracy
    (1, 1.0)
    """
    if matching not in _MATCHINGS:
        raise ValueError(f"`matching` must be 'aligned' or 'positional', got {matching!r}")
    actual = _as_handoffs(actual_handoffs)
    exps = _as_expectations(expected)
    if not exps:
        return _nothing_expected(len(actual), matching)
    # Per conversation; written as plain loops, with lookups hoisted, for speed.
    return _report(exps, actual, _pair(exps, actual, matching), matching)


def _nothing_expected(n_act: int, matching: Matching) -> HandoffReport:
    """The report when no handoff was expected: every accuracy is 1.0 when none was made
    either, else 0.0 (and the article's ``handoff_accuracy`` is given too)."""
    score = 1.0 if n_act == 0 else 0.0
    return new_handoff_report(score, score, score, 0, n_act, matching, (),
                              tuple(range(n_act)), score)


def _pair(exps: list[HandoffExpectation], actual: list[Handoff], matching: Matching
          ) -> list[int | None]:
    """For each expectation, the index of the actual handoff it is judged against (None:
    missing): the one at its position, or the one :func:`_align` pairs it with."""
    if matching == "positional":
        n_act = len(actual)
        return [i if i < n_act else None for i in range(len(exps))]
    return _align([e.expected_target for e in exps], [h.to_agent for h in actual])


def _report(exps: list[HandoffExpectation], actual: list[Handoff], pairs: list[int | None],
            matching: Matching) -> HandoffReport:
    """Each expectation judged against the handoff ``pairs`` gives it (None: missing), and
    the shares and counts of the judgments."""
    details, n_target, n_reason, n_context = _judge(exps, actual, pairs)
    n_exp, n_act = len(exps), len(actual)
    n_missing = pairs.count(None)
    # Each actual handoff is paired at most once: the unpaired ones are the unexpected.
    if n_act == n_exp - n_missing:
        unexpected: tuple[int, ...] = ()
    else:
        used = set(pairs)
        unexpected = tuple([j for j in range(n_act) if j not in used])
    return new_handoff_report(share(n_target, n_exp), share(n_reason, n_exp),
                              share(n_context, n_exp), n_missing, len(unexpected), matching,
                              details, unexpected, None)


def _judge(exps: list[HandoffExpectation], actual: list[Handoff], pairs: list[int | None]
           ) -> tuple[tuple[HandoffDetail, ...], int, int, int]:
    """One :class:`HandoffDetail` per expectation: its target, reason and context checked
    against the actual handoff paired with it (``pairs[i]``; None: missing, wrong on all);
    and how many targets, reasons and contexts are right."""
    reason_value = _REASON_VALUE.get
    details = []
    n_target = n_reason = n_context = 0
    for i, exp in enumerate(exps):
        j = pairs[i]
        want_reason = exp.expected_reason
        expected_reason = reason_value(want_reason, want_reason)
        if j is None:
            details.append(new_handoff_detail(i, exp.expected_target, expected_reason, None,
                                              None, None, False, False, False,
                                              tuple(exp.required_context_keys)))
            continue
        h = actual[j]
        ctx = h.context_passed
        missing_keys = []
        for k in exp.required_context_keys:  # a loop: cheaper than a comprehension here
            if k not in ctx:
                missing_keys.append(k)
        target_ok = h.to_agent == exp.expected_target
        reason_ok = want_reason is None or h.reason == want_reason
        n_target += target_ok
        n_reason += reason_ok
        n_context += not missing_keys
        details.append(new_handoff_detail(
            i, exp.expected_target, expected_reason, j, h.to_agent,
            reason_value(h.reason, h.reason), target_ok, reason_ok, not missing_keys,
            tuple(missing_keys) if missing_keys else ()))
    return tuple(details), n_target, n_reason, n_context


def _align(expected: list[str], actual: list[str]) -> list[int | None]:
    """For each expected target, the index of its aligned actual handoff (None: missing).

    Minimises (edit distance, -matches); ties go to the earliest pairing. The table holds the
    cost of aligning the *suffixes* ``expected[i:]`` and ``actual[j:]`` so the walk from
    (0, 0) can prefer early choices.
    """
    m, n = len(expected), len(actual)
    if m == n and expected == actual:  # the common, perfect case
        return list(range(m))
    # cost[i][j] = (edits, -matches) for expected[i:] vs actual[j:], held as the one int
    # edits * k - matches (0 <= matches < k): ints compare as the pairs do, and cost less.
    k = m + n + 1
    cost = [[0] * (n + 1) for _ in range(m + 1)]
    cost[m] = [(n - j) * k for j in range(n + 1)]
    for i in range(m - 1, -1, -1):
        row, below, target = cost[i], cost[i + 1], expected[i]
        row[n] = (m - i) * k
        for j in range(n - 1, -1, -1):
            diag = below[j + 1] - 1 if target == actual[j] else below[j + 1] + k
            ins = row[j + 1] + k
            dele = below[j] + k
            row[j] = min(diag, ins, dele)
    out: list[int | None] = []
    i = j = 0
    while i < m:
        if j == n:
            out.append(None)
            i += 1
            continue
        here = cost[i][j]
        d = cost[i + 1][j + 1]
        if (d - 1 if expected[i] == actual[j] else d + k) == here:
            out.append(j)
            i += 1
            j += 1
            continue
        if cost[i][j + 1] + k == here:  # actual[j] is unexpected
            j += 1
            continue
        out.append(None)  # expected[i] is missing
        i += 1
    return out


def _as_handoffs(value: Sequence[Handoff] | MultiAgentTrace) -> list[Handoff]:
    if isinstance(value, MultiAgentTrace):
        return value.handoffs
    return as_records(value, Handoff, "actual_handoffs",
                      accepts="a list of Handoff objects or a MultiAgentTrace")


def _as_expectations(value: Sequence[HandoffExpectation]) -> list[HandoffExpectation]:
    return as_records(value, HandoffExpectation, "expected")
