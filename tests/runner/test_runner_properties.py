"""Invariants of the runner under any sequence of faults (hypothesis, scripted backend)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from runner.runner_helpers import EchoJudge, echo_responder, expected_labels, make_items

from maev_kit.backends import BackendError, ScriptedBackend
from maev_kit.errors import ERROR_CAUSES, JudgeUnavailableError
from maev_kit.runner import run_judge

OUTCOMES = st.sampled_from(["ok", "ok", "rate_limit", "server", "timeout", "auth", "garbage",
                            "unreachable", "content_filter"])
FATAL = {"auth", "unreachable"}
ANSWERS = {"ok", "garbage"}


def step(outcome):
    if outcome == "ok":
        return lambda msgs: echo_responder({"messages": msgs})
    if outcome == "garbage":
        return "I am not JSON"
    return BackendError(outcome, "injected", retry_after=0.0)


@settings(max_examples=60, deadline=None)
@given(n_handoffs=st.integers(1, 5), max_retries=st.integers(0, 2),
       concurrency=st.integers(1, 4), outcomes=st.lists(OUTCOMES, min_size=40, max_size=40))
def test_every_item_gets_one_verdict_and_the_accounts_add_up(n_handoffs, max_retries,
                                                              concurrency, outcomes):
    items = make_items(n_handoffs)
    backend = ScriptedBackend([step(o) for o in outcomes])
    try:
        run = run_judge(EchoJudge(), items, backend, max_concurrency=concurrency,
                        max_retries=max_retries, retry_backoff=0.0, cache=False, progress=False)
    except JudgeUnavailableError as exc:
        # Only an auth / unreachable failure stops a run, and only before any reply arrived.
        consumed = outcomes[:40 - backend.pending]
        assert exc.cause in FATAL and exc.cause in consumed
        if concurrency == 1:
            first = next(i for i, o in enumerate(consumed) if o in FATAL)
            assert not ANSWERS & set(consumed[:first])
        return
    consumed = outcomes[:40 - backend.pending]
    if FATAL & set(consumed):  # the run went on: a reply had arrived before
        assert ANSWERS & set(consumed)
        if concurrency == 1:
            first = next(i for i, o in enumerate(consumed) if o in FATAL)
            assert ANSWERS & set(consumed[:first])
    s = run.stats
    assert [v.item_id for v in run.verdicts] == [it.item_id for it in items]
    sent = 40 - backend.pending
    assert s["requests"] == sent == len(backend.requests)
    # each handoff: its attempts, plus at most one repair request after an unreadable reply
    assert s["requests"] <= n_handoffs * (max_retries + 2)
    assert s["retries"] == s["requests"] - n_handoffs
    successes = s["requests"] - sum(s["failed_attempts"].values())
    assert 0 <= successes <= n_handoffs
    assert s["errors"] == sum(v.error is not None for v in run.verdicts)
    assert s["errors"] == sum(s["errors_by_kind"].values())
    assert s["errors"] == sum(s["errors_by_cause"].values())
    assert set(s["errors_by_cause"]) <= set(ERROR_CAUSES)
    assert all(v.cause in ERROR_CAUSES for v in run.verdicts if v.error)
    assert s["errors"] == 2 * (n_handoffs - successes)
    for v, label in zip(run.verdicts, expected_labels(items)):
        assert (v.label is None) != (v.error is None)
        assert v.label in (None, label)  # never an invented label
    for never_retried in ("auth", "unreachable", "content_filter"):
        assert s["failed_attempts"].get(never_retried, 0) <= n_handoffs
