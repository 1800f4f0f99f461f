"""Routing: did the triage agent send each user input to the right specialist?"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from maev_kit.errors import InputError, UndefinedMetricWarning
from maev_kit.expectations import RoutingTestCase
from maev_kit.metrics._coerce import as_records, share

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
) -> dict[str, Any]:
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
    dict
        ``exact_routing_accuracy`` and ``acceptable_routing_accuracy`` (3 decimals),
        ``total_cases``, ``misrouted`` (cases not acceptably routed). When any case has a
        category, also ``category_routing_accuracy`` (over the cases with a category),
        ``category_cases`` and ``per_category`` (category → the same accuracies and counts
        for that category's cases).

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
    >>> score_routing(cases, ["billing", "general", "billing", "general"])
    {'exact_routing_accuracy': 0.5, 'acceptable_routing_accuracy': 0.75, 'total_cases': 4, 'misrouted': 1}
    """
    cases, routes = _cases_and_routes(test_cases, actual_routes)
    zero_division = _check_zero_division(zero_division)
    n = len(cases)
    if n == 0:
        warnings.warn("score_routing: no test cases, routing accuracy is undefined; returning "
                      f"zero_division={zero_division}", UndefinedMetricWarning, stacklevel=2)
        return {"exact_routing_accuracy": zero_division,
                "acceptable_routing_accuracy": zero_division, "total_cases": 0, "misrouted": 0}

    report = accuracies(cases, routes)
    if any(c.category is not None for c in cases):
        report.update(_category_report(cases, routes, categories))
    return report


def accuracies(cases: Sequence[RoutingTestCase], routes: Sequence[str | None]
               ) -> dict[str, Any]:
    """The core of :func:`score_routing` for checked, non-empty, equally long inputs:
    ``exact_routing_accuracy``, ``acceptable_routing_accuracy`` (3 decimals), ``total_cases``
    and ``misrouted``, without the category level. The per-conversation stage of
    ``evaluate`` calls it directly (its cases are already checked)."""
    n = len(cases)
    exact = acceptable = 0
    for case, route in zip(cases, routes):
        if route is None:
            continue
        if route == case.correct_agent:
            exact += 1
            acceptable += 1
        elif route in case.acceptable_agents:
            acceptable += 1
    return {
        "exact_routing_accuracy": share(exact, n),
        "acceptable_routing_accuracy": share(acceptable, n),
        "total_cases": n,
        "misrouted": n - acceptable,
    }


def _category_report(cases: list[RoutingTestCase], routes: list[str | None],
                     categories: Mapping[str, str] | None) -> dict[str, Any]:
    agent_category = dict(categories) if categories is not None else _categories_from(cases)
    per: dict[str, list[int]] = {}  # category -> [cases, exact, acceptable, category-correct]
    for case, route in zip(cases, routes):
        if case.category is None:
            continue
        c = per.setdefault(case.category, [0, 0, 0, 0])
        c[0] += 1
        if route is None:
            continue
        if route == case.correct_agent:
            c[1] += 1
        if route == case.correct_agent or route in case.acceptable_agents:
            c[2] += 1
        if agent_category.get(route) == case.category:
            c[3] += 1
    total = sum(c[0] for c in per.values())
    return {
        "category_routing_accuracy": round(sum(c[3] for c in per.values()) / total, 3),
        "category_cases": total,
        "per_category": {
            name: {"exact_routing_accuracy": round(c[1] / c[0], 3),
                   "acceptable_routing_accuracy": round(c[2] / c[0], 3),
                   "category_routing_accuracy": round(c[3] / c[0], 3),
                   "total_cases": c[0], "misrouted": c[0] - c[2]}
            for name, c in sorted(per.items())},
    }


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
    import pandas as pd

    cases, routes = _cases_and_routes(test_cases, actual_routes)
    pairs = [(c.correct_agent, UNROUTED if r is None else r) for c, r in zip(cases, routes)]
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
    counts = [[0] * len(order) for _ in order]
    for e, a in pairs:
        if e in pos and a in pos:
            counts[pos[e]][pos[a]] += 1
    return pd.DataFrame(counts, index=pd.Index(order, name="expected"),
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
