"""The typed results of the metric functions: frozen dataclasses with ``to_dict()``.

Every report is a frozen, slotted dataclass whose attributes are the API. Its ``to_dict()`` is
the dict the function returned before it was typed (the article's keys, in the same order,
nested records as dicts and lists), so JSON and HTML built from it do not change; and it is a
read-only :class:`~collections.abc.Mapping` over those same keys (:class:`ReportView`), so code
written against the dicts (``r["target_accuracy"]``) keeps working. A report never compares
equal to a dict: compare ``r.to_dict()``.

The metrics build a report once per conversation; :func:`record_builder` gives each class a
constructor that skips the frozen dataclass ``__init__`` (one ``object.__setattr__`` call per
field: ~4x slower than a dict literal) and builds the same object.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeVar

__all__ = [
    "CategoryRouting",
    "CircularHandoff",
    "CoordinationReport",
    "HandoffDetail",
    "HandoffReport",
    "LoopReport",
    "RoutingReport",
]

T = TypeVar("T")


class ReportView(Mapping[str, Any]):
    """A read-only mapping view of a report over the keys of its ``to_dict()``.

    For notebooks written against the dict API: ``r["loops"]``, ``r.get("per_category")``,
    ``dict(r)``, ``list(r.items())`` give what the dict gave (nested records as dicts). Each
    access builds ``to_dict()``; the attributes are the API, and the fast one. The report's
    ``==`` is the dataclass's (another report of the same class), never a dict's.
    """

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_dict())

    def __len__(self) -> int:
        return len(self.to_dict())

    def __contains__(self, key: object) -> bool:
        return key in self.to_dict()

    def get(self, key: str, default: Any = None) -> Any:
        return self.to_dict().get(key, default)

    def keys(self) -> KeysView[str]:
        return self.to_dict().keys()

    def items(self) -> ItemsView[str, Any]:
        return self.to_dict().items()

    def values(self) -> ValuesView[Any]:
        return self.to_dict().values()


def record_builder(cls: type[T]) -> Callable[..., T]:
    """A constructor of the frozen, slotted dataclass ``cls`` taking every field, in order.

    It fills an object of a mutable twin class (the same bases and slots, so the same layout)
    with plain attribute stores, then makes it a ``cls``: the object ``cls(...)`` builds (equal,
    same repr, hash and pickle; tested for every report), without the frozen ``__init__``'s
    ``object.__setattr__`` per field. ``__post_init__`` is not run (no report has one).
    """
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    if getattr(cls, "__slots__", None) != names:
        raise TypeError(f"{cls.__name__} must be a slotted dataclass")
    twin = type(f"_{cls.__name__}Draft", cls.__bases__, {"__slots__": names})
    body = "".join(f"    o.{n} = {n}\n" for n in names)
    source = (f"def build({', '.join(names)}):\n    o = new(twin)\n{body}"
              "    o.__class__ = cls\n    return o\n")
    namespace: dict[str, Any] = {"new": object.__new__, "twin": twin, "cls": cls}
    exec(source, namespace)  # noqa: S102 - the source is built from the field names only
    build: Callable[..., T] = namespace["build"]
    build.__qualname__ = f"{cls.__name__}._build"
    build.__doc__ = f"``{cls.__name__}(*values)`` (every field, in order), built fast."
    return build


# ---------------------------------------------------------------------- handoff accuracy
@dataclass(frozen=True, slots=True)
class HandoffDetail:
    """One expected handoff of :class:`HandoffReport` and the actual handoff paired with it.

    ``actual_index`` (the position in the conversation's handoffs), ``actual_target`` and
    ``actual_reason`` are None when the expected handoff is *missing*; it is then wrong on all
    three counts and every required key is missing. Reasons are the reasons' string values.
    """

    expected_index: int
    expected_target: str
    expected_reason: str | None
    actual_index: int | None
    actual_target: str | None
    actual_reason: str | None
    target_correct: bool
    reason_correct: bool
    context_complete: bool
    missing_context_keys: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"expected_index": self.expected_index,
                "expected_target": self.expected_target,
                "expected_reason": self.expected_reason,
                "actual_index": self.actual_index,
                "actual_target": self.actual_target,
                "actual_reason": self.actual_reason,
                "target_correct": self.target_correct,
                "reason_correct": self.reason_correct,
                "context_complete": self.context_complete,
                "missing_context_keys": list(self.missing_context_keys)}


@dataclass(frozen=True, slots=True)
class HandoffReport(ReportView):
    """What :func:`~maev_kit.metrics.score_handoff_accuracy` returns.

    The attributes are the API. The report is also a read-only mapping over the keys of
    :meth:`to_dict` (the article's names, kept so code written against the dict keeps working),
    where ``handoff_details`` is a list of dicts; it never equals a dict.

    ``target_accuracy``, ``reason_accuracy`` and ``context_completeness`` are shares of the
    expected handoffs (3 decimals); ``handoff_details`` has one :class:`HandoffDetail` per
    expected handoff. ``handoff_accuracy`` is set only when nothing was expected (the article's
    key, then first in :meth:`to_dict`); None otherwise, and then left out of :meth:`to_dict`.
    """

    target_accuracy: float
    reason_accuracy: float
    context_completeness: float
    missing_handoffs: int
    unexpected_handoffs: int
    matching: Literal["aligned", "positional"]
    handoff_details: tuple[HandoffDetail, ...] = ()
    unexpected_handoff_indices: tuple[int, ...] = ()
    handoff_accuracy: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as the dict the function returned before it was typed."""
        out: dict[str, Any] = ({} if self.handoff_accuracy is None
                               else {"handoff_accuracy": self.handoff_accuracy})
        out["target_accuracy"] = self.target_accuracy
        out["reason_accuracy"] = self.reason_accuracy
        out["context_completeness"] = self.context_completeness
        out["missing_handoffs"] = self.missing_handoffs
        out["unexpected_handoffs"] = self.unexpected_handoffs
        out["matching"] = self.matching
        out["handoff_details"] = [d.to_dict() for d in self.handoff_details]
        out["unexpected_handoff_indices"] = list(self.unexpected_handoff_indices)
        return out


# ------------------------------------------------------------------------------- routing
@dataclass(frozen=True, slots=True)
class CategoryRouting:
    """Routing accuracy over one category's cases: an entry of
    :attr:`RoutingReport.per_category`."""

    exact_routing_accuracy: float
    acceptable_routing_accuracy: float
    category_routing_accuracy: float
    total_cases: int
    misrouted: int

    def to_dict(self) -> dict[str, Any]:
        return {"exact_routing_accuracy": self.exact_routing_accuracy,
                "acceptable_routing_accuracy": self.acceptable_routing_accuracy,
                "category_routing_accuracy": self.category_routing_accuracy,
                "total_cases": self.total_cases, "misrouted": self.misrouted}


@dataclass(frozen=True, slots=True)
class RoutingReport(ReportView):
    """What :func:`~maev_kit.metrics.score_routing` returns.

    The attributes are the API. The report is also a read-only mapping over the keys of
    :meth:`to_dict` (the article's names, kept so code written against the dict keeps working),
    where ``per_category`` maps each category to a dict; it never equals a dict.

    ``category_routing_accuracy``, ``category_cases`` and ``per_category`` (category →
    :class:`CategoryRouting`, sorted by category) are set when some case has a category; each
    one that is None is left out of :meth:`to_dict`.
    """

    exact_routing_accuracy: float
    acceptable_routing_accuracy: float
    total_cases: int
    misrouted: int
    category_routing_accuracy: float | None = None
    category_cases: int | None = None
    per_category: Mapping[str, CategoryRouting] | None = field(default=None, hash=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RoutingReport:
        """The report :meth:`to_dict` gave (a saved result's manifest holds it)."""
        per = data.get("per_category")
        return cls(data["exact_routing_accuracy"], data["acceptable_routing_accuracy"],
                   data["total_cases"], data["misrouted"],
                   data.get("category_routing_accuracy"), data.get("category_cases"),
                   None if per is None else {k: CategoryRouting(**v) for k, v in per.items()})

    def to_dict(self) -> dict[str, Any]:
        """The report as the dict the function returned before it was typed."""
        out: dict[str, Any] = {"exact_routing_accuracy": self.exact_routing_accuracy,
                               "acceptable_routing_accuracy": self.acceptable_routing_accuracy,
                               "total_cases": self.total_cases, "misrouted": self.misrouted}
        if self.category_routing_accuracy is not None:
            out["category_routing_accuracy"] = self.category_routing_accuracy
        if self.category_cases is not None:
            out["category_cases"] = self.category_cases
        if self.per_category is not None:
            out["per_category"] = {name: c.to_dict() for name, c in self.per_category.items()}
        return out


# --------------------------------------------------------------------------------- loops
@dataclass(frozen=True, slots=True)
class CircularHandoff:
    """One loop of :class:`LoopReport`: a ping-pong between two agents or a cycle of three or
    more. ``agents`` in the order they were first handed to; ``turn_indices`` and
    ``handoff_indices`` (positions in the trace's handoffs) of the handoffs involved."""

    kind: Literal["ping_pong", "cycle"]
    agents: tuple[str, ...]
    turn_indices: tuple[int, ...]
    handoff_indices: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "agents": list(self.agents),
                "turn_indices": list(self.turn_indices),
                "handoff_indices": list(self.handoff_indices)}


@dataclass(frozen=True, slots=True)
class LoopReport(ReportView):
    """What :func:`~maev_kit.metrics.detect_circular_handoffs` returns.

    The attributes are the API. The report is also a read-only mapping over the keys of
    :meth:`to_dict` (the article's names, kept so code written against the dict keeps working),
    where ``loops`` is a list of dicts; it never equals a dict.
    """

    conversation_id: str
    loops: tuple[CircularHandoff, ...]
    has_loops: bool
    total_handoffs: int
    max_handoffs: int
    exceeds_limit: bool
    should_escalate: bool

    def to_dict(self) -> dict[str, Any]:
        """The report as the dict the function returned before it was typed."""
        return {"conversation_id": self.conversation_id,
                "loops": [lp.to_dict() for lp in self.loops],
                "has_loops": self.has_loops, "total_handoffs": self.total_handoffs,
                "max_handoffs": self.max_handoffs, "exceeds_limit": self.exceeds_limit,
                "should_escalate": self.should_escalate}


# -------------------------------------------------------------------------- coordination
@dataclass(frozen=True, slots=True)
class CoordinationReport(ReportView):
    """What :func:`~maev_kit.metrics.coordination_score` returns.

    The attributes are the API. The report is also a read-only mapping over the keys of
    :meth:`to_dict` (the article's names, kept so code written against the dict keeps
    working); it never equals a dict.

    Each value is rounded to 3 decimals, NaN when not applicable. ``components_used`` (the
    components the composite is over) is set in ``"na"`` mode only; None in ``"article"``
    mode, and then left out of :meth:`to_dict`.
    """

    handoff_quality: float
    information_retention: float
    routing_quality: float
    composite_coordination: float
    components_used: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The report as the dict the function returned before it was typed."""
        out: dict[str, Any] = {"handoff_quality": self.handoff_quality,
                               "information_retention": self.information_retention,
                               "routing_quality": self.routing_quality,
                               "composite_coordination": self.composite_coordination}
        if self.components_used is not None:
            out["components_used"] = self.components_used
        return out


new_handoff_detail = record_builder(HandoffDetail)
new_handoff_report = record_builder(HandoffReport)
new_category_routing = record_builder(CategoryRouting)
new_routing_report = record_builder(RoutingReport)
new_circular_handoff = record_builder(CircularHandoff)
new_loop_report = record_builder(LoopReport)
new_coordination_report = record_builder(CoordinationReport)
