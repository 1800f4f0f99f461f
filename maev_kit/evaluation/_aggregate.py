"""The result stage: every conversation's score, the ledger and the handoffs into an
:class:`~maev_kit.evaluation.EvaluationResult` (aggregates with bootstrap CIs, agent pairs,
routing), in one piece or block by block (:class:`ScoreSummary` adds up)."""

from __future__ import annotations

import datetime as _dt
import math
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from maev_kit.errors import JudgeErrorWarning, NotApplicableWarning
from maev_kit.evaluation._result import METRIC_COMPONENT, EvaluationResult, JudgeErrorSummary
from maev_kit.evaluation._score import COLUMNS, ConversationScore
from maev_kit.internal import __version__, paused_gc
from maev_kit.metrics.internal import confusion_from_counts, count_routes, report_from_counts

if TYPE_CHECKING:
    import pandas as pd

    from maev_kit.datasets import LabeledSet
    from maev_kit.retention import RetentionItem
    from maev_kit.runner import JudgeRun
    from maev_kit.traces import MultiAgentTrace

__all__ = ["AGGREGATED", "LEDGER_COLUMNS", "ScoreSummary", "aggregate_scores",
           "aggregate_summary", "ledger_dtypes", "ledger_frame", "score_columns",
           "note_unjudged", "summarize_scores", "warn_result"]

#: Per-conversation columns whose mean (with a bootstrap CI) is reported in ``aggregates``.
AGGREGATED = ("composite", "handoff_quality", "information_retention", "routing_quality",
              "target_accuracy", "reason_accuracy", "context_completeness", "retention_rate",
              "routing_exact", "routing_acceptable")
#: The columns of ``EvaluationResult.ledger``, in order.
LEDGER_COLUMNS = ("item_id", "conversation_id", "handoff_index", "hop", "from_agent",
                  "to_agent", "fact_id", "fact_key", "fact", "fact_source", "label",
                  "rationale", "evidence", "evidence_at", "evidence_turn", "evidence_part",
                  "evidence_field", "evidence_start", "evidence_end", "error", "error_cause",
                  "changed_at")
_PAIRS = ("from_agent", "to_agent", "handoffs", "facts", "retained", "lost", "contradicted",
          "judge_errors", "retention_rate", "context_complete")
_LABELS = ("retained", "lost", "contradicted")


def aggregate_scores(scores: Sequence[ConversationScore], ledger: pd.DataFrame,
                     handoffs: Sequence[tuple[str, str]], *,
                     labeled_set: LabeledSet | None = None, split: str | None = None,
                     traces: Sequence[MultiAgentTrace] = (), n_resamples: int = 2000,
                     confidence: float = 0.95, seed: int = 0) -> EvaluationResult:
    """The aggregate stage from rows alone: every conversation's score (in order), the ledger
    and the (from_agent, to_agent) of every handoff: :func:`summarize_scores` and the scores'
    columns, then :func:`aggregate_summary` (``maev_kit.scale`` calls those two itself, with
    the blocks' summaries added up and their columns read from Arrow)."""
    with paused_gc():  # a million scores are tens of millions of objects for each collection
        per_conv = pd_frame(score_columns(scores))
        summary = summarize_scores(scores, [(i,) for i in range(len(scores))],
                                   (((i,), pair) for i, pair in enumerate(handoffs)))
        return aggregate_summary(per_conv, summary, ledger, labeled_set=labeled_set,
                                 split=split, traces=traces, n_resamples=n_resamples,
                                 confidence=confidence, seed=seed)


def score_columns(scores: Sequence[ConversationScore]) -> dict[str, list[Any]]:
    """The per-conversation columns (:data:`COLUMNS`) of some scores, as lists: column by
    column, one C-level attribute fetch per score."""
    columns = list(zip(*map(attrgetter(*COLUMNS), scores))) or [()] * len(COLUMNS)
    return dict(zip(COLUMNS, map(list, columns)))


def pd_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """The per-conversation frame from its columns (lists or arrays), in :data:`COLUMNS`
    order."""
    import pandas as pd

    return pd.DataFrame(columns, columns=list(COLUMNS))


@dataclass
class ScoreSummary:
    """What the aggregate stage needs from the scores besides their columns, in a form that
    adds up block by block (:meth:`add`) to what all the scores at once give.

    What is reported in order of first appearance carries the sort key of where it first
    appeared (a conversation's key, a handoff's key), so the order of the sum does not depend
    on the order the blocks are added in.
    """

    facts: int = 0
    failed: int = 0
    by_cause: Counter[str] = field(default_factory=Counter)
    #: the not_applicable items of a conversation -> [conversations, first key]
    na: dict[tuple[tuple[str, str], ...], list[Any]] = field(default_factory=dict)
    #: (from_agent, to_agent) -> [handoffs, first key]
    pairs: dict[tuple[str, str], list[Any]] = field(default_factory=dict)
    pair_context: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    loops: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    violations: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    #: routing cases counted with the route each took (``metrics._routing.count_routes``)
    routes: dict[Any, int] = field(default_factory=dict)

    def add(self, other: ScoreSummary) -> None:
        """Add another block's summary to this one."""
        self.facts += other.facts
        self.failed += other.failed
        self.by_cause.update(other.by_cause)
        # the na and the pairs dicts: [count, first key] by key
        both: tuple[tuple[dict[Any, list[Any]], dict[Any, list[Any]]], ...] = (
            (self.na, other.na), (self.pairs, other.pairs))
        for mine, theirs in both:
            for k, (n, first) in theirs.items():
                got = mine.get(k)
                if got is None:
                    mine[k] = [n, first]
                else:
                    got[0] += n
                    got[1] = min(got[1], first)
        self.pair_context.update(other.pair_context)
        self.loops.extend(other.loops)
        self.violations.extend(other.violations)
        for k, n in other.routes.items():
            self.routes[k] = self.routes.get(k, 0) + n


def summarize_scores(scores: Sequence[ConversationScore], keys: Sequence[Any],
                     handoffs: Any) -> ScoreSummary:
    """The :class:`ScoreSummary` of some scores: ``keys`` sorts each score's conversation
    among all of a run's, and ``handoffs`` yields ``(key, (from_agent, to_agent))`` for every
    handoff of these conversations, its key sorting it among all of a run's handoffs."""
    out = ScoreSummary()
    out.failed = sum(map(attrgetter("judge_errors"), scores))
    out.facts = sum(map(attrgetter("n_facts"), scores))
    for d in filter(None, map(attrgetter("errors_by_cause"), scores)):
        out.by_cause.update(d)
    na = out.na
    for key, s in zip(keys, scores):
        items = tuple(s.not_applicable.items())
        got = na.get(items)
        if got is None:
            na[items] = [1, key]
        else:
            got[0] += 1
            if key < got[1]:  # a block's rows need not come in key order
                got[1] = key
        if s.loops:
            out.loops.extend((key, lp) for lp in s.loops)
        if s.violations:
            out.violations.extend((key, v) for v in s.violations)
    pairs = out.pairs
    for key, pair in handoffs:
        pair = tuple(pair)
        got = pairs.get(pair)
        if got is None:
            pairs[pair] = [1, key]
        else:
            got[0] += 1
            if key < got[1]:
                got[1] = key
    out.pair_context.update(chain.from_iterable(map(attrgetter("pair_context"), scores)))
    out.routes = count_routes([c for s in scores for c in s.cases],
                              [s.route for s in scores for _ in s.cases])
    return out


def aggregate_summary(per_conv: pd.DataFrame, summary: ScoreSummary, ledger: pd.DataFrame, *,
                      labeled_set: LabeledSet | None = None, split: str | None = None,
                      traces: Sequence[MultiAgentTrace] = (), n_resamples: int = 2000,
                      confidence: float = 0.95, seed: int = 0) -> EvaluationResult:
    """The result from the per-conversation frame (in order), the scores' summary and the
    ledger: aggregates with bootstrap CIs, pairs, matrix, routing."""
    import pandas as pd


    n = len(per_conv)
    judge_errors = JudgeErrorSummary(total=summary.facts, judged=summary.facts - summary.failed,
                                     failed=summary.failed,
                                     by_cause=dict(sorted(summary.by_cause.items())))
    not_applicable = _not_applicable(summary.na)
    aggregates = _bootstrap_means(per_conv, AGGREGATED, n_resamples=n_resamples,
                                  confidence=confidence, seed=seed)
    no_interval = _without_degenerate_intervals(aggregates)
    aggregates["note"] = ["; ".join(filter(None, (_note(m, k, n, judge_errors, not_applicable),
                                                  no_interval.get(m))))
                          for m, k in zip(aggregates["metric"], aggregates["n"])]
    pair_counts = _pair_counts(summary.pairs)
    matrix = (pair_counts.unstack(fill_value=0).rename_axis(index="from_agent",
                                                            columns="to_agent")
              if len(pair_counts) else pd.DataFrame())
    routing = confusion = None
    if summary.routes:  # score_routing and routing_confusion over every case
        routing = report_from_counts(summary.routes)
        confusion = confusion_from_counts(summary.routes)
    provenance = {"maev_kit_version": __version__,
                  "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "labeled_set": ({"name": labeled_set.name,
                                   "version": labeled_set.version,
                                   "hash": labeled_set.content_hash,
                                   "labels_hash": labeled_set.labels_hash}
                                  if labeled_set else None),
                  "split": split, "confidence": confidence, "judge_card": None,
                  "n_conversations": n, "n_items": len(ledger)}
    by_key = itemgetter(0)
    return EvaluationResult(
        per_conversation=per_conv, aggregates=aggregates, handoff_matrix=matrix,
        pair_stats=_pair_stats(pair_counts, ledger, summary.pair_context), ledger=ledger,
        loops=[lp for _, lp in sorted(summary.loops, key=by_key)],
        violations=[v for _, v in sorted(summary.violations, key=by_key)], routing=routing,
        routing_confusion=confusion,
        judge={}, provenance=provenance, traces=list(traces),
        judge_errors=judge_errors, not_applicable=not_applicable)


def _pair_counts(pairs: dict[tuple[str, str], list[Any]]) -> pd.Series:
    """Handoffs per (from_agent, to_agent), most first, ties in order of first appearance
    (what ``DataFrame.value_counts`` gives)."""
    import pandas as pd

    if not pairs:
        return pd.Series([], dtype="int64")
    ordered = sorted(pairs.items(), key=lambda kv: kv[1][1])  # first appearance
    index = pd.MultiIndex.from_tuples([k for k, _ in ordered], names=["from_agent", "to_agent"])
    return pd.Series([v[0] for _, v in ordered], index=index, dtype="int64",
                     name="count").sort_values(ascending=False, kind="stable")


def _not_applicable(groups: dict[tuple[tuple[str, str], ...], list[Any]]
                    ) -> dict[str, dict[str, Any]]:
    """Component → how many conversations it was n/a for, and why (``groups``: each
    conversation's n/a items → [conversations, first key])."""
    reasons: dict[str, Counter[str]] = {}
    # a why's first conversation is its first group's first: groups in order of first one
    for items, (n, _) in sorted(groups.items(), key=lambda kv: kv[1][1]):
        for comp, why in items:
            reasons.setdefault(comp, Counter())[why] += n
    out = {}
    for comp in ("handoff", "retention", "routing"):
        if comp not in reasons:
            continue
        counts = reasons[comp]
        reason = (next(iter(counts)) if len(counts) == 1
                  else "; ".join(f"{why} ({n})" for why, n in counts.most_common()))
        out[comp] = {"conversations": sum(counts.values()), "reason": reason}
    return out


#: Fewer conversations than this: no bootstrap interval. A percentile bootstrap over a handful
#: of conversations covers far less than it claims (over one it is a point): measured on the
#: bundled sets' per-conversation scores (400 draws each), the 95 % interval covered the mean
#: 81–90 % of the time at 5 conversations, 90–96 % at 10, 93–94 % at 20.
MIN_CONVERSATIONS_FOR_INTERVAL = 20


def _without_degenerate_intervals(aggregates: pd.DataFrame) -> dict[str, str]:
    """Blank (NaN) the interval of every row that has none to give, and say why, by metric:
    fewer than :data:`MIN_CONVERSATIONS_FOR_INTERVAL` conversations, or every conversation
    with the same value (a zero-width interval would read as certainty)."""
    why: dict[str, str] = {}
    for i, (metric, n, lo, hi) in enumerate(zip(aggregates["metric"], aggregates["n"],
                                                 aggregates["ci_low"], aggregates["ci_high"])):
        if n == 0:
            continue
        if n < MIN_CONVERSATIONS_FOR_INTERVAL:
            why[metric] = (f"no interval: {n} conversation{'s' if n != 1 else ''}, fewer "
                           f"than {MIN_CONVERSATIONS_FOR_INTERVAL}")
        elif lo == hi:
            why[metric] = f"no interval: all {n} conversations have the same value"
        else:
            continue
        aggregates.loc[i, ["ci_low", "ci_high"]] = math.nan
    return why


def _note(metric: str, n: int, total: int, judge_errors: JudgeErrorSummary,
          not_applicable: dict[str, dict[str, Any]]) -> str:
    """Why a summary row is n/a or over fewer conversations; the retention rows' fact counts."""
    comp = METRIC_COMPONENT.get(metric)
    parts = []
    if comp == "retention" and judge_errors.total:
        parts.append(judge_errors.note())
    if comp is None:  # the composite
        if n == 0 and total:
            parts.append("n/a: no component applies to any conversation")
        elif n < total:
            parts.append(f"n/a for {total - n} of {total} conversations: no component applies")
    elif comp in not_applicable:
        why = not_applicable[comp]["reason"]
        parts.append(f"n/a: {why}" if n == 0 else f"n/a for {total - n} of {total} "
                     f"conversations: {why}")
    return "; ".join(parts)


def ledger_frame(items: Sequence[RetentionItem], run: JudgeRun | None,
            sources: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per fact judged; ``fact_source`` from ``sources`` (by item id), else ``context`` for a fact derived from ``context_passed``, else ``expectations``."""
    import pandas as pd

    verdicts = {v.item_id: v for v in (run.verdicts if run else [])}
    sources = sources or {}
    first_source: dict[tuple[str, str], str] = {}  # a fact's later hops keep its first source
    rows = []
    for it in items:
        v = verdicts[it.item_id]
        source = sources.get(it.item_id) or first_source.get((it.conversation_id, it.fact_key)) \
            or ("context" if it.derived else "expectations")
        first_source.setdefault((it.conversation_id, it.fact_key), source)
        sp = v.span
        rows.append((it.item_id, it.conversation_id, it.handoff_index, it.hop, it.from_agent,
                     it.to_agent, it.fact_id, it.fact_key, it.fact, source, v.label,
                     v.rationale, "; ".join(v.evidence),
                     sp.describe() if sp else None, sp.turn_index if sp else None,
                     sp.part if sp else None, sp.field if sp else None,
                     sp.start if sp else None, sp.end if sp else None, v.error,
                     (v.cause or "other") if v.error else None, it.changed_at))
    return ledger_dtypes(pd.DataFrame(rows, columns=list(LEDGER_COLUMNS)))


#: The ledger's integer columns that may be missing (nullable ``Int64``).
_LEDGER_NULLABLE_INTS = ("evidence_turn", "evidence_part", "evidence_start", "evidence_end",
                         "changed_at")


def ledger_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """The ledger with its nullable integer columns as ``Int64`` (a ledger read back from
    Parquet, or put together from parts, has them as floats)."""
    for col in _LEDGER_NULLABLE_INTS:
        if col in frame.columns and frame[col].dtype != "Int64":
            frame[col] = frame[col].astype("Int64")
    return frame


def _pair_stats(pair_counts: pd.Series, ledger: pd.DataFrame,
                ctx: Counter[tuple[str, str, bool]]) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for (fa, ta), n in pair_counts.items():
        sub = ledger[(ledger["from_agent"] == fa) & (ledger["to_agent"] == ta)]
        c = {lab: int((sub["label"] == lab).sum()) for lab in _LABELS}
        judged = sum(c.values())
        ok, checked = ctx[(fa, ta, True)], ctx[(fa, ta, True)] + ctx[(fa, ta, False)]
        rows.append({"from_agent": fa, "to_agent": ta, "handoffs": int(n), "facts": len(sub),
                     **c, "judge_errors": len(sub) - judged,
                     "retention_rate": round(c["retained"] / judged, 3) if judged else math.nan,
                     "context_complete": round(ok / checked, 3) if checked else math.nan})
    return pd.DataFrame(rows, columns=list(_PAIRS))


_BOOTSTRAP_CHUNK = 4_000_000  # draws held at once (32 MB)


def _distinct_rows(columns: Sequence[Any], limit: int) -> tuple[Any, Any] | None:
    """The distinct rows of equal-length float arrays (NaN equal to NaN): ``(first,
    counts)``, the index of each one's first row and how many rows it has, in lexicographic
    order of the rows (so that they do not depend on the order of the rows); None when there
    are more than ``limit``."""
    import numpy as np
    import pandas as pd

    key = np.zeros(len(columns[0]), dtype=np.int64)
    for column in columns:  # one code per distinct row, column by column
        codes, uniques = pd.factorize(column, use_na_sentinel=False)
        if len(uniques) > limit:
            return None
        key, distinct = pd.factorize(key * len(uniques) + codes)  # < n**2: fits in int64
        if len(distinct) > limit:
            return None
    _, first, counts = np.unique(key, return_index=True, return_counts=True)
    order = np.lexsort([column[first] for column in reversed(columns)])
    return first[order], counts[order]


def _bootstrap_means(frame: pd.DataFrame, columns: Sequence[str], *, n_resamples: int,
                     confidence: float, seed: int) -> pd.DataFrame:
    """Mean and percentile-bootstrap CI of each column over the rows where it is not NaN.

    Resampling the ``n`` rows with replacement is done as a multinomial draw of ``n`` over
    the *distinct* rows (as :class:`~maev_kit.agreement._bootstrap.PatternBootstrap` does
    for labels): the same distribution of resampled sums, at a cost that grows with the
    number of distinct rows, not with ``n``. Per-conversation scores take few distinct
    values (525 distinct rows among 200,000 generated conversations), so 200 resamples of a
    million rows take 0.3 s instead of 3.7 s. When more than a quarter of the rows are
    distinct, row indices are drawn instead (cheaper than a multinomial over most rows; then
    the draws depend on the order of the rows). The distinct rows are in lexicographic order,
    so the multinomial's interval does not depend on the order of the rows. Memory is
    bounded by a chunk of ``_BOOTSTRAP_CHUNK`` draws, not by ``n_resamples`` x ``n``."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    rows = []
    n = len(frame)
    alpha = (1 - confidence) / 2
    table = {col: frame[col].to_numpy(dtype=float) if n else np.array([]) for col in columns}
    live = [col for col in columns if (~np.isnan(table[col])).any()]
    k = len(live)
    sums_counts = np.empty((n_resamples, 2 * k))
    if live:
        distinct = _distinct_rows([table[col] for col in live], n // 4)
        drawn = distinct[0] if distinct is not None else slice(None)  # distinct rows, or all
        values = np.column_stack([table[col][drawn] for col in live])
        # the values (NaN as 0) and presence (1/0) of what is drawn, side by side: one
        # resample's sums are how often it drew each row times this matrix
        matrix = np.column_stack([np.nan_to_num(values, nan=0.0),
                                  (~np.isnan(values)).astype(float)])
        step = max(1, _BOOTSTRAP_CHUNK // len(values))
        for start in range(0, n_resamples, step):
            m = min(step, n_resamples - start)
            if distinct is not None:  # a multinomial draw over the distinct rows
                draws = rng.multinomial(n, distinct[1] / n, size=m)
            else:  # most rows distinct: draw rows, counted (a BLAS product, not a gather)
                idx = rng.integers(0, n, size=(m, n))
                idx += np.arange(m)[:, None] * n  # resample r's draws counted in row r
                draws = np.bincount(idx.ravel(), minlength=m * n).reshape(m, n)
                del idx
            sums_counts[start:start + m] = draws.astype(float) @ matrix
    sums = {col: sums_counts[:, j] for j, col in enumerate(live)}
    counts_of = {col: sums_counts[:, k + j] for j, col in enumerate(live)}
    for col in columns:
        values = table[col]
        ok = ~np.isnan(values)
        if not ok.any():
            rows.append((col, float("nan"), float("nan"), float("nan"), 0))
            continue
        mean = float(values[ok].mean())
        kept = counts_of[col] > 0
        boot = sums[col][kept] / counts_of[col][kept]
        lo, hi = (np.quantile(boot, [alpha, 1 - alpha]) if boot.size else (np.nan, np.nan))
        rows.append((col, round(mean, 4), round(float(lo), 4), round(float(hi), 4),
                     int(ok.sum())))
    return pd.DataFrame(rows, columns=["metric", "mean", "ci_low", "ci_high", "n"])


def note_unjudged(result: EvaluationResult, unjudged: Sequence[Any]) -> None:
    """Count the handoffs left out of retention because their receiver is not in the trace and
    nothing was handed over (:func:`~maev_kit.retention.unjudged_handoffs`): in
    ``provenance["unjudged_handoffs"]``, in the retention rows' note, and in one warning."""
    if not unjudged:
        return
    n, facts = len(unjudged), sum(u.n_facts for u in unjudged)
    result.provenance["unjudged_handoffs"] = {"handoffs": n, "facts": facts}
    text = (f"{n} handoff{'s' if n != 1 else ''} to {'receivers' if n != 1 else 'a receiver'} "
            f"that {'are' if n != 1 else 'is'} not in the trace and "
            f"carr{'y' if n != 1 else 'ies'} nothing: not judged ({facts} "
            f"fact{'s' if facts != 1 else ''})")
    agg = result.aggregates
    rows = agg["metric"].map(METRIC_COMPONENT) == "retention"
    agg.loc[rows, "note"] = [f"{old}; {text}" if old else text for old in agg.loc[rows, "note"]]
    warnings.warn(text, NotApplicableWarning, stacklevel=3)


def warn_result(result: EvaluationResult) -> None:
    """One JudgeErrorWarning when facts failed; one NotApplicableWarning when components are n/a."""
    s = result.judge_errors
    if s.failed:
        causes = s.causes()
        warnings.warn(f"{s.failed} of {s.total} facts could not be judged"
                      + (f" ({causes})" if causes else "") + ": they are left out of every "
                      "rate (see result.judge_errors and the ledger's error column)",
                      JudgeErrorWarning, stacklevel=3)
    na = result.not_applicable
    if na:
        total = len(result.per_conversation)
        phrases = [f"{info['conversations']} {info['reason']}" for info in na.values()]
        first = next(iter(na.values()))["reason"]  # "no key facts", "not judged (…)"
        verb = "have" if first.startswith("no ") else "were"
        phrases[0] = phrases[0].replace(" ", f" of {total} conversations {verb} ", 1)
        warnings.warn(", ".join(phrases) + ": those components are n/a (NaN) there and the "
                      "composite is over the others (pass not_applicable='article' for the "
                      "article's numbers)", NotApplicableWarning, stacklevel=3)
