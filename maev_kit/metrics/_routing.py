"""Routing: did the triage agent send each user input to the right specialist?"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, UndefinedMetricWarning
from maev_kit.expectations import RoutingTestCase
from maev_kit.metrics._coerce import as_records, share
from maev_kit.metrics._reports import (
    CategoryRouting,
    RoutingReport,
    new_category_routing,
    new_routing_report,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["routing_confusion", "score_routing"]

#: Label used for a test case that was routed nowhere (``None`` in ``actual_routes``).
UNROUTED = "(unrouted)"


def score_routing(
    test_cases: Sequence[RoutingTestCase],
    actual_routes: Sequence[str | None],
    *,
    zero_division: float = 0.0,
    categories: Mapping[str, str] | None = None,
) -> RoutingReport:
    """Routing accuracy of a triage agent over routing test cases.

    A route is *exact* when it is the case's ``correct_agent`` and *acceptable* when it is
    exact or one of ``acceptable_agents``. ``None`` in ``actual_routes`` means the input was
    routed nowhere (wrong on every count).

    Hierarchical routing (triage → category → specialist): when cases carry a ``category``,
    the report also gives category-level accuracy: a route is category-correct when the routed
    agent belongs to the case's category. An agent's category comes from ``categories``
    (agent id → category) or, by default, from the test cases themselves (each
    ``correct_agent`` belongs to its case's ``category``); an agent of unknown category is
    category-wrong.

    Parameters
    ----------
    test_cases : list of RoutingTestCase (or mappings with the same fields)
    actual_routes : list of str or None
        The agent each test case was routed to, in the order of ``test_cases``.
    zero_division : float, default 0.0
        Returned as both accuracies when there are no test cases (with an
        :class:`~maev_kit.errors.UndefinedMetricWarning`); 0.0, 1.0 or ``float("nan")``.
    categories : mapping of agent id to category, optional

    Returns
    -------
    RoutingReport
        ``exact_routing_accuracy`` and ``acceptable_routing_accuracy`` (3 decimals),
        ``total_cases``, ``misrouted`` (cases not acceptably routed). When any case has a
        category, also ``category_routing_accuracy`` (over the cases with a category),
        ``category_cases`` and ``per_category`` (category → a :class:`CategoryRouting`: the
        same accuracies and counts for that category's cases); else these are None.
        ``to_dict()`` gives the article's dict (without the None keys); the report also reads
        as that mapping.

    Raises
    ------
    ValueError
        (:class:`~maev_kit.errors.InputError`) when the two lists differ in length: the
        article silently dropped the tail of the longer one.

    Examples
    --------
    >>> from maev_kit import RoutingTestCase
    >>> cases = [RoutingTestCase("Refund my card fee", "billing", ["general"]),
    ...          RoutingTestCase("Why was I charged twice?", "billing", ["general"]),
    ...          RoutingTestCase("The app crashes on login", "tech"),
    ...          RoutingTestCase("What are your opening hours?", "general")]
    >>> r = score_routing(cases, ["billing", "general", "billing", "general"])
    >>> r.exact_routing_accuracy, r.acceptable_routing_accuracy, r.misrouted
    (0.5, 0.75, 1)
    >>> r.to_dict()
    {'exact_routing_accuracy': 0.5, 'acceptable_routing_accuracy': 0.75, 'total_cases': 4, 'misrouted': 1}
    >>> cases[2] = RoutingTestCase("The app crashes on login", "tech", category="it")
    >>> score_routing(cases, ["billing", "general", "billing", "general"]).per_category["it"]
    CategoryRouting(exact_routing_accuracy=0.0, acceptable_routing_accuracy=0.0, category_routing_accuracy=0.0, total_cases=1, misrouted=1)
    """
    cases, routes = _cases_and_routes(test_cases, actual_routes)
    zero_division = _check_zero_division(zero_division)
    n = len(cases)
    if n == 0:
        warnings.warn("score_routing: no test cases, routing accuracy is undefined; returning "
                      f"zero_division={zero_division}", UndefinedMetricWarning, stacklevel=2)
        return new_routing_report(zero_division, zero_division, 0, 0, None, None, None)

    if categories is None and any(c.category is not None for c in cases):
        _categories_from(cases)  # a conflict named by the case that makes it
    return report_from_counts(count_routes(cases, routes), categories=categories)


#: ``(correct_agent, acceptable_agents, category, route)``: what routing reads of a case and
#: the route it took.
RouteKey = tuple[str, tuple[str, ...], "str | None", "str | None"]


def count_routes(cases: Sequence[RoutingTestCase], routes: Sequence[str | None]
                 ) -> dict[RouteKey, int]:
    """How many (checked) cases there are of each ``(correct_agent, acceptable_agents,
    category, route)``: all :func:`score_routing` and :func:`routing_confusion` read, and a
    form that adds up over blocks of conversations (``maev_kit.scale``)."""
    counts: dict[RouteKey, int] = {}
    for case, route in zip(cases, routes):
        key = (case.correct_agent, tuple(case.acceptable_agents), case.category, route)
        counts[key] = counts.get(key, 0) + 1
    return counts


def report_from_counts(counts: Mapping[RouteKey, int], *,
                       categories: Mapping[str, str] | None = None) -> RoutingReport:
    """:func:`score_routing`'s report from :func:`count_routes` counts (at least one case)."""
    n = sum(counts.values())
    exact = acceptable = 0
    for (correct, accepted, _, route), k in counts.items():
        got = _grade(correct, accepted, route)
        exact += k * (got == 2)
        acceptable += k * (got > 0)
    category_accuracy = category_cases = per_category = None
    if any(key[2] is not None for key in counts):
        category_accuracy, category_cases, per_category = _category_report(counts, categories)
    return new_routing_report(share(exact, n), share(acceptable, n), n, n - acceptable,
                              category_accuracy, category_cases, per_category)


def _grade(correct: str, accepted: Sequence[str], route: str | None) -> int:
    """2: the exact agent; 1: an acceptable one; 0: wrong or routed nowhere."""
    if route is None:
        return 0
    if route == correct:
        return 2
    return 1 if route in accepted else 0


def accuracies(cases: Sequence[RoutingTestCase], routes: Sequence[str | None]
               ) -> RoutingReport:
    """The core of :func:`score_routing` for checked, non-empty, equally long inputs:
    ``exact_routing_accuracy``, ``acceptable_routing_accuracy`` (3 decimals), ``total_cases``
    and ``misrouted``, without the category level. The per-conversation stage of
    ``evaluate`` calls it directly (its cases are already checked)."""
    n = len(cases)
    exact = acceptable = 0
    for case, route in zip(cases, routes):
        got = _grade(case.correct_agent, case.acceptable_agents, route)
        if got:
            acceptable += 1
            exact += got == 2
    return new_routing_report(share(exact, n), share(acceptable, n), n, n - acceptable,
                              None, None, None)


def _category_report(counts: Mapping[RouteKey, int], categories: Mapping[str, str] | None
                     ) -> tuple[float, int, dict[str, CategoryRouting]]:
    """``category_routing_accuracy``, ``category_cases`` and ``per_category``."""
    agent_category = (dict(categories) if categories is not None
                      else _categories_of(counts))
    per: dict[str, list[int]] = {}  # category -> [cases, exact, acceptable, category-correct]
    for (correct, accepted, category, route), k in counts.items():
        if category is None:
            continue
        c = per.setdefault(category, [0, 0, 0, 0])
        c[0] += k
        got = _grade(correct, accepted, route)
        c[1] += k * (got == 2)
        c[2] += k * (got > 0)
        if route is not None and agent_category.get(route) == category:
            c[3] += k
    total = sum(c[0] for c in per.values())
    per_category = {name: new_category_routing(round(c[1] / c[0], 3), round(c[2] / c[0], 3),
                                                round(c[3] / c[0], 3), c[0], c[0] - c[2])
                    for name, c in sorted(per.items())}
    return round(sum(c[3] for c in per.values()) / total, 3), total, per_category


def _categories_of(counts: Mapping[RouteKey, int]) -> dict[str, str]:
    """Each correct agent's category, from the cases counted (:func:`_categories_from`'s rule;
    a conflict is named by the two categories)."""
    found: dict[str, str] = {}
    for correct, _, category, _ in counts:
        if category is None:
            continue
        seen = found.setdefault(correct, category)
        if seen != category:
            raise InputError(
                f"routing cases put agent {correct!r} in categories {seen!r} and "
                f"{category!r}; give each agent one category, or pass "
                "`categories={agent: category}`")
    return found


def _categories_from(cases: list[RoutingTestCase]) -> dict[str, str]:
    found: dict[str, str] = {}
    for i, case in enumerate(cases):
        if case.category is None:
            continue
        seen = found.setdefault(case.correct_agent, case.category)
        if seen != case.category:
            raise InputError(
                f"`test_cases[{i}]` puts agent {case.correct_agent!r} in category "
                f"{case.category!r} but an earlier case puts it in {seen!r}; give each agent one "
                "category, or pass `categories={agent: category}`")
    return found


def routing_confusion(
    test_cases: Sequence[RoutingTestCase],
    actual_routes: Sequence[str | None],
    *,
    labels: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Counts of expected (``correct_agent``, rows) × actual (columns) routes.

    Rows are named ``expected``, columns ``actual``. By default the labels are every agent seen,
    sorted, with ``"(unrouted)"`` last when some input was routed nowhere; pass ``labels`` to
    fix the order (cases whose expected or actual agent is not among them are left out, as in
    scikit-learn's ``confusion_matrix``).

    Examples
    --------
    >>> from maev_kit import RoutingTestCase
    >>> cases = [RoutingTestCase("a", "billing"), RoutingTestCase("b", "billing"),
    ...          RoutingTestCase("c", "tech")]
    >>> routing_confusion(cases, ["billing", "tech", "tech"])  # doctest: +NORMALIZE_WHITESPACE
    actual    billing  tech
    expected
    billing         1     1
    tech            0     1
    """
    cases, routes = _cases_and_routes(test_cases, actual_routes)
    return confusion_from_counts(count_routes(cases, routes), labels=labels)


def confusion_from_counts(counts: Mapping[RouteKey, int], *,
                          labels: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`routing_confusion` from :func:`count_routes` counts."""
    import pandas as pd

    pairs: dict[tuple[str, str], int] = {}
    for (correct, _, _, route), k in counts.items():
        pair = (correct, UNROUTED if route is None else route)
        pairs[pair] = pairs.get(pair, 0) + k
    if labels is None:
        seen = {a for p in pairs for a in p}
        order = sorted(seen - {UNROUTED}) + ([UNROUTED] if UNROUTED in seen else [])
    else:
        if isinstance(labels, str):
            raise TypeError("`labels` must be a list of agent ids, not a string")
        order = list(labels)
        if len(set(order)) != len(order):
            raise ValueError("`labels` contains duplicates; list each agent once")
    pos = {a: i for i, a in enumerate(order)}
    table = [[0] * len(order) for _ in order]
    for (e, a), k in pairs.items():
        if e in pos and a in pos:
            table[pos[e]][pos[a]] += k
    return pd.DataFrame(table, index=pd.Index(order, name="expected"),
                        columns=pd.Index(order, name="actual"))


def _check_zero_division(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"`zero_division` must be 0.0, 1.0 or float('nan'), got {value!r}")
    value = float(value)
    if not (math.isnan(value) or value in (0.0, 1.0)):
        raise ValueError(f"`zero_division` must be 0.0, 1.0 or float('nan'), got {value!r}")
    return value


def _as_cases(value: Sequence[RoutingTestCase]) -> list[RoutingTestCase]:
    return as_records(value, RoutingTestCase, "test_cases")


def _cases_and_routes(test_cases: Sequence[RoutingTestCase], actual_routes: Sequence[str | None]
                      ) -> tuple[list[RoutingTestCase], list[str | None]]:
    """Both inputs checked, and of the same length (one actual route per test case)."""
    cases = _as_cases(test_cases)
    routes = _as_routes(actual_routes)
    if len(cases) != len(routes):
        raise InputError(
            f"`test_cases` has {len(cases)} item(s) but `actual_routes` has {len(routes)}; "
            "pass exactly one actual route per test case, in the same order")
    return cases, routes


def _as_routes(value: Sequence[str | None]) -> list[str | None]:
    if type(value) is list and all(r is None or type(r) is str for r in value):
        return value
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError("`actual_routes` must be a list of agent ids (str, or None for "
                        f"unrouted), got {type(value).__name__}")
    value = list(value)
    for i, r in enumerate(value):
        if r is not None and not isinstance(r, str):
            raise TypeError(f"`actual_routes[{i}]` must be an agent id (str) or None, "
                            f"got {type(r).__name__}")
    return value
